/*
 * internal.h - functions shared between the core's own files (config,
 * loader, host, context, registry, seed).  Not installed, not exported.
 */
#ifndef RNGSNAP_CORE_INTERNAL_H
#define RNGSNAP_CORE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "context.h"
#include "format.h"

/* ---- errors.c ---- */

/* A new context's id (never 0, never reused in this process). */
uint64_t rs_new_ctx_id(void);
/* The calling thread's message buffer for ctx (RS_ERRMSG_MAX bytes),
 * taken on first use; the open error for NULL. */
char *rs_errbuf(const struct rngsnap *ctx);
/* Empty the calling thread's message on ctx, if it has one. */
void rs_error_clear(const struct rngsnap *ctx);
/* Plugin calls: take a mark before the call; after a failure,
 * rs_error_since gives the message the plugin set on ctx through
 * host->error since the mark, or NULL when it set none.  The mark is read
 * before every draw, so its counter uses the initial-exec TLS model (one
 * load through %fs, no __tls_get_addr call; 8 bytes of the static TLS
 * that glibc keeps for libraries opened later, e.g. by Python). */
#if defined(__GNUC__)
#define RS_TLS_FAST __attribute__((tls_model("initial-exec")))
#else
#define RS_TLS_FAST
#endif
/* Messages this thread has set, on any context. */
extern _Thread_local unsigned long rs_msg_count RS_TLS_FAST;
static inline unsigned long rs_error_mark(void)
{
    return rs_msg_count;
}
const char *rs_error_since(const struct rngsnap *ctx, unsigned long mark);

/* Copy ctx's message into this thread's open error (a failed open hands
 * its message to rngsnap_errmsg(NULL) before freeing the context). */
void rs_set_open_error(const char *msg);

/* ---- host.c ---- */

/* Fill b->host (the services table handed to b's plugin). */
void rs_host_init(rs_backend *b);
/* Effective log level: RNGSNAP_LOG if set, else the ini's `log`, else -1
 * (nothing).  Levels are RNGSNAP_LOG_ERROR..RNGSNAP_LOG_DEBUG. */
int rs_log_level(const struct rngsnap *ctx);
/* Parse "error|warn|info|debug|0..3" (also "none"/"off" = -1); -2 if bad. */
int rs_log_level_parse(const char *s);
void rs_log(const struct rngsnap *ctx, int level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* A warning shown at the default level too (neither RNGSNAP_LOG nor
 * `log` set), for an rng.ini mistake that would otherwise change the job
 * without a word (docs/rng-ini.md, `log`); an explicit level below warn
 * (none, error) hides it. */
void rs_warn_default(const struct rngsnap *ctx, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---- trace.c ---- */

/* Log "plugin call: BACKEND CALL [on ENTRY] (PLUGIN)" at debug, before
 * the call (s may be NULL for a backend-wide call).  Call it through
 * RS_TRACE, which tests the level read once at open. */
void rs_trace_call(const rs_backend *b, const char *call,
                   const struct rngsnap_stream *s);
#define RS_TRACE(b, call, s)                                    \
    do {                                                        \
        if (__builtin_expect((b)->ctx->trace, 0))               \
            rs_trace_call((b), (call), (s));                    \
    } while (0)

/* ---- registry.c ---- */

/* RNGSNAP_OK when every required backend is available; otherwise (a
 * RNGSNAP_PROBE_ONLY context) sets the message and returns
 * RNGSNAP_E_UNAVAILABLE.  seed/save/load/draw call it first. */
int rs_check_usable(struct rngsnap *ctx);
/* Build ctx->streams from the loaded backends (open every stream). */
int rs_registry_build(struct rngsnap *ctx);
/* Close every stream handle and free the list. */
void rs_registry_free(struct rngsnap *ctx);
/* Map a plugin's return code into the public range, making sure ctx has
 * a message naming the backend and the call that failed (the plugin's
 * own, when it set one after mark = rs_error_mark()). */
int rs_plugin_rc(struct rngsnap *ctx, rs_backend *b, int rc,
                 const char *call, unsigned long mark);

/* The resume gate of draws, reserves and keyed streams: RNGSNAP_OK, or
 * the context's unusable error, or RNGSNAP_E_ORDER naming call and s
 * before a RESUME context has loaded. */
int rs_stream_gate(rngsnap_stream *s, rs_word_id call);
/* The seed gate of draws (n > 0), reserves (n > 0) and keyed streams:
 * RNGSNAP_E_ORDER naming call, s, seed_all and load until the context
 * has been seeded or loaded, so that no run draws from a seed it never
 * chose (issue 22: unseeded, every entry once drew the same words). */
int rs_seed_gate(rngsnap_stream *s, rs_word_id call);
/* s and at are not NULL: else RNGSNAP_E_INVALID, "call: stream is NULL"
 * or "call on <stream>: at is NULL". */
int rs_stream_at_args(rngsnap_stream *s, const rngsnap_philox *at,
                      rs_word_id call);

/* ---- resumed.c ---- */

/* After a successful load (every stream locked): the context is loaded
 * and resumed, no longer awaits a load, and no stream has drawn since. */
void rs_mark_loaded(struct rngsnap *ctx);
/* RNGSNAP_OK, or RNGSNAP_E_ORDER naming rngsnap_branch when ctx is a
 * resumed context: for seed_all, and for register_state of name. */
int rs_resumed_seed_gate(struct rngsnap *ctx);
int rs_resumed_register_gate(struct rngsnap *ctx, const char *name);
/* The gate of every load: RNGSNAP_OK, or, in a resumed context whose
 * streams have drawn since its load, RNGSNAP_E_ORDER naming each of them
 * after what ("load <path>", "load_ranks <dir>").  Nothing is changed. */
int rs_reload_gate(struct rngsnap *ctx, const char *what);
/* rngsnap_close: a RNGSNAP_RESUME context that never loaded says so on
 * stderr (rs_warn_default), naming the missing load. */
void rs_close_report(const struct rngsnap *ctx);
/* The end of every refusal of a RNGSNAP_RESUME context awaiting its load
 * (a draw, a save): how to start a first run instead, with no checkpoint
 * to load.  Its two %s: the RESUME word and the seed_all word. */
#define RS_FIRST_RUN "On a first run, with no checkpoint yet, open the " \
                     "context without %s and seed it (%s)"

/* ---- seed.c ---- */

/* The Philox seed of one registry entry, see the comment in seed.c. */
uint64_t rs_derive_seed(uint64_t user_seed, const char *backend, int device,
                        const char *stream);
/* Index pair (i < j) of the first two equal values in seeds[0..n), or
 * 0 when all differ. */
int rs_find_duplicate(const uint64_t *seeds, size_t n, size_t *i, size_t *j);
/* Put every entry where rngsnap_seed_all(ctx, 0) would for the rank in
 * effect, without counting as a seeding (draws stay refused): open and
 * set_rank call it on a context never seeded nor loaded, so that even
 * its saved entries differ.  The caller holds ctx's lock (or owns ctx
 * alone, in open); a failure leaves the states as they were. */
void rs_seed_default(struct rngsnap *ctx);

/* ---- checkpoint.c ---- */

/* The whole of rngsnap_load after the read: decode and verify buf[0..len)
 * (named path in messages), match it against the registry, restore all or
 * nothing.  Also the entry point of the load fuzzer (tests/fuzz). */
int rs_load_image(struct rngsnap *ctx, const char *path, const uint8_t *buf,
                  size_t len);

/* Build ctx's checkpoint image into a new buffer (free()); path only
 * names it in messages.  app_sums (ctx->napps entries, or NULL) gets the
 * XXH3-64 of each app state's bytes.  The caller holds ctx->lock. */
int rs_save_image(struct rngsnap *ctx, const char *path, uint8_t **image,
                  size_t *image_len, uint64_t *app_sums);

/* A load in two phases, so that many ranks can agree between them:
 * prepare (decode, verify, match, plugin validate_state; nothing
 * changes), commit (back up, then apply; on failure it rolls itself
 * back), then undo (put the backups back) or just finish (free). */
typedef struct rs_load_plan {
    const char *path;       /* names the file in messages               */
    const uint64_t *seeds;  /* fork: entry e gets seed(seeds[e], rank)  */
    rs_fmt_view v;          /* points into the caller's buffer          */
    uint8_t *scratch;       /* maps, then stream backups (one block)    */
    uint32_t *smap, *amap;  /* entry/app -> section index               */
    uint8_t *backup;        /* every stream's state before commit       */
    size_t *asz;            /* app backups: sizes and bytes             */
    uint8_t *abuf;
    int committed;          /* commit succeeded: undo has work to do    */
} rs_load_plan;

/* seeds NULL: an exact resume, buf must be this rank's file.  seeds set
 * (ctx->nstreams of them): a fork, buf is rank 0's file of a
 * fork_world-rank checkpoint and only its app states are used.  buf must
 * outlive the plan.  Always rs_load_finish the plan afterwards. */
int rs_load_prepare(struct rngsnap *ctx, const char *path,
                    const uint8_t *buf, size_t len, const uint64_t *seeds,
                    int32_t fork_world, rs_load_plan *plan);
/* The caller holds every stream's lock (and keeps it until it knows
 * whether to undo).  Does not touch the resume gate. */
int rs_load_commit(struct rngsnap *ctx, rs_load_plan *plan);
/* After a successful commit: restore the backups.  Returns how many
 * states could not be put back (0: all). */
size_t rs_load_undo(struct rngsnap *ctx, rs_load_plan *plan);
void rs_load_finish(rs_load_plan *plan);

/* ---- ledger.c ---- */

/* Close ctx's ledger, if any (rngsnap_close calls it). */
int rs_ledger_close(struct rngsnap *ctx);

/* ---- checkpoint.c ---- */

/* rngsnap_register_state without its RESUME check: for a binding whose
 * own layer refuses a late registration in its language's words and
 * registers states of its own after a load (python: a save's tag=). */
int rs_register_state(struct rngsnap *ctx, const char *name,
                      const rngsnap_state_ops *ops, void *user);

/* ---- small helpers (errors.c) ---- */

char *rs_strdup(const char *s);
/* A state format id as a person reads it: '"PHX1" (0x31584850)' when its
 * four bytes (little-endian, as written in checkpoints) are printable
 * ASCII, else '0x0000002a'.  buf needs at least 24 bytes. */
const char *rs_format_id(uint32_t id, char *buf, size_t len);
/* "backend:device/stream" of s into buf. */
const char *rs_stream_label(const struct rngsnap_stream *s, char *buf,
                            size_t len);

#endif /* RNGSNAP_CORE_INTERNAL_H */
