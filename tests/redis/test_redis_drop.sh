#!/usr/bin/env bash
# A dropped table never acknowledges a write after DROP TABLE / FLUSHDB
# has returned (issue 17, src/master/ddl.c's DropTable), on a real
# 3-tserver cluster (RF 3) with a short --drop-timeout-ms:
#   (a) FLUSHDB through ts1 while ts3's client cache still names the
#       dropped table: writes through ts3 (stale) and ts1 right after it
#       returns, then, once the dropped tablets are purged, every
#       acknowledged key reads back;
#   (b) CQL: DROP TABLE, then CREATE TABLE again, while a second shell with
#       a stale cache inserts from the moment DROP TABLE returned: every
#       acknowledged row is in the new table, the others were refused;
#   (c) DropTable with one tserver stopped answers (a majority deleted);
#       with two stopped it answers the clear error after the deadline.
#   (d) TSERVER_WRITE/READ/SCAN on a Redis tablet is refused by the
#       tablet server itself (not only by the client): see test_redis_route.
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

# shellcheck disable=SC2034 # read by cluster_up
CLUSTER_MASTER_ARGS=(--drop-timeout-ms 1500 --log-level info)
redis_cluster_up redisdrop 3
cql() { timeout 60 "$DOCRAFT" --masters "$CLUSTER_MASTERS" "$@"; }
purged() { # N: the master has purged at least N dropped tablets
	[ "$(grep -c 'dropped tablet .* purged' "$CLUSTER_BASE/master.log")" -ge "$1" ]
}
N=300

# ---- (a) FLUSHDB with a stale cache on ts3 ----
r 1 SET warm1 a >/dev/null; r 3 SET warm3 b >/dev/null
check "caches of ts1 and ts3 warm on db 0" "b a" "$(r 1 GET warm3) $(r 3 GET warm1)"
base=$(grep -c 'dropped tablet .* purged' "$CLUSTER_BASE/master.log")
t0=$(date +%s%3N)
flush=$(r 1 FLUSHDB)
echo "# FLUSHDB (DropTable waiting for the deletes) took $(($(date +%s%3N) - t0)) ms"
# right after FLUSHDB returned: ts3 (stale) and ts1 in parallel
for i in $(seq 1 $N); do echo "SET s3:$i v$i"; done | r 3 >"$CLUSTER_BASE/a3.out" 2>&1 &
p3=$!
for i in $(seq 1 $N); do echo "SET s1:$i v$i"; done | r 1 >"$CLUSTER_BASE/a1.out" 2>&1
wait "$p3"
check "FLUSHDB answered OK" "OK" "$flush"
wait_for 30000 purged $((base + 3)) || not_ok "the dropped tablets were not purged in 30 s"
lost=0 acked=0
for ts in 3 1; do
	mapfile -t replies <"$CLUSTER_BASE/a$ts.out"
	keys=()
	for i in $(seq 1 $N); do
		[ "${replies[$((i - 1))]:-}" = OK ] && keys+=("s$ts:$i")
	done
	acked=$((acked + ${#keys[@]}))
	[ ${#keys[@]} -gt 0 ] || continue
	got=$(r 2 MGET "${keys[@]}")
	j=0
	while IFS= read -r v; do
		k=${keys[$j]}
		[ "$v" = "v${k#s"$ts":}" ] || lost=$((lost + 1))
		j=$((j + 1))
	done <<<"$got"
done
check "every SET acknowledged after FLUSHDB reads back ($acked acknowledged)" "0" "$lost"
[ "$acked" -gt 0 ] || not_ok "no SET was acknowledged at all"

# ---- (b) CQL DROP TABLE with a stale second client ----
cql -e "CREATE TABLE cq (k int PRIMARY KEY, v int);" >/dev/null || not_ok "create cq"
mkfifo "$CLUSTER_BASE/shell.in"
cql shell <"$CLUSTER_BASE/shell.in" >"$CLUSTER_BASE/b.out" 2>&1 &
pb=$!
exec 3>"$CLUSTER_BASE/shell.in"
echo "INSERT INTO cq (k, v) VALUES (0, 0); SELECT v FROM cq WHERE k = 0;" >&3
wait_for 20000 grep -q '^ *0 *$' "$CLUSTER_BASE/b.out" ||
	not_ok "the second shell did not read its row" "$(cat "$CLUSTER_BASE/b.out")"
drop=$(cql -e "DROP TABLE cq;" 2>&1)
# right after DROP TABLE returned: the stale shell inserts, the table is
# created again meanwhile, and the shell goes on inserting
for i in $(seq 1 50); do echo "INSERT INTO cq (k, v) VALUES ($i, $i);"; done >&3
create=$(cql -e "CREATE TABLE cq (k int PRIMARY KEY, v int);" 2>&1)
for i in $(seq 51 100); do echo "INSERT INTO cq (k, v) VALUES ($i, $i);"; done >&3
exec 3>&-
wait "$pb"
check "DROP TABLE, then CREATE TABLE again" "" "$drop$create"
# the shell shows each refused statement with a caret line under it;
# every other INSERT was acknowledged
refused=$(grep -c '^ *\^' "$CLUSTER_BASE/b.out")
rows=$(cql -e "SELECT k FROM cq;" 2>&1 | grep -cE '^ *[0-9]+ *$')
check "every acknowledged INSERT is in the new table (100 - $refused refused)" \
	"$((100 - refused))" "$rows"

# ---- (c) DropTable with tservers stopped ----
cql -e "CREATE TABLE c1 (k int PRIMARY KEY, v int); CREATE TABLE c2 (k int PRIMARY KEY, v int);" \
	>/dev/null || not_ok "create c1, c2"
kill -TERM -- "-${CLUSTER_PIDS[2]}"
wait_for 15000 cluster_gone "${CLUSTER_PIDS[2]}" || true
out=$(cql -e "DROP TABLE c1;" 2>&1)
check "DROP TABLE with one of three tservers stopped" "" "$out"
kill -TERM -- "-${CLUSTER_PIDS[3]}"
wait_for 15000 cluster_gone "${CLUSTER_PIDS[3]}" || true
out=$(cql --timeout 4000 -e "DROP TABLE c2;" 2>&1)
case $out in
*"not yet deleted on a majority"*) ok "DROP TABLE with two of three stopped: the clear error" ;;
*) not_ok "DROP TABLE with two of three stopped: the clear error" "got: $out" ;;
esac

echo "1..$TAP_N"
