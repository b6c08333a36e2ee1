#!/usr/bin/env bash
# docraft vs etcd and Redis, on this machine, loopback only (issue 7).
#
#   scripts/bench-peers.sh [--quick] [--keys N] [--value-size V] [--duration S]
#                          [--runs R] [--out DIR] [--tablets T] [--systems LIST]
#                          [--port-base P] [--keep-data]
#
# Installs what is missing (Debian 12: etcd-server etcd-client redis-server
# redis-tools libcurl4-openssl-dev libhiredis-dev and docraft's own build
# packages), builds build-release/ (meson --buildtype=release), then starts:
#   etcd          3 members (Debian's etcd 3.4) on 127.0.0.1, client ports
#                 P+1..3, peer ports P+11..13, default fsync settings
#   redis-always  redis-server, appendonly yes + appendfsync always, port P+21
#   redis-none    redis-server without persistence (save "", appendonly no),
#                 port P+22
#   docraft       1 master + 3 tservers, RF 3, on 127.0.0.1-3 (through
#                 deploy/docraft-local when present: master P+30, tservers
#                 P+2030), table bench with T tablets (default: the
#                 cluster's, one per tserver: 3)
# and runs `docraft bench` against each: load (64 clients, once), then R
# times (default 3) each of: write with 1 client, write with 64, c with 64,
# a with 64, every run --duration S (default 20) after a warm-up (2 s). Runs
# are interleaved (run 1 of every configuration on every system, then run
# 2, ...) so that a drift in background load hits every system alike.
#
# Prints one table (medians over the runs) with docraft's ratios to each
# peer, and the target ratios: 1-client write p50 vs etcd; 64-client
# writes/s vs etcd and vs redis-always, p99 vs etcd; 64-client workload c
# reads/s vs etcd. Raw results (one JSON line and the full output per run),
# logs and the table go to --out (default ./bench-results/<timestamp>/).
#
# etcd is driven at its leader only (found with etcdctl): writes to a
# follower would be forwarded and linearizable reads on a follower need a
# round trip to the leader, so this is etcd at its fastest; docraft's
# client reaches each tablet's leader itself. Redis is a single server, not
# replicated: an upper bound for a single node, not a like-for-like peer.
#
# --quick: 5 s runs after 1 s of warm-up, 1 run, 10000 keys (unless given):
# a check that everything works, not a measurement. Everything started is
# stopped on exit (trap on EXIT, INT and TERM: each process group is sent
# SIGTERM, then SIGKILL), and the data directories are removed (unless
# --keep-data).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
. scripts/lib/deps.sh

QUICK=0 KEYS="" VSIZE=100 DURATION="" RUNS="" OUT="" TABLETS="" PORT_BASE=27400 KEEP=0
SYSTEMS="docraft,etcd,redis-always,redis-none"
BIN=build-release

usage() {
	sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"
}

die() {
	echo "bench-peers: $*" >&2
	exit 1
}

bad_usage() {
	echo "bench-peers: $* (see --help)" >&2
	exit 2
}

need_uint() { [[ $2 =~ ^[0-9]+$ ]] && [ "$2" -gt 0 ] || bad_usage "$1 needs a positive integer, not '$2'"; }

while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1; shift ;;
	--keys) KEYS=${2:-}; need_uint "$1" "$KEYS"; shift 2 ;;
	--value-size) VSIZE=${2:-}; need_uint "$1" "$VSIZE"; shift 2 ;;
	--duration) DURATION=${2:-}; need_uint "$1" "$DURATION"; shift 2 ;;
	--runs) RUNS=${2:-}; need_uint "$1" "$RUNS"; shift 2 ;;
	--out) OUT=${2:-}; [ -n "$OUT" ] || bad_usage "--out needs a directory"; shift 2 ;;
	--tablets) TABLETS=${2:-}; need_uint "$1" "$TABLETS"; shift 2 ;;
	--systems) SYSTEMS=${2:-}; shift 2 ;;
	--port-base) PORT_BASE=${2:-}; need_uint "$1" "$PORT_BASE"; shift 2 ;;
	--keep-data) KEEP=1; shift ;;
	-h | --help) usage; exit 0 ;;
	*) bad_usage "unknown argument '$1'" ;;
	esac
done
if [ "$QUICK" = 1 ]; then
	KEYS=${KEYS:-10000} DURATION=${DURATION:-5} RUNS=${RUNS:-1} WARMUP=1
else
	KEYS=${KEYS:-100000} DURATION=${DURATION:-20} RUNS=${RUNS:-3} WARMUP=2
fi
IFS=',' read -r -a SYS <<<"$SYSTEMS"
for s in "${SYS[@]}"; do
	case $s in docraft | etcd | redis-always | redis-none) ;;
	*) bad_usage "--systems: unknown system '$s' (docraft, etcd, redis-always, redis-none)" ;;
	esac
done
[ "$PORT_BASE" -ge 1024 ] && [ "$PORT_BASE" -le 60000 ] || bad_usage "--port-base: 1024..60000"
has() { [[ ",$SYSTEMS," == *",$1,"* ]]; }

OUT=${OUT:-$REPO/bench-results/$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT/raw" "$OUT/logs"
OUT=$(cd "$OUT" && pwd)

# ---- packages and build -----------------------------------------------------------------

docraft_ensure_packages etcd-server etcd-client redis-server redis-tools \
	libcurl4-openssl-dev libhiredis-dev
TARGETS=(src/tools/docraft src/master/docraft-master src/tserver/docraft-tserver)
echo "bench-peers: building $BIN/ (release): ${TARGETS[*]} ..."
if [ ! -f "$BIN/build.ninja" ]; then
	meson setup "$BIN" --buildtype=release >/dev/null || die "meson setup $BIN failed"
fi
ninja -C "$BIN" "${TARGETS[@]}" >/dev/null || die "build failed: run 'ninja -C $BIN ${TARGETS[*]}'"
CLI=$REPO/$BIN/src/tools/docraft
drivers_ok() { "$CLI" bench --help | tr -d ' \n' | grep -q 'thisbuildhasdocraft,etcd,redis'; }
if ! drivers_ok; then
	# configured before libcurl/hiredis were installed: look again
	meson setup --reconfigure "$BIN" >/dev/null && ninja -C "$BIN" "${TARGETS[@]}" >/dev/null ||
		die "reconfigure of $BIN failed"
	drivers_ok || die "$CLI was built without the etcd or redis driver (libcurl, hiredis)"
fi

# ---- processes --------------------------------------------------------------------------

WORK=$(mktemp -d "${TMPDIR:-/tmp}/docraft-bench-peers.XXXXXX")
if [ "$(stat -f -c %T "$WORK")" = tmpfs ]; then
	echo "bench-peers: warning: $WORK is on tmpfs: fsync costs nothing there" \
		"(set TMPDIR to a directory on disk)" >&2
fi
PGIDS=()
USE_LOCAL=0
LOCAL=$REPO/deploy/docraft-local

cleanup() {
	local rc=$? p
	trap - EXIT INT TERM
	echo "bench-peers: stopping everything started ..."
	if [ "$USE_LOCAL" = 1 ]; then
		DOCRAFT_BUILD=$REPO/$BIN "$LOCAL" --base "$WORK/docraft" stop >/dev/null 2>&1 || true
		cp "$WORK"/docraft/*/*.log "$OUT/logs/" 2>/dev/null || true
		DOCRAFT_BUILD=$REPO/$BIN "$LOCAL" --base "$WORK/docraft" destroy >/dev/null 2>&1 || true
	fi
	for p in "${PGIDS[@]}"; do kill -TERM -- "-$p" 2>/dev/null || true; done
	for p in "${PGIDS[@]}"; do
		for _ in $(seq 1 50); do
			kill -0 -- "-$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL -- "-$p" 2>/dev/null || true
	done
	if [ "$KEEP" = 1 ]; then
		echo "bench-peers: data kept in $WORK"
	else
		rm -rf "$WORK"
	fi
	echo "bench-peers: results in $OUT"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start NAME CMD...: in its own process group (setsid), output to logs/NAME.log
start() {
	local name=$1
	shift
	setsid "$@" </dev/null >"$OUT/logs/$name.log" 2>&1 &
	PGIDS+=($!)
	disown # no job notice when cleanup has to SIGKILL it
}

ports_free() { # every port given is free on 127.0.0.1-3
	python3 - "$@" <<'EOF'
import socket, sys
for port in map(int, sys.argv[1:]):
    for ip in ("127.0.0.1", "127.0.0.2", "127.0.0.3"):
        s = socket.socket()
        # as the servers bind: a connection of an earlier run in TIME_WAIT
        # does not make the port busy
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((ip, port))
        except OSError:
            print(f"{ip}:{port} is in use (choose another --port-base)", file=sys.stderr)
            sys.exit(1)
        finally:
            s.close()
EOF
}

P=$PORT_BASE
ETCD_CLIENT=($((P + 1)) $((P + 2)) $((P + 3)))
ETCD_PEER=($((P + 11)) $((P + 12)) $((P + 13)))
REDIS_ALWAYS=$((P + 21))
REDIS_NONE=$((P + 22))
DOCRAFT_MPORT=$((P + 30))
ports_free "${ETCD_CLIENT[@]}" "${ETCD_PEER[@]}" "$REDIS_ALWAYS" "$REDIS_NONE" \
	"$DOCRAFT_MPORT" $((DOCRAFT_MPORT + 2000)) || exit 1

ETCD_LEADER=""
if has etcd; then
	echo "bench-peers: etcd $(etcd --version | sed -n 's/^etcd Version: //p'), 3 members"
	cluster=""
	for i in 1 2 3; do
		cluster+="${cluster:+,}e$i=http://127.0.0.1:${ETCD_PEER[$((i - 1))]}"
	done
	for i in 1 2 3; do
		c=${ETCD_CLIENT[$((i - 1))]} pp=${ETCD_PEER[$((i - 1))]}
		start "etcd$i" etcd --name "e$i" --data-dir "$WORK/etcd$i" \
			--listen-client-urls "http://127.0.0.1:$c" --advertise-client-urls "http://127.0.0.1:$c" \
			--listen-peer-urls "http://127.0.0.1:$pp" --initial-advertise-peer-urls "http://127.0.0.1:$pp" \
			--initial-cluster "$cluster" --initial-cluster-token docraft-bench \
			--initial-cluster-state new --logger zap --log-outputs stderr \
			--quota-backend-bytes 8589934592
	done
	ETCD_ALL=127.0.0.1:${ETCD_CLIENT[0]},127.0.0.1:${ETCD_CLIENT[1]},127.0.0.1:${ETCD_CLIENT[2]}
fi
if has redis-always; then
	echo "bench-peers: $(redis-server --version | cut -d' ' -f1-3): appendfsync always, and none"
	mkdir -p "$WORK/redis-always"
	start redis-always redis-server --port "$REDIS_ALWAYS" --bind 127.0.0.1 \
		--dir "$WORK/redis-always" --appendonly yes --appendfsync always --save ""
fi
if has redis-none; then
	mkdir -p "$WORK/redis-none"
	start redis-none redis-server --port "$REDIS_NONE" --bind 127.0.0.1 \
		--dir "$WORK/redis-none" --appendonly no --save ""
fi

MASTERS=""
if has docraft; then
	if [ -x "$LOCAL" ]; then
		USE_LOCAL=1
		DOCRAFT_BUILD=$REPO/$BIN "$LOCAL" --base "$WORK/docraft" create --masters 1 \
			--tservers 3 --rf 3 --port-base "$DOCRAFT_MPORT" >"$OUT/logs/docraft-local.log" 2>&1 ||
			{ cat "$OUT/logs/docraft-local.log" >&2; die "docraft-local create failed"; }
		MASTERS=$(DOCRAFT_BUILD=$REPO/$BIN "$LOCAL" --base "$WORK/docraft" env |
			sed -n 's/^MASTERS=//p')
	else
		MASTERS=127.0.0.1:$DOCRAFT_MPORT
		start docraft-master "$REPO/$BIN/src/master/docraft-master" --address "$MASTERS" \
			--data "$WORK/docraft/master" --replication-factor 3
		for i in 1 2 3; do
			start "docraft-ts$i" "$REPO/$BIN/src/tserver/docraft-tserver" \
				--address "127.0.0.$i:$((DOCRAFT_MPORT + 2000))" --data "$WORK/docraft/ts$i" \
				--masters "$MASTERS"
		done
		live=0
		for _ in $(seq 1 150); do
			live=$("$CLI" --masters "$MASTERS" --timeout 2000 tservers 2>/dev/null |
				awk '$3 == "yes"' | wc -l || true)
			[ "$live" -ge 3 ] && break
			sleep 0.2
		done
		[ "$live" -ge 3 ] || die "docraft: $live of 3 tservers live after 30 s (logs in $OUT/logs)"
	fi
	echo "bench-peers: docraft, 1 master + 3 tservers, RF 3, masters $MASTERS"
fi

# Readiness and the etcd leader.
if has etcd; then
	ok=0
	for _ in $(seq 1 100); do
		if ETCDCTL_API=3 etcdctl --endpoints "$ETCD_ALL" endpoint health >/dev/null 2>&1; then
			ok=1
			break
		fi
		sleep 0.2
	done
	[ "$ok" = 1 ] || die "etcd: not healthy after 20 s (logs in $OUT/logs)"
	ETCD_LEADER=$(ETCDCTL_API=3 etcdctl --endpoints "$ETCD_ALL" endpoint status -w json |
		python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["Status"]["header"]["member_id"] == s["Status"]["leader"]:
        print(s["Endpoint"].replace("http://", ""))
        break
')
	[ -n "$ETCD_LEADER" ] || die "etcd: no leader found"
	echo "bench-peers: etcd leader at $ETCD_LEADER"
fi
for port in $(has redis-always && echo "$REDIS_ALWAYS") $(has redis-none && echo "$REDIS_NONE"); do
	ok=0
	for _ in $(seq 1 100); do
		if [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" = PONG ]; then
			ok=1
			break
		fi
		sleep 0.1
	done
	[ "$ok" = 1 ] || die "redis on port $port: no PONG after 10 s"
done

# The machine and the run, for the record.
{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "command: $0 --keys $KEYS --value-size $VSIZE --duration $DURATION --runs $RUNS" \
		"${TABLETS:+--tablets $TABLETS }--systems $SYSTEMS$([ "$QUICK" = 1 ] && echo ' --quick')"
	echo "commit: $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$REPO" diff --quiet 2>/dev/null || echo ' (+ uncommitted changes)')"
	echo "cpus: $(nproc), $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -1)"
	echo "memory: $(free -g | awk '/^Mem/ {print $2}') GiB"
	echo "kernel: $(uname -sr)"
	# df names ext4 where stat -f says "ext2/ext3" (they share a magic)
	echo "data dir: $WORK ($(df --output=fstype "$WORK" | tail -n 1), $(df -h "$WORK" | awk 'NR == 2 {print $1}'))"
	echo "etcd: $(etcd --version | head -1 | sed 's/etcd Version: //'); redis: $(redis-server --version | awk '{print $3}')"
	echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT/env.txt"

# ---- the matrix -------------------------------------------------------------------------

sys_args() { # the bench arguments of a system
	case $1 in
	docraft) echo "--system docraft --masters $MASTERS ${TABLETS:+--tablets $TABLETS }--rf 3" ;;
	etcd) echo "--system etcd --endpoints $ETCD_LEADER" ;;
	redis-always) echo "--system redis --endpoints 127.0.0.1:$REDIS_ALWAYS" ;;
	redis-none) echo "--system redis --endpoints 127.0.0.1:$REDIS_NONE" ;;
	esac
}

FAILED=0
# run SYSTEM TAG TIMEOUT BENCH-ARGS...: one docraft bench, its JSON line into
# raw/SYSTEM.TAG.json (with "label": SYSTEM), everything into raw/SYSTEM.TAG.txt.
run() {
	local sys=$1 tag=$2 limit=$3 rc=0
	shift 3
	# shellcheck disable=SC2046
	timeout --signal=INT --kill-after=10 "$limit" "$CLI" bench $(sys_args "$sys") \
		--keys "$KEYS" --value-size "$VSIZE" --json "$@" >"$OUT/raw/$sys.$tag.txt" 2>&1 || rc=$?
	if grep '^{' "$OUT/raw/$sys.$tag.txt" |
		python3 -c 'import json, sys; j = json.loads(sys.stdin.readline()); j["label"] = sys.argv[1]; print(json.dumps(j))' \
			"$sys" >"$OUT/raw/$sys.$tag.json" 2>/dev/null; then
		python3 -c 'import json, sys; j = json.load(open(sys.argv[1]))
print("  %-13s %-14s %9.0f ops/s  p50 %7.3f ms  p99 %8.3f ms  errors %d" % (sys.argv[2], sys.argv[3], j["ops_per_s"], j["p50_ms"], j["p99_ms"], j["errors"]))' \
			"$OUT/raw/$sys.$tag.json" "$sys" "$tag"
	else
		rm -f "$OUT/raw/$sys.$tag.json"
		echo "  $sys $tag: no result (exit $rc; see $OUT/raw/$sys.$tag.txt)"
	fi
	[ "$rc" = 0 ] || FAILED=$((FAILED + 1))
}

echo "bench-peers: load, $KEYS keys of $VSIZE bytes, 64 clients"
for s in "${SYS[@]}"; do
	run "$s" load 1800 --workload load --clients 64
done

CONFIGS=("write 1" "write 64" "c 64" "a 64")
limit=$((WARMUP + DURATION + 60))
for ((r = 1; r <= RUNS; r++)); do
	echo "bench-peers: run $r of $RUNS ($DURATION s each after $WARMUP s of warm-up)"
	for cfg in "${CONFIGS[@]}"; do
		read -r wl cl <<<"$cfg"
		for s in "${SYS[@]}"; do
			run "$s" "$wl-$cl.r$r" "$limit" --workload "$wl" --clients "$cl" \
				--duration "$DURATION" --warmup "$WARMUP"
		done
	done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/env.txt"

# ---- the table --------------------------------------------------------------------------

python3 - "$OUT" "$RUNS" "$QUICK" <<'EOF' | tee "$OUT/summary.md"
import glob, json, os, statistics, sys

out, runs, quick = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
rows = {}
for f in sorted(glob.glob(os.path.join(out, "raw", "*.json"))):
    j = json.load(open(f))
    if j["workload"] == "load":
        continue
    rows.setdefault((j["label"], j["workload"], j["clients"]), []).append(j)

order = ["docraft", "etcd", "redis-always", "redis-none"]
configs = [("write", 1), ("write", 64), ("c", 64), ("a", 64)]
med = {}
for key, js in rows.items():
    med[key] = {
        "ops": statistics.median(j["ops_per_s"] for j in js),
        "p50": statistics.median(j["p50_ms"] for j in js),
        "p99": statistics.median(j["p99_ms"] for j in js),
        "errors": sum(j["errors"] for j in js),
        "n": len(js),
    }

def fmt(x, d=2):
    return "-" if x is None else f"{x:,.{d}f}"

print(f"## docraft bench: docraft vs etcd and Redis ({'QUICK: a smoke run, not a result' if quick else 'medians over the runs'})")
print()
print(open(os.path.join(out, "env.txt")).read().strip().replace("\n", "  \n"))
print()
print("| system | workload | clients | ops/s | p50 ms | p99 ms | errors | runs |")
print("|---|---|---:|---:|---:|---:|---:|---:|")
for wl, cl in configs:
    for s in order:
        m = med.get((s, wl, cl))
        if m:
            print(f"| {s} | {wl} | {cl} | {fmt(m['ops'], 0)} | {fmt(m['p50'], 3)} | {fmt(m['p99'], 3)} | {m['errors']} | {m['n']} |")
print()

def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b

def get(s, wl, cl, what):
    m = med.get((s, wl, cl))
    return m[what] if m else None

print("docraft / peer (ops/s: higher is better for docraft; p50, p99: lower is better):")
print()
print("| workload | clients | peer | ops/s ratio | p50 ratio | p99 ratio |")
print("|---|---:|---|---:|---:|---:|")
for wl, cl in configs:
    for s in order[1:]:
        if (s, wl, cl) in med and ("docraft", wl, cl) in med:
            print(f"| {wl} | {cl} | {s} | {fmt(ratio(get('docraft', wl, cl, 'ops'), get(s, wl, cl, 'ops')))} "
                  f"| {fmt(ratio(get('docraft', wl, cl, 'p50'), get(s, wl, cl, 'p50')))} "
                  f"| {fmt(ratio(get('docraft', wl, cl, 'p99'), get(s, wl, cl, 'p99')))} |")
print()
print("Targets (docraft / peer):")
print()
print("| target | ratio |")
print("|---|---:|")
targets = [
    ("1-client write p50 vs etcd (lower is better)", ratio(get("docraft", "write", 1, "p50"), get("etcd", "write", 1, "p50"))),
    ("64-client writes/s vs etcd", ratio(get("docraft", "write", 64, "ops"), get("etcd", "write", 64, "ops"))),
    ("64-client writes/s vs redis-always", ratio(get("docraft", "write", 64, "ops"), get("redis-always", "write", 64, "ops"))),
    ("64-client write p99 vs etcd (lower is better)", ratio(get("docraft", "write", 64, "p99"), get("etcd", "write", 64, "p99"))),
    ("64-client workload c reads/s vs etcd", ratio(get("docraft", "c", 64, "ops"), get("etcd", "c", 64, "ops"))),
]
for name, r in targets:
    print(f"| {name} | {fmt(r)} |")
errors = sum(m["errors"] for m in med.values())
if errors:
    print()
    print(f"WARNING: {errors} failed operations in the runs (see raw/*.txt)")
EOF
{
	echo "system,tag,workload,clients,ops_per_s,p50_ms,p95_ms,p99_ms,p999_ms,max_ms,errors"
	for f in "$OUT"/raw/*.json; do
		[ -f "$f" ] || continue
		python3 -c 'import json, os, sys; j = json.load(open(sys.argv[1])); t = os.path.basename(sys.argv[1]).split(".", 1)[1][:-5]
print(",".join(str(x) for x in (j["label"], t, j["workload"], j["clients"], j["ops_per_s"], j["p50_ms"], j["p95_ms"], j["p99_ms"], j["p999_ms"], j["max_ms"], j["errors"])))' "$f"
	done
} >"$OUT/results.csv"
if [ "$FAILED" -gt 0 ]; then
	echo "bench-peers: $FAILED bench run(s) failed or had errors (see $OUT/raw/*.txt)" >&2
	exit 1
fi
