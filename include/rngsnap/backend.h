/*
 * rngsnap/backend.h - the plugin ABI.
 *
 * A backend plugin is a shared module rngsnap_<name>.so that exports one
 * function, rngsnap_backend_v1(), returning a fixed, versioned table.  The
 * table starts with abi_version, struct_size and name, and members are only
 * ever appended: the core reads a member only when struct_size says the
 * plugin's table contains it (RNGSNAP_BACKEND_HAS), and treats a NULL
 * optional member as "not supported".
 *
 * Plugins never link against the core: everything they need from it comes
 * through the rngsnap_host table handed to open(), the Philox engine
 * included (host->philox_generate is rngsnap_philox_generate of the core
 * that loaded the plugin; docs/plugin-guide.md says why).
 */
#ifndef RNGSNAP_BACKEND_H
#define RNGSNAP_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include <rngsnap.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Major ABI version: a plugin whose abi_version differs is refused. */
#define RNGSNAP_BACKEND_ABI_VERSION 1u

/* Smallest table the core accepts: everything up to and including
 * generate (the members every backend must have). */
#define RNGSNAP_BACKEND_MIN_SIZE \
    (offsetof(rngsnap_backend, generate) + sizeof(void *))

/* True when table t (as the plugin built it) contains member m and m is
 * set.  The one place where "is this member there" is decided. */
#define RNGSNAP_BACKEND_HAS(t, m)                                      \
    ((t)->struct_size >= offsetof(rngsnap_backend, m) + sizeof((t)->m) \
     && (t)->m != NULL)

/* The same test for a pointer member m of the host table h that the core
 * handed to open(): a plugin built against a newer header than the core
 * it runs in must check before reading a member appended later. */
#define RNGSNAP_HOST_HAS(h, m)                                      \
    ((h)->struct_size >= offsetof(rngsnap_host, m) + sizeof((h)->m) \
     && (h)->m != NULL)

/* Log levels for rngsnap_host.log. */
enum { RNGSNAP_LOG_ERROR = 0, RNGSNAP_LOG_WARN = 1, RNGSNAP_LOG_INFO = 2,
       RNGSNAP_LOG_DEBUG = 3 };

/* Services the core offers a plugin.  Valid from open() to close(). */
typedef struct rngsnap_host {
    uint32_t abi_version; /* RNGSNAP_BACKEND_ABI_VERSION of the core */
    uint32_t struct_size; /* sizeof(rngsnap_host) of the core        */

    const char *backend_name; /* the [backend.NAME] section          */
    const char *ini_path;     /* absolute path of the rng.ini        */
    const char *plugin_path;  /* absolute path of this plugin file   */

    /* This backend's own rng.ini options (every key of its section other
     * than plugin, required and streams).  option() returns the value or
     * NULL; option_at(i) for i < option_count() sets *key, *value and
     * *line (its line in ini_path; any pointer may be NULL) in file order
     * and returns RNGSNAP_OK, or RNGSNAP_E_INVALID for i out of range.
     * The strings stay valid until close(). */
    const char *(*option)(const struct rngsnap_host *host, const char *key);
    size_t (*option_count)(const struct rngsnap_host *host);
    int (*option_at)(const struct rngsnap_host *host, size_t i,
                     const char **key, const char **value, int *line);

    /* Report the detail of an error the plugin is about to return; the
     * core prefixes backend name and plugin path.  error and log may be
     * called from any thread; error's text becomes the message of the
     * thread whose call into the plugin is failing. */
    void (*error)(const struct rngsnap_host *host, const char *fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 2, 3)))
#endif
        ;
    /* Log a line (shown when RNGSNAP_LOG is set to a level >= level). */
    void (*log)(const struct rngsnap_host *host, int level,
                const char *fmt, ...)
#if defined(__GNUC__)
        __attribute__((format(printf, 3, 4)))
#endif
        ;

    void *core; /* opaque to plugins */

    /* ---- appended members: test RNGSNAP_HOST_HAS(host, m) first ---- */

    /* The built-in Philox4x32-10 engine: rngsnap_philox_generate of this
     * core (rngsnap.h, docs/engine.md).  Fill out[0..n) (host memory)
     * with dist from position *at and advance at->offset by the words
     * used: the cpu backend's bits, cuRAND-exact for RNGSNAP_CURAND_*,
     * on the best SIMD path.  Any thread, no lock.  A plugin that keeps
     * its streams as positions and declares RNGSNAP_STATE_PHILOX4X32_10
     * gets reserve, keyed streams and `rngsnap diff`'s "N words apart"
     * from the core as the built-in plugins do. */
    int (*philox_generate)(rngsnap_philox *at, rngsnap_dist dist, void *out,
                           size_t n);
} rngsnap_host;

/*
 * The backend table.  All functions returning int return RNGSNAP_OK or an
 * RNGSNAP_E_* code (having called host->error with the detail).
 *
 * A backend context (bctx) comes from open(); a stream handle from
 * stream_open().  Threads (docs/plugin-guide.md, "Threads"):
 * - never two calls on the same stream handle at once (the core locks
 *   each stream);
 * - seed, get_state, set_state, generate and reserve MAY run at once on
 *   DIFFERENT streams of one bctx, from different threads: keep per-stream
 *   state in the stream; what is shared in bctx is read-only or locked by
 *   the plugin;
 * - open, close, device_count, stream_open and stream_close run only
 *   inside rngsnap_open/rngsnap_close, never at once with any other call
 *   on this backend;
 * - validate_state, device_name, status, emulated and memory may run at
 *   once with stream calls on other threads: they only read bctx.
 */
typedef struct rngsnap_backend {
    uint32_t abi_version; /* RNGSNAP_BACKEND_ABI_VERSION                */
    uint32_t struct_size; /* sizeof(rngsnap_backend) as built           */
    const char *name;     /* must equal the rng.ini backend name        */
    const char *version;  /* plugin version string                      */
    uint32_t state_format; /* id of the stream state layout (checkpoint) */
    uint32_t state_size;   /* bytes of one stream's state                */

    /* Open the backend: read options, probe the runtime and devices. */
    int (*open)(const rngsnap_host *host, void **bctx);
    void (*close)(void *bctx);

    /* Devices found (0 allowed).  When 0, *reason says why in words a
     * person can act on ("libcuda.so.1 not found"). */
    int (*device_count)(void *bctx, const char **reason);
    const char *(*device_name)(void *bctx, int device);

    int (*stream_open)(void *bctx, int device, const char *name,
                       void **stream);
    void (*stream_close)(void *stream);

    /* Set the stream to the start of Philox stream (seed, subsequence),
     * or the backend's own equivalent. */
    int (*seed)(void *stream, uint64_t seed, uint64_t subsequence);
    /* Copy the state_size bytes of the stream's state out / in. */
    int (*get_state)(void *stream, void *buf, size_t len);
    int (*set_state)(void *stream, const void *buf, size_t len);
    /* n values of dist into out (in the memory memory() reports). */
    int (*generate)(void *stream, rngsnap_dist dist, void *out, size_t n);

    /* ---- optional members (NULL: not supported) ---- */

    /* Reserve n words for the caller's kernels, see rngsnap_reserve. */
    int (*reserve)(void *stream, uint64_t n, rngsnap_philox *at);
    /* Where generate() writes (default: host memory). */
    rngsnap_memory (*memory)(void *stream);
    /* Check a state blob before any set_state of a load, so that a bad
     * blob is refused before anything changes. */
    int (*validate_state)(void *bctx, const void *buf, size_t len);
    /* One line describing the backend now, e.g. "emulating 2 devices in
     * host memory" or "built without CUDA; 0 devices". */
    const char *(*status)(void *bctx);
    /* Nonzero when the devices are emulated in host memory. */
    int (*emulated)(void *bctx);
    /* The plugin's own rng.ini keys, NULL-terminated (e.g. {"threads",
     * "isa", NULL}).  When set, the core refuses every other key of the
     * section besides plugin, required and streams before open(), with a
     * did-you-mean over all of them.  When NULL, the core refuses only
     * near misses of its own keys ("requried") and the plugin must refuse
     * the rest. */
    const char *const *option_keys;
} rngsnap_backend;

/* The one symbol a plugin exports. */
typedef const rngsnap_backend *(*rngsnap_backend_entry_fn)(void);
#define RNGSNAP_BACKEND_ENTRY "rngsnap_backend_v1"

/* State format shared by the built-in Philox plugins: 24 bytes, three
 * little-endian uint64 (seed, subsequence, offset).  A plugin of its own
 * that keeps Philox positions declares the same id and size (and a
 * reserve member): the core then treats its streams as it does the
 * built-in ones (rngsnap_reserve, rngsnap_derive, rngsnap_generate_at,
 * `rngsnap diff`'s "N words apart", checkpoints loadable across them). */
#define RNGSNAP_STATE_PHILOX4X32_10 0x31584850u /* "PHX1" */
#define RNGSNAP_STATE_PHILOX_SIZE 24u

/* The 24 bytes of RNGSNAP_STATE_PHILOX4X32_10 from / to a position, in
 * the same byte order on every machine (header-only: nothing to link). */
static inline void rngsnap_philox_state_put(const rngsnap_philox *at,
                                            void *buf24)
{
    unsigned char *b = (unsigned char *)buf24;
    const uint64_t v[3] = {at->seed, at->subsequence, at->offset};
    for (int i = 0; i < 24; i++)
        b[i] = (unsigned char)(v[i / 8] >> (8 * (i % 8)));
}

static inline void rngsnap_philox_state_get(const void *buf24,
                                            rngsnap_philox *at)
{
    const unsigned char *b = (const unsigned char *)buf24;
    uint64_t v[3] = {0, 0, 0};
    for (int i = 23; i >= 0; i--)
        v[i / 8] = v[i / 8] << 8 | b[i];
    at->seed = v[0];
    at->subsequence = v[1];
    at->offset = v[2];
}

#if defined(__GNUC__)
#define RNGSNAP_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define RNGSNAP_PLUGIN_EXPORT
#endif

#ifdef __cplusplus
}
#endif
#endif /* RNGSNAP_BACKEND_H */
