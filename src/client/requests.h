/* What the request files of libdocraft share: the table job (a job on one
 * table whose start loads the table into the metadata cache), the primary
 * key of a row as Datums and its hash, and the wait of the blocking calls
 * that return a result.
 *
 * The request files: requests.c (these, get, generic tablet calls and
 * schemas), write.c (writes), scan.c (scans), tables.c (create and drop
 * table, generic master calls). Each public request is a job (internal.h)
 * run on the client's loop; the tablet call with its retries is retry.h's.
 *
 * Threading: the client's loop thread, except requests_wait_result (any
 * thread but the loop's, as client_wait). */
#ifndef DOCRAFT_CLIENT_REQUESTS_H
#define DOCRAFT_CLIENT_REQUESTS_H

#include <stddef.h>
#include <stdint.h>

#include "client/internal.h"
#include "client/retry.h"
#include "common/arena.h"
#include "docdb/schema.h"
#include "docraft.pb-c.h"

struct table_job;
/* The table is in the cache: tj->t is set. Ends by job_finish (now or
 * from a later callback). */
typedef void (*table_loaded_fn)(struct table_job *tj);

/* Embedded first in every job on one table (so a struct job * of the
 * job is one of its table_job too). */
struct table_job {
	struct job base;
	char *table;          /* a copy of the caller's name, in arena */
	struct mc_table *t;   /* the cached table, set by requests_job_start */
	struct tload load;
	struct arena arena;   /* the job's messages, copies and arrays */
	table_loaded_fn loaded;
	/* May run on a Redis database (issue 17): the admin tablet calls and
	 * the schema fetch. Rows (get, write, scan) may not: a YEDIS table's
	 * documents are Redis values, so those fail with "use a Redis client". */
	bool redis_ok;
};

/* Sets up tj (zeroed by the caller, malloc'd: the job's memory) for a job
 * of ops on table (copied), loaded called once the table is in the cache. */
void requests_job_init(struct table_job *tj, const struct job_ops *ops, const char *table,
		       table_loaded_fn loaded);
/* The job_ops.start of a table job: loads the table (tload, up to the
 * job's deadline), then tj->loaded; a load that fails ends the job with
 * its status and message and loaded is not called. */
void requests_job_start(struct job *base);
/* The job_ops.free of a table job: frees its arena and the job. A job
 * holding more frees that first, then calls this. */
void requests_job_free(struct job *base);

/* The answer of a tablet call to a table job (the tcall_cb's arguments),
 * unpacked as a message of desc; the caller frees it with
 * protobuf_c_message_free_unpacked. NULL when there is none: then the job
 * is finished, with the call's error or DOCRAFT_ECORRUPT ("ReadResponse
 * does not decode"). */
ProtobufCMessage *requests_reply(struct table_job *tj, const ProtobufCMessageDescriptor *desc,
				 int status, const char *errmsg, const uint8_t *reply, size_t len);

/* The primary key key[0..nkey) of a row of s as Datums (array and Datums
 * in a; text and blob bytes borrowed from key) and the hash of its hash
 * columns, as the tablet server computes it. DOCRAFT_EINVAL + errmsg when
 * nkey is not the number of key columns or a value does not fit its
 * column. */
int requests_key(const struct schema *s, const docraft_value *key, size_t nkey,
		 struct arena *a, Docraft__Datum ***out, uint32_t *hash, char *errmsg);

/* n zeroed bytes in a (at least one, so never NULL). */
void *requests_zalloc(struct arena *a, size_t n);

/* Runs j (a job returning a result) and waits, as client_wait; on success
 * *out is the result (the caller frees it), otherwise left as it is. */
int requests_wait_result(docraft_client *c, struct job *j, docraft_result **out);

#endif
