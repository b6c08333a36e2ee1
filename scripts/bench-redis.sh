#!/usr/bin/env bash
# docraft's Redis protocol vs redis-server, side by side in one run (issue 17).
#
#   scripts/bench-redis.sh [--requests N] [--clients C] [--tests LIST]
#                          [--build DIR] [--out DIR] [--keyspace R]
#                          [--test-timeout SEC]
#
# Starts, on this machine, loopback only:
#   docraft        1 master + 3 tservers, RF 3, on 127.0.0.1-3 (deploy/
#                  docraft-local, --port-base auto), redis-benchmark against
#                  tserver t1's Redis port (it routes every command to the
#                  tablet leader: RF 3 replication before each write's reply)
#   redis-always   redis-server, appendonly yes + appendfsync always
#   redis-none     redis-server without persistence (save "", appendonly no)
# and runs `redis-benchmark -c C -n N -r R -q -t LIST` (default: -c 64
# -n 200000 -r 100000, set,get,incr,hset,sadd,zadd,lpush) against each in
# turn, one redis-benchmark per test, each bounded by --test-timeout (default
# 600 s: a test that does not finish in time shows as "timeout"), then
# prints one markdown table: requests/s of each system and
# docraft's ratio to each redis, with issue 17's targets (SET >= 0.4x and
# GET >= 0.5x redis-always). Raw outputs and the table go to --out
# (default ./bench-results/redis-<timestamp>/).
#
# Binaries: --build DIR (default build-release, configured with
# --buildtype=release and built when missing; `--build build` for the
# debug build). Needs redis-server and redis-tools (installed when missing,
# as Debian 12 packages). Everything started is stopped on exit (trap):
# the cluster destroyed, the redis-servers killed by pid, temp data removed.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
# shellcheck disable=SC1091 # the repo root is the working directory
. scripts/lib/deps.sh

N=200000 C=64 R=100000 TESTS=set,get,incr,hset,sadd,zadd,lpush BUILD=build-release OUT="" TT=600
usage() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; }
die() {
	echo "bench-redis: $*" >&2
	exit 1
}
while [ $# -gt 0 ]; do
	case $1 in
	-h | --help) usage; exit 0 ;;
	--requests) N=${2:?}; shift 2 ;;
	--clients) C=${2:?}; shift 2 ;;
	--tests) TESTS=${2:?}; shift 2 ;;
	--build) BUILD=${2:?}; shift 2 ;;
	--out) OUT=${2:?}; shift 2 ;;
	--keyspace) R=${2:?}; shift 2 ;; # 0: no -r (every test on one key, as issue 17's command)
	--test-timeout) TT=${2:?}; shift 2 ;;
	*) usage >&2; exit 2 ;;
	esac
done
for v in N C TT; do [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "--${v}: a positive integer"; done
[[ $R =~ ^[0-9]+$ ]] || die "--keyspace: a non-negative integer"
RARG=()
[ "$R" = 0 ] || RARG=(-r "$R")

docraft_ensure_packages redis-server redis-tools
if [ ! -x "$BUILD/src/tserver/docraft-tserver" ]; then
	[ -d "$BUILD" ] || meson setup "$BUILD" --buildtype=release >/dev/null
	ninja -C "$BUILD" -j2 >/dev/null
fi
BUILD=$(cd "$BUILD" && pwd)
OUT=${OUT:-$REPO/bench-results/redis-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BASE=$(mktemp -d "${TMPDIR:-/tmp}/docraft-bench-redis.XXXXXX")
dl() { DOCRAFT_BUILD=$BUILD deploy/docraft-local --base "$BASE/cluster" "$@"; }

PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	dl destroy >>"$OUT/cluster.log" 2>&1 || true
	rm -rf "$BASE"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
start_redis() { # NAME EXTRA-ARGS...: sets PORT
	local name=$1 i
	shift
	PORT=$(free_port)
	mkdir -p "$BASE/$name"
	redis-server --bind 127.0.0.1 --port "$PORT" --dir "$BASE/$name" \
		--logfile "$OUT/$name.log" "$@" &
	PIDS+=($!)
	for ((i = 0; i < 100; i++)); do
		redis-cli -p "$PORT" PING >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	die "$name did not start ($OUT/$name.log)"
}

echo "bench-redis: docraft cluster (3 tservers, RF 3) from $BUILD" >&2
dl create --masters 1 --tservers 3 --rf 3 --port-base auto >>"$OUT/cluster.log" 2>&1 ||
	die "docraft-local create failed: $OUT/cluster.log"
dl start >>"$OUT/cluster.log" 2>&1 || die "docraft-local start failed: $OUT/cluster.log"
DOC=$(dl env | sed -n 's/^\(export \)\{0,1\}REDIS=//p' | tr -d "\"'" | cut -d, -f1)
[ -n "$DOC" ] || die "docraft-local env printed no REDIS="
for ((i = 0; i < 300; i++)); do
	[ "$(redis-cli -h "${DOC%:*}" -p "${DOC##*:}" SET bench:warm 1 2>/dev/null)" = OK ] && break
	sleep 0.2
done
start_redis redis-always --appendonly yes --appendfsync always --save ""
ALWAYS=$PORT
start_redis redis-none --appendonly no --save ""
NONE=$PORT

declare -A RPS
run() { # NAME HOST PORT
	local name=$1 host=$2 port=$3 line t v
	: >"$OUT/$name.txt"
	for t in ${TESTS//,/ }; do
		echo "bench-redis: $name: redis-benchmark -c $C -n $N ${RARG[*]} -t $t" >&2
		timeout "$TT" redis-benchmark -h "$host" -p "$port" -c "$C" -n "$N" ${RARG[@]+"${RARG[@]}"} -t "$t" -q 2>&1 |
			tr '\r' '\n' | grep 'requests per second' >>"$OUT/$name.txt" ||
			echo "${t^^}: timeout or error after $TT s" | tee -a "$OUT/$name.errors" >&2
	done
	while read -r line; do
		t=${line%%:*}
		v=$(sed -n 's/^[^:]*: \([0-9.]*\) requests per second.*/\1/p' <<<"$line")
		RPS[$name,$t]=$v
		RPS[$name,$t,p50]=$(sed -n 's/.*p50=\([0-9.]*\) msec.*/\1/p' <<<"$line")
	done <"$OUT/$name.txt"
}
run docraft "${DOC%:*}" "${DOC##*:}"
run redis-always 127.0.0.1 "$ALWAYS"
run redis-none 127.0.0.1 "$NONE"

ratio() { # A B: A/B with two decimals, or - when either is missing
	if [ -n "${1:-}" ] && [ -n "${2:-}" ]; then
		python3 -c "print('%.2f' % ($1 / $2))"
	else
		echo -
	fi
}
{
	echo "redis-benchmark -c $C -n $N ${RARG[*]} -q -t $TESTS; $(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC'), $(redis-server --version | sed 's/.*v=\([^ ]*\).*/redis-server \1/')"
	echo
	echo "| test | docraft RF 3 req/s (p50 ms) | redis appendfsync always | redis no persistence | docraft / always | docraft / none |"
	echo "|---|---|---|---|---|---|"
	for t in $(cut -d: -f1 "$OUT/redis-none.txt" "$OUT/docraft.txt" | awk '!seen[$0]++'); do
		echo "| $t | ${RPS[docraft,$t]:--} (${RPS[docraft,$t,p50]:--}) | ${RPS[redis-always,$t]:--} (${RPS[redis-always,$t,p50]:--}) | ${RPS[redis-none,$t]:--} (${RPS[redis-none,$t,p50]:--}) | $(ratio "${RPS[docraft,$t]:-}" "${RPS[redis-always,$t]:-}") | $(ratio "${RPS[docraft,$t]:-}" "${RPS[redis-none,$t]:-}") |"
	done
	echo
	echo "Targets (issue 17): SET >= 0.4x and GET >= 0.5x redis appendfsync always:" \
		"SET $(ratio "${RPS[docraft,SET]:-}" "${RPS[redis-always,SET]:-}")x," \
		"GET $(ratio "${RPS[docraft,GET]:-}" "${RPS[redis-always,GET]:-}")x."
} | tee "$OUT/table.md"
