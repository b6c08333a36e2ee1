#!/usr/bin/env bash
# Redis GET, SET, EXISTS, DEL on a real 3-tserver cluster (RF 3), through redis-cli,
# redis-benchmark and raw sockets (issue 17): any tserver serves any key
# (routed to the tablet leader), SET's NX XX EX PX and their errors, TTL
# expiry, one table per database (SELECT), binary values, python3-redis
# (skipped when not installed), redis-benchmark
# SET/GET without an error, a tserver killed mid-workload with no
# acknowledged write lost, and a SIGTERM with Redis commands in flight.
#
# One master and three tservers on 127.0.0.1..3 (../lib/cluster.sh), the
# Redis port :PR on each; every process is stopped on exit.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/cluster.sh
. "$here/../lib/cluster.sh"

# shellcheck source=tap.sh
. "$here/tap.sh"
tap_need redis-cli redis-benchmark

redis_cluster_up redisdata 3
pr=$PR

# the first SET creates table redis_0 (3 replicas)
check "SET creates the database's table" "OK" "$(r 1 SET k1 v1)"
tablets=$("$DOCRAFT" --masters "$CLUSTER_MASTERS" tablets redis_0 2>&1)
case $tablets in
*redis_0*) ok "table redis_0 exists" ;;
*) not_ok "table redis_0 exists" "$tablets" ;;
esac
check "GET through another tserver" "v1" "$(r 2 GET k1)"
check "GET through the third" "v1" "$(r 3 GET k1)"
check "GET of a missing key: nil" "" "$(r 1 GET nokey)"
check "SET NX of an existing key: nil" "" "$(r 2 SET k1 other NX)"
check "SET NX of a new key" "OK" "$(r 2 SET k2 v2 NX)"
check "SET XX of an existing key" "OK" "$(r 3 SET k1 v1b XX)"
check "SET XX of a missing key: nil" "" "$(r 3 SET k3 v3 XX)"
check "values after NX/XX" "$(printf 'v1b\nv2\n')" "$(r 1 GET k1; r 1 GET k2; r 1 GET k3)"
check "EXISTS counts every key given" "3" "$(r 1 EXISTS k1 k2 nokey k1)"
check "DEL: the keys removed" "1" "$(r 2 DEL k1 nokey)"
check "after DEL" "$(printf '\n0\n1')" "$(r 3 GET k1; r 3 EXISTS k1; r 3 EXISTS k2)"
check "DEL and EXISTS in a database without a table" "$(printf 'OK\n0\n0')" \
	"$(printf 'SELECT 9\nDEL a b\nEXISTS a\n' | r 1)"
check "SET again after DEL" "$(printf 'OK\nagain')" "$(r 1 SET k1 again; r 2 GET k1)"
check "EX 0" "ERR invalid expire time in 'set' command" "$(r 1 SET k v EX 0)"
check "EX x" "ERR value is not an integer or out of range" "$(r 1 SET k v EX x)"
check "NX XX" "ERR syntax error" "$(r 1 SET k v NX XX)"
check "EX and PX" "ERR syntax error" "$(r 1 SET k v EX 1 PX 1)"
check "GET arity" "ERR wrong number of arguments for 'get' command" "$(r 1 GET a b)"

# TTL: gone once expired; a plain SET clears an expiry
check "SET PX 500" "OK" "$(r 1 SET t1 v PX 500)"
check "SET EX 1000 then SET: no expiry" "$(printf 'OK\nOK')" \
	"$(r 2 SET t2 v EX 1; r 2 SET t2 w)"
gone() { [ -z "$(r 3 GET t1)" ]; }
if wait_for 10000 gone; then ok "the PX 500 key expires"; else not_ok "the PX 500 key expires"; fi
sleep 1.2
check "the key SET again without EX does not expire" "w" "$(r 3 GET t2)"

# databases: one table each
check "SELECT 5: its own keys" "$(printf 'OK\n\nOK\nfive\nOK\nagain')" \
	"$(printf 'SELECT 5\nGET k1\nSET k1 five\nGET k1\nSELECT 0\nGET k1\n' | r 2)"

# binary values, byte for byte
if python3 - "$pr" <<'PY'
import socket, sys
port = int(sys.argv[1])
val = bytes(range(256)) * 40 + b"\r\n$-1\r\n"
def call(ip, *args):
    s = socket.create_connection((ip, port), timeout=20)
    req = b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)
    s.sendall(req)
    out = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        out += b
        if out.startswith(b"+") and out.endswith(b"\r\n"):
            break
        if out.startswith(b"$") and b"\r\n" in out:
            head, _, rest = out.partition(b"\r\n")
            if len(rest) >= int(head[1:]) + 2:
                break
    return out
assert call("127.0.0.1", b"SET", b"bin\x00key", val) == b"+OK\r\n"
got = call("127.0.0.2", b"GET", b"bin\x00key")
sys.exit(0 if got == b"$%d\r\n%s\r\n" % (len(val), val) else 1)
PY
then
	ok "a binary value round-trips"
else
	not_ok "a binary value round-trips"
fi

# python3-redis (redis-py), Debian's: a client library's view
if /usr/bin/python3 -c "import redis" 2>/dev/null; then
	py=$(/usr/bin/python3 - "$pr" 2>&1 <<'PY'
import sys, redis
r = redis.Redis(host="127.0.0.2", port=int(sys.argv[1]), socket_timeout=20)
assert r.ping() is True
assert r.echo("hi") == b"hi"
assert r.set("py", b"\x00bin\r\n") is True
assert redis.Redis(host="127.0.0.3", port=int(sys.argv[1])).get("py") == b"\x00bin\r\n"
assert r.set("py", "other", nx=True) is None
assert r.set("py", "new", xx=True, ex=100) is True
p = r.pipeline(transaction=False)
p.set("pa", "1").get("pa").exists("pa", "nope", "py").delete("pa", "py").get("pa").get("py")
assert p.execute() == [True, b"1", 2, 2, None, None], "pipeline"
try:
    r.execute_command("FOO", "x")
    raise AssertionError("FOO did not fail")
except redis.ResponseError as e:
    assert str(e) == "unknown command 'FOO', with args beginning with: 'x' ", str(e)
assert r.info()["redis_version"] == "7.0.0"
assert r.client_setname("py") is True and r.client_getname() in (b"py", "py")
print("ok")
PY
	)
	check "python3-redis: commands, a pipeline, errors, INFO" "ok" "$py"
else
	ok "python3-redis: not installed # SKIP"
fi

# redis-benchmark: it reports every error reply it gets
bench=$(redis-benchmark -h 127.0.0.1 -p "$pr" -t set,get -n 2000 -c 8 -r 1000 -q 2>&1)
echo "# redis-benchmark: $(echo "$bench" | tr '\r\n' '  ' | tr -s ' ')"
case $bench in
*ERR* | *rror*) not_ok "redis-benchmark SET/GET without an error" "$bench" ;;
*"SET: "*"GET: "*) ok "redis-benchmark SET/GET without an error" ;;
*) not_ok "redis-benchmark SET/GET without an error" "$bench" ;;
esac

# a tserver killed mid-workload: every acknowledged write is read back
prog=$CLUSTER_BASE/kill-progress
python3 - "$pr" "$prog" >"$CLUSTER_BASE/acked" 2>"$CLUSTER_BASE/writer.err" <<'PY' &
import socket, sys, time
port, prog = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port), timeout=30)
f = s.makefile("rb")
for i in range(400):
    k, v = b"kill%d" % i, b"value%d" % i
    s.sendall(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
    line = f.readline()
    if line == b"+OK\r\n":
        print(i, flush=True)
    if i == 100:
        open(prog, "w").close()
PY
writer=$!
wait_for 30000 test -e "$prog" || not_ok "the writer reached 100 writes"
kill -KILL -- "-${CLUSTER_PIDS[3]}" 2>/dev/null # ts3 (CLUSTER_PIDS: master, ts1, ts2, ts3)
wait "$writer"
acked=$(wc -l <"$CLUSTER_BASE/acked")
lost=0
while read -r i; do
	[ "$(r 2 GET "kill$i")" = "value$i" ] || lost=$((lost + 1))
done <"$CLUSTER_BASE/acked"
echo "# acknowledged $acked of 400 writes with ts3 killed after the 100th"
if [ "$lost" -eq 0 ] && [ "$acked" -gt 100 ]; then
	ok "ts3 killed mid-workload: all $acked acknowledged writes read back"
else
	not_ok "ts3 killed mid-workload: no acknowledged write lost" "acked $acked, lost $lost" \
		"$(tail -n 3 "$CLUSTER_BASE/writer.err")"
fi

# SIGTERM to a tserver with Redis commands in flight (ts3 is down: with
# ts2 stopping, writes wait for a majority): it stops cleanly, the
# commands waiting answered with an error or dropped with the connection
redis-benchmark -h 127.0.0.2 -p "$pr" -c 16 -n 1000000 -r 1000 -t set -q >/dev/null 2>&1 &
bench=$!
sleep 1
kill -TERM "${CLUSTER_PIDS[2]}"
if wait_for 30000 cluster_gone "${CLUSTER_PIDS[2]}"; then
	wait "${CLUSTER_PIDS[2]}"
	check "SIGTERM with Redis commands in flight: a clean stop" "0" "$?"
else
	not_ok "SIGTERM with Redis commands in flight: a clean stop" "still running after 30 s"
fi
kill "$bench" 2>/dev/null
wait "$bench" 2>/dev/null
if grep -q PANIC "$CLUSTER_BASE/ts2.log"; then
	not_ok "no PANIC in ts2's log" "$(grep -A3 PANIC "$CLUSTER_BASE/ts2.log")"
fi

echo "1..$TAP_N"
