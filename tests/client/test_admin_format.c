/* The text of `docraft tservers`, `docraft tablets` and `docraft cluster`
 * (src/client/admin.h's pure formatters) from fabricated master answers:
 * the self-healing fields of issue 15 (state, placement, drain, moves,
 * under-replicated and leaderless tablets) and what an older master that
 * leaves them empty prints. Scripts parse this text (deploy/docraft-local,
 * tests/jepsen/nemesis.sh, scripts/bench-heal.sh), so it is compared
 * exactly. No network. */
#include <stdio.h>
#include <string.h>

#include "client/admin.h"
#include "test.h"

static void tserver(Docraft__TServerInfo *ts, const char *uuid, const char *address, bool live,
		    uint32_t tablets, uint32_t leaders)
{
	docraft__tserver_info__init(ts);
	ts->uuid = (char *)uuid;
	ts->address = (char *)address;
	ts->live = live;
	ts->last_heartbeat_ms_ago = live ? 300 : 9000;
	ts->tablets = tablets;
	ts->leaders = leaders;
}

TEST(tservers_show_state_placement_drain)
{
	Docraft__TServerInfo ts[4], *p[4] = {&ts[0], &ts[1], &ts[2], &ts[3]};
	struct buf b = BUF_INIT;

	tserver(&ts[0], "aa", "127.0.0.1:9100", true, 3, 1);
	ts[0].state = "live";
	ts[0].placement = "local.local.zone1";
	tserver(&ts[1], "bb", "127.0.0.2:9100", true, 0, 0);
	ts[1].state = "live";
	ts[1].draining = true;
	ts[1].drained = true;
	tserver(&ts[2], "cc", "127.0.0.3:9100", false, 2, 0);
	ts[2].state = "failed";
	ts[2].moves = 2;
	/* An older master: no state, no placement. */
	tserver(&ts[3], "dd", "127.0.0.4:9100", false, 1, 0);
	admin_format_tservers(p, 4, &b);
	CHECK_EQ_STR(buf_cstr(&b),
		     "UUID  ADDRESS         LIVE  HEARTBEAT    REPLICAS  LEADERS  STATE        "
		     "PLACEMENT          DRAIN    MOVES\n"
		     "aa    127.0.0.1:9100  yes   300 ms ago   3         1        live         "
		     "local.local.zone1  -        0\n"
		     "bb    127.0.0.2:9100  yes   300 ms ago   0         0        live         "
		     "-                  drained  0\n"
		     "cc    127.0.0.3:9100  NO    9000 ms ago  2         0        failed       "
		     "-                  -        2\n"
		     "dd    127.0.0.4:9100  NO    9000 ms ago  1         0        unreachable  "
		     "-                  -        0\n");
	buf_free(&b);
}

TEST(tablets_mark_leaderless_under_replicated_moving)
{
	Docraft__GetTableResponse resp = DOCRAFT__GET_TABLE_RESPONSE__INIT;
	Docraft__TabletLocation loc[3], *ploc[3] = {&loc[0], &loc[1], &loc[2]};
	Docraft__Peer peer[3][3], *pp[3][3];
	static char *const ids[3] = {"kv-0-aaaa", "kv-1-aaaa", "kv-2-aaaa"};
	struct buf b = BUF_INIT;

	for (int i = 0; i < 3; i++) {
		docraft__tablet_location__init(&loc[i]);
		loc[i].tablet_id = ids[i];
		loc[i].start = (uint32_t)(i * 0x5555);
		loc[i].end = i == 2 ? 65536 : (uint32_t)((i + 1) * 0x5555);
		loc[i].n_replicas = 3;
		loc[i].replicas = pp[i];
		loc[i].leader_raft_id = 1;
		loc[i].live_replicas = 3;
		for (int j = 0; j < 3; j++) {
			static char *const addr[3] = {"127.0.0.1:9100", "127.0.0.2:9100",
						      "127.0.0.4:9100"};
			docraft__peer__init(&peer[i][j]);
			peer[i][j].raft_id = (uint64_t)j + 1;
			peer[i][j].address = addr[j];
			peer[i][j].voter = true;
			pp[i][j] = &peer[i][j];
		}
	}
	loc[1].leader_raft_id = 0;
	loc[1].under_replicated = true;
	loc[1].live_replicas = 1;
	peer[2][2].voter = false;
	loc[2].move = "re-replicate 2 -> dd: adding";
	resp.n_tablets = 3;
	resp.tablets = ploc;
	admin_format_tablets(&resp, &b);
	CHECK_EQ_STR(buf_cstr(&b),
		     "TABLET     PARTITION          LEADER          STATUS                       "
		     "        REPLICAS\n"
		     "kv-0-aaaa  [0x0000, 0x5555)   127.0.0.1:9100  ok                           "
		     "        1@127.0.0.1:9100* 2@127.0.0.2:9100 3@127.0.0.4:9100\n"
		     "kv-1-aaaa  [0x5555, 0xaaaa)   (none)          leaderless,under-replicated"
		     "(live=1)  1@127.0.0.1:9100 2@127.0.0.2:9100 3@127.0.0.4:9100\n"
		     "kv-2-aaaa  [0xaaaa, 0x10000)  127.0.0.1:9100  moving                       "
		     "        1@127.0.0.1:9100* 2@127.0.0.2:9100 3@127.0.0.4:9100(learner)\n"
		     "moves in progress:\n"
		     "  kv-2-aaaa  re-replicate 2 -> dd: adding\n");
	buf_free(&b);
}

TEST(cluster_summary)
{
	Docraft__ClusterStatusResponse st = DOCRAFT__CLUSTER_STATUS_RESPONSE__INIT;
	Docraft__TServerInfo ts[4], *p[4] = {&ts[0], &ts[1], &ts[2], &ts[3]};
	Docraft__MoveInfo mv[2], *pm[2] = {&mv[0], &mv[1]};
	static char *masters[2] = {"127.0.0.1:7100", "127.0.0.2:7100"};
	static char *under[2] = {"kv-1-aaaa", "kv-2-aaaa"};
	struct buf b = BUF_INIT;

	tserver(&ts[0], "aa", "127.0.0.1:9100", true, 3, 1);
	ts[0].state = "live";
	tserver(&ts[1], "bb", "127.0.0.2:9100", true, 1, 0);
	ts[1].state = "live";
	ts[1].draining = true;
	tserver(&ts[2], "cc", "127.0.0.3:9100", false, 2, 0);
	ts[2].state = "failed";
	tserver(&ts[3], "dd", "127.0.0.4:9100", true, 2, 1);
	ts[3].state = "live";
	for (int i = 0; i < 2; i++)
		docraft__move_info__init(&mv[i]);
	mv[0].tablet_id = "kv-1-aaaa";
	mv[0].reason = "re-replicate";
	mv[0].from_uuid = "cc";
	mv[0].to_uuid = "dd";
	mv[0].new_raft_id = 4;
	mv[0].step = "adding";
	mv[0].age_ms = 3250;
	mv[1].tablet_id = "kv-2-aaaa";
	mv[1].reason = "drain";
	mv[1].from_uuid = "bb";
	mv[1].to_uuid = "ee"; /* not listed: its uuid */
	mv[1].new_raft_id = 5;
	mv[1].step = "removing";
	mv[1].age_ms = 120000;
	st.n_tservers = 4;
	st.tservers = p;
	st.tables = 2;
	st.tablets = 6;
	st.under_replicated = 2;
	st.n_under_replicated_tablets = 2;
	st.under_replicated_tablets = under;
	st.n_moves = 2;
	st.moves = pm;
	st.n_masters = 2;
	st.masters = masters;
	st.master_leader = "127.0.0.2:7100";
	admin_format_cluster(&st, &b);
	CHECK_EQ_STR(buf_cstr(&b),
		     "master leader:    127.0.0.2:7100\n"
		     "masters:          127.0.0.1:7100, 127.0.0.2:7100\n"
		     "tservers:         3 live, 0 unreachable, 1 failed, 1 draining (0 drained)\n"
		     "tables:           2\n"
		     "tablets:          6\n"
		     "under-replicated: 2 (kv-1-aaaa, kv-2-aaaa)\n"
		     "leaderless:       0\n"
		     "moves in flight:  2\n"
		     "  TABLET     REASON        FROM            TO              NEW-RAFT-ID  STEP  "
		     "    AGE\n"
		     "  kv-1-aaaa  re-replicate  127.0.0.3:9100  127.0.0.4:9100  4            adding"
		     "    3.2s\n"
		     "  kv-2-aaaa  drain         127.0.0.2:9100  ee              5            removi"
		     "ng  120.0s\n");
	buf_reset(&b);

	/* A healthy cluster; more ids than shown; a master that knows no
	 * leader yet. */
	{
		static char *many[12] = {"a-0", "a-1", "a-2", "a-3", "a-4", "a-5",
					 "a-6", "a-7", "a-8", "a-9", "a-10", "a-11"};
		Docraft__ClusterStatusResponse st2 = DOCRAFT__CLUSTER_STATUS_RESPONSE__INIT;
		st2.leaderless = 40;
		st2.n_leaderless_tablets = 12;
		st2.leaderless_tablets = many;
		admin_format_cluster(&st2, &b);
		CHECK_EQ_STR(buf_cstr(&b),
			     "master leader:    (unknown)\n"
			     "masters:          (unknown)\n"
			     "tservers:         0 live, 0 unreachable, 0 failed, 0 draining (0 "
			     "drained)\n"
			     "tables:           0\n"
			     "tablets:          0\n"
			     "under-replicated: 0\n"
			     "leaderless:       40 (a-0, a-1, a-2, a-3, a-4, a-5, a-6, a-7, a-8, a-9 "
			     "and 30 more)\n"
			     "moves in flight:  0\n");
	}
	buf_free(&b);
}

TEST_MAIN(T(tservers_show_state_placement_drain), T(tablets_mark_leaderless_under_replicated_moving),
	  T(cluster_summary))
