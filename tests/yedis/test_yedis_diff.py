#!/usr/bin/python3
"""Differential test of the hash and set commands: the same random command
streams (hashes, sets, and the SET / DEL / TYPE / EXISTS they meet) run
through the engine on a real store (yrepl, argv[1]) and through a real
redis-server (Debian's, on a unix socket in a temp dir: no TCP port),
and every reply must be the same. Fields and members come back in byte
order from docraft, in Redis's own order from Redis (unspecified): the
replies of HGETALL, HKEYS, SMEMBERS and of SPOP / SRANDMEMBER with a
count that takes every member are compared in byte order, HVALS's values
as sorted lists. SPOP and
SRANDMEMBER appear only in forms whose result does not depend on the
random draw (a count of 0, or at least the set's size; errors), so the
two stores stay equal. TAP output; skipped without redis-server."""
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

STREAMS = 4
COMMANDS = 1500  # per stream

KEYS = ['k0', 'k1', 'k2', 'k3']
FIELDS = ['f0', 'f1', 'f2', 'f3', 'f4', '']
VALUES = ['1', '-3', 'abc', '2.5', '10', '9223372036854775807', '0', '1e3', 'x', '']
UNORDERED = {'HKEYS', 'SMEMBERS', 'SPOP', 'SRANDMEMBER'}


def command(rnd):
    k = rnd.choice(KEYS)
    f = lambda: rnd.choice(FIELDS)
    v = lambda: rnd.choice(VALUES)
    c = rnd.choice(['HSET', 'HSET', 'HMSET', 'HSETNX', 'HGET', 'HMGET', 'HGETALL', 'HDEL',
                    'HDEL', 'HEXISTS', 'HLEN', 'HKEYS', 'HVALS', 'HINCRBY', 'HINCRBYFLOAT',
                    'HSTRLEN', 'SADD', 'SADD', 'SREM', 'SREM', 'SMEMBERS', 'SISMEMBER',
                    'SMISMEMBER', 'SCARD', 'SPOP', 'SRANDMEMBER', 'SET', 'DEL', 'TYPE',
                    'EXISTS'])
    if c in ('HSET', 'HMSET'):
        return [c, k] + sum([[f(), v()] for _ in range(rnd.randint(1, 3))], [])
    if c == 'HSETNX':
        return [c, k, f(), v()]
    if c in ('HGET', 'HEXISTS', 'HSTRLEN', 'SISMEMBER'):
        return [c, k, f()]
    if c in ('HMGET', 'HDEL', 'SADD', 'SREM', 'SMISMEMBER'):
        return [c, k] + [f() for _ in range(rnd.randint(1, 3))]
    if c == 'HINCRBY':
        return [c, k, f(), rnd.choice(['1', '-2', 'x', '9223372036854775807', '100', '+1'])]
    if c == 'HINCRBYFLOAT':
        return [c, k, f(), rnd.choice(['1.5', '-0.25', 'x', '1e3', '0.1', 'inf', '0x10'])]
    if c == 'SET':
        return [c, k, v()]
    if c == 'SPOP':
        return [c, k] + rnd.choice([['0'], ['10'], ['-1'], ['x'], ['1', '2']])
    if c == 'SRANDMEMBER':
        return [c, k] + rnd.choice([['0'], ['10'], ['x'], ['1', '2']])
    return [c, k]


def readable(r):
    """A parsed RESP value in yharness.h's readable form."""
    kind, val = r
    if kind == '+':
        return val.decode()
    if kind == '-':
        return '(error) ' + val.decode()
    if kind == ':':
        return val.decode()
    if kind == '$':
        if val is None:
            return 'nil'
        return '"' + ''.join(chr(c) if 0x20 <= c <= 0x7e and c not in b'"\\' else '\\x%02x' % c
                             for c in val) + '"'
    if val is None:
        return 'nil'
    return '[' + ', '.join(readable(x) for x in val) + ']'


def read_reply(f):
    line = f.readline()
    if not line:
        raise EOFError('redis-server closed the connection')
    t, rest = line[:1], line[1:-2]
    if t == b'*':
        n = int(rest)
        return ('*', [read_reply(f) for _ in range(n)] if n >= 0 else None)
    if t == b'$':
        n = int(rest)
        return ('$', f.read(n + 2)[:-2] if n >= 0 else None)
    return (t.decode(), rest)


def in_byte_order(cmd, r):
    """Redis's reply of an unordered command, sorted as docraft lists."""
    if r[0] != '*' or r[1] is None:
        return r
    name = cmd[0].upper()
    if name == 'HGETALL':
        pairs = sorted(zip(r[1][0::2], r[1][1::2]), key=lambda p: p[0][1])
        return ('*', [x for p in pairs for x in p])
    if name in UNORDERED:
        return ('*', sorted(r[1], key=lambda x: x[1]))
    return r


def sorted_values(text):
    """A readable array of bulks with its elements sorted (HVALS)."""
    if not text.startswith('['):
        return text
    return '[' + ', '.join(sorted(re.findall(r'"(?:[^"\\]|\\x[0-9a-f]{2})*"', text))) + ']'


def main():
    yrepl = sys.argv[1]
    server = shutil.which('redis-server')
    if server is None:
        print('1..0 # SKIP redis-server is not installed')
        return 0
    print('1..%d' % STREAMS)
    tmp = tempfile.mkdtemp(prefix='ydiff-')
    sock = os.path.join(tmp, 'redis.sock')
    proc = subprocess.Popen([server, '--port', '0', '--unixsocket', sock, '--save', '',
                             '--appendonly', 'no', '--dir', tmp],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    failed = 0
    try:
        deadline = time.monotonic() + 20
        while not os.path.exists(sock):
            if time.monotonic() > deadline or proc.poll() is not None:
                print('Bail out! redis-server did not start')
                return 1
            time.sleep(0.05)
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(30)
        s.connect(sock)
        f = s.makefile('rb')
        for stream in range(STREAMS):
            rnd = random.Random(1000 + stream)
            cmds = [command(rnd) for _ in range(COMMANDS)]
            text = ''.join(' '.join(w if w else '""' for w in c) + '\n' for c in cmds)
            ours = subprocess.run([yrepl, 'repl'], input=text, capture_output=True, text=True,
                                  timeout=120).stdout.split('\n')
            ours = [l for l in ours if not l.startswith(('1..', 'ok ', 'not ok', '#'))]
            s.sendall(b'*1\r\n$8\r\nFLUSHALL\r\n')
            read_reply(f)
            diffs = []
            for i, c in enumerate(cmds):
                s.sendall(b'*%d\r\n' % len(c) +
                          b''.join(b'$%d\r\n%s\r\n' % (len(w), w.encode()) for w in c))
                want = readable(in_byte_order(c, read_reply(f)))
                got = ours[i] if i < len(ours) else '<no reply>'
                if c[0] == 'HVALS':
                    want, got = sorted_values(want), sorted_values(got)
                if got != want:
                    diffs.append('#   %d: %s\n#     redis:   %s\n#     docraft: %s'
                                 % (i, ' '.join(c), want, got))
            if diffs:
                failed += 1
                print('not ok %d - stream %d: %d of %d replies differ' %
                      (stream + 1, stream, len(diffs), len(cmds)))
                print('\n'.join(diffs[:10]))
            else:
                print('ok %d - stream %d: %d commands, the same replies' %
                      (stream + 1, stream, len(cmds)))
        s.close()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
