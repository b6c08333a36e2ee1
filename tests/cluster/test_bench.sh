#!/usr/bin/env bash
# docraft bench against a real cluster: one master and three tservers on
# 127.0.0.1-3 (through deploy/docraft-local when it is there, else started
# here), ports chosen free at random; then
#   docraft bench --workload load --keys 1000 --ops 1000
#   docraft bench --workload a --keys 1000 --duration 3 --clients 4
# each must print a summary line with ops > 0 and errors 0 and exit 0.
# Everything started is stopped on exit (trap), the data removed.
#
# Environment (meson sets it): MASTER, TSERVER, DOCRAFT (executables),
# DOCRAFT_BUILD (the build dir), DOCRAFT_SRC (the source root).
set -euo pipefail

: "${MASTER:?MASTER: the docraft-master executable}"
: "${TSERVER:?TSERVER: the docraft-tserver executable}"
: "${DOCRAFT:?DOCRAFT: the docraft CLI}"
SRC=${DOCRAFT_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
LOCAL=$SRC/deploy/docraft-local

base=$(mktemp -d "${TMPDIR:-/tmp}/docraft-test-bench.XXXXXX")
pids=()
use_local=0

cleanup() {
	local rc=$? p
	trap - EXIT INT TERM
	if [ "$use_local" = 1 ]; then
		"$LOCAL" --base "$base/cluster" destroy >/dev/null 2>&1 || true
	fi
	for p in "${pids[@]}"; do kill -TERM -- "-$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do
		for _ in $(seq 1 50); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL -- "-$p" 2>/dev/null || true
	done
	if [ "$rc" -ne 0 ]; then
		for f in "$base"/*.log "$base"/cluster/*/*.log; do
			[ -f "$f" ] || continue
			echo "---- $f (last lines)"
			tail -n 15 "$f"
		done
	fi
	rm -rf "$base"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A port P such that P and P+2000 are free on 127.0.0.1, .2 and .3, below
# the kernel's ephemeral ports (an outgoing connection could take one of those
# before the nodes bind it).
free_port() {
	python3 - <<'EOF'
import random, socket, sys
lo = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
for _ in range(200):
    p = random.randint(10000, max(lo - 2001, 10001))
    socks = []
    try:
        for ip in ("127.0.0.1", "127.0.0.2", "127.0.0.3"):
            for port in (p, p + 2000):
                s = socket.socket()
                socks.append(s)
                s.bind((ip, port))
        print(p)
        sys.exit(0)
    except OSError:
        pass
    finally:
        for s in socks:
            s.close()
sys.exit(1)
EOF
}

port=$(free_port)
if [ -x "$LOCAL" ]; then
	use_local=1
	echo "# cluster through deploy/docraft-local, port base $port"
	DOCRAFT_BUILD=${DOCRAFT_BUILD:-$(cd "$(dirname "$DOCRAFT")/../.." && pwd)} \
		"$LOCAL" --base "$base/cluster" create --masters 1 --tservers 3 --rf 3 \
		--port-base "$port"
	masters=$("$LOCAL" --base "$base/cluster" env | sed -n 's/^MASTERS=//p')
else
	masters=127.0.0.1:$port
	echo "# cluster started here: master $masters, tservers on 127.0.0.1-3:$((port + 2000))"
	setsid "$MASTER" --address "$masters" --data "$base/master" >"$base/master.log" 2>&1 &
	pids+=($!)
	for i in 1 2 3; do
		setsid "$TSERVER" --address "127.0.0.$i:$((port + 2000))" --data "$base/ts$i" \
			--masters "$masters" >"$base/ts$i.log" 2>&1 &
		pids+=($!)
	done
	live=0
	for _ in $(seq 1 150); do
		live=$("$DOCRAFT" --masters "$masters" --timeout 2000 tservers 2>/dev/null |
			awk '$3 == "yes"' | wc -l || true)
		[ "$live" -ge 3 ] && break
		sleep 0.2
	done
	[ "$live" -ge 3 ] || { echo "not ok: $live of 3 tservers live after 30 s"; exit 1; }
fi

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
