#!/usr/bin/env bash
# The failover suite's nemesis: every --interval seconds it picks one fault
# from --nemesis, applies it to a deploy/docraft-local cluster for 4-6 s,
# heals it, and stays quiet for the rest of the interval. Each fault is one
# pair of lines in --log:
#
#   <unix_ms> start <nemesis> <target>
#   <unix_ms> end <nemesis> <target>
#
# (wall-clock ms, taken once the fault is in effect / just before the heal
# is issued; other lines, e.g. `<unix_ms> note ...`, are comments for
# humans). The runner
# (tests/jepsen/run.sh) writes `<unix_ms> workload-start` into the same log
# just before it starts the workload, which is how docraft-jepsen-report
# places faults on the history's time axis (docs/reliability.md).
#
#   nemesis.sh --base DIR --nemesis LIST --time SEC [--interval SEC]
#              --log FILE [--masters M] [--tservers N] [--table NAME]
#              [--features netns,skew] [--seed S] [--warmup SEC]
#              [--order random|cycle] [--heal-timeout SEC]
#
# LIST: comma-separated names, or `all` (every nemesis the cluster supports):
#   kill              kill -9 a random tserver; heal: start it
#   kill-leader       kill -9 the leader of --table's first tablet; heal: start it
#   pause             SIGSTOP a random tserver; heal: SIGCONT
#   restart-all       kill -9 every tserver; heal: start them all
#   master            kill -9 a master (with 3: the master leader); heal: start it
#   master-replace    (3 masters) remove a master (every other time the
#                     leader) with `docraft-local remove-master`, which stops
#                     it, and add a fresh one on a new address and data dir
#                     (`add-master`: --join, `docraft master add`); heal:
#                     nothing (the masters stay replaced)
#   skew              shift a random tserver's clock by +/-100..400 ms (below
#                     the tablets' 500 ms max clock skew, src/tablet/tablet.c);
#                     heal: back to 0. Needs --features skew (--skewable cluster)
#   hostile           docraft-attack (tests/hostile/attack.c) for the fault's
#                     length: forged and malformed Raft messages, RPC garbage,
#                     connection floods, slow readers, wrong-tablet writes to
#                     --set-table's tablets from a plain socket; heal: wait for
#                     it to end. A wrong-tablet write accepted, or a node found
#                     down after the attack, is logged as a `breach` note
#                     (run.sh fails the run on it). Needs
#                     $DOCRAFT_BUILD/tests/hostile/docraft-attack and no
#                     --features netns (it attacks from 127.0.0.1)
#   partition-halves  split the nodes in two random halves; heal: heal
#   partition-one     isolate a random node; heal: heal
#   partition-leader  isolate --table's first tablet leader; heal: heal
#                     (the three partitions need --features netns)
#   kill-permanently  kill -9 a random tserver for good (docraft-local
#                     remove-node); heal: add a fresh tserver (add-node: new
#                     data directory, new address) and wait until every tablet
#                     is back at RF on live tservers (`docraft cluster`: 0
#                     under-replicated, no move in flight). The masters must
#                     run with a short --tserver-failed-after-s (run.sh sets it)
#   drain-and-stop    `docraft drain --wait` a random tserver, then SIGTERM it;
#                     heal: start it again (empty), undrain it, wait until
#                     every tablet is at RF
#   add-node-and-rebalance  add a tserver; heal: wait until the live tservers'
#                     replica counts are within 1 (with the cluster at
#                     --tservers + 2, a random tserver is first drained and
#                     removed, so it does not grow without end)
#   A heal that does not end within --heal-timeout (default 120 s) is logged
#   as an `unhealed` note, which fails the run (run.sh).
# --order: random (default) picks each fault at random; cycle takes them in
# the order of LIST, round and round (short runs that must see each one).
# --time: no fault starts later than --time s after the nemesis started
# (the last heal may end up to ~6 s later).
#
# On exit, for any reason (trap), everything is healed: paused nodes
# resumed, partitions healed, skews reset, stopped nodes started.
#
# Sourcing this file defines the nemesis_* functions without running the
# loop (set NEMESIS_* variables, then call nemesis_loop).
#
# $DOCRAFT_LOCAL: the docraft-local to use (default: deploy/docraft-local of
# this checkout).

NEMESIS_ALL=(kill kill-leader pause restart-all master master-replace skew hostile
	partition-halves partition-one partition-leader kill-permanently drain-and-stop
	add-node-and-rebalance)
# The nemeses that change the set of tservers and wait for the master to heal.
NEMESIS_HEALING=(kill-permanently drain-and-stop add-node-and-rebalance)

: "${DOCRAFT_LOCAL:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/deploy/docraft-local}"
NEMESIS_BASE=""
NEMESIS_LIST="all"
NEMESIS_TIME=60
NEMESIS_INTERVAL=10
NEMESIS_LOG=/dev/stderr
NEMESIS_MASTERS=1
NEMESIS_TSERVERS=3
NEMESIS_TABLE=""
NEMESIS_FEATURES=""
NEMESIS_SEED=""
NEMESIS_WARMUP=""
NEMESIS_ORDER=random
NEMESIS_HEAL_TIMEOUT=120
NEMESIS_DRAINING=""  # a tserver left draining (the exit trap undrains it)

# State for the final heal.
NEMESIS_PAUSED=()  # nodes SIGSTOPped
NEMESIS_SKEWED=()  # nodes with a clock offset
NEMESIS_PARTITIONED=0
NEMESIS_STOPPED=0  # some node may be down
NEMESIS_SELECTED=()
NEMESIS_R=0       # nemesis_rand's result
NEMESIS_NODE=""   # the node (or partition) a chooser picked
NEMESIS_TARGET="" # the target of the last fault
NEMESIS_CURRENT="" # "name target" of the fault in progress, for the exit trap
NEMESIS_ATTACK_PID="" # docraft-attack running (hostile)
NEMESIS_SET_TABLE=jepsen_set # the table hostile's wrong-tablet writes aim at

nemesis_now_ms() { date +%s%3N; }

nemesis_log() { # words...
	echo "$(nemesis_now_ms) $*" >>"$NEMESIS_LOG"
}

nemesis_note() {
	nemesis_log note "$@"
	echo "nemesis: $*" >&2
}

# docraft-local with the cluster's base. Nodes it (re)starts log at info
# (masters default to warn, and their leadership lines are how the master
# nemesis finds the master leader).
dl() {
	DOCRAFT_TRACE=${DOCRAFT_TRACE:-info} "$DOCRAFT_LOCAL" --base "$NEMESIS_BASE" "$@"
}

# dl with its output kept out of ours (it goes to the stderr of the nemesis,
# i.e. the runner's nemesis.out), and a note when it fails.
dl_quiet() {
	if ! dl "$@" >&2; then
		nemesis_note "docraft-local $* failed"
		return 1
	fi
}

nemesis_has_feature() {
	case ",$NEMESIS_FEATURES," in
	*",$1,"*) return 0 ;;
	*) return 1 ;;
	esac
}

nemesis_supported() { # name
	case $1 in
	kill | kill-leader | pause | restart-all | master) return 0 ;;
	master-replace) [ "$NEMESIS_MASTERS" -ge 3 ] ;;
	kill-permanently | drain-and-stop | add-node-and-rebalance) return 0 ;;
	skew) nemesis_has_feature skew ;;
	hostile) ! nemesis_has_feature netns && [ -x "$(nemesis_attack_bin)" ] ;;
	partition-halves | partition-one | partition-leader) nemesis_has_feature netns ;;
	*) return 1 ;;
	esac
}

# Resolves NEMESIS_LIST into NEMESIS_SELECTED; 1 (with a message) on an
# unknown or unsupported name.
nemesis_select() {
	local name list=() IFS=,
	NEMESIS_SELECTED=()
	read -r -a list <<<"$NEMESIS_LIST"
	unset IFS
	for name in "${list[@]}"; do
		if [ "$name" = all ]; then
			local n
			for n in "${NEMESIS_ALL[@]}"; do
				nemesis_supported "$n" && NEMESIS_SELECTED+=("$n")
			done
			continue
		fi
		if ! printf '%s\n' "${NEMESIS_ALL[@]}" | grep -qx -- "$name"; then
			echo "nemesis: unknown nemesis '$name' (known: ${NEMESIS_ALL[*]} all)" >&2
			return 1
		fi
		if ! nemesis_supported "$name"; then
			echo "nemesis: '$name' needs a cluster with ${name%%-*} support" \
				"(--features netns for partitions, skew for skew)" >&2
			return 1
		fi
		NEMESIS_SELECTED+=("$name")
	done
	if [ ${#NEMESIS_SELECTED[@]} -eq 0 ]; then
		echo "nemesis: no nemesis selected" >&2
		return 1
	fi
}

# Random choices set variables instead of printing them: $RANDOM used in a
# $(...) subshell would not advance the loop's sequence (--seed).
nemesis_rand() { # N: NEMESIS_R = a random integer in 0..N-1
	NEMESIS_R=$((RANDOM % $1))
}

# The cluster's tservers now (the healing nemeses add and remove some):
# docraft-local's list, else t1..--tservers.
nemesis_tservers() {
	local i
	if ! dl nodes tservers 2>/dev/null; then
		for ((i = 1; i <= NEMESIS_TSERVERS; i++)); do echo "t$i"; done
	fi
}

nemesis_random_tserver() { # NEMESIS_NODE = a random tserver
	local ts=()
	mapfile -t ts < <(nemesis_tservers)
	nemesis_rand ${#ts[@]}
	NEMESIS_NODE=${ts[NEMESIS_R]}
}

# The masters now: m1..m<masters> of the cluster's docraft-local config but
# those removed (master-replace adds and removes masters).
nemesis_masters() {
	local conf=$NEMESIS_BASE/cluster.conf m removed i
	m=$(sed -n 's/^masters=//p' "$conf" 2>/dev/null)
	removed=$(sed -n 's/^removed_masters=//p' "$conf" 2>/dev/null)
	[[ $m =~ ^[0-9]+$ ]] || m=$NEMESIS_MASTERS
	for ((i = 1; i <= m; i++)); do
		[[ " $removed " == *" m$i "* ]] || echo "m$i"
	done
}

nemesis_all_nodes() {
	local i
	nemesis_masters
	nemesis_tservers
}

# NEMESIS_NODE = the tserver leading --table's first tablet, or a random
# tserver (with a note) when it is unknown.
nemesis_table_leader() {
	local l=""
	if [ -n "$NEMESIS_TABLE" ]; then
		l=$(dl leader "$NEMESIS_TABLE" 2>/dev/null | tail -n 1 | tr -d '[:space:]') || l=""
	fi
	case $l in
	t[0-9]*) NEMESIS_NODE=$l ;;
	*)
		nemesis_note "no leader known for table '${NEMESIS_TABLE:-?}': a random tserver"
		nemesis_random_tserver
		;;
	esac
}

# NEMESIS_NODE = the master leader: with one master m1; with more, the
# master whose log last announced leadership in the highest term
# (src/master/service.c logs "leader in term N" / "no longer the leader
# (term N" at level info: see dl); random if unknown.
nemesis_master_leader() {
	local i best="" best_term=-1 log line term masters=()
	mapfile -t masters < <(nemesis_masters)
	NEMESIS_NODE=${masters[0]}
	[ "${#masters[@]}" -le 1 ] && return
	for i in "${masters[@]}"; do
		log=$(dl logs "$i" 2>/dev/null | head -n 1)
		[ -f "$log" ] || continue
		line=$(grep -E 'leader in term [0-9]+|no longer the leader' "$log" | tail -n 1)
		case $line in
		*"no longer the leader"* | "") continue ;;
		esac
		term=$(sed -E 's/.*leader in term ([0-9]+).*/\1/' <<<"$line")
		if [[ $term =~ ^[0-9]+$ ]] && [ "$term" -gt "$best_term" ]; then
			best_term=$term
			best=$i
		fi
	done
	if [ -z "$best" ]; then
		nemesis_note "master leader unknown: a random master"
		nemesis_rand "${#masters[@]}"
		best=${masters[NEMESIS_R]}
	fi
	NEMESIS_NODE=$best
}

# NEMESIS_NODE = "a,b|c,d": the nodes shuffled and cut in two (the first
# half the smaller).
nemesis_halves() {
	local nodes=() i j tmp cut a b
	mapfile -t nodes < <(nemesis_all_nodes)
	for ((i = ${#nodes[@]} - 1; i > 0; i--)); do
		nemesis_rand $((i + 1))
		j=$NEMESIS_R
		tmp=${nodes[i]}
		nodes[i]=${nodes[j]}
		nodes[j]=$tmp
	done
	cut=$((${#nodes[@]} / 2))
	a=$(IFS=,; echo "${nodes[*]:0:cut}")
	b=$(IFS=,; echo "${nodes[*]:cut}")
	NEMESIS_NODE="$a|$b"
}

nemesis_attack_bin() {
	echo "${DOCRAFT_BUILD:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build}/tests/hostile/docraft-attack"
}

# Starts docraft-attack for SEC seconds in the background; its lines go to
# the log as notes, a breach as a `breach` note.
nemesis_attack_start() { # sec
	local masters
	masters=$(dl env | sed -n 's/^MASTERS=//p')
	nemesis_rand 1000000
	"$(nemesis_attack_bin)" --masters "$masters" --duration "$1" --seed "$NEMESIS_R" \
		--set-table "$NEMESIS_SET_TABLE" 2>&1 |
		sed -u -e 's/^\([0-9]*\) attack \(.*BREACH.*\)$/\1 note breach \2/' \
			-e 's/^\([0-9]*\) attack /\1 note attack /' >>"$NEMESIS_LOG" &
	NEMESIS_ATTACK_PID=$!
}

nemesis_attack_wait() {
	[ -n "$NEMESIS_ATTACK_PID" ] || return 0
	wait "$NEMESIS_ATTACK_PID" 2>/dev/null
	NEMESIS_ATTACK_PID=""
}

NEMESIS_REPLACES=0
# master-replace: removes a master (the leader every other time) and adds a
# fresh one; NEMESIS_NODE = "old>new". With fewer than 3 masters left (an
# add that failed before) it only adds.
nemesis_master_replace() {
	local masters=() old=- new
	mapfile -t masters < <(nemesis_masters)
	if [ "${#masters[@]}" -ge 3 ]; then
		if [ $((NEMESIS_REPLACES % 2)) -eq 0 ]; then
			nemesis_master_leader
		else
			nemesis_rand "${#masters[@]}"
			NEMESIS_NODE=${masters[NEMESIS_R]}
		fi
		old=$NEMESIS_NODE
		dl_quiet remove-master "$old" || old="$old(failed)"
	fi
	NEMESIS_REPLACES=$((NEMESIS_REPLACES + 1))
	dl_quiet add-master
	new=$(nemesis_masters | tail -n 1)
	NEMESIS_NODE="$old>$new"
}

# ---- the healing nemeses (issue 15; tests/jepsen/heal.sh) -------------------------------

# shellcheck source=heal.sh
. "$(dirname "${BASH_SOURCE[0]}")/heal.sh"
# shellcheck source=../lib/wait.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/wait.sh"

nemesis_cli() { dl env | sed -n 's/^DOCRAFT_CLI=//p'; }
nemesis_master_addresses() { dl env | sed -n 's/^MASTERS=//p'; }

# A node's address, from its node.conf (removed nodes too).
nemesis_address() { sed -n 's/^address = //p' "$NEMESIS_BASE/$1/node.conf"; }

# nemesis_wait_healed WHAT CHECK TARGET [ARG]: polls heal_CHECK (at_rf,
# balanced, failed ARG) until it holds; a note with the time it took, or an
# `unhealed` note after --heal-timeout.
nemesis_wait_healed() {
	local what=$1 check=$2 target=$3 cli masters start=$SECONDS
	cli=$(nemesis_cli)
	masters=$(nemesis_master_addresses)
	if wait_for $((NEMESIS_HEAL_TIMEOUT * 1000)) "heal_$check" "$cli" "$masters" ${4:+"$4"}; then
		nemesis_note "healed $what $target: $check after $((SECONDS - start)) s"
		return 0
	fi
	heal_counts "$cli" "$masters" || true
	nemesis_log note unhealed "$what $target: not $check after ${NEMESIS_HEAL_TIMEOUT} s" \
		"(under-replicated ${HEAL_UNDER:-?}, moves ${HEAL_MOVES:-?})"
	echo "nemesis: $what $target: not $check after ${NEMESIS_HEAL_TIMEOUT} s" >&2
	return 1
}

# Drains NODE until it holds no replica (at most --heal-timeout); undrains
# it again when that fails.
nemesis_drain() { # node
	NEMESIS_DRAINING=$1
	if dl drain "$1" --wait="$NEMESIS_HEAL_TIMEOUT" >&2; then
		nemesis_note "drained $1"
		return 0
	fi
	nemesis_log note unhealed "drain $1: not drained after ${NEMESIS_HEAL_TIMEOUT} s"
	dl undrain "$1" >&2 && NEMESIS_DRAINING=""
	return 1
}

nemesis_undrain() {
	[ -n "$NEMESIS_DRAINING" ] || return 0
	dl_quiet undrain "$NEMESIS_DRAINING" && NEMESIS_DRAINING=""
}

# add-node-and-rebalance's bound on the cluster's size: at --tservers + 2,
# a random tserver is drained, stopped and removed first.
nemesis_shrink_if_big() {
	local ts=()
	mapfile -t ts < <(nemesis_tservers)
	[ ${#ts[@]} -ge $((NEMESIS_TSERVERS + 2)) ] || return 0
	nemesis_random_tserver
	nemesis_note "the cluster has ${#ts[@]} tservers: decommissioning $NEMESIS_NODE first"
	nemesis_drain "$NEMESIS_NODE" || return 1
	dl_quiet stop "$NEMESIS_NODE" && dl_quiet remove-node "$NEMESIS_NODE" && NEMESIS_DRAINING=""
}

# Applies one fault, then logs its start; NEMESIS_TARGET = its target.
# Records what the heal must undo.
nemesis_fault() { # name
	local name=$1 target ms
	case $name in
	kill)
		nemesis_random_tserver
		target=$NEMESIS_NODE
		NEMESIS_STOPPED=1
		dl_quiet kill "$target"
		;;
	kill-leader)
		nemesis_table_leader
		target=$NEMESIS_NODE
		NEMESIS_STOPPED=1
		dl_quiet kill "$target"
		;;
	pause)
		nemesis_random_tserver
		target=$NEMESIS_NODE
		NEMESIS_PAUSED+=("$target")
		dl_quiet pause "$target"
		;;
	restart-all)
		target=all-tservers
		NEMESIS_STOPPED=1
		dl_quiet kill all-tservers
		;;
	master)
		nemesis_master_leader
		target=$NEMESIS_NODE
		NEMESIS_STOPPED=1
		dl_quiet kill "$target"
		;;
	master-replace)
		nemesis_master_replace
		target=$NEMESIS_NODE
		;;
	skew)
		nemesis_random_tserver
		target=$NEMESIS_NODE
		nemesis_rand 301
		ms=$((100 + NEMESIS_R))
		nemesis_rand 2
		[ "$NEMESIS_R" -eq 1 ] && ms=$((-ms))
		NEMESIS_SKEWED+=("$target")
		dl_quiet skew "$target" "$ms"
		target="$target:${ms}ms"
		;;
	hostile)
		target=cluster
		nemesis_attack_start 4
		;;
	partition-halves)
		nemesis_halves
		target=$NEMESIS_NODE
		NEMESIS_PARTITIONED=1
		dl_quiet partition "$target"
		;;
	partition-one)
		local nodes=()
		mapfile -t nodes < <(nemesis_all_nodes)
		nemesis_rand ${#nodes[@]}
		target=${nodes[NEMESIS_R]}
		NEMESIS_PARTITIONED=1
		dl_quiet isolate "$target"
		;;
	partition-leader)
		nemesis_table_leader
		target=$NEMESIS_NODE
		NEMESIS_PARTITIONED=1
		dl_quiet isolate "$target"
		;;
	kill-permanently)
		nemesis_random_tserver
		target=$NEMESIS_NODE
		dl_quiet remove-node "$target"
		;;
	drain-and-stop)
		nemesis_random_tserver
		target=$NEMESIS_NODE
		if nemesis_drain "$target"; then
			NEMESIS_STOPPED=1
			dl_quiet stop "$target"
		else
			target="$target:not-drained"
		fi
		;;
	add-node-and-rebalance)
		nemesis_shrink_if_big
		dl_quiet add-node
		target=$(dl nodes tservers | tail -n 1)
		;;
	esac
	# Logged once the fault is in effect: docraft-local takes ~0.1 s to
	# act (more on a busy machine), and a start line written before would
	# count that time as the cluster's.
	nemesis_log start "$name" "$target"
	NEMESIS_TARGET=$target
}

# Undoes one fault (the end line is logged before the heal is issued).
nemesis_heal() { # name target
	local name=$1 target=$2 node
	nemesis_log end "$name" "$target"
	NEMESIS_CURRENT=""
	case $name in
	kill | kill-leader | master)
		dl_quiet start "$target" && NEMESIS_STOPPED=0
		;;
	master-replace) ;;
	restart-all)
		dl_quiet start all-tservers && NEMESIS_STOPPED=0
		;;
	pause)
		dl_quiet resume "$target" && NEMESIS_PAUSED=()
		;;
	skew)
		node=${target%%:*}
		dl_quiet skew "$node" 0 && NEMESIS_SKEWED=()
		;;
	hostile)
		nemesis_attack_wait
		for node in $(nemesis_all_nodes); do
			if ! dl pid "$node" >/dev/null 2>&1; then
				nemesis_log note breach "$node is down after the attack"
				echo "nemesis: $node died under attack" >&2
				NEMESIS_STOPPED=1
			fi
		done
		[ "$NEMESIS_STOPPED" -eq 0 ] || { dl_quiet start && NEMESIS_STOPPED=0; }
		;;
	partition-*)
		dl_quiet heal && NEMESIS_PARTITIONED=0
		;;
	kill-permanently)
		dl_quiet add-node
		# First the master declares it failed (--tserver-failed-after-s),
		# then every tablet must come back to RF.
		nemesis_wait_healed "$name" failed "$target" "$(nemesis_address "$target")" &&
			nemesis_wait_healed "$name" at_rf "$target"
		;;
	drain-and-stop)
		if [[ $target != *:not-drained ]]; then
			dl_quiet start "$target" && NEMESIS_STOPPED=0
			nemesis_undrain
			nemesis_wait_healed "$name" at_rf "$target"
		fi
		;;
	add-node-and-rebalance)
		nemesis_wait_healed "$name" balanced "$target"
		;;
	esac
}

# Heals everything that may still be broken (idempotent; the exit trap).
nemesis_heal_all() {
	local n
	nemesis_attack_wait
	for n in "${NEMESIS_PAUSED[@]}"; do
		dl resume "$n" >&2 2>/dev/null || true
	done
	NEMESIS_PAUSED=()
	if [ "$NEMESIS_PARTITIONED" -ne 0 ] || nemesis_has_feature netns; then
		dl heal >&2 2>/dev/null || true
	fi
	NEMESIS_PARTITIONED=0
	for n in "${NEMESIS_SKEWED[@]}"; do
		dl skew "$n" 0 >&2 2>/dev/null || true
	done
	NEMESIS_SKEWED=()
	if [ "$NEMESIS_STOPPED" -ne 0 ]; then
		dl start >&2 || nemesis_note "docraft-local start failed while healing"
	fi
	NEMESIS_STOPPED=0
	if [ -n "$NEMESIS_DRAINING" ]; then
		dl undrain "$NEMESIS_DRAINING" >&2 || nemesis_note "undrain $NEMESIS_DRAINING failed"
		NEMESIS_DRAINING=""
	fi
}

# Sleeps SEC (may be fractional) so that a signal interrupts it at once.
nemesis_sleep() {
	local pid
	sleep "$1" &
	pid=$!
	wait "$pid" 2>/dev/null || kill "$pid" 2>/dev/null
}

nemesis_sleep_until_ms() { # unix_ms
	local left=$(($1 - $(nemesis_now_ms)))
	[ "$left" -gt 0 ] || return 0
	nemesis_sleep "$((left / 1000)).$(printf '%03d' $((left % 1000)))"
}

nemesis_on_exit() {
	local rc=$?
	trap - EXIT INT TERM
	if [ -n "$NEMESIS_CURRENT" ]; then
		# shellcheck disable=SC2086 # "name target"
		nemesis_log end $NEMESIS_CURRENT
	fi
	nemesis_heal_all
	nemesis_log note "nemesis exits, everything healed"
	exit "$rc"
}

# The loop: a quiet warm-up (--warmup, default min(5, interval) s), then
# cycles of fault (4-6 s), heal, quiet until the interval is over.
nemesis_loop() {
	local deadline cycle fault_ms name target warmup n_faults=0
	nemesis_select || return 2
	[ -n "$NEMESIS_SEED" ] && RANDOM=$NEMESIS_SEED
	trap nemesis_on_exit EXIT
	trap 'exit 143' TERM
	trap 'exit 130' INT
	deadline=$(($(nemesis_now_ms) + NEMESIS_TIME * 1000))
	warmup=${NEMESIS_WARMUP:-$((NEMESIS_INTERVAL < 5 ? NEMESIS_INTERVAL : 5))}
	nemesis_log note "nemesis starts: ${NEMESIS_SELECTED[*]}; every ${NEMESIS_INTERVAL}s for" \
		"${NEMESIS_TIME}s; seed ${NEMESIS_SEED:-none}"
	nemesis_sleep "$warmup"
	while :; do
		cycle=$(nemesis_now_ms)
		[ "$cycle" -lt "$deadline" ] || break
		if [ "$NEMESIS_ORDER" = cycle ]; then
			name=${NEMESIS_SELECTED[n_faults % ${#NEMESIS_SELECTED[@]}]}
		else
			nemesis_rand ${#NEMESIS_SELECTED[@]}
			name=${NEMESIS_SELECTED[NEMESIS_R]}
		fi
		n_faults=$((n_faults + 1))
		nemesis_rand 2001
		fault_ms=$((4000 + NEMESIS_R))
		if [ $((NEMESIS_INTERVAL * 1000)) -lt $((fault_ms + 1000)) ]; then
			fault_ms=$((NEMESIS_INTERVAL * 1000 / 2))
		fi
		NEMESIS_CURRENT=$name
		nemesis_fault "$name"
		target=$NEMESIS_TARGET
		NEMESIS_CURRENT="$name $target"
		echo "nemesis: $(date +%T) $name $target for ${fault_ms} ms" >&2
		nemesis_sleep_until_ms $((cycle + fault_ms))
		nemesis_heal "$name" "$target"
		nemesis_sleep_until_ms $((cycle + NEMESIS_INTERVAL * 1000))
	done
	return 0
}

nemesis_usage() {
	sed -n '17,67p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

nemesis_main() {
	while [ $# -gt 0 ]; do
		case $1 in
		-h | --help)
			nemesis_usage
			return 0
			;;
		--*)
			if [ $# -lt 2 ]; then
				echo "nemesis: $1 needs a value" >&2
				return 2
			fi
			;;
		esac
		case $1 in
		--base) NEMESIS_BASE=$2 ;;
		--nemesis) NEMESIS_LIST=$2 ;;
		--time) NEMESIS_TIME=$2 ;;
		--interval) NEMESIS_INTERVAL=$2 ;;
		--log) NEMESIS_LOG=$2 ;;
		--masters) NEMESIS_MASTERS=$2 ;;
		--tservers) NEMESIS_TSERVERS=$2 ;;
		--table) NEMESIS_TABLE=$2 ;;
		--features) NEMESIS_FEATURES=$2 ;;
		--seed) NEMESIS_SEED=$2 ;;
		--warmup) NEMESIS_WARMUP=$2 ;;
		--order) NEMESIS_ORDER=$2 ;;
		--heal-timeout) NEMESIS_HEAL_TIMEOUT=$2 ;;
		*)
			echo "nemesis: unknown argument '$1'" >&2
			nemesis_usage >&2
			return 2
			;;
		esac
		shift 2
	done
	local v
	case $NEMESIS_ORDER in random | cycle) ;; *)
		echo "nemesis: --order: random or cycle" >&2
		return 2
		;;
	esac
	for v in NEMESIS_TIME NEMESIS_INTERVAL NEMESIS_MASTERS NEMESIS_TSERVERS NEMESIS_HEAL_TIMEOUT; do
		if ! [[ ${!v} =~ ^[0-9]+$ ]] || [ "${!v}" -eq 0 ]; then
			echo "nemesis: ${v#NEMESIS_} must be a positive integer" >&2
			return 2
		fi
	done
	if [ -z "$NEMESIS_BASE" ]; then
		echo "nemesis: --base is required" >&2
		return 2
	fi
	nemesis_loop
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	set -uo pipefail
	nemesis_main "$@"
	exit $?
fi
