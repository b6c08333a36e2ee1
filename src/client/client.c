/* libdocraft: the client object, its loop and thread, its timers, jobs,
 * sequence numbers and blocking calls. The requests themselves are in
 * requests.c (get, tablet calls), write.c, scan.c and tables.c.
 *
 * Design note.
 *
 * Loop and thread. Everything a client does happens on one libuv loop:
 * its RPC client (one shared connection per server), its metadata cache,
 * its timers. By default the client owns that loop and runs it on its own
 * thread; public calls made on any thread become jobs appended to a queue
 * under a mutex, and a uv_async wakes the loop to start them. A blocking
 * call submits its job with a callback that signals a condition variable
 * and sleeps on it: the loop thread never blocks, application threads
 * only wait for their own answers. (The alternative, running the loop on
 * the calling thread for the duration of each call, would leave
 * connections unserviced between calls and make the client usable by one
 * thread at a time.) On a caller's loop (options.loop) the same queue is
 * drained from a zero-delay client timer instead of the uv_async, so an
 * idle client never keeps the caller's loop alive.
 *
 * Jobs. A job is one public request: it owns everything it builds (an
 * arena for its protobuf messages), embeds the calls it makes (struct
 * tcall to tablets, struct mcall to the master, struct tload to load a
 * table: retry.h, metacache.h) and ends exactly once in job_finish, which
 * sets the request's outcome, frees the job and runs the callback.
 *
 * Sequence numbers. Every WriteRequest gets one from the client's counter
 * (client_seq_acquire) and keeps it across all its retries; the numbers in
 * flight are kept in a list in increasing order (they are taken in that
 * order), so min_running, the smallest of them, is its head.
 *
 * Closing. close sets `closing`, fails queued jobs, fires every armed
 * client timer (whose owners then finish with ECLOSED), and closes the RPC
 * client (whose pending calls fail with ECLOSED); once the RPC client has
 * closed, the client's own handles are closed and the memory released
 * (after joining the thread, or from the last close callback on a caller's
 * loop). */
#include "client/internal.h"

#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "common/check.h"
#include "common/dlist.h"
#include "common/err.h"
#include "common/mem.h"
#include "common/log.h"
#include "net/listener.h"

/* ---- per-thread error message ---- */

static __thread char tls_errmsg[DOCRAFT_ERRMSG_SIZE];

const char *docraft_errmsg(void)
{
	return tls_errmsg;
}

int client_error(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(tls_errmsg, sizeof tls_errmsg, fmt, ap);
	va_end(ap);
	return code;
}

/* ---- timers ---- */

uint64_t client_now(const docraft_client *c)
{
	return uv_now(c->loop);
}

void ctimer_init(struct ctimer *t, void (*fire)(struct ctimer *t))
{
	t->due = 0;
	t->idx = SIZE_MAX;
	t->fire = fire;
}

static void heap_swap(docraft_client *c, size_t i, size_t j)
{
	struct ctimer *t = c->heap[i];
	c->heap[i] = c->heap[j];
	c->heap[j] = t;
	c->heap[i]->idx = i;
	c->heap[j]->idx = j;
}

static void heap_up(docraft_client *c, size_t i)
{
	while (i > 0 && c->heap[(i - 1) / 2]->due > c->heap[i]->due) {
		heap_swap(c, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

static void heap_down(docraft_client *c, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < c->heap_len && c->heap[l]->due < c->heap[m]->due)
			m = l;
		if (r < c->heap_len && c->heap[r]->due < c->heap[m]->due)
			m = r;
		if (m == i)
			return;
		heap_swap(c, i, m);
		i = m;
	}
}

static void heap_remove(docraft_client *c, struct ctimer *t)
{
	size_t i = t->idx;
	ASSERT(i < c->heap_len && c->heap[i] == t);
	c->heap_len--;
	if (i != c->heap_len) {
		c->heap[i] = c->heap[c->heap_len];
		c->heap[i]->idx = i;
		heap_down(c, i);
		heap_up(c, i);
	}
	t->idx = SIZE_MAX;
}

static void timer_cb(uv_timer_t *handle);

static void rearm(docraft_client *c)
{
	uint64_t now;
	if (c->handles_open == 0 || uv_is_closing((uv_handle_t *)&c->timer))
		return;
	if (c->heap_len == 0) {
		uv_timer_stop(&c->timer);
		return;
	}
	now = uv_now(c->loop);
	uv_timer_start(&c->timer, timer_cb, c->heap[0]->due > now ? c->heap[0]->due - now : 0, 0);
}

void ctimer_start(docraft_client *c, struct ctimer *t, uint64_t due)
{
	if (t->idx != SIZE_MAX) {
		t->due = due;
		heap_down(c, t->idx);
		heap_up(c, t->idx);
	} else {
		if (c->heap_len == c->heap_cap) {
			size_t cap = c->heap_cap ? 2 * c->heap_cap : 64;
			struct ctimer **h = xrealloc(c->heap, cap * sizeof *h);
			c->heap = h;
			c->heap_cap = cap;
		}
		t->due = due;
		t->idx = c->heap_len;
		c->heap[c->heap_len++] = t;
		heap_up(c, t->idx);
	}
	rearm(c);
}

void ctimer_stop(docraft_client *c, struct ctimer *t)
{
	if (t->idx == SIZE_MAX)
		return;
	heap_remove(c, t);
	rearm(c);
}

/* Fires every timer due by now (all of them when the client closes). */
static void fire_due(docraft_client *c, bool all)
{
	uint64_t now = uv_now(c->loop);
	while (c->heap_len > 0 && (all || c->heap[0]->due <= now)) {
		struct ctimer *t = c->heap[0];
		heap_remove(c, t);
		t->fire(t);
	}
}

static void timer_cb(uv_timer_t *handle)
{
	docraft_client *c = handle->data;
	fire_due(c, false);
	rearm(c);
}

/* ---- randomness, sequence numbers ---- */

uint32_t client_jitter(docraft_client *c, uint32_t ms)
{
	uint64_t x = c->rand;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	c->rand = x;
	x *= UINT64_C(2685821657736338717);
	if (ms < 2)
		return ms;
	return ms / 2 + (uint32_t)(x % (ms - ms / 2 + 1));
}

void client_seq_acquire(docraft_client *c, struct client_seq *s)
{
	s->seq = ++c->next_seq;
	s->next = NULL;
	s->prev = c->running_tail;
	if (c->running_tail != NULL)
		c->running_tail->next = s;
	else
		c->running = s;
	c->running_tail = s;
}

void client_seq_release(docraft_client *c, struct client_seq *s)
{
	if (s->next == NULL)
		c->running_tail = s->prev;
	DLIST_REMOVE(c->running, s);
}

uint64_t client_min_running(const docraft_client *c)
{
	return c->running != NULL ? c->running->seq : c->next_seq + 1;
}

void docraft_client_id(const docraft_client *c, uint8_t out[16])
{
	memcpy(out, c->id, 16);
}

/* ---- jobs ---- */

static void begin_close(docraft_client *c);

static void job_unlink(docraft_client *c, struct job *j)
{
	if (j->prev_active != NULL)
		j->prev_active->next_active = j->next_active;
	else if (c->active == j)
		c->active = j->next_active;
	if (j->next_active != NULL)
		j->next_active->prev_active = j->prev_active;
	j->prev_active = j->next_active = NULL;
}

void job_finish(struct job *j, int status, const char *errmsg)
{
	docraft_client *c = j->c;
	docraft_req *req = j->req;
	docraft_req_cb cb = j->cb;

	ASSERT(!j->finished);
	j->finished = true;
	job_unlink(c, j);
	req->status = status;
	if (status != 0) {
		snprintf(req->errmsg, sizeof req->errmsg, "%s",
			 errmsg && errmsg[0] ? errmsg : docraft_strerror(status));
		if (req->result != NULL) {
			docraft_result_free(req->result);
			req->result = NULL;
		}
	} else {
		req->errmsg[0] = '\0';
	}
	req->internal_ = NULL;
	j->ops->free(j);
	cb(req);
}

static void start_job(docraft_client *c, struct job *j)
{
	j->deadline = uv_now(c->loop) + c->opts.timeout_ms;
	j->next_active = c->active;
	j->prev_active = NULL;
	if (c->active != NULL)
		c->active->prev_active = j;
	c->active = j;
	j->ops->start(j);
}

/* Starts every queued job (loop thread). */
static void drain(docraft_client *c)
{
	struct job *q;
	bool stop;

	uv_mutex_lock(&c->mu);
	q = c->queue;
	c->queue = c->queue_tail = NULL;
	stop = c->close_requested;
	uv_mutex_unlock(&c->mu);
	uv_update_time(c->loop);
	while (q != NULL) {
		struct job *j = q;
		q = q->next;
		j->next = NULL;
		if (stop || c->closing)
			job_finish(j, DOCRAFT_ECLOSED, "the client is closing");
		else
			start_job(c, j);
	}
	if (stop && !c->closing)
		begin_close(c);
}

static void wake_cb(uv_async_t *a)
{
	drain(a->data);
}

/* Loop mode: the queue is drained from a client timer. */
static struct ctimer *drain_timer_of(docraft_client *c);

int job_submit(docraft_client *c, struct job *j, docraft_req *req, docraft_req_cb cb)
{
	bool send;

	j->c = c;
	j->req = req;
	j->cb = cb;
	j->next = NULL;
	j->finished = false;
	req->status = 0;
	req->errmsg[0] = '\0';
	req->ht = 0;
	req->result = NULL;
	req->internal_ = j;
	uv_mutex_lock(&c->mu);
	if (c->close_requested) {
		uv_mutex_unlock(&c->mu);
		j->ops->free(j);
		req->internal_ = NULL;
		return client_error(DOCRAFT_ECLOSED, "the client is closing");
	}
	/* Only the job that finds the queue empty wakes the loop: the jobs
	 * queued after it are taken by the drain that wake causes. */
	send = c->queue_tail == NULL;
	if (c->queue_tail != NULL)
		c->queue_tail->next = j;
	else
		c->queue = j;
	c->queue_tail = j;
	if (send && c->owns_loop)
		__atomic_add_fetch(&c->wakers, 1, __ATOMIC_SEQ_CST);
	uv_mutex_unlock(&c->mu);
	if (!c->owns_loop) {
		ctimer_start(c, drain_timer_of(c), 0);
	} else if (send) {
		/* Outside the lock (the eventfd write would make every other
		 * submitter wait for it). The wake handle is still open:
		 * wakers was raised before any close request (both under the
		 * lock), and the loop closes the handle only once it is 0. */
		uv_async_send(&c->wake);
		__atomic_sub_fetch(&c->wakers, 1, __ATOMIC_SEQ_CST);
	}
	return 0;
}

/* ---- blocking calls ---- */

/* A semaphore, not a mutex and a condition variable: posting makes a
 * system call only when the caller already sleeps in the wait, and the
 * woken caller has no lock to take. glibc's sem_post touches the
 * semaphore no more once the count is visible, so the caller may return
 * (and its stack frame go) as soon as its wait ends. */
static void sync_cb(docraft_req *req)
{
	uv_sem_post(req->data);
}

int client_wait(docraft_client *c, struct job *j, docraft_req *req)
{
	uv_sem_t sem;
	uv_thread_t self = uv_thread_self();
	int rv;

	if (!c->owns_loop || (c->thread_started && uv_thread_equal(&self, &c->thread))) {
		j->ops->free(j);
		return client_error(DOCRAFT_EINVAL, c->owns_loop
							    ? "blocking call from a client callback"
							    : "blocking calls need a client that owns "
							      "its loop (options.loop is set)");
	}
	if (uv_sem_init(&sem, 0) != 0)
		PANIC("cannot create a semaphore");
	req->data = &sem;
	rv = job_submit(c, j, req, sync_cb);
	if (rv == 0) {
		uv_sem_wait(&sem);
		rv = req->status;
		if (rv != 0)
			client_error(rv, "%s", req->errmsg);
		else
			tls_errmsg[0] = '\0';
	}
	uv_sem_destroy(&sem);
	return rv;
}

/* ---- open and close ---- */

struct client_ext {
	docraft_client c;
	struct ctimer drain_timer;
	struct ctimer close_timer;
};

static struct ctimer *drain_timer_of(docraft_client *c)
{
	return &((struct client_ext *)c)->drain_timer;
}

static void drain_timer_fire(struct ctimer *t)
{
	struct client_ext *x = CONTAINER_OF(t, struct client_ext, drain_timer);
	if (!x->c.closing)
		drain(&x->c);
}

static void close_timer_fire(struct ctimer *t)
{
	struct client_ext *x = CONTAINER_OF(t, struct client_ext, close_timer);
	if (!x->c.closing)
		drain(&x->c);
}

void docraft_client_options_init(docraft_client_options *o)
{
	/* num_tablets and replication_factor 0: the master's defaults; no loop. */
	*o = (docraft_client_options){.timeout_ms = 10000, .rpc_timeout_ms = 2000,
				      .backoff_min_ms = 20, .backoff_max_ms = 1000};
}

static int parse_masters(docraft_client *c, const char *masters, char *errmsg)
{
	const char *p = masters;
	if (masters == NULL || masters[0] == '\0')
		return err_set(errmsg, DOCRAFT_EINVAL, "no master address given");
	while (*p != '\0') {
		char one[64], full[80];
		struct sockaddr_in sa;
		size_t n = strcspn(p, ",");
		const char *s = p, *e = p + n;
		while (s < e && (*s == ' ' || *s == '\t'))
			s++;
		while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if (e == s || (size_t)(e - s) >= sizeof one)
			return err_set(errmsg, DOCRAFT_EINVAL, "bad master address in '%s'", masters);
		memcpy(one, s, (size_t)(e - s));
		one[e - s] = '\0';
		if (strchr(one, ':') == NULL)
			snprintf(full, sizeof full, "%s:%d", one, CLIENT_DEFAULT_MASTER_PORT);
		else
			snprintf(full, sizeof full, "%s", one);
		if (listener_parse_address(full, &sa, NULL) != 0 || strlen(full) > RPC_ADDRESS_MAX)
			return err_set(errmsg, DOCRAFT_EINVAL,
				       "bad master address '%s' (expected ip:port, e.g. "
				       "127.0.0.1:7100)",
				       one);
		if (c->n_masters == CLIENT_MAX_MASTERS)
			return err_set(errmsg, DOCRAFT_EINVAL, "more than %d masters",
				       CLIENT_MAX_MASTERS);
		strcpy(c->masters[c->n_masters++], full);
		p += n;
		if (*p == ',')
			p++;
	}
	if (c->n_masters == 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "no master address given");
	return 0;
}

static void thread_main(void *arg)
{
	docraft_client *c = arg;
	uv_run(c->loop, UV_RUN_DEFAULT);
}

static void client_free(docraft_client *c)
{
	metacache_free(&c->mc);
	free(c->heap);
	uv_mutex_destroy(&c->mu);
	free((struct client_ext *)c);
}

int docraft_client_open(const char *masters, const docraft_client_options *options,
			docraft_client **out, char *errmsg)
{
	struct client_ext *x;
	docraft_client *c;
	int rv;

	*out = NULL;
	x = xcalloc(1, sizeof *x);
	c = &x->c;
	if (options != NULL)
		c->opts = *options;
	else
		docraft_client_options_init(&c->opts);
	if (c->opts.timeout_ms == 0 || c->opts.rpc_timeout_ms == 0 ||
	    c->opts.backoff_min_ms == 0 || c->opts.backoff_max_ms < c->opts.backoff_min_ms) {
		free(x);
		return err_set(errmsg, DOCRAFT_EINVAL,
			       "bad options: timeouts must be >= 1 ms and backoff_min_ms <= "
			       "backoff_max_ms");
	}
	if ((rv = parse_masters(c, masters, errmsg)) != 0) {
		free(x);
		return rv;
	}
	client_masters_init(c);
	if (getrandom(c->id, sizeof c->id, 0) != (ssize_t)sizeof c->id) {
		/* No entropy source: time, pid and an address still make two
		 * clients differ. */
		uint64_t a = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
		uint64_t b = (uint64_t)(uintptr_t)c ^ (uint64_t)clock();
		memcpy(c->id, &a, 8);
		memcpy(c->id + 8, &b, 8);
	}
	memcpy(&c->rand, c->id, 8);
	c->rand |= 1;
	ctimer_init(&x->drain_timer, drain_timer_fire);
	ctimer_init(&x->close_timer, close_timer_fire);
	if (uv_mutex_init(&c->mu) != 0)
		PANIC("cannot create a mutex");
	c->owns_loop = c->opts.loop == NULL;
	if (c->owns_loop) {
		if ((rv = uv_loop_init(&c->own_loop)) != 0) {
			uv_mutex_destroy(&c->mu);
			free(x);
			return err_set(errmsg, DOCRAFT_EIO, "uv_loop_init: %s", uv_strerror(rv));
		}
		c->loop = &c->own_loop;
	} else {
		c->loop = c->opts.loop;
	}
	metacache_init(&c->mc, c);
	rpc_client_init(&c->rpc, c->loop);
	c->rpc.data = c;
	uv_timer_init(c->loop, &c->timer);
	c->timer.data = c;
	c->handles_open = 1;
	if (c->owns_loop) {
		uv_async_init(c->loop, &c->wake, wake_cb);
		c->wake.data = c;
		c->handles_open++;
		if ((rv = uv_thread_create(&c->thread, thread_main, c)) != 0)
			PANIC("cannot start the client thread: %s", uv_strerror(rv));
		c->thread_started = true;
	}
	*out = c;
	return 0;
}

static void handle_closed(uv_handle_t *h)
{
	docraft_client *c = h->data;
	if (--c->handles_open > 0)
		return;
	if (!c->owns_loop) {
		void (*cb)(void *) = c->close_cb;
		void *arg = c->close_arg;
		client_free(c);
		if (cb != NULL)
			cb(arg);
	}
	/* Own loop: the thread's uv_run returns; docraft_client_close frees. */
}

static void rpc_closed(struct rpc_client *cl)
{
	docraft_client *c = cl->data;
	/* Calls that were waiting on the RPC client may have armed timers. */
	fire_due(c, true);
	if (c->active != NULL)
		LOG_WARN("docraft client closed with requests still active");
	uv_close((uv_handle_t *)&c->timer, handle_closed);
	if (c->owns_loop) {
		/* close_requested is set, so no submitter starts a wake any
		 * more; those that started one end it in a few instructions. */
		while (__atomic_load_n(&c->wakers, __ATOMIC_SEQ_CST) != 0)
			sched_yield();
		uv_close((uv_handle_t *)&c->wake, handle_closed);
	}
}

static void begin_close(docraft_client *c)
{
	c->closing = true;
	/* Every armed timer fires now: its owner sees `closing` and ends. */
	fire_due(c, true);
	rpc_client_close(&c->rpc, rpc_closed);
}

/* Any mode: asks the loop to close the client. */
static void request_close(docraft_client *c, void (*cb)(void *arg), void *arg)
{
	uv_mutex_lock(&c->mu);
	c->close_requested = true;
	c->close_cb = cb;
	c->close_arg = arg;
	if (c->owns_loop)
		uv_async_send(&c->wake);
	uv_mutex_unlock(&c->mu);
	if (!c->owns_loop)
		ctimer_start(c, &((struct client_ext *)c)->close_timer, 0);
}

int docraft_client_close_async(docraft_client *c, void (*cb)(void *arg), void *arg)
{
	if (c == NULL || c->owns_loop)
		return client_error(DOCRAFT_EINVAL, "docraft_client_close_async is for clients on "
						    "a caller's loop; use docraft_client_close");
	request_close(c, cb, arg);
	return 0;
}

static void flag_cb(void *arg)
{
	*(bool *)arg = true;
}

void docraft_client_close(docraft_client *c)
{
	if (c == NULL)
		return;
	if (c->owns_loop) {
		int rv;
		request_close(c, NULL, NULL);
		uv_thread_join(&c->thread);
		rv = uv_loop_close(&c->own_loop);
		if (rv != 0)
			LOG_WARN("docraft client loop: %s", uv_strerror(rv));
		client_free(c);
	} else {
		bool done = false;
		uv_loop_t *loop = c->loop;
		request_close(c, flag_cb, &done);
		while (!done)
			uv_run(loop, UV_RUN_ONCE);
	}
}
