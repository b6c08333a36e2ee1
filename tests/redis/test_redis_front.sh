#!/usr/bin/env bash
# The tserver's Redis front end (issue 17, src/tserver/redis_*.c) on a real
# 3-tserver cluster (RF 3, three tablets per Redis database) through
# redis-cli, then test_redis_front.py through /usr/bin/python3's redis:
# every command group routed from any tserver, multi-key commands across
# tablets (MGET MSET DEL EXISTS), KEYS / SCAN / DBSIZE over many keys on
# every tablet (each key once), MULTI/EXEC on one hash tag and refused
# across tablets, CLUSTER SLOTS covering 0..16383 with leaders first,
# CLUSTER NODES/INFO/KEYSLOT/MYID, redis-cli -c and redis-py RedisCluster
# (never a MOVED), FLUSHDB
# and FLUSHALL, COMMAND, WATCH refused.
#
# One master and three tservers on 127.0.0.1..3 (../lib/cluster.sh), the
# Redis port :PR on each; every process is stopped on exit.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/cluster.sh
. "$here/../lib/cluster.sh"

# shellcheck source=tap.sh
. "$here/tap.sh"
tap_need redis-cli

redis_cluster_up redisfront 3 --redis-max-connections-per-ip 40
pr=$PR
lines() { printf '%s\n' "$@"; }

# ---- one key at a time, through every tserver ----
check "SET then GET through another tserver" "$(lines OK v1)" "$(r 1 SET k1 v1; r 2 GET k1)"
check "strings: INCR APPEND GETRANGE GETDEL" \
	"$(lines 1 5 3 v1x 1x v1x '')" \
	"$(r 3 INCR n; r 1 INCRBY n 4; r 2 APPEND k1 x; r 3 GET k1; r 1 GETRANGE k1 1 2
	   r 2 GETDEL k1; r 1 GET k1)"
check "keys: TYPE EXPIRE TTL PERSIST" "$(lines string 1 100 1 -1)" \
	"$(r 1 TYPE n; r 2 EXPIRE n 100; r 3 TTL n; r 1 PERSIST n; r 2 TTL n)"
if [ -n "$(r 1 COMMAND INFO hset | head -1)" ]; then
	check "WRONGTYPE passes through" \
		"WRONGTYPE Operation against a key holding the wrong kind of value" \
		"$(r 1 SET s x >/dev/null; r 1 HSET s f v)"
else
	ok "WRONGTYPE: no HSET in this engine # SKIP"
fi
check "unknown command" "ERR unknown command 'NOPE', with args beginning with: 'a' " \
	"$(r 1 NOPE a)"
check "arity from the engine's table" "ERR wrong number of arguments for 'incr' command" \
	"$(r 1 INCR)"

# ---- multi-key across tablets ----
keys=()
for i in $(seq 1 40); do keys+=("mk$i" "v$i"); done
check "MSET of 40 keys (every tablet)" "OK" "$(r 1 MSET "${keys[@]}")"
want=$(for i in $(seq 1 40); do echo "v$i"; done)
got=$(r 2 MGET $(for i in $(seq 1 40); do echo "mk$i"; done))
check "MGET of the 40 in argument order" "$want" "$got"
check "MGET: a missing key and a non-string are nil" "$(lines v1 '' '' v2)" \
	"$(r 3 HSET h f v >/dev/null || r 3 MGET mk1 nokey mk2 mk2 >/dev/null; r 3 MGET mk1 nokey h mk2)"
check "EXISTS counts every key given, duplicates too" "4" "$(r 1 EXISTS mk1 mk2 nokey mk1 mk40)"
check "DEL of keys on several tablets" "3" "$(r 2 DEL mk1 mk2 nokey mk3)"
check "MSET: odd arguments" "ERR wrong number of arguments for 'mset' command" \
	"$(r 1 MSET a 1 b)"

# ---- tablet-wide: KEYS, SCAN, DBSIZE over 300 keys (database 7) ----
for i in $(seq 1 300); do echo "SET key:$i $i"; done | r 3 -n 7 >/dev/null
check "DBSIZE sums the tablets" "300" "$(r 1 -n 7 DBSIZE)"
check "KEYS * returns each key once" "300 300" \
	"$(r 2 -n 7 KEYS '*' | sort | uniq | wc -l) $(r 2 -n 7 KEYS '*' | wc -l)"
check "KEYS with a pattern" "$(lines key:100 key:101 key:102)" \
	"$(r 1 -n 7 KEYS 'key:10?' | sort | head -3)"
scan=$(r 1 -n 7 --scan)
check "SCAN to cursor 0 (redis-cli --scan): each key once" "300 300" \
	"$(echo "$scan" | sort | uniq | wc -l) $(echo "$scan" | wc -l)"
check "SCAN MATCH" "10" "$(r 2 -n 7 --scan --pattern 'key:1?' | wc -l | tr -d ' ')"
check "SCAN: a bad cursor" "ERR invalid cursor" "$(r 1 SCAN x)"
check "SCAN: a cursor past the slots" "0" "$(r 1 SCAN 18446744073709551615 | head -1)"
check "RANDOMKEY: a key there is" "1" "$(r 1 -n 7 EXISTS "$(r 1 -n 7 RANDOMKEY)")"
check "RANDOMKEY of an empty database: nil" "" "$(r 1 -n 8 RANDOMKEY)"

# ---- MULTI / EXEC ----
check "MULTI/EXEC on one hash tag" "$(lines OK QUEUED QUEUED QUEUED QUEUED QUEUED OK 2 PONG 2 OK)" \
	"$(printf 'MULTI\nSET {u}a 1\nINCR {u}a\nPING\nGET {u}a\nMSET {u}b 1 {u}c 2\nEXEC\n' | r 2)"
# foo (slot 12182) and bar (slot 5061) are on different tablets of three
check "MULTI/EXEC across tablets: refused, nothing runs" \
	"$(lines OK QUEUED QUEUED 'ERR docraft: MULTI/EXEC keys span several tablets (use a {hash tag})' '' '' '')" \
	"$(printf 'MULTI\nSET foo 1\nSET bar 1\nEXEC\nGET foo\nGET bar\n' | r 1)"
# a (slot 15495) and foo share the tablet of slots 10923..16383: one request
check "MULTI/EXEC over two slots of one tablet" "$(lines OK QUEUED QUEUED QUEUED OK OK x)" \
	"$(printf 'MULTI\nSET a x\nSET foo y\nGET a\nEXEC\n' | r 3)"
check "EXECABORT after a queueing error" \
	"$(lines OK 'ERR wrong number of arguments for '"'get'"' command' '' QUEUED \
		'EXECABORT Transaction discarded because of previous errors.' '' '')" \
	"$(printf 'MULTI\nGET\nSET {u}z 1\nEXEC\nGET {u}z\n' | r 3)"
check "WATCH" "ERR docraft: WATCH is not supported" "$(r 1 WATCH a)"

# ---- CLUSTER ----
slots=$(r 1 CLUSTER SLOTS)
cover=$(/usr/bin/python3 - "$pr" <<'PY'
import socket, sys
# CLUSTER SLOTS raw: the ranges must tile 0..16383 with 3 replicas each
port = int(sys.argv[1])
s = socket.create_connection(("127.0.0.2", port), timeout=30)
s.sendall(b"CLUSTER SLOTS\r\n")
f = s.makefile("rb")
def read():
    line = f.readline()
    t, rest = line[:1], line[1:-2]
    if t == b"*":
        return [read() for _ in range(int(rest))]
    if t == b"$":
        data = f.read(int(rest) + 2)[:-2]
        return data.decode()
    if t == b":":
        return int(rest)
    raise SystemExit("unexpected " + repr(line))
ranges = sorted((e[0], e[1], len(e) - 2) for e in read())
nxt = 0
for a, b, n in ranges:
    assert a == nxt, ranges
    assert n == 3, ranges
    nxt = b + 1
assert nxt == 16384, ranges
print(len(ranges))
PY
)
check "CLUSTER SLOTS tiles 0..16383, 3 replicas each" "3" "$cover"
nodes=$(r 2 CLUSTER NODES)
check "CLUSTER NODES: 3 nodes, one myself" "3 1" \
	"$(echo "$nodes" | grep -c connected) $(echo "$nodes" | grep -c myself)"
check "CLUSTER NODES' myself is CLUSTER MYID" "$(r 2 CLUSTER MYID)" \
	"$(echo "$nodes" | grep myself | cut -d' ' -f1)"
check "CLUSTER INFO" "cluster_state:ok" "$(r 3 CLUSTER INFO | grep cluster_state | tr -d '\r')"
check "CLUSTER KEYSLOT (the specification's value)" "12182" "$(r 1 CLUSTER KEYSLOT foo)"
check "redis-cli -c: no redirection needed" "$(lines OK bar)" \
	"$(r 1 -c SET foo bar; r 3 -c GET foo)"

# ---- databases, FLUSHDB, FLUSHALL, COMMAND ----
check "SELECT 3 has its own keys" "$(lines OK '' OK 1)" \
	"$(printf 'SELECT 3\nGET foo\nSET foo three\nDBSIZE\n' | r 1)"
# (test_redis_drop: FLUSHDB with stale caches on other tservers)
check "FLUSHDB empties database 0 only" "$(lines OK 0 three)" \
	"$(r 2 FLUSHDB; r 2 DBSIZE; printf 'SELECT 3\nGET foo\n' | r 2 | tail -1)"
check "a write after FLUSHDB" "$(lines OK again)" "$(r 2 SET foo again; r 2 GET foo)"
check "FLUSHALL" "$(lines OK 0 0)" \
	"$(r 1 FLUSHALL; r 1 DBSIZE; printf 'SELECT 3\nDBSIZE\n' | r 1 | tail -1)"
check "FLUSHDB: a bad option" "ERR syntax error" "$(r 1 FLUSHDB NOW)"
check "COMMAND INFO of an engine command" "get" "$(r 1 COMMAND INFO get | head -1)"

# ---- --redis-max-connections-per-ip 40: the 41st connection from 127.0.0.1 ----
perip=$(python3 - "$pr" <<'PY'
import socket, sys
port = int(sys.argv[1])
socks, refused = [], 0
for i in range(45):
    s = socket.create_connection(("127.0.0.3", port), timeout=20)
    s.sendall(b"PING\r\n")
    reply = s.recv(100)
    if reply.startswith(b"-ERR max number of clients per IP reached"):
        refused += 1
    else:
        assert reply == b"+PONG\r\n", reply
    socks.append(s)
print(refused)
PY
)
check "--redis-max-connections-per-ip 40: 5 of 45 refused" "5" "$perip"

# ---- python3-redis ----
if /usr/bin/python3 -c "import redis" 2>/dev/null; then
	py=$(timeout 120 /usr/bin/python3 "$here/test_redis_front.py" "$pr" 2>&1)
	check "python3-redis (test_redis_front.py)" "ok" "$(echo "$py" | tail -1)"
	[ "$(echo "$py" | tail -1)" = ok ] || echo "$py" | sed 's/^/# /'
else
	ok "python3-redis: not installed # SKIP"
fi

echo "1..$TAP_N"
