/* docraft-docdbbench's two halves (see docdbbench.c's top comment for what
 * it measures): docdbbench.c holds main, the runs and the report;
 * docdbbench_layouts.c the data set and the three layouts (DocDB unpacked,
 * DocDB packed, raw RocksDB) with their timed loops. Single-threaded: every
 * call runs on main's thread, except that the signal handler sets
 * layout_stop. */
#ifndef DOCRAFT_TOOLS_DOCDBBENCH_H
#define DOCRAFT_TOOLS_DOCDBBENCH_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rocksdb/c.h>

#include "common/arena.h"
#include "common/buf.h"
#include "common/hlc.h"
#include "docdb/schema.h"
#include "docdb/store.h"

#define HKEY_LEN 8     /* "h" + 7 digits */
#define TEXT_LEN 100
#define NCOLS 4

struct opts {
	long rows;
	long hash_keys;
	long batch;
	long reads;
	long scans;
	long runs;
	long memtable_mb;
	double seconds_cap;
	const char *dir;
	int only; /* enum kind, or -1: every layout */
};

/* The data set, shared by every store and every run. */
struct data {
	long rows, nh;
	char (*hkeys)[HKEY_LEN + 1];
	uint8_t *text;         /* rows * TEXT_LEN random lowercase letters */
	/* Raw pairs: key = DocKey, value = the 4 column value encodings. */
	struct buf rkeys, rvals;
	size_t *rkoff, *rvoff; /* rows + 1 offsets each */
	/* Per hash key: DocKey prefix through the hashed group, and it + 0xFF. */
	struct buf pfx, upper;
	size_t *pfxoff, *upoff; /* nh + 1 offsets each */
	long *read_rows;        /* reads: random row indexes ... */
	long nreads;
	long *scan_keys;        /* ... scans: random hash key indexes */
	long nscans;
};

/* What is timed, per layout. */
enum metric {
	M_INSERT,
	M_READ_MEM,
	M_SCAN_MEM,
	M_READ_SST,
	M_SCAN_SST,
	M_COUNT
};

/* Rows per second of wall-clock time and of the thread's CPU time. */
struct rate {
	double wall;
	double cpu;
};

struct result {
	struct rate rate[M_COUNT];
	double flush_s;
	double pairs_per_row;
	double bytes_per_row;  /* user key + value bytes written per row */
};

enum kind { K_UNPACKED, K_PACKED, K_RAW, K_COUNT };
/* The layouts' names, as --only takes them and the report prints them. */
extern const char *const kind_name[K_COUNT];

/* One layout's store in one run: run_once fills kind, o, d and dir (where
 * layout_open creates the store), zeroes the rest, and reads res after
 * layout_close. */
struct layout {
	enum kind kind;
	const struct opts *o;
	const struct data *d;
	char dir[4096];
	struct result res;
	/* DocDB layouts */
	struct store *st;
	struct schema s;
	bool has_schema;
	const struct column *col_c;
	struct arena a;
	struct hlc clock;
	uint64_t index;
	uint64_t read_ht;
	/* raw */
	rocksdb_t *db;
	rocksdb_options_t *opts;
	rocksdb_writeoptions_t *wo;
	rocksdb_readoptions_t *ro;  /* gets */
	rocksdb_readoptions_t *sro; /* scans: bounds set per scan */
	rocksdb_writebatch_t *wb;
};

/* Set by the signal handler (SIGINT, SIGTERM): the timed loops stop and
 * return DOCRAFT_ECLOSED ("interrupted"). */
extern volatile sig_atomic_t layout_stop;

/* Builds the data set of o (rows, hash keys, reads, scans), the same in
 * every run. *d is overwritten; data_free frees it, even after a failure. */
int data_build(struct data *d, const struct opts *o, char *errmsg);
void data_free(struct data *d);

/* Creates x's store in x->dir (DocDB: store_open with the bench schema;
 * raw: rocksdb_open with store.c's options, see docdbbench_layouts.c) and
 * fills x->res's bytes and pairs per row. layout_close is due even after a
 * failure. */
int layout_open(struct layout *x, char *errmsg);
/* Closes what layout_open opened (not the directory, which the caller
 * removes); also right for a layout never opened (all zero but kind, o, d,
 * dir). Once per layout. */
void layout_close(struct layout *x);
/* The timed phases: every row inserted in batches of --batch (M_INSERT);
 * reads of the data set's random rows or scans of its random hash keys,
 * after an untimed warm-up, into x->res.rate[m]; a flush to one SST file
 * (x->res.flush_s). A wrong answer is DOCRAFT_ENOTFOUND or
 * DOCRAFT_ECORRUPT. */
int layout_insert(struct layout *x, char *errmsg);
int layout_reads(struct layout *x, enum metric m, char *errmsg);
int layout_scans(struct layout *x, enum metric m, char *errmsg);
int layout_flush(struct layout *x, char *errmsg);

#endif
