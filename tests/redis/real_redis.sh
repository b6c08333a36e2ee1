# shellcheck shell=bash
# A real redis-server beside the docraft cluster of a tests/redis shell test
# (the differential test's reference, the default list of redis-benchmark).
# Sourced after ../lib/cluster.sh, once cluster_up has set CLUSTER_BASE.
#
#   real_redis_start AVOID_PORT   start redis-server on a free port of
#                                 127.0.0.1 (not AVOID_PORT), no persistence,
#                                 its dir and log in CLUSTER_BASE; sets
#                                 REAL_PORT and REAL_PID; 1 if it did not
#                                 answer PING within 10 s
#   real_redis_stop               SIGTERM, reaped; safe to call twice (the
#                                 test's exit trap calls it)
#   redis_cluster_up TAG          the test's cluster: 3 tservers with the
#                                 Redis port PR (free on 127.0.0.1..3, set)
#                                 and an exit trap stopping the cluster and
#                                 the redis-server (status 1 once a check
#                                 failed, tap.sh's FAILED); Bail out! if
#                                 it does not start
REAL_PID=""
REAL_PORT=""

real_redis_start() {
	REAL_PORT=$(cluster_free_port 1 "$1") || return 1
	redis-server --bind 127.0.0.1 --port "$REAL_PORT" --save "" --appendonly no \
		--dir "$CLUSTER_BASE" --logfile "$CLUSTER_BASE/redis-server.log" &
	REAL_PID=$!
	wait_for 10000 redis-cli -p "$REAL_PORT" PING
}

real_redis_stop() {
	[ -n "$REAL_PID" ] || return 0
	kill -TERM "$REAL_PID" 2>/dev/null
	wait "$REAL_PID" 2>/dev/null
	REAL_PID=""
}

redis_test_finish() {
	local rc=$?
	[ "$FAILED" -ne 0 ] && rc=1
	real_redis_stop
	cluster_down "$rc"
}

redis_cluster_up() {
	trap redis_test_finish EXIT
	PR=$(cluster_free_port 3) || { echo "Bail out! no free port"; exit 1; }
	# shellcheck disable=SC2034 # read by cluster_up
	CLUSTER_TSERVER_ARGS=(--redis-address ":$PR")
	cluster_up "$1" 3 || { echo "Bail out! cluster did not start"; exit 1; }
}
