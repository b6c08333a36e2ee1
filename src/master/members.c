/* Master membership (issue 15, docs/cluster.md "Master membership"): which
 * raft id this master has, joining a running cluster, ListMasters,
 * ChangeMasters, the list heartbeats carry, and noticing a removal.
 *
 * Design.
 *
 * Truth. The masters are the members of the catalog tablet's Raft
 * configuration, which raft stores with its log (tablet_get_config): every
 * master reads the list from there, never from --masters, which is only
 * the list a new cluster is bootstrapped with. A master's own raft id is in
 * DIR/master.id, written once: after the bootstrap (the id is then the
 * 1-based position in --masters, as before membership changes existed; a
 * data directory from before this file gets it the same way) or when a
 * joining master learns the id it was added with. A restart reads the file
 * and ignores where its address sits in --masters, so stale flags are
 * harmless.
 *
 * Raft ids are never reused: the catalog document DocKey("masters",
 * "config") (catalog.h) holds next_id and the members a change intends; it
 * is written (a catalog write, replicated like every other) before each
 * configuration change, so even a change that fails has used up its id.
 *
 * Joining (--join A,B): no id file and a join list: the catalog tablet is
 * not opened yet. Every ASK_MS the master asks one address of the list (in
 * turn, or a hint) for ListMasters, which any master answers with the
 * configuration it has and the raft ids; once its own address is listed
 * (the leader appended the configuration that adds it: `docraft master
 * add ADDR`), it writes the id file and opens the tablet without a
 * bootstrap: an empty replica that the leader catches up (by checkpoint
 * copy when its log was truncated) before promoting it to voter. Until
 * then every leader method answers NOT_LEADER (no hint).
 *
 * Changes, on the ready leader, one at a time: another change meanwhile
 * gets EBUSY, a retry of the running one (its caller timed out) EUNAVAILABLE
 * until it is done.
 *   ADD addr:    refused (EINVAL) for a bad address or when
 *                MASTER_MAX_MASTERS voters exist; a voter already: done;
 *                a non-voter (an add that did not finish): EINVAL, remove
 *                it first (its data directory holds the id of that add).
 *                Then: write the document (new id = next_id) -> tablet
 *                add (spare, catch up, promote to voter) -> answer. A
 *                promotion that fails (the new master is not running or
 *                did not catch up within raft's catch-up rounds) removes
 *                the spare again and answers ETIMEDOUT (final for the
 *                client, src/client/metacache.c).
 *   REMOVE addr: ENOTFOUND if not a member, EINVAL for the last voter;
 *                the leader itself: leadership is transferred first and
 *                the call answered NOT_LEADER with the new leader's
 *                address (the client retries there); else write the
 *                document -> tablet remove -> answer.
 * A change whose leadership ends meanwhile answers what the tablet said
 * (NOT_LEADER, LEADER_LOST); the next leader sees the configuration raft
 * committed, or not, and a retry of the same command is harmless (an add
 * of a voter is done; a remove of a non-member is ENOTFOUND).
 *
 * Removal. A leader stops replicating to a master as soon as it appends the
 * configuration that removes it, so the removed master usually never
 * applies that configuration: it only sees its leader go quiet. So each
 * poll (members_refresh) checks two things: the configuration it applied
 * lacks it ("missing"), or, after LEADERLESS_MS without a leader, a member
 * it asks (ListMasters, in turn) names a leader and does not list it
 * ("told"). Either way it logs once that it was removed and keeps running:
 * it serves nothing but ListMasters (the list the master that told it gave)
 * and NOT_LEADER answers naming the last leader it knew, so a tserver or
 * client that still has only its address finds the cluster through it
 * while it runs. It does not exit (an operator stops it; `docraft-local
 * remove-master` does). It cannot disturb the others: its pre-votes go to
 * masters whose listener refuses Raft connections from non-members
 * (tablet_membership_raft_check), and it is never leader again. A master
 * that hears a leader again, or is listed again, says so. A joined master
 * whose add then failed (its replica never got a configuration) asks the
 * same way (its --join list, else --masters) and logs that it must start
 * again from an empty data directory.
 *
 * Threading: the master's loop thread. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/err.h"
#include "common/fs.h"
#include "common/log.h"
#include "common/mem.h"
#include "master/internal.h"
#include "net/listener.h"

#define ASK_MS 250         /* between two ListMasters of a joining master */
#define LEADERLESS_MS 2000 /* a member without a leader this long asks */
#define ID_FILE "master.id"
/* Members of the catalog tablet's configuration read at most. */
#define MAX_MEMBERS CATALOG_MAX_MASTERS

struct change_op;

struct members {
	/* Asking other masters for ListMasters: a joining master for its
	 * raft id, a member without a leader for whether it was removed. */
	char join[MASTER_MAX_MASTERS][RPC_ADDRESS_MAX + 1];
	size_t n_join, ask_next;
	char ask_hint[RPC_ADDRESS_MAX + 1];
	bool asking;
	uint64_t ask_at;             /* loop ms of the next question */
	uint64_t leaderless_since;   /* loop ms; 0: a leader is known */
	struct rpc_call_req ask_req;

	bool member;                 /* its configuration listed it once */
	bool missing;                /* its applied configuration lacks it */
	bool told;                   /* a master with a leader lists it not */
	bool removed;                /* missing || told, as last logged */
	/* What the last master that told it answered (served while removed). */
	char known[MAX_MEMBERS][RPC_ADDRESS_MAX + 1];
	uint64_t known_ids[MAX_MEMBERS];
	size_t n_known;
	char leader[RPC_ADDRESS_MAX + 1]; /* the last leader known ("" none) */
	struct change_op *change;    /* the change in flight (one at a time) */
};

/* ---- identity -------------------------------------------------------------------------------- */

static void id_path(const struct master *m, char *out, size_t cap)
{
	snprintf(out, cap, "%s/%s", m->data_dir, ID_FILE);
}

/* The id in DIR/master.id into *id: 0, DOCRAFT_ENOTFOUND (no file), or an
 * error for a file that cannot be read or does not hold an id. */
static int read_id(struct master *m, raft_id *id, char *errmsg)
{
	char path[4200];
	uint8_t *data;
	size_t len;
	char *end;
	unsigned long long v;
	int rv;

	id_path(m, path, sizeof path);
	if ((rv = fs_read_file(path, 64, &data, &len, errmsg)) != 0)
		return rv;
	v = strtoull((const char *)data, &end, 10);
	rv = (end == (char *)data || (*end != '\n' && *end != '\0') || v == 0)
		     ? err_set(errmsg, DOCRAFT_ECORRUPT, "%s does not hold a raft id", path)
		     : 0;
	free(data);
	*id = (raft_id)v;
	return rv;
}

static int write_id(struct master *m, raft_id id, char *errmsg)
{
	char path[4200];
	char text[32];
	int n = snprintf(text, sizeof text, "%llu\n", (unsigned long long)id);
	id_path(m, path, sizeof path);
	return fs_write_file(path, text, (size_t)n, errmsg);
}

int members_open(struct master *m, const struct master_options *o, char *errmsg)
{
	struct tablet_peer peers[MASTER_MAX_MASTERS];
	raft_id id = 0;
	int rv;

	m->mem = xcalloc(1, sizeof *m->mem);
	for (size_t i = 0; i < o->n_join && i < MASTER_MAX_MASTERS; i++) {
		struct sockaddr_in sa;
		if (o->join[i] == NULL || strlen(o->join[i]) > RPC_ADDRESS_MAX ||
		    listener_parse_address(o->join[i], &sa, errmsg) != 0)
			return err_set(errmsg, DOCRAFT_EINVAL, "bad --join address '%s'",
				       o->join[i] != NULL ? o->join[i] : "");
		snprintf(m->mem->join[i], sizeof m->mem->join[i], "%s", o->join[i]);
		m->mem->n_join++;
	}
	if (o->n_join > MASTER_MAX_MASTERS)
		return err_set(errmsg, DOCRAFT_EINVAL, "more than %d addresses in --join",
			       MASTER_MAX_MASTERS);
	rv = read_id(m, &id, errmsg);
	if (rv == 0) {
		m->raft_id = id;
		return master_open_catalog(m, NULL, 0, errmsg);
	}
	if (rv != DOCRAFT_ENOTFOUND)
		return rv;
	if (m->mem->n_join > 0) {
		LOG_INFO("master %s: joining through %s: waiting to be added "
			 "(docraft master add %s)", m->address, m->mem->join[0], m->address);
		return 0;
	}
	/* Bootstrap (or a data directory from before master.id): the
	 * position in --masters. */
	if (m->raft_id == 0)
		return err_set(errmsg, DOCRAFT_EINVAL,
			       "--address %s is not in the master list (a new master joins "
			       "with --join)", m->address);
	for (size_t i = 0; i < m->n_masters; i++) {
		peers[i].id = i + 1;
		peers[i].address = m->masters[i];
		peers[i].role = RAFT_VOTER;
	}
	if ((rv = master_open_catalog(m, peers, m->n_masters, errmsg)) != 0)
		return rv;
	return write_id(m, m->raft_id, errmsg);
}

/* ---- the configuration ----------------------------------------------------------------------- */

/* One member of the catalog tablet's Raft configuration. */
struct member {
	raft_id id;
	char address[RPC_ADDRESS_MAX + 1];
	int role; /* RAFT_VOTER, RAFT_STANDBY or RAFT_SPARE */
};

/* The catalog tablet's current configuration (the last appended, committed
 * or not: tablet_configuration) into cfg (MAX_MEMBERS at most); its
 * length, 0 while raft is not running or has no configuration yet. */
static size_t config(struct master *m, struct member *cfg)
{
	const struct raft_configuration *c;
	uint64_t index;
	size_t n = 0;

	if (m->t == NULL || !tablet_configuration(m->t, &c, &index))
		return 0;
	for (unsigned i = 0; i < c->n && n < MAX_MEMBERS; i++, n++) {
		cfg[n].id = c->servers[i].id;
		snprintf(cfg[n].address, sizeof cfg[n].address, "%s",
			 c->servers[i].address != NULL ? c->servers[i].address : "");
		cfg[n].role = c->servers[i].role;
	}
	return n;
}

static size_t find_member(const struct member *cfg, size_t n, const char *address)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(cfg[i].address, address) == 0)
			return i;
	return SIZE_MAX;
}

static size_t voters(const struct member *cfg, size_t n)
{
	size_t v = 0;
	for (size_t i = 0; i < n; i++)
		v += cfg[i].role == RAFT_VOTER;
	return v;
}

size_t members_addresses(struct master *m, struct arena *a, char ***out)
{
	struct member cfg[MAX_MEMBERS];
	size_t n = config(m, cfg);
	char **v = master_zalloc(a, n * sizeof *v);
	for (size_t i = 0; i < n; i++) {
		v[i] = arena_alloc(a, strlen(cfg[i].address) + 1);
		strcpy(v[i], cfg[i].address);
	}
	*out = v;
	return n;
}

const char *members_leader_hint(const struct master *m)
{
	/* A member between leaders names none (the old one may be dead). */
	return m->mem != NULL && m->mem->removed ? m->mem->leader : "";
}

static void removal_log(struct master *m)
{
	struct members *ms = m->mem;
	bool removed = ms->missing || ms->told;
	if (removed == ms->removed)
		return;
	ms->removed = removed;
	if (removed && !ms->member)
		LOG_WARN("master %s: raft id %llu is not in the masters' configuration and "
			 "never was here (an add that did not finish?): not serving; to join, "
			 "empty %s and start again with --join", m->address,
			 (unsigned long long)m->raft_id, m->data_dir);
	else if (removed)
		LOG_WARN("master %s: raft id %llu is not in the masters' configuration "
			 "(removed): not serving; last leader known: %s; stop this process",
			 m->address, (unsigned long long)m->raft_id,
			 ms->leader[0] != '\0' ? ms->leader : "none");
	else
		LOG_WARN("master %s: raft id %llu is a member again", m->address,
			 (unsigned long long)m->raft_id);
}

static void ask(struct master *m, const char *to);

void members_refresh(struct master *m)
{
	struct members *ms = m->mem;
	struct member cfg[MAX_MEMBERS];
	const char *addr = "";
	uint64_t now = master_now_ms(m);
	size_t n;
	bool in = false;

	if (ms == NULL || m->t == NULL)
		return;
	if (tablet_leader(m->t, &addr) != 0 && addr[0] != '\0') {
		snprintf(ms->leader, sizeof ms->leader, "%s", addr);
		ms->leaderless_since = 0;
		ms->told = false;
	} else if (ms->leaderless_since == 0) {
		ms->leaderless_since = now;
	}
	n = config(m, cfg);
	for (size_t i = 0; i < n; i++)
		in = in || (cfg[i].id == m->raft_id && strcmp(cfg[i].address, m->address) == 0);
	ms->missing = n > 0 && !in;
	ms->member = ms->member || in;
	removal_log(m);
	/* A removed master is not sent the configuration that removes it:
	 * without a leader for long, it asks the others (see the design): the
	 * members it knows, else (an empty replica: joined, then its add
	 * failed) the --join list, else --masters. */
	if (ms->leaderless_since != 0 && now - ms->leaderless_since >= LEADERLESS_MS &&
	    !ms->asking && now >= ms->ask_at) {
		size_t k = ms->ask_next++;
		const char *to = n > 0		    ? cfg[k % n].address
				 : ms->n_join > 0   ? ms->join[k % ms->n_join]
						    : m->masters[k % m->n_masters];
		ms->ask_at = now + LEADERLESS_MS / 2;
		if (strcmp(to, m->address) != 0)
			ask(m, to);
	}
}

/* ---- asking other masters -------------------------------------------------------------------- */

/* A member's question answered: resp lists the masters of one with a
 * leader; it lacks this master means this master was removed. */
static void asked_member(struct master *m, const Docraft__ListMastersResponse *resp)
{
	struct members *ms = m->mem;
	bool listed = false;

	if (resp->leader[0] == '\0' || strcmp(resp->leader, m->address) == 0 ||
	    strlen(resp->leader) > RPC_ADDRESS_MAX || resp->n_masters == 0)
		return;
	snprintf(ms->leader, sizeof ms->leader, "%s", resp->leader);
	ms->n_known = 0;
	for (size_t i = 0; i < resp->n_masters && i < resp->n_raft_ids; i++) {
		if (strcmp(resp->masters[i], m->address) == 0 && resp->raft_ids[i] == m->raft_id)
			listed = true;
		if (ms->n_known < MAX_MEMBERS && strlen(resp->masters[i]) <= RPC_ADDRESS_MAX) {
			snprintf(ms->known[ms->n_known], sizeof ms->known[0], "%s",
				 resp->masters[i]);
			ms->known_ids[ms->n_known++] = resp->raft_ids[i];
		}
	}
	ms->told = !listed;
	removal_log(m);
}

/* A joining master's question answered: resp may list it. */
static void asked_join(struct master *m, const Docraft__ListMastersResponse *resp)
{
	struct members *ms = m->mem;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	raft_id id = 0;

	for (size_t i = 0; i < resp->n_masters && i < resp->n_raft_ids; i++)
		if (strcmp(resp->masters[i], m->address) == 0)
			id = resp->raft_ids[i];
	if (id == 0) {
		if (resp->leader[0] != '\0' && strlen(resp->leader) <= RPC_ADDRESS_MAX)
			snprintf(ms->ask_hint, sizeof ms->ask_hint, "%s", resp->leader);
		return;
	}
	LOG_INFO("master %s: added to the masters as raft id %llu: opening the catalog replica",
		 m->address, (unsigned long long)id);
	m->raft_id = id;
	if (write_id(m, id, errmsg) != 0 || master_open_catalog(m, NULL, 0, errmsg) != 0) {
		LOG_ERROR("master %s: join: %s", m->address, errmsg);
		if (!m->fatal_sent && m->fatal_cb != NULL) {
			m->fatal_sent = true;
			m->fatal_cb(m->fatal_arg, errmsg);
		}
	}
}

static void asked(struct rpc_call_req *req, const struct rpc_result *res)
{
	struct master *m = req->data;
	struct members *ms = m->mem;
	Docraft__ListMastersResponse *resp;

	ms->asking = false;
	m->ops--;
	if (m->closing)
		return;
	ms->ask_hint[0] = '\0';
	if (res->status != 0) {
		if (res->status == DOCRAFT_ENOTLEADER && res->leader_address[0] != '\0')
			snprintf(ms->ask_hint, sizeof ms->ask_hint, "%s", res->leader_address);
		LOG_DEBUG("master %s: ListMasters: %s: %s", m->address,
			  docraft_strerror(res->status), res->message);
		return;
	}
	resp = docraft__list_masters_response__unpack(NULL, res->reply_len, res->reply);
	if (resp == NULL) {
		LOG_WARN("master %s: a ListMasters answer does not decode", m->address);
		return;
	}
	if (m->t == NULL)
		asked_join(m, resp);
	else
		asked_member(m, resp);
	docraft__list_masters_response__free_unpacked(resp, NULL);
}

static void ask(struct master *m, const char *to)
{
	struct members *ms = m->mem;
	Docraft__ListMastersRequest req = DOCRAFT__LIST_MASTERS_REQUEST__INIT;
	char errmsg[DOCRAFT_ERRMSG_SIZE];

	ms->ask_req.data = m;
	if (rpc_call_message(&m->cl, to, DOCRAFT__METHOD__MASTER_LIST_MASTERS, &req.base, 1000,
			     &ms->ask_req, asked, errmsg) != 0) {
		LOG_DEBUG("master %s: ListMasters to %s: %s", m->address, to, errmsg);
		ms->ask_hint[0] = '\0';
		return;
	}
	ms->asking = true;
	m->ops++;
}

void members_join_poll(struct master *m)
{
	struct members *ms = m->mem;
	char to[RPC_ADDRESS_MAX + 1];

	if (ms == NULL || m->t != NULL || ms->n_join == 0 || ms->asking ||
	    master_now_ms(m) < ms->ask_at || m->closing)
		return;
	ms->ask_at = master_now_ms(m) + ASK_MS;
	snprintf(to, sizeof to, "%s",
		 ms->ask_hint[0] != '\0' ? ms->ask_hint : ms->join[ms->ask_next++ % ms->n_join]);
	ask(m, to);
}

/* ---- ListMasters ----------------------------------------------------------------------------- */

enum rpc_dispatch_req members_list(void *ctx, struct rpc_call *call, void *req, void *obj)
{
	struct master *m = ctx;
	Docraft__ListMastersResponse resp = DOCRAFT__LIST_MASTERS_RESPONSE__INIT;
	struct member cfg[MAX_MEMBERS];
	char *addrs[MAX_MEMBERS];
	uint64_t ids[MAX_MEMBERS];
	const char *leader = "";
	size_t n;

	(void)req;
	(void)obj;
	if (m->closing) {
		rpc_reply_error(call, DOCRAFT_ECLOSED, "master shutting down", NULL, 0);
		return RPC_DISPATCH_FREE;
	}
	n = config(m, cfg);
	if (m->mem->told && m->mem->n_known > 0) {
		/* Removed, and told so: what the master that told it listed. */
		n = m->mem->n_known;
		for (size_t i = 0; i < n; i++) {
			snprintf(cfg[i].address, sizeof cfg[i].address, "%s", m->mem->known[i]);
			cfg[i].id = m->mem->known_ids[i];
		}
	}
	for (size_t i = 0; i < n; i++) {
		addrs[i] = cfg[i].address;
		ids[i] = cfg[i].id;
	}
	if (m->t != NULL && tablet_leader(m->t, &leader) == 0)
		leader = members_leader_hint(m);
	resp.n_masters = n;
	resp.masters = addrs;
	resp.n_raft_ids = n;
	resp.raft_ids = ids;
	resp.leader = (char *)leader;
	rpc_reply_message(call, &resp.base);
	return RPC_DISPATCH_FREE;
}

/* ---- ChangeMasters --------------------------------------------------------------------------- */

struct change_op {
	struct tablet_write w;
	struct batch b;
	struct master *m;
	struct rpc_call *call;
	uint64_t gen;
	int kind; /* DOCRAFT__CHANGE_MASTERS_REQUEST__KIND__* */
	char address[RPC_ADDRESS_MAX + 1];
	raft_id id;
	bool transfer;
	int failed; /* an add being rolled back: why it failed */
};

static void change_end(struct change_op *op, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Answers the call (status 0: the masters now) and frees op. */
static void change_end(struct change_op *op, int status, const char *fmt, ...)
{
	struct master *m = op->m;
	if (status == 0) {
		Docraft__ChangeMastersResponse resp = DOCRAFT__CHANGE_MASTERS_RESPONSE__INIT;
		struct arena a;
		arena_init(&a);
		resp.n_masters = members_addresses(m, &a, &resp.masters);
		rpc_reply_message(op->call, &resp.base);
		arena_free(&a);
		LOG_INFO("master %s: %s of master %s (raft id %llu) done", m->address,
			 op->kind == DOCRAFT__CHANGE_MASTERS_REQUEST__KIND__ADD ? "add" : "removal",
			 op->address, (unsigned long long)op->id);
	} else if (status == DOCRAFT_ENOTLEADER) {
		master_reply_not_leader(m, op->call);
	} else {
		char msg[DOCRAFT_ERRMSG_SIZE];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(msg, sizeof msg, fmt, ap);
		va_end(ap);
		rpc_reply_errorf(op->call, status, "%s", msg);
		LOG_WARN("master %s: change of master %s: %s", m->address, op->address, msg);
	}
	if (m->mem->change == op)
		m->mem->change = NULL;
	batch_free(&op->b);
	free(op);
}

static void changed(void *arg, int status);

/* Starts the Raft change op is at (after its document was written). */
static void change_raft(struct change_op *op)
{
	struct master *m = op->m;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	int rv;

	if (op->gen != m->gen || m->closing) {
		change_end(op, DOCRAFT_ELEADERLOST, "leadership changed; retry");
		return;
	}
	if (op->kind == DOCRAFT__CHANGE_MASTERS_REQUEST__KIND__ADD) {
		LOG_INFO("master %s: adding master %s as raft id %llu", m->address, op->address,
			 (unsigned long long)op->id);
		rv = tablet_add_replica(m->t, op->id, op->address, changed, op, errmsg);
	} else {
		LOG_INFO("master %s: removing master %s (raft id %llu)", m->address, op->address,
			 (unsigned long long)op->id);
		rv = tablet_remove_replica(m->t, op->id, changed, op, errmsg);
	}
	if (rv != 0) {
		change_end(op, rv, "%s", errmsg);
		return;
	}
	m->ops++;
}

/* An add whose promotion failed (the new master did not catch up in
 * time): its spare is removed again, so a later add starts clean. */
static bool roll_back(struct change_op *op, int status)
{
	struct master *m = op->m;
	struct member cfg[MAX_MEMBERS];
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	size_t n = config(m, cfg);
	size_t at = find_member(cfg, n, op->address);

	if (op->kind != DOCRAFT__CHANGE_MASTERS_REQUEST__KIND__ADD || op->failed != 0 ||
	    op->gen != m->gen || m->closing || at == SIZE_MAX || cfg[at].role == RAFT_VOTER)
		return false;
	if (tablet_remove_replica(m->t, op->id, changed, op, errmsg) != 0) {
		LOG_WARN("master %s: rolling back the add of %s: %s", m->address, op->address,
			 errmsg);
		return false;
	}
	LOG_WARN("master %s: master %s (raft id %llu) did not become a voter (%s): removing "
		 "it again", m->address, op->address, (unsigned long long)op->id,
		 docraft_strerror(status));
	op->failed = status;
	m->ops++;
	return true;
}

static void changed(void *arg, int status)
{
	struct change_op *op = arg;
	struct master *m = op->m;
	m->ops--;
	if (op->failed != 0) {
		/* TIMED_OUT: final for the client (metacache.c), unlike why the
		 * promotion failed. */
		change_end(op, DOCRAFT_ETIMEDOUT, "%s did not catch up as a new master (is it "
			   "running, with --join?): %s; its add was %s", op->address,
			   docraft_strerror(op->failed), status == 0 ? "rolled back" :
			   "not rolled back (remove it)");
		return;
	}
	if (status != 0) {
		if (!roll_back(op, status))
			change_end(op, status, "raft configuration change: %s",
				   docraft_strerror(status));
		return;
	}
	change_end(op, 0, "done");
}

static void doc_written(struct tablet_write *w, int status, uint64_t ht)
{
	struct change_op *op = w->data;
	(void)ht;
	op->m->ops--;
	if (status != 0) {
		change_end(op, status, "catalog write: %s%s", docraft_strerror(status),
			   status == DOCRAFT_ELEADERLOST ? " (outcome unknown)" : "");
		return;
	}
	change_raft(op);
}

/* Writes the masters document as op's change intends it (next id, the
 * members after it), then change_raft. */
static int write_doc(struct change_op *op, char *errmsg)
{
	struct master *m = op->m;
	struct member cfg[MAX_MEMBERS];
	struct cat_masters doc;
	size_t n = config(m, cfg);
	uint64_t next = m->cat.masters.next_id;
	int rv;

	memset(&doc, 0, sizeof doc);
	for (size_t i = 0; i < n; i++)
		if (cfg[i].id >= next)
			next = cfg[i].id + 1;
	if (op->kind == DOCRAFT__CHANGE_MASTERS_REQUEST__KIND__ADD)
		op->id = next++;
	for (size_t i = 0; i < n; i++) {
		if (op->kind == DOCRAFT__CHANGE_MASTERS_REQUEST__KIND__REMOVE && cfg[i].id == op->id)
			continue;
		doc.ids[doc.n] = cfg[i].id;
		snprintf(doc.addresses[doc.n], sizeof doc.addresses[doc.n], "%s", cfg[i].address);
		doc.n++;
	}
	if (op->kind == DOCRAFT__CHANGE_MASTERS_REQUEST__KIND__ADD && doc.n < CATALOG_MAX_MASTERS) {
		doc.ids[doc.n] = op->id;
		snprintf(doc.addresses[doc.n], sizeof doc.addresses[doc.n], "%s", op->address);
		doc.n++;
	}
	doc.next_id = next;
	batch_free(&op->b);
	batch_init(&op->b);
	if ((rv = catalog_write_masters(&op->b, &doc, errmsg)) != 0)
		return rv;
	/* The document is this leadership's from now on (a failed write
	 * leaves at most an id unused). */
	m->cat.masters = doc;
	master_write_prepare(m, &op->w, &op->b, doc_written, op);
	if ((rv = tablet_write(m->t, &op->w)) != 0)
		return err_set(errmsg, rv, "catalog write: %s", docraft_strerror(rv));
	m->ops++;
	return 0;
}

/* The leader itself is being removed: the transfer went (or timed out);
 * the caller retries on whoever leads now. */
static void transferred(void *arg, int status)
{
	struct change_op *op = arg;
	(void)status;
	LOG_INFO("master %s: leadership handed over before removing this master; the "
		 "removal is retried on the new leader", op->m->address);
	change_end(op, DOCRAFT_ENOTLEADER, "leadership handed over");
}

enum rpc_dispatch_req members_change(void *ctx, struct rpc_call *call, void *req, void *obj)
{
	struct master *m = ctx;
	const Docraft__ChangeMastersRequest *rq = req;
	struct member cfg[MAX_MEMBERS];
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	struct sockaddr_in sa;
	struct change_op *op;
	size_t n, at;
	int rv;

	(void)obj;
	if (rq->kind != DOCRAFT__CHANGE_MASTERS_REQUEST__KIND__ADD &&
	    rq->kind != DOCRAFT__CHANGE_MASTERS_REQUEST__KIND__REMOVE) {
		rpc_reply_errorf(call, DOCRAFT_EINVAL, "ChangeMasters: kind must be ADD or REMOVE");
		return RPC_DISPATCH_FREE;
	}
	if (rq->address == NULL || strlen(rq->address) > RPC_ADDRESS_MAX ||
	    listener_parse_address(rq->address, &sa, errmsg) != 0 || sa.sin_port == 0) {
		rpc_reply_errorf(call, DOCRAFT_EINVAL, "ChangeMasters: bad address '%s': "
				 "IP:PORT expected", rq->address != NULL ? rq->address : "");
		return RPC_DISPATCH_FREE;
	}
	if (m->mem->change != NULL && m->mem->change->kind == (int)rq->kind &&
	    strcmp(m->mem->change->address, rq->address) == 0) {
		/* A retry of the change running (its caller timed out). */
		rpc_reply_errorf(call, DOCRAFT_EUNAVAILABLE, "this change (%s) is running; retry",
				 rq->address);
		return RPC_DISPATCH_FREE;
	}
	if (m->mem->change != NULL) {
		rpc_reply_errorf(call, DOCRAFT_EBUSY, "a master change is running (%s %s); "
				 "one at a time", m->mem->change->kind ==
				 DOCRAFT__CHANGE_MASTERS_REQUEST__KIND__ADD ? "add" : "remove",
				 m->mem->change->address);
		return RPC_DISPATCH_FREE;
	}
	n = config(m, cfg);
	at = find_member(cfg, n, rq->address);
	op = xcalloc(1, sizeof *op);
	op->m = m;
	op->call = call;
	op->gen = m->gen;
	op->kind = rq->kind;
	snprintf(op->address, sizeof op->address, "%s", rq->address);
	batch_init(&op->b);
	m->mem->change = op;
	if (rq->kind == DOCRAFT__CHANGE_MASTERS_REQUEST__KIND__ADD) {
		if (at != SIZE_MAX && cfg[at].role == RAFT_VOTER) {
			op->id = cfg[at].id;
			change_end(op, 0, "done");
			return RPC_DISPATCH_FREE;
		}
		if (voters(cfg, n) >= MASTER_MAX_MASTERS) {
			change_end(op, DOCRAFT_EINVAL, "already %zu masters: at most %d",
				   voters(cfg, n), MASTER_MAX_MASTERS);
			return RPC_DISPATCH_FREE;
		}
		if (at != SIZE_MAX) {
			change_end(op, DOCRAFT_EINVAL, "%s is a non-voting member left by an add "
				   "that did not finish: remove it, empty its data directory and "
				   "add it again", rq->address);
			return RPC_DISPATCH_FREE;
		}
	} else {
		if (at == SIZE_MAX) {
			change_end(op, DOCRAFT_ENOTFOUND, "%s is not a master", rq->address);
			return RPC_DISPATCH_FREE;
		}
		op->id = cfg[at].id;
		if (cfg[at].role == RAFT_VOTER && voters(cfg, n) == 1) {
			change_end(op, DOCRAFT_EINVAL, "%s is the last master", rq->address);
			return RPC_DISPATCH_FREE;
		}
		if (op->id == m->raft_id) {
			rv = tablet_transfer(m->t, 0, transferred, op, errmsg);
			if (rv != 0)
				change_end(op, rv, "leadership transfer: %s", errmsg);
			else
				op->transfer = true;
			return RPC_DISPATCH_FREE;
		}
	}
	if ((rv = write_doc(op, errmsg)) != 0)
		change_end(op, rv, "%s", errmsg);
	return RPC_DISPATCH_FREE;
}

void members_close(struct master *m)
{
	if (m->mem == NULL)
		return;
	if (m->mem->change != NULL) {
		/* Only a transfer that raft dropped without a callback is left. */
		ASSERT(m->mem->change->transfer);
		change_end(m->mem->change, DOCRAFT_ECLOSED, "master shutting down");
	}
	free(m->mem);
	m->mem = NULL;
}
