/* Tablet replicas on raft_fixture: the raft host of tablet.h for tests.
 *
 * Design (the questions and how they are settled).
 *
 * Who owns struct raft. raft_fixture embeds each server's struct raft and
 * in-memory io, and its step, elect, depose and safety checks read them
 * there (raft_fixture_get). So the tablet accepts an externally owned raft:
 * struct tablet holds a pointer (t->raft: its own raft_mem on the shared
 * and per-tablet logs), and a replica whose options carry a raft host gets
 * the host's instead (tablet_raft.c, "hosted"). Our open runs
 * raft_fixture_grow(f, &fsm) with the TABLET's fsm, so raft_init is the
 * fixture's, with the replica's real state machine; the tablet then wraps
 * the server's io with rio in place (rio_wrap_fixture), bootstraps and
 * starts raft itself (tablet_bootstrap / tablet_start; raft_fixture_start is
 * never called). Server i is replica i: grow hands out ids in order, so
 * replica i must be opened i-th with raft id i + 1 and address "i+1" (the
 * fixture's own address strings: its messages carry them and rio checks
 * them against the configuration); open refuses anything else, and a second
 * setup of a replica (a recovery after FAILED), since a fixture server
 * cannot be grown twice.
 *
 * Who closes it. raft_fixture_close raft_closes every server after
 * flushing its io; a raft closed twice frees its memory twice, and a raft
 * closed before its io's requests are flushed gets their callbacks after
 * its log is gone. So the fixture is the only one to raft_close: a tablet's
 * close (tablet_raft_host.close) is recorded and answered (cb) on the next
 * step's hook or by tablet_fixture_down, which closes the fixture first and
 * the tablets after. A replica closed before that (a FAILED one: never in
 * these tests unless something broke) is raft_fixture_kill'ed: it neither
 * ticks nor speaks again.
 *
 * Time. Everything the tablet times reads the fixture's virtual clock:
 * raft's election and heartbeat timers (io->time is the fixture's), the
 * leases (tablet_raft_host.clock_ns: raft_fixture_time in ns, the same
 * clock as the election timers the lease argument relies on), rio's vote
 * quiet period (inner io time) and the hybrid clocks (hlc_clock_us:
 * TF_EPOCH_US + virtual time), and through them the retry table's window
 * (retry_ttl_us counts entries' hybrid times). What stays on the loop's
 * real time is only what these tests never reach: a FAILED replica's
 * recovery backoff, a checkpoint copy's retry delay (both uv timers) and
 * raft_uv's writer wait (per-tablet only). The fixture's io has no
 * threadpool: open clears the fsm's snapshot_async, so a snapshot flushes
 * RocksDB synchronously in fsm.c (as tests/tablet/test_tablet_fixture.c
 * does); store jobs (close) run on libuv's threadpool as in production.
 *
 * Interleaving. Raft's callbacks into the tablet (fsm apply, raft_apply,
 * barrier, append) run inside raft_fixture_step, exactly as they run inside
 * a libuv callback in production. What the tablet does on its loop (the
 * poll: follow raft_state, the leader barrier, propose queued writes,
 * serve reads, answer applied writes) runs in one uv_run(UV_RUN_NOWAIT)
 * turn after every step, from the fixture's hook; so a write queued between
 * two steps is proposed after the next one, answered one turn after the
 * step that applied it, and the virtual clock never moves inside a turn.
 * This mirrors production, where a loop turn sees raft's callbacks of that
 * turn and its poll runs before the next io. */
#include "tablet_fixture.h"

#include <stdio.h>
#include <string.h>

#include "docraft/error.h"
#include "loop.h"
#include "test.h"

static struct tablet_fixture *of_host(struct tablet_raft_host *h)
{
	return (struct tablet_fixture *)((char *)h - offsetof(struct tablet_fixture, host));
}

static int host_open(struct tablet_raft_host *h, const struct tablet_options *o,
		     struct raft_fsm *fsm, struct raft **r, char *errmsg)
{
	struct tablet_fixture *tf = of_host(h);
	unsigned i = raft_fixture_n(&tf->f);
	char address[16];
	int rv;
	snprintf(address, sizeof address, "%u", i + 1);
	if (o->raft_id != i + 1 || strcmp(o->address, address) != 0 || i >= TF_MAX) {
		snprintf(errmsg, DOCRAFT_ERRMSG_SIZE,
			 "tablet %s: raft_fixture grows server %u (address \"%s\") next, not "
			 "%llu at %s (a hosted replica is set up once, in order)",
			 o->id, i + 1, address, (unsigned long long)o->raft_id, o->address);
		return DOCRAFT_EINVAL;
	}
	fsm->snapshot_async = NULL; /* no threadpool: fsm.c flushes in snapshot() */
	if ((rv = raft_fixture_grow(&tf->f, fsm)) != 0) {
		snprintf(errmsg, DOCRAFT_ERRMSG_SIZE, "tablet %s: raft_fixture_grow: %s", o->id,
			 raft_strerror(rv));
		return DOCRAFT_EIO;
	}
	*r = raft_fixture_get(&tf->f, i);
	return 0;
}

static void host_close(struct tablet_raft_host *h, struct raft *r, void (*cb)(struct raft *r))
{
	struct tablet_fixture *tf = of_host(h);
	CHECK(tf->n_pending < TF_MAX);
	if (!tf->closed)
		raft_fixture_kill(&tf->f, (unsigned)(r->id - 1));
	tf->pending[tf->n_pending].r = r;
	tf->pending[tf->n_pending].cb = cb;
	tf->n_pending++;
}

static uint64_t host_clock_ns(struct tablet_raft_host *h)
{
	return raft_fixture_time(&of_host(h)->f) * UINT64_C(1000000);
}

static uint64_t host_hlc_clock_us(void *h)
{
	return TF_EPOCH_US + raft_fixture_time(&of_host(h)->f) * UINT64_C(1000);
}

static void fire_pending(struct tablet_fixture *tf)
{
	while (tf->n_pending > 0) {
		tf->n_pending--;
		tf->pending[tf->n_pending].cb(tf->pending[tf->n_pending].r);
	}
}

static void fixture_hook(struct raft_fixture *f, struct raft_fixture_event *ev)
{
	struct tablet_fixture *tf = (struct tablet_fixture *)f;
	(void)ev;
	tf->steps++;
	fire_pending(tf);
	uv_run(&tf->loop, UV_RUN_NOWAIT);
	if (tf->hook != NULL)
		tf->hook(tf, tf->hook_arg);
}

void tablet_fixture_up(struct tablet_fixture *tf, unsigned n, const struct tablet_options *base)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	char dirs[TF_MAX][300], addresses[TF_MAX][16];
	struct tablet_peer peers[TF_MAX];

	CHECK(n >= 1 && n <= TF_MAX);
	memset(tf, 0, sizeof *tf);
	tf->n = n;
	tf->host.open = host_open;
	tf->host.close = host_close;
	tf->host.clock_ns = host_clock_ns;
	tf->host.hlc_clock_us = host_hlc_clock_us;
	CHECK_OK(uv_loop_init(&tf->loop));
	CHECK_OK(raft_fixture_initialize(&tf->f));
	raft_fixture_hook(&tf->f, fixture_hook);
	test_tmpdir_make(tf->dir, "tablet-fx");
	for (unsigned i = 0; i < n; i++) {
		struct tablet_options o = *base;
		snprintf(dirs[i], sizeof dirs[i], "%s/s%u", tf->dir, i);
		snprintf(addresses[i], sizeof addresses[i], "%u", i + 1);
		o.id = "fx";
		o.dir = dirs[i];
		o.raft_id = i + 1;
		o.address = addresses[i];
		o.listener = NULL;
		o.copy = NULL;
		o.raft_log = NULL;
		o.raft_host = &tf->host;
		CHECK_OK_MSG(tablet_open(&tf->loop, &o, &tf->t[i], errmsg), errmsg);
		tf->n_open++;
		peers[i] = (struct tablet_peer){i + 1, addresses[i], RAFT_VOTER};
	}
	for (unsigned i = 0; i < n; i++)
		CHECK_OK_MSG(tablet_bootstrap(tf->t[i], peers, n, errmsg), errmsg);
	for (unsigned i = 0; i < n; i++)
		CHECK_OK_MSG(tablet_start(tf->t[i], errmsg), errmsg);
}

static void tablet_closed(struct tablet *t, void *arg)
{
	struct tablet_fixture *tf = arg;
	(void)t;
	tf->n_open--;
}

static bool all_closed(void *arg)
{
	return ((struct tablet_fixture *)arg)->n_open == 0;
}

void tablet_fixture_down(struct tablet_fixture *tf)
{
	raft_fixture_close(&tf->f);
	tf->closed = true;
	for (unsigned i = 0; i < tf->n; i++)
		tablet_close(tf->t[i], tablet_closed, tf);
	fire_pending(tf);
	CHECK(loop_run_until(&tf->loop, all_closed, tf, 10000));
	CHECK_EQ_INT(loop_finish(&tf->loop), 0);
	test_tmpdir_remove(tf->dir);
}

int tablet_fixture_leader(struct tablet_fixture *tf)
{
	struct tablet_status st;
	for (unsigned i = 0; i < tf->n; i++) {
		tablet_get_status(tf->t[i], &st);
		if (st.role == TABLET_LEADER)
			return (int)i;
	}
	return -1;
}

struct until {
	struct tablet_fixture *tf;
	bool (*pred)(struct tablet_fixture *tf, void *arg);
	void *arg;
};

static bool until_pred(struct raft_fixture *f, void *arg)
{
	struct until *u = arg;
	(void)f;
	return u->pred(u->tf, u->arg);
}

bool tablet_fixture_step_until(struct tablet_fixture *tf,
			       bool (*pred)(struct tablet_fixture *tf, void *arg), void *arg,
			       unsigned max_ms)
{
	struct until u = {tf, pred, arg};
	if (pred(tf, arg))
		return true;
	return raft_fixture_step_until(&tf->f, until_pred, &u, max_ms);
}
