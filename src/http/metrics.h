/* The Prometheus text exposition format 0.0.4, written into a buffer.
 *
 * A family is announced once (metrics_family: its # HELP and # TYPE lines)
 * and its samples follow it, all together: the format wants every sample
 * of a name in one group, so a writer with per-tablet values loops over the
 * tablets inside each family, not the other way round. Names carry the
 * docraft_ prefix and base units (seconds, bytes); counters end in _total.
 * Label values are escaped here (backslash, quote, newline).
 *
 * The process family (metrics_process) is the same on every server: CPU,
 * resident memory, open descriptors, start time, uptime and build info.
 *
 * Threading: none (the caller's). */
#ifndef DOCRAFT_HTTP_METRICS_H
#define DOCRAFT_HTTP_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "common/buf.h"
#include "common/lathist.h"

#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct metrics {
	struct buf *out;
	char family[128]; /* the family whose samples are being written */
};

/* Labels built with metrics_label: `k1="v1",k2="v2"` (truncated labels are
 * dropped whole, never cut in the middle). */
struct metrics_labels {
	char s[512];
	size_t len;
};

void metrics_init(struct metrics *m, struct buf *out);

/* # HELP and # TYPE of name; type is "counter", "gauge" or "histogram". */
void metrics_family(struct metrics *m, const char *name, const char *type, const char *help);

/* One sample of the current family: name (the family's, or the family's
 * with _bucket/_sum/_count for a histogram) {labels} value. labels may be
 * NULL. Integers are written exactly. */
void metrics_u64(struct metrics *m, const char *name, const struct metrics_labels *labels,
		 uint64_t v);
void metrics_double(struct metrics *m, const char *name, const struct metrics_labels *labels,
		    double v);

/* A family of one unlabelled sample. */
void metrics_one(struct metrics *m, const char *name, const char *type, const char *help,
		 uint64_t v);

/* metrics_one for each of n rows. */
struct metrics_row {
	const char *name, *type, *help;
	uint64_t v;
};
void metrics_rows(struct metrics *m, const struct metrics_row *rows, size_t n);

/* The samples of histogram h in seconds: name_bucket{labels,le="..."}
 * (cumulative, +Inf last), name_sum, name_count. */
void metrics_hist(struct metrics *m, const char *name, const struct metrics_labels *labels,
		  const struct lathist *h);

/* Empties l / appends key="value" to l. */
void metrics_labels_reset(struct metrics_labels *l);
void metrics_label(struct metrics_labels *l, const char *key, const char *value);

/* The process families (see above); start_ns is uv_hrtime() at start,
 * start_wall_s the wall clock then. */
void metrics_process(struct metrics *m, uint64_t start_ns, double start_wall_s);

#endif
