#!/usr/bin/env bash
# docraft bench against a real cluster: one master and three tservers on
# 127.0.0.1-3, started as the C tests start theirs (tests/lib/cluster.sh),
# ports chosen free at random; then
#   docraft bench --workload load --keys 1000 --ops 1000
#   docraft bench --workload a --keys 1000 --duration 3 --clients 4
# each must print a summary line with ops > 0 and errors 0 and exit 0.
# Everything started is stopped on exit (trap), the data removed.
#
# Environment (meson sets it): MASTER, TSERVER, DOCRAFT (executables),
# DOCRAFT_BUILD (the build dir), DOCRAFT_SRC (the source root).
set -euo pipefail

SRC=${DOCRAFT_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
# shellcheck source=../lib/cluster.sh
. "$SRC/tests/lib/cluster.sh"

base=$(mktemp -d "${TMPDIR:-/tmp}/docraft-test-bench.XXXXXX")

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	cluster_down "$rc"
	rm -rf "$base"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cluster_up bench 3 || exit 1
masters=$CLUSTER_MASTERS

# Runs docraft bench with the arguments (the first two: --workload W);
# checks exit status 0 and a summary line with ops > 0 and errors 0, and
# for runs of seconds the progress lines. The output is left in $out.
out=""
bench() {
	local rc=0 ops errors
	echo "# docraft bench $*"
	out=$("$DOCRAFT" --masters "$masters" bench "$@" 2>"$base/bench.err") || rc=$?
	echo "$out" | sed 's/^/#   /'
	if [ "$rc" -ne 0 ]; then
		echo "not ok: docraft bench $* exited $rc"
		sed 's/^/#   /' "$base/bench.err"
		exit 1
	fi
	ops=$(echo "$out" | sed -n 's/^summary: ops \([0-9]*\) .*/\1/p')
	errors=$(echo "$out" | sed -n 's/^summary: .*  errors \([0-9]*\).*/\1/p')
	if [ -z "$ops" ] || [ "$ops" -le 0 ] || [ "$errors" != 0 ]; then
		echo "not ok: docraft bench $*: summary with ops '$ops', errors '$errors'"
		exit 1
	fi
	if [ "$2" != load ] &&
		! grep -q '^\[ *[0-9]*s\] [0-9]* ops/s  p50 [0-9.]* ms  p99 [0-9.]* ms  errors 0' \
			"$base/bench.err"; then
		echo "not ok: docraft bench $*: no progress line on stderr"
		sed 's/^/#   /' "$base/bench.err"
		exit 1
	fi
	echo "ok: docraft bench $*: ops $ops, errors 0"
}

bench --workload load --keys 1000 --ops 1000 --clients 4 --rf 3
# No --tablets: the master's default, one tablet per live tserver.
n=$("$DOCRAFT" --masters "$masters" tablets bench | grep -c '^bench-' || true)
[ "$n" = 3 ] || { echo "not ok: table bench has $n tablets, not 3 (one per tserver)"; exit 1; }
echo "ok: one tablet per live tserver by default"
bench --workload a --keys 1000 --duration 3 --clients 4 --json
# The JSON line: both kinds of operations, no errors, every key found.
echo "$out" | grep '^{' | python3 -c '
import json, sys
j = json.loads(sys.stdin.read())
assert j["workload"] == "a" and j["clients"] == 4, j
assert j["errors"] == 0 and j["not_found"] == 0, j
assert j["read"]["ops"] > 0 and j["update"]["ops"] > 0, j
assert 0 < j["p50_ms"] <= j["p99_ms"] <= j["max_ms"], j
' || { echo "not ok: the --json line"; exit 1; }
echo "ok: the --json line"

# Usage errors exit 2.
rc=0
"$DOCRAFT" bench --workload nope >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || { echo "not ok: a bad --workload exited $rc, not 2"; exit 1; }
echo "ok: a bad option exits 2"
