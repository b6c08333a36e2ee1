#!/usr/bin/env bash
# Default-suite failover test (suite 'jepsen'): tests/jepsen/run.sh for
# ~100 s against the meson build's binaries — 1 master, 3 tservers, RF 3,
# no network namespaces — with the nemeses kill, kill-leader, pause,
# restart-all, hostile (docraft-attack, tests/hostile/attack.c) and skew
# when the clock-skew shim is built. Passes only when
# the checker says valid, no acknowledged add is lost and the replica
# checksums agree after healing. Prints TAP.
#
# Environment (set by tests/jepsen/meson.build): DOCRAFT_BUILD (the build
# dir), DOCRAFT_REPO, DOCRAFT_LOCAL. FAILOVER_TIME (default 100) and
# FAILOVER_CLIENTS (default 6) shorten or widen a run by hand.
# FAILOVER_NEMESES (a list for run.sh --nemesis, instead of the one above),
# FAILOVER_MASTERS (1), FAILOVER_INTERVAL (10), FAILOVER_ORDER (random,
# or cycle) and FAILOVER_WORKLOAD (both, or redis: registers and INCR
# counters through the tservers' Redis ports; check 3 is then "the counters
# lost no acknowledged INCR") make other runs of it: meson's test_heal_nemeses runs the
# healing nemeses (kill-permanently, drain-and-stop, add-node-and-rebalance)
# in turn, test_failover_masters master-replace with 3 masters; with a
# FAILOVER_NEMESES list the 6th check (every tablet back at RF, every
# replica on a tserver of the cluster now) is required, and the 7th (every
# nemesis of the list ran); otherwise the 6th is skipped when the master
# does not answer `docraft cluster`, and the 7th always.
#
# The run's directory (history, nemesis log, report.md, node logs) is
# removed when the test passes and kept, with its path printed, when it
# fails. Every node is stopped by run.sh's trap (docraft-local destroy).
set -uo pipefail

REPO=${DOCRAFT_REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
export DOCRAFT_BUILD=${DOCRAFT_BUILD:-$REPO/build}
export DOCRAFT_LOCAL=${DOCRAFT_LOCAL:-$REPO/deploy/docraft-local}
TIME=${FAILOVER_TIME:-100}
CLIENTS=${FAILOVER_CLIENTS:-6}
INTERVAL=${FAILOVER_INTERVAL:-10}
ORDER=${FAILOVER_ORDER:-random}
WORKLOAD=${FAILOVER_WORKLOAD:-both}

echo "1..7"
out=$(mktemp -d "${TMPDIR:-/tmp}/docraft-failover.XXXXXX")
RUN_PID=""
# shellcheck disable=SC2317 # a trap
on_signal() {
	if [ -n "$RUN_PID" ]; then
		kill -TERM "$RUN_PID" 2>/dev/null
		wait "$RUN_PID"
	fi
	exit 1
}
trap on_signal INT TERM

nemeses=kill,kill-leader,pause,restart-all
if [ -x "$DOCRAFT_BUILD/tests/hostile/docraft-attack" ]; then
	nemeses+=,hostile
fi
skew=no
if [ -e "$DOCRAFT_BUILD/tests/jepsen/libdocraft_skew.so" ]; then
	nemeses+=,skew
	skew=yes
fi
healing=0
if [ -n "${FAILOVER_NEMESES:-}" ]; then
	nemeses=$FAILOVER_NEMESES
	healing=1
	skew=no
	case ,$nemeses, in *,skew,*) skew=yes ;; esac
fi
MASTERS=${FAILOVER_MASTERS:-1}
echo "# run dir $out; nemeses $nemeses ($ORDER); ${TIME}s, $CLIENTS clients, $MASTERS master(s), workload $WORKLOAD"

"$REPO/tests/jepsen/run.sh" --out "$out" --time "$TIME" --nemesis "$nemeses" \
	--clients "$CLIENTS" --workload "$WORKLOAD" --netns no --skew "$skew" --masters "$MASTERS" \
	--tservers 3 --rf 3 --interval "$INTERVAL" --order "$ORDER" --final-timeout 60 \
	--check-time-limit 90 --label "default-suite failover test" 2> >(sed 's/^/# /') &
RUN_PID=$!
wait "$RUN_PID"
rc=$?
RUN_PID=""

val() { sed -n "s/^$1=//p" "$out/result.env" 2>/dev/null | tail -n 1; }
tap() { # ok? description
	if [ "$1" -eq 1 ]; then echo "ok $2"; else echo "not ok $2"; fi
}

[ "$(val cluster_ok)" = 1 ] && [ "$(val workload_rc)" = 0 ]
tap $((! $?)) "1 - cluster up, workload ran and did its final reads ($(val workload_summary))"
[ "$(val verdict)" = valid ]
tap $((! $?)) "2 - checker verdict: $(val verdict)"
if [ "$WORKLOAD" = redis ]; then
	[ "$(val workload_rc)" = 0 ] && [[ $(val workload_summary) == *counters=ok* ]]
	tap $((! $?)) "3 - no acknowledged INCR lost or applied twice ($(val workload_summary))"
else
	[ "$(val lost_adds)" = 0 ] && [ "$(val final_read)" = 1 ]
	tap $((! $?)) "3 - no acknowledged add lost (lost: $(val lost_adds), final read: $(val final_read))"
fi
[ "$(val checksums)" = agree ]
tap $((! $?)) "4 - replica checksums after healing: $(val checksums)"
# Nothing of the run may survive it: no process started from its directory.
left=$(pgrep -f -- "$out/cluster" || true)
[ -z "$left" ]
tap $((! $?)) "5 - every node stopped${left:+ (left: $left)}"
if [ "$healing" -eq 0 ] && [ "$(val rf_restored)" = unknown ]; then
	echo "ok 6 - every tablet back at RF # SKIP the master does not answer docraft cluster"
else
	[ "$(val rf_restored)" = yes ] && [ "$(val replicas_current)" = yes ] && [ "$(val unhealed)" = 0 ]
	tap $((! $?)) "6 - every tablet back at RF ($(val rf_restored), $(val rf_seconds) s), replicas on current tservers ($(val replicas_current)), unhealed faults: $(val unhealed)"
fi

# With a list of its own (cycle), every nemesis of it must have run.
if [ "$healing" -eq 1 ]; then
	missing=""
	for n in ${nemeses//,/ }; do
		grep -q "^[0-9]* start $n " "$out/nemesis.log" 2>/dev/null || missing+=" $n"
	done
	[ -z "$missing" ]
	tap $((! $?)) "7 - every nemesis of the list ran${missing:+ (not run:$missing)}"
else
	echo "ok 7 - every nemesis of the list ran # SKIP random choice"
fi

if [ -f "$out/report-tables.md" ]; then
	sed -n '/^## Nemesis timeline/,$p' "$out/report-tables.md" | sed 's/^/# /'
fi
if [ "$rc" -eq 0 ] && [ -z "$left" ] && [ -z "${missing:-}" ]; then
	rm -rf "$out"
else
	echo "# FAILED: the run is kept in $out (report: $out/report.md)"
fi
exit 0
