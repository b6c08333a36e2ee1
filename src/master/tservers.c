/* The tablet servers as the master leader sees them (internal.h has the
 * files around it): a registry fed by heartbeats, their liveness, the
 * instructions a heartbeat's reply carries, and ListTServers.
 *
 * Design.
 *
 * The registry is volatile: the tservers live in the catalog's tserver
 * index (catalog.h), forgotten at every change of leadership and rebuilt
 * from the next heartbeats. A tserver is live if heard from within
 * --tserver-timeout-ms.
 *
 * Heartbeat: records the tserver (uuid, address, placement, time) and, per
 *   reported tablet, the replica's role and term. A placement that is not
 *   "" or cloud.region.zone (placement_str_valid) fails the heartbeat
 *   with EINVAL; tservers_live maps the placements of the live tservers to
 *   zone indexes for CreateTable's placement. Instructions in the reply:
 *   - delete: for every reported tablet that is deleted in the catalog;
 *   - create: for every running tablet with a replica on this tserver that
 *     the heartbeat does not list, unless a create was sent less than
 *     CREATE_RETRY_MS ago (the direct call of CreateTable, or an earlier
 *     instruction, may still be in progress);
 *   - step down (leader balancing, on unless --leader-balance off): at
 *     most one per reply, for a tablet this tserver leads, to the replica
 *     on a live tserver that leads at least two tablets fewer (balance.h
 *     has the rule): counts over running tablets with a known leader,
 *     moves in flight counted at their target; a tserver counts as up if
 *     heard from within LEADER_TARGET_FRESH_MS, and a replica as ready if
 *     its tserver's latest heartbeat listed it as follower or leader in
 *     the leader's term; every replica of the tablet on an up tserver must
 *     be ready, those must be a majority, and the target must be up with
 *     every replica it holds ready. A tablet's leader is not moved again
 *     for LEADER_MOVE_COOLDOWN_MS (why 5 s: at its definition). The move
 *     itself is the tserver's StepDown: a Raft barrier, then a transfer to
 *     the target; a move that fails (target too far behind, gone) changes
 *     nothing and may be chosen again once the cooldown is over. The
 *     cooldowns are volatile: a new master leader starts without any.
 *   Tablets the catalog does not know are left alone (never deleted: a
 *   master with a lost or foreign catalog must not wipe tablet servers).
 *   A deleted tablet that none of its replicas' tservers lists any more is
 *   purged from the catalog (ddl_maybe_purge).
 *
 * Leaders: a replica counts as leader if the latest heartbeat of its
 *   tserver listed it with role "leader" and that tserver is live; among
 *   several (an old leader not yet stepped down), the highest term wins
 *   (catalog_tablet_leader). */
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "common/check.h"
#include "common/err.h"
#include "common/log.h"
#include "common/mem.h"
#include "master/balance.h"
#include "master/catalog.h"
#include "master/internal.h"
#include "master/moves.h"
#include "master/placement.h"
#include "master/policy.h"
#include "server/placement_str.h"
#include "net/listener.h"
#include "rpc.pb-c.h"
#include "rpc/rpc.h"

#define CREATE_RETRY_MS 3000
/* TabletReport.role of a ready leader (the tserver's name of TABLET_LEADER). */
#define ROLE_LEADER "leader"
/* ... and of a follower (TABLET_FOLLOWER). */
#define ROLE_FOLLOWER "follower"
/* Leader balancing: no second move of a tablet's leader within this time
 * of the first. A move resolves on the tserver within its election timeout
 * (the Raft transfer is abandoned then; 500 ms by default, 1 s at most in
 * practice), and the master sees the outcome once both the old and the new
 * leader have heartbeated after it: at most two tserver heartbeat periods
 * (1 s each by default), one more if a heartbeat is lost; about 3 s in the
 * worst case. 5 s is that with a margin. Meanwhile the tablet counts for
 * the target (balance.h), so the wait delays no other move, and a move
 * that failed is retried once it is over. */
#define LEADER_MOVE_COOLDOWN_MS 5000
/* Leader balancing: a tserver heard from longer ago than this takes over no
 * leader (capped by the liveness timeout): one and a half default tserver
 * heartbeat periods, so one late heartbeat does not exclude it but a
 * crashed tserver is excluded after 1.5 s rather than at the timeout (3 s). */
#define LEADER_TARGET_FRESH_MS 1500

static struct cat_replica *replica_on(struct cat_tablet *tb, const char *uuid)
{
	for (uint32_t k = 0; k < tb->n_replicas; k++)
		if (strcmp(tb->replicas[k].uuid, uuid) == 0)
			return &tb->replicas[k];
	return NULL;
}

/* ---- the registry ---------------------------------------------------------------------------- */

size_t tservers_live(struct master *m, struct cat_tserver ***out,
		     struct placement_server **loads)
{
	uint64_t now = master_now_ms(m);
	struct cat_tserver **live = xcalloc(m->cat.n_tservers, sizeof *live);
	struct placement_server *ld;
	const char **zones;
	uint32_t n_zones = 0;
	size_t n = 0;

	for (size_t i = 0; i < m->cat.n_tservers; i++)
		if (catalog_tserver_live(m->cat.tservers[i], now, m->tserver_timeout_ms) &&
		    !catalog_draining(&m->cat, m->cat.tservers[i]->uuid))
			live[n++] = m->cat.tservers[i];
	ld = xcalloc(n, sizeof *ld);
	zones = xcalloc(n, sizeof *zones);
	for (size_t i = 0; i < n; i++)
		ld[i].zone = policy_zone_index(zones, &n_zones, (uint32_t)n, live[i]->placement);
	free(zones);
	for (size_t i = 0; i < m->cat.n_tablets; i++) {
		const struct cat_tablet *tb = m->cat.tablets[i];
		if (tb->state == CAT_DELETED)
			continue;
		for (uint32_t k = 0; k < tb->n_replicas; k++) {
			size_t lo = 0, hi = n;
			while (lo < hi) {
				size_t mid = lo + (hi - lo) / 2;
				int cmp = strcmp(live[mid]->uuid, tb->replicas[k].uuid);
				if (cmp == 0) {
					ld[mid].load++;
					break;
				}
				if (cmp < 0)
					lo = mid + 1;
				else
					hi = mid;
			}
		}
	}
	*out = live;
	*loads = ld;
	return n;
}

static void tserver_info(struct master *m, const struct cat_tserver *ts, uint64_t now,
			 Docraft__TServerInfo *info)
{
	docraft__tserver_info__init(info);
	info->uuid = (char *)ts->uuid;
	info->address = (char *)ts->address;
	info->live = catalog_tserver_live(ts, now, m->tserver_timeout_ms);
	info->last_heartbeat_ms_ago = now - ts->last_hb_ms;
	for (size_t k = 0; k < m->cat.n_tablets; k++) {
		struct cat_tablet *tb = m->cat.tablets[k];
		const struct cat_replica *leader;
		if (tb->state == CAT_DELETED || replica_on(tb, ts->uuid) == NULL)
			continue;
		info->tablets++;
		leader = catalog_tablet_leader(&m->cat, tb, now, m->tserver_timeout_ms);
		if (leader != NULL && strcmp(leader->uuid, ts->uuid) == 0)
			info->leaders++;
	}
	info->placement = (char *)ts->placement;
	info->redis_address = (char *)ts->redis_address;
	info->state = (char *)moves_tserver_state(m, ts, now);
	info->draining = catalog_draining(&m->cat, ts->uuid);
	info->drained = info->draining && info->tablets == 0;
	info->moves = moves_of_tserver(m, ts->uuid);
}

Docraft__TServerInfo **tservers_infos(struct master *m, uint64_t now, struct arena *a)
{
	Docraft__TServerInfo **v = master_zalloc(a, m->cat.n_tservers * sizeof *v);
	for (size_t i = 0; i < m->cat.n_tservers; i++) {
		v[i] = master_zalloc(a, sizeof *v[i]);
		tserver_info(m, m->cat.tservers[i], now, v[i]);
	}
	return v;
}

enum rpc_dispatch_req tservers_list(void *ctx, struct rpc_call *call, void *req, void *obj)
{
	struct master *m = ctx;
	Docraft__ListTServersResponse resp = DOCRAFT__LIST_TSERVERS_RESPONSE__INIT;
	struct arena a;
	uint64_t now = master_now_ms(m);

	(void)req;
	(void)obj;
	arena_init(&a);
	resp.n_tservers = m->cat.n_tservers;
	resp.tservers = tservers_infos(m, now, &a);
	rpc_reply_message(call, &resp.base);
	arena_free(&a);
	return RPC_DISPATCH_FREE;
}

/* ---- Heartbeat ------------------------------------------------------------------------------- */

static bool valid_uuid(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > CATALOG_MAX_UUID)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
			return false;
	return true;
}

struct instructions {
	Docraft__Instruction **v;
	size_t n, cap;
	struct arena *a;
};

static Docraft__Instruction *instruction_add(struct instructions *ins)
{
	Docraft__Instruction *i = master_zalloc(ins->a, sizeof *i);
	if (ins->n == ins->cap) {
		Docraft__Instruction **v;
		ins->cap = ins->cap ? 2 * ins->cap : 16;
		v = master_zalloc(ins->a, ins->cap * sizeof *v);
		if (ins->n > 0)
			memcpy(v, ins->v, ins->n * sizeof *v);
		ins->v = v;
	}
	docraft__instruction__init(i);
	ins->v[ins->n++] = i;
	return i;
}

/* Leader balancing (balance.h): the catalog as balance_pick's input
 * (servers: every tserver, by uuid; tablets: the running ones) and, if it
 * picks a move of a tablet ts leads, one StepDown instruction for ts. */
static void instruct_leader_move(struct master *m, const struct cat_tserver *ts,
				 struct instructions *ins, uint64_t now)
{
	size_t n_servers = m->cat.n_tservers, n = 0;
	size_t from = catalog_tserver_index(&m->cat, ts->uuid);
	uint64_t fresh = m->tserver_timeout_ms < LEADER_TARGET_FRESH_MS ? m->tserver_timeout_ms
									 : LEADER_TARGET_FRESH_MS;
	struct balance_server *servers;
	struct balance_tablet *tablets;
	struct cat_tablet **of, **by_table;
	uint32_t *table_of;
	size_t n_by_table = 0;
	struct balance_load *load;
	struct balance_move mv;
	struct cat_tablet *tb;
	const struct cat_replica *to;
	Docraft__Instruction *in;
	Docraft__StepDownRequest *sd;
	bool leads = false;

	ASSERT(from != SIZE_MAX);
	/* A tserver that leads nothing has nothing to hand over (the common
	 * case on a balanced cluster of many tservers): ruled out cheaply. */
	for (size_t i = 0; i < m->cat.n_tablets && !leads; i++) {
		const struct cat_replica *r = m->cat.tablets[i]->state == CAT_RUNNING
						      ? replica_on(m->cat.tablets[i], ts->uuid)
						      : NULL;
		leads = r != NULL && r->leader;
	}
	if (!leads)
		return;
	servers = master_zalloc(ins->a, n_servers * sizeof *servers);
	load = master_zalloc(ins->a, n_servers * sizeof *load);
	tablets = master_zalloc(ins->a, m->cat.n_tablets * sizeof *tablets);
	of = master_zalloc(ins->a, m->cat.n_tablets * sizeof *of);
	for (size_t s = 0; s < n_servers; s++) {
		servers[s].live = catalog_tserver_live(m->cat.tservers[s], now, fresh);
		servers[s].draining = catalog_draining(&m->cat, m->cat.tservers[s]->uuid);
	}
	/* Table by table: balance_pick counts per table over adjacent tablets. */
	by_table = master_zalloc(ins->a, m->cat.n_tablets * sizeof *by_table);
	table_of = master_zalloc(ins->a, m->cat.n_tablets * sizeof *table_of);
	for (size_t i = 0; i < m->cat.n_tables; i++)
		for (size_t j = 0; j < m->cat.tables[i]->n_tablets && n_by_table < m->cat.n_tablets;
		     j++) {
			table_of[n_by_table] = (uint32_t)i;
			by_table[n_by_table++] = m->cat.tables[i]->tablets[j];
		}
	for (size_t i = 0; i < n_by_table; i++) {
		struct balance_tablet *bt = &tablets[n];
		const struct cat_replica *leader;
		tb = by_table[i];
		if (tb->state != CAT_RUNNING || tb->n_replicas == 0 || tb->move != NULL)
			continue; /* a replica move changes its members: not now */
		bt->table = table_of[i];
		leader = catalog_tablet_leader(&m->cat, tb, now, m->tserver_timeout_ms);
		bt->leader = leader != NULL ? catalog_tserver_index(&m->cat, leader->uuid)
					    : BALANCE_NONE;
		bt->n_replicas = tb->n_replicas;
		bt->moved_ms = tb->move_sent_ms;
		bt->moved_to = BALANCE_NONE;
		for (uint32_t k = 0; k < tb->n_replicas; k++) {
			const struct cat_replica *r = &tb->replicas[k];
			size_t s = catalog_tserver_index(&m->cat, r->uuid);
			bt->server[k] = s;
			/* Listed by its tserver's latest heartbeat as a follower or
			 * leader, in the term of the leader when one is known. */
			bt->ready[k] = s != BALANCE_NONE &&
				       r->seen_hb == m->cat.tservers[s]->hb_count && r->up &&
				       (leader == NULL || r->term == leader->term);
			if (tb->move_sent_ms != 0 && r->raft_id == tb->move_to)
				bt->moved_to = s;
		}
		of[n++] = tb;
	}
	if (!balance_pick(servers, n_servers, tablets, n, from, now, LEADER_MOVE_COOLDOWN_MS,
			  load, &mv))
		return;
	tb = of[mv.tablet];
	to = &tb->replicas[mv.replica];
	in = instruction_add(ins);
	sd = master_zalloc(ins->a, sizeof *sd);
	docraft__step_down_request__init(sd);
	sd->tablet_id = tb->id;
	sd->to_raft_id = to->raft_id;
	in->kind_case = DOCRAFT__INSTRUCTION__KIND_STEP_DOWN;
	in->step_down = sd;
	tb->move_sent_ms = now;
	tb->move_to = to->raft_id;
	LOG_INFO("master %s: leader balance: tablet %s: leader moves from tserver %s "
		 "(%" PRIu32 " leaders) to %s (raft id %" PRIu64 ", %" PRIu32 " leaders)",
		 m->address, tb->id, ts->uuid, load[from].leaders, to->uuid, to->raft_id,
		 load[mv.to].leaders);
}

static void instruct_delete(struct instructions *ins, struct cat_tablet *tb)
{
	Docraft__Instruction *in = instruction_add(ins);
	Docraft__DeleteTabletRequest *del = master_zalloc(ins->a, sizeof *del);
	docraft__delete_tablet_request__init(del);
	del->tablet_id = tb->id;
	in->kind_case = DOCRAFT__INSTRUCTION__KIND_DELETE;
	in->delete_ = del;
}

/* A leader's report: its configuration kept for moves.c (the highest
 * term's). */
static void record_config(struct cat_tablet *tb, const Docraft__TabletReport *rep)
{
	struct cat_config *c = &tb->config;
	if (rep->n_config == 0 || rep->n_config > CATALOG_MAX_CONFIG ||
	    (c->known && rep->term < c->term))
		return;
	c->known = true;
	c->term = rep->term;
	c->index = rep->config_index;
	c->committed = rep->config_index <= rep->applied_index;
	c->n = (uint32_t)rep->n_config;
	for (size_t k = 0; k < rep->n_config; k++) {
		c->id[k] = rep->config[k]->raft_id;
		c->voter[k] = rep->config[k]->voter;
	}
}

/* Whether the replica raft_id of tb, reported by a tserver the catalog
 * does not list for it, is out of the tablet for good: the current
 * leader's configuration, committed (applied by the leader), lacks it (a
 * replica removed by a move, a rolled-back new one, an older replica left
 * on a tserver that now holds another). Without a current leader's word it
 * stays. A removed replica's own term may be past the leader's (it keeps
 * campaigning, unheard: its peers drop its messages), so terms are not
 * compared. */
static bool removed_replica(struct master *m, const struct cat_tablet *tb, uint64_t raft_id,
			    uint64_t now)
{
	const struct cat_replica *leader =
		catalog_tablet_leader(&m->cat, tb, now, m->tserver_timeout_ms);
	const struct cat_config *c = &tb->config;
	if (leader == NULL || !c->known || !c->committed || c->term != leader->term)
		return false;
	for (uint32_t k = 0; k < c->n; k++)
		if (c->id[k] == raft_id)
			return false;
	return true;
}

/* The replicas a heartbeat of ts lists: their role and term recorded,
 * leaders' configurations kept; delete instructed for every one whose
 * tablet is deleted, and for a running tablet's replica the catalog does
 * not list on ts that its leader's configuration lacks. */
static void apply_reports(struct master *m, struct cat_tserver *ts,
			  const Docraft__HeartbeatRequest *req, struct instructions *ins,
			  uint64_t now)
{
	for (size_t i = 0; i < req->n_tablets; i++) {
		const Docraft__TabletReport *rep = req->tablets[i];
		struct cat_tablet *tb = catalog_find_tablet(&m->cat, rep->tablet_id);
		struct cat_replica *r;
		if (tb == NULL)
			continue; /* unknown here: never deleted on a guess */
		r = replica_on(tb, ts->uuid);
		if (tb->state == CAT_DELETED) {
			instruct_delete(ins, tb);
			if (r != NULL) {
				r->seen_hb = ts->hb_count;
				r->gone = false;
			}
			continue;
		}
		if (strcmp(rep->role, ROLE_LEADER) == 0)
			record_config(tb, rep);
		if (r == NULL || (rep->raft_id != 0 && rep->raft_id != r->raft_id)) {
			/* Not a member here (a move removed it, or ts holds an
			 * older replica than the catalog's). */
			if (r != NULL)
				r->seen_hb = ts->hb_count; /* no create over it */
			if (tb->state == CAT_RUNNING &&
			    removed_replica(m, tb, rep->raft_id, now)) {
				instruct_delete(ins, tb);
				LOG_AT(LOG_LVL_INFO, tb->id, m->term,
				       "master %s: tserver %s holds replica %" PRIu64 " of tablet %s, "
				       "which left its configuration: delete instructed",
				       m->address, ts->uuid, rep->raft_id, tb->id);
			}
			continue;
		}
		r->seen_hb = ts->hb_count;
		r->leader = strcmp(rep->role, ROLE_LEADER) == 0;
		r->up = r->leader || strcmp(rep->role, ROLE_FOLLOWER) == 0;
		r->term = rep->term;
	}
}

/* The replicas ts should have and its latest heartbeat did not list: a
 * deleted tablet's is gone (the tablet purged once all are), a running
 * tablet's is created (instructed, at most every CREATE_RETRY_MS). */
static void reconcile_missing(struct master *m, struct cat_tserver *ts, struct instructions *ins,
			      uint64_t now)
{
	for (size_t i = 0; i < m->cat.n_tablets; i++) {
		struct cat_tablet *tb = m->cat.tablets[i];
		struct cat_replica *r = replica_on(tb, ts->uuid);
		if (r == NULL || r->seen_hb == ts->hb_count)
			continue;
		r->leader = false;
		r->up = false;
		if (tb->state == CAT_DELETED) {
			r->gone = true;
			ddl_maybe_purge(m, tb);
		} else if (tb->state == CAT_RUNNING &&
			   (r->create_sent_ms == 0 || now - r->create_sent_ms >= CREATE_RETRY_MS)) {
			const struct cat_table *t = catalog_find_table(&m->cat, tb->table);
			Docraft__Instruction *in;
			if (t == NULL)
				continue;
			in = instruction_add(ins);
			in->kind_case = DOCRAFT__INSTRUCTION__KIND_CREATE;
			in->create = ddl_create_tablet_pb(t, tb, r->raft_id, ins->a);
			r->create_sent_ms = now;
			LOG_INFO("master %s: tserver %s lacks tablet %s: create instructed",
				 m->address, ts->uuid, tb->id);
		}
	}
}

enum rpc_dispatch_req tservers_heartbeat(void *ctx, struct rpc_call *call, void *request,
					 void *obj)
{
	struct master *m = ctx;
	const Docraft__HeartbeatRequest *req = request;
	Docraft__HeartbeatResponse resp = DOCRAFT__HEARTBEAT_RESPONSE__INIT;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct instructions ins = {NULL, 0, 0, NULL};
	struct cat_tserver *ts;
	struct sockaddr_in sa;
	struct arena a;
	uint64_t now = master_now_ms(m);

	(void)obj;
	if (!valid_uuid(req->uuid)) {
		rpc_reply_error(call, DOCRAFT_EINVAL, "heartbeat: bad tserver uuid", NULL, 0);
		return RPC_DISPATCH_FREE;
	}
	if (strlen(req->address) > RPC_ADDRESS_MAX ||
	    listener_parse_address(req->address, &sa, errmsg) != 0) {
		rpc_reply_errorf(call, DOCRAFT_EINVAL, "heartbeat: bad address '%.32s'",
				 req->address);
		return RPC_DISPATCH_FREE;
	}
	ts = catalog_find_tserver(&m->cat, req->uuid);
	if (ts == NULL || strcmp(ts->address, req->address) != 0)
		LOG_INFO("master %s: tserver %s at %s", m->address, req->uuid, req->address);
	if (req->redis_address[0] != '\0' &&
	    (strlen(req->redis_address) > RPC_ADDRESS_MAX ||
	     listener_parse_address(req->redis_address, &sa, errmsg) != 0)) {
		rpc_reply_errorf(call, DOCRAFT_EINVAL, "heartbeat: bad Redis address '%.32s'",
				 req->redis_address);
		return RPC_DISPATCH_FREE;
	}
	if (!placement_str_valid(req->placement, errmsg)) {
		rpc_reply_errorf(call, DOCRAFT_EINVAL, "heartbeat: %s", errmsg);
		return RPC_DISPATCH_FREE;
	}
	ts = catalog_tserver_upsert(&m->cat, req->uuid, req->address);
	if (strcmp(ts->placement, req->placement) != 0) {
		LOG_INFO("master %s: tserver %s placement '%s'", m->address, req->uuid,
			 req->placement);
		snprintf(ts->placement, sizeof ts->placement, "%s", req->placement);
	}
	if (strcmp(ts->redis_address, req->redis_address) != 0) {
		LOG_INFO("master %s: tserver %s Redis address '%s'", m->address, req->uuid,
			 req->redis_address);
		snprintf(ts->redis_address, sizeof ts->redis_address, "%s", req->redis_address);
	}
	ts->hb_count++;
	ts->last_hb_ms = now;

	arena_init(&a);
	ins.a = &a;
	apply_reports(m, ts, req, &ins, now);
	reconcile_missing(m, ts, &ins, now);
	if (m->leader_balance)
		instruct_leader_move(m, ts, &ins, now);
	resp.n_instructions = ins.n;
	resp.instructions = ins.v;
	resp.master_leader_address = m->address;
	resp.n_masters = members_addresses(m, &a, &resp.masters); /* issue 15 */
	rpc_reply_message(call, &resp.base);
	arena_free(&a);
	return RPC_DISPATCH_FREE;
}
