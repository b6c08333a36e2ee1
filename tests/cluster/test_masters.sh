#!/usr/bin/env bash
# Master membership (issue 15, docs/cluster.md "Master membership") on real
# processes (deploy/docraft-local: 3 masters, 3 tservers, RF 3, 127.0.0.x):
#   - a bad address is refused (INVALID_ARGUMENT);
#   - add-master: a 4th master joins (--join) and is added with raft id 4;
#   - an add of a master that is not running fails after the catch-up rounds
#     and is rolled back, and a change sent meanwhile gets SERVICE_BUSY;
#   - removing the leader: it hands over, is removed, notices it (asks the
#     others) and still points a client, and a new tserver, that know only
#     it to the leader;
#   - a client opened with only the removed master's address, and used
#     before the removal, keeps working once that master is stopped;
#   - every master restarted with its ORIGINAL --masters flags comes up with
#     the changed membership; rows and replica checksums intact;
#   - down to one master, the joined one (allowed): the tservers, whose
#     --masters are all gone, find it; the last one cannot be removed.
# TAP; every process is stopped on exit (docraft-local destroy).
#
# Environment (meson sets it): DOCRAFT_BUILD, DOCRAFT_SRC.
set -uo pipefail

SRC=${DOCRAFT_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
TOOL=$SRC/deploy/docraft-local
export DOCRAFT_BUILD=${DOCRAFT_BUILD:-$SRC/build}
export DOCRAFT_LOCAL_TIMEOUT=${DOCRAFT_LOCAL_TIMEOUT:-30}
CLI=$DOCRAFT_BUILD/src/tools/docraft
WORK=$(mktemp -d "${TMPDIR:-/tmp}/docraft-test-masters.XXXXXX")
BASE=$WORK/c
FIFO=$WORK/shell.in
SHELL_PID=""

T4_PID=""
cleanup() {
	[ -n "$SHELL_PID" ] && kill "$SHELL_PID" 2>/dev/null
	[ -n "$T4_PID" ] && kill "$T4_PID" 2>/dev/null
	exec 3>&- 2>/dev/null
	"$TOOL" --base "$BASE" destroy >/dev/null 2>&1 || true
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# shellcheck source=../lib/wait.sh
. "$SRC/tests/lib/wait.sh"

T=0
FAILED=0
ok() { # NAME, then the status of the last check ($?)
	local rc=$?
	T=$((T + 1))
	if [ "$rc" -eq 0 ]; then echo "ok $T - $1"; else echo "not ok $T - $1"; FAILED=$((FAILED + 1)); fi
}
diag() { sed 's/^/# /' <<<"$1"; }

tool() { "$TOOL" --base "$BASE" "$@"; }
cli() { "$CLI" --masters "$1" --timeout 20000 "${@:2}"; }
addr() { tool env | sed -n 's/^MASTERS=//p' | tr ',' '\n' | sed -n "${1}p"; }
masters() { tool env | sed -n 's/^MASTERS=//p'; }
# The masters as `master list` of the masters in $1 prints them: "addr:id ..."
listed() { cli "$1" master list | awk 'NR > 1 { printf "%s:%s ", $1, $2 }'; }
leader_of() { cli "$1" master list | awk '$3 == "leader" { print $1 }'; }

# No replica moves (issue 15's balancer): the tserver t4 started below only
# registers and is stopped again; a replica moved onto it meanwhile would be
# down for the checksums at the end.
tool create --masters 3 --tservers 3 --rf 3 --port-base auto \
	--master-flag max-concurrent-moves=0 >"$WORK/create.out" 2>&1
ok "create: 3 masters, 3 tservers" || { diag "$(cat "$WORK/create.out")"; exit 1; }
ORIG=$(masters)
M1=$(addr 1) M2=$(addr 2) M3=$(addr 3)
PORT=${M1##*:}
cli "$ORIG" -e "CREATE TABLE kv (k text PRIMARY KEY, v text); INSERT INTO kv (k, v) VALUES ('a', '1');" >/dev/null
ok "a table and a row"

out=$(cli "$ORIG" master add 127.0.0.1 2>&1)
[ $? -eq 1 ] && grep -q "invalid argument" <<<"$out"
ok "master add of a bad address: INVALID_ARGUMENT" || diag "$out"

# The leader to remove later; a client that knows only it, used now.
OLD=$(leader_of "$ORIG")
mkfifo "$FIFO"
"$CLI" --masters "$OLD" --timeout 20000 shell <"$FIFO" >"$WORK/shell.out" 2>&1 &
SHELL_PID=$!
exec 3>"$FIFO"
echo "INSERT INTO kv (k, v) VALUES ('b', '2');" >&3
wait_for 10000 grep -q . "$WORK/shell.out" 2>/dev/null
sleep 1

out=$(tool add-master 2>&1)
ok "add-master: m4 joins" || diag "$out"
M4=127.0.0.4:$PORT
[ "$(listed "$ORIG")" = "$M1:1 $M2:2 $M3:3 $M4:4 " ]
ok "master list: 4 masters, the new one raft id 4" || diag "$(listed "$ORIG")"

DEAD=127.0.0.9:$PORT
cli "$ORIG" --timeout 60000 master add "$DEAD" >"$WORK/dead.out" 2>&1 &
dead_pid=$!
wait_for 10000 sh -c "'$CLI' --masters '$ORIG' master list | grep -q '$DEAD'"
out=$(cli "$ORIG" master remove "$M2" 2>&1)
[ $? -eq 1 ] && grep -q "busy" <<<"$out"
ok "a change while another runs: SERVICE_BUSY" || diag "$out"
wait "$dead_pid"
[ $? -eq 1 ] && grep -q "did not catch up" "$WORK/dead.out" && ! listed "$ORIG" | grep -q "$DEAD"
ok "an add of a master that is not running fails and is rolled back" || diag "$(cat "$WORK/dead.out") / $(listed "$ORIG")"

out=$(cli "$ORIG" master remove "$OLD" 2>&1)
ok "remove the leader $OLD (hands over first)" || diag "$out"
REST=$(tr ',' '\n' <<<"$ORIG,$M4" | grep -vx "$OLD" | paste -sd,)
! listed "$REST" | grep -q "$OLD" && [ "$(listed "$REST" | wc -w)" = 3 ]
ok "the others list 3 masters without it" || diag "$(listed "$REST")"
n_old=m$(tr ',' '\n' <<<"$ORIG" | grep -nx "$OLD" | cut -d: -f1)
wait_for 15000 sh -c "! '$CLI' --masters '$OLD' master list | grep -q '^$OLD '" &&
	grep -q "(removed)" "$BASE/$n_old/$n_old.log"
ok "the removed master notices (asks the others) and says so" || diag "$(listed "$OLD")"
wait_for 15000 sh -c "'$CLI' --masters '$OLD' tservers | grep -c ' yes ' | grep -qx 3"
ok "a client knowing only the removed master finds the leader through it"
TPORT=$(tool env | sed -n 's/^TSERVERS=//p' | cut -d, -f1 | cut -d: -f2)
T4=127.0.0.4:$TPORT
"$DOCRAFT_BUILD/src/tserver/docraft-tserver" --address "$T4" --data "$WORK/t4" \
	--masters "$OLD" >"$WORK/t4.log" 2>&1 &
T4_PID=$!
wait_for 20000 sh -c "'$CLI' --masters '$REST' tservers | grep -q '$T4 *yes'"
ok "a tserver whose --masters is only the removed master registers with the leader" ||
	diag "$(tail -n 5 "$WORK/t4.log")"
kill "$T4_PID" 2>/dev/null
wait "$T4_PID" 2>/dev/null
T4_PID=""

out=$(tool remove-master "$n_old" 2>&1)
ok "docraft-local remove-master $n_old (already removed: stops it)" || diag "$out"
# A DDL needs the master leader: the client must have learned the masters
# (its only address is gone; it was not asked anything since the removal).
echo "CREATE TABLE kv2 (k text PRIMARY KEY, v text); INSERT INTO kv (k, v) VALUES ('c', '3');" >&3
echo "SELECT * FROM kv;" >&3
wait_for 30000 grep -q "(3 rows)" "$WORK/shell.out" &&
	cli "$(masters)" tables | grep -q "CREATE TABLE kv2"
ok "the client that knew only the removed master keeps working (DDL too)" ||
	diag "$(cat "$WORK/shell.out")"

tool stop all-masters >/dev/null 2>&1
grep -q "masters = $ORIG" "$BASE/$n_old/node.conf" && grep -q "masters = $ORIG" "$BASE/m2/node.conf"
ok "the node configs still hold the original --masters"
out=$(tool start all-masters 2>&1)
ok "every master restarted with its original flags" || diag "$out"
NOW=$(masters)
wait_for 20000 sh -c "'$CLI' --masters '$NOW' master list | grep -q leader"
[ "$(listed "$NOW" | wc -w)" = 3 ] && ! listed "$NOW" | grep -q "$OLD" && listed "$NOW" | grep -q "$M4:4"
ok "... and they come up with the changed membership" || diag "$(listed "$NOW")"
wait_for 20000 sh -c "'$CLI' --masters '$NOW' tservers | grep -c ' yes ' | grep -qx 3"
ok "every tserver heartbeats the new leader"
cli "$NOW" -e "SELECT * FROM kv;" | grep -q "(3 rows)" && cli "$NOW" checksum kv >/dev/null
ok "rows intact, replica checksums agree"

# Down to one master, the joined m4: every master the tservers were started
# with (their --masters) is removed and stopped, so they reach m4 only
# through the list heartbeat replies taught them.
for n in $(tool env | sed -n 's/^MASTERS=//p' | tr ',' '\n' | grep -vx "$M4"); do
	ip=${n%%:*}
	tool remove-master "m${ip##*.}" >/dev/null 2>&1 || echo "remove-master of $n failed"
done >"$WORK/down.out" 2>&1
[ ! -s "$WORK/down.out" ] && [ "$(listed "$M4")" = "$M4:4 " ] &&
	cli "$M4" -e "SELECT * FROM kv;" | grep -q "(3 rows)"
ok "removing down to one master (the joined one), which serves alone" ||
	diag "$(cat "$WORK/down.out"; listed "$M4")"
wait_for 20000 sh -c "'$CLI' --masters '$M4' tservers | grep -c ' yes ' | grep -qx 3"
ok "tservers whose --masters are all gone heartbeat it (the list they learned)"
out=$(cli "$M4" master remove "$M4" 2>&1)
[ $? -eq 1 ] && grep -q "last master" <<<"$out"
ok "the last master cannot be removed: INVALID_ARGUMENT" || diag "$out"

echo "1..$T"
[ "$FAILED" -eq 0 ]
