/* The stack of path frames that a walk over one document's versions in key
 * order keeps: the reader's builder (builder.c) and compaction GC
 * (compaction.c) both decide each entry against it. Internal to docdb/.
 *
 * One frame per component of the last decided path, from the DocKey (frame
 * 0) down: what that path and its ancestors pass to their descendants, the
 * newest write time at or above it (an overwrite hides older entries below)
 * and the explicit TTL they inherit. Key order brings a path before its
 * descendants, so entering a path only pops the frames that are not its
 * prefixes and pushes copies of the deepest one left. Plain data: the
 * caller owns the array (depth + 1 frames at the most it may meet). */
#ifndef DOCRAFT_DOCDB_PATHFRAME_H
#define DOCRAFT_DOCDB_PATHFRAME_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/buf.h"
#include "docdb/key.h"
#include "docdb/ttl.h"

struct path_frame {
	size_t path_len;
	struct docht overwrite; /* the newest write at this path or above */
	struct ttl_scope exp;   /* the explicit TTL inherited by descendants */
};

/* Enters the path key[0..plen), whose components end at bounds[0..nd]
 * (bounds[0]: the DocKey): pops the frames of st[0..*depth) that are not
 * prefixes of it (*path holds the path they were pushed for), pushes copies
 * of the deepest one left down to depth nd, and makes *path the new path.
 * Returns the first depth pushed (nd + 1 when none was): the caller resets
 * there what is not inherited. */
static inline size_t pathframe_enter(struct path_frame *st, size_t *depth, struct buf *path,
				     const uint8_t *key, size_t plen, const size_t *bounds, size_t nd)
{
	size_t c = 1;
	while (c < *depth && c <= nd && st[c].path_len == bounds[c] &&
	       memcmp(key, path->data, bounds[c]) == 0)
		c++;
	for (size_t d = c; d <= nd; d++) {
		st[d] = st[d - 1];
		st[d].path_len = bounds[d];
	}
	*depth = nd + 1;
	buf_reset(path);
	buf_append(path, key, plen);
	return c;
}

#endif
