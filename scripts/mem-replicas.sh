#!/usr/bin/env bash
# Memory of many replicas per tserver (issue 12, "Memory and disk bounds"):
# one master and three tservers on 127.0.0.1-3 (free random ports), a table
# of --tablets N with 3 replicas each (N replicas per tserver), loaded with
# docraft bench (so every tablet takes writes and flushes), then each
# tserver's VmRSS / VmHWM, open descriptors and threads from /proc, and the
# replicas each says it can host (its start-up log). Then each tserver is
# stopped with SIGTERM and its exit status shown (0: a clean stop).
# Everything is stopped and removed at exit.
#
#   scripts/mem-replicas.sh [--build DIR] [--tablets N] [--keys K]
#                           [--value-size V] [--block-cache-mb MB]
#                           [--memstore-mb MB] [--segment-mb MB]
#                           [--raft-log-mb MB]   (0: entry counts only)
set -euo pipefail
build=build tablets=100 keys=100000 vsize=1000 cache=64 memstore=64 segment=1 raftlog=256
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=$2 ;; --tablets) tablets=$2 ;; --keys) keys=$2 ;;
	--value-size) vsize=$2 ;; --block-cache-mb) cache=$2 ;; --memstore-mb) memstore=$2 ;;
	--segment-mb) segment=$2 ;; --raft-log-mb) raftlog=$2 ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
	shift 2
done
base=$(mktemp -d "${TMPDIR:-/tmp}/docraft-mem.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do
		for _ in $(seq 1 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null || true
	done
	rm -rf "$base"
}
trap cleanup EXIT
port=$(python3 -c 'import random; print(random.randint(12000, 30000))')
master=127.0.0.1:$((port + 1))
"$build/src/master/docraft-master" --address "$master" --data "$base/m" >"$base/m.out" 2>"$base/m.log" &
pids+=($!)
for i in 1 2 3; do
	"$build/src/tserver/docraft-tserver" --address "127.0.0.$i:$port" --data "$base/t$i" \
		--masters "$master" --raft-segment-mb "$segment" --block-cache-mb "$cache" \
		--memstore-mb "$memstore" --raft-log-memory-mb "$raftlog" >"$base/t$i.out" 2>"$base/t$i.log" &
	pids+=($!)
done
for _ in $(seq 1 100); do
	[ "$("$build/src/tools/docraft" --masters "$master" tservers 2>/dev/null | grep -c ' yes ')" = 3 ] && break
	sleep 0.2
done
rss() {
	for i in 1 2 3; do
		awk -v t="t$i" '/^VmRSS|^VmHWM/ {printf "%s %s %s MiB  ", t, $1, int($2/1024)} END {printf ""}' \
			"/proc/${pids[$i]}/status"
		echo "fds $(ls "/proc/${pids[$i]}/fd" | wc -l)  threads $(ls "/proc/${pids[$i]}/task" | wc -l)"
	done
}
echo "idle, before the table:"; rss
start=$(date +%s)
"$build/src/tools/docraft" --masters "$master" --timeout 60000 bench --workload load \
	--keys "$keys" --value-size "$vsize" --clients 8 --tablets "$tablets" --rf 3 | tail -2
echo "after loading $keys keys of $vsize bytes into $tablets tablets x 3 replicas ($(( $(date +%s) - start )) s):"
rss
for i in 1 2 3; do echo "t$i: $(grep -c 'became leader' "$base/t$i.log") leaderships, $(du -sm "$base/t$i" | cut -f1) MiB on disk, $(grep -c 'installed a checkpoint copy' "$base/t$i.log" || true) checkpoint copies"; done
grep -ho 'can host [0-9]* replicas' "$base"/t*.log | sort | uniq -c
for i in 1 2 3; do
	start=$(date +%s)
	kill -TERM "${pids[$i]}"
	rc=0
	wait "${pids[$i]}" || rc=$?
	echo "t$i: stopped with exit status $rc in $(( $(date +%s) - start )) s"
done
