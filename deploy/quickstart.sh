#!/usr/bin/env bash
# docraft quickstart: installs the missing Debian 12 packages, builds docraft
# into build/, then replays the seed documents' worked examples on a local
# DocDB store (docraft-seedwalk) and prints what DocDB stored and read back.
#
#   deploy/quickstart.sh
#
# Leaves no process or temporary directory behind.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source-path=SCRIPTDIR/..
source scripts/lib/deps.sh

# shellcheck disable=SC2119 # no extra packages
docraft_ensure_packages
echo "docraft: building into build/ ..."
if ! docraft_build build; then
	echo "docraft: build failed; run 'ninja -C build' to see the errors" >&2
	exit 1
fi

# The tool removes its own store directory; this private TMPDIR also covers
# an interrupted run.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/docraft-quickstart.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo
TMPDIR=$tmp build/src/tools/docraft-seedwalk
echo
echo "docraft: shown above: the seed examples (msgs, page_views TTL, nested document, YEDIS)"
echo "replayed on a local DocDB store, with each step's key-value pairs and reads."
echo "A later version of this script starts a local 3-node cluster here."
