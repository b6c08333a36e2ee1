#!/usr/bin/python3
"""docraft-jepsen's Redis workload (issue 17): registers through RESP.

    redis_workload.py --redis IP:PORT,... --out FILE [--time SEC] [--clients N]
                      [--keys K] [--ops-per-key N] [--seed S]
                      [--timeout-s T] [--final-timeout SEC]

The failover suite's workload, spoken to the tservers' Redis ports instead
of through the routing client, so that the whole Redis path (RESP server,
routing from any tserver to the tablet leader, YEDIS apply, exactly-once
retries) is under the nemeses. The history is docraft-jepsen's format
(HISTORY.md), judged by docraft-jepsen-check's linearizability checker.

Design note.

Registers. Key k of the history is the Redis string key "jr:<k>" (database
0, table redis_0), values 0..4; ops: read 50% (GET; nil = `nil`), write
40% (SET), delete 10% (DEL). Keys rotate like docraft-jepsen's: --keys are
active, one is retired after --ops-per-key ops and replaced by the next key
number. Redis has no compare-and-set, so the history has no cas.

Counters. 20% of the ops are INCR of one of 3 counter keys "jc:<j>"; they
are not in the history (an INCR whose reply was lost cannot be written as
a register op) but checked here: the values the acknowledged INCRs returned
are distinct (an INCR retried after a lost reply must apply once), and the
final value F of a counter satisfies max(acked) <= F and
len(acked) <= F <= len(acked) + unknown (INCRs without a reply). A
violation fails the run (exit 1, and a `# counter` comment line), as does
a run in which no INCR was acknowledged at all.

Processes and connections. Client thread i is process i, then i + N, i + 2N
after each `info` (the old process's op may still apply). Thread i talks to
tserver i mod T and moves to the next tserver after a connection error or
a timeout (--timeout-s, default 15 s: longer than the tserver's own 10 s
for a command, so its `-ERR docraft: ...` replies come first).

Outcomes. GET: a value or nil: ok; anything else: fail (a read changes
nothing). SET/DEL: +OK / an integer: ok; an error reply, a timeout or a
lost connection: info (the write may have been proposed and may still
apply). INCR likewise, counted per counter.

Final phase. At --time the threads stop issuing; then every register key
used is read once more (retried until ok or --final-timeout) and every
counter too. Events are stamped with CLOCK_MONOTONIC ns since time 0 and
flushed to --out every 100 ms, sorted by time; `# time_ns 0 = ...` is
written before the first op (run.sh starts the nemesis on it) and `# end`
after the last.

Exit: 0 when the history is complete and the counters are consistent, 1
otherwise (the reason on stderr), 2 for bad arguments.
"""
import argparse
import random
import socket
import sys
import threading
import time

REG_VALUES = 5
COUNTERS = 3


class RespError(Exception):
    pass


class Conn:
    """One RESP connection: send a command, read one reply."""

    def __init__(self, addr, timeout):
        host, port = addr.rsplit(":", 1)
        self.s = socket.create_connection((host, int(port)), timeout=timeout)
        self.s.settimeout(timeout)
        self.f = self.s.makefile("rb")

    def close(self):
        try:
            self.f.close()
            self.s.close()
        except OSError:
            pass

    def call(self, *args):
        parts = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            parts.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.s.sendall(b"".join(parts))
        return self.reply()

    def line(self):
        ln = self.f.readline()
        if not ln.endswith(b"\r\n"):
            raise ConnectionError("connection closed")
        return ln[:-2]

    def reply(self):
        ln = self.line()
        t, rest = ln[:1], ln[1:]
        if t == b"+":
            return rest
        if t == b"-":
            raise RespError(rest.decode("latin-1"))
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.f.read(n + 2)
            if len(data) != n + 2:
                raise ConnectionError("connection closed")
            return data[:-2]
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        raise ConnectionError("bad reply %r" % ln)


class History:
    def __init__(self, path):
        self.f = open(path, "w")
        self.lock = threading.Lock()
        self.pending = []
        self.t0 = time.monotonic_ns()

    def now(self):
        return time.monotonic_ns() - self.t0

    def ev(self, process, typ, f, key, v="-", v2="-"):
        with self.lock:
            self.pending.append((self.now(), process, typ, f, key, v, v2))

    def comment(self, text):
        with self.lock:
            self.pending.append((self.now(), -1, "#", text, None, None, None))

    def flush(self):
        with self.lock:
            batch, self.pending = self.pending, []
        batch.sort(key=lambda e: (e[0], e[1]))
        for t, p, typ, f, key, v, v2 in batch:
            if typ == "#":
                self.f.write("# %s\n" % f)
            else:
                self.f.write("%d %d %s %s %s %s %s\n" % (t, p, typ, f, key, v, v2))
        self.f.flush()


class Keys:
    """jepsen.independent-style rotation of register keys."""

    def __init__(self, active, per_key):
        self.lock = threading.Lock()
        self.per_key = per_key
        self.active = list(range(active))
        self.uses = [0] * active
        self.next = active

    def pick(self, rnd):
        with self.lock:
            i = rnd.randrange(len(self.active))
            k = self.active[i]
            self.uses[i] += 1
            if self.uses[i] >= self.per_key:
                self.active[i] = self.next
                self.uses[i] = 0
                self.next += 1
            return k


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--redis", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--time", type=int, default=60)
    ap.add_argument("--clients", type=int, default=6)
    ap.add_argument("--keys", type=int, default=5)
    ap.add_argument("--ops-per-key", type=int, default=200)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout-s", type=float, default=15)
    ap.add_argument("--final-timeout", type=int, default=120)
    a = ap.parse_args()
    addrs = [x for x in a.redis.split(",") if x]
    if not addrs or a.time <= 0 or a.clients <= 0 or a.keys <= 0 or a.ops_per_key <= 0:
        print("redis_workload: bad arguments", file=sys.stderr)
        return 2

    # Setup: a first SET creates redis_0 (retried for up to 60 s).
    deadline = time.monotonic() + 60
    while True:
        try:
            c = Conn(addrs[0], a.timeout_s)
            if c.call("SET", "jepsen:setup", "1") == b"OK":
                c.close()
                break
            c.close()
        except (OSError, RespError, ConnectionError) as e:
            if time.monotonic() > deadline:
                print("redis_workload: setup: %s" % e, file=sys.stderr)
                return 1
            time.sleep(0.5)

    h = History(a.out)
    h.f.write("# docraft-jepsen history v1\n")
    h.f.write("# redis=%s workload=redis-registers clients=%d time_s=%d keys=%d ops_per_key=%d "
              "seed=%d timeout_s=%g final_timeout_s=%d\n"
              % (a.redis, a.clients, a.time, a.keys, a.ops_per_key, a.seed, a.timeout_s,
                 a.final_timeout))
    h.f.write("# time_ns 0 = CLOCK_MONOTONIC %d ns = CLOCK_REALTIME %d ns\n"
              % (h.t0, time.time_ns() - (time.monotonic_ns() - h.t0)))
    h.f.flush()

    keys = Keys(a.keys, a.ops_per_key)
    stop = threading.Event()
    stats = {"ok": 0, "fail": 0, "info": 0}
    counters = [{"acked": [], "unknown": 0} for _ in range(COUNTERS)]
    used = set()
    lock = threading.Lock()
    end_at = time.monotonic() + a.time

    def count(kind):
        with lock:
            stats[kind] += 1

    def worker(i):
        rnd = random.Random(a.seed * 1000003 + i)
        process, server, conn = i, i % len(addrs), None
        while time.monotonic() < end_at:
            if conn is None:
                try:
                    conn = Conn(addrs[server], a.timeout_s)
                except OSError:
                    server = (server + 1) % len(addrs)
                    time.sleep(0.2)
                    continue
            # The op: (f, history key or counter, value, Redis command).
            if rnd.random() < 0.2:
                j = rnd.randrange(COUNTERS)
                f, k, v, cmd = "incr", j, "-", ("INCR", "jc:%d" % j)
            else:
                k = keys.pick(rnd)
                with lock:
                    used.add(k)
                r = rnd.random()
                if r < 0.5:
                    f, v, cmd = "read", "-", ("GET", "jr:%d" % k)
                elif r < 0.9:
                    v = rnd.randrange(REG_VALUES)
                    f, cmd = "write", ("SET", "jr:%d" % k, v)
                else:
                    f, v, cmd = "delete", "-", ("DEL", "jr:%d" % k)
                h.ev(process, "invoke", f, k, v)
            try:
                got = conn.call(*cmd)
                outcome = "ok"
            except RespError as e:
                got, outcome = str(e), "error"
            except (OSError, ConnectionError, ValueError) as e:
                # No reply: the op may still apply. Next tserver.
                got, outcome = str(e), "lost"
                conn.close()
                conn = None
                server = (server + 1) % len(addrs)
            if f == "incr":
                with lock:
                    if outcome == "ok":
                        counters[k]["acked"].append(got)
                    else:
                        counters[k]["unknown"] += 1
                count("ok" if outcome == "ok" else "info")
            elif outcome == "ok":
                if f == "read":
                    v = "nil" if got is None else int(got)
                h.ev(process, "ok", f, k, v)
                count("ok")
            elif f == "read":  # a read changes nothing
                h.ev(process, "fail", f, k, v)
                count("fail")
            else:
                h.ev(process, "info", f, k, v)
                count("info")
                process += a.clients
            if outcome != "ok":
                h.comment("process %d %s %s: %s" % (process, f, outcome,
                                                     str(got)[:100].replace("\n", " ")))
        if conn is not None:
            conn.close()

    def writer():
        while not stop.wait(0.1):
            h.flush()
            with lock:
                s = dict(stats)
            print("t=%ds ok=%d fail=%d info=%d" % (h.now() // 10**9, s["ok"], s["fail"], s["info"]),
                  file=sys.stderr, flush=True)

    wt = threading.Thread(target=writer)
    wt.start()
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(a.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    # Final reads: every register used, every counter.
    ok = True
    final_end = time.monotonic() + a.final_timeout
    final_proc = a.clients * 1000000

    def final_get(key):
        server = 0
        while time.monotonic() < final_end:
            try:
                c = Conn(addrs[server % len(addrs)], a.timeout_s)
                try:
                    return True, c.call("GET", key)
                finally:
                    c.close()
            except (OSError, ConnectionError, RespError) as e:
                h.comment("final read of %s: %s" % (key, str(e)[:80].replace("\n", " ")))
                server += 1
                time.sleep(0.5)
        return False, None

    for k in sorted(used):
        h.ev(final_proc, "invoke", "read", k)
        got, v = final_get("jr:%d" % k)
        if got:
            h.ev(final_proc, "ok", "read", k, "nil" if v is None else int(v))
        else:
            h.ev(final_proc, "fail", "read", k)
            print("redis_workload: final read of jr:%d failed" % k, file=sys.stderr)
            ok = False
    for j, cnt in enumerate(counters):
        got, v = final_get("jc:%d" % j)
        acked, unknown = cnt["acked"], cnt["unknown"]
        if not got:
            print("redis_workload: final read of jc:%d failed" % j, file=sys.stderr)
            ok = False
            continue
        final = 0 if v is None else int(v)
        why = []
        if len(set(acked)) != len(acked):
            why.append("an INCR value acknowledged twice")
        if acked and max(acked) > final:
            why.append("an acknowledged INCR (%d) above the final value" % max(acked))
        if not len(acked) <= final <= len(acked) + unknown:
            why.append("final %d outside [%d, %d]" % (final, len(acked), len(acked) + unknown))
        h.comment("counter jc:%d final=%d acked=%d unknown=%d %s"
                  % (j, final, len(acked), unknown, "ok" if not why else "INVALID: " + "; ".join(why)))
        if why:
            print("redis_workload: counter jc:%d: %s" % (j, "; ".join(why)), file=sys.stderr)
            ok = False
    if not any(cnt["acked"] for cnt in counters):
        # Vacuous otherwise: the counters must have been exercised.
        print("redis_workload: no INCR was acknowledged", file=sys.stderr)
        h.comment("counters: no INCR acknowledged")
        ok = False
    stop.set()
    wt.join()
    with lock:
        s = dict(stats)
    h.comment("end ops=%d ok=%d fail=%d info=%d registers=%d"
              % (s["ok"] + s["fail"] + s["info"], s["ok"], s["fail"], s["info"], keys.next))
    h.flush()
    h.f.close()
    print("ops=%d ok=%d fail=%d info=%d duration_s=%.3f counters=%s"
          % (s["ok"] + s["fail"] + s["info"], s["ok"], s["fail"], s["info"], h.now() / 1e9,
             "ok" if ok else "INVALID"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
