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
#   real_redis_stop               SIGTERM, reaped; safe to call twice
#                                 (tap.sh's tap_cluster_finish calls it)
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

