/* A counting state machine and the load that feeds it, for the tests that
 * run real C-Raft groups over real sockets (test_transport, test_rnet).
 *
 * Commands are the numbers 0 .. SEQ_MAX-1, 8 bytes each. Every replica
 * records which numbers it applied (its snapshot is that map); the load
 * submits each number below its target to the leader until raft
 * acknowledges it, resubmitting after a failed callback (applying a number
 * twice changes nothing, as after a LEADERSHIPLOST that still commits).
 * A group is caught up when the load is acknowledged and every replica
 * has exactly [0, target).
 *
 * Loop thread only (raft's). */
#ifndef DOCRAFT_TESTS_RAFT_SEQFSM_H
#define DOCRAFT_TESTS_RAFT_SEQFSM_H

#include <stdbool.h>
#include <stdint.h>

#include <raft.h>

#define SEQ_MAX 1024

struct seq_fsm {
	struct raft_fsm fsm;     /* give &f->fsm to raft_init */
	uint8_t seen[SEQ_MAX];
	unsigned distinct;
	uint64_t sum;
	unsigned bad;            /* commands that are not a number below SEQ_MAX */
	unsigned n_restores;     /* snapshots restored */
};

/* Empties f and fills f->fsm (version 1; fsm.data is f). */
void seq_fsm_reset(struct seq_fsm *f);

/* Whether f applied exactly the numbers [0, target). */
bool seq_fsm_has(const struct seq_fsm *f, unsigned target);

struct seq_load {
	uint8_t state[SEQ_MAX];  /* 0 to submit, 1 in flight, 2 acknowledged */
	unsigned target;         /* numbers [0, target) must be applied everywhere */
	unsigned n_failed;       /* apply callbacks with an error (resubmitted) */
};

/* Submits every number below target neither in flight nor acknowledged
 * to leader (a raft that is leader; NULL: nothing), until raft refuses. */
void seq_load_pump(struct seq_load *l, struct raft *leader);

/* Whether every number below target was acknowledged. */
bool seq_load_acked(const struct seq_load *l);

#endif
