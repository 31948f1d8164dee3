/*
 * fork.c - refusals in a fork() child (fork.h has the design): a
 * non-keyed draw, a save and a load on a context the parent opened.
 *
 * Keyed draws (rngsnap_derive, rngsnap_generate_at) stay allowed: a key
 * names its numbers whoever draws them, which is what a fork()ed
 * data-loader worker needs (the worker id or the sample index is the
 * key).  Reading a position, seeding and the listing calls are allowed
 * too; the draws stay refused whatever the child does, since its copy
 * of a stream can never be the job's.
 */
#include <pthread.h>

#include "context.h"
#include "fork.h"
#include "internal.h"
#include "words.h"

atomic_ulong rs_fork_generation;

static pthread_once_t rs_fork_once = PTHREAD_ONCE_INIT;

static void in_child(void)
{
    atomic_fetch_add_explicit(&rs_fork_generation, 1, memory_order_relaxed);
}

static void register_handler(void)
{
    /* Fails only without memory for the handler: then forks go unseen,
     * as they did before this check existed; nothing to report it on. */
    (void)pthread_atfork(NULL, NULL, in_child);
}

unsigned long rs_fork_track(void)
{
    pthread_once(&rs_fork_once, register_handler);
    return atomic_load_explicit(&rs_fork_generation, memory_order_relaxed);
}

int rs_fork_refuse_draw(rngsnap_stream *s, rs_word_id call)
{
    struct rngsnap *ctx = s->ctx;
    char label[600];
    return rs_error(ctx, RNGSNAP_E_ORDER, "%s on stream %s refused: this "
                    "process is a fork() child of the process that opened "
                    "the context, and its copy of the stream sits at the "
                    "parent's position, so it would draw exactly the "
                    "numbers the parent draws. Draw from a keyed stream "
                    "instead (%s with a key unique to this process, such "
                    "as the worker's id or the sample's index, then %s), "
                    "or open a context of this process's own (%s)",
                    rs_word(ctx, call), rs_stream_label(s, label,
                    sizeof label), rs_word(ctx, RS_W_DERIVE),
                    rs_word(ctx, RS_W_GENERATE_AT), rs_word(ctx, RS_W_OPEN));
}

int rs_fork_refuse(struct rngsnap *ctx, const char *what, int load)
{
    if (load)
        return rs_error(ctx, RNGSNAP_E_ORDER, "%s refused, nothing "
                        "restored: this process is a fork() child of the "
                        "process that opened the context, so a load here "
                        "would restore this process's copy only, never the "
                        "job's. Load in the process that opened the context "
                        "(or open a context of this process's own: %s)",
                        what, rs_word(ctx, RS_W_OPEN));
    return rs_error(ctx, RNGSNAP_E_ORDER, "%s refused: this process is a "
                    "fork() child of the process that opened the context; "
                    "its streams and app states are this process's copy, "
                    "not the job's, so the checkpoint would be no run's "
                    "state. Save in the process that opened the context",
                    what);
}
