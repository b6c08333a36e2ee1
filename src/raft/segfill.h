/* Written Raft log segments: raft_uv's appends as plain overwrites (a C-Raft
 * 0.15 workaround; the design note is in segfill.c).
 *
 * This module defines posix_fallocate(3) for the whole process: glibc's,
 * then zeros written over the part of the range past the file's old end
 * and fdatasync'd (a caller must not write there during the call). An executable that
 * hosts raft_uv gets it by linking the raft glue library (raftglue_dep
 * exports the symbol from the executable so that libraft.so binds to it).
 *
 * Threading: segfill_set before any tablet opens; the rest from any
 * thread. */
#ifndef DOCRAFT_RAFT_SEGFILL_H
#define DOCRAFT_RAFT_SEGFILL_H

#include <stdbool.h>

/* Whether posix_fallocate writes zeros over what it allocates (default
 * true). Off: it is glibc's, unchanged. */
void segfill_set(bool on);
bool segfill_enabled(void);

/* True when this process's posix_fallocate, the one libraft.so calls, is
 * this module's (false: the executable does not export it; raft_uv's
 * segments then stay unwritten and appends take the slow path). */
bool segfill_active(void);

#endif
