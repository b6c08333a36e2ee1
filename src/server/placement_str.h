/* A server's placement, "cloud.region.zone" (issue 15): the tserver's
 * --placement flag, sent in heartbeats; the master checks it again and
 * keeps replicas of a tablet in distinct zones (master/policy.h). One rule
 * for both sides.
 *
 * Pure: any thread. */
#ifndef DOCRAFT_SERVER_PLACEMENT_STR_H
#define DOCRAFT_SERVER_PLACEMENT_STR_H

#include <stdbool.h>

/* Longest placement string. */
#define PLACEMENT_STR_MAX 64

/* Whether s is an accepted placement: "" (none) or three dot-separated
 * non-empty parts of [A-Za-z0-9_-], at most PLACEMENT_STR_MAX bytes in all;
 * errmsg (may be NULL) says why not. */
bool placement_str_valid(const char *s, char *errmsg);

#endif
