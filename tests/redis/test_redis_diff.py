#!/usr/bin/python3
"""The differential test of YEDIS (issue 17): one deterministic script of
Redis commands runs against a real redis-server and against docraft (a
tserver's Redis port), reply by reply, raw (no redis-py reply callbacks,
bytes not str), and every reply that differs is printed with its command.

    test_redis_diff.py DOCRAFT_HOST:PORT[,HOST:PORT...] REDIS_HOST:PORT RESULTS

Run with /usr/bin/python3 (Debian's python3-redis). RESULTS gets one line
per section, `ok<TAB>name` or `not_ok<TAB>name<TAB>mismatch; mismatch...`,
which test_redis_diff.sh turns into TAP. Exit 0 once every section ran.

Design note. Each reply is normalised the same way on both sides: an error
becomes ("error", text) so that error texts compare exactly (redis-py
strips the "ERR " prefix of both alike; WRONGTYPE keeps its prefix), a
simple string like OK stays bytes. Comparison modes, each use commented:
  exact    the default: the replies must be equal;
  set      an array whose order Redis leaves unspecified (SMEMBERS, KEYS,
           HKEYS, HVALS: a multiset) or whose order depends on Redis's
           encoding (HGETALL: compared as a set of field/value pairs);
  ttl      TTL/PTTL: -1 and -2 exactly, otherwise both positive and within
           2 s of each other (the two servers ran the command at different
           instants; no timing assertion beyond that);
  members  SPOP/SRANDMEMBER: random by definition: the same reply shape
           (nil / bulk / array of the same length) and every member one of
           the set's members (given), then the two keys are re-synced;
  kind     replies that are expected to differ in content, compared in
           kind only (INFO, COMMAND COUNT: docraft is not redis-server).
YEDIS-only commands (TS*) run on docraft alone against the replies
YugabyteDB's documentation gives. The connections are spread over the
docraft tservers given, so that routing from any tserver is exercised.
"""
import sys
import time

import redis


def conn(addr):
    host, port = addr.rsplit(":", 1)
    r = redis.Redis(host=host, port=int(port), socket_timeout=20, decode_responses=False)
    # Raw replies: no per-command callbacks (SET -> True, HGETALL -> dict...).
    r.response_callbacks.clear()
    return r


def deep(v):
    """Errors inside arrays (EXEC's replies) as ("error", text) too."""
    if isinstance(v, list):
        return [deep(x) for x in v]
    if isinstance(v, redis.ResponseError):
        return ("error", str(v))
    return v


def norm(fn):
    try:
        return deep(fn())
    except redis.ResponseError as e:
        return ("error", str(e))
    except redis.RedisError as e:  # connection-level: a failure of its own kind
        return ("connection-error", repr(e))


def as_multiset(v):
    if not isinstance(v, list):
        return v
    return sorted(repr(x) for x in v)


def pairs(v):
    if not isinstance(v, list) or len(v) % 2:
        return v
    return sorted(zip(v[0::2], v[1::2]))


def printable(a):
    """One line: the mismatch list is one line per section."""
    s = a.decode("latin-1") if isinstance(a, bytes) else str(a)
    return s.encode("unicode_escape").decode("ascii").replace("\t", " ")


class Dead(Exception):
    """docraft stopped answering: the rest would only time out."""


class Diff:
    def __init__(self, docraft_addrs, redis_addr, results):
        self.docs = [conn(a) for a in docraft_addrs]
        self.real = conn(redis_addr)
        self.n = 0
        self.section = None
        self.mismatches = []
        self.out = open(results, "w")
        self.total_cmds = 0
        self.total_bad = 0
        self.sticky = False  # MULTI...EXEC: one connection
        self.dead_in_a_row = 0

    @property
    def doc(self):
        # A different tserver for every command: any tserver serves any key.
        return self.docs[0 if self.sticky else self.n % len(self.docs)]

    def begin(self, name):
        self.end()
        self.section = name
        self.mismatches = []

    def end(self):
        if self.section is None:
            return
        if self.mismatches:
            self.out.write("not_ok\t%s\t%s\n" % (self.section, " ;; ".join(self.mismatches)[:6000]))
        else:
            self.out.write("ok\t%s\n" % self.section)
        self.out.flush()
        self.section = None

    def bad(self, args, want, got, why=""):
        cmd = " ".join(printable(a) for a in args)
        line = "%s: redis %s, docraft %s%s" % (cmd, printable(repr(want)), printable(repr(got)),
                                               " (" + why + ")" if why else "")
        print("MISMATCH [%s] %s" % (self.section, line), flush=True)
        self.mismatches.append(line)
        self.total_bad += 1

    def both(self, *args):
        self.n += 1
        self.total_cmds += 1
        d = self.doc
        want = norm(lambda: self.real.execute_command(*args))
        got = norm(lambda: d.execute_command(*args))
        self.alive(got)
        return want, got

    def alive(self, got):
        if isinstance(got, tuple) and got[0] == "connection-error":
            self.dead_in_a_row += 1
            if self.dead_in_a_row >= 5:
                raise Dead("5 commands in a row without a connection to docraft: %s" % got[1])
        else:
            self.dead_in_a_row = 0

    def c(self, *args, mode="exact", members=None):
        want, got = self.both(*args)
        if mode == "exact":
            if want != got:
                self.bad(args, want, got)
        elif mode == "set":
            if as_multiset(want) != as_multiset(got):
                self.bad(args, want, got, "as a set")
        elif mode == "pairs":
            if pairs(want) != pairs(got):
                self.bad(args, want, got, "as a set of pairs")
        elif mode == "ttl":
            if not (isinstance(want, int) and isinstance(got, int)):
                if want != got:
                    self.bad(args, want, got)
            elif want < 0 or got < 0:
                if want != got:
                    self.bad(args, want, got, "-1/-2 exactly")
            else:
                slack = 2000 if args[0].upper() == "PTTL" else 2
                if abs(want - got) > slack:
                    self.bad(args, want, got, "within %d" % slack)
        elif mode == "members":
            ok = type(want) is type(got)
            if isinstance(want, list):
                ok = ok and len(want) == len(got) and all(m in members for m in got)
            elif isinstance(got, bytes):
                ok = ok and got in members
            elif want != got:
                ok = False
            if not ok:
                self.bad(args, want, got, "members of %r" % sorted(members))
        elif mode == "kind":
            if type(want) is not type(got):
                self.bad(args, want, got, "same kind of reply")
        return want, got

    def only_doc(self, want, *args, mode="exact"):
        """A YEDIS-only command: docraft's reply against the expected one."""
        self.n += 1
        self.total_cmds += 1
        got = norm(lambda: self.doc.execute_command(*args))
        self.alive(got)
        if mode == "prefix":
            # redis-py strips "ERR " from error texts: "ERR" stands for any
            # error that is not WRONGTYPE (YugabyteDB's texts are its own).
            ok = isinstance(got, tuple) and got[0] == "error" and (
                got[1].startswith(want) if want != "ERR" else not got[1].startswith("WRONGTYPE"))
        else:
            ok = got == want
        if not ok:
            self.bad(args, want, got, "YEDIS expectation")
        return got

    def scan_all(self, r, *extra):
        keys, cursor, rounds = set(), b"0", 0
        while True:
            reply = r.execute_command("SCAN", cursor, *extra)
            cursor, batch = reply[0], reply[1]
            keys.update(batch)
            rounds += 1
            if cursor == b"0" or rounds > 10000:
                return keys

    def scan(self, *extra):
        self.n += 1
        self.total_cmds += 1
        want = norm(lambda: self.scan_all(self.real, *extra))
        got = norm(lambda: self.scan_all(self.doc, *extra))
        if want != got:
            self.bad(("SCAN", "0") + extra, want, got, "until cursor 0, as a set")


def run(d):
    c = d.c
    # A clean start on both: every database of the script empty.
    c("FLUSHALL")

    d.begin("connection and server commands")
    c("PING")
    c("PING", "hello")
    c("PING", "a", "b")  # arity error
    c("ECHO", "bytes \x00\r\n")
    c("ECHO")
    c("SELECT", "0")
    c("SELECT", "16")
    c("SELECT", "x")
    c("SELECT", "-1")
    d.sticky = True  # the name is the connection's
    c("CLIENT", "SETNAME", "diff")
    c("CLIENT", "GETNAME")
    c("CLIENT", "SETNAME", "with space")
    d.sticky = False
    c("COMMAND", "COUNT", mode="kind")  # docraft has fewer commands than redis-server
    c("INFO", mode="kind")  # a bulk on both; contents differ by nature
    info = norm(lambda: d.doc.execute_command("INFO"))
    if not (isinstance(info, bytes) and b"redis_version:" in info):
        d.bad(("INFO",), "a bulk with redis_version:", info)
    # CONFIG GET: docraft exposes no parameter (issue 17: empty), redis-server does.
    got = norm(lambda: d.doc.execute_command("CONFIG", "GET", "maxmemory"))
    if got != []:
        d.bad(("CONFIG", "GET", "maxmemory"), [], got, "docraft: an empty array")
    c("DBSIZE")
    c("NOSUCHCOMMAND", "a", "b")
    c("DBSIZE", "extra")

    d.begin("strings: GET SET and SET's options")
    c("GET", "s")
    c("SET", "s", "v1")
    c("GET", "s")
    c("SET", "s", "v2", "NX")
    c("SET", "s2", "n", "NX")
    c("SET", "s", "v3", "XX")
    c("SET", "nokey", "x", "XX")
    c("GET", "nokey")
    c("SET", "s", "v", "NX", "XX")
    c("SET", "s", "v", "EX", "10", "PX", "100")
    c("SET", "s", "v", "EX", "0")
    c("SET", "s", "v", "EX", "-5")
    c("SET", "s", "v", "EX", "abc")
    c("SET", "s", "v", "PX", "0")
    c("SET", "s", "v", "FOO")
    c("SET", "s")
    c("SET", "s", "v", "EX", "100")
    c("TTL", "s", mode="ttl")
    c("SET", "s", "v4", "KEEPTTL")
    c("TTL", "s", mode="ttl")
    c("SET", "s", "v", "EX", "10", "KEEPTTL")
    c("SET", "s", "v5")
    c("TTL", "s", mode="ttl")
    c("SET", "s", "v", "px", "100000", "xx")  # options are case-insensitive
    c("PTTL", "s", mode="ttl")
    c("GET", "s")
    c("SET", "bin\x00key", b"\x00\xff\r\n")
    c("GET", "bin\x00key")
    c("SET", "empty", "")
    c("GET", "empty")
    c("STRLEN", "empty")
    c("GET")
    c("GET", "a", "b")

    d.begin("strings: SETEX PSETEX SETNX GETSET GETDEL APPEND STRLEN GETRANGE SETRANGE")
    c("SETEX", "se", "100", "v")
    c("TTL", "se", mode="ttl")
    c("SETEX", "se", "0", "v")
    c("SETEX", "se", "-1", "v")
    c("SETEX", "se", "x", "v")
    c("SETEX", "se", "10")
    c("PSETEX", "pse", "100000", "v")
    c("PTTL", "pse", mode="ttl")
    c("PSETEX", "pse", "0", "v")
    c("SETNX", "snx", "1")
    c("SETNX", "snx", "2")
    c("GET", "snx")
    c("GETSET", "snx", "3")
    c("GETSET", "gsnew", "1")
    c("GET", "gsnew")
    c("SETEX", "gsttl", "100", "v")
    c("GETSET", "gsttl", "w")  # GETSET clears the TTL
    c("TTL", "gsttl", mode="ttl")
    c("GETDEL", "snx")
    c("GETDEL", "snx")
    c("EXISTS", "snx")
    c("APPEND", "ap", "abc")
    c("APPEND", "ap", "def")
    c("APPEND", "ap", "")
    c("GET", "ap")
    c("STRLEN", "ap")
    c("STRLEN", "nokey")
    for a, b in [(0, 2), (-3, -1), (0, -1), (2, 1), (-100, 100), (10, 20), (-1, -1), (0, 0)]:
        c("GETRANGE", "ap", str(a), str(b))
    c("GETRANGE", "nokey", "0", "-1")
    c("GETRANGE", "ap", "x", "1")
    c("SETRANGE", "ap", "1", "XY")
    c("GET", "ap")
    c("SETRANGE", "ap", "10", "Z")  # zero-padded
    c("GET", "ap")
    c("SETRANGE", "srnew", "3", "v")
    c("GET", "srnew")
    c("SETRANGE", "srempty", "5", "")  # an empty value: no key created
    c("EXISTS", "srempty")
    c("SETRANGE", "ap", "-1", "x")
    c("SETRANGE", "ap", "x", "x")

    d.begin("strings: INCR INCRBY DECR DECRBY INCRBYFLOAT")
    c("INCR", "n")
    c("INCR", "n")
    c("INCRBY", "n", "10")
    c("INCRBY", "n", "-20")
    c("DECR", "n")
    c("DECRBY", "n", "5")
    c("DECRBY", "n", "-5")
    c("GET", "n")
    c("SET", "n", "abc")
    c("INCR", "n")
    c("SET", "n", " 1")
    c("INCR", "n")
    c("SET", "n", "01")
    c("INCR", "n")
    c("SET", "n", "9223372036854775807")
    c("INCR", "n")
    c("INCRBY", "n", "1")
    c("SET", "n", "-9223372036854775808")
    c("DECR", "n")
    c("DECRBY", "n", "9223372036854775807")
    c("INCRBY", "n", "9223372036854775808")
    c("INCRBY", "n", "1.5")
    c("INCRBY", "n", "x")
    c("DECRBY", "n", "-9223372036854775808")
    c("SET", "n", "5")
    c("SETEX", "nttl", "100", "5")
    c("INCR", "nttl")  # INCR keeps the TTL
    c("TTL", "nttl", mode="ttl")
    c("INCRBYFLOAT", "f", "10.5")
    c("INCRBYFLOAT", "f", "0.1")
    c("INCRBYFLOAT", "f", "-5.6")
    c("INCRBYFLOAT", "f", "5.0e3")
    c("INCRBYFLOAT", "f", "2.0e2")
    c("INCRBYFLOAT", "f", "-5200")
    c("GET", "f")
    c("SET", "f", "3")
    c("INCRBYFLOAT", "f", "1.5")
    c("INCRBYFLOAT", "f", "abc")
    c("INCRBYFLOAT", "f", "inf")
    c("INCRBYFLOAT", "f", "1e400")
    c("SET", "f", "abc")
    c("INCRBYFLOAT", "f", "1")
    c("SET", "f", "1.7976931348623157e308")
    c("INCRBYFLOAT", "f", "1.7976931348623157e308")
    c("INCRBYFLOAT", "f2", "0.0000000001")
    c("INCRBYFLOAT", "f2", "1e-20")
    c("INCR")
    c("INCRBY", "n")

    d.begin("strings: MGET MSET")
    c("MSET", "m1", "a", "m2", "b", "{t}m3", "c", "{t}m4", "d")
    c("MGET", "m1", "m2", "{t}m3", "{t}m4", "nokey", "m1")
    c("MSET", "m1", "a", "m2")
    c("MSET")
    c("MGET")
    c("LPUSH", "mlist", "x")
    c("MGET", "m1", "mlist")  # a wrong type is a nil in MGET
    c("MSET", "mlist", "now a string", "m1", "z")
    c("TYPE", "mlist")
    c("MGET", "mlist", "m1")

    d.begin("keys: DEL EXISTS TYPE")
    c("SET", "k1", "v")
    c("SET", "k2", "v")
    c("EXISTS", "k1", "k2", "k3", "k1")
    c("DEL", "k1", "k3", "k1")
    c("DEL", "k2")
    c("DEL", "k2")
    c("EXISTS", "k1", "k2")
    c("DEL")
    c("EXISTS")
    c("SET", "ts_str", "v")
    c("RPUSH", "t_list", "a")
    c("SADD", "t_set", "a")
    c("ZADD", "t_zset", "1", "a")
    c("HSET", "t_hash", "f", "v")
    for k in ["ts_str", "t_list", "t_set", "t_zset", "t_hash", "nokey"]:
        c("TYPE", k)
    c("TYPE")
    c("DEL", "t_list", "t_set", "t_zset", "t_hash")
    c("EXISTS", "t_list", "t_set", "t_zset", "t_hash")

    d.begin("keys: EXPIRE PEXPIRE EXPIREAT TTL PTTL PERSIST")
    c("SET", "e", "v")
    c("TTL", "e", mode="ttl")
    c("PTTL", "e", mode="ttl")
    c("TTL", "nokey", mode="ttl")
    c("PTTL", "nokey", mode="ttl")
    c("EXPIRE", "e", "100")
    c("TTL", "e", mode="ttl")
    c("PTTL", "e", mode="ttl")
    c("PEXPIRE", "e", "50000")
    c("TTL", "e", mode="ttl")
    c("PERSIST", "e")
    c("PERSIST", "e")
    c("TTL", "e", mode="ttl")
    c("PERSIST", "nokey")
    c("EXPIRE", "nokey", "100")
    c("EXPIRE", "e", "abc")
    c("EXPIRE", "e", "1.5")
    c("PEXPIRE", "e", "x")
    c("EXPIRE", "e")
    c("EXPIREAT", "e", str(int(time.time()) + 1000))
    c("TTL", "e", mode="ttl")
    c("EXPIREAT", "e", "x")
    c("EXPIREAT", "e", "1000")  # in the past: the key is deleted
    c("EXISTS", "e")
    c("SET", "e", "v")
    c("EXPIRE", "e", "-1")  # negative: deleted
    c("GET", "e")
    c("SET", "e", "v")
    c("PEXPIRE", "e", "0")
    c("EXISTS", "e")
    # EXPIRE on every type, then PERSIST on a collection
    c("RPUSH", "el", "a", "b")
    c("HSET", "eh", "f", "v")
    c("SADD", "es", "m")
    c("ZADD", "ez", "1", "m")
    for k in ["el", "eh", "es", "ez"]:
        c("EXPIRE", k, "100")
        c("TTL", k, mode="ttl")
    c("PERSIST", "eh")
    c("TTL", "eh", mode="ttl")
    c("HSET", "ez2", "f", "v")
    c("EXPIRE", "ez2", "100")
    c("HSET", "ez2", "g", "w")  # writing into a collection keeps its TTL
    c("TTL", "ez2", mode="ttl")
    c("HGETALL", "ez2", mode="pairs")

    d.begin("hashes")
    c("HSET", "h", "f1", "v1")
    c("HSET", "h", "f1", "v1b", "f2", "v2", "f3", "v3")
    c("HSET", "h", "f1")
    c("HSET", "h")
    c("HSETNX", "h", "f1", "no")
    c("HSETNX", "h", "f4", "v4")
    c("HGET", "h", "f1")
    c("HGET", "h", "nofield")
    c("HGET", "nokey", "f")
    c("HMSET", "h", "f5", "v5", "f6", "v6")
    c("HMSET", "h", "f5")
    c("HMGET", "h", "f1", "nofield", "f6")
    c("HMGET", "nokey", "a", "b")
    c("HGETALL", "h", mode="pairs")  # field order: Redis's encoding order vs docraft's sorted
    c("HGETALL", "nokey")
    c("HKEYS", "h", mode="set")
    c("HVALS", "h", mode="set")
    c("HLEN", "h")
    c("HLEN", "nokey")
    c("HEXISTS", "h", "f1")
    c("HEXISTS", "h", "zz")
    c("HSTRLEN", "h", "f1")
    c("HSTRLEN", "h", "zz")
    c("HDEL", "h", "f1", "f2", "zz", "f1")
    c("HDEL", "h")
    c("HLEN", "h")
    c("HINCRBY", "h", "cnt", "5")
    c("HINCRBY", "h", "cnt", "-7")
    c("HINCRBY", "h", "cnt", "x")
    c("HINCRBY", "h", "cnt", "1.5")
    c("HINCRBY", "h", "f3", "1")  # v3 is not an integer
    c("HSET", "h", "big", "9223372036854775807")
    c("HINCRBY", "h", "big", "1")
    c("HGET", "h", "cnt")
    c("HDEL", "h", "f3", "f4", "f5", "f6", "cnt", "big")
    c("EXISTS", "h")  # the last field gone: the hash vanishes
    c("TYPE", "h")
    c("HLEN", "h")

    d.begin("sets")
    c("SADD", "s1", "a", "b", "c", "a")
    c("SADD", "s1", "c", "d")
    c("SADD", "s1")
    c("SCARD", "s1")
    c("SCARD", "nokey")
    c("SMEMBERS", "s1", mode="set")  # unordered by definition
    c("SMEMBERS", "nokey")
    c("SISMEMBER", "s1", "a")
    c("SISMEMBER", "s1", "z")
    c("SISMEMBER", "nokey", "z")
    c("SREM", "s1", "a", "z", "a")
    c("SREM", "s1")
    c("SCARD", "s1")
    c("SADD", "snum", "3", "1", "2", "10")
    c("SMEMBERS", "snum", mode="set")
    members = {b"b", b"c", b"d"}
    c("SRANDMEMBER", "s1", mode="members", members=members)
    c("SRANDMEMBER", "s1", "2", mode="members", members=members)
    c("SRANDMEMBER", "s1", "10", mode="members", members=members)  # all, once each
    c("SRANDMEMBER", "s1", "-5", mode="members", members=members)  # repeats allowed
    c("SRANDMEMBER", "s1", "0")
    c("SRANDMEMBER", "nokey")
    c("SRANDMEMBER", "nokey", "3")
    c("SRANDMEMBER", "s1", "x")
    c("SCARD", "s1")
    # SPOP: the members popped differ; re-sync both to the same set after.
    c("SPOP", "s1", mode="members", members=members)
    c("SCARD", "s1")
    c("DEL", "s1")
    c("SADD", "s1", "b", "c", "d")
    c("SPOP", "s1", "2", mode="members", members=members)
    c("SCARD", "s1")
    c("SPOP", "s1", "5", mode="members", members=members)
    c("EXISTS", "s1")  # popped empty: gone
    c("SPOP", "s1")
    c("SPOP", "s1", "2")
    c("SPOP", "s1", "-1")
    c("SPOP", "s1", "x")
    c("SADD", "s2", "only")
    c("SREM", "s2", "only")
    c("EXISTS", "s2")
    c("TYPE", "s2")

    d.begin("sorted sets: ZADD and its flags")
    c("ZADD", "z", "1", "a", "2", "b", "3", "c")
    c("ZADD", "z", "1", "a")
    c("ZADD", "z", "5", "a", "CH")
    c("ZADD", "z", "CH", "5", "a", "6", "d")
    c("ZADD", "z", "NX", "9", "a", "7", "e")
    c("ZADD", "z", "XX", "8", "a", "9", "zz")
    c("ZADD", "z", "XX", "CH", "8", "a")
    c("ZADD", "z", "NX", "XX", "1", "a")
    c("ZADD", "z", "GT", "1", "a")
    c("ZADD", "z", "GT", "CH", "10", "a")
    c("ZADD", "z", "LT", "CH", "20", "a")
    c("ZADD", "z", "LT", "CH", "0.5", "a")
    c("ZADD", "z", "GT", "LT", "1", "a")
    c("ZADD", "z", "GT", "NX", "1", "a")
    c("ZADD", "z", "INCR", "2", "b")
    c("ZADD", "z", "INCR", "2", "b", "1", "c")
    c("ZADD", "z", "NX", "INCR", "2", "b")
    c("ZADD", "z", "XX", "INCR", "2", "nob")
    c("ZADD", "z", "x", "a")
    c("ZADD", "z", "nan", "a")
    c("ZADD", "z", "1")
    c("ZADD", "z", "1", "a", "2")
    c("ZADD", "z", "-inf", "lo", "+inf", "hi", "1e3", "k", "-0.5", "neg", "3.14159", "pi")
    c("ZADD", "z", "inf", "hi")
    c("ZCARD", "z")
    c("ZCARD", "nokey")
    for m in ["a", "b", "lo", "hi", "pi", "k", "neg", "none"]:
        c("ZSCORE", "z", m)
    c("ZSCORE", "nokey", "a")
    c("ZINCRBY", "z", "1.5", "pi")
    c("ZINCRBY", "z", "2", "newm")
    c("ZINCRBY", "z", "x", "pi")
    c("ZINCRBY", "z", "-inf", "hi")  # +inf + -inf: NaN
    c("ZSCORE", "z", "pi")

    d.begin("sorted sets: ranges, ranks, pops")
    c("ZRANGE", "z", "0", "-1")
    c("ZRANGE", "z", "0", "-1", "WITHSCORES")
    c("ZRANGE", "z", "1", "3", "withscores")
    c("ZRANGE", "z", "-3", "-1")
    c("ZRANGE", "z", "5", "2")
    c("ZRANGE", "z", "-100", "100")
    c("ZRANGE", "z", "x", "1")
    c("ZRANGE", "z", "0", "1", "FOO")
    c("ZRANGE", "nokey", "0", "-1")
    c("ZREVRANGE", "z", "0", "-1")
    c("ZREVRANGE", "z", "0", "2", "WITHSCORES")
    c("ZREVRANGE", "z", "-2", "-1")
    for lo, hi in [("-inf", "+inf"), ("1", "5"), ("(1", "5"), ("1", "(5"), ("(1", "(5"),
                   ("5", "1"), ("-inf", "0"), ("(-inf", "(+inf"), ("-1", "1e3"), ("1000", "inf")]:
        c("ZRANGEBYSCORE", "z", lo, hi)
        c("ZREVRANGEBYSCORE", "z", hi, lo)
    c("ZRANGEBYSCORE", "z", "-inf", "+inf", "WITHSCORES")
    c("ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "1", "2")
    c("ZRANGEBYSCORE", "z", "-inf", "+inf", "WITHSCORES", "LIMIT", "2", "3")
    c("ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "0", "-1")
    c("ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "100", "2")
    c("ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "1")
    c("ZREVRANGEBYSCORE", "z", "+inf", "-inf", "WITHSCORES", "LIMIT", "1", "2")
    c("ZRANGEBYSCORE", "z", "x", "1")
    c("ZRANGEBYSCORE", "z", "1", "(x")
    c("ZRANGEBYSCORE", "nokey", "-inf", "+inf")
    for m in ["lo", "a", "hi", "none"]:
        c("ZRANK", "z", m)
    c("ZRANK", "nokey", "a")
    c("ZREM", "z", "lo", "none", "lo")
    c("ZREM", "z")
    c("ZCARD", "z")
    c("ZPOPMIN", "z")
    c("ZPOPMIN", "z", "2")
    c("ZPOPMAX", "z")
    c("ZPOPMAX", "z", "2")
    c("ZPOPMIN", "z", "0")
    c("ZPOPMIN", "z", "-1")
    c("ZPOPMIN", "z", "x")
    c("ZPOPMAX", "nokey")
    c("ZPOPMIN", "z", "100")
    c("EXISTS", "z")  # popped empty: gone
    c("ZCARD", "z")
    c("ZADD", "z1", "1", "only")
    c("ZREM", "z1", "only")
    c("TYPE", "z1")
    # equal scores order by member, bytewise
    c("ZADD", "zeq", "1", "b", "1", "a", "1", "c", "0", "z", "2", "A")
    c("ZRANGE", "zeq", "0", "-1", "WITHSCORES")
    c("ZREVRANGE", "zeq", "0", "-1")
    c("ZRANGEBYSCORE", "zeq", "1", "1")
    c("ZRANK", "zeq", "c")

    d.begin("lists")
    c("LPUSH", "l", "a", "b", "c")
    c("RPUSH", "l", "x", "y")
    c("LPUSH", "l")
    c("LLEN", "l")
    c("LLEN", "nokey")
    c("LRANGE", "l", "0", "-1")
    for a, b in [(0, 0), (1, 2), (-2, -1), (-100, 100), (3, 1), (10, 20), (-1, 0)]:
        c("LRANGE", "l", str(a), str(b))
    c("LRANGE", "l", "x", "1")
    c("LRANGE", "nokey", "0", "-1")
    for i in [0, 1, 4, 5, -1, -5, -6, 100]:
        c("LINDEX", "l", str(i))
    c("LINDEX", "l", "x")
    c("LINDEX", "nokey", "0")
    c("LPOP", "l")
    c("RPOP", "l")
    c("LPOP", "l", "2")
    c("RPOP", "l", "0")
    c("LPOP", "l", "-1")
    c("LPOP", "l", "x")
    c("LRANGE", "l", "0", "-1")
    c("RPOP", "l", "10")
    c("EXISTS", "l")  # popped empty: gone
    c("LPOP", "l")
    c("LPOP", "l", "2")
    c("RPOP", "nokey", "2")
    c("RPUSH", "l2", "1", "2", "3", "4", "5", "6", "7", "8", "9", "10")
    c("LRANGE", "l2", "2", "-3")
    c("LPOP", "l2", "3")
    c("RPOP", "l2", "3")
    c("LLEN", "l2")
    c("LINDEX", "l2", "-1")

    d.begin("WRONGTYPE and arity across types")
    c("SET", "wstr", "v")
    c("RPUSH", "wlist", "a")
    c("SADD", "wset", "a")
    c("ZADD", "wzset", "1", "a")
    c("HSET", "whash", "f", "v")
    for k in ["wlist", "wset", "wzset", "whash"]:
        c("GET", k)
        c("APPEND", k, "x")
        c("STRLEN", k)
        c("INCR", k)
        c("GETRANGE", k, "0", "1")
        c("GETSET", k, "x")
    for k in ["wstr", "wset", "wzset", "whash"]:
        c("LPUSH", k, "x")
        c("RPUSH", k, "x")
        c("LPOP", k)
        c("RPOP", k)
        c("LLEN", k)
        c("LRANGE", k, "0", "-1")
        c("LINDEX", k, "0")
    for k in ["wstr", "wlist", "wzset", "whash"]:
        c("SADD", k, "x")
        c("SREM", k, "x")
        c("SMEMBERS", k)
        c("SISMEMBER", k, "x")
        c("SCARD", k)
        c("SPOP", k)
        c("SRANDMEMBER", k)
    for k in ["wstr", "wlist", "wset", "whash"]:
        c("ZADD", k, "1", "x")
        c("ZREM", k, "x")
        c("ZCARD", k)
        c("ZSCORE", k, "x")
        c("ZRANGE", k, "0", "-1")
        c("ZREVRANGE", k, "0", "-1")
        c("ZRANGEBYSCORE", k, "-inf", "+inf")
        c("ZREVRANGEBYSCORE", k, "+inf", "-inf")
        c("ZRANK", k, "x")
        c("ZINCRBY", k, "1", "x")
        c("ZPOPMIN", k)
        c("ZPOPMAX", k)
    for k in ["wstr", "wlist", "wset", "wzset"]:
        c("HSET", k, "f", "v")
        c("HSETNX", k, "f", "v")
        c("HGET", k, "f")
        c("HMSET", k, "f", "v")
        c("HMGET", k, "f")
        c("HGETALL", k)
        c("HDEL", k, "f")
        c("HEXISTS", k, "f")
        c("HLEN", k)
        c("HKEYS", k)
        c("HVALS", k)
        c("HINCRBY", k, "f", "1")
        c("HSTRLEN", k, "f")
    # SET overwrites any type; the key is a string afterwards
    c("SET", "wlist", "now")
    c("TYPE", "wlist")
    c("GET", "wlist")
    for cmd, n in [("HGET", 1), ("HMGET", 1), ("SISMEMBER", 1), ("ZSCORE", 1), ("LINDEX", 1),
                   ("LRANGE", 2), ("ZRANGE", 1), ("GETRANGE", 2), ("SETRANGE", 1), ("HINCRBY", 1),
                   ("ZINCRBY", 1), ("EXPIRE", 0), ("PEXPIRE", 0), ("EXPIREAT", 0), ("TTL", 1),
                   ("PTTL", 1), ("PERSIST", 1), ("SETEX", 1), ("PSETEX", 1), ("SETNX", 0),
                   ("GETDEL", 1), ("GETSET", 0), ("APPEND", 0), ("STRLEN", 1), ("DECRBY", 0),
                   ("INCRBYFLOAT", 0), ("HSTRLEN", 1), ("HEXISTS", 1), ("SCARD", 1),
                   ("ZCARD", 1), ("ZRANK", 1), ("LLEN", 1), ("TYPE", 1)]:
        # too few arguments (for the first two fixed-arity ones also too many)
        c(cmd, *(["wx"] * n)) if n else c(cmd)
    c("TTL", "a", "b")
    c("LLEN", "a", "b")

    d.begin("databases, DBSIZE, KEYS, SCAN, FLUSHDB, FLUSHALL")
    c("FLUSHDB")
    c("DBSIZE")
    for i in range(30):
        c("SET", "key:%02d" % i, str(i))
    c("HSET", "hash:1", "f", "v")
    c("RPUSH", "list:1", "a")
    c("DBSIZE")
    c("KEYS", "*", mode="set")  # unordered by definition
    c("KEYS", "key:1*", mode="set")
    c("KEYS", "key:?5", mode="set")
    c("KEYS", "*:1", mode="set")
    c("KEYS", "nomatch*")
    d.scan()
    d.scan("MATCH", "key:2*")
    d.scan("COUNT", "3")
    d.scan("MATCH", "*:1", "COUNT", "1000")
    c("SCAN", "0", "COUNT", "0")
    c("SCAN", "x")
    c("SELECT", "3")  # the connections of both sides are now on database 3
    for r in d.docs:
        r.execute_command("SELECT", "3")
    c("DBSIZE")
    c("GET", "key:01")
    c("SET", "key:01", "in db 3")
    c("DBSIZE")
    c("FLUSHDB")
    c("DBSIZE")
    for r in d.docs + [d.real]:
        r.execute_command("SELECT", "0")
    c("GET", "key:01")
    c("DBSIZE")
    c("FLUSHALL")
    c("DBSIZE")
    c("KEYS", "*")
    d.scan()

    d.begin("MULTI EXEC DISCARD")
    d.sticky = True  # a transaction lives on its connection
    c("MULTI")
    c("SET", "{m}a", "1")
    c("INCR", "{m}a")
    c("HSET", "{m}h", "f", "v")
    c("GET", "{m}a")
    c("EXEC")
    c("MULTI")
    c("SET", "{m}a", "2")
    c("DISCARD")
    c("GET", "{m}a")
    c("EXEC")
    c("DISCARD")
    c("MULTI")
    c("MULTI")
    c("DISCARD")
    c("MULTI")
    c("SET", "{m}s", "x")
    c("LPUSH", "{m}s", "x")  # WRONGTYPE inside EXEC: that one fails, the rest run
    c("GET", "{m}s")
    c("EXEC")
    c("MULTI")
    c("GET")  # an arity error while queueing: EXECABORT
    c("SET", "{m}a", "3")
    c("EXEC")
    c("GET", "{m}a")
    # the same through redis-py pipelines (transaction=True wraps in MULTI/EXEC)
    for side, r in [("redis", d.real), ("docraft", d.docs[1 % len(d.docs)])]:
        p = r.pipeline(transaction=True)
        p.set("{p}x", "1").incr("{p}x").rpush("{p}l", "a", "b").lrange("{p}l", 0, -1)
        res = norm(p.execute)
        if side == "redis":
            want = res
        elif res != want:
            d.bad(("pipeline(transaction=True)",), want, res)
    d.sticky = False
    d.end()


def ts_checks(d):
    """YEDIS time series: docraft alone, the replies of YugabyteDB's docs."""
    o = d.only_doc
    d.begin("YEDIS time series (docraft only)")
    o(b"OK", "TSADD", "ts", "1", "one", "2", "two", "3", "three", "4", "four", "5", "five", "6", "six")
    o(b"two", "TSGET", "ts", "2")
    o(None, "TSGET", "ts", "7")
    o(None, "TSGET", "nots", "1")
    o(6, "TSCARD", "ts")
    o(0, "TSCARD", "nots")
    o([b"2", b"two", b"3", b"three", b"4", b"four"], "TSRANGEBYTIME", "ts", "2", "4")
    o([b"3", b"three", b"4", b"four"], "TSRANGEBYTIME", "ts", "(2", "4")
    o([b"3", b"three"], "TSRANGEBYTIME", "ts", "(2", "(4")
    o([b"1", b"one", b"2", b"two", b"3", b"three"], "TSRANGEBYTIME", "ts", "-inf", "3")
    o([b"5", b"five", b"6", b"six"], "TSRANGEBYTIME", "ts", "5", "+inf")
    o([b"4", b"four", b"3", b"three", b"2", b"two"], "TSREVRANGEBYTIME", "ts", "2", "4")
    o([b"4", b"four", b"3", b"three"], "TSREVRANGEBYTIME", "ts", "(2", "4")
    o([b"3", b"three", b"2", b"two"], "TSREVRANGEBYTIME", "ts", "-inf", "3", "LIMIT", "2")
    o([b"5", b"five", b"6", b"six"], "TSLASTN", "ts", "2")
    o("ERR", "TSLASTN", "ts", "0", mode="prefix")
    o("ERR", "TSLASTN", "ts", "-1", mode="prefix")
    o(b"OK", "TSREM", "ts", "2", "4", "100")
    o(4, "TSCARD", "ts")
    o([b"1", b"one", b"3", b"three", b"5", b"five", b"6", b"six"], "TSRANGEBYTIME", "ts", "-inf", "+inf")
    o(b"OK", "TSADD", "ts", "-5", "neg", "3", "THREE")  # negative timestamps; overwrite
    o([b"-5", b"neg", b"1", b"one", b"3", b"THREE"], "TSRANGEBYTIME", "ts", "-inf", "3")
    o("ERR", "TSADD", "ts", "x", "v", mode="prefix")
    o("ERR", "TSADD", "ts", "1", mode="prefix")
    o("ERR", "TSRANGEBYTIME", "ts", "a", "3", mode="prefix")
    o(b"OK", "SET", "tstr", "v")
    o("WRONGTYPE", "TSADD", "tstr", "1", "v", mode="prefix")
    o("WRONGTYPE", "TSGET", "tstr", "1", mode="prefix")
    o("WRONGTYPE", "GET", "ts", mode="prefix")
    o(b"OK", "TSADD", "ts2", "10", "v", "EXPIRE_IN", "100")
    o(b"v", "TSGET", "ts2", "10")
    o(b"OK", "TSREM", "ts2", "10")
    o(0, "TSCARD", "ts2")
    o(0, "EXISTS", "ts2")  # emptied: gone
    o(2, "DEL", "ts", "tstr", "nokey", "ts")  # a key given twice counts once
    d.end()


def main():
    docraft = sys.argv[1].split(",")
    d = Diff(docraft, sys.argv[2], sys.argv[3])
    try:
        run(d)
        ts_checks(d)
    except Dead as e:
        d.end()
        print("stopped: %s" % e)
        return 1
    print("%d commands compared, %d mismatches" % (d.total_cmds, d.total_bad))
    return 0


if __name__ == "__main__":
    sys.exit(main())
