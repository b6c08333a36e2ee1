/* Scans: docraft_scan, docraft_scan_resume and their async forms.
 *
 * Design note. A scan with a hash key talks to one tablet; without one it
 * walks the tablets in hash order (reverse order for reverse scans),
 * following a cursor hash rather than a tablet index so that a refresh in
 * the middle of a scan cannot skip or repeat a tablet. Later pages (and
 * later tablets) read at the read time of the first page, so a multi-page
 * scan is one snapshot. Each page has the full timeout: the bound is per
 * RPC round, not per scan, which may be arbitrarily large. Where a scan
 * stops with more to read, the result keeps its state (struct
 * scan_state: the packed request, the cursor, the paging state) for
 * docraft_scan_resume.
 *
 * Read restart (YugabyteDB's; the tablet side is in tserver/service.c): a
 * scan of the whole table reads every tablet at the time the first
 * tablet's leader chose. Another tablet's leader, with a clock ahead of
 * that one, may hold a write acknowledged before the scan started at a
 * later time; such a page answers restart_ht instead of rows. Then the
 * rows gathered so far are dropped and the scan starts again from its
 * first tablet at restart_ht, and that tablet's local_limit is sent with
 * every later page to it (its window is then empty: one restart per
 * tablet at most; SCAN_MAX_RESTARTS bounds the rest). The tablet that chose
 * the time is never asked (whatever it applied later came after the scan
 * started). A scan that already returned rows to the caller
 * (docraft_scan_resume) cannot restart: it fails with CLOCK_SKEW and the
 * caller starts the scan again. A time given by the caller is a snapshot
 * read: no restart. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/requests.h"
#include "common/err.h"
#include "common/mem.h"
#include "docdb/key.h"
#include "rpc.pb-c.h"

#define SCAN_DEFAULT_PAGE 1000
#define SCAN_MAX_RESTARTS 64

struct scan_limit {
	uint32_t start; /* the tablet's partition start */
	uint64_t limit; /* its local_limit */
};

struct scan_job {
	struct table_job tj; /* first */
	bool resume;
	/* A new scan: the spec (values copied into arena). */
	docraft_scan_spec spec;
	/* Where it is. */
	struct scan_state st;
	struct tcall tc;
	Docraft__ScanRequest *tmpl; /* unpacked st.tmpl */
	Docraft__ScanRequest req;   /* this page: tmpl's fields + ours */
	docraft_result *res;
	uint64_t got;
	struct scan_limit *limits; /* read restart: local limits of tablets */
	size_t nlimits;
	unsigned restarts;
};

static void scan_state_clear(struct scan_state *st)
{
	free(st->table);
	free(st->tmpl);
	free(st->paging);
	memset(st, 0, sizeof *st);
}

static void scan_free(struct job *base)
{
	struct scan_job *j = (struct scan_job *)base;
	if (j->tmpl != NULL)
		docraft__scan_request__free_unpacked(j->tmpl, NULL);
	if (j->res != NULL)
		docraft_result_free(j->res);
	scan_state_clear(&j->st);
	free(j->limits);
	requests_job_free(base);
}

/* Every page: the restart limit of the tablet it goes to (tc->tablet_start
 * is set before each attempt). */
static void scan_prepare(struct tcall *tc)
{
	struct scan_job *j = tc->data;
	const struct scan_state *st = &j->st;
	j->req.restart_limit = 0;
	if (!st->restartable || st->read_ht == 0)
		return;
	if (tc->tablet_start == st->origin) {
		j->req.restart_limit = st->read_ht; /* an empty window */
		return;
	}
	j->req.restart_limit = UINT64_MAX;
	for (size_t i = 0; i < j->nlimits; i++)
		if (j->limits[i].start == tc->tablet_start)
			j->req.restart_limit = j->limits[i].limit;
}

/* A page answered restart_ht: start again from the first tablet at that
 * time. false (and finished) if the scan may not restart. */
static bool scan_restart(struct scan_job *j, const struct tcall *tc, uint64_t restart_ht,
			 uint64_t local_limit)
{
	struct scan_state *st = &j->st;
	char msg[DOCRAFT_ERRMSG_SIZE];
	if (j->resume || !st->restartable || j->restarts >= SCAN_MAX_RESTARTS ||
	    restart_ht <= st->read_ht) {
		err_set(msg, 0, "tablet %s: the scan's read time %" PRIu64 " is uncertain there "
			"(clock skew): start the scan again", tc->tablet_id, st->read_ht);
		job_finish(&j->tj.base, DOCRAFT_ECLOCKSKEW, msg);
		return false;
	}
	j->restarts++;
	j->limits = xrealloc(j->limits, (j->nlimits + 1) * sizeof *j->limits);
	j->limits[j->nlimits].start = tc->tablet_start;
	j->limits[j->nlimits].limit = local_limit;
	j->nlimits++;
	st->read_ht = restart_ht;
	st->cursor = j->tmpl->reverse ? 0xFFFF : 0;
	free(st->paging);
	st->paging = NULL;
	st->paging_len = 0;
	docraft_result_free(j->res);
	j->res = result_new(&j->tj.t->schema);
	j->got = 0;
	return true;
}

static void scan_page(struct scan_job *j);

static void scan_finish(struct scan_job *j, bool has_more)
{
	docraft_result *r = j->res;
	r->read_ht = j->st.read_ht;
	r->has_more = has_more;
	if (has_more) {
		struct scan_state *s = arena_alloc(&r->arena, sizeof *s);
		*s = j->st;
		s->table = arena_dup(&r->arena, j->st.table, strlen(j->st.table) + 1);
		s->tmpl = arena_dup(&r->arena, j->st.tmpl, j->st.tmpl_len ? j->st.tmpl_len : 1);
		s->paging = j->st.paging_len ? arena_dup(&r->arena, j->st.paging, j->st.paging_len)
					     : NULL;
		r->scan = s;
	}
	j->res = NULL;
	j->tj.base.req->result = r;
	j->tj.base.req->ht = r->read_ht;
	job_finish(&j->tj.base, 0, "");
}

static void scan_page_done(struct tcall *tc, int status, const char *errmsg,
			   const uint8_t *reply, size_t len)
{
	struct scan_job *j = tc->data;
	struct scan_state *st = &j->st;
	Docraft__ScanResponse *resp;
	char msg[DOCRAFT_ERRMSG_SIZE];
	bool more_here;

	resp = (Docraft__ScanResponse *)requests_reply(&j->tj, &docraft__scan_response__descriptor,
						       status, errmsg, reply, len);
	if (resp == NULL)
		return;
	if (resp->restart_ht != 0) {
		uint64_t at = resp->restart_ht, limit = resp->local_limit;
		docraft__scan_response__free_unpacked(resp, NULL);
		if (scan_restart(j, tc, at, limit))
			scan_page(j);
		return;
	}
	if (st->read_ht == 0) {
		st->read_ht = resp->read_ht;
		st->origin = tc->tablet_start;
	}
	for (size_t i = 0; i < resp->n_rows; i++) {
		int rv = result_add_row(j->res, resp->rows[i], msg);
		if (rv != 0) {
			docraft__scan_response__free_unpacked(resp, NULL);
			job_finish(&j->tj.base, rv, msg);
			return;
		}
	}
	j->got += resp->n_rows;
	free(st->paging);
	st->paging = NULL;
	st->paging_len = resp->paging.len;
	if (resp->paging.len > 0) {
		st->paging = xcalloc(1, resp->paging.len);
		memcpy(st->paging, resp->paging.data, resp->paging.len);
	}
	docraft__scan_response__free_unpacked(resp, NULL);
	more_here = st->paging_len > 0;
	if (!more_here) {
		/* This tablet is done: the next one, if the scan walks them. */
		if (!st->whole_table)
			goto done;
		if (!j->tmpl->reverse) {
			if (tc->tablet_end >= 65536)
				goto done;
			st->cursor = tc->tablet_end;
		} else {
			if (tc->tablet_start == 0)
				goto done;
			st->cursor = tc->tablet_start - 1;
		}
	}
	if (st->limit != 0 && j->got >= st->limit) {
		scan_finish(j, true);
		return;
	}
	scan_page(j);
	return;
done:
	scan_finish(j, false);
}

static void scan_page(struct scan_job *j)
{
	docraft_client *c = j->tj.base.c;
	struct scan_state *st = &j->st;
	uint64_t left = st->limit != 0 ? st->limit - j->got : 0;

	j->req = *j->tmpl;
	j->req.tablet_id = NULL;
	j->req.paging.data = st->paging;
	j->req.paging.len = st->paging_len;
	j->req.read_ht = st->read_ht;
	j->req.limit = st->page_size;
	if (left != 0 && left < st->page_size)
		j->req.limit = (uint32_t)left;
	j->tc.data = j;
	/* Each page has the full time budget (see the design note). */
	tcall_init(&j->tc, c, j->tj.t, st->cursor, DOCRAFT__METHOD__TSERVER_SCAN, &j->req.base,
		   &j->req.tablet_id, client_now(c) + c->opts.timeout_ms, scan_page_done);
	j->tc.table_id_field = &j->req.table_id;
	j->tc.prepare = scan_prepare;
	tcall_start(&j->tc);
}

/* Builds the template ScanRequest of a new scan into st. */
static int scan_build(struct scan_job *j, char *errmsg)
{
	const struct schema *s = &j->tj.t->schema;
	const docraft_scan_spec *sp = &j->spec;
	Docraft__ScanRequest m = DOCRAFT__SCAN_REQUEST__INIT;
	struct pv pv[SCHEMA_MAX_COLUMNS];
	struct arena *a = &j->tj.arena;
	int rv;

	if (sp->n_hash != 0 && sp->n_hash != s->n_hash)
		return err_set(errmsg, DOCRAFT_EINVAL,
			       "table %s has %zu hash columns: give all of them or none", s->table,
			       s->n_hash);
	if (sp->n_hash == 0 && (sp->n_eq > 0 || sp->lower != NULL || sp->upper != NULL))
		return err_set(errmsg, DOCRAFT_EINVAL,
			       "conditions on range columns need the hash key");
	if (sp->n_eq > s->n_range ||
	    ((sp->lower != NULL || sp->upper != NULL) && sp->n_eq >= s->n_range))
		return err_set(errmsg, DOCRAFT_EINVAL, "table %s has %zu range columns", s->table,
			       s->n_range);
	m.table = j->tj.t->name;
	m.n_hash_key = sp->n_hash;
	m.hash_key = requests_zalloc(a, sp->n_hash * sizeof *m.hash_key);
	for (size_t i = 0; i < sp->n_hash; i++) {
		char what[SCHEMA_MAX_NAME + 32];
		snprintf(what, sizeof what, "hash column '%s'", s->cols[i].name);
		if ((rv = values_to_datum(&sp->hash_key[i], (enum col_type)s->cols[i].type, false,
					what, a, &m.hash_key[i], &pv[i], errmsg)) != 0)
			return rv;
	}
	m.n_range_eq = sp->n_eq;
	m.range_eq = requests_zalloc(a, sp->n_eq * sizeof *m.range_eq);
	for (size_t i = 0; i < sp->n_eq; i++) {
		const struct column *col = &s->cols[s->n_hash + i];
		char what[SCHEMA_MAX_NAME + 32];
		struct pv x;
		snprintf(what, sizeof what, "range column '%s'", col->name);
		if ((rv = values_to_datum(&sp->range_eq[i], (enum col_type)col->type, false, what,
					  a, &m.range_eq[i], &x, errmsg)) != 0)
			return rv;
	}
	if (sp->lower != NULL || sp->upper != NULL) {
		const struct column *col = &s->cols[s->n_hash + sp->n_eq];
		const docraft_value *bound[2] = {sp->lower, sp->upper};
		Docraft__Datum **to[2] = {&m.lower, &m.upper};
		char what[SCHEMA_MAX_NAME + 32];
		struct pv x;
		snprintf(what, sizeof what, "bound on range column '%s'", col->name);
		for (int k = 0; k < 2; k++)
			if (bound[k] != NULL &&
			    (rv = values_to_datum(bound[k], (enum col_type)col->type, false, what,
						  a, to[k], &x, errmsg)) != 0)
				return rv;
		m.lower_incl = sp->lower != NULL && sp->lower_incl;
		m.upper_incl = sp->upper != NULL && sp->upper_incl;
	}
	m.reverse = sp->reverse;
	j->st.table = xstrdup(j->tj.table);
	j->st.tmpl_len = protobuf_c_message_get_packed_size(&m.base);
	j->st.tmpl = xcalloc(1, j->st.tmpl_len);
	protobuf_c_message_pack(&m.base, j->st.tmpl);
	j->st.whole_table = sp->n_hash == 0;
	j->st.cursor = sp->n_hash > 0 ? key_hash_components(pv, sp->n_hash)
				      : sp->reverse ? 0xFFFF : 0;
	j->st.read_ht = sp->read_ht;
	j->st.restartable = j->st.whole_table && sp->read_ht == 0;
	j->st.limit = sp->limit;
	j->st.page_size = sp->page_size ? sp->page_size : SCAN_DEFAULT_PAGE;
	return 0;
}

static void scan_loaded(struct table_job *tj)
{
	struct scan_job *j = (struct scan_job *)tj;
	char msg[DOCRAFT_ERRMSG_SIZE];
	int rv;

	if (!j->resume && (rv = scan_build(j, msg)) != 0) {
		job_finish(&tj->base, rv, msg);
		return;
	}
	j->tmpl = docraft__scan_request__unpack(NULL, j->st.tmpl_len, j->st.tmpl);
	if (j->tmpl == NULL) {
		job_finish(&tj->base, DOCRAFT_EINVAL, "bad scan state");
		return;
	}
	j->res = result_new(&tj->t->schema);
	scan_page(j);
}

static const struct job_ops scan_ops = {requests_job_start, scan_free};

static int scan_job_new(const char *table, const docraft_scan_spec *spec, struct scan_job **out)
{
	struct scan_job *j;
	if (table == NULL || spec == NULL)
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	if ((spec->n_hash > 0 && spec->hash_key == NULL) ||
	    (spec->n_eq > 0 && spec->range_eq == NULL) || spec->n_hash > SCHEMA_MAX_COLUMNS ||
	    spec->n_eq > SCHEMA_MAX_COLUMNS)
		return client_error(DOCRAFT_EINVAL, "bad scan spec");
	j = xcalloc(1, sizeof *j);
	requests_job_init(&j->tj, &scan_ops, table, scan_loaded);
	j->spec = *spec;
	j->spec.hash_key = values_copy(&j->tj.arena, spec->hash_key, spec->n_hash);
	j->spec.range_eq = values_copy(&j->tj.arena, spec->range_eq, spec->n_eq);
	if (spec->lower != NULL)
		j->spec.lower = values_copy(&j->tj.arena, spec->lower, 1);
	if (spec->upper != NULL)
		j->spec.upper = values_copy(&j->tj.arena, spec->upper, 1);
	*out = j;
	return 0;
}

static int resume_job_new(const docraft_result *prev, uint64_t limit, struct scan_job **out)
{
	const struct scan_state *s;
	struct scan_job *j;
	if (prev == NULL || !prev->has_more || prev->scan == NULL)
		return client_error(DOCRAFT_EINVAL, "nothing to resume: the result has no more rows");
	s = prev->scan;
	j = xcalloc(1, sizeof *j);
	requests_job_init(&j->tj, &scan_ops, s->table, scan_loaded);
	j->resume = true;
	j->st = *s;
	j->st.table = xstrdup(s->table);
	j->st.tmpl = xcalloc(1, s->tmpl_len);
	memcpy(j->st.tmpl, s->tmpl, s->tmpl_len);
	j->st.paging = NULL;
	if (s->paging_len > 0) {
		j->st.paging = xcalloc(1, s->paging_len);
		memcpy(j->st.paging, s->paging, s->paging_len);
	}
	if (limit != 0)
		j->st.limit = limit;
	*out = j;
	return 0;
}

/* A public scan call: a new scan of table by spec, or (resume) the rest
 * of prev's; submitted with req and cb, or (wait) waited for into out. */
struct scan_call {
	bool wait, resume;
	docraft_req *req;
	docraft_req_cb cb;
	docraft_result **out;
	const char *table;
	const docraft_scan_spec *spec;
	const docraft_result *prev;
	uint64_t limit;
};

static int scan_call(docraft_client *c, const struct scan_call *a)
{
	struct scan_job *j = NULL;
	int rv;
	if (c == NULL || (a->wait ? a->out == NULL : a->req == NULL || a->cb == NULL))
		return client_error(DOCRAFT_EINVAL, "NULL argument");
	if (a->wait)
		*a->out = NULL;
	if (a->resume)
		rv = resume_job_new(a->prev, a->limit, &j);
	else
		rv = scan_job_new(a->table, a->spec, &j);
	if (rv != 0)
		return rv;
	if (a->wait)
		return requests_wait_result(c, &j->tj.base, a->out);
	return job_submit(c, &j->tj.base, a->req, a->cb);
}

int docraft_scan_async(docraft_client *c, docraft_req *req, const char *table,
		       const docraft_scan_spec *spec, docraft_req_cb cb)
{
	return scan_call(c, &(struct scan_call){.req = req, .cb = cb, .table = table,
						.spec = spec});
}

int docraft_scan(docraft_client *c, const char *table, const docraft_scan_spec *spec,
		 docraft_result **out)
{
	return scan_call(c, &(struct scan_call){.wait = true, .out = out, .table = table,
						.spec = spec});
}

int docraft_scan_resume_async(docraft_client *c, docraft_req *req, const docraft_result *prev,
			      uint64_t limit, docraft_req_cb cb)
{
	return scan_call(c, &(struct scan_call){.resume = true, .req = req, .cb = cb,
						.prev = prev, .limit = limit});
}

int docraft_scan_resume(docraft_client *c, const docraft_result *prev, uint64_t limit,
			docraft_result **out)
{
	return scan_call(c, &(struct scan_call){.wait = true, .resume = true, .out = out,
						.prev = prev, .limit = limit});
}
