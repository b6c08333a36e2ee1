#!/usr/bin/env bash
# The failover suite's core, shared by scripts/jepsen.sh (which installs and
# builds first) and the default test tests/jepsen/test_failover.sh: one run
# against binaries that already exist.
#
#   tests/jepsen/run.sh --out DIR [--time SEC] [--nemesis LIST|all]
#       [--clients N] [--workload registers|set|both|redis] [--netns yes|no]
#       [--skew yes|no|auto] [--masters 1|3] [--tservers N] [--rf R]
#       [--tablets N] [--keys K] [--interval SEC] [--seed S]
#       [--final-timeout SEC] [--check-time-limit SEC] [--expect valid|invalid]
#       [--port-base P|auto] [--label TEXT] [--keep] [--order random|cycle]
#       [--failed-after-s S] [--heal-timeout SEC]
#
# Environment: DOCRAFT_BUILD, the meson build directory whose binaries run
# (default <repo>/build: src/master/docraft-master, src/tserver/docraft-tserver,
# src/tools/docraft, tests/jepsen/docraft-jepsen{,-check,-report},
# tests/jepsen/libdocraft_skew.so); DOCRAFT_LOCAL (default
# <repo>/deploy/docraft-local).
#
# Steps: create and start a cluster (--masters, --tservers, RF --rf, in
# network namespaces with --netns yes, skewable when the shim exists and
# --skew allows) under DIR/cluster, masters on port P and tservers on P+2000
# (--port-base auto, the default: docraft-local picks a free P below the
# kernel's ephemeral ports, so that other runs on the machine do not
# collide); run docraft-jepsen for --time s with tests/jepsen/nemesis.sh
# beside it (faults every --interval s, none in the
# last --interval + 10 s); heal everything and wait until both tables have
# leaders; let the workload finish its final reads; run docraft-jepsen-check;
# run `docraft checksum` on both tables until the replicas agree (60 s at
# most); copy the node logs to DIR/logs; destroy the cluster (also on any
# exit: trap); write DIR/report.md (docs/reliability.md describes it).
#
# The healing nemeses (kill-permanently, drain-and-stop,
# add-node-and-rebalance; also in `all`) need a tserver more than RF
# (--tservers is raised to 4 at least) and masters that declare a silent
# tserver failed soon: --failed-after-s (default 6 with them) becomes the
# masters' --tserver-failed-after-s. After the heal, every run whose master
# answers `docraft cluster` waits (--heal-timeout, default 120 s) until no
# tablet is under-replicated and no move is in flight, and checks that every
# replica the master lists is on a tserver of the cluster now (not on one
# removed); with a healing nemesis both are required, as is the absence of
# `unhealed` notes in the nemesis log. --order cycle runs the nemeses in the
# order given instead of at random.
#
# --workload redis: registers through the tservers' Redis ports
# (tests/jepsen/redis_workload.py, GET/SET/DEL and INCR counters, issue 17)
# instead of docraft-jepsen; its table is redis_0 (the nemesis's kill-leader
# table, the checksums', the leaders waited for); no set, so no lost adds.
#
# DIR also holds history.txt, nemesis.log, check.txt/check.json,
# checksum-<table>.txt, workload.{out,err}, nemesis.err, cluster.err and
# result.env (key=value: verdict, checksums, lost_adds, ... for scripts).
#
# Exit: 0 when the run passes — --expect valid (default): the checker says
# valid, no acknowledged add is lost and the checksums agree; --expect
# invalid (the --buggy run): the checker says INVALID. 1 otherwise, 2 for
# bad usage.
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
HERE=$REPO/tests/jepsen
# shellcheck source=../lib/wait.sh
. "$REPO/tests/lib/wait.sh"
: "${DOCRAFT_BUILD:=$REPO/build}"
: "${DOCRAFT_LOCAL:=$REPO/deploy/docraft-local}"
DOCRAFT_BUILD=$(cd "$DOCRAFT_BUILD" 2>/dev/null && pwd) || {
	echo "jepsen: DOCRAFT_BUILD: no such directory" >&2
	exit 2
}
export DOCRAFT_BUILD DOCRAFT_LOCAL

OUT=""
TIME=600
NEMESIS=all
CLIENTS=10
WORKLOAD=both
NETNS=no
SKEW=auto
MASTERS=1
TSERVERS=3
RF=3
TABLETS=3
KEYS=5
INTERVAL=10
SEED=""
FINAL_TIMEOUT=120
CHECK_LIMIT=300
EXPECT=valid
LABEL=""
KEEP=0
PREFIX=jepsen
PORT_BASE=auto
ORDER=random
FAILED_AFTER=""
HEAL_TIMEOUT=120

usage() {
	sed -n '6,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

while [ $# -gt 0 ]; do
	case $1 in
	-h | --help)
		usage
		exit 0
		;;
	--keep)
		KEEP=1
		shift
		continue
		;;
	esac
	if [ $# -lt 2 ]; then
		echo "jepsen: $1 needs a value (or is unknown)" >&2
		exit 2
	fi
	case $1 in
	--out) OUT=$2 ;;
	--time) TIME=$2 ;;
	--nemesis) NEMESIS=$2 ;;
	--clients) CLIENTS=$2 ;;
	--workload) WORKLOAD=$2 ;;
	--netns) NETNS=$2 ;;
	--skew) SKEW=$2 ;;
	--masters) MASTERS=$2 ;;
	--tservers) TSERVERS=$2 ;;
	--rf) RF=$2 ;;
	--tablets) TABLETS=$2 ;;
	--keys) KEYS=$2 ;;
	--interval) INTERVAL=$2 ;;
	--seed) SEED=$2 ;;
	--final-timeout) FINAL_TIMEOUT=$2 ;;
	--check-time-limit) CHECK_LIMIT=$2 ;;
	--expect) EXPECT=$2 ;;
	--label) LABEL=$2 ;;
	--port-base) PORT_BASE=$2 ;;
	--order) ORDER=$2 ;;
	--failed-after-s) FAILED_AFTER=$2 ;;
	--heal-timeout) HEAL_TIMEOUT=$2 ;;
	*)
		echo "jepsen: unknown option '$1'" >&2
		usage >&2
		exit 2
		;;
	esac
	shift 2
done

bad() {
	echo "jepsen: $*" >&2
	exit 2
}
[ -n "$OUT" ] || bad "--out is required"
for v in TIME CLIENTS MASTERS TSERVERS RF TABLETS KEYS INTERVAL FINAL_TIMEOUT CHECK_LIMIT \
	HEAL_TIMEOUT; do
	if ! [[ ${!v} =~ ^[0-9]+$ ]] || [ "${!v}" -eq 0 ]; then
		bad "--${v,,} must be a positive integer"
	fi
done
[ -z "$SEED" ] || [[ $SEED =~ ^[0-9]+$ ]] || bad "--seed must be a number"
case $NETNS in yes | no) ;; *) bad "--netns: yes or no" ;; esac
case $SKEW in yes | no | auto) ;; *) bad "--skew: yes, no or auto" ;; esac
case $EXPECT in valid | invalid) ;; *) bad "--expect: valid or invalid" ;; esac
case $WORKLOAD in registers | set | both | redis) ;; *) bad "--workload: registers, set, both or redis" ;; esac
case $MASTERS in 1 | 3) ;; *) bad "--masters: 1 or 3" ;; esac
case $ORDER in random | cycle) ;; *) bad "--order: random or cycle" ;; esac
[ -z "$FAILED_AFTER" ] || { [[ $FAILED_AFTER =~ ^[0-9]+$ ]] && [ "$FAILED_AFTER" -gt 0 ]; } ||
	bad "--failed-after-s must be a positive integer"
# The healing nemeses: a tserver more than RF, failed tservers noticed soon.
HEALING=0
case ",$NEMESIS," in
*,all,* | *,kill-permanently,* | *,drain-and-stop,* | *,add-node-and-rebalance,*) HEALING=1 ;;
esac
if [ "$HEALING" -eq 1 ]; then
	[ "$TSERVERS" -gt "$RF" ] || TSERVERS=$((RF + 1))
	[ -n "$FAILED_AFTER" ] || FAILED_AFTER=6
fi
if [ "$PORT_BASE" != auto ] &&
	{ ! [[ $PORT_BASE =~ ^[0-9]+$ ]] || [ "$PORT_BASE" -lt 1024 ] || [ "$PORT_BASE" -gt 63535 ]; }; then
	bad "--port-base: 1024..63535 or auto"
fi
[ -z "$SEED" ] && SEED=$(((RANDOM << 15 | RANDOM) + 1))

JEPSEN=$DOCRAFT_BUILD/tests/jepsen/docraft-jepsen
CHECK=$DOCRAFT_BUILD/tests/jepsen/docraft-jepsen-check
REPORT=$DOCRAFT_BUILD/tests/jepsen/docraft-jepsen-report
CLI=$DOCRAFT_BUILD/src/tools/docraft
SHIM=$DOCRAFT_BUILD/tests/jepsen/libdocraft_skew.so
for b in "$JEPSEN" "$CHECK" "$REPORT" "$CLI" "$DOCRAFT_LOCAL"; do
	[ -x "$b" ] || bad "missing $b (build first: ninja -C $DOCRAFT_BUILD)"
done
if [ "$SKEW" = auto ]; then
	if [ -e "$SHIM" ]; then SKEW=yes; else SKEW=no; fi
fi
[ "$SKEW" = no ] || [ -e "$SHIM" ] || bad "--skew yes: no shim at $SHIM"

mkdir -p "$OUT" || bad "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
BASE=$OUT/cluster
REG_TABLE=${PREFIX}_registers
SET_TABLE=${PREFIX}_set
TABLES=()
if [ "$WORKLOAD" = redis ]; then
	REG_TABLE=redis_0 # Redis database 0 (issue 17)
	TABLES=("$REG_TABLE")
else
	[ "$WORKLOAD" != set ] && TABLES+=("$REG_TABLE")
	[ "$WORKLOAD" != registers ] && TABLES+=("$SET_TABLE")
fi
FEATURES=""
[ "$NETNS" = yes ] && FEATURES+="netns,"
[ "$SKEW" = yes ] && FEATURES+="skew,"
FEATURES=${FEATURES%,}
# No fault in the last INTERVAL + 10 s: the cluster settles before the
# workload's final reads.
NEMESIS_TIME=$((TIME - INTERVAL - 10))
RUN_START=$(date +%s)

say() { echo "jepsen: $(date +%T) $*" >&2; }
# Nodes log at info (masters default to warn): their logs then tell what
# happened, and the master nemesis finds the master leader in them.
dl() { DOCRAFT_TRACE=${DOCRAFT_TRACE:-info} "$DOCRAFT_LOCAL" --base "$BASE" "$@"; }

# shellcheck source=heal.sh
. "$HERE/heal.sh"

# ---- clean-up: whatever happens, no process of this run survives ----------------------

WPID=""
NPID=""
DESTROYED=0
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	stop_pid "$NPID" 30
	stop_pid "$WPID" 10
	if [ "$DESTROYED" -eq 0 ] && [ -d "$BASE" ]; then
		collect_logs
		if [ "$KEEP" -eq 1 ]; then
			say "--keep: the cluster stays up under $BASE ($DOCRAFT_LOCAL --base $BASE destroy)"
		else
			dl destroy >>"$OUT/cluster.err" 2>&1 || say "docraft-local destroy failed: $OUT/cluster.err"
		fi
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# stop_pid PID GRACE_S: TERM, then KILL after GRACE_S; reaps it.
stop_pid() {
	local pid=$1 grace=$2 i
	[ -n "$pid" ] || return 0
	kill -0 "$pid" 2>/dev/null || {
		wait "$pid" 2>/dev/null
		return 0
	}
	kill -TERM "$pid" 2>/dev/null
	for ((i = 0; i < grace * 10; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	return 0
}

# Waits up to SEC for PID to exit; 0 if it did (its status in WAIT_RC).
wait_pid() { # PID SEC
	local pid=$1 end=$((SECONDS + $2))
	while kill -0 "$pid" 2>/dev/null; do
		[ "$SECONDS" -lt "$end" ] || return 1
		sleep 0.5
	done
	wait "$pid"
	WAIT_RC=$?
	return 0
}
WAIT_RC=0

NODES=()
for ((i = 1; i <= MASTERS; i++)); do NODES+=("m$i"); done
for ((i = 1; i <= TSERVERS; i++)); do NODES+=("t$i"); done

# The nodes now, removed ones included (the healing nemeses add and remove
# tservers); the initial ones when docraft-local cannot say.
nodes_now() {
	local now=()
	mapfile -t now < <(dl nodes 2>/dev/null; dl nodes removed 2>/dev/null)
	if [ ${#now[@]} -gt 0 ]; then
		NODES=("${now[@]}")
	fi
}

# Copies every node's log into OUT/logs (the cluster directory goes with
# destroy). `docraft-local logs NODE` names the file (or prints the log).
collect_logs() {
	local n out m
	mkdir -p "$OUT/logs"
	nodes_now
	# Masters added by master-replace (m4, ...) too, removed ones included.
	m=$(sed -n 's/^masters=//p' "$BASE/cluster.conf" 2>/dev/null)
	for ((i = MASTERS + 1; i <= ${m:-0}; i++)); do
		[[ " ${NODES[*]} " == *" m$i "* ]] || NODES+=("m$i")
	done
	for n in "${NODES[@]}"; do
		out=$(dl logs "$n" 2>/dev/null | head -n 1)
		if [ -n "$out" ] && [ -f "$out" ]; then
			cp "$out" "$OUT/logs/$n.log" 2>/dev/null
		else
			dl logs "$n" >"$OUT/logs/$n.log" 2>/dev/null
		fi
	done
}

# Heals every fault the nemesis may have left (it heals on exit too).
heal_all() {
	local n
	for n in $(dl nodes 2>/dev/null); do
		dl resume "$n" >>"$OUT/cluster.err" 2>&1
	done
	[ "$NETNS" = yes ] && dl heal >>"$OUT/cluster.err" 2>&1
	if [ "$SKEW" = yes ]; then
		for n in $(dl nodes tservers 2>/dev/null); do
			dl skew "$n" 0 >>"$OUT/cluster.err" 2>&1
		done
	fi
	dl start >>"$OUT/cluster.err" 2>&1
}

all_led() { # 0 when every table of the run has a tablet leader
	local t
	for t in "${TABLES[@]}"; do
		dl leader "$t" 2>/dev/null | grep -q '^t[0-9]' || return 1
	done
}
# 0 once every table of the run has a tablet leader (up to SEC seconds).
wait_leaders() { # SEC
	wait_for $(($1 * 1000)) all_led
}

# ---- the run ---------------------------------------------------------------------------

: >"$OUT/cluster.err"
: >"$OUT/nemesis.log"
VERDICT=none
CHECKSUMS=not-run
CLUSTER_OK=0
WORKLOAD_RC=-1
RECOVERED=no
HEAL_S=""
RF_RESTORED=unknown # every tablet at RF, no move in flight (docraft cluster)
RF_S=""             # seconds that took after the heal
REPLICAS_CURRENT=unknown # every listed replica on a tserver of the cluster now

create_args=(create --masters "$MASTERS" --tservers "$TSERVERS" --rf "$RF" --port-base "$PORT_BASE")
[ "$NETNS" = yes ] && create_args+=(--netns)
[ "$SKEW" = yes ] && create_args+=(--skewable)
[ -n "$FAILED_AFTER" ] && create_args+=(--tserver-failed-after-s "$FAILED_AFTER")
say "cluster: ${create_args[*]:1} under $BASE"
dl destroy >>"$OUT/cluster.err" 2>&1 # a previous run's leftovers
if dl "${create_args[@]}" >>"$OUT/cluster.err" 2>&1 && dl start >>"$OUT/cluster.err" 2>&1; then
	CLUSTER_OK=1
else
	say "the cluster did not start: $OUT/cluster.err"
	tail -n 20 "$OUT/cluster.err" >&2
fi

MASTER_ADDRS=""
if [ "$CLUSTER_OK" -eq 1 ]; then
	MASTER_ADDRS=$(dl env 2>>"$OUT/cluster.err" | sed -n 's/^\(export \)\{0,1\}MASTERS=//p' | tr -d "\"'")
	if [ -z "$MASTER_ADDRS" ]; then
		say "docraft-local env printed no MASTERS="
		CLUSTER_OK=0
	fi
fi

if [ "$CLUSTER_OK" -eq 1 ]; then
	say "workload: $WORKLOAD, $CLIENTS clients, ${TIME}s, seed $SEED, masters $MASTER_ADDRS"
	echo "$(date +%s%3N) workload-start - -" >>"$OUT/nemesis.log"
	if [ "$WORKLOAD" = redis ]; then
		REDIS_ADDRS=$(dl env 2>>"$OUT/cluster.err" | sed -n 's/^\(export \)\{0,1\}REDIS=//p' | tr -d "\"'")
		/usr/bin/python3 "$HERE/redis_workload.py" --redis "$REDIS_ADDRS" --out "$OUT/history.txt" \
			--time "$TIME" --clients "$CLIENTS" --keys "$KEYS" --seed "$SEED" \
			--final-timeout "$FINAL_TIMEOUT" >"$OUT/workload.out" 2>"$OUT/workload.err" &
	else
		"$JEPSEN" --masters "$MASTER_ADDRS" --out "$OUT/history.txt" --time "$TIME" \
			--clients "$CLIENTS" --workload "$WORKLOAD" --keys "$KEYS" --seed "$SEED" \
			--final-timeout "$FINAL_TIMEOUT" --table-prefix "$PREFIX" --tablets "$TABLETS" \
			--rf "$RF" >"$OUT/workload.out" 2>"$OUT/workload.err" &
	fi
	WPID=$!
	# The nemesis starts with the workload's time 0 (after its table setup).
	started=0
	for ((i = 0; i < 900; i++)); do
		if grep -q '^# time_ns 0' "$OUT/history.txt" 2>/dev/null; then
			started=1
			break
		fi
		kill -0 "$WPID" 2>/dev/null || break
		sleep 0.1
	done
	if [ "$started" -eq 1 ] && [ "$NEMESIS_TIME" -gt 0 ] && [ "$NEMESIS" != none ]; then
		say "nemesis: $NEMESIS every ${INTERVAL}s for ${NEMESIS_TIME}s (features: ${FEATURES:-none})"
		DOCRAFT_LOCAL=$DOCRAFT_LOCAL "$HERE/nemesis.sh" --base "$BASE" --nemesis "$NEMESIS" \
			--time "$NEMESIS_TIME" --interval "$INTERVAL" --log "$OUT/nemesis.log" \
			--masters "$MASTERS" --tservers "$TSERVERS" --table "$REG_TABLE" \
			--features "$FEATURES" --seed "$SEED" --order "$ORDER" \
			--heal-timeout "$HEAL_TIMEOUT" 2>"$OUT/nemesis.err" &
		NPID=$!
		# The last fault starts by NEMESIS_TIME and lasts <= 6 s; its heal may
		# wait for a node to start, a healing nemesis for a drain and a heal.
		if ! wait_pid "$NPID" $((NEMESIS_TIME + INTERVAL + 120 + HEALING * 2 * HEAL_TIMEOUT)); then
			say "the nemesis did not finish: stopping it"
			stop_pid "$NPID" 60
		elif [ "$WAIT_RC" -ne 0 ]; then
			say "the nemesis exited with status $WAIT_RC: $OUT/nemesis.err"
			tail -n 5 "$OUT/nemesis.err" >&2
		fi
		NPID=""
	elif [ "$started" -eq 0 ]; then
		say "the workload did not start: $OUT/workload.err"
		tail -n 5 "$OUT/workload.err" >&2
	fi
	HEAL_S=$(($(date +%s) - RUN_START))
	say "healing everything; waiting for leaders"
	heal_all
	# master-replace may have replaced every master the run started with.
	now=$(dl env 2>>"$OUT/cluster.err" | sed -n 's/^\(export \)\{0,1\}MASTERS=//p' | tr -d "\"'")
	[ -n "$now" ] && MASTER_ADDRS=$now
	if wait_leaders 60; then RECOVERED=yes; fi
	# Every tablet back at RF (masters that answer `docraft cluster`).
	if heal_counts "$CLI" "$MASTER_ADDRS"; then
		rf_start=$SECONDS
		if wait_for $((HEAL_TIMEOUT * 1000)) heal_at_rf "$CLI" "$MASTER_ADDRS"; then
			RF_RESTORED=yes
		else
			RF_RESTORED=no
		fi
		RF_S=$((SECONDS - rf_start))
		"$CLI" --masters "$MASTER_ADDRS" cluster >"$OUT/cluster-status.txt" 2>&1
	fi
	say "recovered: $RECOVERED; every tablet at RF: $RF_RESTORED${RF_S:+ (${RF_S}s)}; waiting for the workload and its final reads"
	# Ends at TIME after its time 0, then final reads (<= FINAL_TIMEOUT).
	if wait_pid "$WPID" $((TIME + FINAL_TIMEOUT + 120)); then
		WORKLOAD_RC=$WAIT_RC
	else
		say "the workload did not finish: stopping it"
		stop_pid "$WPID" 10
		WORKLOAD_RC=124
	fi
	WPID=""
	say "workload: exit $WORKLOAD_RC: $(tail -n 1 "$OUT/workload.out" 2>/dev/null)"

	if [ -s "$OUT/history.txt" ]; then
		say "checking the history"
		timeout $((CHECK_LIMIT + 60)) "$CHECK" "$OUT/history.txt" --json "$OUT/check.json" \
			--time-limit-ms $((CHECK_LIMIT * 1000)) >"$OUT/check.txt" 2>&1
		VERDICT=$(sed -n 's/^verdict: //p' "$OUT/check.txt" | tail -n 1)
		[ -n "$VERDICT" ] || VERDICT=none
		say "checker: $VERDICT"
	fi

	# Replica checksums, until they agree (replicas apply at their own pace).
	CHECKSUMS=disagree
	end=$((SECONDS + 60))
	while :; do
		agree=1
		for t in "${TABLES[@]}"; do
			timeout 30 "$CLI" --masters "$MASTER_ADDRS" checksum "$t" \
				>"$OUT/checksum-$t.txt" 2>&1 || agree=0
		done
		if [ "$agree" -eq 1 ]; then
			CHECKSUMS=agree
			break
		fi
		[ "$SECONDS" -lt "$end" ] || break
		sleep 2
	done
	say "replica checksums: $CHECKSUMS"

	# The replicas the checksums compared are the master's list: each must
	# be on a tserver of the cluster now, not on one removed for good.
	if [ "$RF_RESTORED" != unknown ]; then
		current=$(dl env 2>/dev/null | sed -n 's/^TSERVERS=//p')
		REPLICAS_CURRENT=yes
		for t in "${TABLES[@]}"; do
			if ! heal_replicas_on "$CLI" "$MASTER_ADDRS" "$t" "$current"; then
				REPLICAS_CURRENT=no
				say "table $t: a replica is not on a current tserver: ${HEAL_STRAY:-(tablets failed)}"
			fi
		done
		say "every replica on a current tserver: $REPLICAS_CURRENT"
	fi
fi

# ---- logs, destroy ---------------------------------------------------------------------

collect_logs
if [ "$KEEP" -eq 0 ]; then
	dl destroy >>"$OUT/cluster.err" 2>&1 || say "docraft-local destroy failed: $OUT/cluster.err"
	DESTROYED=1
fi

# ---- report ----------------------------------------------------------------------------

: >"$OUT/summary.txt"
if [ -s "$OUT/history.txt" ]; then
	"$REPORT" --history "$OUT/history.txt" --nemesis-log "$OUT/nemesis.log" \
		--summary "$OUT/summary.txt" >"$OUT/report-tables.md" 2>"$OUT/report.err" ||
		say "docraft-jepsen-report failed: $OUT/report.err"
fi
sum() { sed -n "s/^$1=//p" "$OUT/summary.txt" | tail -n 1; }
LOST=$(sum lost_adds)
FINAL_READ=$(sum final_read)

PASS=0
REASONS=()
if [ "$EXPECT" = invalid ]; then
	if [ "$VERDICT" = INVALID ]; then PASS=1; else REASONS+=("the checker did not catch the bug (verdict $VERDICT)"); fi
else
	[ "$CLUSTER_OK" -eq 1 ] || REASONS+=("the cluster did not start")
	[ "$VERDICT" = valid ] || REASONS+=("checker verdict: $VERDICT")
	if [ "$WORKLOAD" != registers ] && [ "$WORKLOAD" != redis ]; then
		[ "${FINAL_READ:-0}" = 1 ] || REASONS+=("no final set read")
		[ "${LOST:-1}" = 0 ] || REASONS+=("acknowledged adds lost: ${LOST:-unknown}")
	fi
	[ "$CHECKSUMS" = agree ] || REASONS+=("replica checksums: $CHECKSUMS")
	[ "$WORKLOAD_RC" = 0 ] || REASONS+=("the workload exited with status $WORKLOAD_RC")
	BREACHES=$(grep -c '^[0-9]* note breach ' "$OUT/nemesis.log")
	[ "$BREACHES" = 0 ] || REASONS+=("hostile nemesis: $BREACHES breach(es), see nemesis.log")
	UNHEALED=$(grep -c '^[0-9]* note unhealed ' "$OUT/nemesis.log")
	[ "$UNHEALED" = 0 ] || REASONS+=("healing nemeses: $UNHEALED heal(s) did not end, see nemesis.log")
	if [ "$HEALING" -eq 1 ] || [ "$RF_RESTORED" = no ]; then
		[ "$RF_RESTORED" = yes ] || REASONS+=("every tablet back at RF: $RF_RESTORED")
	fi
	[ "$REPLICAS_CURRENT" != no ] || REASONS+=("a replica is listed on a tserver that is gone")
	[ ${#REASONS[@]} -eq 0 ] && PASS=1
fi

{
	echo "verdict=$VERDICT"
	echo "checksums=$CHECKSUMS"
	echo "lost_adds=${LOST:-unknown}"
	echo "final_read=${FINAL_READ:-0}"
	echo "workload_rc=$WORKLOAD_RC"
	echo "recovered=$RECOVERED"
	echo "rf_restored=$RF_RESTORED"
	echo "rf_seconds=${RF_S:-}"
	echo "replicas_current=$REPLICAS_CURRENT"
	echo "unhealed=${UNHEALED:-0}"
	echo "cluster_ok=$CLUSTER_OK"
	echo "pass=$PASS"
	echo "workload_summary=$(tail -n 1 "$OUT/workload.out" 2>/dev/null)"
	cat "$OUT/summary.txt"
} >"$OUT/result.env"

code_block() { # FILE [MAX_LINES]
	echo '```'
	if [ -s "$1" ]; then head -n "${2:-200}" "$1"; else echo "(empty)"; fi
	echo '```'
}

{
	echo "# docraft failover run${LABEL:+: $LABEL}"
	echo
	if [ "$PASS" -eq 1 ]; then
		echo "**PASS**$([ "$EXPECT" = invalid ] && echo " (expected INVALID: the deliberate bug was caught)")"
	else
		echo "**FAIL**: $(IFS=';'; echo "${REASONS[*]}")"
	fi
	echo
	echo "## Parameters"
	echo
	echo "| | |"
	echo "|---|---|"
	echo "| date | $(date -u -d "@$RUN_START" '+%Y-%m-%d %H:%M:%S UTC') |"
	echo "| commit | $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?')$(git -C "$REPO" diff --quiet HEAD 2>/dev/null || echo ' + local changes') |"
	echo "| binaries | \`$DOCRAFT_BUILD\` |"
	echo "| cluster | $MASTERS master(s), $TSERVERS tservers, RF $RF, $TABLETS tablets per table, netns $NETNS, skewable $SKEW${FAILED_AFTER:+, failed after ${FAILED_AFTER} s} |"
	echo "| workload | $WORKLOAD, $CLIENTS clients, ${TIME} s, $KEYS active keys, seed $SEED |"
	echo "| nemesis | $NEMESIS ($ORDER), every ${INTERVAL} s for the first ${NEMESIS_TIME} s |"
	echo "| expected | $EXPECT |"
	echo "| healed at | ${HEAL_S:-?} s after the start of the run; leaders back: $RECOVERED; every tablet at RF: $RF_RESTORED${RF_S:+ after ${RF_S} s} |"
	echo
	echo "## Result"
	echo
	echo "- checker verdict: **$VERDICT**"
	echo "- replica checksums: **$CHECKSUMS**"
	echo "- acknowledged adds lost: **${LOST:-unknown}**"
	echo "- every tablet back at RF: **$RF_RESTORED**; every replica on a current tserver: **$REPLICAS_CURRENT**"
	echo "- workload: exit $WORKLOAD_RC, \`$(tail -n 1 "$OUT/workload.out" 2>/dev/null)\`"
	echo
	if [ -s "$OUT/report-tables.md" ]; then
		cat "$OUT/report-tables.md"
	else
		echo "(no history: no operation tables)"
		echo
	fi
	echo "## Checker output"
	echo
	code_block "$OUT/check.txt" 200
	echo
	echo "## Replica checksums"
	echo
	for t in "${TABLES[@]}"; do
		echo "$t:"
		echo
		code_block "$OUT/checksum-$t.txt" 60
		echo
	done
	echo "## Files"
	echo
	echo "- history: \`$OUT/history.txt\` (format: tests/jepsen/HISTORY.md)"
	echo "- nemesis log: \`$OUT/nemesis.log\`; nemesis output \`$OUT/nemesis.err\`"
	echo "- checker: \`$OUT/check.txt\`, \`$OUT/check.json\`"
	echo "- workload output: \`$OUT/workload.out\`, per-second progress \`$OUT/workload.err\`"
	echo "- docraft-local output: \`$OUT/cluster.err\`"
	echo "- node logs:"
	for n in "${NODES[@]}"; do
		echo "  - $n: \`$OUT/logs/$n.log\`"
	done
} >"$OUT/report.md"

say "report: $OUT/report.md — $([ "$PASS" -eq 1 ] && echo PASS || echo "FAIL: ${REASONS[*]}")"
[ "$PASS" -eq 1 ]
