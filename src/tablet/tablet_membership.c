/* Leadership and membership of a tablet replica (tablet.h "membership and
 * leadership"): following raft's role, the leader barrier, configuration
 * changes, leadership transfer, and who may connect to the replica.
 *
 * Design.
 *
 * Leadership: each loop turn the poll follows raft_state into the role:
 *
 *   follower / candidate ──raft elects us──► LEADER_NOT_READY
 *        ▲                                    │ rio_on_leader: a barrier of
 *        │ lost (epoch++, lease dropped,      │ this term; once it applied
 *        │ rio_on_not_leader, queued          ▼ (every earlier entry is)
 *        └ requests fail ENOTLEADER) ◄──── LEADER (READY: writes and reads)
 *
 * The epoch counts leaderships: a barrier or an entry whose epoch is not
 * the current one belongs to a leadership that ended (its lease too). A
 * READY leader's clock is moved past the largest hybrid time applied, so
 * its writes follow every write it applied, whoever proposed it. A raft
 * group that becomes UNAVAILABLE fails the replica (tablet.c).
 *
 * Changes: one at a time, on a READY leader. A replica is added as a spare
 * and then promoted to voter in the same request (change_cb). raft keeps
 * using a transfer request after its callback (the TimeoutNow send embedded
 * in it can still be cancelled when raft closes), so transfers stay on the
 * tablet's list until raft has closed. A transfer voids the lease for the
 * rest of the leadership: TimeoutNow makes the target's voters ignore this
 * leader.
 *
 * Peer checks: the listener admits a Raft connection for this replica only
 * from a member of its configuration connecting from the IP of its
 * address; the copy server gives a member slot to a peer connecting from
 * the IP of a server in the configuration. TLS will replace the IP
 * comparisons. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/err.h"
#include "common/mem.h"
#include "tablet/tablet_int.h"

/* ---- leadership ------------------------------------------------------------ */

static void leader_barrier_cb(struct raft_barrier *req, int status)
{
	struct barrier *b = req->data;
	struct tablet *t = b->t;
	t->leader_barrier_pending = false;
	if (tablet_disk_error(status))
		tablet_disk_failed(t, status, "this leader's Raft log write (its first barrier)");
	if (status == 0 && b->epoch == t->epoch && t->role == TABLET_LEADER_NOT_READY) {
		t->role = TABLET_LEADER;
		tablet_read_lease_extend(t, b->epoch, b->sent_ns);
		if (t->fsm.max_ht > hlc_last(&t->hlc)) {
			/* Entries beyond the skew were applied and not
			 * adopted (fsm.c); new writes must still be newer. */
			TLOG(LOG_LVL_WARN, t, "hybrid time %" PRIu64 " applied here is beyond the "
			     "maximum clock skew: this leader's writes follow it", t->fsm.max_ht);
			hlc_observe(&t->hlc, t->fsm.max_ht);
		}
		TLOG(LOG_LVL_INFO, t, "leader ready at index %" PRIu64,
		     (uint64_t)raft_last_applied(t->raft));
	}
	free(b);
}

static void become_leader(struct tablet *t)
{
	struct barrier *b;
	int rv;
	if (t->leader_barrier_pending)
		return;
	b = tablet_read_barrier_new(t);
	rv = rio_on_leader(&t->rio, t->raft, &b->req, leader_barrier_cb);
	if (rv != 0) {
		free(b); /* failed: no callback; the next poll tries again */
		return;
	}
	t->leader_barrier_pending = true;
}

static bool is_leader(enum tablet_role r)
{
	return r == TABLET_LEADER || r == TABLET_LEADER_NOT_READY;
}

bool tablet_membership_follow(struct tablet *t)
{
	enum tablet_role was = t->role;
	switch (raft_state(t->raft)) {
	case RAFT_LEADER:
		if (!is_leader(t->role)) {
			t->epoch++;
			tablet_read_lease_drop(t);
			t->role = TABLET_LEADER_NOT_READY;
			t->st.elections_won++;
			TLOG(LOG_LVL_INFO, t, "became leader");
		}
		if (t->role == TABLET_LEADER_NOT_READY)
			become_leader(t);
		break;
	case RAFT_CANDIDATE:
		/* Rare and the start of every failover's timeline
		 * (docs/reliability.md reads it from the logs). */
		if (t->role != TABLET_CANDIDATE)
			TLOG(LOG_LVL_INFO, t, "election started: candidate (pre-vote)");
		t->role = TABLET_CANDIDATE;
		break;
	case RAFT_FOLLOWER:
		t->role = TABLET_FOLLOWER;
		break;
	default:
		tablet_fail(t, DOCRAFT_EUNAVAILABLE, "raft group became unavailable");
		tablet_fail_queued(t, DOCRAFT_EUNAVAILABLE);
		tablet_raft_close(t, false);
		return false;
	}
	if (is_leader(was) && !is_leader(t->role)) {
		t->epoch++;
		tablet_read_lease_drop(t);
		TLOG(LOG_LVL_INFO, t, "lost leadership");
		rio_on_not_leader(&t->rio);
		tablet_fail_queued(t, DOCRAFT_ENOTLEADER);
	}
	return true;
}

/* ---- peer checks ------------------------------------------------------------ */

bool tablet_membership_raft_check(void *arg, uint64_t id, const char *address,
				  const struct sockaddr_in *peer)
{
	struct tablet *t = arg;
	return rio_is_member(&t->rio, id, address) && listener_peer_matches(address, peer);
}

bool tablet_membership_copy_check(void *arg, const struct sockaddr_in *peer)
{
	struct tablet *t = arg;
	const struct raft_configuration *c = &t->raft->configuration;
	if (!tablet_raft_alive(t))
		return false;
	for (unsigned i = 0; i < c->n; i++)
		if (listener_peer_matches(c->servers[i].address, peer))
			return true;
	return false;
}

/* ---- configuration changes ------------------------------------------------- */

struct change {
	struct raft_change req;
	struct tablet *t;
	raft_id id;
	bool promote; /* after raft_add: assign voter */
	tablet_change_cb cb;
	void *arg;
};

static void change_cb(struct raft_change *req, int status)
{
	struct change *c = req->data;
	if (status == 0 && c->promote) {
		c->promote = false;
		int rv = raft_assign(c->t->raft, &c->req, c->id, RAFT_VOTER, change_cb);
		if (rv == 0)
			return;
		status = rv;
	}
	c->cb(c->arg, tablet_from_raft(status));
	free(c);
}

static struct change *change_new(struct tablet *t, raft_id id, tablet_change_cb cb, void *arg)
{
	struct change *c = xmalloc(sizeof *c);
	*c = (struct change){.t = t, .id = id, .cb = cb, .arg = arg};
	c->req.data = c;
	return c;
}

static int change_start(struct tablet *t, struct change *c, int rv, const char *what, char *errmsg)
{
	if (rv == 0)
		return 0;
	free(c);
	return err_set(errmsg, tablet_from_raft(rv), "tablet %s: %s: %s", t->id, what,
		       raft_errmsg(t->raft));
}

static int check_leader(struct tablet *t, char *errmsg)
{
	if (tablet_closing(t) || !tablet_raft_alive(t))
		return err_set(errmsg, DOCRAFT_ECLOSED, "tablet %s is closed", t->id);
	if (t->role != TABLET_LEADER)
		return err_set(errmsg, DOCRAFT_ENOTLEADER, "tablet %s: not the leader", t->id);
	return 0;
}

int tablet_add_replica(struct tablet *t, raft_id id, const char *address, tablet_change_cb cb,
		       void *arg, char *errmsg)
{
	struct change *c;
	int rv;
	if ((rv = check_leader(t, errmsg)) != 0)
		return rv;
	c = change_new(t, id, cb, arg);
	c->promote = true;
	return change_start(t, c, raft_add(t->raft, &c->req, id, address, change_cb), "add",
			    errmsg);
}

int tablet_remove_replica(struct tablet *t, raft_id id, tablet_change_cb cb, void *arg,
			  char *errmsg)
{
	struct change *c;
	int rv;
	if ((rv = check_leader(t, errmsg)) != 0)
		return rv;
	c = change_new(t, id, cb, arg);
	return change_start(t, c, raft_remove(t->raft, &c->req, id, change_cb), "remove", errmsg);
}

/* ---- leadership transfer --------------------------------------------------- */

struct transfer {
	struct raft_transfer req;
	struct tablet *t;
	tablet_change_cb cb;
	void *arg;
	bool done;
	struct transfer *next;
};

static void transfer_cb(struct raft_transfer *req)
{
	struct transfer *x = req->data;
	if (x->done)
		return;
	x->done = true;
	x->cb(x->arg, 0);
}

void tablet_membership_free_transfers(struct tablet *t)
{
	while (t->transfers != NULL) {
		struct transfer *x = t->transfers;
		t->transfers = x->next;
		free(x);
	}
}

int tablet_transfer(struct tablet *t, raft_id id, tablet_change_cb cb, void *arg, char *errmsg)
{
	struct transfer *x;
	int rv;
	if ((rv = check_leader(t, errmsg)) != 0)
		return rv;
	x = xmalloc(sizeof *x);
	*x = (struct transfer){.t = t, .cb = cb, .arg = arg};
	x->req.data = x;
	rv = raft_transfer(t->raft, &x->req, id, transfer_cb);
	if (rv != 0) {
		free(x);
		return err_set(errmsg, tablet_from_raft(rv), "tablet %s: transfer: %s", t->id,
			       raft_errmsg(t->raft));
	}
	/* TimeoutNow makes the target's voters ignore this leader: the lease
	 * is void for the rest of this leadership, even if the transfer fails
	 * (a late TimeoutNow may still start an election). */
	t->lease_until = 0;
	t->lease_void = true;
	x->next = t->transfers;
	t->transfers = x;
	return 0;
}
