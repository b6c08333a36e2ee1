/* Assertions with a policy (see docs/style.md):
 *
 *   PRE(x) / POST(x) / ASSERT(x)  invariants of our own code; compiled to a
 *                                 no-op (but still type-checked) under NDEBUG.
 *   PANIC(fmt, ...)               always on: storage corruption or a state we
 *                                 cannot continue from. Prints and aborts.
 *
 * Never use any of these on data that came from the network or from a user:
 * return DOCRAFT_EINVAL / DOCRAFT_ECORRUPT with an errmsg instead. */
#ifndef DOCRAFT_COMMON_CHECK_H
#define DOCRAFT_COMMON_CHECK_H

_Noreturn void check_panic(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#define PANIC(...) check_panic(__FILE__, __LINE__, __VA_ARGS__)

#ifdef NDEBUG
#define ASSERT(x) ((void)sizeof(!(x)))
#else
#define ASSERT(x) \
	((x) ? (void)0 : check_panic(__FILE__, __LINE__, "assertion failed: %s", #x))
#endif
#define PRE(x) ASSERT(x)
#define POST(x) ASSERT(x)

#endif
