#!/usr/bin/python3
"""Differential run of the sorted set and list commands: the same seeded
random command sequence goes to the engine (yrepl, on a scratch store) and
to a real redis-server (Debian's, 7.0.15, started here on 127.0.0.1 and
stopped at the end); every reply must be the same, in yharness.h's readable
form. Keys of other types and wrong arguments are mixed in, so WRONGTYPE
and the error texts are compared too. TAP output; skipped without
redis-server.

  test_yedis_diff.py YREPL [seed] [commands]
"""
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time


def gen(seed, n):
    r = random.Random(seed)
    scores = ['1', '2', '-1', '0', '-0', '1.5', '-2.5', 'inf', '-inf', '+inf', '1e300', '3',
              'x', '(1', 'nan', '10', '0.1', '0x10', '1e999']
    bounds = ['1', '2', '-1', '0', '(0', '(1', '-inf', '+inf', '(-inf', '1.5', '(2.5', '3',
              'x', 'inf', '(', '1e999', '0x2']
    ints = ['0', '1', '-1', '2', '-2', '3', '5', '-5', '100', '-100', 'x', '01']
    members = [chr(97 + i) + str(j) for i in range(4) for j in range(3)] + ['a', 'b']
    zkeys, lkeys = ['z1', 'z2', 's', 'l1'], ['l1', 'l2', 's', 'z1']

    def zadd():
        flags = [f for f in ['NX', 'XX', 'GT', 'LT', 'CH', 'INCR'] if r.random() < 0.15]
        pairs = []
        for _ in range(1 if r.random() < .5 else r.randint(1, 4)):
            pairs += [r.choice(scores), r.choice(members)]
        if r.random() < .03:
            pairs = pairs[:-1]
        return ['ZADD', r.choice(zkeys)] + flags + pairs

    def zrange():
        c = r.choice(['ZRANGE', 'ZREVRANGE', 'ZRANGEBYSCORE', 'ZREVRANGEBYSCORE'])
        byscore = c.endswith('SCORE') or (c == 'ZRANGE' and r.random() < .4)
        rng = [r.choice(bounds), r.choice(bounds)] if byscore else [r.choice(ints), r.choice(ints)]
        opts = []
        if c == 'ZRANGE' and byscore and r.random() < .8:
            opts.append('BYSCORE')
        if c == 'ZRANGE' and r.random() < .3:
            opts.append('REV')
        if r.random() < .4:
            opts.append('WITHSCORES')
        if r.random() < .3:
            opts += ['LIMIT', r.choice(ints), r.choice(ints)]
        if r.random() < .02:
            opts.append('FOO')
        return [c, r.choice(zkeys)] + rng + opts

    ops = [
        lambda: ['ZREM', r.choice(zkeys)] + r.sample(members, r.randint(1, 3)),
        lambda: ['ZCARD', r.choice(zkeys)],
        lambda: ['ZSCORE', r.choice(zkeys), r.choice(members)],
        lambda: [r.choice(['ZRANK', 'ZREVRANK']), r.choice(zkeys), r.choice(members)],
        lambda: ['ZINCRBY', r.choice(zkeys), r.choice(scores), r.choice(members)],
        lambda: [r.choice(['ZPOPMIN', 'ZPOPMAX']), r.choice(zkeys)] +
        ([r.choice(ints)] if r.random() < .6 else []),
        lambda: [r.choice(['LPUSH', 'RPUSH', 'LPUSHX', 'RPUSHX']), r.choice(lkeys)] +
        [r.choice(members) for _ in range(r.randint(1, 4))],
        lambda: [r.choice(['LPOP', 'RPOP']), r.choice(lkeys)] +
        ([r.choice(ints)] if r.random() < .5 else []),
        lambda: ['LLEN', r.choice(lkeys)],
        lambda: ['LRANGE', r.choice(lkeys), r.choice(ints), r.choice(ints)],
        lambda: ['LINDEX', r.choice(lkeys), r.choice(ints)],
        lambda: [r.choice(['TYPE', 'EXISTS']), r.choice(zkeys + lkeys)],
        lambda: ['DEL', r.choice(['z1', 'z2', 'l1', 'l2'])] if r.random() < .2 else
        ['SET', 's', 'v'],
    ]
    out = []
    for _ in range(n):
        x = r.random()
        out.append(zadd() if x < .2 else zrange() if x < .3 else r.choice(ops)())
    return out


def fmt_bulk(b):
    s = ''.join(chr(c) if 0x20 <= c <= 0x7e and c not in (0x22, 0x5c) else '\\x%02x' % c
                for c in b)
    return '"' + s + '"'


def read_reply(f):
    """One RESP2 reply from f, in yharness.h's readable form."""
    line = f.readline()
    if not line:
        raise EOFError('redis-server closed the connection')
    t, body = line[:1], line[1:-2]
    if t == b'+':
        return body.decode()
    if t == b'-':
        return '(error) ' + body.decode()
    if t == b':':
        return body.decode()
    if t == b'$':
        n = int(body)
        if n < 0:
            return 'nil'
        data = f.read(n + 2)[:n]
        return fmt_bulk(data)
    if t == b'*':
        n = int(body)
        if n < 0:
            return 'nil'
        return '[' + ', '.join(read_reply(f) for _ in range(n)) + ']'
    raise ValueError('unexpected reply %r' % line)


def encode(cmd):
    return b'*%d\r\n' % len(cmd) + b''.join(
        b'$%d\r\n%s\r\n' % (len(a), a.encode()) for a in cmd)


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def start_redis(tmp):
    for _ in range(5):
        port = free_port()
        p = subprocess.Popen(['redis-server', '--port', str(port), '--bind', '127.0.0.1',
                              '--save', '', '--appendonly', 'no', '--dir', tmp],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and p.poll() is None:
            try:
                return p, socket.create_connection(('127.0.0.1', port), timeout=10)
            except OSError:
                time.sleep(0.05)
        p.kill()
        p.wait()
    raise RuntimeError('redis-server did not start')


def main():
    yrepl = sys.argv[1]
    seed = int(sys.argv[2]) if len(sys.argv) > 2 else int(os.environ.get('TEST_SEED', '1'))
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 3000
    print('1..1')
    if shutil.which('redis-server') is None:
        print('ok 1 # SKIP redis-server is not installed')
        return 0
    cmds = gen(seed, n)
    ours = subprocess.run([yrepl], input='\n'.join(' '.join(c) for c in cmds) + '\n',
                          capture_output=True, text=True, timeout=120, check=True)
    ours = [l for l in ours.stdout.split('\n')
            if l != '' and not l.startswith(('#', 'ok ', '1..'))]
    tmp = tempfile.mkdtemp(prefix='yedis_diff')
    p, sock = start_redis(tmp)
    try:
        f = sock.makefile('rb')
        bad = []
        for i, c in enumerate(cmds):
            sock.sendall(encode(c))
            theirs = read_reply(f)
            if i >= len(ours) or ours[i] != theirs:
                bad.append((i, c, theirs, ours[i] if i < len(ours) else '(no reply)'))
        sock.close()
    finally:
        p.terminate()
        p.wait(timeout=10)
        shutil.rmtree(tmp, ignore_errors=True)
    for i, c, theirs, mine in bad[:10]:
        print('# %d: %s\n#   redis-server: %s\n#   docraft:      %s' % (i, ' '.join(c), theirs,
                                                                       mine))
    print('%s 1 - %d commands (seed %d), %d replies differ' % (
        'not ok' if bad else 'ok', n, seed, len(bad)))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
