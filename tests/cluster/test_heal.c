/* A cluster that heals itself (issue 15): the master's replica moves on
 * real processes (tests/lib/cluster.h), every master started with
 * --tserver-failed-after-s FAILED_S and a table "bench" loaded with
 * `docraft bench` (RF 3).
 *
 *   rereplicate      4 tservers, 6 tablets: kill -9 one; every tablet gets
 *                    back to 3 live voters on the 3 others (the catalog and
 *                    each leader's Raft configuration agree, checksums
 *                    agree); restarted, the killed tserver deletes the
 *                    replicas it lost (their directories go).
 *   no_majority      4 tservers, 1 tablet: kill -9 two of its three
 *                    replicas' tservers: for 3 x FAILED_S nothing moves (its
 *                    replicas stay, no move in ClusterStatus) and the master
 *                    says why ("not a majority").
 *   target_dies      5 tservers, 1 tablet: kill -9 one replica's tserver;
 *                    as soon as a move is in its adding step, kill -9 its
 *                    target: the move rolls back and the tablet is
 *                    re-replicated on the servers left.
 *   master_failover  3 masters, 4 tservers, 6 tablets: kill -9 a tserver;
 *                    while a move is adding, SIGSTOP its target and kill -9
 *                    the master leader; SIGCONT the target once another
 *                    master leads: every move completes or rolls back under
 *                    the new leader, and the catalog, the leaders'
 *                    configurations and the checksums agree at the end.
 *   master_failover_rollback  the same with the target paused 10 s more:
 *                    the new leader rolls the move back.
 *   drain            4 tservers, 6 tablets: MASTER_DRAIN of an unknown
 *                    tserver is NOT_FOUND; of tserver 1: it ends drained
 *                    (no replica, no leader), every tablet at 3 live
 *                    voters; undrain: replicas move back (rebalance) until
 *                    loads differ by at most one.
 *   zones            6 tservers in 3 zones (--placement c.r.zK: 3 in z1,
 *                    2 in z2, 1 in z3), 6 tablets: every tablet's 3
 *                    replicas are in 3 zones (GetTable and ListTServers),
 *                    so z3's tserver holds all 6; kill -9 a z2 tserver:
 *                    healed, still 3 zones each (every replacement on the
 *                    other z2 tserver, though z1's are less loaded); drain
 *                    a z1 tserver: the same.
 *
 * HEAL_MEASURE_MB=N (opt-in): rereplicate loads about N MiB instead of a
 * few hundred KiB and notes the time to heal and the copy rate.
 * Every wait is bounded and fails only when its condition never comes.
 * MASTER, TSERVER and DOCRAFT name the executables (meson sets them). */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/internal.h"
#include "common/buf.h"
#include "docraft.pb-c.h"
#include "docraft/docraft.h"
#include "proc.h"
#include "rpc.pb-c.h"
#include "test.h"

#define NT 5
#include "cluster.h"

#define TABLE "bench"
#define FAILED_S "4"
#define HEAL_MS 120000
/* 20 MiB: a move's adding step lasts long enough (its checkpoint copy,
 * ~1 s per 8 MiB here) for a test polling ClusterStatus to catch it. */
#define WIDE_KEYS "1280"
#define WIDE_VSIZE "16384"

/* ---- master and tserver calls ---------------------------------------------------------------- */

/* Calls the master (method with req); its reply unpacked as d, NULL on
 * any error. */
static void *master_get(uint16_t method, const ProtobufCMessage *req,
			const ProtobufCMessageDescriptor *d)
{
	struct buf reply = BUF_INIT;
	void *r = NULL;
	if (client_master_call(C.client, method, req, &reply) == 0)
		r = protobuf_c_message_unpack(d, NULL, reply.len, reply.data);
	buf_free(&reply);
	return r;
}

static Docraft__ClusterStatusResponse *cluster_status(void)
{
	Docraft__ClusterStatusRequest req = DOCRAFT__CLUSTER_STATUS_REQUEST__INIT;
	return master_get(DOCRAFT__METHOD__MASTER_CLUSTER_STATUS, &req.base,
			  &docraft__cluster_status_response__descriptor);
}

static Docraft__GetTableResponse *get_table(void)
{
	Docraft__GetTableRequest req = DOCRAFT__GET_TABLE_REQUEST__INIT;
	req.name = (char *)TABLE;
	return master_get(DOCRAFT__METHOD__MASTER_GET_TABLE, &req.base,
			  &docraft__get_table_response__descriptor);
}

static Docraft__ListTServersResponse *list_tservers(void)
{
	Docraft__ListTServersRequest req = DOCRAFT__LIST_TSERVERS_REQUEST__INIT;
	return master_get(DOCRAFT__METHOD__MASTER_LIST_TSERVERS, &req.base,
			  &docraft__list_tservers_response__descriptor);
}

static int drain_call(const char *tserver, bool undrain, Docraft__DrainResponse **out)
{
	Docraft__DrainRequest req = DOCRAFT__DRAIN_REQUEST__INIT;
	struct buf reply = BUF_INIT;
	int rv;
	req.tserver = (char *)tserver;
	req.undrain = undrain;
	*out = NULL;
	rv = client_master_call(C.client, DOCRAFT__METHOD__MASTER_DRAIN, &req.base, &reply);
	if (rv == 0)
		*out = docraft__drain_response__unpack(NULL, reply.len, reply.data);
	buf_free(&reply);
	return rv;
}

/* The report of tablet id by the replica at addr (NULL if none). */
static Docraft__TabletReport *tablet_report(const char *id, const char *addr)
{
	Docraft__TabletStatusRequest req = DOCRAFT__TABLET_STATUS_REQUEST__INIT;
	Docraft__TabletStatusResponse *resp;
	Docraft__TabletReport *rep = NULL;
	struct buf reply = BUF_INIT;
	if (client_tablet_call(C.client, TABLE, id, addr, DOCRAFT__METHOD__TSERVER_TABLET_STATUS,
			       &req.base, &req.tablet_id, &reply) == 0) {
		resp = docraft__tablet_status_response__unpack(NULL, reply.len, reply.data);
		if (resp != NULL && resp->n_tablets == 1) {
			rep = resp->tablets[0];
			resp->n_tablets = 0; /* keep it */
		}
		if (resp != NULL)
			docraft__tablet_status_response__free_unpacked(resp, NULL);
	}
	buf_free(&reply);
	return rep;
}

static int tserver_of(const char *addr)
{
	for (int k = 0; k < C.nt; k++)
		if (strcmp(C.t[k].addr, addr) == 0)
			return k;
	return -1;
}

/* ---- the cluster ----------------------------------------------------------------------------- */

/* zoned: tserver k runs with --placement ZONES[ZONE_OF[k]]: 3 tservers in
 * z1, 2 in z2, 1 in z3 (uneven on purpose, see the zones case). */
static const char *const ZONES[] = {"c.r.z1", "c.r.z2", "c.r.z3"};
static const int ZONE_OF[CLUSTER_MAX_TSERVERS] = {0, 0, 0, 1, 1, 2, 2, 2};

static void up_placed(const char *tag, int nt, int nm, bool zoned)
{
	docraft_client_options o;
	char err[DOCRAFT_ERRMSG_SIZE];
	for (int k = 0; k < CLUSTER_MAX_TSERVERS; k++)
		C.placement[k] = zoned ? ZONES[ZONE_OF[k]] : NULL;
	setenv("DOCRAFT_TRACE", "info", 1); /* the master logs each move at info */
	C.master_args[0] = "--tserver-failed-after-s";
	C.master_args[1] = FAILED_S;
	C.master_args[2] = NULL;
	cluster_start_masters(tag, nt, nm);
	docraft_client_options_init(&o);
	o.timeout_ms = 20000;
	CHECK_OK_MSG(docraft_client_open(C.maddr, &o, &C.client, err), err);
}

static void up(const char *tag, int nt, int nm)
{
	up_placed(tag, nt, nm, false);
}

/* A table TABLE of tablets tablets (RF 3) loaded with keys values of vsize
 * bytes. */
static void load(int tablets, const char *keys, const char *vsize)
{
	char nt[16];
	int rv;
	snprintf(nt, sizeof nt, "%d", tablets);
	rv = CLI(600000, "--timeout", "60000", "bench", "--workload", "load", "--keys", keys,
		 "--value-size", vsize, "--clients", "4", "--tablets", nt, "--rf", "3");
	CHECK_MSG(rv == 0 && strstr(C.out, "errors 0\n") != NULL, "docraft bench exited %d:\n%s",
		  rv, C.out);
}

static void kill9(struct server *s)
{
	CHECK_OK(proc_signal(&s->p, SIGKILL));
	CHECK(proc_wait(&s->p, 5000, NULL));
	s->up = false;
}

/* ---- convergence ----------------------------------------------------------------------------- */

struct healed {
	int rf;
	bool avoid[CLUSTER_MAX_TSERVERS]; /* tservers that must hold nothing */
	char why[512];
};

/* Every tablet at rf live voters, none on an avoided tserver, no move in
 * flight, nothing under-replicated or leaderless, and each leader's Raft
 * configuration is exactly the catalog's replicas, all voters. */
static bool healed(void *arg)
{
	struct healed *h = arg;
	Docraft__ClusterStatusResponse *st = cluster_status();
	Docraft__GetTableResponse *t = NULL;
	bool ok = false;

	if (st == NULL) {
		snprintf(h->why, sizeof h->why, "no cluster status");
		return false;
	}
	if (st->n_moves != 0 || st->under_replicated != 0 || st->leaderless != 0) {
		snprintf(h->why, sizeof h->why, "%zu moves, %u under-replicated, %u leaderless",
			 st->n_moves, st->under_replicated, st->leaderless);
		goto out;
	}
	if ((t = get_table()) == NULL) {
		snprintf(h->why, sizeof h->why, "no table");
		goto out;
	}
	for (size_t i = 0; i < t->n_tablets; i++) {
		const Docraft__TabletLocation *l = t->tablets[i];
		const char *leader = NULL;
		Docraft__TabletReport *rep;
		if (l->n_replicas != (size_t)h->rf || l->live_replicas != (uint32_t)h->rf ||
		    l->under_replicated || l->move[0] != '\0' || l->leader_raft_id == 0) {
			snprintf(h->why, sizeof h->why,
				 "tablet %s: %zu replicas, %u live, move '%s', leader %" PRIu64,
				 l->tablet_id, l->n_replicas, l->live_replicas, l->move,
				 l->leader_raft_id);
			goto out;
		}
		for (size_t k = 0; k < l->n_replicas; k++) {
			int ts = tserver_of(l->replicas[k]->address);
			if (ts < 0 || h->avoid[ts] || !l->replicas[k]->voter) {
				snprintf(h->why, sizeof h->why, "tablet %s: a replica on %s",
					 l->tablet_id, l->replicas[k]->address);
				goto out;
			}
			if (l->replicas[k]->raft_id == l->leader_raft_id)
				leader = l->replicas[k]->address;
		}
		rep = leader != NULL ? tablet_report(l->tablet_id, leader) : NULL;
		if (rep == NULL || rep->n_config != l->n_replicas) {
			snprintf(h->why, sizeof h->why, "tablet %s: leader %s reports %zu in its "
				 "configuration", l->tablet_id, leader ? leader : "?",
				 rep ? rep->n_config : 0);
			if (rep != NULL)
				docraft__tablet_report__free_unpacked(rep, NULL);
			goto out;
		}
		for (size_t c = 0; c < rep->n_config; c++) {
			bool found = false;
			for (size_t k = 0; k < l->n_replicas; k++)
				found |= l->replicas[k]->raft_id == rep->config[c]->raft_id;
			if (!found || !rep->config[c]->voter) {
				snprintf(h->why, sizeof h->why,
					 "tablet %s: the leader's configuration has raft id %" PRIu64
					 " (%s), the catalog %s", l->tablet_id, rep->config[c]->raft_id,
					 rep->config[c]->voter ? "voter" : "spare",
					 found ? "too" : "not");
				docraft__tablet_report__free_unpacked(rep, NULL);
				goto out;
			}
		}
		docraft__tablet_report__free_unpacked(rep, NULL);
	}
	ok = true;
out:
	if (t != NULL)
		docraft__get_table_response__free_unpacked(t, NULL);
	docraft__cluster_status_response__free_unpacked(st, NULL);
	return ok;
}

static void wait_healed(struct healed *h, int timeout_ms, const char *what)
{
	CHECK_MSG(wait_for(healed, h, timeout_ms), "%s: not healed after %d ms: %s", what,
		  timeout_ms, h->why);
}

static void check_checksums(void)
{
	int rv = CLI(60000, "checksum", TABLE);
	CHECK_MSG(rv == 0 && strstr(C.out, "all replicas agree") != NULL,
		  "docraft checksum exited %d:\n%s", rv, C.out);
}

/* Replicas of TABLE on tserver k per the catalog. */
static int replicas_on(int k)
{
	Docraft__GetTableResponse *t = get_table();
	int n = 0;
	CHECK(t != NULL);
	for (size_t i = 0; i < t->n_tablets; i++)
		for (size_t r = 0; r < t->tablets[i]->n_replicas; r++)
			n += strcmp(t->tablets[i]->replicas[r]->address, C.t[k].addr) == 0;
	docraft__get_table_response__free_unpacked(t, NULL);
	return n;
}

/* The tserver holding the most replicas of TABLE (among the first nt). */
static int busiest(int nt)
{
	int best = 0, most = -1;
	for (int k = 0; k < nt; k++) {
		int n = replicas_on(k);
		if (n > most) {
			most = n;
			best = k;
		}
	}
	return best;
}

/* Directories of TABLE's tablets in tserver k's data dir. */
static int tablet_dirs(int k)
{
	char path[400];
	struct dirent *e;
	DIR *d;
	int n = 0;
	snprintf(path, sizeof path, "%s/tablets", C.t[k].dir);
	if ((d = opendir(path)) == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		n += strncmp(e->d_name, TABLE "-", strlen(TABLE) + 1) == 0;
	closedir(d);
	return n;
}

static int count_in_log(const char *path, const char *needle)
{
	char line[4096];
	int n = 0;
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL)
		n += strstr(line, needle) != NULL;
	fclose(f);
	return n;
}

/* HEAL_MEASURE_MB: each ADD's time (sent -> the new replica a voter: the
 * checkpoint copy and raft's catch-up), from the master's log. */
static void note_add_times(void)
{
	char line[4096], id[24][80], *p;
	double sent[24];
	int n = 0;
	FILE *f = fopen(C.m.log, "r");
	if (f == NULL)
		return;
	while (fgets(line, sizeof line, f) != NULL) {
		int hh, mm;
		double ss, t;
		char tablet[80];
		if (sscanf(line, "%*d-%*d-%*dT%d:%d:%lfZ", &hh, &mm, &ss) != 3 ||
		    (p = strstr(line, ": move ")) == NULL || sscanf(p + 7, "%79[^:]", tablet) != 1)
			continue;
		t = hh * 3600.0 + mm * 60.0 + ss;
		if (strstr(p, ": add raft id ") != NULL && n < 24) {
			snprintf(id[n], sizeof id[n], "%s", tablet);
			sent[n++] = t;
		} else if (strstr(p, ": step removing") != NULL) {
			for (int i = n - 1; i >= 0; i--)
				if (strcmp(id[i], tablet) == 0) {
					test_note("ADD of %s: %.0f ms", tablet, (t - sent[i]) * 1000);
					break;
				}
		}
	}
	fclose(f);
}

static int victim_replicas; /* rereplicate: replicas the victim held */

/* For wait_for: tserver *arg deleted every replica it held before it was
 * killed, and holds exactly what the catalog places on it. */
static bool deleted_all(void *arg)
{
	int k = *(int *)arg;
	return count_in_log(C.t[k].log, "delete instruction done") >= victim_replicas &&
	       tablet_dirs(k) == replicas_on(k);
}

/* ---- cases ----------------------------------------------------------------------------------- */

TEST(rereplicate)
{
	struct healed h = {.rf = 3};
	const char *mb = getenv("HEAL_MEASURE_MB");
	char keys[32] = "2000", vsize[16] = "100";
	int victim, before;
	uint64_t t_kill, t_failed, t_healed;

	if (mb != NULL && atoi(mb) > 0) {
		snprintf(keys, sizeof keys, "%d", atoi(mb) * 64); /* 16 KiB values */
		snprintf(vsize, sizeof vsize, "16384");
	}
	up("heal-rerep", 4, 1);
	load(6, keys, vsize);
	victim = busiest(4);
	before = replicas_on(victim);
	victim_replicas = before;
	CHECK(before > 0);
	CHECK_MSG(tablet_dirs(victim) == before, "tserver %d: %d tablet dirs, %d replicas",
		  victim + 1, tablet_dirs(victim), before);
	kill9(&C.t[victim]);
	t_kill = proc_now_ms();
	t_failed = t_kill + 4000; /* --tserver-failed-after-s */
	h.avoid[victim] = true;
	wait_healed(&h, HEAL_MS, "re-replication");
	t_healed = proc_now_ms();
	test_note("%d replicas of tserver %d re-created: healed %" PRIu64 " ms after the kill, "
		  "%" PRIu64 " ms after it was failed", before, victim + 1, t_healed - t_kill,
		  t_healed - t_failed);
	if (mb != NULL && atoi(mb) > 0)
		note_add_times();
	if (mb != NULL && atoi(mb) > 0)
		test_note("HEAL_MEASURE_MB=%s: %d of 6 tablets (~%.1f MiB) copied in %" PRIu64
			  " ms after the failure was detected: %.1f MiB/s",
			  mb, before, atoi(mb) * before / 6.0, t_healed - t_failed,
			  atoi(mb) * before / 6.0 / ((double)(t_healed - t_failed) / 1000.0));
	CHECK_EQ_INT(replicas_on(victim), 0);
	check_checksums();
	CHECK(count_in_log(C.m.log, "re-replicate") > 0);

	/* Back from the dead: its removed replicas are deleted from its disk
	 * (replica balancing may then give it new ones, with new raft ids). */
	tserver_start(victim);
	h.avoid[victim] = false;
	wait_healed(&h, HEAL_MS, "after the restart");
	CHECK_MSG(wait_for(deleted_all, &victim, 30000),
		  "tserver %d: %d deletes done, %d tablet dirs, %d replicas in the catalog",
		  victim + 1, count_in_log(C.t[victim].log, "delete instruction done"),
		  tablet_dirs(victim), replicas_on(victim));
	test_note("restarted: %d removed replicas deleted, %d new ones placed on it",
		  count_in_log(C.t[victim].log, "delete instruction done"), replicas_on(victim));
	h.avoid[victim] = false;
	wait_healed(&h, 30000, "after the restart");
	check_checksums();
	cluster_down();
}

TEST(no_majority)
{
	Docraft__GetTableResponse *t;
	int k1, k2, kept, said;
	char replicas_before[256] = "", replicas_after[256] = "";
	uint64_t end;

	up("heal-minority", 4, 1);
	load(1, "200", "100");
	t = get_table();
	CHECK(t != NULL && t->n_tablets == 1 && t->tablets[0]->n_replicas == 3);
	k1 = tserver_of(t->tablets[0]->replicas[0]->address);
	k2 = tserver_of(t->tablets[0]->replicas[1]->address);
	kept = tserver_of(t->tablets[0]->replicas[2]->address);
	CHECK(k1 >= 0 && k2 >= 0 && kept >= 0);
	for (size_t r = 0; r < 3; r++)
		snprintf(replicas_before + strlen(replicas_before),
			 sizeof replicas_before - strlen(replicas_before), "%" PRIu64 "@%s ",
			 t->tablets[0]->replicas[r]->raft_id, t->tablets[0]->replicas[r]->address);
	docraft__get_table_response__free_unpacked(t, NULL);
	kill9(&C.t[k1]);
	kill9(&C.t[k2]);

	/* 3 x the failure timeout: never a move. */
	end = proc_now_ms() + 12000;
	while (proc_now_ms() < end) {
		Docraft__ClusterStatusResponse *st = cluster_status();
		CHECK(st != NULL);
		CHECK_MSG(st->n_moves == 0, "a move of %s started below a majority (%s)",
			  st->moves[0]->tablet_id, st->moves[0]->step);
		docraft__cluster_status_response__free_unpacked(st, NULL);
		sleep_ms(250);
	}
	t = get_table();
	CHECK(t != NULL);
	for (size_t r = 0; r < t->tablets[0]->n_replicas; r++)
		snprintf(replicas_after + strlen(replicas_after),
			 sizeof replicas_after - strlen(replicas_after), "%" PRIu64 "@%s ",
			 t->tablets[0]->replicas[r]->raft_id, t->tablets[0]->replicas[r]->address);
	CHECK(t->tablets[0]->under_replicated);
	docraft__get_table_response__free_unpacked(t, NULL);
	CHECK_EQ_STR(replicas_after, replicas_before);
	said = count_in_log(C.m.log, "not a majority");
	CHECK_MSG(said > 0, "the master never said why nothing moves");
	test_note("below a majority for 12 s: no move, %d warnings", said);
	cluster_down();
}

static char adding_tablet[80]; /* adding_move: the tablet of the move found */

/* For wait_for: a move is in its adding step; its target's address goes
 * to arg (64 bytes), its tablet to adding_tablet. */
static bool adding_move(void *arg)
{
	char *to = arg;
	bool found = false;
	Docraft__ClusterStatusResponse *st = cluster_status();
	if (st == NULL)
		return false;
	for (size_t i = 0; i < st->n_moves && !found; i++)
		if (strcmp(st->moves[i]->step, "adding") == 0)
			for (size_t k = 0; k < st->n_tservers && !found; k++)
				if (strcmp(st->tservers[k]->uuid, st->moves[i]->to_uuid) == 0) {
					snprintf(to, 64, "%s", st->tservers[k]->address);
					snprintf(adding_tablet, sizeof adding_tablet, "%s",
						 st->moves[i]->tablet_id);
					found = true;
				}
	docraft__cluster_status_response__free_unpacked(st, NULL);
	return found;
}

TEST(target_dies)
{
	struct healed h = {.rf = 3};
	char to[64];
	int victim, target;

	up("heal-target", 5, 1);
	load(1, WIDE_KEYS, WIDE_VSIZE);
	victim = busiest(5); /* one of the tablet's three */
	kill9(&C.t[victim]);
	h.avoid[victim] = true;
	CHECK_MSG(wait_for(adding_move, to, 30000), "no move started");
	target = tserver_of(to);
	CHECK(target >= 0 && target != victim);
	kill9(&C.t[target]);
	h.avoid[target] = true;
	test_note("tserver %d killed, then the target of a move, tserver %d", victim + 1,
		  target + 1);
	wait_healed(&h, HEAL_MS, "after the target died");
	CHECK_MSG(count_in_log(C.m.log, "rolled back") > 0, "no move rolled back");
	check_checksums();
	cluster_down();
}

/* The master leader's slot in C.mk, -1 if none answers. */
static int master_leader(void)
{
	Docraft__ClusterStatusResponse *st = cluster_status();
	int k = -1;
	if (st == NULL)
		return -1;
	for (int i = 0; i < C.nm; i++)
		if (strcmp(C.mk[i].addr, st->master_leader) == 0)
			k = i;
	docraft__cluster_status_response__free_unpacked(st, NULL);
	return k;
}

static bool other_leader(void *arg)
{
	int k = master_leader();
	return k >= 0 && k != *(int *)arg;
}

/* The master_failover cases: the paused target resumes pause_ms after the
 * new leader is elected; want_back: the move must have rolled back (the
 * target was silent past FAILED_S for the new leader too). */
static void failover(const char *tag, int pause_ms, bool want_back)
{
	struct healed h = {.rf = 3};
	char to[64], done[128], back[128];
	int victim, target, ml, nl, n_done, n_back;

	up(tag, 4, 3);
	load(6, WIDE_KEYS, WIDE_VSIZE);
	victim = busiest(4);
	kill9(&C.t[victim]);
	h.avoid[victim] = true;
	CHECK_MSG(wait_for(adding_move, to, 30000), "no move started");
	target = tserver_of(to);
	CHECK(target >= 0 && target != victim);
	CHECK_OK(proc_signal(&C.t[target].p, SIGSTOP));
	ml = master_leader();
	CHECK(ml >= 0);
	kill9(&C.mk[ml]);
	test_note("move to tserver %d paused, master %d (the leader) killed", target + 1, ml + 1);
	CHECK_MSG(wait_for(other_leader, &ml, 30000), "no new master leader");
	sleep_ms(pause_ms); /* the point: the target stays paused this long */
	CHECK_OK(proc_signal(&C.t[target].p, SIGCONT));
	wait_healed(&h, HEAL_MS, "after the master failover");
	check_checksums();
	/* The move in flight was finished by the new leader, one way or the
	 * other. */
	nl = master_leader();
	CHECK(nl >= 0 && nl != ml);
	snprintf(done, sizeof done, "move %s done", adding_tablet);
	snprintf(back, sizeof back, "move %s rolled back", adding_tablet);
	n_done = count_in_log(C.mk[nl].log, done);
	n_back = count_in_log(C.mk[nl].log, back);
	CHECK_MSG(n_done + n_back >= 1, "the new leader never ended the move of %s",
		  adding_tablet);
	test_note("the new leader ended moves of %s: %d completed, %d rolled back", adding_tablet,
		  n_done, n_back);
	if (want_back)
		CHECK_MSG(n_back >= 1, "the move of %s did not roll back", adding_tablet);
	master_start_k(ml);
	cluster_down();
}

TEST(master_failover)
{
	failover("heal-failover", 0, false);
}

/* The target stays paused past the failure timeout under the new leader
 * (it waits tserver_timeout_ms, 3 s, then FAILED_S more): rolled back. */
TEST(master_failover_rollback)
{
	failover("heal-failover-rb", 10000, true);
}

static bool drained(void *arg)
{
	const char *uuid = arg;
	Docraft__ClusterStatusResponse *st = cluster_status();
	bool ok = false;
	if (st == NULL)
		return false;
	for (size_t k = 0; k < st->n_tservers; k++)
		if (strcmp(st->tservers[k]->uuid, uuid) == 0)
			ok = st->tservers[k]->drained && st->tservers[k]->tablets == 0 &&
			     st->tservers[k]->leaders == 0;
	docraft__cluster_status_response__free_unpacked(st, NULL);
	return ok;
}

struct spread {
	int lo, hi, n0;
};

static bool balanced(void *arg)
{
	struct spread *s = arg;
	s->lo = 1 << 30;
	s->hi = 0;
	for (int k = 0; k < C.nt; k++) {
		int n = replicas_on(k);
		s->lo = n < s->lo ? n : s->lo;
		s->hi = n > s->hi ? n : s->hi;
		if (k == 0)
			s->n0 = n;
	}
	return s->hi - s->lo <= 1;
}

TEST(drain)
{
	struct healed h = {.rf = 3};
	Docraft__ClusterStatusResponse *st;
	Docraft__DrainResponse *dr;
	struct spread sp;
	char uuid[80] = "";

	up("heal-drain", 4, 1);
	load(6, "2000", "100");
	CHECK_EQ_INT(drain_call("no-such-tserver", false, &dr), DOCRAFT_ENOTFOUND);
	test_note("unknown tserver: %s", docraft_errmsg());
	st = cluster_status();
	CHECK(st != NULL);
	for (size_t k = 0; k < st->n_tservers; k++)
		if (strcmp(st->tservers[k]->address, C.t[0].addr) == 0)
			snprintf(uuid, sizeof uuid, "%s", st->tservers[k]->uuid);
	docraft__cluster_status_response__free_unpacked(st, NULL);
	CHECK(uuid[0] != '\0');
	CHECK_OK_MSG(drain_call(C.t[0].addr, false, &dr), docraft_errmsg());
	CHECK(dr != NULL && dr->replicas_left > 0);
	test_note("drain of tserver 1: %u replicas, %u leaders left", dr->replicas_left,
		  dr->leaders_left);
	docraft__drain_response__free_unpacked(dr, NULL);
	CHECK_MSG(wait_for(drained, uuid, HEAL_MS), "tserver 1 not drained");
	h.avoid[0] = true;
	wait_healed(&h, 30000, "drained");
	check_checksums();

	/* Undrain: replica balancing brings replicas back. */
	CHECK_OK_MSG(drain_call(uuid, true, &dr), docraft_errmsg());
	docraft__drain_response__free_unpacked(dr, NULL);
	CHECK_MSG(wait_for(balanced, &sp, HEAL_MS), "not balanced after undrain: %d..%d",
		  sp.lo, sp.hi);
	CHECK(sp.n0 > 0);
	h.avoid[0] = false;
	wait_healed(&h, 30000, "rebalanced");
	check_checksums();
	cluster_down();
}

/* Every tablet of TABLE has 3 replicas on tservers of 3 distinct
 * placements, as the master reports them (GetTable's addresses, the
 * placement ListTServers gives each address); the first tablet that has
 * not goes to why. Counts the replicas per zone into per_zone (3 slots). */
static bool zones_distinct(char *why, size_t cap, int per_zone[3])
{
	Docraft__ListTServersResponse *ts = list_tservers();
	Docraft__GetTableResponse *t = get_table();
	bool ok = ts != NULL && t != NULL && t->n_tablets == 6;

	memset(per_zone, 0, 3 * sizeof *per_zone);
	if (!ok)
		snprintf(why, cap, "no tserver list or table (%zu tablets)", t ? t->n_tablets : 0);
	for (size_t i = 0; ok && i < t->n_tablets; i++) {
		const Docraft__TabletLocation *l = t->tablets[i];
		const char *zone[3] = {NULL, NULL, NULL};
		char seen[256] = "";
		if (l->n_replicas != 3) {
			snprintf(why, cap, "tablet %s: %zu replicas", l->tablet_id, l->n_replicas);
			ok = false;
			break;
		}
		for (size_t r = 0; r < 3; r++) {
			for (size_t k = 0; k < ts->n_tservers; k++)
				if (strcmp(ts->tservers[k]->address, l->replicas[r]->address) == 0)
					zone[r] = ts->tservers[k]->placement;
			snprintf(seen + strlen(seen), sizeof seen - strlen(seen), " %s(%s)",
				 l->replicas[r]->address, zone[r] ? zone[r] : "?");
			for (int z = 0; zone[r] != NULL && z < 3; z++)
				per_zone[z] += strcmp(zone[r], ZONES[z]) == 0;
		}
		if (zone[0] == NULL || zone[1] == NULL || zone[2] == NULL ||
		    strcmp(zone[0], zone[1]) == 0 || strcmp(zone[0], zone[2]) == 0 ||
		    strcmp(zone[1], zone[2]) == 0) {
			snprintf(why, cap, "tablet %s: replicas on%s", l->tablet_id, seen);
			ok = false;
		}
	}
	if (t != NULL)
		docraft__get_table_response__free_unpacked(t, NULL);
	if (ts != NULL)
		docraft__list_tservers_response__free_unpacked(ts, NULL);
	return ok;
}

static void check_zones(const char *what)
{
	char why[512] = "";
	int per_zone[3];
	CHECK_MSG(zones_distinct(why, sizeof why, per_zone), "%s: %s", what, why);
	test_note("%s: every tablet in 3 zones; replicas per zone %d %d %d", what, per_zone[0],
		  per_zone[1], per_zone[2]);
}

/* Fails when placement ignores zones (by load alone z3's tserver would
 * get 3 of the 18 replicas, not 6) or when re-replication does (the dead
 * z2 tserver's replicas would go to z1's tservers, 2 replicas each against
 * the other z2 tserver's 3). */
TEST(zones)
{
	struct healed h = {.rf = 3};
	Docraft__DrainResponse *dr;
	const int victim = 3, partner = 4, drainee = 0; /* z2, z2, z1 */
	int held;

	up_placed("heal-zones", 6, 1, true);
	load(6, "600", "100");
	check_zones("created");
	CHECK_EQ_INT(replicas_on(5), 6);

	held = replicas_on(victim);
	CHECK(held > 0);
	kill9(&C.t[victim]);
	h.avoid[victim] = true;
	test_note("tserver %d (%s) killed, %d replicas", victim + 1, ZONES[ZONE_OF[victim]],
		  held);
	wait_healed(&h, HEAL_MS, "re-replication in zones");
	check_zones("after the kill");
	CHECK_EQ_INT(replicas_on(partner), 6);

	CHECK_OK_MSG(drain_call(C.t[drainee].addr, false, &dr), docraft_errmsg());
	CHECK(dr != NULL);
	test_note("tserver %d (%s) drained, %u replicas", drainee + 1, ZONES[ZONE_OF[drainee]],
		  dr->replicas_left);
	docraft__drain_response__free_unpacked(dr, NULL);
	h.avoid[drainee] = true;
	wait_healed(&h, HEAL_MS, "drain in zones");
	check_zones("after the drain");
	CHECK_EQ_INT(replicas_on(1) + replicas_on(2), 6);
	check_checksums();
	cluster_down();
	for (int k = 0; k < CLUSTER_MAX_TSERVERS; k++)
		C.placement[k] = NULL;
}

TEST_MAIN(T(rereplicate), T(no_majority), T(target_dies), T(master_failover),
	  T(master_failover_rollback), T(drain), T(zones))
