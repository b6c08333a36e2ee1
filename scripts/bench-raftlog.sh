#!/usr/bin/env bash
# The shared Raft log's targets (issue 14), measured on one cluster in one
# run: one docraft-master and three docraft-tservers on 127.0.0.1-3 (free
# random ports, data under a temp dir on the disk of TMPDIR — not tmpfs),
# every tserver started with --raft-log MODE.
#
#   disk     `du` of the three tservers' data before and after CREATE TABLE
#            of a --tablets N (default 96) table with RF 3, and what the Raft
#            log holds per replica right after (the shared log's directory,
#            or the per-tablet raft directories, divided by the replicas)
#   writes   docraft bench --workload write, --clients C (default 64), on a
#            3-tablet table, then on the N-tablet table, then on the 3-tablet
#            one again (so drift shows), --duration S each; the ratio
#            N-tablet / mean(3-tablet); then 1 client on the 3-tablet table
#            (its p50); with each, the CPU time the three tservers used per
#            write (user + system, warm-up included: a figure that other
#            load on the machine disturbs less than writes/s)
#   restart  (--restart R, 0 = skip; default 0) a table of R tablets, RF 3
#            (R replicas per tserver), loaded with --keys keys; tserver 1 is
#            killed with SIGKILL and started again; the time until
#            `docraft checksum` of that table succeeds (every replica of
#            every tablet answers at the leader's latest write and agrees),
#            and what tserver 1's tablets replayed (its log)
#
#   scripts/bench-raftlog.sh [--build DIR] [--raft-log shared|per-tablet]
#       [--tablets N] [--clients C] [--duration S] [--keys K]
#       [--value-size V] [--restart R]
#
# --raft-log "" passes no --raft-log flag (a build from before the flag).
#
# Prints one "name value" line per measurement, then a summary. Everything
# started is stopped and the data removed at exit.
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$REPO/build mode=shared tablets=96 clients=64 duration=10 keys=10000 vsize=100 restart=0
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=$2 ;; --raft-log) mode=$2 ;; --tablets) tablets=$2 ;;
	--clients) clients=$2 ;; --duration) duration=$2 ;; --keys) keys=$2 ;;
	--value-size) vsize=$2 ;; --restart) restart=$2 ;;
	-h | --help) sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "bench-raftlog: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
	shift 2
done
build=$(cd "$build" && pwd)
cli=$build/src/tools/docraft
base=$(mktemp -d "${TMPDIR:-/tmp}/docraft-raftlog.XXXXXX")
if [ "$(stat -f -c %T "$base")" = tmpfs ]; then
	echo "bench-raftlog: warning: $base is on tmpfs: fsync costs nothing there" >&2
fi
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
port=$(/usr/bin/python3 -c 'import random; print(random.randint(12000, 30000))')
master=127.0.0.1:$((port + 1))
"$build/src/master/docraft-master" --address "$master" --data "$base/m" >"$base/m.out" 2>"$base/m.log" &
pids+=($!)
start_tserver() { # i
	"$build/src/tserver/docraft-tserver" --address "127.0.0.$1:$port" --data "$base/t$1" \
		--masters "$master" ${mode:+--raft-log "$mode"} >>"$base/t$1.out" 2>>"$base/t$1.log" &
	pids[$1]=$!
}
for i in 1 2 3; do start_tserver "$i"; done
live() { "$cli" --masters "$master" tservers 2>/dev/null | grep -c ' yes ' || true; }
for _ in $(seq 1 150); do [ "$(live)" = 3 ] && break; sleep 0.2; done
[ "$(live)" = 3 ] || { echo "bench-raftlog: tservers did not come up" >&2; tail "$base"/t*.log >&2; exit 1; }
sql() { "$cli" --masters "$master" --timeout 120000 "$@"; }
# Waits until every tablet of table $1 has a leader.
leaders() {
	for _ in $(seq 1 600); do
		if out=$(sql tablets "$1" 2>/dev/null) && ! grep -q '(none)' <<<"$out"; then
			return 0
		fi
		sleep 0.2
	done
	echo "bench-raftlog: table $1 has tablets without a leader" >&2
	return 1
}
bytes() { du -s --block-size=1 "$@" | awk '{s += $1} END {printf "%.0f\n", s}'; }
logbytes() {
	if [ -d "$base/t1/raftlog" ]; then bytes "$base"/t?/raftlog
	else find "$base"/t? -type d -name raft -print0 | du -s --block-size=1 --files0-from=- | awk '{s += $1} END {printf "%.0f\n", s}'
	fi
}
echo "bench-raftlog: $(nproc) cores, $(df -h --output=source,fstype "$base" | tail -1), mode $mode, docraft $(git -C "$REPO" rev-parse --short HEAD)"

before=$(bytes "$base"/t?)
t0=$(date +%s.%N)
sql --tablets "$tablets" --rf 3 -e "CREATE TABLE tn (k text PRIMARY KEY, v blob);" >/dev/null
leaders tn
t1=$(date +%s.%N)
sync
after=$(bytes "$base"/t?)
logb=$(logbytes)
echo "create_seconds $(echo "$t1 - $t0" | bc)"
echo "create_disk_mib $(( (after - before) / 1048576 ))"
echo "log_bytes_per_replica $(( logb / (tablets * 3) ))"

sql --tablets 3 --rf 3 -e "CREATE TABLE t3 (k text PRIMARY KEY, v blob);" >/dev/null
leaders t3
# CPU time (user + system, clock ticks) of the three tservers so far.
cpu_ticks() { cat /proc/"${pids[1]}"/stat /proc/"${pids[2]}"/stat /proc/"${pids[3]}"/stat | awk '{s += $14 + $15} END {print s}'; }
hz=$(getconf CLK_TCK)
bench() { # table clients -> ops/s, p50, errors and the tservers' CPU per write (us) on one line
	local c0 c1
	c0=$(cpu_ticks)
	sql bench --table "$1" --workload write --clients "$2" --keys "$keys" \
		--value-size "$vsize" --duration "$duration" --warmup 2 --json 2>/dev/null |
		grep '^{' >"$base/bench.json"
	c1=$(cpu_ticks)
	/usr/bin/python3 -c 'import json,sys; j=json.loads(open(sys.argv[1]).read()); cpu=(int(sys.argv[3])-int(sys.argv[2]))/float(sys.argv[4]); n=j["ops_per_s"]*(j["seconds"]+j["warmup_s"]); print("%.0f %.3f %d %.0f" % (j["ops_per_s"], j["p50_ms"], j["errors"], 1e6*cpu/max(n,1)))' \
		"$base/bench.json" "$c0" "$c1" "$hz"
}
read -r a_ops a_p50 a_err a_cpu <<<"$(bench t3 "$clients")"
echo "writes_3_tablets $a_ops (p50 $a_p50 ms, errors $a_err, tserver cpu $a_cpu us/write)"
read -r n_ops n_p50 n_err n_cpu <<<"$(bench tn "$clients")"
echo "writes_${tablets}_tablets $n_ops (p50 $n_p50 ms, errors $n_err, tserver cpu $n_cpu us/write)"
read -r b_ops b_p50 b_err b_cpu <<<"$(bench t3 "$clients")"
echo "writes_3_tablets_again $b_ops (p50 $b_p50 ms, errors $b_err, tserver cpu $b_cpu us/write)"
echo "ratio_${tablets}_over_3 $(echo "scale=2; 2 * $n_ops / ($a_ops + $b_ops)" | bc)"
read -r o_ops o_p50 o_err o_cpu <<<"$(bench t3 1)"
echo "one_client_writes $o_ops (p50 $o_p50 ms, errors $o_err, tserver cpu $o_cpu us/write)"

if [ "$restart" -gt 0 ]; then
	sql --tablets "$restart" --rf 3 -e "CREATE TABLE tr (k text PRIMARY KEY, v blob);" >/dev/null
	leaders tr
	sql bench --table tr --workload load --clients 16 --keys "$keys" --value-size "$vsize" >/dev/null 2>&1
	kill -KILL "${pids[1]}"
	wait "${pids[1]}" 2>/dev/null || true
	echo "--- restart ---" >>"$base/t1.log"
	t0=$(date +%s.%N)
	start_tserver 1
	ok=""
	for _ in $(seq 1 600); do
		if sql --timeout 20000 checksum tr >/dev/null 2>&1; then ok=yes; break; fi
		sleep 0.1
	done
	t1=$(date +%s.%N)
	[ -n "$ok" ] || echo "bench-raftlog: tr's replicas did not agree within 60 s" >&2
	echo "restart_${restart}_replicas_seconds $(echo "$t1 - $t0" | bc)"
	sed -n '/--- restart ---/,$p' "$base/t1.log" | grep -o 'started: log ends at [0-9]*, store at [0-9]*' |
		awk '{r += $5 - $8; n++} END {printf "restart_unflushed_entries %d (log end - store, over %d tablet starts)\n", r, n}'
fi
