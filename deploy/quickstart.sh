#!/usr/bin/env bash
# The main job: installs what is missing, builds, starts a local cluster —
# one master and three tablet servers on 127.0.0.1-3, data and logs under one
# directory — creates the seeds' msgs table (8 tablets, RF 3), writes and
# reads it through the routing client (the docraft CLI), prints the tablets
# and their leaders, and leaves the cluster running.
#
#   ./deploy/quickstart.sh          start (or restart) and run the demo
#   ./deploy/quickstart.sh stop     stop the cluster (data kept)
#   ./deploy/quickstart.sh destroy  stop and remove the data
#   ./deploy/quickstart.sh seeds    only the DocDB seed walk-through (no cluster)
#
# DOCRAFT_HOME (default ./.cluster) holds master/, ts1..3/, logs/ and pids/.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/deps.sh

HOME_DIR=${DOCRAFT_HOME:-$PWD/.cluster}
MASTER=127.0.0.1:7100
TSERVERS=(127.0.0.1:9100 127.0.0.2:9100 127.0.0.3:9100)
BIN=build

stop_cluster() {
	local f pid
	for f in "$HOME_DIR"/pids/*.pid; do
		[ -e "$f" ] || continue
		pid=$(cat "$f")
		if kill -0 "$pid" 2>/dev/null; then
			kill -TERM "$pid" 2>/dev/null || true
		fi
	done
	for f in "$HOME_DIR"/pids/*.pid; do
		[ -e "$f" ] || continue
		pid=$(cat "$f")
		for _ in $(seq 1 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
		rm -f "$f"
	done
}

case "${1:-start}" in
stop)
	stop_cluster
	echo "docraft: cluster stopped (data kept in $HOME_DIR)"
	exit 0
	;;
destroy)
	stop_cluster
	rm -rf "$HOME_DIR"
	echo "docraft: cluster stopped and $HOME_DIR removed"
	exit 0
	;;
seeds)
	docraft_ensure_packages
	echo "docraft: building into $BIN/ ..."
	docraft_build "$BIN" || { echo "docraft: build failed: run 'ninja -C $BIN'" >&2; exit 1; }
	exec "$BIN/src/tools/docraft-seedwalk"
	;;
start) ;;
*)
	echo "usage: $0 [start|stop|destroy|seeds]" >&2
	exit 2
	;;
esac

docraft_ensure_packages
echo "docraft: building into $BIN/ ..."
docraft_build "$BIN" || { echo "docraft: build failed: run 'ninja -C $BIN' to see why" >&2; exit 1; }

stop_cluster
mkdir -p "$HOME_DIR"/{logs,pids}

start() { # name, then the command
	local name=$1
	shift
	nohup "$@" >"$HOME_DIR/logs/$name.log" 2>&1 &
	echo $! >"$HOME_DIR/pids/$name.pid"
}

start master "$BIN/src/master/docraft-master" --address "$MASTER" --data "$HOME_DIR/master"
for i in 1 2 3; do
	start "ts$i" "$BIN/src/tserver/docraft-tserver" --address "${TSERVERS[$((i - 1))]}" \
		--data "$HOME_DIR/ts$i" --masters "$MASTER"
done

cli() { "$BIN/src/tools/docraft" --masters "$MASTER" "$@"; }

echo "docraft: waiting for the master and 3 live tablet servers ..."
live=0
for _ in $(seq 1 100); do
	live=$(cli tservers 2>/dev/null | grep -ci ' yes\| live' || true)
	[ "$live" -ge 3 ] && break
	sleep 0.2
done
if [ "$live" -lt 3 ]; then
	echo "docraft: the cluster did not come up; logs are in $HOME_DIR/logs" >&2
	tail -n 5 "$HOME_DIR"/logs/*.log >&2 || true
	exit 1
fi
cli tservers

echo
echo "docraft: the seeds' msgs table, written and read through the routing client"
cli --tablets 8 --rf 3 -e "DROP TABLE IF EXISTS msgs;
CREATE TABLE msgs (user_id text, msg_id int, msg text, msg_props map<text, text>,
                   PRIMARY KEY ((user_id), msg_id));
INSERT INTO msgs (user_id, msg_id, msg, msg_props)
       VALUES ('user1', 10, 'msg1', {'from' : 'a@b.com', 'subject' : 'hello'});
UPDATE msgs SET msg_props = msg_props + {'read_status' : 'true'}
       WHERE user_id = 'user1', msg_id = 10;
INSERT INTO msgs (user_id, msg_id, msg, msg_props)
       VALUES ('user1', 20, 'msg2', {'from' : 'c@d.com', 'subject' : 'bar'});
INSERT INTO msgs (user_id, msg_id, msg) VALUES ('user2', 1, 'hi');
SELECT * FROM msgs WHERE user_id = 'user1';
DELETE msg_props FROM msgs WHERE user_id = 'user1' AND msg_id = 10;
SELECT * FROM msgs WHERE user_id = 'user1' ORDER BY msg_id DESC;"

echo
echo "docraft: tablets of msgs and their leaders"
for _ in $(seq 1 50); do # leaders reach the master with the next heartbeats
	cli tablets msgs 2>/dev/null | grep -q '(none)' || break
	sleep 0.2
done
cli tablets msgs

echo
echo "docraft: the cluster is running (logs: $HOME_DIR/logs)."
echo "  try:  $BIN/src/tools/docraft --masters $MASTER shell"
echo "  web:  http://${MASTER%:*}:7000/ (the master's pages; /metrics on every server, docs/operations.md)"
echo "  stop: ./deploy/quickstart.sh stop    (or 'destroy' to remove the data)"
