/* rwire: raft_uv 0.15's wire format (see rwire.h for the layout).
 *
 * Design note. The decoder is a three-stage state machine, as raft_uv's
 * uvServer (src/uv_recv.c): preamble (16 bytes), header (H bytes), payload
 * (the length the header announces). Every check that can be made early is
 * made early, so nothing is allocated for a frame that is already known to
 * be bad: the type and H are checked against the type's minimum and
 * maximum when the preamble is complete; the entry count, entry types,
 * payload total, configuration and data length when the header is. Headers
 * of up to RWIRE_FIXED_HEADER_MAX bytes (every message but AppendEntries
 * with more than 12 entries and InstallSnapshot with a big configuration)
 * land in a buffer inside the decoder: a heartbeat costs no allocation.
 * Payloads are raft_malloc'd once and handed to raft as they are; large
 * ones can be read straight into place (rwire_decoder_window).
 *
 * Arithmetic on announced lengths is done in uint64_t and compared with
 * the limit (at most 2^31) before anything is added to a pointer, so no
 * sum can overflow. */
#include "raft/rwire.h"

#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/err.h"
#include "common/mem.h"

/* Header sizes (without the 16-byte preamble). */
#define AE_FIXED 40          /* term, prev index, prev term, commit, n */
#define AE_SLACK 8
#define AE_ENTRY 16
#define IS_FIXED 40          /* term, last index, last term, conf index, conf len */
#define IS_TAIL 16           /* data length, slack */
#define RV_V1 32
#define RV_V2 40
#define RVR_V1 16
#define RVR_V2 24
#define AER_SIZE 24
#define TN_SIZE 24
#define CONF_SERVER_MIN 11   /* id, one address byte, NUL, role */

static void put64(uint8_t **p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		(*p)[i] = (uint8_t)(v >> (8 * i));
	*p += 8;
}

static void put32(uint8_t **p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		(*p)[i] = (uint8_t)(v >> (8 * i));
	*p += 4;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void *rmalloc(size_t n)
{
	void *p = raft_malloc(n > 0 ? n : 1);
	if (p == NULL)
		PANIC("out of memory (%zu bytes for raft)", n);
	return p;
}

/* ---- configuration (raft 0.15 src/configuration.c) ---- */

static size_t conf_size(const struct raft_configuration *c)
{
	size_t n = 1 + 8;
	for (unsigned i = 0; i < c->n; i++)
		n += 8 + strlen(c->servers[i].address) + 1 + 1;
	return (n + 7) & ~(size_t)7;
}

static void conf_encode(const struct raft_configuration *c, uint8_t *p, size_t size)
{
	uint8_t *start = p;

	*p++ = 1; /* format */
	put64(&p, c->n);
	for (unsigned i = 0; i < c->n; i++) {
		size_t alen = strlen(c->servers[i].address) + 1;
		put64(&p, c->servers[i].id);
		memcpy(p, c->servers[i].address, alen);
		p += alen;
		*p++ = (uint8_t)c->servers[i].role;
	}
	memset(p, 0, size - (size_t)(p - start)); /* padding */
}

/* Decodes into c (initialised, empty). Returns 0 or a static reason. */
static const char *conf_decode(const uint8_t *p, size_t len, struct raft_configuration *c)
{
	const uint8_t *end = p + len;
	uint64_t n;

	if (len < 9)
		return "configuration shorter than 9 bytes";
	if (p[0] != 1)
		return "configuration format is not 1";
	n = get64(p + 1);
	p += 9;
	if (n == 0)
		return "configuration without servers";
	if (n > (len - 9) / CONF_SERVER_MIN)
		return "configuration server count past its bytes";
	for (uint64_t i = 0; i < n; i++) {
		const uint8_t *addr, *nul;
		uint64_t id;
		int role;

		if (end - p < 8)
			return "configuration server past its bytes";
		id = get64(p);
		addr = p + 8;
		nul = memchr(addr, '\0', (size_t)(end - addr));
		if (nul == NULL || end - nul < 2)
			return "configuration address or role past its bytes";
		if (id == 0)
			return "configuration server id 0";
		if (nul == addr)
			return "configuration server with an empty address";
		role = nul[1];
		if (role != RAFT_VOTER && role != RAFT_STANDBY && role != RAFT_SPARE)
			return "configuration server role unknown";
		switch (raft_configuration_add(c, id, (const char *)addr, role)) {
		case 0:
			break;
		case RAFT_NOMEM:
			PANIC("out of memory (raft configuration)");
		default:
			return "configuration with a duplicate server id or address";
		}
		p = nul + 2;
	}
	return NULL;
}

/* ---- encoding ---- */

static size_t header_size(const struct raft_message *m)
{
	switch (m->type) {
	case RAFT_IO_APPEND_ENTRIES:
		return AE_FIXED + AE_ENTRY * (size_t)m->append_entries.n_entries + AE_SLACK;
	case RAFT_IO_APPEND_ENTRIES_RESULT:
		return AER_SIZE;
	case RAFT_IO_REQUEST_VOTE:
		return RV_V2;
	case RAFT_IO_REQUEST_VOTE_RESULT:
		return RVR_V2;
	case RAFT_IO_INSTALL_SNAPSHOT:
		return IS_FIXED + conf_size(&m->install_snapshot.conf) + IS_TAIL;
	case RAFT_IO_TIMEOUT_NOW:
		return TN_SIZE;
	default:
		return 0;
	}
}

size_t rwire_head_size(const struct raft_message *m)
{
	size_t h = header_size(m);
	return h == 0 ? 0 : RWIRE_PREAMBLE_SIZE + h;
}

void rwire_head_encode(const struct raft_message *m, uint8_t *out)
{
	size_t h = header_size(m);
	uint8_t *p = out;

	PRE(h > 0);
	put64(&p, m->type);
	put64(&p, h);
	switch (m->type) {
	case RAFT_IO_APPEND_ENTRIES: {
		const struct raft_append_entries *a = &m->append_entries;
		put64(&p, a->term);
		put64(&p, a->prev_log_index);
		put64(&p, a->prev_log_term);
		put64(&p, a->leader_commit);
		put64(&p, a->n_entries);
		for (unsigned i = 0; i < a->n_entries; i++) {
			put64(&p, a->entries[i].term);
			*p++ = (uint8_t)a->entries[i].type;
			memset(p, 0, 3);
			p += 3;
			put32(&p, (uint32_t)a->entries[i].buf.len);
		}
		put64(&p, 0);
		break;
	}
	case RAFT_IO_APPEND_ENTRIES_RESULT:
		put64(&p, m->append_entries_result.term);
		put64(&p, m->append_entries_result.rejected);
		put64(&p, m->append_entries_result.last_log_index);
		break;
	case RAFT_IO_REQUEST_VOTE: {
		const struct raft_request_vote *v = &m->request_vote;
		put64(&p, v->term);
		put64(&p, v->candidate_id);
		put64(&p, v->last_log_index);
		put64(&p, v->last_log_term);
		put64(&p, (v->disrupt_leader ? 1u : 0u) | (v->pre_vote ? 2u : 0u));
		break;
	}
	case RAFT_IO_REQUEST_VOTE_RESULT: {
		const struct raft_request_vote_result *v = &m->request_vote_result;
		put64(&p, v->term);
		put64(&p, v->vote_granted ? 1 : 0);
		put64(&p, v->pre_vote == raft_tribool_true ? 1 : 0);
		break;
	}
	case RAFT_IO_INSTALL_SNAPSHOT: {
		const struct raft_install_snapshot *s = &m->install_snapshot;
		size_t cs = conf_size(&s->conf);
		put64(&p, s->term);
		put64(&p, s->last_index);
		put64(&p, s->last_term);
		put64(&p, s->conf_index);
		put64(&p, cs);
		conf_encode(&s->conf, p, cs);
		p += cs;
		put64(&p, s->data.len);
		put64(&p, 0);
		break;
	}
	case RAFT_IO_TIMEOUT_NOW:
		put64(&p, m->timeout_now.term);
		put64(&p, m->timeout_now.last_log_index);
		put64(&p, m->timeout_now.last_log_term);
		break;
	}
	POST((size_t)(p - out) == RWIRE_PREAMBLE_SIZE + h);
}

uint64_t rwire_payload_size(const struct raft_message *m)
{
	uint64_t n = 0;

	if (m->type == RAFT_IO_APPEND_ENTRIES)
		for (unsigned i = 0; i < m->append_entries.n_entries; i++)
			n += m->append_entries.entries[i].buf.len;
	else if (m->type == RAFT_IO_INSTALL_SNAPSHOT)
		n = m->install_snapshot.data.len;
	return n;
}

int rwire_encode(const struct raft_message *m, struct buf *out)
{
	size_t hs = rwire_head_size(m);

	if (hs == 0)
		return DOCRAFT_EINVAL;
	buf_reserve(out, hs);
	rwire_head_encode(m, out->data + out->len);
	out->len += hs;
	if (m->type == RAFT_IO_APPEND_ENTRIES)
		for (unsigned i = 0; i < m->append_entries.n_entries; i++)
			buf_append(out, m->append_entries.entries[i].buf.base,
				   m->append_entries.entries[i].buf.len);
	else if (m->type == RAFT_IO_INSTALL_SNAPSHOT)
		buf_append(out, m->install_snapshot.data.base, m->install_snapshot.data.len);
	return 0;
}

/* ---- decoding ---- */

void rwire_decoder_init(struct rwire_decoder *d, uint64_t limit)
{
	memset(d, 0, sizeof *d);
	d->limit = limit == 0 ? RWIRE_LIMIT_DEFAULT : limit > RWIRE_LIMIT_MAX ? RWIRE_LIMIT_MAX
									: limit;
	d->stage = RWIRE_AT_PREAMBLE;
}

/* Frees what the message being decoded holds and goes back to the
 * preamble stage. */
static void reset(struct rwire_decoder *d, bool free_message)
{
	if (d->header != NULL && d->header != d->fixed)
		free(d->header);
	if (free_message && d->stage == RWIRE_AT_PAYLOAD) {
		/* The header was decoded; the batch / data are not linked yet. */
		if (d->m.type == RAFT_IO_APPEND_ENTRIES)
			raft_free(d->m.append_entries.entries);
		else if (d->m.type == RAFT_IO_INSTALL_SNAPSHOT)
			raft_configuration_close(&d->m.install_snapshot.conf);
		raft_free(d->payload);
	}
	d->header = NULL;
	d->header_len = 0;
	d->payload = NULL;
	d->payload_len = 0;
	d->have = 0;
	d->type = 0;
	d->stage = RWIRE_AT_PREAMBLE;
	memset(&d->m, 0, sizeof d->m);
}

void rwire_decoder_close(struct rwire_decoder *d)
{
	reset(d, true);
}

/* Smallest and largest header of each type. */
static void header_bounds(const struct rwire_decoder *d, uint64_t type, uint64_t *min,
			  uint64_t *max)
{
	*max = RWIRE_FIXED_HEADER_MAX;
	switch (type) {
	case RAFT_IO_APPEND_ENTRIES:
		*min = AE_FIXED;
		*max = d->limit;
		break;
	case RAFT_IO_INSTALL_SNAPSHOT:
		*min = IS_FIXED + 8; /* at least the data length after the configuration */
		*max = d->limit;
		break;
	case RAFT_IO_REQUEST_VOTE:
		*min = RV_V1;
		break;
	case RAFT_IO_REQUEST_VOTE_RESULT:
		*min = RVR_V1;
		break;
	default: /* APPEND_ENTRIES_RESULT, TIMEOUT_NOW */
		*min = AER_SIZE;
		break;
	}
}

static int preamble_done(struct rwire_decoder *d, char *errmsg)
{
	uint64_t min, max;

	d->type = get64(d->preamble);
	d->header_len = 0;
	if (d->type == 0 || d->type > RWIRE_TYPE_MAX)
		return err_set(errmsg, DOCRAFT_ECORRUPT, "unknown message type %llu",
			       (unsigned long long)d->type);
	header_bounds(d, d->type, &min, &max);
	{
		uint64_t h = get64(d->preamble + 8);
		if (h < min || h > max)
			return err_set(errmsg, DOCRAFT_ECORRUPT,
				       "%s header of %llu bytes (%llu..%llu)",
				       rwire_type_name((unsigned)d->type), (unsigned long long)h,
				       (unsigned long long)min, (unsigned long long)max);
		d->header_len = (size_t)h;
	}
	d->header = d->header_len <= sizeof d->fixed ? d->fixed : xmalloc(d->header_len);
	d->stage = RWIRE_AT_HEADER;
	d->have = 0;
	return 0;
}

static int decode_append_entries(struct rwire_decoder *d, char *errmsg)
{
	struct raft_append_entries *a = &d->m.append_entries;
	const uint8_t *h = d->header;
	uint64_t n, total = 0;

	a->term = get64(h);
	a->prev_log_index = get64(h + 8);
	a->prev_log_term = get64(h + 16);
	a->leader_commit = get64(h + 24);
	n = get64(h + 32);
	if (n > (d->header_len - AE_FIXED) / AE_ENTRY)
		return err_set(errmsg, DOCRAFT_ECORRUPT,
			       "AppendEntries of %llu entries in a header of %zu bytes",
			       (unsigned long long)n, d->header_len);
	for (uint64_t i = 0; i < n; i++) {
		const uint8_t *e = h + AE_FIXED + AE_ENTRY * i;
		uint8_t type = e[8];
		if (type != RAFT_COMMAND && type != RAFT_BARRIER && type != RAFT_CHANGE)
			return err_set(errmsg, DOCRAFT_ECORRUPT, "entry %llu of unknown type %u",
				       (unsigned long long)i, type);
		total += get32(e + 12);
	}
	if (total > d->limit)
		return err_set(errmsg, DOCRAFT_ECORRUPT,
			       "AppendEntries payload of %llu bytes (limit %llu)",
			       (unsigned long long)total, (unsigned long long)d->limit);
	a->n_entries = (unsigned)n;
	a->entries = NULL;
	if (n == 0)
		return 0;
	a->entries = rmalloc((size_t)n * sizeof *a->entries);
	for (uint64_t i = 0; i < n; i++) {
		const uint8_t *e = h + AE_FIXED + AE_ENTRY * i;
		struct raft_entry *en = &a->entries[i];
		en->term = get64(e);
		en->type = e[8];
		en->buf.len = get32(e + 12);
		en->buf.base = NULL;
		en->batch = NULL;
	}
	/* One batch for all; none when every entry is empty (rwire.h). */
	d->payload_len = (size_t)total;
	if (total > 0)
		d->payload = rmalloc(d->payload_len);
	return 0;
}

static int decode_install_snapshot(struct rwire_decoder *d, char *errmsg)
{
	struct raft_install_snapshot *s = &d->m.install_snapshot;
	const uint8_t *h = d->header;
	uint64_t clen, dlen;
	const char *why;

	s->term = get64(h);
	s->last_index = get64(h + 8);
	s->last_term = get64(h + 16);
	s->conf_index = get64(h + 24);
	clen = get64(h + 32);
	raft_configuration_init(&s->conf);
	s->data.base = NULL;
	s->data.len = 0;
	if (clen > d->header_len - IS_FIXED - 8)
		return err_set(errmsg, DOCRAFT_ECORRUPT,
			       "InstallSnapshot configuration of %llu bytes in a header of %zu",
			       (unsigned long long)clen, d->header_len);
	why = conf_decode(h + IS_FIXED, (size_t)clen, &s->conf);
	if (why != NULL) {
		raft_configuration_close(&s->conf);
		raft_configuration_init(&s->conf);
		return err_set(errmsg, DOCRAFT_ECORRUPT, "InstallSnapshot: %s", why);
	}
	dlen = get64(h + IS_FIXED + clen);
	if (dlen > d->limit) {
		raft_configuration_close(&s->conf);
		raft_configuration_init(&s->conf);
		return err_set(errmsg, DOCRAFT_ECORRUPT,
			       "InstallSnapshot data of %llu bytes (limit %llu)",
			       (unsigned long long)dlen, (unsigned long long)d->limit);
	}
	if (dlen > 0) {
		d->payload_len = (size_t)dlen;
		d->payload = rmalloc(d->payload_len);
	}
	return 0;
}

/* The header is complete: decode it. Returns 0 (stage moves to payload, or
 * the message is complete when there is none: *complete) or an error. */
static int header_done(struct rwire_decoder *d, bool *complete, char *errmsg)
{
	const uint8_t *h = d->header;
	int rv = 0;

	memset(&d->m, 0, sizeof d->m);
	d->m.type = (unsigned short)d->type;
	switch (d->type) {
	case RAFT_IO_APPEND_ENTRIES:
		rv = decode_append_entries(d, errmsg);
		break;
	case RAFT_IO_APPEND_ENTRIES_RESULT:
		d->m.append_entries_result.term = get64(h);
		d->m.append_entries_result.rejected = get64(h + 8);
		d->m.append_entries_result.last_log_index = get64(h + 16);
		break;
	case RAFT_IO_REQUEST_VOTE: {
		struct raft_request_vote *v = &d->m.request_vote;
		v->term = get64(h);
		v->candidate_id = get64(h + 8);
		v->last_log_index = get64(h + 16);
		v->last_log_term = get64(h + 24);
		if (d->header_len >= RV_V2) {
			uint64_t flags = get64(h + 32);
			v->disrupt_leader = (flags & 1) != 0;
			v->pre_vote = (flags & 2) != 0;
		}
		break;
	}
	case RAFT_IO_REQUEST_VOTE_RESULT: {
		struct raft_request_vote_result *v = &d->m.request_vote_result;
		v->term = get64(h);
		v->vote_granted = get64(h + 8) != 0;
		v->pre_vote = raft_tribool_unknown;
		if (d->header_len >= RVR_V2)
			v->pre_vote = TO_RAFT_TRIBOOL(get64(h + 16) & 1);
		break;
	}
	case RAFT_IO_INSTALL_SNAPSHOT:
		rv = decode_install_snapshot(d, errmsg);
		break;
	case RAFT_IO_TIMEOUT_NOW:
		d->m.timeout_now.term = get64(h);
		d->m.timeout_now.last_log_index = get64(h + 8);
		d->m.timeout_now.last_log_term = get64(h + 16);
		break;
	}
	if (d->header != d->fixed)
		free(d->header);
	d->header = NULL;
	if (rv != 0) {
		if (d->type == RAFT_IO_APPEND_ENTRIES)
			memset(&d->m.append_entries, 0, sizeof d->m.append_entries);
		return rv;
	}
	d->stage = RWIRE_AT_PAYLOAD;
	d->have = 0;
	*complete = d->payload_len == 0;
	return 0;
}

/* The payload is complete (or there is none): hand the message over. */
static void finish(struct rwire_decoder *d, struct raft_message *out)
{
	if (d->m.type == RAFT_IO_APPEND_ENTRIES && d->m.append_entries.n_entries > 0) {
		struct raft_append_entries *a = &d->m.append_entries;
		size_t off = 0; /* an offset: the payload may be NULL (all empty) */
		for (unsigned i = 0; i < a->n_entries; i++) {
			a->entries[i].batch = d->payload;
			a->entries[i].buf.base = a->entries[i].buf.len > 0 ? d->payload + off : NULL;
			off += a->entries[i].buf.len;
		}
	} else if (d->m.type == RAFT_IO_INSTALL_SNAPSHOT) {
		d->m.install_snapshot.data.base = d->payload;
		d->m.install_snapshot.data.len = d->payload_len;
	}
	*out = d->m;
	out->server_id = 0;
	out->server_address = NULL;
	d->payload = NULL; /* handed over */
	reset(d, false);
}

_Static_assert(DOCRAFT_ECORRUPT != RWIRE_MORE && DOCRAFT_ECORRUPT != RWIRE_MESSAGE,
	       "feed's results and error codes are distinct");

/* Copies what is missing of the current stage (want bytes into dst), at
 * most what is left of p; true once the stage is complete. */
static bool take(struct rwire_decoder *d, uint8_t *dst, size_t want, const uint8_t *p, size_t n,
		 size_t *off)
{
	size_t k = want - d->have;

	k = k < n - *off ? k : n - *off;
	memcpy(dst + d->have, p + *off, k);
	d->have += k;
	*off += k;
	return d->have == want;
}

int rwire_decoder_feed(struct rwire_decoder *d, const uint8_t *p, size_t n, size_t *used,
		       struct raft_message *out, char *errmsg)
{
	size_t off = 0;
	int rv = RWIRE_MORE;

	while (off < n && rv == RWIRE_MORE) {
		bool complete = false;

		switch (d->stage) {
		case RWIRE_AT_PREAMBLE:
			if (take(d, d->preamble, RWIRE_PREAMBLE_SIZE, p, n, &off))
				rv = preamble_done(d, errmsg);
			break;
		case RWIRE_AT_HEADER:
			if (!take(d, d->header, d->header_len, p, n, &off))
				break;
			rv = header_done(d, &complete, errmsg);
			if (rv != 0)
				reset(d, false);
			else if (complete)
				rv = RWIRE_MESSAGE;
			break;
		case RWIRE_AT_PAYLOAD:
			if (take(d, d->payload, d->payload_len, p, n, &off))
				rv = RWIRE_MESSAGE;
			break;
		}
	}
	if (rv == RWIRE_MESSAGE)
		finish(d, out);
	*used = off;
	return rv;
}

bool rwire_decoder_window(struct rwire_decoder *d, size_t min, uint8_t **p, size_t *n)
{
	if (d->stage != RWIRE_AT_PAYLOAD || d->payload == NULL ||
	    d->payload_len - d->have < min || d->payload_len == d->have)
		return false;
	*p = d->payload + d->have;
	*n = d->payload_len - d->have;
	return true;
}

int rwire_decoder_advance(struct rwire_decoder *d, size_t k, struct raft_message *out)
{
	PRE(d->stage == RWIRE_AT_PAYLOAD && k <= d->payload_len - d->have);
	d->have += k;
	if (d->have < d->payload_len)
		return RWIRE_MORE;
	finish(d, out);
	return RWIRE_MESSAGE;
}

void rwire_message_free(struct raft_message *m)
{
	if (m->type == RAFT_IO_APPEND_ENTRIES) {
		struct raft_append_entries *a = &m->append_entries;
		void *batch = NULL;

		for (unsigned i = 0; a->entries != NULL && i < a->n_entries; i++) {
			if (a->entries[i].batch != NULL && a->entries[i].batch != batch) {
				batch = a->entries[i].batch;
				raft_free(batch);
			}
		}
		raft_free(a->entries);
		a->entries = NULL;
		a->n_entries = 0;
	} else if (m->type == RAFT_IO_INSTALL_SNAPSHOT) {
		raft_configuration_close(&m->install_snapshot.conf);
		raft_configuration_init(&m->install_snapshot.conf);
		raft_free(m->install_snapshot.data.base);
		m->install_snapshot.data.base = NULL;
		m->install_snapshot.data.len = 0;
	}
}

static bool same_buffer(const struct raft_buffer *a, const struct raft_buffer *b)
{
	return a->len == b->len && (a->len == 0 || memcmp(a->base, b->base, a->len) == 0);
}

static bool same_append_entries(const struct raft_append_entries *x,
				const struct raft_append_entries *y)
{
	if (x->term != y->term || x->prev_log_index != y->prev_log_index ||
	    x->prev_log_term != y->prev_log_term || x->leader_commit != y->leader_commit ||
	    x->n_entries != y->n_entries)
		return false;
	for (unsigned i = 0; i < x->n_entries; i++)
		if (x->entries[i].term != y->entries[i].term ||
		    x->entries[i].type != y->entries[i].type ||
		    !same_buffer(&x->entries[i].buf, &y->entries[i].buf))
			return false;
	return true;
}

static bool same_install_snapshot(const struct raft_install_snapshot *x,
				  const struct raft_install_snapshot *y)
{
	if (x->term != y->term || x->last_index != y->last_index ||
	    x->last_term != y->last_term || x->conf_index != y->conf_index ||
	    x->conf.n != y->conf.n)
		return false;
	for (unsigned i = 0; i < x->conf.n; i++)
		if (x->conf.servers[i].id != y->conf.servers[i].id ||
		    x->conf.servers[i].role != y->conf.servers[i].role ||
		    strcmp(x->conf.servers[i].address, y->conf.servers[i].address) != 0)
			return false;
	return same_buffer(&x->data, &y->data);
}

bool rwire_message_equal(const struct raft_message *a, const struct raft_message *b)
{
	if (a->type != b->type)
		return false;
	switch (a->type) {
	case RAFT_IO_APPEND_ENTRIES:
		return same_append_entries(&a->append_entries, &b->append_entries);
	case RAFT_IO_APPEND_ENTRIES_RESULT:
		return a->append_entries_result.term == b->append_entries_result.term &&
		       a->append_entries_result.rejected == b->append_entries_result.rejected &&
		       a->append_entries_result.last_log_index ==
			       b->append_entries_result.last_log_index;
	case RAFT_IO_REQUEST_VOTE: {
		const struct raft_request_vote *x = &a->request_vote, *y = &b->request_vote;
		return x->term == y->term && x->candidate_id == y->candidate_id &&
		       x->last_log_index == y->last_log_index &&
		       x->last_log_term == y->last_log_term &&
		       x->disrupt_leader == y->disrupt_leader && x->pre_vote == y->pre_vote;
	}
	case RAFT_IO_REQUEST_VOTE_RESULT: {
		const struct raft_request_vote_result *x = &a->request_vote_result,
						      *y = &b->request_vote_result;
		return x->term == y->term && x->vote_granted == y->vote_granted &&
		       (x->pre_vote == raft_tribool_true) == (y->pre_vote == raft_tribool_true);
	}
	case RAFT_IO_INSTALL_SNAPSHOT:
		return same_install_snapshot(&a->install_snapshot, &b->install_snapshot);
	case RAFT_IO_TIMEOUT_NOW:
		return a->timeout_now.term == b->timeout_now.term &&
		       a->timeout_now.last_log_index == b->timeout_now.last_log_index &&
		       a->timeout_now.last_log_term == b->timeout_now.last_log_term;
	default:
		return true;
	}
}

const char *rwire_type_name(unsigned type)
{
	static const char *const names[] = {
		[RAFT_IO_APPEND_ENTRIES] = "append_entries",
		[RAFT_IO_APPEND_ENTRIES_RESULT] = "append_entries_result",
		[RAFT_IO_REQUEST_VOTE] = "request_vote",
		[RAFT_IO_REQUEST_VOTE_RESULT] = "request_vote_result",
		[RAFT_IO_INSTALL_SNAPSHOT] = "install_snapshot",
		[RAFT_IO_TIMEOUT_NOW] = "timeout_now",
	};
	return type >= 1 && type <= RWIRE_TYPE_MAX ? names[type] : "?";
}
