/* The self-healing admin commands (issue 15; docs/cluster.md,
 * "Self-healing: commands and flags"): `docraft cluster` (alias `status`),
 * `docraft drain` / `undrain`.
 *
 * Design note. The master decides and moves; the client only asks and
 * shows. Drain is one MASTER_DRAIN call (the master persists the flag and
 * answers what is left); waiting for the end is the client's: it polls
 * MASTER_LIST_TSERVERS every DRAIN_POLL_MS and prints a progress line each
 * time the counts change, until the master reports the tserver drained
 * (draining and no replica left). The tserver is named by uuid or address:
 * the master resolves the name for the call, the client resolves it again
 * in the listings to show both and to find it while polling. An older
 * master that does not fill `drained` is served by "draining and 0
 * replicas". */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/admin.h"
#include "client/internal.h"
#include "common/buf.h"
#include "common/check.h"
#include "common/mem.h"
#include "rpc.pb-c.h"

#define DRAIN_POLL_MS 1000
#define LIST_MAX 100 /* tablet ids the master lists (ClusterStatusResponse) */

/* ---- the cluster summary ------------------------------------------------------------- */

/* The address of the tserver with uuid among st's, else the uuid itself. */
static const char *address_of(const Docraft__ClusterStatusResponse *st, const char *uuid)
{
	for (size_t i = 0; i < st->n_tservers; i++)
		if (strcmp(st->tservers[i]->uuid, uuid) == 0 && st->tservers[i]->address[0] != '\0')
			return st->tservers[i]->address;
	return uuid[0] != '\0' ? uuid : "-";
}

/* "N (id, id, ... and M more)": count, then the ids the master listed. */
static void count_and_ids(struct buf *out, const char *name, uint32_t count, char *const *ids,
			  size_t n_ids)
{
	buf_printf(out, "%-18s%u", name, count);
	if (n_ids > 0) {
		buf_printf(out, " (");
		for (size_t i = 0; i < n_ids && i < 10; i++)
			buf_printf(out, "%s%s", i ? ", " : "", ids[i]);
		if (count > (n_ids < 10 ? n_ids : 10))
			buf_printf(out, " and %zu more", (size_t)count - (n_ids < 10 ? n_ids : 10));
		buf_printf(out, ")");
	}
	buf_printf(out, "\n");
}

void admin_format_cluster(const Docraft__ClusterStatusResponse *st, struct buf *out)
{
	static const char *const header[] = {"TABLET", "REASON", "FROM", "TO",
					     "NEW-RAFT-ID", "STEP", "AGE"};
	uint32_t live = 0, unreachable = 0, failed = 0, other = 0, draining = 0, drained = 0;

	buf_printf(out, "%-18s%s\n", "master leader:",
		   st->master_leader[0] != '\0' ? st->master_leader : "(unknown)");
	buf_printf(out, "%-18s", "masters:");
	for (size_t i = 0; i < st->n_masters; i++)
		buf_printf(out, "%s%s", i ? ", " : "", st->masters[i]);
	buf_printf(out, "%s\n", st->n_masters == 0 ? "(unknown)" : "");
	for (size_t i = 0; i < st->n_tservers; i++) {
		const char *s = admin_tserver_state(st->tservers[i]);
		if (strcmp(s, "live") == 0)
			live++;
		else if (strcmp(s, "unreachable") == 0)
			unreachable++;
		else if (strcmp(s, "failed") == 0)
			failed++;
		else
			other++;
		draining += st->tservers[i]->draining;
		drained += st->tservers[i]->drained;
	}
	buf_printf(out, "%-18s%u live, %u unreachable, %u failed, %u draining (%u drained)",
		   "tservers:", live, unreachable, failed, draining, drained);
	if (other > 0)
		buf_printf(out, ", %u in another state", other);
	buf_printf(out, "\n%-18s%u\n%-18s%u\n", "tables:", st->tables, "tablets:", st->tablets);
	count_and_ids(out, "under-replicated:", st->under_replicated,
		      st->under_replicated_tablets, st->n_under_replicated_tablets);
	count_and_ids(out, "leaderless:", st->leaderless, st->leaderless_tablets,
		      st->n_leaderless_tablets);
	buf_printf(out, "%-18s%zu\n", "moves in flight:", st->n_moves);
	if (st->n_moves > 0) {
		struct admin_table t;
		struct buf tb = BUF_INIT;
		const char *line;
		admin_table_init(&t, 7, header);
		for (size_t i = 0; i < st->n_moves; i++) {
			const Docraft__MoveInfo *m = st->moves[i];
			char *row[7];
			row[0] = admin_fmt("%s", m->tablet_id);
			row[1] = admin_fmt("%s", m->reason[0] ? m->reason : "-");
			row[2] = admin_fmt("%s", address_of(st, m->from_uuid));
			row[3] = admin_fmt("%s", address_of(st, m->to_uuid));
			row[4] = admin_fmt("%" PRIu64, m->new_raft_id);
			row[5] = admin_fmt("%s", m->step[0] ? m->step : "-");
			row[6] = admin_fmt("%" PRIu64 ".%" PRIu64 "s", m->age_ms / 1000,
					   m->age_ms % 1000 / 100);
			admin_table_row(&t, row);
		}
		admin_table_format(&t, &tb);
		/* Indented under "moves in flight:". */
		line = buf_cstr(&tb);
		while (*line != '\0') {
			size_t n = strcspn(line, "\n");
			buf_printf(out, "  %.*s\n", (int)n, line);
			line += n + (line[n] == '\n');
		}
		buf_free(&tb);
	}
}

static int cluster_status(docraft_client *c, Docraft__ClusterStatusResponse **out)
{
	Docraft__ClusterStatusRequest req = DOCRAFT__CLUSTER_STATUS_REQUEST__INIT;
	struct buf reply = BUF_INIT;
	int rv = client_master_call(c, DOCRAFT__METHOD__MASTER_CLUSTER_STATUS, &req.base, &reply);
	*out = (Docraft__ClusterStatusResponse *)admin_answer(
		&rv, &reply, &docraft__cluster_status_response__descriptor, "ClusterStatus");
	return *out == NULL ? rv : 0;
}

int docraft_admin_cluster(docraft_client *c, const docraft_printer *p)
{
	Docraft__ClusterStatusResponse *st;
	struct buf b = BUF_INIT;
	int rv;

	if (c == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	if ((rv = cluster_status(c, &st)) != 0)
		return rv;
	admin_format_cluster(st, &b);
	admin_out(p, &b);
	buf_free(&b);
	docraft__cluster_status_response__free_unpacked(st, NULL);
	return 0;
}

/* ---- drain ------------------------------------------------------------------------------- */

/* What the listing says of one tserver. */
struct ts_view {
	bool found;
	char uuid[64], address[64];
	bool draining, drained;
	uint32_t replicas, leaders, moves;
};

/* The tserver named (uuid or address) in the master's listing. */
static int find_tserver(docraft_client *c, const char *name, struct ts_view *v)
{
	Docraft__ListTServersRequest req = DOCRAFT__LIST_TSERVERS_REQUEST__INIT;
	Docraft__ListTServersResponse *resp;
	struct buf reply = BUF_INIT;
	int rv = client_master_call(c, DOCRAFT__METHOD__MASTER_LIST_TSERVERS, &req.base, &reply);

	memset(v, 0, sizeof *v);
	resp = (Docraft__ListTServersResponse *)admin_answer(
		&rv, &reply, &docraft__list_tservers_response__descriptor, "ListTServers");
	if (resp == NULL)
		return rv;
	for (size_t i = 0; i < resp->n_tservers && !v->found; i++) {
		const Docraft__TServerInfo *ts = resp->tservers[i];
		if (strcmp(ts->uuid, name) != 0 && strcmp(ts->address, name) != 0)
			continue;
		v->found = true;
		snprintf(v->uuid, sizeof v->uuid, "%s", ts->uuid);
		snprintf(v->address, sizeof v->address, "%s", ts->address);
		v->draining = ts->draining;
		v->replicas = ts->tablets;
		v->leaders = ts->leaders;
		v->moves = ts->moves;
		/* An older master does not say "drained". */
		v->drained = ts->drained || (ts->draining && ts->tablets == 0);
	}
	docraft__list_tservers_response__free_unpacked(resp, NULL);
	return 0;
}

static void say(const docraft_printer *p, const char *f, ...) __attribute__((format(printf, 2, 3)));
static void say(const docraft_printer *p, const char *f, ...)
{
	struct buf b = BUF_INIT;
	va_list ap;
	char *s;
	va_start(ap, f);
	if (vasprintf(&s, f, ap) < 0)
		PANIC("out of memory");
	va_end(ap);
	buf_printf(&b, "%s\n", s);
	free(s);
	admin_out(p, &b);
	buf_free(&b);
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0)
		;
}

/* Polls the listing until the tserver is drained, printing a line each time
 * its counts change; at most wait_s seconds. */
static int wait_drained(docraft_client *c, const char *name, const char *label, uint32_t wait_s,
			const docraft_printer *p)
{
	uint64_t waited_ms = 0;
	struct ts_view v, last;
	int rv;

	memset(&last, 0xff, sizeof last);
	for (;;) {
		if ((rv = find_tserver(c, name, &v)) != 0)
			return rv;
		if (!v.found)
			return client_error(DOCRAFT_ENOTFOUND,
					    "tserver %s is no longer listed by the master", label);
		if (!v.draining)
			return client_error(DOCRAFT_EINVAL,
					    "tserver %s is no longer draining (undrained?)", label);
		if (v.drained) {
			say(p, "%s: drained: no replica left (%" PRIu64 " s); it can be stopped",
			    label, waited_ms / 1000);
			return 0;
		}
		if (v.replicas != last.replicas || v.leaders != last.leaders ||
		    v.moves != last.moves)
			say(p, "%s: draining: %u replicas, %u leaders left, %u moves in flight (%" PRIu64
			    " s)", label, v.replicas, v.leaders, v.moves, waited_ms / 1000);
		last = v;
		if (waited_ms >= (uint64_t)wait_s * 1000)
			return client_error(DOCRAFT_ETIMEDOUT,
					    "tserver %s not drained after %u s: %u replicas and "
					    "%u leaders left",
					    label, wait_s, v.replicas, v.leaders);
		sleep_ms(DRAIN_POLL_MS);
		waited_ms += DRAIN_POLL_MS;
	}
}

int docraft_admin_drain(docraft_client *c, const char *tserver, bool undrain, uint32_t wait_s,
			const docraft_printer *p)
{
	Docraft__DrainRequest req = DOCRAFT__DRAIN_REQUEST__INIT;
	Docraft__DrainResponse *resp;
	struct buf reply = BUF_INIT;
	struct ts_view v;
	char label[160];
	int rv;

	if (c == NULL || tserver == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	if (tserver[0] == '\0' || strlen(tserver) >= 64)
		return client_error(DOCRAFT_EINVAL, "'%s' is not a tserver uuid or address",
				    tserver);
	req.tserver = (char *)tserver;
	req.undrain = undrain;
	rv = client_master_call(c, DOCRAFT__METHOD__MASTER_DRAIN, &req.base, &reply);
	resp = (Docraft__DrainResponse *)admin_answer(
		&rv, &reply, &docraft__drain_response__descriptor, "Drain");
	if (resp == NULL)
		return rv;
	/* Both names in the lines, when the listing knows the tserver. */
	if (find_tserver(c, tserver, &v) == 0 && v.found)
		snprintf(label, sizeof label, "%s (%s)", v.address, v.uuid);
	else
		snprintf(label, sizeof label, "%s", tserver);
	if (undrain)
		say(p, "%s: no longer draining; it holds %u replicas and leads %u tablets",
		    label, resp->replicas_left, resp->leaders_left);
	else
		say(p, "%s: draining: %u replicas and %u leaders left to move", label,
		    resp->replicas_left, resp->leaders_left);
	docraft__drain_response__free_unpacked(resp, NULL);
	if (undrain || wait_s == 0)
		return 0;
	return wait_drained(c, tserver, label, wait_s, p);
}
