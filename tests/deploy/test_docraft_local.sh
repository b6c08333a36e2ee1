#!/usr/bin/env bash
# shellcheck disable=SC2317  # step functions run through `step NAME FUNCTION`
# deploy/docraft-local end to end (TAP). Part 1, on 127.0.0.x: create 1 master
# + 3 tservers (RF 3, --skewable), status, CQL through the docraft CLI, kill /
# pause / resume / restart, idempotent start, skew, add-node, stop + start
# keeps the rows, destroy wipes the directory. Part 2, only where `ip netns
# add` works (root): a --netns cluster, isolate the leader of a one-tablet
# table, a write succeeds on the majority side, heal, rows intact, destroy
# leaves no namespace or link behind.
#
# Environment (meson sets them): DOCRAFT_BUILD (build dir with the binaries
# and the skew shim), DOCRAFT_LOCAL (the tool), DOCRAFT_REPO.
# Every cluster is destroyed on exit, whatever happens.
set -uo pipefail

REPO=${DOCRAFT_REPO:-$(cd "$(dirname "$0")/../.." && pwd)}
TOOL=${DOCRAFT_LOCAL:-$REPO/deploy/docraft-local}
export DOCRAFT_BUILD=${DOCRAFT_BUILD:-$REPO/build}
export DOCRAFT_LOCAL_TIMEOUT=${DOCRAFT_LOCAL_TIMEOUT:-30}
CLI=$DOCRAFT_BUILD/src/tools/docraft
WORK=$(mktemp -d "${TMPDIR:-/tmp}/docraft-local-test.XXXXXX")
BASE=""
BASES=()
MASTERS=""

cleanup() {
	local b
	for b in "${BASES[@]}"; do
		"$TOOL" --base "$b" destroy >/dev/null 2>&1 || true
	done
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- TAP ------------------------------------------------------------------------------

T=0
FAILED=0
diag() { sed 's/^/# /'; }

# step NAME FUNCTION [ARGS...]: runs the function in this shell (it may set
# variables), its output kept; "ok" when it returns 0 and called no `fail`,
# else "not ok" and the output as diagnostics.
step() {
	local name=$1 out="$WORK/step.out" start=$SECONDS rc
	shift
	STEP_FAILED=0
	"$@" >"$out" 2>&1
	rc=$?
	[ "$STEP_FAILED" = 0 ] || rc=1
	T=$((T + 1))
	if [ "$rc" -eq 0 ]; then
		echo "ok $T - $name ($((SECONDS - start)) s)"
	else
		echo "not ok $T - $name ($((SECONDS - start)) s)"
		FAILED=$((FAILED + 1))
		diag <"$out"
	fi
	return "$rc"
}

skip() {
	T=$((T + 1))
	echo "ok $T - $1 # SKIP $2"
}

# Marks the running step failed (whatever the step returns) and returns 1.
STEP_FAILED=0
fail() {
	echo "FAILED: $*"
	STEP_FAILED=1
	return 1
}

# ---- helpers --------------------------------------------------------------------------

tool() { "$TOOL" --base "$BASE" "$@"; }
cql() { "$CLI" --masters "$MASTERS" --timeout 20000 -e "$1"; }

# The column of NODE in `status` (5: STATE, 6: LIVE).
status_col() {
	tool status | awk -v n="$1" -v c="$2" '$1 == n { print $c }'
}

is_live() { [ "$(status_col "$1" 6)" = yes ]; }

expect_state() { # node state
	local got
	got=$(status_col "$1" 5)
	[ "$got" = "$2" ] || fail "$1 is '$got', expected '$2'"
}

# wait_for TIMEOUT_MS CMD...: polls CMD until it succeeds (tests/lib/wait.sh).
# shellcheck source=../lib/wait.sh
. "$REPO/tests/lib/wait.sh"

# has_line PATTERN CMD...: CMD succeeds and prints a line matching the glob
# PATTERN (no pipe into grep -q: under pipefail, an early exit of grep would
# fail the writer with SIGPIPE).
has_line() {
	local pattern=$1 out line
	shift
	out=$("$@") || return 1
	while IFS= read -r line; do
		# shellcheck disable=SC2053  # a glob on purpose
		[[ $line == $pattern ]] && return 0
	done <<<"$out"
	return 1
}

row_count() {
	cql "SELECT * FROM kv;" | sed -n 's/^(\([0-9]*\) rows)$/\1/p'
}

expect_rows() {
	local got
	got=$(row_count)
	[ "$got" = "$1" ] || fail "SELECT counted '$got' rows, expected $1"
}

insert_rows() { # from to
	local i stmts=""
	for ((i = $1; i <= $2; i++)); do
		stmts+="INSERT INTO kv (k, v) VALUES ('key$i', $i); "
	done
	cql "$stmts"
}

all_pids() {
	local n
	for n in m1 t1 t2 t3; do echo "$n=$(tool pid "$n" 2>/dev/null)"; done
}

# ---- part 1: a cluster on 127.0.0.x ---------------------------------------------------

p1_create() {
	BASE=$WORK/c1
	BASES+=("$BASE")
	tool create --masters 1 --tservers 3 --rf 3 --skewable --election-ms 500 \
		--port-base auto --zones 2 --tserver-flag heartbeat-ms=500 || return 1
	eval "$(tool env)"
	# auto: below the kernel's ephemeral ports, where no outgoing connection
	# can take the port between the tool's check and the nodes' bind
	local lo port
	read -r lo _ </proc/sys/net/ipv4/ip_local_port_range
	port=$(sed -n 's/^master_port=//p' "$BASE/cluster.conf")
	if [ "$lo" -gt 12000 ] && { [ -z "$port" ] || [ $((port + 2000)) -ge "$lo" ]; }; then
		fail "--port-base auto chose '$port', not below the ephemeral range ($lo)"
	fi
	if [ ! -f "$BASE/cluster.conf" ] || [ ! -f "$BASE/t1/node.conf" ] || [ ! -d "$BASE/t3/data" ]; then
		fail "cluster.conf / node.conf / data missing"
		return 1
	fi
	grep -q "^masters = $MASTERS\$" "$BASE/t2/node.conf" || fail "t2's node.conf lacks the master list"
	# issue 17: each tserver's Redis port, 127.0.0.N:P+1000, answers
	local r
	[ "$REDIS" = "127.0.0.1:$((port + 1000)),127.0.0.2:$((port + 1000)),127.0.0.3:$((port + 1000))" ] ||
		fail "env: REDIS=$REDIS"
	if command -v redis-cli >/dev/null; then
		for r in ${REDIS//,/ }; do
			[ "$(redis-cli -h "${r%:*}" -p "${r##*:}" PING 2>&1)" = PONG ] ||
				fail "redis-cli PING at $r"
		done
	fi
	# --zones 2: round robin; --tserver-flag: one more line
	grep -q '^placement = local.local.zone1$' "$BASE/t3/node.conf" || fail "t3 is not in zone1"
	grep -q '^placement = local.local.zone2$' "$BASE/t2/node.conf" || fail "t2 is not in zone2"
	grep -q '^heartbeat-ms = 500$' "$BASE/t1/node.conf" || fail "t1 lacks --tserver-flag's line"
}

# Bad --master-flag / --tserver-flag / --zones: usage errors, nothing created.
p1_bad_flags() {
	local b=$WORK/bad
	BASES+=("$b")
	"$TOOL" --base "$b" create --masters 1 --tservers 3 --rf 3 --master-flag nonsense
	[ $? -eq 2 ] || fail "--master-flag nonsense was not a usage error"
	"$TOOL" --base "$b" create --masters 1 --tservers 3 --rf 3 --tserver-flag address=1.2.3.4:5
	[ $? -eq 2 ] || fail "--tserver-flag address=... was not a usage error"
	"$TOOL" --base "$b" create --masters 1 --tservers 3 --rf 3 --zones 4
	[ $? -eq 2 ] || fail "--zones 4 with 3 tservers was not a usage error"
	[ ! -e "$b/cluster.conf" ] || fail "a refused create wrote $b/cluster.conf"
}

p1_status_all_up() {
	local n
	tool status
	for n in m1 t1 t2 t3; do expect_state "$n" up || return 1; done
	for n in t1 t2 t3; do
		[ "$(status_col "$n" 6)" = yes ] || fail "$n is not live at the master"
	done
}

p1_cql() {
	"$CLI" --masters "$MASTERS" --tablets 4 --rf 3 \
		-e "CREATE TABLE kv (k text, v int, PRIMARY KEY ((k)));" || return 1
	insert_rows 1 5 || return 1
	has_line ' 3' cql "SELECT v FROM kv WHERE k = 'key3';" || fail "key3 not read back"
	expect_rows 5
}

p1_kill_t2() {
	tool kill t2 || return 1
	tool status || fail "status failed with t2 down"
	expect_state t2 down
}

p1_write_after_kill() {
	insert_rows 6 8 || return 1
	expect_rows 8
}

p1_pause_resume() {
	tool pause t3 || return 1
	expect_state t3 paused || return 1
	tool resume t3 || return 1
	expect_state t3 up
}

p1_restart_t2() {
	tool restart t2 || return 1
	expect_state t2 up || return 1
	wait_for 10000 is_live t2 || fail "t2 not live at the master after restart"
}

p1_start_idempotent() {
	local before after
	before=$(all_pids)
	tool start || return 1
	after=$(all_pids)
	echo "before: $before"
	echo "after:  $after"
	[ "$before" = "$after" ] || fail "a second start changed pids"
	! grep -q '=$' <<<"$before" || fail "a node has no pid"
}

p1_skew() {
	local pid i
	tool skew t1 200 || return 1
	pid=$(tool pid t1) || return 1
	grep -q libdocraft_skew.so "/proc/$pid/maps" || fail "t1 does not run under the skew shim"
	[ "$(cat "$BASE/t1/skew_ms")" = 200 ] || fail "skew_ms is not 200"
	sleep 0.3 # > the shim's 100 ms re-read period
	insert_rows 9 12 || return 1
	for i in 9 10 11 12; do # point reads: linearizable on each tablet's leader
		has_line " $i" cql "SELECT v FROM kv WHERE k = 'key$i';" || fail "key$i not read back"
	done
	# A whole-table scan reads every tablet at the first tablet's read time:
	# rows written by a leader whose clock runs ahead show up once the other
	# clocks pass their time (no read restart for clock uncertainty yet).
	wait_for 5000 rows_are 12 || expect_rows 12
}

rows_are() { [ "$(row_count)" = "$1" ]; }

p1_add_node() {
	tool add-node || return 1
	tool status
	expect_state t4 up || return 1
	[ "$(status_col t4 6)" = yes ] || fail "t4 is not live at the master"
	grep -q '^tservers=4$' "$BASE/cluster.conf" || fail "cluster.conf does not count 4 tservers"
	# the zone with the fewest tservers (zone1: t1, t3; zone2: t2)
	grep -q '^placement = local.local.zone2$' "$BASE/t4/node.conf" || fail "t4 is not in zone2"
}

# drain / undrain / cluster through docraft-local (the master's move
# engine): t4 is drained (whatever the balancer gave it moves back to t1-t3),
# the cluster has every tablet at RF, t4 shows its zone; an unknown tserver
# is an error.
p1_drain() {
	local out addr
	addr=$(sed -n 's/^address = //p' "$BASE/t4/node.conf")
	tool drain t4 --wait=90 || return 1
	out=$("$CLI" --masters "$MASTERS" tservers) || return 1
	echo "$out"
	awk -v a="$addr" '$2 == a && / drained / && / local.local.zone2 / { f = 1 } END { exit !f }' \
		<<<"$out" || fail "t4 is not listed drained in zone2"
	wait_for 30000 at_rf || fail "not every tablet at RF after the drain: $(tool cluster)"
	tool undrain t4 || return 1
	tool drain 127.0.0.99:1 && fail "draining an unknown tserver succeeded"
	expect_rows 12
}

at_rf() {
	has_line 'under-replicated: 0' tool cluster && has_line 'moves in flight:  0' tool cluster
}

# remove-node: killed for good, out of nodes / env / status / start.
p1_remove_node() {
	tool remove-node t4 || return 1
	expect_state t4 "" || return 1
	[ "$(tool nodes tservers | tr '\n' ' ')" = "t1 t2 t3 " ] || fail "nodes: $(tool nodes tservers)"
	[ "$(tool nodes removed)" = t4 ] || fail "nodes removed: $(tool nodes removed)"
	! grep -q "$(sed -n 's/^address = //p' "$BASE/t4/node.conf")" <<<"$(tool env)" ||
		fail "env still lists t4"
	tool start t4 && fail "start t4 of a removed node succeeded"
	tool start || return 1
	! tool pid t4 || fail "start brought the removed t4 back"
}

p1_stop_start() {
	local n
	tool stop || return 1
	for n in m1 t1 t2 t3 t4; do expect_state "$n" down || return 1; done
	has_line '(no master answered: LIVE, LEADS and TABLETS unknown)' tool status ||
		fail "status without masters"
	tool start || return 1
	expect_rows 12
}

p1_destroy() {
	local pids
	pids=$(all_pids | sed 's/^.*=//')
	tool destroy || return 1
	[ ! -e "$BASE" ] || fail "$BASE still exists"
	for p in $pids; do
		[ -n "$p" ] || continue
		if [ -e "/proc/$p" ] && [ "$(awk '{print $3}' "/proc/$p/stat" 2>/dev/null)" != Z ]; then
			fail "pid $p still alive"
			return 1
		fi
	done
}

# Each node's HTTP address (env) answers /metrics with its families, and the
# scrape configuration names them all (and passes promtool when installed).
p1_http() {
	local a f=$WORK/prometheus.yml
	eval "$(tool env)"
	[ -n "${MASTERS_HTTP:-}" ] && [ -n "${TSERVERS_HTTP:-}" ] || fail "env lacks MASTERS_HTTP / TSERVERS_HTTP"
	for a in ${MASTERS_HTTP//,/ } ${TSERVERS_HTTP//,/ }; do
		python3 -c 'import sys, urllib.request
body = urllib.request.urlopen("http://" + sys.argv[1] + "/metrics", timeout=10).read().decode()
assert "docraft_build_info" in body, body[:500]' "$a" || fail "no /metrics at $a"
	done
	tool prometheus-config >"$f" || fail "prometheus-config failed"
	cat "$f"
	for a in ${MASTERS_HTTP//,/ } ${TSERVERS_HTTP//,/ }; do
		grep -q "'$a'" "$f" || fail "$a not in the scrape configuration"
	done
	if [ -x /usr/bin/promtool ]; then
		promtool check config "$f" || fail "promtool check config rejects it"
	else
		echo "promtool absent (Debian package prometheus): configuration not checked"
	fi
}

part1() {
	if ! step "create 1 master + 3 tservers, RF 3 (--skewable)" p1_create; then
		return
	fi
	step "status shows every node up and live" p1_status_all_up
	step "create a table, write and read rows through the docraft CLI" p1_cql
	step "every node serves /metrics at its HTTP address; prometheus-config" p1_http
	step "kill t2: status works and shows t2 down" p1_kill_t2
	step "a write succeeds with t2 down" p1_write_after_kill
	step "pause t3 shows paused, resume shows up" p1_pause_resume
	step "restart t2" p1_restart_t2
	step "start is idempotent (no pid changes)" p1_start_idempotent
	step "skew t1 200: the tserver still serves writes" p1_skew
	step "add-node: t4 appears live" p1_add_node
	step "drain t4 --wait, cluster at RF, undrain (docraft-local drain/undrain/cluster)" p1_drain
	step "stop keeps the data (start again, rows still there)" p1_stop_start
	step "remove-node t4: gone for good" p1_remove_node
	step "bad --master-flag / --tserver-flag / --zones are usage errors" p1_bad_flags
	step "destroy wipes the directory" p1_destroy
}

# ---- part 2: network namespaces -------------------------------------------------------

NS_ID=""
LEADER=""

p2_create() {
	BASE=$WORK/c2
	BASES+=("$BASE")
	tool create --masters 1 --tservers 3 --rf 3 --netns --election-ms 500 || return 1
	eval "$(tool env)"
	NS_ID=$(sed -n 's/^net_id=//p' "$BASE/cluster.conf")
	ip netns list | grep "drl-$NS_ID-"
	[ "$(ip netns list | grep -c "^drl-$NS_ID-")" = 4 ] || fail "expected 4 namespaces"
}

p2_write() {
	"$CLI" --masters "$MASTERS" --tablets 1 --rf 3 \
		-e "CREATE TABLE kv (k text, v int, PRIMARY KEY ((k)));" || return 1
	insert_rows 1 5 || return 1
	expect_rows 5
}

p2_isolate_leader() {
	local t0 ms
	LEADER=$(tool leader kv) || return 1
	echo "leader of kv's tablet: $LEADER"
	tool isolate "$LEADER" || return 1
	tool status
	t0=$(date +%s%N)
	"$CLI" --masters "$MASTERS" --timeout 15000 \
		-e "INSERT INTO kv (k, v) VALUES ('during_partition', 99);" || fail "write failed while $LEADER was isolated"
	ms=$((($(date +%s%N) - t0) / 1000000))
	echo "write with $LEADER isolated took $ms ms"
	[ "$ms" -le 12000 ] || fail "the write took $ms ms" || return 1
	wait_for 10000 leader_moved || fail "the master still names $LEADER as the leader"
	echo "new leader: $(tool leader kv)"
}

leader_moved() {
	local now
	now=$(tool leader kv) && [ "$now" != "$LEADER" ]
}

p2_heal() {
	tool heal || return 1
	if ! has_line 'MASTERS=*' tool status || has_line '  * cannot reach: *' tool status; then
		fail "status failed, or cuts left after heal"
	fi
	insert_rows 6 7 || return 1
	expect_rows 8 || return 1
	has_line ' 99' cql "SELECT v FROM kv WHERE k = 'during_partition';" ||
		fail "the row written during the partition is missing"
}

p2_destroy() {
	tool destroy || return 1
	[ ! -e "$BASE" ] || fail "$BASE still exists"
	if ip netns list | grep "drl-$NS_ID-"; then fail "namespaces left"; fi
	if ip -o link show | grep -e "drl-$NS_ID-" -e "drlbr-$NS_ID"; then fail "links left"; fi
}

part2() {
	local why="" probe="drl-probe-$$"
	if [ "$(id -u)" -ne 0 ]; then
		why="not root"
	elif ! command -v ip >/dev/null; then
		why="no ip (iproute2)"
	elif ! ip netns add "$probe" >/dev/null 2>&1; then
		why="'ip netns add' does not work here"
	else
		ip netns del "$probe" 2>/dev/null || true
	fi
	if [ -n "$why" ]; then
		skip "netns" "$why"
		return
	fi
	if ! step "create --netns 1 master + 3 tservers, RF 3" p2_create; then
		step "a failed --netns create leaves no namespace" p2_destroy
		return
	fi
	step "write rows to a one-tablet table" p2_write
	step "isolate the tablet's leader: a write succeeds on the majority side" p2_isolate_leader
	step "heal: every row is there, writes go on" p2_heal
	step "destroy leaves no drl- namespace or link" p2_destroy
}

echo "# tool: $TOOL, binaries: $DOCRAFT_BUILD, work dir: $WORK"
part1
part2
echo "1..$T"
[ "$FAILED" -eq 0 ] || echo "# $FAILED failed"
exit $((FAILED > 0))
