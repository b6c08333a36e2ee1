#!/usr/bin/env bash
# redis-benchmark's DEFAULT test list (no -t) against tserver 2 of a 3-tserver cluster
# (RF 3), issue 17's "Done when": redis-benchmark stops at the first error
# reply, so every test of the list must report its requests per second and
# no error may be printed. The list is the installed redis-benchmark's (7.0:
# PING_INLINE PING_MBULK SET GET INCR LPUSH RPUSH LPOP RPOP SADD HSET SPOP
# ZADD ZPOPMIN, LPUSH for LRANGE, LRANGE_100/300/500/600, MSET 10 keys);
# the test reads it from the tool itself (`-n 1` against a real
# redis-server when one is installed) so that a newer list is checked too.
#
# One master and three tservers on 127.0.0.1..3 (../lib/cluster.sh), the
# Redis port :PR on each; everything stopped on exit.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/cluster.sh
. "$here/../lib/cluster.sh"

# shellcheck source=tap.sh
. "$here/tap.sh"
tap_need redis-benchmark redis-server redis-cli
# shellcheck source=real_redis.sh
. "$here/real_redis.sh"

# The test names of a -q run, one a line ("SET: 1234.5 requests per second").
names() { tr '\r' '\n' | sed -n 's/^\([^:]*\): [^ ]* requests per second.*/\1/p'; }

redis_cluster_up redisbench 3
pr=$PR

# The default list, from the tool (a real redis-server answers every test).
want="PING_INLINE PING_MBULK SET GET INCR LPUSH RPUSH LPOP RPOP SADD HSET SPOP ZADD ZPOPMIN"
want+=" LPUSH (needed to benchmark LRANGE) LRANGE_100 (first 100 elements)"
want+=" LRANGE_300 (first 300 elements) LRANGE_500 (first 500 elements)"
want+=" LRANGE_600 (first 600 elements) MSET (10 keys)"
if command -v redis-server >/dev/null; then
	if real_redis_start "$pr"; then
		want=$(timeout 120 redis-benchmark -h 127.0.0.1 -p "$REAL_PORT" -q -n 10 -c 1 2>&1 | names | tr '\n' ' ')
		want=${want% }
	fi
	real_redis_stop
fi
echo "# the default list: $want"

k=2 # one run (the list ops on one key take most of it)
out=$(timeout 600 redis-benchmark -h "127.0.0.$k" -p "$pr" -q -n 2000 2>&1)
rc=$?
got=$(names <<<"$out" | tr '\n' ' ')
got=${got% }
echo "$out" | tr '\r' '\n' | grep 'requests per second' | sed 's/^/# /'
if [ "$rc" -eq 0 ] && [ "$got" = "$want" ] && ! grep -qiE 'error|ERR ' <<<"$out"; then
	ok "redis-benchmark -n 2000, default list, against tserver $k: every test completed"
else
	not_ok "redis-benchmark -n 2000, default list, against tserver $k: every test completed" \
		"exit $rc" "want: $want" "got:  $got" \
		"$(tr '\r' '\n' <<<"$out" | grep -iE 'error|ERR ' | head -n 5)"
fi
# What the benchmark left: its keys are readable from another tserver.
check "the benchmark's counter through tserver 3" "2000" "$(redis-cli -h 127.0.0.3 -p "$pr" GET counter:__rand_int__)"

echo "1..$TAP_N"
