#!/usr/bin/env bash
# Time to heal (issue 15, docs/reliability.md "Self-healing"): a local
# cluster of 1 master and 4 tservers (deploy/docraft-local, free ports on
# 127.0.0.1-4), a table of --tablets tablets at RF 3 loaded with --mib MiB of
# values by `docraft bench --workload load`; once every tablet is at RF with
# no move in flight, one tserver is killed for good (SIGKILL, never started
# again). Then, polling the master every 0.2 s:
#
#   detected  the master lists it as failed (--failed-after-s after its last
#             heartbeat; the masters' --tserver-failed-after-s)
#   healed    `docraft cluster`: 0 under-replicated, no move in flight
#
# and prints the times from the kill, the time to heal (detected -> healed),
# the size of the replica directories that appeared on the survivors
# meanwhile (the checkpoint copies of the new replicas; their Raft entries
# live in the shared log, and the cluster takes no writes then) and that
# over the time to heal (MiB/s). The table's replica checksums must agree at the end. Everything
# is stopped and removed at exit.
#
#   scripts/bench-heal.sh [--build DIR] [--mib N] [--tablets T]
#                         [--value-size B] [--failed-after-s S]
#                         [--max-moves N] [--victim tK]
#
# Defaults: build, 64 MiB, 8 tablets, 1000-byte values, failed after 5 s,
# the master's --max-concurrent-moves (4), victim t2.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
build=$REPO/build mib=64 tablets=8 vsize=1000 failed_after=5 max_moves="" victim=t2
while [ $# -gt 0 ]; do
	[ $# -ge 2 ] || { echo "bench-heal: $1 needs a value" >&2; exit 2; }
	case $1 in
	--build) build=$2 ;; --mib) mib=$2 ;; --tablets) tablets=$2 ;; --value-size) vsize=$2 ;;
	--failed-after-s) failed_after=$2 ;; --max-moves) max_moves=$2 ;; --victim) victim=$2 ;;
	*) echo "bench-heal: unknown option $1" >&2; exit 2 ;;
	esac
	shift 2
done
for v in mib tablets vsize failed_after; do
	[[ ${!v} =~ ^[0-9]+$ ]] && [ "${!v}" -gt 0 ] || { echo "bench-heal: --${v//_/-}: a positive integer" >&2; exit 2; }
done
[[ $victim =~ ^t[1-4]$ ]] || { echo "bench-heal: --victim: t1..t4" >&2; exit 2; }
export DOCRAFT_BUILD
DOCRAFT_BUILD=$(cd "$build" && pwd)
CLI=$DOCRAFT_BUILD/src/tools/docraft
# shellcheck source=../tests/jepsen/heal.sh
. "$REPO/tests/jepsen/heal.sh"
# shellcheck source=../tests/lib/wait.sh
. "$REPO/tests/lib/wait.sh"

base=$(mktemp -d "${TMPDIR:-/tmp}/docraft-bench-heal.XXXXXX")
dl() { "$REPO/deploy/docraft-local" --base "$base/cluster" "$@"; }
cleanup() {
	dl destroy >/dev/null 2>&1 || true
	rm -rf "$base"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

now_ms() { date +%s%3N; }
secs() { printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)); }
# "tN/<tablet id>" of every replica directory on the survivors.
survivor_replicas() {
	local n d
	for n in t1 t2 t3 t4; do
		[ "$n" = "$victim" ] && continue
		for d in "$base/cluster/$n/data/tablets"/*/; do
			[ -d "$d" ] && echo "$n/$(basename "$d")"
		done
	done
	return 0
}

create=(create --masters 1 --tservers 4 --rf 3 --port-base auto --tserver-failed-after-s "$failed_after")
[ -z "$max_moves" ] || create+=(--master-flag "max-concurrent-moves=$max_moves")
dl "${create[@]}" >"$base/create.log" 2>&1 || { cat "$base/create.log" >&2; exit 1; }
MASTERS=$(dl env | sed -n 's/^MASTERS=//p')
keys=$((mib * 1048576 / vsize))
echo "bench-heal: 1 master, 4 tservers, RF 3; table heal: $tablets tablets, $keys keys of $vsize bytes ($mib MiB); failed after $failed_after s"
"$CLI" --masters "$MASTERS" --timeout 60000 bench --workload load --table heal \
	--tablets "$tablets" --rf 3 --keys "$keys" --value-size "$vsize" --clients 8 >"$base/load.out" 2>&1 ||
	{ cat "$base/load.out" >&2; exit 1; }
echo "bench-heal: loaded: $(tail -n 1 "$base/load.out")"
wait_for 120000 heal_at_rf "$CLI" "$MASTERS" || { echo "bench-heal: not at RF after the load" >&2; exit 1; }
addr=$(sed -n 's/^address = //p' "$base/cluster/$victim/node.conf")
held=$("$CLI" --masters "$MASTERS" tservers | awk -v a="$addr" '
	NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	$2 == a { print $(c["REPLICAS"] + 2) }')
survivor_replicas | sort >"$base/replicas.before"
echo "bench-heal: killing $victim ($addr, $held replicas) for good"
t0=$(now_ms)
dl remove-node "$victim" >/dev/null
t_detect="" t_heal=""
end=$((t0 + 600000))
while [ "$(now_ms)" -lt "$end" ]; do
	if [ -z "$t_detect" ] && heal_failed "$CLI" "$MASTERS" "$addr"; then
		t_detect=$(now_ms)
	fi
	if [ -n "$t_detect" ] && heal_at_rf "$CLI" "$MASTERS"; then
		t_heal=$(now_ms)
		break
	fi
	sleep 0.2
done
[ -n "$t_heal" ] || { echo "bench-heal: not healed within 600 s" >&2; "$CLI" --masters "$MASTERS" cluster >&2; exit 1; }
# The new replicas: their directories (checkpoint copy + the entries they
# caught up with) are what the heal copied.
survivor_replicas | sort >"$base/replicas.after"
copied=0
for r in $(comm -13 "$base/replicas.before" "$base/replicas.after"); do
	b=$(du -sb "$base/cluster/${r%%/*}/data/tablets/${r#*/}" | cut -f1)
	copied=$((copied + b))
done
heal_ms=$((t_heal - t_detect))
echo "bench-heal: detected failed  $(secs $((t_detect - t0))) s after the kill"
echo "bench-heal: every tablet at RF $(secs $((t_heal - t0))) s after the kill"
echo "bench-heal: time to heal      $(secs "$heal_ms") s (detected -> healed, $held replicas re-created)"
awk -v b="$copied" -v ms="$heal_ms" 'BEGIN {
	printf "bench-heal: copied           %.1f MiB (the new replicas'"'"' directories)\n", b / 1048576
	printf "bench-heal: copy rate        %.1f MiB/s over the time to heal\n", (ms > 0 ? b / 1048576 / (ms / 1000) : 0) }'
if "$CLI" --masters "$MASTERS" --timeout 30000 checksum heal >"$base/checksum.txt" 2>&1; then
	echo "bench-heal: $(tail -n 1 "$base/checksum.txt")"
else
	cat "$base/checksum.txt" >&2
	echo "bench-heal: replica checksums do not agree" >&2
	exit 1
fi
