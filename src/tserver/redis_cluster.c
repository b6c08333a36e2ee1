/* CLUSTER SLOTS / NODES / INFO / KEYSLOT / MYID (redis_int.h): Redis
 * Cluster's view of the tablets of the connection's database.
 *
 * Design note. A tablet is a slot range (docraft_redis_tablets_async:
 * first..last slot and its replicas' Redis addresses, the leader first);
 * a tserver is a node, its id its uuid's hex digits padded with zeros to
 * Redis's 40 (redis_node_id). Every tserver proxies every command to the
 * right leader, so a client may send anything anywhere: MOVED is never
 * replied, and CLUSTER SLOTS only helps clients go straight to leaders.
 * In NODES every tserver is a "master" owning the slot ranges it leads
 * (a Raft replica leads some tablets and follows others, which Redis's
 * one-role-per-node model cannot say). Replicas without a Redis port are
 * left out. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/mem.h"
#include "common/redis_slot.h"
#include "tserver/redis_int.h"

void redis_node_id(char out[41], const char *uuid)
{
	size_t j = 0;

	memset(out, '0', 40);
	out[40] = '\0';
	for (const char *p = uuid != NULL ? uuid : ""; *p != '\0' && j < 40; p++)
		if ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') ||
		    (*p >= 'A' && *p <= 'F'))
			out[j++] = (char)(*p | 0x20);
}

/* "IP:PORT" into ip and port; false when it is not one. */
static bool split_address(const char *a, char *ip, size_t cap, long *port)
{
	const char *colon = strrchr(a, ':');
	char *end;

	if (colon == NULL || (size_t)(colon - a) >= cap || colon == a)
		return false;
	memcpy(ip, a, (size_t)(colon - a));
	ip[colon - a] = '\0';
	*port = strtol(colon + 1, &end, 10);
	return *end == '\0' && *port > 0 && *port < 65536;
}

static size_t usable(const docraft_redis_tablet *t)
{
	size_t n = 0;
	for (size_t r = 0; r < t->nreplicas; r++)
		n += t->redis_addresses[r][0] != '\0';
	return n;
}

static void slots_reply(struct fan *f)
{
	struct buf *out = redis_conn_out(f->c);
	size_t n = docraft_result_ntablets(f->tablets);

	resp_array(out, n);
	for (size_t i = 0; i < n; i++) {
		docraft_redis_tablet t;
		docraft_result_redis_tablet(f->tablets, i, &t);
		resp_array(out, 2 + usable(&t));
		resp_int(out, t.first_slot);
		resp_int(out, t.last_slot);
		for (size_t r = 0; r < t.nreplicas; r++) {
			char ip[64], id[41];
			long port;
			if (!split_address(t.redis_addresses[r], ip, sizeof ip, &port)) {
				if (t.redis_addresses[r][0] != '\0') {
					/* counted by usable(): keep the array's size right */
					resp_array(out, 3);
					resp_bulk_str(out, t.redis_addresses[r]);
					resp_int(out, 0);
					redis_node_id(id, t.tserver_uuids[r]);
					resp_bulk_str(out, id);
				}
				continue;
			}
			resp_array(out, 3);
			resp_bulk_str(out, ip);
			resp_int(out, port);
			redis_node_id(id, t.tserver_uuids[r]);
			resp_bulk_str(out, id);
		}
	}
}

struct node {
	char id[41];
	const char *address;
	struct buf slots; /* " a-b c-d" */
	size_t last_at;   /* where the last range starts in slots */
	int last_first, last_end;
	bool leads;
};

/* The nodes of f->tablets (distinct tservers with a Redis port), with the
 * slot ranges each leads. *n_leaders: how many lead something. */
static struct node *nodes_of(struct fan *f, size_t *count, size_t *n_leaders)
{
	size_t nt = docraft_result_ntablets(f->tablets), n = 0, cap = 0;
	struct node *v = NULL;

	*n_leaders = 0;
	for (size_t i = 0; i < nt; i++) {
		docraft_redis_tablet t;
		docraft_result_redis_tablet(f->tablets, i, &t);
		for (size_t r = 0; r < t.nreplicas; r++) {
			char id[41];
			size_t k;
			if (t.redis_addresses[r][0] == '\0')
				continue;
			redis_node_id(id, t.tserver_uuids[r]);
			for (k = 0; k < n && strcmp(v[k].id, id) != 0; k++)
				;
			if (k == n) {
				if (n == cap) {
					cap = cap == 0 ? 4 : 2 * cap;
					v = xrealloc(v, cap * sizeof *v);
				}
				memset(&v[n], 0, sizeof v[n]);
				memcpy(v[n].id, id, sizeof id);
				v[n].address = t.redis_addresses[r];
				buf_init(&v[n].slots);
				n++;
			}
			if (r == 0 && t.leader_known) {
				*n_leaders += !v[k].leads;
				v[k].leads = true;
				if (v[k].slots.len > 0 && v[k].last_end + 1 == t.first_slot)
					v[k].slots.len = v[k].last_at; /* contiguous: extend */
				else
					v[k].last_first = t.first_slot;
				v[k].last_at = v[k].slots.len;
				v[k].last_end = t.last_slot;
				if (v[k].last_first == v[k].last_end)
					buf_printf(&v[k].slots, " %d", v[k].last_end);
				else
					buf_printf(&v[k].slots, " %d-%d", v[k].last_first,
						   v[k].last_end);
			}
		}
	}
	*count = n;
	return v;
}

static void free_nodes(struct node *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		buf_free(&v[i].slots);
	free(v);
}

static void nodes_reply(struct fan *f)
{
	size_t n, leaders;
	struct node *v = nodes_of(f, &n, &leaders);
	struct buf b = BUF_INIT;

	for (size_t i = 0; i < n; i++) {
		char ip[64];
		long port = 0;
		if (!split_address(v[i].address, ip, sizeof ip, &port))
			snprintf(ip, sizeof ip, "%s", v[i].address);
		buf_printf(&b, "%s %s:%ld@%ld %smaster - 0 0 %zu connected%.*s\n", v[i].id, ip,
			   port, port + 10000, strcmp(v[i].id, f->d->node_id) == 0 ? "myself," : "",
			   i + 1, (int)v[i].slots.len, (const char *)v[i].slots.data);
	}
	resp_bulk(redis_conn_out(f->c), b.data, b.len);
	buf_free(&b);
	free_nodes(v, n);
}

static void info_reply(struct fan *f)
{
	size_t n, leaders, nt = docraft_result_ntablets(f->tablets), covered = 0;
	struct node *v = nodes_of(f, &n, &leaders);
	struct buf b = BUF_INIT;

	for (size_t i = 0; i < nt; i++) {
		docraft_redis_tablet t;
		docraft_result_redis_tablet(f->tablets, i, &t);
		covered += (size_t)(t.last_slot - t.first_slot) + 1;
	}
	buf_printf(&b,
		   "cluster_state:%s\r\ncluster_slots_assigned:%zu\r\ncluster_slots_ok:%zu\r\n"
		   "cluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:%zu\r\n"
		   "cluster_size:%zu\r\ncluster_current_epoch:%zu\r\ncluster_my_epoch:1\r\n"
		   "cluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\n",
		   covered == REDIS_SLOTS ? "ok" : "fail", covered, covered, n, leaders, n);
	resp_bulk(redis_conn_out(f->c), b.data, b.len);
	buf_free(&b);
	free_nodes(v, n);
}

/* SLOTS, NODES, INFO: the tablets, then the reply. */
static void tablets_reply(struct fan *f)
{
	const struct resp_arg *sub = f->arg;

	if (sub->n == 5 && strncasecmp(sub->p, "slots", 5) == 0)
		slots_reply(f);
	else if (sub->n == 5 && strncasecmp(sub->p, "nodes", 5) == 0)
		nodes_reply(f);
	else
		info_reply(f);
	fan_end(f);
}

static int cmd_tablets(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	struct fan *f = fan_new(c);

	(void)argc;
	if (f == NULL)
		return REDIS_DONE;
	f->arg = &argv[1];
	return fan_tablets(f, tablets_reply);
}

static int cmd_keyslot(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	(void)argc;
	resp_int(redis_conn_out(c), redis_key_slot(argv[2].p, argv[2].n));
	return REDIS_DONE;
}

static int cmd_myid(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	struct redis_data *d = redis_conn_data(c);
	(void)argc;
	(void)argv;
	resp_bulk_str(redis_conn_out(c), d->node_id);
	return REDIS_DONE;
}

static int cmd_help(struct redis_conn *c, uint32_t argc, const struct resp_arg *argv)
{
	static const char *const lines[] = {
		"CLUSTER <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"INFO",
		"    Return information about the cluster.",
		"KEYSLOT <key>",
		"    Return the hash slot for <key>.",
		"MYID",
		"    Return the node id.",
		"NODES",
		"    Return cluster configuration seen by node.",
		"SLOTS",
		"    Return information about slots range mappings.",
		"HELP",
		"    Print this help.",
	};
	(void)argc;
	(void)argv;
	resp_array(redis_conn_out(c), sizeof lines / sizeof lines[0]);
	for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
		resp_simple(redis_conn_out(c), lines[i]);
	return REDIS_DONE;
}

#define LOCAL (REDIS_CMD_LOADING | REDIS_CMD_STALE | REDIS_CMD_LOCAL)

const struct redis_command redis_cluster_subs[] = {
	{"help", 2, LOCAL, 0, 0, 0, cmd_help, NULL, 0},
	{"info", 2, REDIS_CMD_STALE, 0, 0, 0, cmd_tablets, NULL, 0},
	{"keyslot", 3, LOCAL, 0, 0, 0, cmd_keyslot, NULL, 0},
	{"myid", 2, LOCAL, 0, 0, 0, cmd_myid, NULL, 0},
	{"nodes", 2, REDIS_CMD_STALE, 0, 0, 0, cmd_tablets, NULL, 0},
	{"slots", 2, REDIS_CMD_STALE, 0, 0, 0, cmd_tablets, NULL, 0},
};
const size_t redis_cluster_n_subs = sizeof redis_cluster_subs / sizeof redis_cluster_subs[0];
