/*
 * context.h - the core's internal view of a context and its registry.
 *
 * Shared by every file of core/: config and loader fill the backend slots,
 * registry.c builds the stream list, checkpoint.c walks the same list.
 */
#ifndef RNGSNAP_CORE_CONTEXT_H
#define RNGSNAP_CORE_CONTEXT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <rngsnap.h>
#include <rngsnap/backend.h>

#include "words.h"
#include "coords.h"

#define RS_ERRMSG_MAX 2048

/* ctx->log_level when rng.ini has no `log` key (prints as "none"). */
#define RS_LOG_UNSET (-3)

/* One "key = value" of a [backend.X] section handed to the plugin. */
typedef struct rs_option {
    char *key;
    char *value;
    int line;
} rs_option;

/* One [backend.X] section, and the plugin loaded for it. */
typedef struct rs_backend {
    struct rngsnap *ctx;
    char *name;          /* X of [backend.X]                           */
    char *plugin;        /* plugin = value as written                  */
    int section_line;    /* line of the [backend.X] header             */
    int required;        /* required = (default true)                  */
    char **streams;      /* streams = list (default: "default")        */
    size_t nstreams;
    rs_option *options;  /* every other key, handed to the plugin      */
    size_t noptions;

    char *plugin_path;   /* absolute path loaded, or paths tried       */
    void *dl;            /* lt_dlhandle                                 */
    const rngsnap_backend *vt;
    void *bctx;          /* from vt->open                               */
    rngsnap_host host;   /* services handed to this plugin             */

    int device_count;
    int available;
    int skipped;
    char *reason;        /* why unavailable / skipped                  */
    char *near_path;     /* plugin not found: the near-miss file there  */
    int emulation_refused; /* RNGSNAP_NO_EMULATION: its emulated devices
                              were refused (0 devices, not "emulated") */
} rs_backend;

/* One registry entry: (backend, device, stream).  `busy` is the entry's
 * lock (core/lock.h): every plugin call on `handle` runs while it is
 * held, so no two calls on one stream overlap. */
struct rngsnap_stream {
    atomic_int busy;
    struct rngsnap *ctx;
    rs_backend *backend;
    int device;
    const char *name;    /* points into backend->streams               */
    void *handle;        /* plugin's stream                             */
    /* Drawn (generate, reserve) since the context's last load (or ever,
     * before its first): a resumed context refuses another load then
     * (rs_reload_gate).  Cleared by every successful load. */
    atomic_int drawn;
};

/* One app state registered with rngsnap_register_state. */
typedef struct rs_app_state {
    char *name;
    rngsnap_state_ops ops;
    void *user;
} rs_app_state;

/*
 * Threads (the contract is in rngsnap.h): `lock` serialises the calls
 * that walk or change the whole context (seed_all, save, load,
 * register_state, set_rank); draws take only their stream's lock.
 * Everything written after rngsnap_open (apps, rank, the gate) is written
 * under `lock`; the gate is also read by draws, hence atomic.
 */
struct rngsnap {
    uint64_t id;         /* unique per process: keys each thread's message */
    pthread_mutex_t lock;
    /* Which thread holds `lock` (an address unique to it, core/lock.c; 0:
     * none): a call from a save/load callback, which runs with the lock
     * held, is refused instead of deadlocking. */
    atomic_uintptr_t holder;
    int usable;          /* every required backend has a device          */
    char *ini_path;      /* absolute                                    */
    unsigned flags;      /* rngsnap_open flags                          */
    rs_backend *backends;
    size_t nbackends;
    struct rngsnap_stream *streams; /* the registry, in its fixed order */
    size_t nstreams;
    rs_app_state *apps;
    size_t napps;
    int rank, world_size;
    char coords[RS_COORDS_MAX]; /* rngsnap_set_coords, canonical; "" none */
    atomic_int awaiting_load; /* RESUME gate: draws refused until a load */
    atomic_int loaded;   /* a load has succeeded (ever: rngsnap_branch
                            keeps it, the seed gate and rs_seed_default
                            read it)                                   */
    /* A load has succeeded and no rngsnap_branch since: the context
     * resumes a run, so seed_all, a load after draws and a late
     * register_state are refused (resumed.c). */
    atomic_int resumed;
    atomic_int seeded;   /* a seed_all has succeeded: with `loaded`, what
                            lets draws through (rs_seed_gate)          */
    int log_level;       /* rng.ini `log` (RS_LOG_UNSET: no key);
                            RNGSNAP_LOG wins                          */
    int trace;           /* log level is debug: log each plugin call
                            before it is made (trace.c), read once      */
    rs_lang lang;        /* how messages spell the API (words.h)        */
    /* Id of the multi-rank checkpoint a fork in this job's history
     * started from (all zero: none); recorded by every save_ranks. */
    uint8_t forked_from[16];
    struct rs_ledger *ledger; /* rngsnap_ledger_open's, or NULL (ledger.c) */
    /* rs_fork_generation when opened: another value means this process
     * is a fork() child of the one that opened the context (fork.h). */
    unsigned long fork_gen;
};

/* Set the calling thread's message on ctx (printf-style) and return
 * code.  ctx may be NULL during open, when the message goes to the
 * per-thread open error. */
int rs_error(struct rngsnap *ctx, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif /* RNGSNAP_CORE_CONTEXT_H */
