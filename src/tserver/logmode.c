/* The Raft log mode of a data directory (logmode.h). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "common/fs.h"
#include "tserver/logmode.h"

const char *logmode_name(bool shared)
{
	return shared ? "shared" : "per-tablet";
}

static bool is_dot(const char *name)
{
	return strcmp(name, ".") == 0 || strcmp(name, "..") == 0;
}

/* Whether dir holds an entry other than . and .. (a missing dir: false). */
static bool has_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	bool any = false;
	if (d == NULL)
		return false;
	while (!any && (e = readdir(d)) != NULL)
		any = !is_dot(e->d_name);
	closedir(d);
	return any;
}

/* Whether a replica under tablets (DIR/tablets) holds a raft_uv log: a
 * non-empty <id>/raft. */
static bool has_per_tablet_logs(const char *tablets)
{
	DIR *d = opendir(tablets);
	struct dirent *e;
	bool any = false;
	char raft[4400];
	if (d == NULL)
		return false;
	while (!any && (e = readdir(d)) != NULL) {
		if (is_dot(e->d_name))
			continue;
		if (snprintf(raft, sizeof raft, "%s/%s/raft", tablets, e->d_name) <
		    (int)sizeof raft)
			any = has_entries(raft);
	}
	closedir(d);
	return any;
}

static int refuse(const char *data_dir, const char *found, bool shared, char *errmsg)
{
	return err_set(errmsg, DOCRAFT_EINVAL,
		       "%s was made with the %s Raft log and this server was started with "
		       "--raft-log %s: start it with --raft-log %s, or give it a fresh data "
		       "directory (its replicas then come back by re-replication)",
		       data_dir, found, logmode_name(shared), found);
}

int logmode_check(const char *data_dir, bool shared, char *errmsg)
{
	char path[4200], tablets[4200], line[32];
	uint8_t *data;
	size_t n;
	int rv;

	snprintf(path, sizeof path, "%s/%s", data_dir, LOGMODE_FILE);
	rv = fs_read_file(path, 64, &data, &n, errmsg);
	if (rv == 0) {
		bool was_shared;
		while (n > 0 && (data[n - 1] == '\n' || data[n - 1] == '\r'))
			data[--n] = '\0';
		if (strcmp((char *)data, logmode_name(true)) == 0)
			was_shared = true;
		else if (strcmp((char *)data, logmode_name(false)) == 0)
			was_shared = false;
		else {
			free(data);
			return err_set(errmsg, DOCRAFT_ECORRUPT, "%s holds neither \"%s\" nor "
				       "\"%s\"", path, logmode_name(true), logmode_name(false));
		}
		free(data);
		return was_shared == shared ? 0 : refuse(data_dir, logmode_name(was_shared),
							 shared, errmsg);
	}
	if (rv != DOCRAFT_ENOTFOUND)
		return rv;
	snprintf(tablets, sizeof tablets, "%s/tablets", data_dir);
	if (shared && has_per_tablet_logs(tablets))
		return refuse(data_dir, logmode_name(false), shared, errmsg);
	snprintf(line, sizeof line, "%s\n", logmode_name(shared));
	return fs_write_file(path, line, strlen(line), errmsg);
}
