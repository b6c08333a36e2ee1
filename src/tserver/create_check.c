/* Checks of a CreateTabletRequest, for the tablet manager (manager.h):
 * before a create is queued, and again on the meta.pb of each replica
 * reopened at start (the same request, as written then). A pure module:
 * no loop, no files; any thread. */
#include "tserver/create_check.h"

#include <inttypes.h>
#include <string.h>

#include "common/err.h"
#include "net/listener.h"
#include "rpc/wire.h"
#include "tserver/manager.h"

int create_check_id(const char *id, char *errmsg)
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

int create_check_request(const Docraft__CreateTabletRequest *req, const char *self,
			 struct schema *s, char *errmsg)
{
	int rv;
	if ((rv = create_check_id(req->tablet_id, errmsg)) != 0)
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
	if (strlen(req->table_id) > MANAGER_TABLE_ID_MAX)
		return err_set(errmsg, DOCRAFT_EINVAL, "tablet %s: table id longer than %d bytes",
			       req->tablet_id, MANAGER_TABLE_ID_MAX);
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
