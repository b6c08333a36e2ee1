/* The history below which compaction may forget: read holds that keep the
 * cutoff down, and the cutoff's durable copy in the store directory.
 *
 * Holds (compaction.h says what they promise). A read in progress at T
 * (AS OF T, the pages of a scan at T) holds T until a deadline; the store
 * caps every raise of its cutoff at the smallest live hold and remembers
 * the capped value as pending, so a hold taken meanwhile below it is
 * refused. Deadlines use the monotonic clock; the table has its own mutex.
 *
 * Persisting the cutoff. A job's cutoff must be durable before its first
 * pair is filtered: otherwise a crash could leave compacted files without
 * the cutoff that makes reads below it fail. The cutoff lives in a small
 * file in the store directory, replaced atomically by the factory on the
 * compaction thread (fs_write_file: temp file, fsync, rename, fsync of the
 * directory). An internal RocksDB record would need a write and a memtable
 * flush from inside the compaction: RocksDB 7.8's FlushMemTable waits for
 * write-stall conditions that only compactions clear (and the C API cannot
 * set allow_write_stall), and writes can stall the same way, so that could
 * deadlock; an unflushed record is not durable with the WAL off.
 * store_checkpoint copies the file into each checkpoint. */
#include "docdb/compaction.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/err.h"
#include "common/fs.h"
#include "common/hlc.h"

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void compaction_holds_init(struct compaction_holds *h)
{
	memset(h, 0, sizeof *h);
	pthread_mutex_init(&h->mu, NULL);
}

void compaction_holds_destroy(struct compaction_holds *h)
{
	pthread_mutex_destroy(&h->mu);
}

/* Drops expired holds; returns the smallest live one (UINT64_MAX: none). */
static uint64_t holds_prune(struct compaction_holds *h, uint64_t now)
{
	uint64_t least = UINT64_MAX;
	size_t k = 0;
	for (size_t i = 0; i < h->n; i++) {
		if (h->h[i].until_ms <= now)
			continue;
		h->h[k++] = h->h[i];
		if (h->h[i].ht < least)
			least = h->h[i].ht;
	}
	h->n = k;
	return least;
}

int compaction_hold_add(struct compaction_holds *h, uint64_t ht, uint64_t cutoff,
			uint64_t retention_floor, uint64_t hard_floor, uint64_t hold_ms,
			char *errmsg)
{
	uint64_t now = mono_ms(), until = now + hold_ms, floor, least;
	size_t below = SIZE_MAX, smallest = 0;
	pthread_mutex_lock(&h->mu);
	least = holds_prune(h, now);
	floor = cutoff > h->pending ? cutoff : h->pending;
	if (ht < floor || ht < hard_floor || (ht < retention_floor && least > ht)) {
		pthread_mutex_unlock(&h->mu);
		return err_set(errmsg, DOCRAFT_ETOOOLD,
			       "read time %" PRIu64 " is below the history kept (cutoff %" PRIu64
			       ", retention from %" PRIu64 ")",
			       ht, floor, retention_floor);
	}
	for (size_t i = 0; i < h->n; i++) {
		if (h->h[i].ht == ht) {
			if (h->h[i].until_ms < until)
				h->h[i].until_ms = until;
			pthread_mutex_unlock(&h->mu);
			return 0;
		}
		if (h->h[i].ht < ht && (below == SIZE_MAX || h->h[i].ht > h->h[below].ht))
			below = i;
		if (h->h[i].ht < h->h[smallest].ht)
			smallest = i;
	}
	if (h->n < COMPACTION_MAX_HOLDS) {
		h->h[h->n].ht = ht;
		h->h[h->n].until_ms = until;
		h->n++;
	} else {
		/* Full: the hold just below protects ht already; else ht is
		 * the smallest and takes the smallest one's place. */
		size_t i = below != SIZE_MAX ? below : smallest;
		if (below == SIZE_MAX)
			h->h[i].ht = ht;
		if (h->h[i].until_ms < until)
			h->h[i].until_ms = until;
	}
	pthread_mutex_unlock(&h->mu);
	return 0;
}

uint64_t compaction_hold_cap(struct compaction_holds *h, uint64_t want)
{
	uint64_t least;
	pthread_mutex_lock(&h->mu);
	least = holds_prune(h, mono_ms());
	if (want > least)
		want = least;
	if (want > h->pending)
		h->pending = want;
	pthread_mutex_unlock(&h->mu);
	return want;
}


/* ---- the persisted cutoff ----------------------------------------------- */

#define CUTOFF_PREFIX "history_cutoff_ht="
#define CUTOFF_MAX_FILE 64
/* Larger files are read too, to be called malformed rather than unreadable. */
#define CUTOFF_READ_MAX 4096

static int cutoff_path(char *path, size_t size, const char *dir, char *errmsg)
{
	if ((size_t)snprintf(path, size, "%s/%s", dir, COMPACTION_CUTOFF_FILE) >= size)
		return err_set(errmsg, DOCRAFT_EINVAL, "store path too long: %s", dir);
	return 0;
}

int compaction_cutoff_load(const char *dir, uint64_t *ht, char *errmsg)
{
	const size_t plen = sizeof CUTOFF_PREFIX - 1;
	char path[4096], *text, *end;
	unsigned long long v;
	uint8_t *data;
	size_t len;
	int rv;

	*ht = 0;
	if ((rv = cutoff_path(path, sizeof path, dir, errmsg)) != 0)
		return rv;
	if ((rv = fs_read_file(path, CUTOFF_READ_MAX, &data, &len, errmsg)) != 0)
		return rv == DOCRAFT_ENOTFOUND ? 0 : rv;
	text = (char *)data;
	/* Exactly "history_cutoff_ht=<decimal>\n", at most CUTOFF_MAX_FILE bytes. */
	if (len > CUTOFF_MAX_FILE || len <= plen + 1 || memcmp(text, CUTOFF_PREFIX, plen) != 0 ||
	    text[len - 1] != '\n' || text[plen] < '0' || text[plen] > '9')
		goto malformed;
	errno = 0;
	v = strtoull(text + plen, &end, 10);
	if (errno != 0 || end != text + len - 1 || v >= HT_INVALID)
		goto malformed;
	free(data);
	*ht = v;
	return 0;
malformed:
	free(data);
	return err_set(errmsg, DOCRAFT_ECORRUPT, "%s: malformed history cutoff file", path);
}

int compaction_cutoff_save(const char *dir, uint64_t ht, char *errmsg)
{
	char path[4096], text[CUTOFF_MAX_FILE];
	int rv, len;

	if ((rv = cutoff_path(path, sizeof path, dir, errmsg)) != 0)
		return rv;
	len = snprintf(text, sizeof text, CUTOFF_PREFIX "%" PRIu64 "\n", ht);
	return fs_write_file(path, text, (size_t)len, errmsg);
}
