/* The read path of a tablet replica: leader leases, read barriers, safe
 * time and the read confirmation (tablet.h "reads", "Leader lease").
 *
 * Design.
 *
 *   tablet_read ─► t->rq ─► poll of a READY leader: tablet_read_serve
 *       ├─ lease held, no barrier asked ──► answered now at the safe time
 *       └─ the rest ──► one raft_barrier for every read queued before it
 *                          │ applied: answered at the safe time
 *                          └ failed: DOCRAFT_ENOTLEADER (a read has no
 *                            effect: the client just retries)
 *
 * Safe time: hlc_now, but below every write still in flight, so a later
 * read at the same time sees the same data.
 *
 * The lease (the argument is in tablet.h): an entry of this leadership
 * proposed at S (tablet_read_clock, taken before raft_apply / raft_barrier)
 * that commits extends it to S + lease_ns. Every write entry (tablet_write.c),
 * read barrier, leader barrier (tablet_membership.c) and snapshot barrier
 * (tablet_raft.c) that commits renews it; a leader serving reads with no
 * writes proposes a barrier when less than half of it is left. A new
 * leadership, or none, drops it; a transfer voids it for the rest of the
 * leadership (tablet_membership.c). A read answered under the lease is
 * confirmed after it has read (tablet_read_confirm): a process paused
 * between the two must not answer from a store another leader may have
 * overtaken. Nothing is answered from inside tablet_read. */
#include <stdlib.h>
#include <time.h>

#include "common/mem.h"
#include "tablet/tablet_int.h"

/* ---- leader lease ---------------------------------------------------------- */

/* CLOCK_BOOTTIME keeps counting while the machine sleeps: a leader resumed
 * from a suspend sees its lease as expired. Never the loop's cached time: a
 * paused process must see the time it resumed at. A raft host with a clock
 * (raft_fixture) gives its own: raft's timers run on it too. */
uint64_t tablet_read_clock(const struct tablet *t)
{
	struct timespec ts;
	if (t->o.raft_host != NULL && t->o.raft_host->clock_ns != NULL)
		return t->o.raft_host->clock_ns(t->o.raft_host);
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void tablet_read_lease_extend(struct tablet *t, uint64_t epoch, uint64_t sent_ns)
{
	if (t->lease_ns == 0 || t->lease_void || epoch != t->epoch)
		return;
	if (sent_ns + t->lease_ns > t->lease_until)
		t->lease_until = sent_ns + t->lease_ns;
}

bool tablet_read_lease_held(const struct tablet *t, uint64_t now)
{
	return t->role == TABLET_LEADER && now < t->lease_until;
}

void tablet_read_lease_drop(struct tablet *t)
{
	t->lease_until = 0;
	t->lease_void = false;
	t->lease_used = false;
}

struct barrier *tablet_read_barrier_new(struct tablet *t)
{
	struct barrier *b = xzalloc(sizeof *b);
	b->t = t;
	b->epoch = t->epoch;
	b->sent_ns = tablet_read_clock(t); /* before raft_barrier: never later than the entry */
	b->req.data = b;
	return b;
}

/* ---- reads ----------------------------------------------------------------- */

/* Below every write still in flight: a later read at this time sees the same
 * data. */
static uint64_t safe_time(struct tablet *t)
{
	uint64_t now = hlc_now(&t->hlc);
	if (t->if_head != NULL && t->if_head->ht <= now)
		return t->if_head->ht - 1;
	return now;
}

static void read_barrier_cb(struct raft_barrier *req, int status)
{
	struct barrier *b = req->data;
	struct tablet *t = b->t;
	struct tablet_read *r = b->reads;
	int code = tablet_from_raft(status);
	bool ok = status == 0 && b->epoch == t->epoch && t->role == TABLET_LEADER;
	uint64_t ht;
	t->read_barrier_busy = false;
	if (tablet_disk_error(status))
		tablet_disk_failed(t, status, "this leader's Raft log write (a read barrier)");
	if (ok)
		tablet_read_lease_extend(t, b->epoch, b->sent_ns);
	ht = ok ? safe_time(t) : 0;
	if (!ok && code == 0)
		code = DOCRAFT_ENOTLEADER;
	if (code != 0)
		code = DOCRAFT_ENOTLEADER; /* a read has no effect: just retry */
	while (r != NULL) {
		struct tablet_read *next = r->next_;
		r->lease_ = false;
		if (ok) {
			t->st.barrier_reads++;
			lathist_record(&t->st.read_latency, (uv_hrtime() - r->start_ns_) / 1000);
		}
		r->cb(r, ok ? 0 : code, ht);
		r = next;
	}
	free(b);
}

/* One barrier for every queued read; with no read queued, a renewal of the
 * lease (renew). */
static void issue_read_barrier(struct tablet *t, bool renew)
{
	struct barrier *b;
	int rv;
	if (t->read_barrier_busy || (t->rq_head == NULL && !renew))
		return;
	b = tablet_read_barrier_new(t);
	b->reads = t->rq_head;
	rv = raft_barrier(t->raft, &b->req, read_barrier_cb);
	if (rv != 0) {
		free(b);
		return; /* not leader any more: the poll fails the reads */
	}
	t->rq_head = t->rq_tail = NULL;
	t->read_barrier_busy = true;
	if (renew && b->reads == NULL)
		t->st.lease_barriers++;
}

/* Under the lease, answers every queued read that does not ask for a
 * barrier; the rest stay queued, in order, before any read the callbacks
 * queue. */
static void serve_under_lease(struct tablet *t)
{
	struct tablet_read *r = t->rq_head, *keep = NULL, *keep_tail = NULL;
	uint64_t ht = safe_time(t);
	t->rq_head = t->rq_tail = NULL;
	while (r != NULL) {
		struct tablet_read *next = r->next_;
		r->next_ = NULL;
		if (r->barrier) {
			*(keep_tail != NULL ? &keep_tail->next_ : &keep) = r;
			keep_tail = r;
		} else {
			r->lease_ = true;
			r->epoch_ = t->epoch;
			t->lease_used = true;
			t->st.lease_reads++;
			lathist_record(&t->st.read_latency, (uv_hrtime() - r->start_ns_) / 1000);
			r->cb(r, 0, ht);
		}
		r = next;
	}
	/* Callbacks may have queued reads again: those go after. */
	if (keep != NULL) {
		keep_tail->next_ = t->rq_head;
		if (t->rq_head == NULL)
			t->rq_tail = keep_tail;
		t->rq_head = keep;
	}
}

void tablet_read_serve(struct tablet *t)
{
	uint64_t now = tablet_read_clock(t);
	if (t->rq_head != NULL && tablet_read_lease_held(t, now))
		serve_under_lease(t);
	issue_read_barrier(t, false);
	/* Renew with a barrier only if reads use the lease, no write entry is
	 * on its way to renew it, and less than half of it is left. */
	if (t->lease_used && t->if_head == NULL && !t->read_barrier_busy &&
	    tablet_read_lease_held(t, now) && t->lease_until - now < t->lease_ns / 2) {
		t->lease_used = false;
		issue_read_barrier(t, true);
	}
}

int tablet_read(struct tablet *t, struct tablet_read *req)
{
	int rv = tablet_admit(t);
	if (rv != 0)
		return rv;
	if (req->cb == NULL)
		return DOCRAFT_EINVAL;
	req->next_ = NULL;
	req->lease_ = false;
	req->start_ns_ = uv_hrtime();
	*(t->rq_tail != NULL ? &t->rq_tail->next_ : &t->rq_head) = req;
	t->rq_tail = req;
	return 0;
}

bool tablet_read_confirm(struct tablet *t, const struct tablet_read *req)
{
	return !req->lease_ ||
	       (req->epoch_ == t->epoch && tablet_read_lease_held(t, tablet_read_clock(t)));
}
