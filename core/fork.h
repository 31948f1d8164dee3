/*
 * fork.h - which process a context belongs to, checked on every draw.
 *
 * After fork() the child holds a byte-for-byte copy of the parent's
 * contexts: every non-keyed stream sits at the parent's position, so a
 * child's draw gives exactly the numbers the parent draws next, and a
 * child's save writes the child's copy as if it were the job's state.
 * The core counts forks instead of asking getpid() on each draw: a
 * pthread_atfork child handler (registered once, at the first
 * rngsnap_open) adds one to rs_fork_generation in the child, and a
 * context remembers the count of the process that opened it.  A draw
 * then pays one relaxed load and a compare.  Only the child's single
 * thread ever writes the counter (before any other code of the child
 * runs), so the parent's threads read a value that never changes.
 */
#ifndef RNGSNAP_CORE_FORK_H
#define RNGSNAP_CORE_FORK_H

#include <stdatomic.h>

#include "context.h"
#include "words.h"

/* Forks between the process that loaded the library and this one. */
extern atomic_ulong rs_fork_generation;

/* Register the fork handler (once per process) and return the current
 * generation: rngsnap_open keeps it in ctx->fork_gen. */
unsigned long rs_fork_track(void);

/* Is this process a fork() child of the one that opened ctx? */
static inline int rs_forked(const struct rngsnap *ctx)
{
    return __builtin_expect(
        atomic_load_explicit(&rs_fork_generation, memory_order_relaxed)
            != ctx->fork_gen,
        0);
}

/* RNGSNAP_E_ORDER for a non-keyed draw (call on s) in a fork() child,
 * naming keyed streams as the fix.  Takes no lock: a lock another of the
 * parent's threads held at the fork stays held in the child. */
int rs_fork_refuse_draw(rngsnap_stream *s, rs_word_id call);
/* RNGSNAP_E_ORDER for what ("save <path>", "load checkpoint bytes",
 * "load_ranks <dir>"...) in a fork() child; load: say nothing was
 * restored.  Takes no lock. */
int rs_fork_refuse(struct rngsnap *ctx, const char *what, int load);

#endif /* RNGSNAP_CORE_FORK_H */
