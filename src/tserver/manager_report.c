/* What the tablet manager tells about its replicas: the TabletReport of
 * each (heartbeats to the master, the LIST answer) and the names of the
 * roles. See manager.h for the contract; loop thread only, like the rest
 * of the manager. */
#include "tserver/manager.h"

#include <string.h>

#include "common/arena.h"
#include "tablet/tablet.h"

const char *manager_role_name(enum tablet_role role)
{
	switch (role) {
	case TABLET_FOLLOWER: return "follower";
	case TABLET_CANDIDATE: return "candidate";
	case TABLET_LEADER_NOT_READY: return "leader_not_ready";
	case TABLET_LEADER: return "leader";
	case TABLET_COPYING: return "copying";
	case TABLET_FAILED: return "failed";
	case TABLET_CLOSED: return "closed";
	}
	return "failed";
}

/* TabletReport.config / config_index (issue 15): raft's current
 * configuration, voters and spares (standbys count as non-voters); the
 * replica knows no tserver uuids, so tserver_uuid stays "". */
static void report_config(struct tablet *t, Docraft__TabletReport *out, struct arena *a)
{
	const struct raft_configuration *c;
	uint64_t index;

	if (!tablet_configuration(t, &c, &index))
		return;
	out->config_index = index;
	out->n_config = c->n;
	out->config = arena_alloc(a, c->n * sizeof *out->config);
	for (unsigned i = 0; i < c->n; i++) {
		Docraft__Peer *p = arena_alloc(a, sizeof *p);
		docraft__peer__init(p);
		p->raft_id = c->servers[i].id;
		p->address = arena_dup(a, c->servers[i].address, strlen(c->servers[i].address) + 1);
		p->tserver_uuid = (char *)"";
		p->voter = c->servers[i].role == RAFT_VOTER;
		out->config[i] = p;
	}
}

void manager_report(struct replica *r, Docraft__TabletReport *out, struct arena *a)
{
	struct tablet_status st;

	docraft__tablet_report__init(out);
	out->tablet_id = r->id;
	out->table = r->has_schema ? r->schema.table : (char *)"";
	out->raft_id = r->raft_id;
	out->failures = r->open_failures;
	out->recoveries = r->reopens;
	if (r->state != REPLICA_OPEN || r->t == NULL) {
		out->role = (char *)"failed";
		out->error = r->errmsg;
		return;
	}
	tablet_get_status(r->t, &st);
	out->role = (char *)manager_role_name(st.role);
	out->term = st.term;
	out->leader_raft_id = st.leader_id;
	out->leader_address = arena_dup(a, st.leader_address, strlen(st.leader_address) + 1);
	out->applied_index = st.applied_index;
	out->last_index = st.last_index;
	out->entries = st.entries;
	out->writes = st.writes;
	out->lease_reads = st.lease_reads;
	out->barrier_reads = st.barrier_reads;
	out->lease_left_ms = st.lease_left_ms;
	out->error = arena_dup(a, st.errmsg, strlen(st.errmsg) + 1);
	out->failures += st.failures;
	out->recoveries += st.recoveries;
	report_config(r->t, out, a);
}

/* manager_reports' two passes over the visible replicas. */
struct reports {
	struct arena *a;
	Docraft__TabletReport **out; /* NULL while counting */
	size_t n;
};

static void report_one(void *arg, struct replica *r)
{
	struct reports *rs = arg;
	if (rs->out != NULL) {
		rs->out[rs->n] = arena_alloc(rs->a, sizeof *rs->out[rs->n]);
		manager_report(r, rs->out[rs->n], rs->a);
	}
	rs->n++;
}

size_t manager_reports(struct manager *m, struct arena *a, Docraft__TabletReport ***out)
{
	struct reports rs = {.a = a};

	*out = NULL;
	manager_foreach(m, report_one, &rs);
	if (rs.n == 0)
		return 0;
	rs.out = arena_alloc(a, rs.n * sizeof *rs.out);
	rs.n = 0;
	manager_foreach(m, report_one, &rs);
	*out = rs.out;
	return rs.n;
}
