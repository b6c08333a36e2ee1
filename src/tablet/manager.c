/* The tablet manager. See manager.h for the contract.
 *
 * Replicas are a singly linked list (a tablet server hosts hundreds, not
 * millions). Closing a tablet is asynchronous (tablet_close), so a replica
 * being deleted stays in the list as CLOSING until its tablet's close
 * callback, where its files are removed and its delete callers answered.
 * Callbacks that have no tablet to wait for (the delete of a FAILED replica)
 * are run from a zero-delay timer, never from inside the call. */
#include "tablet/manager.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/check.h"
#include "common/err.h"
#include "common/hlc.h"
#include "common/log.h"
#include "rpc/wire.h"
#include "tablet/remote_copy.h"

/* Largest meta.pb accepted (a schema of SCHEMA_MAX_COLUMNS columns is far
 * below). */
#define META_MAX_BYTES (16u << 20)

/* A manager_delete caller waiting for its callback. */
struct mgr_waiter {
	manager_delete_cb cb;
	void *arg;
	int status;
	struct mgr_waiter *next;
};

/* ---- file-system helpers ---------------------------------------------------- */

static char *xstrdup(const char *s)
{
	char *p = strdup(s);
	if (p == NULL)
		PANIC("out of memory");
	return p;
}

static char *path_join(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 2;
	char *p = malloc(n);
	if (p == NULL)
		PANIC("out of memory");
	snprintf(p, n, "%s/%s", a, b);
	return p;
}

static int errno_code(int e)
{
	return e == ENOSPC || e == EDQUOT ? DOCRAFT_ENOSPC : DOCRAFT_EIO;
}

static int fsync_path(const char *path, char *errmsg)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int rv = 0;
	if (fd < 0)
		return err_set(errmsg, errno_code(errno), "open %s: %s", path, strerror(errno));
	if (fsync(fd) != 0)
		rv = err_set(errmsg, errno_code(errno), "fsync %s: %s", path, strerror(errno));
	close(fd);
	return rv;
}

int manager_write_file(const char *path, const void *data, size_t len, char *errmsg)
{
	char *tmp = malloc(strlen(path) + 5);
	char *dir;
	const uint8_t *p = data;
	size_t off = 0;
	int fd, rv = 0;

	if (tmp == NULL)
		PANIC("out of memory");
	sprintf(tmp, "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		rv = err_set(errmsg, errno_code(errno), "create %s: %s", tmp, strerror(errno));
		free(tmp);
		return rv;
	}
	while (off < len) {
		ssize_t w = write(fd, p + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			int e = w < 0 ? errno : ENOSPC;
			rv = err_set(errmsg, errno_code(e), "write %s: %s", tmp, strerror(e));
			break;
		}
		off += (size_t)w;
	}
	if (rv == 0 && fsync(fd) != 0)
		rv = err_set(errmsg, errno_code(errno), "fsync %s: %s", tmp, strerror(errno));
	close(fd);
	if (rv == 0 && rename(tmp, path) != 0)
		rv = err_set(errmsg, errno_code(errno), "rename %s: %s", tmp, strerror(errno));
	if (rv != 0) {
		unlink(tmp);
		free(tmp);
		return rv;
	}
	free(tmp);
	dir = xstrdup(path);
	{
		char *slash = strrchr(dir, '/');
		if (slash == dir)
			slash[1] = '\0';
		else if (slash != NULL)
			*slash = '\0';
		else
			strcpy(dir, ".");
	}
	rv = fsync_path(dir, errmsg);
	free(dir);
	return rv;
}

/* Reads a whole (small) file into a malloc'ed buffer. ENOENT is reported
 * as DOCRAFT_ENOTFOUND. */
static int read_file(const char *path, uint8_t **out, size_t *len, char *errmsg)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	uint8_t *p;
	size_t off = 0;

	*out = NULL;
	*len = 0;
	if (fd < 0)
		return err_set(errmsg, errno == ENOENT ? DOCRAFT_ENOTFOUND : DOCRAFT_EIO,
			       "open %s: %s", path, strerror(errno));
	if (fstat(fd, &st) != 0 || st.st_size < 0 || (uint64_t)st.st_size > META_MAX_BYTES) {
		close(fd);
		return err_set(errmsg, DOCRAFT_EIO, "%s: cannot stat or too large", path);
	}
	p = malloc((size_t)st.st_size + 1);
	if (p == NULL)
		PANIC("out of memory");
	while (off < (size_t)st.st_size) {
		ssize_t r = read(fd, p + off, (size_t)st.st_size - off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		off += (size_t)r;
	}
	close(fd);
	if (off != (size_t)st.st_size) {
		free(p);
		return err_set(errmsg, DOCRAFT_EIO, "%s: short read", path);
	}
	*out = p;
	*len = off;
	return 0;
}

static int remove_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	if (remove(p) != 0 && errno != ENOENT)
		LOG_WARN("cannot remove %s: %s", p, strerror(errno));
	return 0;
}

static void remove_tree(const char *path)
{
	nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- validation --------------------------------------------------------------- */

static int check_id(const char *id, char *errmsg)
{
	size_t n = id != NULL ? strlen(id) : 0;
	if (n == 0 || n > LISTENER_TABLET_ID_MAX)
		return err_set(errmsg, DOCRAFT_EINVAL, "tablet id must be 1..%d characters",
			       LISTENER_TABLET_ID_MAX);
	if (id[0] == '.')
		return err_set(errmsg, DOCRAFT_EINVAL, "tablet id '%s' starts with '.'", id);
	for (size_t i = 0; i < n; i++) {
		char c = id[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-' || c == '.'))
			return err_set(errmsg, DOCRAFT_EINVAL, "tablet id '%s': only letters, "
				       "digits, '_', '-' and '.'", id);
	}
	return 0;
}

/* Checks req (see manager_create) and builds its schema into *s (freed
 * here on error). self: this server's address, checked against the peer
 * list of a bootstrapping replica (NULL: not checked). */
static int check_request(const Docraft__CreateTabletRequest *req, const char *self,
			 struct schema *s, char *errmsg)
{
	int rv;
	if ((rv = check_id(req->tablet_id, errmsg)) != 0)
		return rv;
	if (req->raft_id == 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "tablet %s: raft id 0", req->tablet_id);
	if (!req->join) {
		bool found = false;
		if (req->n_peers == 0)
			return err_set(errmsg, DOCRAFT_EINVAL,
				       "tablet %s: a new tablet needs its peers", req->tablet_id);
		for (size_t i = 0; i < req->n_peers; i++) {
			const Docraft__Peer *p = req->peers[i];
			struct sockaddr_in sa;
			char why[DOCRAFT_ERRMSG_SIZE];
			const char *id = req->tablet_id;
			if (p->raft_id == 0)
				return err_set(errmsg, DOCRAFT_EINVAL,
					       "tablet %s: peer with raft id 0", id);
			if (listener_parse_address(p->address, &sa, why) != 0)
				return err_set(errmsg, DOCRAFT_EINVAL, "tablet %s: peer %" PRIu64
					       ": %s", id, p->raft_id, why);
			for (size_t j = 0; j < i; j++)
				if (req->peers[j]->raft_id == p->raft_id)
					return err_set(errmsg, DOCRAFT_EINVAL, "tablet %s: "
						       "raft id %" PRIu64 " listed twice", id,
						       p->raft_id);
			if (p->raft_id != req->raft_id)
				continue;
			found = true;
			if (self != NULL && strcmp(p->address, self) != 0)
				return err_set(errmsg, DOCRAFT_EINVAL, "tablet %s: peer %" PRIu64
					       " is at %s, this server at %s", id, p->raft_id,
					       p->address, self);
		}
		if (!found)
			return err_set(errmsg, DOCRAFT_EINVAL,
				       "tablet %s: raft id %" PRIu64 " is not among the peers",
				       req->tablet_id, req->raft_id);
	}
	if (req->partition_end == 0)
		return err_set(errmsg, DOCRAFT_EINVAL, "tablet %s: no partition (partition_end "
			       "unset)", req->tablet_id);
	if (req->partition_end > 65536 || req->partition_start >= req->partition_end)
		return err_set(errmsg, DOCRAFT_EINVAL, "tablet %s: bad partition [%u, %u)",
			       req->tablet_id, req->partition_start, req->partition_end);
	if (req->schema == NULL)
		return err_set(errmsg, DOCRAFT_EINVAL, "tablet %s: no schema", req->tablet_id);
	if ((rv = wire_schema_from_pb(req->schema, s, errmsg)) != 0)
		return err_wrap(errmsg, rv, "tablet %s: schema", req->tablet_id);
	if (schema_nkeys(s) == 0) {
		schema_free(s);
		return err_set(errmsg, DOCRAFT_EINVAL, "tablet %s: the schema has no key column",
			       req->tablet_id);
	}
	return 0;
}

/* ---- replicas -------------------------------------------------------------------- */

static struct replica *lookup(struct manager *m, const char *id)
{
	for (struct replica *r = m->head; r != NULL; r = r->next)
		if (strcmp(r->id, id) == 0)
			return r;
	return NULL;
}

static struct replica *replica_new(struct manager *m, const char *id)
{
	struct replica *r = calloc(1, sizeof *r);
	if (r == NULL)
		PANIC("out of memory");
	snprintf(r->id, sizeof r->id, "%s", id);
	r->dir = path_join(m->tablets_dir, id);
	r->m = m;
	r->next = m->head;
	m->head = r;
	return r;
}

static void replica_unlink(struct replica *r)
{
	struct replica **pp = &r->m->head;
	while (*pp != NULL && *pp != r)
		pp = &(*pp)->next;
	if (*pp == r)
		*pp = r->next;
}

static void replica_free(struct replica *r)
{
	if (r->has_schema)
		schema_free(&r->schema);
	free(r->dir);
	free(r);
}

/* Removes r's meta.pb (first: a crash then leaves a directory without one,
 * removed at the next start) and then its directory. */
static int delete_files(struct replica *r)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	char *meta = path_join(r->dir, MANAGER_META_FILE);
	int rv = 0;
	if (unlink(meta) != 0 && errno != ENOENT) {
		rv = errno_code(errno);
		LOG_ERROR("tablet %s: cannot remove %s: %s", r->id, meta, strerror(errno));
	}
	free(meta);
	if (rv == 0) {
		fsync_path(r->dir, NULL);
		remove_tree(r->dir);
		if (fsync_path(r->m->tablets_dir, errmsg) != 0)
			LOG_WARN("%s", errmsg);
	}
	return rv;
}

static void run_waiters(struct mgr_waiter *w, int status)
{
	while (w != NULL) {
		struct mgr_waiter *next = w->next;
		w->cb(w->arg, status);
		free(w);
		w = next;
	}
}

static void defer_cb(uv_timer_t *h)
{
	struct manager *m = h->data;
	struct mgr_waiter *w = m->deferred;
	m->deferred = NULL;
	while (w != NULL) {
		struct mgr_waiter *next = w->next;
		w->next = NULL;
		run_waiters(w, w->status);
		w = next;
	}
}

static void defer_waiters(struct manager *m, struct mgr_waiter *w, int status)
{
	while (w != NULL) {
		struct mgr_waiter *next = w->next;
		w->status = status;
		w->next = m->deferred;
		m->deferred = w;
		w = next;
	}
	uv_timer_start(&m->defer, defer_cb, 0, 0);
}

static void defer_closed(uv_handle_t *h)
{
	struct manager *m = h->data;
	defer_cb(&m->defer);
	free(m->data_dir);
	free(m->tablets_dir);
	free(m->address);
	LOG_INFO("tablet manager closed");
	m->close_cb(m);
}

static void maybe_closed(struct manager *m)
{
	if (m->closing && m->n_open == 0 && m->head == NULL)
		uv_close((uv_handle_t *)&m->defer, defer_closed);
}

static void tablet_closed_cb(struct tablet *t, void *arg)
{
	struct replica *r = arg;
	struct manager *m = r->m;
	(void)t;
	r->t = NULL;
	m->n_open--;
	if (r->state == REPLICA_CLOSING) {
		int status = r->remove_files ? delete_files(r) : 0;
		struct mgr_waiter *w = r->waiters;
		if (r->remove_files)
			LOG_INFO("tablet %s: replica deleted", r->id);
		r->waiters = NULL;
		replica_unlink(r);
		replica_free(r);
		run_waiters(w, status);
	} else if (m->closing) {
		/* A FAILED replica whose tablet finished closing. */
		replica_unlink(r);
		replica_free(r);
	}
	maybe_closed(m);
}

static void close_tablet(struct replica *r)
{
	r->tablet_closing = true;
	tablet_close(r->t, tablet_closed_cb, r);
}

/* Opens r's tablet as req describes; on error r->t may be set (an opened
 * tablet that failed later): the caller closes it. */
static int open_replica(struct manager *m, struct replica *r,
			const Docraft__CreateTabletRequest *req, char *errmsg)
{
	struct tablet_options o;
	int rv;

	tablet_options_default(&o);
	o.id = r->id;
	o.dir = r->dir;
	o.raft_id = req->raft_id;
	o.address = m->address;
	o.listener = m->o.listener;
	o.copy = m->o.copy;
	if (m->o.raft_heartbeat_ms != 0)
		o.heartbeat_ms = m->o.raft_heartbeat_ms;
	if (m->o.election_ms != 0)
		o.election_ms = m->o.election_ms;
	if (m->o.max_inflight != 0)
		o.max_inflight = m->o.max_inflight;
	if (m->o.segment_bytes != 0)
		o.segment_bytes = m->o.segment_bytes;
	if (m->o.max_clock_skew_ms != 0)
		o.max_clock_skew_us = (uint64_t)m->o.max_clock_skew_ms * 1000;
	if (m->o.lease_ms == MANAGER_LEASE_OFF)
		o.lease_ms = 0;
	else if (m->o.lease_ms != 0)
		o.lease_ms = m->o.lease_ms;
	o.store.env = m->o.store_env;
	o.store.default_ttl_ms = r->schema.default_ttl_ms;
	/* The schema compaction GC uses: repacking of packed rows and removal
	 * of dropped columns (the store keeps its own copy). */
	o.store.schema = &r->schema;
	if ((rv = tablet_open(m->loop, &o, &r->t, errmsg)) != 0)
		return rv;
	m->n_open++;
	if (!req->join) {
		struct tablet_peer *peers = calloc(req->n_peers, sizeof *peers);
		if (peers == NULL)
			PANIC("out of memory");
		for (size_t i = 0; i < req->n_peers; i++) {
			peers[i].id = req->peers[i]->raft_id;
			peers[i].address = req->peers[i]->address;
			peers[i].role = RAFT_VOTER;
		}
		rv = tablet_bootstrap(r->t, peers, req->n_peers, errmsg);
		free(peers);
		if (rv != 0)
			return rv;
	}
	return tablet_start(r->t, errmsg);
}

/* Moves DIR/tablets/name, which has no meta.pb, to
 * DIR/tablets.orphan/<name>.<unix time>[.<n>] and says so: it may be the
 * remains of an interrupted create or delete, or data an operator put there
 * (a replica whose meta.pb was lost): never deleted, an operator decides. */
static void move_aside(struct manager *m, const char *dir, const char *name)
{
	char *orphans = path_join(m->data_dir, "tablets.orphan");
	char target[4096];
	struct stat st;
	int n = 0;
	if (mkdir(orphans, 0755) != 0 && errno != EEXIST) {
		LOG_ERROR("%s has no %s; cannot move it aside: mkdir %s: %s (left in place, "
			  "ignored)", dir, MANAGER_META_FILE, orphans, strerror(errno));
		free(orphans);
		return;
	}
	do {
		int l = n == 0 ? snprintf(target, sizeof target, "%s/%s.%lld", orphans, name,
					  (long long)time(NULL))
			       : snprintf(target, sizeof target, "%s/%s.%lld.%d", orphans, name,
					  (long long)time(NULL), n);
		if (l < 0 || (size_t)l >= sizeof target) {
			LOG_ERROR("%s has no %s; cannot move it aside: path too long (left in "
				  "place, ignored)", dir, MANAGER_META_FILE);
			free(orphans);
			return;
		}
		n++;
	} while (lstat(target, &st) == 0);
	if (rename(dir, target) != 0) {
		LOG_ERROR("%s has no %s; cannot move it aside to %s: %s (left in place, ignored)",
			  dir, MANAGER_META_FILE, target, strerror(errno));
	} else {
		fsync_path(orphans, NULL);
		fsync_path(m->tablets_dir, NULL);
		LOG_WARN("%s has no %s (an interrupted create or delete, or a replica whose "
			 "%s was lost): moved aside to %s, not deleted; remove it once inspected",
			 dir, MANAGER_META_FILE, MANAGER_META_FILE, target);
	}
	free(orphans);
}

/* Loads the replica in DIR/tablets/name at start. */
static void load_replica(struct manager *m, const char *name)
{
	char errmsg[DOCRAFT_ERRMSG_SIZE];
	char *dir = path_join(m->tablets_dir, name);
	char *meta = path_join(dir, MANAGER_META_FILE);
	Docraft__CreateTabletRequest *req = NULL;
	struct replica *r;
	struct stat st;
	uint8_t *data;
	size_t len;
	int rv;

	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		LOG_WARN("%s: not a tablet directory, ignored", dir);
		goto out;
	}
	rv = read_file(meta, &data, &len, errmsg);
	if (rv == DOCRAFT_ENOTFOUND) {
		move_aside(m, dir, name);
		goto out;
	}
	if (check_id(name, NULL) != 0) {
		LOG_WARN("%s: not a tablet id, ignored", dir);
		free(data);
		goto out;
	}
	r = replica_new(m, name);
	r->state = REPLICA_FAILED;
	if (rv != 0) {
		snprintf(r->errmsg, sizeof r->errmsg, "%s", errmsg);
		goto failed;
	}
	req = docraft__create_tablet_request__unpack(NULL, len, data);
	free(data);
	if (req == NULL) {
		snprintf(r->errmsg, sizeof r->errmsg, "%s does not decode", meta);
		goto failed;
	}
	if (strcmp(req->tablet_id, name) != 0) {
		snprintf(r->errmsg, sizeof r->errmsg, "%s names tablet '%s'", meta, req->tablet_id);
		goto failed;
	}
	r->raft_id = req->raft_id;
	r->join = req->join;
	if (req->partition_end == 0) {
		LOG_WARN("tablet %s: %s has no partition (written before partitions were "
			 "kept): serving the whole hash range", name, meta);
		req->partition_start = 0;
		req->partition_end = 65536;
	}
	if (check_request(req, NULL, &r->schema, r->errmsg) != 0)
		goto failed;
	r->part_start = req->partition_start;
	r->part_end = req->partition_end;
	r->has_schema = true;
	if (open_replica(m, r, req, r->errmsg) != 0) {
		if (r->t != NULL)
			close_tablet(r); /* stays FAILED; the callback clears r->t */
		goto failed;
	}
	r->state = REPLICA_OPEN;
	LOG_INFO("tablet %s: replica reopened (raft id %" PRIu64 ", table %s)", r->id, r->raft_id,
		 r->schema.table);
	goto out;
failed:
	LOG_ERROR("tablet %s: cannot open the replica: %s", name, r->errmsg);
out:
	if (req != NULL)
		docraft__create_tablet_request__free_unpacked(req, NULL);
	free(meta);
	free(dir);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int manager_init(struct manager *m, uv_loop_t *loop, const struct manager_options *o,
		 char *errmsg)
{
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *e;
	DIR *d;
	int rv;

	memset(m, 0, sizeof *m);
	if (o->data_dir == NULL || o->address == NULL || o->listener == NULL)
		return err_set(errmsg, DOCRAFT_EINVAL, "manager: data dir, address and listener "
			       "are required");
	m->loop = loop;
	m->o = *o;
	m->data_dir = xstrdup(o->data_dir);
	m->address = xstrdup(o->address);
	m->tablets_dir = path_join(o->data_dir, "tablets");
	m->o.data_dir = m->data_dir;
	m->o.address = m->address;
	if (mkdir(m->tablets_dir, 0755) != 0 && errno != EEXIST) {
		rv = err_set(errmsg, errno_code(errno), "mkdir %s: %s", m->tablets_dir,
			     strerror(errno));
		goto fail;
	}
	d = opendir(m->tablets_dir);
	if (d == NULL) {
		rv = err_set(errmsg, DOCRAFT_EIO, "opendir %s: %s", m->tablets_dir,
			     strerror(errno));
		goto fail;
	}
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			names = realloc(names, cap * sizeof *names);
			if (names == NULL)
				PANIC("out of memory");
		}
		names[n++] = xstrdup(e->d_name);
	}
	closedir(d);
	fsync_path(m->data_dir, NULL);
	uv_timer_init(loop, &m->defer);
	m->defer.data = m;
	if (n > 0)
		qsort(names, n, sizeof *names, cmp_names);
	for (size_t i = 0; i < n; i++) {
		load_replica(m, names[i]);
		free(names[i]);
	}
	free(names);
	return 0;
fail:
	free(m->data_dir);
	free(m->tablets_dir);
	free(m->address);
	return rv;
}

int manager_create(struct manager *m, const Docraft__CreateTabletRequest *req, char *errmsg)
{
	struct replica *r;
	struct schema s;
	struct stat st;
	char *meta;
	uint8_t *packed;
	size_t len;
	int rv;

	if (m->closing)
		return err_set(errmsg, DOCRAFT_ECLOSED, "the tablet server is shutting down");
	if ((rv = check_id(req->tablet_id, errmsg)) != 0)
		return rv;
	if ((r = lookup(m, req->tablet_id)) != NULL) {
		if (r->state == REPLICA_CLOSING)
			return err_set(errmsg, DOCRAFT_EBUSY, "tablet %s is being deleted", r->id);
		if (r->raft_id != req->raft_id)
			return err_set(errmsg, DOCRAFT_EINVAL,
				       "tablet %s exists here with raft id %" PRIu64, r->id,
				       r->raft_id);
		if (r->state == REPLICA_FAILED)
			return err_set(errmsg, DOCRAFT_EUNAVAILABLE,
				       "tablet %s exists but failed: %s", r->id, r->errmsg);
		if (req->partition_start != r->part_start || req->partition_end != r->part_end)
			return err_set(errmsg, DOCRAFT_EINVAL,
				       "tablet %s exists here with partition [%u, %u), not [%u, %u)",
				       r->id, r->part_start, r->part_end, req->partition_start,
				       req->partition_end);
		return 0;
	}
	if ((rv = check_request(req, m->address, &s, errmsg)) != 0)
		return rv;
	/* Capacity (issue 12): a small, self-contained check; see manager.h. */
	if (m->o.max_replicas != 0 && m->n_open >= m->o.max_replicas)
		return err_set(errmsg, DOCRAFT_EUNAVAILABLE,
			       "tablet %s: this server hosts %zu replicas, as many as its "
			       "open-file and AIO limits allow (--max-replicas); place it elsewhere",
			       req->tablet_id, m->n_open);

	r = replica_new(m, req->tablet_id);
	r->schema = s;
	r->has_schema = true;
	r->raft_id = req->raft_id;
	r->join = req->join;
	r->part_start = req->partition_start;
	r->part_end = req->partition_end;
	r->state = REPLICA_CLOSING; /* invisible until open */
	if (stat(r->dir, &st) == 0) {
		rv = err_set(errmsg, DOCRAFT_EIO, "%s exists but holds no known replica", r->dir);
		replica_unlink(r);
		replica_free(r);
		return rv;
	}
	if (mkdir(r->dir, 0755) != 0) {
		rv = err_set(errmsg, errno_code(errno), "mkdir %s: %s", r->dir, strerror(errno));
		replica_unlink(r);
		replica_free(r);
		return rv;
	}
	len = protobuf_c_message_get_packed_size(&req->base);
	packed = malloc(len ? len : 1);
	if (packed == NULL)
		PANIC("out of memory");
	protobuf_c_message_pack(&req->base, packed);
	meta = path_join(r->dir, MANAGER_META_FILE);
	rv = manager_write_file(meta, packed, len, errmsg);
	free(meta);
	free(packed);
	if (rv == 0)
		rv = fsync_path(m->tablets_dir, errmsg);
	if (rv == 0)
		rv = open_replica(m, r, req, errmsg);
	if (rv != 0) {
		LOG_ERROR("tablet %s: create failed: %s", r->id, errmsg);
		r->remove_files = true;
		if (r->t != NULL) {
			close_tablet(r); /* the callback removes the files */
		} else {
			delete_files(r);
			replica_unlink(r);
			replica_free(r);
		}
		return rv;
	}
	r->state = REPLICA_OPEN;
	LOG_INFO("tablet %s: replica created (raft id %" PRIu64 ", table %s, %s)", r->id,
		 r->raft_id, r->schema.table, req->join ? "joining" : "bootstrapped");
	return 0;
}

int manager_delete(struct manager *m, const char *id, manager_delete_cb cb, void *arg,
		   char *errmsg)
{
	struct replica *r = lookup(m, id != NULL ? id : "");
	struct mgr_waiter *w;

	if (m->closing)
		return err_set(errmsg, DOCRAFT_ECLOSED, "the tablet server is shutting down");
	if (r == NULL || (r->state == REPLICA_CLOSING && !r->remove_files))
		return err_set(errmsg, DOCRAFT_ETABLETNOTFOUND, "tablet %s is not hosted here",
			       id != NULL ? id : "");
	w = calloc(1, sizeof *w);
	if (w == NULL)
		PANIC("out of memory");
	w->cb = cb;
	w->arg = arg;
	if (r->state == REPLICA_CLOSING) {
		/* Already being deleted: wait for it. */
		w->next = r->waiters;
		r->waiters = w;
		return 0;
	}
	LOG_INFO("tablet %s: deleting the replica", r->id);
	r->state = REPLICA_CLOSING;
	r->remove_files = true;
	if (r->t != NULL) {
		w->next = r->waiters;
		r->waiters = w;
		/* A FAILED replica's tablet may already be closing: its
		 * callback sees CLOSING and finishes the delete. */
		if (!r->tablet_closing)
			close_tablet(r);
		return 0;
	}
	defer_waiters(m, w, delete_files(r));
	replica_unlink(r);
	replica_free(r);
	return 0;
}

struct replica *manager_find(struct manager *m, const char *id)
{
	struct replica *r = lookup(m, id != NULL ? id : "");
	return r != NULL && r->state != REPLICA_CLOSING ? r : NULL;
}

void manager_foreach(struct manager *m, void (*fn)(void *arg, struct replica *r), void *arg)
{
	for (struct replica *r = m->head; r != NULL; r = r->next)
		if (r->state != REPLICA_CLOSING)
			fn(arg, r);
}

const char *manager_role_name(enum tablet_role role)
{
	switch (role) {
	case TABLET_FOLLOWER: return "follower";
	case TABLET_CANDIDATE: return "candidate";
	case TABLET_LEADER_NOT_READY: return "leader_not_ready";
	case TABLET_LEADER: return "leader";
	case TABLET_COPYING: return "copying";
	case TABLET_FAILED: return "failed";
	case TABLET_CLOSED: return "closed";
	}
	return "failed";
}

void manager_report(struct replica *r, Docraft__TabletReport *out, struct arena *a)
{
	struct tablet_status st;

	docraft__tablet_report__init(out);
	out->tablet_id = r->id;
	out->table = r->has_schema ? r->schema.table : (char *)"";
	out->raft_id = r->raft_id;
	if (r->state != REPLICA_OPEN || r->t == NULL) {
		out->role = (char *)"failed";
		out->error = r->errmsg;
		return;
	}
	tablet_get_status(r->t, &st);
	out->role = (char *)manager_role_name(st.role);
	out->term = st.term;
	out->leader_raft_id = st.leader_id;
	out->leader_address = arena_dup(a, st.leader_address, strlen(st.leader_address) + 1);
	out->applied_index = st.applied_index;
	out->last_index = st.last_index;
	out->entries = st.entries;
	out->writes = st.writes;
	out->lease_reads = st.lease_reads;
	out->barrier_reads = st.barrier_reads;
	out->lease_left_ms = st.lease_left_ms;
	out->error = arena_dup(a, st.errmsg, strlen(st.errmsg) + 1);
	out->failures = st.failures;
	out->recoveries = st.recoveries;
}

size_t manager_reports(struct manager *m, struct arena *a, Docraft__TabletReport ***out)
{
	size_t n = 0, i = 0;
	struct replica *r;
	*out = NULL;
	for (r = m->head; r != NULL; r = r->next)
		if (r->state != REPLICA_CLOSING)
			n++;
	if (n == 0)
		return 0;
	*out = arena_alloc(a, n * sizeof **out);
	for (r = m->head; r != NULL; r = r->next) {
		if (r->state == REPLICA_CLOSING)
			continue;
		(*out)[i] = arena_alloc(a, sizeof ***out);
		manager_report(r, (*out)[i], a);
		i++;
	}
	return n;
}

int64_t *manager_list_counter(struct replica *r)
{
	int64_t now = (int64_t)ht_physical(tablet_now(r->t));
	if (r->list_counter < now)
		r->list_counter = now;
	return &r->list_counter;
}

bool manager_closing(const struct manager *m)
{
	return m->closing;
}

void manager_close(struct manager *m, manager_close_cb cb)
{
	struct replica *r, *next;

	PRE(!m->closing && cb != NULL);
	m->closing = true;
	m->close_cb = cb;
	for (r = m->head; r != NULL; r = next) {
		next = r->next;
		switch (r->state) {
		case REPLICA_OPEN:
			r->state = REPLICA_CLOSING;
			close_tablet(r);
			break;
		case REPLICA_FAILED:
			if (r->t == NULL) {
				replica_unlink(r);
				replica_free(r);
			}
			break; /* else its tablet's close callback frees it */
		case REPLICA_CLOSING:
			break; /* being deleted: its callback finishes */
		}
	}
	maybe_closed(m);
}
