#!/usr/bin/env bash
# The Redis protocol port of a real docraft-tserver (issue 17), driven by
# Debian's redis-cli (redis-tools) and by raw sockets (python3): PING,
# ECHO, SELECT, CLIENT SETNAME/GETNAME, COMMAND COUNT, CONFIG GET, Redis's
# errors (unknown command, wrong arity), protocol errors closing the
# connection after their reply, pipelines (redis-cli --pipe and raw), and
# the RPC port serving CQL while clients flood the Redis port with garbage.
# Then the flag: explicit address in use (the tserver refuses to start),
# off, and the default IP:6379 (bound, or logged as taken).
#
# One master and one tserver on 127.0.0.1 (../lib/cluster.sh); every
# process is stopped on exit. Needs MASTER, TSERVER, DOCRAFT (meson).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/cluster.sh
. "$here/../lib/cluster.sh"

# shellcheck source=tap.sh
. "$here/tap.sh"
tap_need redis-cli

extra_pids=()
finish() {
	local rc=$?
	for p in "${extra_pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	[ "$FAILED" -ne 0 ] && rc=1
	cluster_down "$rc"
}
trap finish EXIT

pr=$(cluster_free_port 1) || { echo "Bail out! no free port"; exit 1; }
CLUSTER_TSERVER_ARGS=(--redis-address "127.0.0.1:$pr")
cluster_up rediscli 1 || { echo "Bail out! cluster did not start"; exit 1; }
R=(redis-cli -h 127.0.0.1 -p "$pr")

# raw HEX_BYTES_TO_SEND (or @N: N bytes "x"): what the server answers until it closes (10 s at most),
# then "<closed>" when it closed the connection.
raw() {
	python3 - "$pr" "$1" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
arg = sys.argv[2]
s.sendall(b"x" * int(arg[1:]) if arg.startswith("@") else bytes.fromhex(arg))
out = b""
try:
    while True:
        b = s.recv(65536)
        if not b:
            out += b"<closed>"
            break
        out += b
except socket.timeout:
    pass
except ConnectionResetError:
    out += b"<reset>"
sys.stdout.write(out.decode("latin-1").replace("\r\n", "|"))
PY
}
hex() { printf '%b' "$1" | od -An -tx1 | tr -d ' \n'; }

if grep -q "redis: Redis protocol on 127.0.0.1:$pr" "$CLUSTER_BASE/ts1.log"; then
	ok "the tserver logs its Redis address"
else
	not_ok "the tserver logs its Redis address"
fi

check "PING" "PONG" "$("${R[@]}" PING)"
check "PING message" "hello world" "$("${R[@]}" PING "hello world")"
check "ECHO binary-safe" "$(printf 'a\tb')" "$("${R[@]}" ECHO "$(printf 'a\tb')")"
check "SELECT 15" "OK" "$("${R[@]}" SELECT 15)"
check "SELECT 16" "ERR DB index is out of range" "$("${R[@]}" SELECT 16)"
check "SELECT x" "ERR value is not an integer or out of range" "$("${R[@]}" SELECT x)"
check "unknown command" "ERR unknown command 'foo', with args beginning with: 'a' 'b' " \
	"$("${R[@]}" foo a b)"
check "wrong arity" "ERR wrong number of arguments for 'echo' command" "$("${R[@]}" ECHO a b)"
check "wrong arity of a subcommand" "ERR wrong number of arguments for 'config|get' command" \
	"$("${R[@]}" CONFIG GET)"
check "CONFIG GET: empty" "" "$("${R[@]}" CONFIG GET save)"
info=$("${R[@]}" INFO server)
case $info in
*redis_version:7.0.0*"tcp_port:$pr"*) ok "INFO: version, port" ;;
*) not_ok "INFO: version, port" "$info" ;;
esac
ncmd=$("${R[@]}" COMMAND COUNT)
case $ncmd in
[2-9][0-9] | [1-9][0-9][0-9]) ok "COMMAND COUNT: the server's and the engine's ($ncmd)" ;;
*) not_ok "COMMAND COUNT: the server's and the engine's" "got $ncmd" ;;
esac
# one connection: the name stays with it
check "CLIENT SETNAME / GETNAME" "$(printf 'OK\nme')" \
	"$(printf 'CLIENT SETNAME me\nCLIENT GETNAME\n' | "${R[@]}")"
check "the db number stays with the connection" "$(printf 'OK\nOK\nERR DB index is out of range')" \
	"$(printf 'SELECT 2\nSELECT 0\nSELECT 99\n' | "${R[@]}")"

# protocol errors: the reply, then the connection closes (what follows never runs)
check "invalid multibulk length closes" "+PONG|-ERR Protocol error: invalid multibulk length|<closed>" \
	"$(raw "$(hex 'PING\r\n*x\r\nPING\r\n')")"
check "expected \$ closes" "-ERR Protocol error: expected '\$', got ':'|<closed>" \
	"$(raw "$(hex '*1\r\n:1\r\nPING\r\n')")"
check "invalid bulk length closes" "-ERR Protocol error: invalid bulk length|<closed>" \
	"$(raw "$(hex '*1\r\n$4194305\r\n')")"
check "unbalanced quotes close" "-ERR Protocol error: unbalanced quotes in request|<closed>" \
	"$(raw "$(hex 'ECHO "abc\r\nPING\r\n')")"
check "QUIT replies, then closes" "+OK|<closed>" "$(raw "$(hex 'QUIT\r\nPING\r\n')")"
# one byte past the limit, no more: the server has read every byte when it
# closes (unread bytes would make its close a reset that drops the reply)
big=@65537
check "too big inline request closes" "-ERR Protocol error: too big inline request|<closed>" \
	"$(raw "$big")"

# pipelines: raw, both forms mixed, and redis-cli --pipe
check "a raw pipeline keeps its order" "+PONG|\$2|hi|+OK|:$ncmd|+PONG|\$-1|" \
	"$(raw "$(hex 'PING\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\nSELECT 1\nCOMMAND COUNT\r\n*1\r\n$4\r\nPING\r\nCLIENT GETNAME\r\n')" | sed 's/<closed>//')"
pipe_out=$(python3 -c '
import sys
for i in range(5000):
    sys.stdout.write("*2\r\n$4\r\nECHO\r\n$%d\r\n%d\r\n" % (len(str(i)), i))
' | "${R[@]}" --pipe 2>&1)
case $pipe_out in
*"errors: 0, replies: 5000"*) ok "redis-cli --pipe: 5000 replies, no error" ;;
*) not_ok "redis-cli --pipe: 5000 replies, no error" "$pipe_out" ;;
esac

# a garbage flood on the Redis port does not stop the RPC port
python3 - "$pr" >"$CLUSTER_BASE/flood.out" 2>&1 <<'PY' &
import os, random, socket, sys, time
port = int(sys.argv[1])
end = time.time() + 3
conns = 0
while time.time() < end:
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=2)
        conns += 1
        for _ in range(50):
            s.sendall(os.urandom(4096) + b"\r\n")
        s.close()
    except OSError:
        pass
print("connections", conns)
PY
extra_pids+=("$!")
flood=$!
cql=$("$DOCRAFT" --masters "$CLUSTER_MASTERS" --rf 1 --tablets 1 -e \
	"CREATE TABLE redisflood (k int PRIMARY KEY, v text); INSERT INTO redisflood (k, v) VALUES (1, 'during the flood'); SELECT v FROM redisflood WHERE k = 1;" 2>&1)
case $cql in
*"during the flood"*) ok "CQL over the RPC port while the Redis port is flooded" ;;
*) not_ok "CQL over the RPC port while the Redis port is flooded" "$cql" ;;
esac
wait "$flood"
check "still PONG after the flood" "PONG" "$("${R[@]}" PING)"
echo "# flood: $(cat "$CLUSTER_BASE/flood.out")"

# the flag
ts=$CLUSTER_BASE/ts-busy
pt=$(cluster_free_port 1 "$pr")
"$TSERVER" --address "127.0.0.1:$pt" --data "$ts" --redis-address "127.0.0.1:$pr" \
	>"$ts.out" 2>"$ts.log" &
busy=$!
extra_pids+=("$busy")
wait "$busy"
rc=$?
if [ "$rc" -ne 0 ] && grep -q "redis server: listen on 127.0.0.1:$pr" "$ts.log"; then
	ok "an explicit --redis-address in use stops the tserver (exit $rc)"
else
	not_ok "an explicit --redis-address in use stops the tserver" "exit $rc" "$(tail -n 5 "$ts.log")"
fi

# off, and the default on an address of its own
ip=127.0.0.$((RANDOM % 200 + 20))
pt=$(python3 -c "
import socket; s = socket.socket(); s.bind(('$ip', 0)); print(s.getsockname()[1])")
for mode in off default; do
	ts=$CLUSTER_BASE/ts-$mode
	args=(--address "$ip:$pt" --data "$ts")
	[ "$mode" = off ] && args+=(--redis-address off)
	"$TSERVER" "${args[@]}" >"$ts.out" 2>"$ts.log" &
	p=$!
	extra_pids+=("$p")
	if ! wait_for 10000 grep -q "listening on" "$ts.out"; then
		not_ok "--redis-address $mode: the tserver starts" "$(tail -n 5 "$ts.log")"
	elif [ "$mode" = off ]; then
		if grep -q "redis: --redis-address off" "$ts.log" &&
			! redis-cli -h "$ip" -p 6379 PING >/dev/null 2>&1; then
			ok "--redis-address off: no Redis port"
		else
			not_ok "--redis-address off: no Redis port" "$(grep redis "$ts.log")"
		fi
	else
		if grep -q "redis: Redis protocol on $ip:6379" "$ts.log"; then
			check "default: $ip:6379" "PONG" "$(redis-cli -h "$ip" -p 6379 PING)"
			check "without masters, no data commands" \
				"ERR this tserver has no masters: no data commands" \
				"$(redis-cli -h "$ip" -p 6379 GET k)"
		elif grep -q "the Redis protocol port stays off" "$ts.log"; then
			ok "default: $ip:6379 taken, the tserver runs without it"
		else
			not_ok "default: $ip:6379" "$(grep redis "$ts.log")"
		fi
	fi
	kill -TERM "$p"
	wait "$p"
	check "--redis-address $mode: SIGTERM stops it cleanly" "0" "$?"
done

echo "1..$TAP_N"
