/* The master's HTTP endpoints. See http_master.h.
 *
 * Design. One pass over the catalog (struct view) decides, per tablet of a
 * running table, its leader as reported (catalog_tablet_leader), its live
 * replicas (reported up in their tserver's latest heartbeat, the tserver
 * live) and so its health: leaderless (no leader reported),
 * under-replicated (fewer live replicas than the table's replication
 * factor), else ok; and per tserver its replicas and leaderships. /metrics,
 * the JSON and the pages render that view. A tablet being dropped
 * (CAT_DELETED, waiting for its purge) is not counted. */
#include "master/http_master.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/mem.h"
#include "http/metrics.h"
#include "http/page.h"
#include "master/internal.h"
#include "master/moves.h"
#include "server/web.h"

enum health { H_OK = 0, H_UNDER, H_LEADERLESS };

static const char *health_name(enum health h)
{
	return h == H_OK ? "ok" : h == H_UNDER ? "under_replicated" : "leaderless";
}

struct tablet_view {
	const struct cat_tablet *tb;
	const struct cat_replica *leader; /* NULL: none reported */
	uint32_t live, rf;
	enum health health;
};

struct tserver_view {
	const struct cat_tserver *ts;
	bool live;
	uint64_t replicas, leaders;
};

struct view {
	struct master *m; /* NULL: not open */
	bool leader;      /* serving: the ready leader, catalog loaded */
	const char *leader_address; /* the leader as the catalog tablet knows it */
	struct tablet_status cat;   /* the catalog tablet */
	bool has_cat;
	struct tablet_view *tablets;
	size_t n_tablets;
	struct tserver_view *tservers;
	size_t n_tservers, live_tservers;
	size_t leaderless, under;
};

static void view_take(struct master_http *h, struct view *v)
{
	struct master *m = *h->m;
	uint64_t now;

	memset(v, 0, sizeof *v);
	v->leader_address = "";
	v->m = m;
	if (m == NULL)
		return;
	if (m->t != NULL) {
		tablet_get_status(m->t, &v->cat);
		v->has_cat = true;
		tablet_leader(m->t, &v->leader_address);
	}
	v->leader = m->leader && m->loaded;
	if (!v->leader)
		return;
	now = master_now_ms(m);
	v->tservers = xcalloc(m->cat.n_tservers + 1, sizeof *v->tservers);
	v->n_tservers = m->cat.n_tservers;
	for (size_t i = 0; i < m->cat.n_tservers; i++) {
		v->tservers[i].ts = m->cat.tservers[i];
		v->tservers[i].live =
			catalog_tserver_live(m->cat.tservers[i], now, m->tserver_timeout_ms);
		v->live_tservers += v->tservers[i].live;
	}
	v->tablets = xcalloc(m->cat.n_tablets + 1, sizeof *v->tablets);
	for (size_t i = 0; i < m->cat.n_tablets; i++) {
		const struct cat_tablet *tb = m->cat.tablets[i];
		const struct cat_table *t = catalog_find_table(&m->cat, tb->table);
		struct tablet_view *tv;
		if (tb->state != CAT_RUNNING || t == NULL || t->state != CAT_RUNNING)
			continue;
		tv = &v->tablets[v->n_tablets++];
		tv->tb = tb;
		tv->rf = t->rf != 0 ? t->rf : tb->n_replicas;
		tv->leader = catalog_tablet_leader(&m->cat, tb, now, m->tserver_timeout_ms);
		for (uint32_t k = 0; k < tb->n_replicas; k++) {
			size_t ix = catalog_tserver_index(&m->cat, tb->replicas[k].uuid);
			if (moves_replica_live(m, tb, &tb->replicas[k], now))
				tv->live++;
			if (ix < v->n_tservers) {
				v->tservers[ix].replicas++;
				if (&tb->replicas[k] == tv->leader)
					v->tservers[ix].leaders++;
			}
		}
		tv->health = tv->leader == NULL ? H_LEADERLESS : tv->live < tv->rf ? H_UNDER : H_OK;
		v->leaderless += tv->health == H_LEADERLESS;
		v->under += tv->health == H_UNDER;
	}
}

static void view_free(struct view *v)
{
	free(v->tablets);
	free(v->tservers);
}

/* ---- /metrics -------------------------------------------------------------------------------- */

static void serve_metrics(struct master_http *h, const struct view *v, struct buf *b)
{
	struct metrics m;
	struct metrics_labels l;

	metrics_init(&m, b);
	server_metrics(h->proc, &m);
	metrics_one(&m, "docraft_master_is_leader", "gauge",
		    "1 on the master leader once its catalog is loaded.", v->leader);
	if (v->has_cat) {
		const struct metrics_row rows[] = {
			{"docraft_master_catalog_term", "gauge", "Raft term of the catalog tablet.",
			 v->cat.term},
			{"docraft_master_catalog_commit_index", "gauge",
			 "Highest catalog Raft index known committed.", v->cat.commit_index},
			{"docraft_master_catalog_applied_index", "gauge",
			 "Highest catalog Raft index applied.", v->cat.applied_index},
			{"docraft_master_catalog_leader_changes_total", "counter",
			 "Times this master became or stopped being the catalog leader.",
			 v->cat.leader_changes},
		};
		metrics_rows(&m, rows, sizeof rows / sizeof rows[0]);
	}
	if (!v->leader)
		return; /* the cluster families come from the leader only */
	metrics_family(&m, "docraft_master_tservers", "gauge",
		       "Tablet servers known, by liveness (live: heartbeat within "
		       "--tserver-timeout-ms; dead: not).");
	metrics_labels_reset(&l);
	metrics_label(&l, "state", "live");
	metrics_u64(&m, "docraft_master_tservers", &l, v->live_tservers);
	metrics_labels_reset(&l);
	metrics_label(&l, "state", "dead");
	metrics_u64(&m, "docraft_master_tservers", &l, v->n_tservers - v->live_tservers);
	{
		const struct metrics_row rows[] = {
			{"docraft_master_tables", "gauge", "Tables.", v->m->cat.n_tables},
			{"docraft_master_tablets", "gauge", "Tablets of the tables.", v->n_tablets},
			{"docraft_master_tablets_leaderless", "gauge",
			 "Tablets whose leader no live tserver reports.", v->leaderless},
			{"docraft_master_tablets_under_replicated", "gauge",
			 "Tablets with a leader but fewer live replicas than their replication "
			 "factor.",
			 v->under},
		};
		metrics_rows(&m, rows, sizeof rows / sizeof rows[0]);
	}
	for (int fam = 0; fam < 3; fam++) {
		static const char *const names[] = {"docraft_master_tserver_replicas",
						    "docraft_master_tserver_leaders",
						    "docraft_master_tserver_heartbeat_age_seconds"};
		static const char *const helps[] = {
			"Replicas the catalog places on the tserver.",
			"Tablets whose reported leader is on the tserver.",
			"Seconds since the tserver's last heartbeat."};
		metrics_family(&m, names[fam], "gauge", helps[fam]);
		for (size_t i = 0; i < v->n_tservers; i++) {
			const struct tserver_view *t = &v->tservers[i];
			metrics_labels_reset(&l);
			metrics_label(&l, "tserver", t->ts->uuid);
			metrics_label(&l, "address", t->ts->address);
			if (fam == 0)
				metrics_u64(&m, names[0], &l, t->replicas);
			else if (fam == 1)
				metrics_u64(&m, names[1], &l, t->leaders);
			else
				metrics_double(&m, names[2], &l,
					       (double)(master_now_ms(v->m) - t->ts->last_hb_ms) /
						       1e3);
		}
	}
}

/* ---- /api/v1/cluster ------------------------------------------------------------------------- */

static void json_replica(struct buf *b, const struct master *m, const struct cat_tablet *tb,
			 const struct cat_replica *r, const struct cat_replica *leader)
{
	buf_printf(b, "{\"raft_id\":%" PRIu64 ",\"uuid\":", r->raft_id);
	http_json_str(b, r->uuid);
	buf_printf(b, ",\"address\":");
	http_json_str(b, r->address);
	buf_printf(b, ",\"live\":%s,\"leader\":%s}",
		   moves_replica_live(m, tb, r, master_now_ms(m)) ? "true" : "false",
		   r == leader ? "true" : "false");
}

static void serve_json(const struct view *v, struct buf *b)
{
	struct master *m = v->m;

	buf_printf(b, "{\"leader\":%s,\"leader_address\":", v->leader ? "true" : "false");
	http_json_str(b, v->leader_address);
	if (!v->leader) {
		buf_printf(b, "}\n");
		return;
	}
	buf_printf(b, ",\"tservers\":[");
	for (size_t i = 0; i < v->n_tservers; i++) {
		const struct tserver_view *t = &v->tservers[i];
		buf_printf(b, "%s{\"uuid\":", i ? "," : "");
		http_json_str(b, t->ts->uuid);
		buf_printf(b, ",\"address\":");
		http_json_str(b, t->ts->address);
		buf_printf(b,
			   ",\"live\":%s,\"heartbeat_age_ms\":%" PRIu64 ",\"replicas\":%" PRIu64
			   ",\"leaders\":%" PRIu64 "}",
			   t->live ? "true" : "false", master_now_ms(m) - t->ts->last_hb_ms,
			   t->replicas, t->leaders);
	}
	buf_printf(b, "],\"tables\":[");
	for (size_t i = 0; i < m->cat.n_tables; i++) {
		const struct cat_table *t = m->cat.tables[i];
		buf_printf(b, "%s{\"name\":", i ? "," : "");
		http_json_str(b, t->name);
		buf_printf(b, ",\"id\":");
		http_json_str(b, t->id);
		buf_printf(b, ",\"replication_factor\":%" PRIu32 ",\"tablets\":%zu}", t->rf,
			   t->n_tablets);
	}
	buf_printf(b, "],\"tablets\":[");
	for (size_t i = 0; i < v->n_tablets; i++) {
		const struct tablet_view *tv = &v->tablets[i];
		buf_printf(b, "%s{\"id\":", i ? "," : "");
		http_json_str(b, tv->tb->id);
		buf_printf(b, ",\"table\":");
		http_json_str(b, tv->tb->table);
		buf_printf(b, ",\"partition\":[%" PRIu32 ",%" PRIu32 "],\"health\":\"%s\",\"leader\":",
			   tv->tb->start, tv->tb->end, health_name(tv->health));
		http_json_str(b, tv->leader != NULL ? tv->leader->address : "");
		buf_printf(b, ",\"live_replicas\":%" PRIu32 ",\"replication_factor\":%" PRIu32
			      ",\"replicas\":[",
			   tv->live, tv->rf);
		for (uint32_t k = 0; k < tv->tb->n_replicas; k++) {
			if (k)
				buf_push(b, ',');
			json_replica(b, m, tv->tb, &tv->tb->replicas[k], tv->leader);
		}
		buf_printf(b, "]}");
	}
	buf_printf(b, "],\"leaderless\":%zu,\"under_replicated\":%zu}\n", v->leaderless,
		   v->under);
}

/* ---- pages ----------------------------------------------------------------------------------- */

static const char *const nav[] = {"/", "Overview", "/metrics", "Metrics", "/api/v1/cluster",
				  "JSON", NULL};

static bool not_leader_page(const struct view *v, struct buf *b)
{
	if (v->leader)
		return false;
	buf_printf(b, "<p class=\"warn\">This master is not the leader: it holds no catalog. ");
	if (v->leader_address[0] != '\0') {
		buf_printf(b, "The leader's RPC address is <code>");
		http_html(b, v->leader_address);
		buf_printf(b, "</code>.");
	} else {
		buf_printf(b, "No leader is known (an election may be running).");
	}
	buf_printf(b, "</p>\n");
	return true;
}

static void tablet_row(struct buf *b, const struct master *m, const struct tablet_view *tv)
{
	buf_printf(b, "<tr%s><td>", tv->health != H_OK ? " class=\"bad\"" : "");
	http_html(b, tv->tb->id);
	buf_printf(b, "</td><td>");
	http_html(b, tv->tb->table);
	buf_printf(b, "</td><td class=\"num\">[%" PRIu32 ", %" PRIu32 ")</td><td class=\"%s\">%s</td><td>",
		   tv->tb->start, tv->tb->end, tv->health == H_OK ? "ok" : "bad",
		   health_name(tv->health));
	http_html(b, tv->leader != NULL ? tv->leader->address : "none");
	buf_printf(b, "</td><td>");
	for (uint32_t k = 0; k < tv->tb->n_replicas; k++) {
		const struct cat_replica *r = &tv->tb->replicas[k];
		bool live = moves_replica_live(m, tv->tb, r, master_now_ms(m));
		buf_printf(b, "%s<span class=\"%s\">", k ? ", " : "", live ? "ok" : "down");
		http_html(b, r->address);
		buf_printf(b, "%s</span>", live ? "" : " (down)");
	}
	buf_printf(b, "</td></tr>\n");
}

static const char tablet_head[] = "<tr><th>tablet</th><th>table</th><th>hash range</th>"
				  "<th>health</th><th>leader</th><th>replicas</th></tr>\n";

static void serve_overview(struct master_http *h, const struct view *v, struct buf *b)
{
	struct master *m = v->m;

	http_page_begin(b, "docraft-master", nav);
	buf_printf(b, "<p>RPC address <code>");
	http_html(b, m != NULL ? master_address(m) : "");
	buf_printf(b, "</code>; catalog tablet: %s, term %" PRIu64 ".</p>\n",
		   v->has_cat ? tablet_role_name(v->cat.role) : "not open", v->cat.term);
	(void)h;
	if (not_leader_page(v, b)) {
		http_page_end(b);
		return;
	}
	buf_printf(b, "<h2>Tablet servers</h2>\n<p>%zu live, <span class=\"%s\">%zu down</span>."
		      "</p>\n<table id=\"tservers\"><tr><th>uuid</th><th>address</th><th>state</th>"
		      "<th>last heartbeat</th><th>replicas</th><th>leaders</th></tr>\n",
		   v->live_tservers, v->n_tservers > v->live_tservers ? "bad" : "ok",
		   v->n_tservers - v->live_tservers);
	for (size_t i = 0; i < v->n_tservers; i++) {
		const struct tserver_view *t = &v->tservers[i];
		buf_printf(b, "<tr%s><td>", t->live ? "" : " class=\"bad\"");
		http_html(b, t->ts->uuid);
		buf_printf(b, "</td><td>");
		http_html(b, t->ts->address);
		buf_printf(b,
			   "</td><td class=\"%s\">%s</td><td class=\"num\">%.1f s ago</td>"
			   "<td class=\"num\">%" PRIu64 "</td><td class=\"num\">%" PRIu64 "</td></tr>\n",
			   t->live ? "ok" : "down", t->live ? "live" : "down",
			   (double)(master_now_ms(m) - t->ts->last_hb_ms) / 1e3, t->replicas,
			   t->leaders);
	}
	buf_printf(b, "</table>\n<h2>Tables</h2>\n<table id=\"tables\"><tr><th>table</th>"
		      "<th>replication factor</th><th>tablets</th></tr>\n");
	for (size_t i = 0; i < m->cat.n_tables; i++) {
		const struct cat_table *t = m->cat.tables[i];
		buf_printf(b, "<tr><td><a href=\"/table?name=");
		http_html(b, t->name); /* names are [A-Za-z0-9_.]: nothing to URL-escape */
		buf_printf(b, "\">");
		http_html(b, t->name);
		buf_printf(b, "</a></td><td class=\"num\">%" PRIu32 "</td><td class=\"num\">%zu</td>"
			      "</tr>\n",
			   t->rf, t->n_tablets);
	}
	buf_printf(b, "</table>\n<h2>Tablets</h2>\n<p>%zu tablets; <span class=\"%s\">%zu "
		      "leaderless</span>, <span class=\"%s\">%zu under-replicated</span>.</p>\n",
		   v->n_tablets, v->leaderless ? "bad" : "ok", v->leaderless,
		   v->under ? "bad" : "ok", v->under);
	if (v->leaderless + v->under > 0) {
		buf_printf(b, "<table id=\"unhealthy\">%s", tablet_head);
		for (size_t i = 0; i < v->n_tablets; i++)
			if (v->tablets[i].health != H_OK)
				tablet_row(b, m, &v->tablets[i]);
		buf_printf(b, "</table>\n");
	}
	http_page_end(b);
}

/* The tablet map: one row over the hash space [0, 65536), a cell per tablet
 * as wide as its partition, then the tablets with their replicas. */
static void serve_table(const struct view *v, const char *name, struct http_response *resp)
{
	struct buf *b = &resp->body;
	const struct cat_table *t;
	char title[96];

	snprintf(title, sizeof title, "table %s", name);
	http_page_begin(b, title, nav);
	if (not_leader_page(v, b)) {
		http_page_end(b);
		return;
	}
	t = catalog_find_table(&v->m->cat, name);
	if (t == NULL) {
		http_error(resp, 404, "Not Found: no such table");
		return;
	}
	buf_printf(b, "<p>Replication factor %" PRIu32 ", %zu tablets over the 16-bit hash space "
		      "[0, 65536).</p>\n<table class=\"map\" id=\"map\"><tr>",
		   t->rf, t->n_tablets);
	for (size_t i = 0; i < t->n_tablets; i++) {
		const struct cat_tablet *tb = t->tablets[i];
		const struct tablet_view *tv = NULL;
		for (size_t k = 0; k < v->n_tablets; k++)
			if (v->tablets[k].tb == tb)
				tv = &v->tablets[k];
		buf_printf(b, "<td style=\"width:%.3f%%\" class=\"%s\" title=\"",
			   100.0 * (tb->end - tb->start) / 65536.0,
			   tv == NULL || tv->health != H_OK ? "bad" : "ok");
		http_html(b, tb->id);
		buf_printf(b, "\">%04" PRIx32 "<br>", tb->start);
		http_html(b, tv != NULL && tv->leader != NULL ? tv->leader->address : "no leader");
		buf_printf(b, "</td>");
	}
	buf_printf(b, "</tr></table>\n<table id=\"tablets\">%s", tablet_head);
	for (size_t k = 0; k < v->n_tablets; k++)
		if (strcmp(v->tablets[k].tb->table, name) == 0)
			tablet_row(b, v->m, &v->tablets[k]);
	buf_printf(b, "</table>\n");
	http_page_end(b);
}

static bool ready(const struct view *v)
{
	if (v->leader)
		return true;
	return v->has_cat && v->cat.role == TABLET_FOLLOWER && v->leader_address[0] != '\0';
}

void master_http_handle(void *arg, const struct http_request *req, struct http_response *resp)
{
	struct master_http *h = arg;
	struct view v;

	view_take(h, &v);
	if (server_http_health(req, resp, ready(&v),
			       "Service Unavailable: no leader known, or loading")) {
		/* answered */
	} else if (strcmp(req->path, "/metrics") == 0) {
		resp->content_type = METRICS_CONTENT_TYPE;
		serve_metrics(h, &v, &resp->body);
	} else if (strcmp(req->path, "/api/v1/cluster") == 0) {
		resp->content_type = HTTP_JSON;
		serve_json(&v, &resp->body);
	} else if (strcmp(req->path, "/") == 0) {
		resp->content_type = HTTP_HTML;
		serve_overview(h, &v, &resp->body);
	} else if (strcmp(req->path, "/table") == 0) {
		const char *name = http_arg(req, "name");
		resp->content_type = HTTP_HTML;
		if (name == NULL || name[0] == '\0')
			http_error(resp, 400, "Bad Request: /table?name=TABLE");
		else
			serve_table(&v, name, resp);
	} else {
		http_error(resp, 404, "Not Found: see / for the pages, /metrics, /api/v1/cluster");
	}
	view_free(&v);
}
