#include "loop.h"

struct waiter {
	bool (*pred)(void *);
	void *arg;
	bool expired;
};

static void waiter_check(uv_handle_t *h)
{
	struct waiter *w = h->data;
	if (w->expired || w->pred(w->arg))
		uv_stop(h->loop);
}

static void prepare_cb(uv_prepare_t *p)
{
	waiter_check((uv_handle_t *)p);
}

static void check_cb(uv_check_t *c)
{
	waiter_check((uv_handle_t *)c);
}

static void guard_cb(uv_timer_t *t)
{
	struct waiter *w = t->data;
	w->expired = true;
	uv_stop(t->loop);
}

static void count_close_cb(uv_handle_t *h)
{
	(*(int *)h->data)--;
}

bool loop_run_until(uv_loop_t *loop, bool (*pred)(void *), void *arg, uint64_t timeout_ms)
{
	struct waiter w = {pred, arg, false};
	uv_timer_t guard;
	uv_prepare_t prep;
	uv_check_t check;
	int open = 3;
	bool ok;

	uv_timer_init(loop, &guard);
	uv_prepare_init(loop, &prep);
	uv_check_init(loop, &check);
	guard.data = prep.data = check.data = &w;
	uv_timer_start(&guard, guard_cb, timeout_ms, 0);
	uv_prepare_start(&prep, prepare_cb);
	uv_check_start(&check, check_cb);
	while (!pred(arg) && !w.expired)
		uv_run(loop, UV_RUN_DEFAULT);
	ok = pred(arg);
	guard.data = prep.data = check.data = &open;
	uv_close((uv_handle_t *)&guard, count_close_cb);
	uv_close((uv_handle_t *)&prep, count_close_cb);
	uv_close((uv_handle_t *)&check, count_close_cb);
	while (open > 0)
		uv_run(loop, UV_RUN_NOWAIT);
	return ok;
}

bool loop_flag_is_set(void *flag)
{
	return *(bool *)flag;
}

void loop_flag_close_cb(uv_handle_t *h)
{
	*(bool *)h->data = true;
}

static void expired_cb(uv_timer_t *t)
{
	*(bool *)t->data = true;
}

int loop_finish(uv_loop_t *loop)
{
	uv_timer_t guard;
	bool expired = false, closed = false;

	uv_timer_init(loop, &guard);
	guard.data = &expired;
	uv_timer_start(&guard, expired_cb, 10000, 0);
	uv_unref((uv_handle_t *)&guard); /* does not keep the loop alive, still wakes a poll */
	while (uv_loop_alive(loop) && !expired)
		uv_run(loop, UV_RUN_ONCE);
	guard.data = &closed;
	uv_close((uv_handle_t *)&guard, loop_flag_close_cb);
	while (!closed)
		uv_run(loop, UV_RUN_NOWAIT);
	return uv_loop_close(loop);
}
