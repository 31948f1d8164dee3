/*
 * thread_comm.h - an in-process communicator for multi-rank tests: N
 * threads, one per rank, whose rngsnap_comm collectives meet at a
 * pthread barrier.  Each body opens its own rngsnap context.
 */
#ifndef RNGSNAP_TEST_THREAD_COMM_H
#define RNGSNAP_TEST_THREAD_COMM_H

#include <rngsnap.h>

/* One rank's work; its return value is that rank's result. */
typedef int (*thread_comm_body)(int rank, const rngsnap_comm *c, void *arg);

/* Run body on nranks threads (1..1024) at once, each with its own comm
 * (c->rank = rank, c->size = nranks), and wait for all.  Returns 0 when
 * every body returned 0, else the lowest rank's nonzero result; -1 if
 * the threads could not be started. */
int thread_comm_run(int nranks, thread_comm_body body, void *arg);

/* Test hook: broadcast number `call` (0-based, counted per rank; every
 * rank makes the same broadcasts in the same order) returns rc on EVERY
 * rank instead of communicating, so that no rank waits for one that gave
 * up.  Applies to the next thread_comm_run only; call -1 clears it. */
void thread_comm_fail(int call, int rc);

/* The node layout of later runs: groups of per_node consecutive ranks
 * (the last may be smaller); 0 (the default): every rank on one node;
 * -k: k nodes, ranks placed round-robin (rank r on node r % k). */
void thread_comm_nodes(int per_node);

/* Bytes rank received in the last run (point-to-point and broadcasts):
 * what a multi-rank call moves to each rank. */
size_t thread_comm_received(int rank);

#endif
