# shellcheck shell=bash disable=SC2034 # FAILED, TAP_N: read by the sourcing test
# TAP for the shell tests of tests/redis: ok, not_ok, check; FAILED is 1
# once a check failed (the test's exit trap makes it the exit status).
# Sourced. The plan line ("1..$TAP_N") is printed by the test at its end.
#
#   ok DESC                  a passed check
#   not_ok DESC [NOTE...]    a failed one, each NOTE a "# " line
#   check DESC WANT GOT      ok when WANT = GOT, else not_ok showing both
#   tap_cluster_finish       an EXIT trap for a test on ../lib/cluster.sh:
#                            a PANIC in a log or a failed check fails the
#                            test; the cluster is stopped (and the real
#                            redis-server of real_redis.sh, when sourced)
#   tap_need CMD...          skips the whole test ("1..0 # SKIP", status 0:
#                            meson's TAP skip) unless every CMD is installed
#                            (CMD "python3-redis": /usr/bin/python3's redis)
#   redis_cluster_up TAG N [FLAG...]
#                            the test's cluster (after ../lib/cluster.sh):
#                            N tservers with the Redis port PR (free on
#                            127.0.0.1..N, set) and FLAGs as more tserver
#                            flags, tap_cluster_finish as the EXIT trap;
#                            Bail out! if it does not start
#   r K ARGS...              redis-cli ARGS to tserver K's Redis port, at
#                            most 60 s
TAP_N=0
FAILED=0
ok() {
	TAP_N=$((TAP_N + 1))
	echo "ok $TAP_N - $1"
}
not_ok() {
	local l
	TAP_N=$((TAP_N + 1))
	FAILED=1
	echo "not ok $TAP_N - $1"
	shift
	for l in "$@"; do echo "# $l"; done
}
check() {
	if [ "$2" = "$3" ]; then
		ok "$1"
	else
		not_ok "$1" "want: $(printf %q "$2")" "got:  $(printf %q "$3")"
	fi
}
tap_cluster_finish() {
	local rc=$?
	[ "$FAILED" -ne 0 ] && rc=1
	if grep -q PANIC "$CLUSTER_BASE"/*.log 2>/dev/null; then
		grep -h -B3 PANIC "$CLUSTER_BASE"/*.log
		rc=1
	fi
	if declare -F real_redis_stop >/dev/null; then
		real_redis_stop
	fi
	cluster_down "$rc"
	exit "$rc"
}
tap_need() {
	local c
	for c in "$@"; do
		if [ "$c" = python3-redis ]; then
			/usr/bin/python3 -c "import redis" 2>/dev/null && continue
		else
			command -v "$c" >/dev/null && continue
		fi
		echo "1..0 # SKIP $c not installed (apt-get install redis-server redis-tools python3-redis)"
		exit 0
	done
}
redis_cluster_up() {
	local tag=$1 n=$2
	shift 2
	trap tap_cluster_finish EXIT
	PR=$(cluster_free_port "$n") || { echo "Bail out! no free port"; exit 1; }
	# shellcheck disable=SC2034 # read by cluster_up
	CLUSTER_TSERVER_ARGS=(--redis-address ":$PR" "$@")
	cluster_up "$tag" "$n" || { echo "Bail out! cluster did not start"; exit 1; }
}
r() {
	local k=$1
	shift
	timeout 60 redis-cli -h "127.0.0.$k" -p "$PR" "$@"
}
