#include "http/metrics.h"

#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "common/check.h"

#ifndef DOCRAFT_BUILD_VERSION
#define DOCRAFT_BUILD_VERSION "unknown"
#endif

void metrics_init(struct metrics *m, struct buf *out)
{
	m->out = out;
	m->family[0] = '\0';
}

void metrics_family(struct metrics *m, const char *name, const char *type, const char *help)
{
	snprintf(m->family, sizeof m->family, "%s", name);
	/* help is ours (no backslash or newline to escape). */
	buf_printf(m->out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void sample_head(struct metrics *m, const char *name, const struct metrics_labels *l)
{
	/* Samples belong to the family announced last. */
	PRE(strncmp(name, m->family, strlen(m->family)) == 0);
	if (l != NULL && l->len > 0)
		buf_printf(m->out, "%s{%s} ", name, l->s);
	else
		buf_printf(m->out, "%s ", name);
}

void metrics_u64(struct metrics *m, const char *name, const struct metrics_labels *labels,
		 uint64_t v)
{
	sample_head(m, name, labels);
	buf_printf(m->out, "%" PRIu64 "\n", v);
}

void metrics_double(struct metrics *m, const char *name, const struct metrics_labels *labels,
		    double v)
{
	sample_head(m, name, labels);
	buf_printf(m->out, "%.15g\n", v);
}

void metrics_one(struct metrics *m, const char *name, const char *type, const char *help,
		 uint64_t v)
{
	metrics_family(m, name, type, help);
	metrics_u64(m, name, NULL, v);
}

void metrics_rows(struct metrics *m, const struct metrics_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		metrics_one(m, rows[i].name, rows[i].type, rows[i].help, rows[i].v);
}

void metrics_labels_reset(struct metrics_labels *l)
{
	l->s[0] = '\0';
	l->len = 0;
}

void metrics_label(struct metrics_labels *l, const char *key, const char *value)
{
	char tmp[sizeof l->s];
	size_t n = 0;

	n += (size_t)snprintf(tmp, sizeof tmp, "%s%s=\"", l->len > 0 ? "," : "", key);
	for (const char *p = value; *p != '\0' && n + 3 < sizeof tmp; p++) {
		if (*p == '\\' || *p == '"') {
			tmp[n++] = '\\';
			tmp[n++] = *p;
		} else if (*p == '\n') {
			tmp[n++] = '\\';
			tmp[n++] = 'n';
		} else {
			tmp[n++] = *p;
		}
	}
	if (n + 2 > sizeof tmp || l->len + n + 2 > sizeof l->s)
		return; /* dropped whole */
	tmp[n++] = '"';
	tmp[n] = '\0';
	memcpy(l->s + l->len, tmp, n + 1);
	l->len += n;
}

void metrics_hist(struct metrics *m, const char *name, const struct metrics_labels *labels,
		  const struct lathist *h)
{
	char n_bucket[160], n_sum[160], n_count[160], le[32];
	struct metrics_labels l;
	uint64_t cum = 0;

	snprintf(n_bucket, sizeof n_bucket, "%s_bucket", name);
	snprintf(n_sum, sizeof n_sum, "%s_sum", name);
	snprintf(n_count, sizeof n_count, "%s_count", name);
	for (unsigned i = 0; i <= LATHIST_BUCKETS; i++) {
		cum += h->n[i];
		l = labels != NULL ? *labels : (struct metrics_labels){.len = 0};
		if (i < LATHIST_BUCKETS)
			snprintf(le, sizeof le, "%g", (double)lathist_bounds_us[i] / 1e6);
		else
			snprintf(le, sizeof le, "+Inf");
		metrics_label(&l, "le", le);
		metrics_u64(m, n_bucket, &l, cum);
	}
	metrics_double(m, n_sum, labels, (double)h->sum_us / 1e6);
	metrics_u64(m, n_count, labels, h->count);
}

/* ---- the process ---------------------------------------------------------------------------- */

/* utime + stime of /proc/self/stat in seconds, -1 if unreadable. */
static double cpu_seconds(void)
{
	char line[1024], *p;
	unsigned long ut = 0, st = 0;
	FILE *f = fopen("/proc/self/stat", "r");
	size_t n;

	if (f == NULL)
		return -1;
	n = fread(line, 1, sizeof line - 1, f);
	fclose(f);
	line[n] = '\0';
	p = strrchr(line, ')'); /* the command may hold spaces */
	if (p == NULL || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut,
				&st) != 2)
		return -1;
	return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
}

static uint64_t rss_bytes(void)
{
	unsigned long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f == NULL)
		return 0;
	if (fscanf(f, "%lu %lu", &size, &resident) != 2)
		resident = 0;
	fclose(f);
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

static uint64_t open_fds(void)
{
	uint64_t n = 0;
	struct dirent *e;
	DIR *d = opendir("/proc/self/fd");
	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n > 0 ? n - 1 : 0; /* not the directory's own descriptor */
}

void metrics_process(struct metrics *m, uint64_t start_ns, double start_wall_s)
{
	struct metrics_labels l;
	double cpu = cpu_seconds();

	metrics_family(m, "docraft_build_info", "gauge", "Always 1; the version is a label.");
	metrics_labels_reset(&l);
	metrics_label(&l, "version", DOCRAFT_BUILD_VERSION);
	metrics_u64(m, "docraft_build_info", &l, 1);
	if (cpu >= 0) {
		metrics_family(m, "docraft_process_cpu_seconds_total", "counter",
			       "User and system CPU time of the process.");
		metrics_double(m, "docraft_process_cpu_seconds_total", NULL, cpu);
	}
	metrics_one(m, "docraft_process_resident_memory_bytes", "gauge",
		    "Resident memory of the process.", rss_bytes());
	metrics_one(m, "docraft_process_open_fds", "gauge", "Open file descriptors.",
		    open_fds());
	metrics_family(m, "docraft_process_start_time_seconds", "gauge",
		       "Start time of the process, seconds since the Unix epoch.");
	metrics_double(m, "docraft_process_start_time_seconds", NULL, start_wall_s);
	metrics_family(m, "docraft_uptime_seconds", "gauge", "Seconds since the process started.");
	metrics_double(m, "docraft_uptime_seconds", NULL, (double)(uv_hrtime() - start_ns) / 1e9);
}
