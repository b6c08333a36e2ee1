/* Which Raft log a tablet server's data directory was made with, and the
 * guard against starting it with the other one.
 *
 * DIR/raft-log-mode holds "shared" or "per-tablet" (a line), written
 * durably at the first start. The two keep a replica's Raft state in
 * different places (DIR/raftlog, one log for every replica, or
 * DIR/tablets/<id>/raft, raft_uv's), and neither reads the other's: a
 * server started with the other mode would see replicas without their
 * Raft logs. So a start with the other mode is refused with a message
 * naming both; switching takes a fresh data directory (the replicas then
 * come back by re-replication). A directory without the file but with a
 * replica's raft_uv log (a non-empty DIR/tablets/<id>/raft) was written
 * before the shared log existed: it is per-tablet.
 *
 * Threading: start-up only (blocking file calls), any thread. */
#ifndef DOCRAFT_TSERVER_LOGMODE_H
#define DOCRAFT_TSERVER_LOGMODE_H

#include <stdbool.h>

#define LOGMODE_FILE "raft-log-mode"

/* "shared" or "per-tablet". */
const char *logmode_name(bool shared);

/* Checks data_dir (exists) against the mode asked for, recording it on the
 * first start. 0; DOCRAFT_EINVAL with errmsg naming both modes when the
 * directory holds the other one; DOCRAFT_ECORRUPT when the file holds
 * neither; DOCRAFT_EIO / DOCRAFT_ENOSPC when it cannot be read or written. */
int logmode_check(const char *data_dir, bool shared, char *errmsg);

#endif
