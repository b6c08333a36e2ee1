# Sourced by the set-up scripts: installs the Debian 12 packages docraft
# needs, only those that are missing, then configures the build directory.
# shellcheck shell=bash

DOCRAFT_PACKAGES=(
	gcc pkg-config meson ninja-build python3
	librocksdb-dev libraft-dev libuv1-dev libprotobuf-c-dev protobuf-c-compiler
)

docraft_ensure_packages() {
	local missing=() p
	for p in "${DOCRAFT_PACKAGES[@]}" "$@"; do
		if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
			missing+=("$p")
		fi
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	echo "docraft: installing ${missing[*]}"
	local sudo=""
	[ "$(id -u)" -ne 0 ] && sudo="sudo"
	export DEBIAN_FRONTEND=noninteractive
	$sudo apt-get update -qq
	$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# docraft_configure DIR [meson options...]: configure DIR once.
docraft_configure() {
	local dir=$1
	shift
	if [ ! -f "$dir/build.ninja" ]; then
		meson setup "$dir" "$@" >/dev/null
	fi
}

# docraft_build DIR [meson options...]: configure DIR once, then build it.
docraft_build() {
	docraft_configure "$@"
	ninja -C "$1" >/dev/null
}

# docraft_suite_targets DIR SUITE...: the ninja targets of the test programs
# of those suites (DIR must be configured).
docraft_suite_targets() {
	local dir=$1
	shift
	meson introspect "$dir" --tests | python3 -c '
import json, os, sys
d, suites = sys.argv[1], ["docraft:" + s for s in sys.argv[2:]]
for t in json.load(sys.stdin):
    if any(s in suites for s in t["suite"]):
        print(os.path.relpath(t["cmd"][0], os.path.abspath(d)))
' "$dir" "$@" | sort -u
}
