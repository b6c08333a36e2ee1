# shellcheck shell=bash
# The real-process cluster of the shell tests: the same processes with the
# same flags as tests/lib/cluster.c (the C tests' cluster.h): one
# docraft-master at 127.0.0.1:PM with --tserver-timeout-ms 3000, and N
# docraft-tservers at 127.0.0.1..N:PT (ports free on every address, below the
# kernel's ephemeral range), each with its data dir and log in a fresh temp
# dir; up once the master lists every tserver live (at most 20 s). A flag
# changed there is changed here. Sourced; needs MASTER, TSERVER, DOCRAFT (the
# executables, set by meson as for the C tests).
#
#   cluster_up TAG [N]   start (N tservers, default 3); sets CLUSTER_BASE,
#                        CLUSTER_MASTERS (the --masters value), CLUSTER_TSERVERS
#                        (addresses); extra flags: CLUSTER_MASTER_ARGS and
#                        CLUSTER_TSERVER_ARGS (arrays), set before
#   cluster_down [RC]    stop everything (TERM, then KILL after 15 s), print
#                        the last lines of every log when RC is not 0, remove
#                        the temp dir. Safe to call twice; a test traps it on
#                        EXIT.

# shellcheck source=wait.sh
. "$(dirname "${BASH_SOURCE[0]}")/wait.sh"

CLUSTER_BASE=""
CLUSTER_MASTERS=""
CLUSTER_TSERVERS=()
CLUSTER_PIDS=()

# cluster_free_port N [AVOID]: a port free on 127.0.0.1..N at once, not AVOID,
# below the kernel's ephemeral range (proc_free_port of proc.c).
cluster_free_port() {
	python3 - "$1" "${2:--1}" <<'PY'
import random, socket, sys
n, avoid = int(sys.argv[1]), int(sys.argv[2])
lo = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
for _ in range(200):
    p = random.randint(10000, max(lo - 1, 10001))
    if p == avoid:
        continue
    socks = []
    try:
        for k in range(1, n + 1):
            s = socket.socket()
            socks.append(s)
            s.bind(("127.0.0.%d" % k, p))
        print(p)
        sys.exit(0)
    except OSError:
        pass
    finally:
        for s in socks:
            s.close()
sys.exit(1)
PY
}

cluster_live_tservers() { # N: the master lists N tservers live
	local live
	live=$("$DOCRAFT" --masters "$CLUSTER_MASTERS" tservers 2>/dev/null | grep -c ' yes ') || true
	[ "$live" -ge "$1" ]
}

cluster_up() {
	local tag=$1 n=${2:-3} pt pm k
	: "${MASTER:?MASTER: the docraft-master executable}"
	: "${TSERVER:?TSERVER: the docraft-tserver executable}"
	: "${DOCRAFT:?DOCRAFT: the docraft CLI}"
	CLUSTER_BASE=$(mktemp -d "${TMPDIR:-/tmp}/docraft-test-$tag.XXXXXX")
	pt=$(cluster_free_port "$n") || { echo "cluster_up: no free port"; return 1; }
	pm=$(cluster_free_port 1 "$pt") || { echo "cluster_up: no free port"; return 1; }
	CLUSTER_MASTERS=127.0.0.1:$pm
	CLUSTER_TSERVERS=()
	setsid "$MASTER" --address "$CLUSTER_MASTERS" --data "$CLUSTER_BASE/master" \
		--tserver-timeout-ms 3000 "${CLUSTER_MASTER_ARGS[@]}" \
		>"$CLUSTER_BASE/master.out" 2>"$CLUSTER_BASE/master.log" &
	CLUSTER_PIDS+=($!)
	for ((k = 1; k <= n; k++)); do
		CLUSTER_TSERVERS+=("127.0.0.$k:$pt")
		setsid "$TSERVER" --address "127.0.0.$k:$pt" --data "$CLUSTER_BASE/ts$k" \
			--masters "$CLUSTER_MASTERS" "${CLUSTER_TSERVER_ARGS[@]}" \
			>"$CLUSTER_BASE/ts$k.out" 2>"$CLUSTER_BASE/ts$k.log" &
		CLUSTER_PIDS+=($!)
	done
	if ! wait_for 20000 cluster_live_tservers "$n"; then
		echo "cluster_up: not $n live tservers after 20 s"
		return 1
	fi
	echo "# cluster up: master $CLUSTER_MASTERS, tservers on port $pt"
}

cluster_gone() { # PID: the process group of PID has exited
	! kill -0 "$1" 2>/dev/null
}

cluster_down() {
	local rc=${1:-0} p f
	for p in "${CLUSTER_PIDS[@]}"; do kill -TERM -- "-$p" 2>/dev/null || true; done
	for p in "${CLUSTER_PIDS[@]}"; do
		wait_for 15000 cluster_gone "$p" || true
		kill -KILL -- "-$p" 2>/dev/null || true
	done
	CLUSTER_PIDS=()
	[ -n "$CLUSTER_BASE" ] || return 0
	if [ "$rc" -ne 0 ]; then
		for f in "$CLUSTER_BASE"/*.log; do
			[ -f "$f" ] || continue
			echo "---- $f (last lines)"
			tail -n 20 "$f"
		done
	fi
	rm -rf "$CLUSTER_BASE"
	CLUSTER_BASE=""
}
