/* The tablet server's HTTP endpoints. See http_tserver.h.
 *
 * Design. Every request first takes one snapshot of the replicas (struct
 * snap: the manager's view, tablet_get_status and the store's RocksDB
 * properties), then renders it: /metrics family by family (the text
 * format wants a family's samples together, so the loop over replicas is
 * inside each family, driven by the table `families`), the JSON and the
 * page row by row. Everything runs on the loop thread, between two turns:
 * nothing changes under the snapshot, and the cost is a few microseconds
 * per replica (RocksDB's property getters take no global lock). */
#include "tserver/http_tserver.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/mem.h"
#include "docdb/store.h"
#include "http/metrics.h"
#include "http/page.h"
#include "server/web.h"
#include "tablet/tablet.h"

struct snap {
	char id[LISTENER_TABLET_ID_MAX + 1];
	char table[128];
	const char *state; /* "open", "failed" */
	uint32_t part_start, part_end;
	uint64_t raft_id;
	bool has_tablet;
	struct tablet_status st;
	bool has_store;
	uint64_t mem_bytes, sst_bytes, sst_files, compactions, compactions_running;
	uint64_t cache_hits, cache_misses;
	char errmsg[DOCRAFT_ERRMSG_SIZE];
};

struct snaps {
	struct snap *v;
	size_t n, cap;
};

/* A label-friendly role name. */
static const char *role_label(enum tablet_role r)
{
	static const char *const names[] = {"follower", "candidate", "leader_not_ready",
					    "leader",   "copying",   "failed",
					    "closed"};
	return (size_t)r < sizeof names / sizeof names[0] ? names[r] : "unknown";
}

static void sst_files(struct store *s, uint64_t *out)
{
	char name[48];
	uint64_t v;
	*out = 0;
	for (int level = 0; level < 7; level++) {
		snprintf(name, sizeof name, "rocksdb.num-files-at-level%d", level);
		if (store_property(s, name, &v))
			*out += v;
	}
}

static void take_one(void *arg, struct replica *r)
{
	struct snaps *ss = arg;
	struct snap *s;
	struct store *st;

	if (r->state != REPLICA_OPEN && r->state != REPLICA_FAILED)
		return; /* being created or deleted: invisible, as in the reports */
	if (ss->n == ss->cap) {
		ss->cap = ss->cap ? ss->cap * 2 : 64;
		ss->v = xrealloc(ss->v, ss->cap * sizeof *ss->v);
	}
	s = &ss->v[ss->n++];
	memset(s, 0, sizeof *s);
	snprintf(s->id, sizeof s->id, "%s", r->id);
	snprintf(s->table, sizeof s->table, "%s",
		 r->has_schema && r->schema.table != NULL ? r->schema.table : "");
	s->state = r->state == REPLICA_OPEN ? "open" : "failed";
	s->part_start = r->part_start;
	s->part_end = r->part_end;
	s->raft_id = r->raft_id;
	snprintf(s->errmsg, sizeof s->errmsg, "%s", r->errmsg);
	if (r->state != REPLICA_OPEN || r->t == NULL)
		return;
	s->has_tablet = true;
	tablet_get_status(r->t, &s->st);
	st = tablet_store(r->t);
	if (st == NULL)
		return;
	s->has_store = true;
	s->mem_bytes = store_memtable_bytes(st);
	if (!store_property(st, "rocksdb.live-sst-files-size", &s->sst_bytes))
		s->sst_bytes = 0;
	sst_files(st, &s->sst_files);
	s->compactions = store_compactions(st);
	if (!store_property(st, "rocksdb.num-running-compactions", &s->compactions_running))
		s->compactions_running = 0;
	store_cache_counts(st, &s->cache_hits, &s->cache_misses);
}

static int by_id(const void *a, const void *b)
{
	return strcmp(((const struct snap *)a)->id, ((const struct snap *)b)->id);
}

static void take(struct tserver_http *h, struct snaps *ss)
{
	memset(ss, 0, sizeof *ss);
	if (*h->m_on)
		manager_foreach(h->m, take_one, ss);
	if (ss->n > 1)
		qsort(ss->v, ss->n, sizeof *ss->v, by_id);
}

/* ---- /metrics -------------------------------------------------------------------------------- */

enum fam_kind { F_STATUS, F_STORE, F_LEADER, F_ROLE, F_LEASE, F_HIST };

/* One per-tablet family: a uint64_t field of struct tablet_status (F_STATUS,
 * F_HIST: a struct lathist) or of struct snap (F_STORE), or computed. */
struct fam {
	const char *name, *type, *help;
	enum fam_kind kind;
	size_t off;
};

#define ST(f) offsetof(struct tablet_status, f)
#define SN(f) offsetof(struct snap, f)

static const struct fam families[] = {
	{"docraft_tablet_role", "gauge",
	 "1 for the replica's current Raft role (label role).", F_ROLE, 0},
	{"docraft_tablet_is_leader", "gauge", "1 if the replica is the ready leader.", F_LEADER, 0},
	{"docraft_tablet_term", "gauge", "Raft term.", F_STATUS, ST(term)},
	{"docraft_tablet_last_index", "gauge", "Last Raft log index.", F_STATUS, ST(last_index)},
	{"docraft_tablet_commit_index", "gauge", "Highest Raft index known committed.", F_STATUS,
	 ST(commit_index)},
	{"docraft_tablet_applied_index", "gauge", "Highest Raft index applied to RocksDB.",
	 F_STATUS, ST(applied_index)},
	{"docraft_tablet_flushed_index", "gauge",
	 "Applied index persisted in SST files when the replica opened.", F_STATUS,
	 ST(flushed_index)},
	{"docraft_tablet_first_index", "gauge", "First entry Raft still holds.", F_STATUS,
	 ST(first_index)},
	{"docraft_tablet_log_bytes", "gauge", "Entry bytes applied since the last Raft snapshot.",
	 F_STATUS, ST(log_bytes)},
	{"docraft_tablet_entries_appended_total", "counter",
	 "Raft entries this replica proposed as leader.", F_STATUS, ST(entries)},
	{"docraft_tablet_writes_total", "counter",
	 "Client writes this replica put in its entries as leader.", F_STATUS, ST(writes)},
	{"docraft_tablet_elections_won_total", "counter", "Times this replica became leader.",
	 F_STATUS, ST(elections_won)},
	{"docraft_tablet_leader_changes_total", "counter",
	 "Times this replica became or stopped being leader.", F_STATUS, ST(leader_changes)},
	{"docraft_tablet_lease_remaining_seconds", "gauge",
	 "Leader lease left (0: none): reads without a Raft round until then.", F_LEASE, 0},
	{"docraft_tablet_lease_reads_total", "counter", "Reads answered under the lease.",
	 F_STATUS, ST(lease_reads)},
	{"docraft_tablet_barrier_reads_total", "counter", "Reads answered after a read barrier.",
	 F_STATUS, ST(barrier_reads)},
	{"docraft_tablet_pending_writes", "gauge", "Writes queued or in flight, not answered.",
	 F_STATUS, ST(pending_writes)},
	{"docraft_tablet_pending_reads", "gauge", "Reads waiting for a read barrier.", F_STATUS,
	 ST(pending_reads)},
	{"docraft_tablet_retry_records", "gauge",
	 "(client, sequence) pairs in the retry table (exactly-once writes).", F_STATUS,
	 ST(retry_records)},
	{"docraft_tablet_guard_dropped_total", "counter",
	 "Raft messages the message guard dropped.", F_STATUS, ST(guard_dropped)},
	{"docraft_tablet_copies_installed_total", "counter",
	 "Checkpoint copies (catch-up from a peer) installed.", F_STATUS, ST(copies)},
	{"docraft_tablet_failures_total", "counter",
	 "Times the replica went FAILED (disk errors, ...).", F_STATUS, ST(failures)},
	{"docraft_tablet_write_latency_seconds", "histogram",
	 "Acknowledged writes, from the leader queueing them to their answer.", F_HIST,
	 ST(write_latency)},
	{"docraft_tablet_read_latency_seconds", "histogram",
	 "Reads, from the leader queueing them to their answer.", F_HIST, ST(read_latency)},
	{"docraft_tablet_memtable_bytes", "gauge", "RocksDB memtable bytes.", F_STORE,
	 SN(mem_bytes)},
	{"docraft_tablet_sst_bytes", "gauge", "RocksDB live SST file bytes.", F_STORE,
	 SN(sst_bytes)},
	{"docraft_tablet_sst_files", "gauge", "RocksDB SST files.", F_STORE, SN(sst_files)},
	{"docraft_tablet_compactions_total", "counter", "RocksDB compactions started.", F_STORE,
	 SN(compactions)},
	{"docraft_tablet_compactions_running", "gauge", "RocksDB compactions running.", F_STORE,
	 SN(compactions_running)},
	{"docraft_tablet_block_cache_hits_total", "counter",
	 "Block cache hits of reads on this replica (data, index, filter blocks; RocksDB perf "
	 "context, compactions not counted).",
	 F_STORE, SN(cache_hits)},
	{"docraft_tablet_block_cache_misses_total", "counter",
	 "Blocks reads on this replica had to read from SST files (block cache misses; RocksDB "
	 "perf context, compactions not counted).",
	 F_STORE, SN(cache_misses)},
};

static void tablet_labels(struct metrics_labels *l, const struct snap *s)
{
	metrics_labels_reset(l);
	metrics_label(l, "tablet", s->id);
	metrics_label(l, "table", s->table);
}

static void tablet_metrics(struct metrics *m, const struct snaps *ss)
{
	struct metrics_labels l;

	for (size_t f = 0; f < sizeof families / sizeof families[0]; f++) {
		const struct fam *fm = &families[f];
		metrics_family(m, fm->name, fm->type, fm->help);
		for (size_t i = 0; i < ss->n; i++) {
			const struct snap *s = &ss->v[i];
			if (!s->has_tablet || (fm->kind == F_STORE && !s->has_store))
				continue;
			tablet_labels(&l, s);
			switch (fm->kind) {
			case F_STATUS:
				metrics_u64(m, fm->name, &l,
					    *(const uint64_t *)((const char *)&s->st + fm->off));
				break;
			case F_STORE:
				metrics_u64(m, fm->name, &l,
					    *(const uint64_t *)((const char *)s + fm->off));
				break;
			case F_LEADER:
				metrics_u64(m, fm->name, &l, s->st.role == TABLET_LEADER);
				break;
			case F_ROLE:
				metrics_label(&l, "role", role_label(s->st.role));
				metrics_u64(m, fm->name, &l, 1);
				break;
			case F_LEASE:
				metrics_double(m, fm->name, &l, (double)s->st.lease_left_ms / 1e3);
				break;
			case F_HIST:
				metrics_hist(m, fm->name, &l,
					     (const struct lathist *)((const char *)&s->st + fm->off));
				break;
			}
		}
	}
}

static void process_metrics(struct tserver_http *h, struct metrics *m, const struct snaps *ss)
{
	struct metrics_labels l;
	uint64_t open = 0, failed = 0, leaders = 0;

	for (size_t i = 0; i < ss->n; i++) {
		if (ss->v[i].has_tablet)
			open++;
		else
			failed++;
		if (ss->v[i].has_tablet && ss->v[i].st.role == TABLET_LEADER)
			leaders++;
	}
	metrics_family(m, "docraft_tserver_tablets", "gauge",
		       "Replicas hosted, by state (open, failed).");
	metrics_labels_reset(&l);
	metrics_label(&l, "state", "open");
	metrics_u64(m, "docraft_tserver_tablets", &l, open);
	metrics_labels_reset(&l);
	metrics_label(&l, "state", "failed");
	metrics_u64(m, "docraft_tserver_tablets", &l, failed);
	metrics_one(m, "docraft_tserver_leaders", "gauge", "Replicas that are the ready leader.",
		    leaders);
	if (*h->env != NULL) {
		struct store_env_stats es;
		store_env_stats(*h->env, &es);
		const struct metrics_row rows[] = {
			{"docraft_block_cache_usage_bytes", "gauge",
			 "Bytes in the RocksDB block cache every tablet shares.",
			 es.block_cache_usage},
			{"docraft_block_cache_capacity_bytes", "gauge",
			 "Capacity of the shared block cache.", es.block_cache_bytes},
			{"docraft_memtable_bytes", "gauge", "Memtable bytes over every tablet.",
			 es.memtable_bytes},
			{"docraft_memtable_budget_bytes", "gauge",
			 "The memtable budget of the process.", es.write_buffer_bytes},
			{"docraft_memtable_forced_flushes_total", "counter",
			 "Flushes the memtable budget forced.", es.forced_flushes},
		};
		metrics_rows(m, rows, sizeof rows / sizeof rows[0]);
	}
	if (*h->copy_on) {
		struct copy_server_stats cs;
		copy_server_get_stats(h->copy, &cs);
		const struct metrics_row rows[] = {
			{"docraft_copy_sent_bytes_total", "counter",
			 "Checkpoint bytes sent to replicas catching up.", cs.bytes_sent},
			{"docraft_copy_sent_files_total", "counter",
			 "Checkpoint files sent to replicas catching up.", cs.files_sent},
			{"docraft_copy_completed_total", "counter", "Checkpoint copies sent whole.",
			 cs.completed},
			{"docraft_copy_failed_total", "counter", "Checkpoint copies that failed.",
			 cs.failed},
		};
		metrics_rows(m, rows, sizeof rows / sizeof rows[0]);
	}
	if (*h->log != NULL) {
		struct raftlog_stats rs;
		raftlog_stats(*h->log, &rs);
		const struct metrics_row rows[] = {
			{"docraft_raftlog_disk_bytes", "gauge",
			 "Size of the shared Raft log's segment files.", rs.disk_bytes},
			{"docraft_raftlog_live_bytes", "gauge",
			 "Bytes of records some tablet still needs.", rs.live_bytes},
			{"docraft_raftlog_segments", "gauge", "Segment files.", rs.segments},
			{"docraft_raftlog_written_bytes_total", "counter",
			 "Bytes written to the shared Raft log.", rs.bytes_written},
			{"docraft_raftlog_syncs_total", "counter",
			 "Writes of the shared Raft log, each followed by one fdatasync.",
			 rs.batches},
			{"docraft_raftlog_write_errors_total", "counter",
			 "Failed writes or fdatasyncs of the shared Raft log.", rs.write_errors},
		};
		metrics_rows(m, rows, sizeof rows / sizeof rows[0]);
		metrics_family(m, "docraft_raftlog_sync_seconds_total", "counter",
			       "Time spent in the shared Raft log's writes and fdatasyncs.");
		metrics_double(m, "docraft_raftlog_sync_seconds_total", NULL,
			       (double)rs.sync_ns_total / 1e9);
	}
}

static void serve_metrics(struct tserver_http *h, const struct snaps *ss,
			  struct http_response *resp)
{
	struct metrics m;

	metrics_init(&m, &resp->body);
	server_metrics(h->proc, &m);
	process_metrics(h, &m, ss);
	tablet_metrics(&m, ss);
	resp->content_type = METRICS_CONTENT_TYPE;
}

/* ---- /api/v1/tablets ------------------------------------------------------------------------- */

static void serve_json(struct tserver_http *h, const struct snaps *ss, struct buf *b)
{
	buf_printf(b, "{\"uuid\":");
	http_json_str(b, h->uuid);
	buf_printf(b, ",\"address\":");
	http_json_str(b, h->proc->l != NULL ? listener_address(h->proc->l) : "");
	buf_printf(b, ",\"ready\":%s,\"tablets\":[", *h->ready ? "true" : "false");
	for (size_t i = 0; i < ss->n; i++) {
		const struct snap *s = &ss->v[i];
		buf_printf(b, "%s{\"id\":", i ? "," : "");
		http_json_str(b, s->id);
		buf_printf(b, ",\"table\":");
		http_json_str(b, s->table);
		buf_printf(b, ",\"state\":\"%s\",\"raft_id\":%" PRIu64
			      ",\"partition\":[%" PRIu32 ",%" PRIu32 "]",
			   s->state, s->raft_id, s->part_start, s->part_end);
		if (s->has_tablet) {
			const struct tablet_status *t = &s->st;
			buf_printf(b, ",\"role\":\"%s\",\"term\":%" PRIu64 ",\"leader\":",
				   role_label(t->role), t->term);
			http_json_str(b, t->leader_address);
			buf_printf(b,
				   ",\"last_index\":%" PRIu64 ",\"commit_index\":%" PRIu64
				   ",\"applied_index\":%" PRIu64 ",\"flushed_index\":%" PRIu64
				   ",\"first_index\":%" PRIu64 ",\"entries\":%" PRIu64
				   ",\"writes\":%" PRIu64 ",\"pending_writes\":%" PRIu64
				   ",\"pending_reads\":%" PRIu64 ",\"lease_left_ms\":%" PRIu64,
				   t->last_index, t->commit_index, t->applied_index,
				   t->flushed_index, t->first_index, t->entries, t->writes,
				   t->pending_writes, t->pending_reads, t->lease_left_ms);
		}
		if (s->has_store)
			buf_printf(b,
				   ",\"memtable_bytes\":%" PRIu64 ",\"sst_bytes\":%" PRIu64
				   ",\"sst_files\":%" PRIu64,
				   s->mem_bytes, s->sst_bytes, s->sst_files);
		buf_printf(b, ",\"error\":");
		http_json_str(b, s->has_tablet ? s->st.errmsg : s->errmsg);
		buf_printf(b, "}");
	}
	buf_printf(b, "]}\n");
}

/* ---- / --------------------------------------------------------------------------------------- */

static const char *const nav[] = {"/", "Tablets", "/metrics", "Metrics", "/api/v1/tablets",
				  "JSON", NULL};

static void serve_page(struct tserver_http *h, const struct snaps *ss, struct buf *b)
{
	char title[128];

	snprintf(title, sizeof title, "docraft-tserver %s", h->uuid);
	http_page_begin(b, title, nav);
	buf_printf(b, "<p>RPC address <code>");
	http_html(b, h->proc->l != NULL ? listener_address(h->proc->l) : "");
	buf_printf(b, "</code>, %s, %zu replicas.</p>\n",
		   *h->ready ? "<span class=\"ok\">serving</span>"
			     : "<span class=\"bad\">not serving</span>",
		   ss->n);
	buf_printf(b, "<table id=\"tablets\"><tr><th>tablet</th><th>table</th><th>hash range</th>"
		      "<th>role</th><th>term</th><th>leader</th><th>last</th><th>commit</th>"
		      "<th>applied</th><th>flushed</th><th>pending</th><th>memtable</th>"
		      "<th>SST bytes</th><th>SST files</th></tr>\n");
	for (size_t i = 0; i < ss->n; i++) {
		const struct snap *s = &ss->v[i];
		const struct tablet_status *t = &s->st;
		bool bad = !s->has_tablet || t->role == TABLET_FAILED;
		buf_printf(b, "<tr%s><td>", bad ? " class=\"bad\"" : "");
		http_html(b, s->id);
		buf_printf(b, "</td><td>");
		http_html(b, s->table);
		buf_printf(b, "</td><td class=\"num\">[%" PRIu32 ", %" PRIu32 ")</td>", s->part_start,
			   s->part_end);
		if (!s->has_tablet) {
			buf_printf(b, "<td class=\"bad\">failed</td><td colspan=\"10\">");
			http_html(b, s->errmsg);
			buf_printf(b, "</td></tr>\n");
			continue;
		}
		buf_printf(b, "<td class=\"%s\">%s</td><td class=\"num\">%" PRIu64 "</td><td>",
			   t->role == TABLET_LEADER ? "ok" : t->role == TABLET_FAILED ? "bad" : "",
			   role_label(t->role), t->term);
		http_html(b, t->leader_address);
		buf_printf(b,
			   "</td><td class=\"num\">%" PRIu64 "</td><td class=\"num\">%" PRIu64
			   "</td><td class=\"num\">%" PRIu64 "</td><td class=\"num\">%" PRIu64
			   "</td><td class=\"num\">%" PRIu64 "</td>",
			   t->last_index, t->commit_index, t->applied_index, t->flushed_index,
			   t->pending_writes + t->pending_reads);
		if (s->has_store)
			buf_printf(b,
				   "<td class=\"num\">%" PRIu64 "</td><td class=\"num\">%" PRIu64
				   "</td><td class=\"num\">%" PRIu64 "</td>",
				   s->mem_bytes, s->sst_bytes, s->sst_files);
		else
			buf_printf(b, "<td></td><td></td><td></td>");
		buf_printf(b, "</tr>\n");
	}
	buf_printf(b, "</table>\n");
	http_page_end(b);
}

void tserver_http_handle(void *arg, const struct http_request *req, struct http_response *resp)
{
	struct tserver_http *h = arg;
	struct snaps ss;

	if (server_http_health(req, resp, *h->ready, "Service Unavailable: starting or draining"))
		return;
	if (strcmp(req->path, "/metrics") != 0 && strcmp(req->path, "/api/v1/tablets") != 0 &&
	    strcmp(req->path, "/") != 0) {
		http_error(resp, 404, "Not Found: see / for the pages, /metrics, /api/v1/tablets");
		return;
	}
	take(h, &ss);
	if (strcmp(req->path, "/metrics") == 0) {
		serve_metrics(h, &ss, resp);
	} else if (strcmp(req->path, "/api/v1/tablets") == 0) {
		resp->content_type = HTTP_JSON;
		serve_json(h, &ss, &resp->body);
	} else {
		resp->content_type = HTTP_HTML;
		serve_page(h, &ss, &resp->body);
	}
	free(ss.v);
}
