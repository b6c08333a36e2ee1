"""python3-redis (redis-py) against the tserver's Redis front end: run by
test_redis_front.sh with the Redis port of a 3-tserver cluster on
127.0.0.1..3 as argv[1]; prints "ok" when every check held (an assertion
error otherwise). Uses only commands of issue 17 and checks the replies
as redis-py decodes them from real Redis 7."""
import sys

import redis

port = int(sys.argv[1])
rs = [redis.Redis(host="127.0.0.%d" % k, port=port, socket_timeout=30) for k in (1, 2, 3)]
r = rs[0]

assert r.ping() is True
assert r.flushdb() is True

# strings through every tserver
assert r.set("s", "1") is True
assert rs[1].incrby("s", 41) == 42
assert rs[2].get("s") == b"42"
assert r.mset({"m%d" % i: i for i in range(50)}) is True
assert rs[1].mget(["m%d" % i for i in range(50)] + ["none"]) == \
    [str(i).encode() for i in range(50)] + [None]
assert rs[2].exists("m1", "m2", "none", "m1") == 3
assert r.delete("m1", "m2", "none") == 2

# hashes, sets, sorted sets, lists: whatever the engine runs, the front
# end routes (skipped quietly when this build's engine lacks the group)
cmds = {c.decode() if isinstance(c, bytes) else c for c in r.command()}
assert "get" in cmds and "mget" in cmds and "cluster" in cmds, cmds


def engine_has(name):
    return name in cmds


if engine_has("hset"):
    assert rs[1].hset("h", mapping={"a": "1", "b": "2"}) == 2
    assert rs[2].hgetall("h") == {b"a": b"1", b"b": b"2"}
if engine_has("sadd"):
    assert r.sadd("set", "x", "y") == 2
    assert rs[1].smembers("set") == {b"x", b"y"}
if engine_has("zadd"):
    assert r.zadd("z", {"a": 1, "b": 2}) == 2
    assert rs[2].zrange("z", 0, -1, withscores=True) == [(b"a", 1.0), (b"b", 2.0)]
if engine_has("rpush"):
    assert r.rpush("l", "a", "b") == 2
    assert rs[1].lrange("l", 0, -1) == [b"a", b"b"]

# errors
try:
    r.incr("h" if engine_has("hset") else "mget-not-int")
    r.set("mget-not-int", "x")
    r.incr("mget-not-int")
    raise AssertionError("INCR of a hash or a non-number did not fail")
except redis.ResponseError as e:
    assert str(e).startswith("WRONGTYPE") or "not an integer" in str(e), str(e)

# a pipeline (no transaction) across tablets, replies in order
p = rs[1].pipeline(transaction=False)
for i in range(30):
    p.set("p%d" % i, i)
for i in range(30):
    p.get("p%d" % i)
res = p.execute()
assert res == [True] * 30 + [str(i).encode() for i in range(30)], res

# a transaction (MULTI/EXEC) on one hash tag
p = rs[2].pipeline(transaction=True)
p.set("{acct}a", 10).incrby("{acct}a", 5).get("{acct}a").mget("{acct}a", "{acct}b")
assert p.execute() == [True, 15, b"15", [b"15", None]]

# a transaction across tablets is refused; nothing ran
p = r.pipeline(transaction=True)
p.set("tx-a", 1).set("tx-b", 2).set("tx-c", 3).set("tx-d", 4)
try:
    p.execute()
    raise AssertionError("MULTI/EXEC across tablets ran")
except redis.ResponseError as e:
    assert "span several tablets" in str(e), str(e)
assert r.exists("tx-a", "tx-b", "tx-c", "tx-d") == 0

# WATCH is refused
try:
    r.execute_command("WATCH", "x")
    raise AssertionError("WATCH accepted")
except redis.ResponseError as e:
    assert "WATCH is not supported" in str(e), str(e)

# SCAN over every tablet: each key once
names = {("sc%d" % i).encode() for i in range(200)}
p = r.pipeline(transaction=False)
for n in names:
    p.set(n, 1)
p.execute()
seen = list(rs[1].scan_iter(match="sc*", count=13))
assert len(seen) == len(set(seen)) == 200 and set(seen) == names, len(seen)
assert sorted(r.keys("sc*")) == sorted(names)
assert r.dbsize() == len(r.keys("*"))

# CLUSTER
slots = rs[2].cluster("SLOTS") if hasattr(rs[2], "cluster") else rs[2].execute_command("CLUSTER SLOTS")
assert rs[0].execute_command("CLUSTER", "KEYSLOT", "{acct}a") == \
    rs[0].execute_command("CLUSTER", "KEYSLOT", "acct")
info = rs[0].execute_command("CLUSTER", "INFO")
assert b"cluster_state:ok" in (info if isinstance(info, bytes) else str(info).encode())

# one slot, more keys than one request takes: several requests, in order
big = {"{big}k%d" % i: i for i in range(2500)}
assert r.mset(big) is True
assert rs[2].mget(list(big)) == [str(i).encode() for i in range(2500)]
assert rs[1].delete(*big) == 2500

# redis-py's cluster client: INFO's cluster_enabled, CLUSTER SLOTS covering
# every slot, then commands straight to the leaders (never a MOVED)
from redis.cluster import RedisCluster
rc = RedisCluster(host="127.0.0.2", port=port, socket_timeout=30)
assert len(rc.get_nodes()) == 3, rc.get_nodes()
assert rc.set("rc-a", 1) is True and rc.get("rc-a") == b"1"
rc.mset_nonatomic({"rc-%d" % i: i for i in range(20)})
assert rc.mget_nonatomic(["rc-%d" % i for i in range(20)]) == [str(i).encode() for i in range(20)]
p = rc.pipeline()
p.set("{rc}x", 5).incr("{rc}x").get("{rc}x")
assert p.execute() == [True, 6, b"6"]
rc.close()

# many clients of one tserver at once: their single-key commands share
# requests (INFO's batched_commands grows), each still applies once and
# answers its own client; a SET with GET (a long reply) goes alone
import threading


def docraft_info(c):
    return {k: v for k, v in c.info().items() if k.startswith("batch")}


before = docraft_info(rs[1])
errors = []


def worker(w):
    c = redis.Redis(host="127.0.0.2", port=port, socket_timeout=30)
    try:
        for i in range(100):
            c.incr("batched-counter")
            assert c.set("bw%d" % w, i) is True
            assert c.get("bw%d" % w) == str(i).encode()
            assert c.set("bw%d" % w, "g%d" % i, get=True) == str(i).encode()
            assert c.hset("bh", "w%d" % w, i) in (0, 1)
    except Exception as e:  # reported below: an assertion in a thread is silent
        errors.append(repr(e))
    finally:
        c.close()


ts = [threading.Thread(target=worker, args=(w,)) for w in range(16)]
for t in ts:
    t.start()
for t in ts:
    t.join()
assert not errors, errors
assert r.get("batched-counter") == b"1600"
assert r.hgetall("bh") == {("w%d" % w).encode(): b"99" for w in range(16)}
after = docraft_info(rs[1])
assert after["batched_requests"] > before["batched_requests"], (before, after)
assert after["batched_commands"] >= after["batched_requests"] * 2, after

# the largest value the protocol takes (4 MiB, DocDB's largest) is stored
# and read back whole: its entry passes the 4 MiB group-commit cap alone
largest = bytes(range(256)) * (4 << 12)
assert len(largest) == 4 << 20
assert r.set("largest", largest) is True
assert rs[1].get("largest") == largest
try:
    r.append("largest", b"x")
    raise AssertionError("APPEND past the largest value accepted")
except redis.ResponseError as e:
    assert "exceeds maximum allowed size" in str(e), str(e)
assert r.delete("largest") == 1

# reads of large values shared in one request outgrow one answer (16 MiB):
# the request is refused TOO_BIG and its reads go one by one; every
# client gets its whole value (rounds until the front end shared some)
big_value = b"v" * (3 << 20)  # 8 of them: 24 MiB
assert r.set("big-read", big_value) is True
split_before = docraft_info(rs[1])["batches_split"]
for _ in range(20):
    barrier = threading.Barrier(8)
    got = []

    def reader():
        c = redis.Redis(host="127.0.0.2", port=port, socket_timeout=60)
        try:
            c.ping()
            barrier.wait()
            got.append(c.get("big-read"))
        finally:
            c.close()

    ts = [threading.Thread(target=reader) for _ in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert got == [big_value] * 8, [len(g or b"") for g in got]
    if docraft_info(rs[1])["batches_split"] > split_before:
        break
assert docraft_info(rs[1])["batches_split"] > split_before, "no shared read of 24 MiB formed"
assert r.delete("big-read") == 1

# another database
r2 = redis.Redis(host="127.0.0.3", port=port, db=2, socket_timeout=30)
assert r2.set("s", "db2") is True and r2.get("s") == b"db2" and r.get("s") == b"42"
assert r2.flushdb() is True and r2.dbsize() == 0 and r.get("s") == b"42"

print("ok")
