/* docraft bench: one system under test behind put and get of a key.
 *
 * The runner (bench.c) calls setup once on the main thread, then, on each
 * client thread, open, put/get in a closed loop, and close; teardown once
 * after every thread has closed. A connection (conn) belongs to the thread
 * that opened it: put, get and close are only ever called on it. What the
 * shared state (from setup) allows between threads is each driver's
 * business (libdocraft's client is thread-safe; curl and hiredis handles
 * are not, so those drivers share nothing).
 *
 * Errors: functions return -1 and write a one-line reason into err
 * (errlen >= 64 bytes, NUL-terminated); the runner counts failed
 * operations and goes on. */
#ifndef DOCRAFT_TOOLS_BENCH_DRIVER_H
#define DOCRAFT_TOOLS_BENCH_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "docraft/docraft.h"

/* What a driver is told about the run (read-only, valid until teardown). */
struct bench_target {
	/* Comma-separated addresses: docraft's masters ("ip:port,..."), etcd's
	 * client endpoints ("host:port" or "http://host:port"), Redis servers
	 * ("host:port"). Client thread i uses entry i mod count (etcd, redis). */
	const char *endpoints;
	int clients;        /* client threads */
	size_t value_size;  /* bytes of every value */
	/* docraft only */
	const docraft_client_options *docraft_options;
	const char *table;          /* created if missing: (k text PRIMARY KEY, v blob) */
	uint32_t tablets, rf;       /* for that CREATE (0: the client's defaults) */
	bool client_per_thread;     /* one docraft_client per thread, not one shared */
};

struct bench_driver {
	const char *name; /* the --system name */

	/* Prepares the run once, before any client thread starts: parses the
	 * endpoints (docraft: also opens the shared client and creates the
	 * table if missing; etcd: curl_global_init). A system that does not
	 * answer shows in the first operations' errors. Returns 0 and sets
	 * *shared (passed to open and teardown), or -1 with the reason. */
	int (*setup)(const struct bench_target *t, void **shared, char *err, size_t errlen);

	/* Opens client thread `index`'s connection, on that thread. Returns 0
	 * and sets *conn, or -1 with the reason (the run is then abandoned). */
	int (*open)(void *shared, int index, void **conn, char *err, size_t errlen);

	/* Sets key (klen bytes) to value (vlen bytes) and returns once the
	 * system acknowledged it as durable by its own standard (docraft and
	 * etcd: committed by a majority; Redis: as configured). insert is true
	 * for the load phase (a key written for the first time), false for
	 * updates. 0 on success, -1 with the reason. Blocking. */
	int (*put)(void *conn, const char *key, size_t klen, const void *value, size_t vlen,
		   bool insert, char *err, size_t errlen);

	/* Reads key, linearizably where the system offers it (docraft: read_ht
	 * 0; etcd: the default serializable=false range). Returns 1 when the key
	 * exists, 0 when it does not, -1 with the reason on an error.
	 * Blocking. */
	int (*get)(void *conn, const char *key, size_t klen, char *err, size_t errlen);

	/* Closes a connection from open, on its thread (never called with
	 * NULL). */
	void (*close)(void *conn);

	/* Releases what setup made, after every close (never called with
	 * NULL). */
	void (*teardown)(void *shared);

	/* One line on how the clients connect ("1 docraft_client shared by 64
	 * threads", "64 HTTP/1.1 keep-alive connections to 127.0.0.1:2379"),
	 * into out (len bytes). */
	void (*describe)(void *shared, char *out, size_t len);
};

/* Defines driver `var` named nm from the static functions every driver
 * file has: setup, open_conn, put, get, close_conn, teardown, describe. */
#define BENCH_DRIVER(var, nm)                                                               \
	const struct bench_driver var = {.name = nm,                                        \
					 .setup = setup,                                    \
					 .open = open_conn,                                 \
					 .put = put,                                        \
					 .get = get,                                        \
					 .close = close_conn,                               \
					 .teardown = teardown,                              \
					 .describe = describe}

extern const struct bench_driver bench_driver_docraft;
#ifdef BENCH_HAVE_ETCD
extern const struct bench_driver bench_driver_etcd;
#endif
#ifdef BENCH_HAVE_REDIS
extern const struct bench_driver bench_driver_redis;
#endif

/* Entry index `i` (mod count) of the comma-separated list, into out (len
 * bytes, NUL-terminated, truncated to fit); returns the number of entries
 * (0 for an empty list). For the drivers: which endpoint thread i uses. */
size_t bench_endpoint(const char *list, size_t i, char *out, size_t len);

#endif
