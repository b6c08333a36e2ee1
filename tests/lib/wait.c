/* Waiting in tests. See wait.h. */
#include "wait.h"

#include <errno.h>
#include <stdint.h>
#include <time.h>

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

bool wait_for(bool (*cond)(void *arg), void *arg, int timeout_ms)
{
	uint64_t end = now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	int nap = WAIT_FIRST_MS;
	for (;;) {
		if (cond(arg))
			return true;
		uint64_t now = now_ms();
		if (now >= end)
			return false;
		sleep_ms(end - now < (uint64_t)nap ? (int)(end - now) : nap);
		nap = nap * 2 < WAIT_MAX_MS ? nap * 2 : WAIT_MAX_MS;
	}
}
