/*
 * rngsnap.h - host API of librngsnap.
 *
 * rngsnap checkpoints and restores every random-number stream of a process,
 * on every configured backend at once.  One registry of
 * (backend, device, stream) entries, built from rng.ini, drives seeding,
 * saving, loading and listing, so no backend can be saved and not restored.
 *
 * Functions return RNGSNAP_OK (0) or one of the positive error codes
 * from the list below; rngsnap_errmsg() gives the detailed message of the
 * last error on a context (which file, line, section, backend, what was
 * expected).
 *
 * Threads.  One context may be used from many threads at once:
 *  - draws (rngsnap_generate, rngsnap_reserve, rngsnap_stream_position)
 *    on DIFFERENT streams run in parallel, each stream behind its own
 *    lock (no lock shared between streams: an uncontended draw costs one
 *    atomic exchange more);
 *  - two threads on the SAME stream are serialised, not refused: each
 *    call is whole, and the words they get together are exactly the
 *    stream's next words, in the order the calls took the lock;
 *  - rngsnap_seed_all, rngsnap_save, rngsnap_load (and their _mem
 *    forms), rngsnap_register_state, rngsnap_unregister_state,
 *    rngsnap_set_rank and rngsnap_branch are serialised with each other; save, load and
 *    seed_all hold every stream's lock while they read or set states, so
 *    a save while other threads draw records every stream at a position
 *    reached by whole calls, and a draw never sees half a load (its file
 *    I/O runs with the streams unlocked);
 *  - rngsnap_errmsg(ctx) gives the CALLING thread's last message on ctx
 *    (each thread keeps its messages of the 8 contexts it failed on most
 *    recently);
 *  - rngsnap_close must not run while another thread uses the context or
 *    any of its stream handles; rngsnap_open of several contexts at once
 *    is safe.
 * Plugins see the matching contract (docs/plugin-guide.md, "Threads").
 *
 * Processes.  A context belongs to the process that opened it.  In a
 * fork() child, its non-keyed draws (rngsnap_generate, rngsnap_reserve
 * of n > 0), its saves and its loads (every form) are RNGSNAP_E_ORDER:
 * the child's copy of a stream would give exactly the parent's numbers,
 * and its copy of the states is not the job's.  Keyed draws
 * (rngsnap_derive, rngsnap_generate_at), reading positions and listing
 * stay allowed: a data-loader worker draws from keys (its id, the
 * sample's index).  The parent is unaffected; a context opened in the
 * child is the child's own.  A draw pays one relaxed atomic load for
 * this (no getpid() call).  The refusals take no lock, so a lock that
 * another of the parent's threads held at the fork cannot hang them.
 */
#ifndef RNGSNAP_H
#define RNGSNAP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define RNGSNAP_API __attribute__((visibility("default")))
#else
#define RNGSNAP_API
#endif

#define RNGSNAP_VERSION_MAJOR 0
#define RNGSNAP_VERSION_MINOR 1
#define RNGSNAP_VERSION_PATCH 0
#define RNGSNAP_VERSION_STRING "0.1.0"

/* ---- return codes ------------------------------------------------------ */

enum {
    RNGSNAP_OK = 0,
    RNGSNAP_E_CONFIG = 1,      /* bad rng.ini: file, line and key named     */
    RNGSNAP_E_PLUGIN = 2,      /* plugin missing, wrong ABI, wrong name     */
    RNGSNAP_E_UNAVAILABLE = 3, /* required backend has no device            */
    RNGSNAP_E_IO = 4,          /* open/read/write/fsync/rename failed       */
    RNGSNAP_E_EXISTS = 5,      /* save target exists, no REPLACE flag       */
    RNGSNAP_E_CORRUPT = 6,     /* checksum, truncation, unknown format      */
    RNGSNAP_E_MISMATCH = 7,    /* checkpoint does not match the registry    */
    RNGSNAP_E_ORDER = 8,       /* out of order: a draw before the load of a
                                  RESUME context; after a load, seed_all, a
                                  load after draws, a late register_state
                                  (until rngsnap_branch); in a fork()
                                  child, a non-keyed draw, save or load   */
    RNGSNAP_E_INVALID = 9,     /* bad argument                              */
    RNGSNAP_E_NOMEM = 10,      /* out of memory                             */
    RNGSNAP_E_BACKEND = 11,    /* a plugin call failed                      */
    RNGSNAP_E_DURABILITY = 12  /* save: the new file IS in place (renamed),
                                  but the folder's open/fsync/close failed,
                                  so surviving a power loss is not confirmed */
};

/* ---- flags -------------------------------------------------------------- */

/* rngsnap_open: the job is resuming.  Draws and saves are refused
 * (RNGSNAP_E_ORDER) until a load succeeds, and rngsnap_close of a
 * context that never loaded says so on stderr.  What a context refuses
 * AFTER its load does not depend on this flag: see "Resumed contexts"
 * at rngsnap_branch. */
#define RNGSNAP_RESUME 0x1u
/* rngsnap_open: list only.  A required backend without devices does not
 * fail the open; it is marked unavailable (see rngsnap_backend_get), and
 * seed/save/load/draw on such a context fail with RNGSNAP_E_UNAVAILABLE. */
#define RNGSNAP_PROBE_ONLY 0x2u

/* rngsnap_save: an existing file at path may be replaced. */
#define RNGSNAP_SAVE_REPLACE 0x1u
/* rngsnap_save: skip the fsync of file and folder (benchmarks, tmpfs).
 * The rename is still atomic; durability after power loss is not. */
#define RNGSNAP_SAVE_NO_SYNC 0x2u
/* rngsnap_save_ranks: write one file per rank (rank-NNNNN.<id>.rngsnap)
 * instead of one file per node, as before node aggregation.  The
 * manifest is version 2 either way; both layouts load. */
#define RNGSNAP_SAVE_PER_RANK_FILES 0x4u

/* rngsnap_load_ranks (and rngsnap_mpi_load): the folder may come from
 * another world size.  Same world size: an exact resume, as without the
 * flag.  Another world size: a deterministic fork (docs/user-guide.md,
 * "Multi-rank checkpoints"): every stream is seeded from the
 * checkpoint's id and contents, the new rank, backend, device and stream
 * name; app states are restored only where the checkpoint records them
 * identical on every saved rank.  rngsnap_load refuses the flag. */
#define RNGSNAP_LOAD_FORK 0x1u

/* ---- types ------------------------------------------------------------- */

typedef struct rngsnap rngsnap;               /* one context, one registry */
typedef struct rngsnap_stream rngsnap_stream; /* one registry entry        */

typedef enum rngsnap_dist {
    RNGSNAP_U32 = 0,        /* uint32_t, one word each                       */
    RNGSNAP_U64 = 1,        /* uint64_t, two words each (low word first)     */
    RNGSNAP_F32 = 2,        /* float  uniform in [0,1), one word each        */
    RNGSNAP_F64 = 3,        /* double uniform in [0,1), two words each       */
    RNGSNAP_NORMAL_F32 = 4, /* float  standard normal                        */
    RNGSNAP_NORMAL_F64 = 5, /* double standard normal                        */
    /* cuRAND-exact (Philox4_32_10 device API at the same stream position,
     * same words; docs/engine.md): */
    RNGSNAP_CURAND_UNIFORM_F32 = 6, /* curand_uniform: float in (0,1], 1 word */
    RNGSNAP_CURAND_UNIFORM_F64 = 7, /* curand_uniform_double: (0,1], 1 word  */
    RNGSNAP_CURAND_NORMAL_F32 = 8,  /* curand_normal: pairs from 2 words     */
    RNGSNAP_CURAND_NORMAL_F64 = 9   /* curand_normal_double: pairs, 4 words  */
} rngsnap_dist;
#define RNGSNAP_DIST_COUNT 10

/* Where rngsnap_generate writes its output for a stream. */
typedef enum rngsnap_memory {
    RNGSNAP_MEMORY_HOST = 0,  /* ordinary host memory                     */
    RNGSNAP_MEMORY_DEVICE = 1 /* device memory (cuda on a real GPU)       */
} rngsnap_memory;

/* A Philox4x32-10 stream position in curand_init(seed, subsequence,
 * offset) terms: word j of the stream is word j%4 of the Philox block with
 * key = seed and counter = (j/4 low, j/4 high, subsequence low, high). */
typedef struct rngsnap_philox {
    uint64_t seed, subsequence, offset;
} rngsnap_philox;

/* App-owned state saved and restored in the same checkpoint.
 * Callbacks return 0 on success; they run on the thread that called
 * rngsnap_save/rngsnap_load, for each app state in registration order.
 *
 * rngsnap_save: size() once each (to size the file), then save(buf, len)
 * once each with len = that size.  load() is never called.
 *
 * rngsnap_load: size() once each (a hint for the read), then, only once
 * the whole file is verified and matched, a BACKUP of the live state:
 * size() again and save(buf, len) into the library's memory.  Then
 * load(bytes, len) with the file's bytes (len is the saved length, which
 * may differ from size()).  If a load() fails, ROLLBACK: load() again with
 * the backup, for the app states already loaded and for the failing one
 * too (it may have failed halfway).  If a stream fails to restore, no
 * load() runs at all.  So rngsnap_load calls save() too, and may call
 * load() twice: save() must leave the state as it is, and load() must
 * accept what the app's own save() wrote.
 *
 * The context is locked while callbacks run: they must not call rngsnap
 * functions on the same context.  See docs/user-guide.md, "App state
 * and its callbacks". */
typedef struct rngsnap_state_ops {
    size_t (*size)(void *user);
    int (*save)(void *user, void *buf, size_t len);
    int (*load)(void *user, const void *buf, size_t len);
} rngsnap_state_ops;

/* ---- context ----------------------------------------------------------- */

/* Parse ini_path, load the plugins it lists, probe devices and build the
 * registry.  On failure *ctx is set to NULL and rngsnap_errmsg(NULL) gives
 * the message (kept per thread). */
RNGSNAP_API int rngsnap_open(rngsnap **ctx, const char *ini_path,
                             unsigned flags);
/* Close the context and unload its plugins.  NULL is accepted.  A
 * context opened with RNGSNAP_RESUME that never loaded a checkpoint is
 * reported on stderr ("rngsnap warn: rngsnap_close: ... never loaded a
 * checkpoint ..."), unless RNGSNAP_LOG or rng.ini's `log` is set below
 * warn: the job resumed nothing. */
RNGSNAP_API void rngsnap_close(rngsnap *ctx);

/* Rank and world size used by seeding and recorded in checkpoints.
 * Defaults come from RANK/WORLD_SIZE, OMPI_COMM_WORLD_RANK/_SIZE,
 * PMI_RANK/PMI_SIZE, else 0 and 1.  Set them before seeding. */
RNGSNAP_API int rngsnap_set_rank(rngsnap *ctx, int rank, int world_size);
RNGSNAP_API int rngsnap_get_rank(const rngsnap *ctx, int *rank,
                                 int *world_size);

/* This rank's parallel coordinates, e.g. "dp=3,tp=1,pp=0,ep=2": up to 16
 * comma-separated name=value pairs, names of 1..15 characters [a-z0-9_]
 * starting with a letter, values decimal 0..2^31-1, no name twice
 * (RNGSNAP_E_INVALID naming the fault otherwise); kept sorted by name.
 * NULL or "" clears them.  rngsnap_save_ranks records them per rank in
 * the manifest, and an exact rngsnap_load_ranks whose rank has other
 * coordinates than the saved rank of the same number is
 * RNGSNAP_E_MISMATCH naming the rank, both coordinate sets and the saved
 * rank that had this rank's coordinates (a job re-mapped to other
 * parallel groups at the same world size).  Saved with coordinates and
 * loaded without (or the reverse) is RNGSNAP_E_MISMATCH too; set them
 * after the load to start recording them.  A fork (RNGSNAP_LOAD_FORK
 * onto another world size) does not compare them. */
RNGSNAP_API int rngsnap_set_coords(rngsnap *ctx, const char *coords);
/* The coordinates as kept ("" when none); valid until the next
 * rngsnap_set_coords or rngsnap_close. */
RNGSNAP_API const char *rngsnap_get_coords(const rngsnap *ctx);

/* Seed every entry from (seed, rank, backend, device, stream name);
 * see docs/seeding in the user guide for the mixing function.  Until a
 * seed_all or a load (rngsnap_load, _load_mem, _load_ranks) succeeds,
 * rngsnap_generate and rngsnap_reserve of n > 0 and rngsnap_derive
 * return RNGSNAP_E_ORDER naming both; the entries meanwhile sit where
 * seed_all(ctx, 0) puts them for the current rank (open and set_rank put
 * them there), so even a checkpoint saved unseeded holds no two equal
 * streams. */
RNGSNAP_API int rngsnap_seed_all(rngsnap *ctx, uint64_t seed);

/* Resumed contexts (strict by default).  A context that has loaded a
 * checkpoint (rngsnap_load, rngsnap_load_mem, rngsnap_load_ranks or
 * rngsnap_mpi_load, a RNGSNAP_LOAD_FORK onto another world size too)
 * resumes that run from then on, whatever its open flags:
 * rngsnap_seed_all, a load after any stream has drawn (rngsnap_generate,
 * rngsnap_reserve of n > 0) since the last load, and
 * rngsnap_register_state are RNGSNAP_E_ORDER and change nothing.  A load
 * again before any draw is allowed; keyed draws (rngsnap_generate_at) do
 * not count.
 *
 * rngsnap_branch is the one deliberate way out: a new run started from a
 * checkpoint ("seeded from a checkpoint": load it, branch, seed_all with
 * the new run's seed; or load another checkpoint on purpose).  After it
 * the context is no longer a resumed one: seed_all, a load and
 * register_state are allowed again, and the next successful load makes
 * it a resumed one again.  The streams keep their loaded positions until
 * then, and draws stay allowed.  Nothing is written into checkpoints:
 * a seed_all after the branch clears the fork history that a multi-rank
 * save records (rngsnap_manifest_info.forked_from), as any seeding does.
 * Returns RNGSNAP_OK (also when called again), RNGSNAP_E_ORDER when the
 * context has never loaded a checkpoint (nothing to branch from),
 * RNGSNAP_E_INVALID for a NULL ctx or a call from a save/load callback.
 * Serialised with seed_all, save and load (rngsnap.h, "Threads"). */
RNGSNAP_API int rngsnap_branch(rngsnap *ctx);

/* ---- checkpoints ------------------------------------------------------- */

/* Write every entry and app state to path, atomically (temporary file,
 * fsync, rename, fsync of the folder; docs/format.md).  Two outcomes of
 * failure, told apart by the code:
 * - RNGSNAP_E_IO (and _EXISTS, _NOMEM, ...): nothing was replaced; the
 *   previous file at path, if any, is intact.
 * - RNGSNAP_E_DURABILITY: the new checkpoint IS in place and loads, but
 *   a step after the rename (open, fsync or close of the folder, close of
 *   the file) failed, so surviving a power loss is not confirmed.  Where
 *   that matters, save again before the states change (or fsync the
 *   folder); otherwise treat it as success.
 * rngsnap_errmsg names the path and the call that failed.  A save also
 * removes stale temporary files of the same target left by killed saves
 * (never one a live save holds), logged at INFO. */
RNGSNAP_API int rngsnap_save(rngsnap *ctx, const char *path, unsigned flags);
/* All or nothing: on any error no live state changes. */
RNGSNAP_API int rngsnap_load(rngsnap *ctx, const char *path, unsigned flags);

/* The same checkpoint as bytes in memory, for jobs that keep their RNG
 * state inside a checkpoint of their own (torch.save, DCP, ...).  The
 * bytes are exactly the file format of docs/format.md: written to a file
 * they load with rngsnap_load and pass `rngsnap verify`, and a file's
 * bytes load with rngsnap_load_mem.  Every rule of rngsnap_save and
 * rngsnap_load holds (resume gate, app states, rank and world size,
 * checksums, all or nothing, threads); messages name the bytes
 * "checkpoint bytes".  flags must be 0.
 *
 * rngsnap_save_mem: *data gets a new buffer of *size bytes, to be freed
 * with rngsnap_free; on failure *data is NULL and *size 0. */
RNGSNAP_API int rngsnap_save_mem(rngsnap *ctx, void **data, size_t *size,
                                 unsigned flags);
/* Restore from data[0..size): all or nothing, as rngsnap_load.  data is
 * only read, and not kept after the call. */
RNGSNAP_API int rngsnap_load_mem(rngsnap *ctx, const void *data, size_t size,
                                 unsigned flags);
/* Free what rngsnap_save_mem allocated.  NULL is accepted. */
RNGSNAP_API void rngsnap_free(void *data);

/* Register app-owned state under a unique name (1..255 bytes).  *ops is
 * copied; user is kept and passed to every callback, in the call pattern
 * described at rngsnap_state_ops.  Every later save writes it and every
 * later load requires it.  In a resumed context (one that has loaded a
 * checkpoint, see rngsnap_branch) it is RNGSNAP_E_ORDER (that load
 * restored nothing of it): register every app state before the load. */
RNGSNAP_API int rngsnap_register_state(rngsnap *ctx, const char *name,
                                       const rngsnap_state_ops *ops,
                                       void *user);
/* Remove the app state registered under name: later saves leave it out
 * and later loads no longer require it (a checkpoint holding it is then
 * RNGSNAP_E_MISMATCH, as for any section without a live entry).  The
 * library no longer calls its callbacks once this returns, so user may
 * be freed.  An unknown name is RNGSNAP_E_INVALID.  Neither this nor
 * rngsnap_register_state may be called from a callback of the same
 * context (RNGSNAP_E_INVALID: the context is locked while they run). */
RNGSNAP_API int rngsnap_unregister_state(rngsnap *ctx, const char *name);

/* ---- multi-rank checkpoints (a folder; docs/format.md) ----------------- */

/* The collectives a multi-rank save or load needs, supplied by the caller
 * (librngsnap_mpi fills one from an MPI_Comm; the Python package from
 * torch.distributed).  The core has no other tie to a communicator.
 * Zero the whole struct before filling it.  No step of a save or load
 * moves O(ranks) bytes to every rank: ranks send to their node's leader,
 * leaders to rank 0, and rank 0 broadcasts a fixed-size verdict
 * (docs/user-guide.md, "Multi-rank checkpoints").  Each function returns
 * 0 on success and nonzero on failure (the save or load then fails with
 * RNGSNAP_E_BACKEND; ranks may then disagree, so an adapter whose
 * communication can fail on some ranks only should abort the job, as
 * MPI's default error handler does). */
typedef struct rngsnap_comm {
    int rank;   /* this process: 0 <= rank < size */
    int size;   /* ranks in the job               */
    void *user; /* handed to every call           */
    /* Collective: root's len bytes at buf are copied into buf on every
     * other rank (all ranks call it with the same len and root). */
    int (*broadcast)(void *user, void *buf, size_t len, int root);
    /* len bytes to rank dest; may return before dest receives them.
     * Messages from one rank to another arrive in the order sent. */
    int (*send)(void *user, const void *buf, size_t len, int dest);
    /* Receive a message of exactly len bytes from rank src, or from any
     * rank when src is -1; *from (never NULL) gets the sender's rank. */
    int (*recv)(void *user, void *buf, size_t len, int src, int *from);
    /* This rank's node: node_size ranks (1 or more) whose global ranks
     * are node_ranks[0..node_size), ascending, this rank among them.
     * node_ranks[0] is the node's leader: it writes the node's file.
     * Every rank of a node must give the same list (MPI: the ranks of
     * MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)).  The environment
     * variable RNGSNAP_RANKS_PER_NODE=N replaces it by nodes of N
     * consecutive ranks (a test aid, logged and recorded as such). */
    int node_size;
    const int *node_ranks;
    /* NULL, or why the adapter could not make a communicator (e.g. "MPI
     * is not initialised"): the call then fails on this rank alone with
     * RNGSNAP_E_INVALID and this text, calling nothing collective. */
    const char *unusable;
} rngsnap_comm;

/* Collective: every rank sends its checkpoint image to its node's
 * leader, which writes the node's file into folder dir (created if
 * missing; one level); once every node's file is durably written, rank 0
 * commits the checkpoint by writing the folder's manifest last
 * (temporary file, fsync, rename, folder fsync), mapping every rank to
 * its bytes (file, offset, length, checksum) and coordinates.  Flags as
 * rngsnap_save (RNGSNAP_SAVE_REPLACE: a committed folder may be
 * replaced; the previous checkpoint stays loadable in full until the new
 * manifest is in place), and RNGSNAP_SAVE_PER_RANK_FILES.
 * The context's rank and world size must equal comm's (else
 * RNGSNAP_E_INVALID).  Every rank returns the same code; on failure the
 * message on every rank names the first failing rank and why. */
RNGSNAP_API int rngsnap_save_ranks(rngsnap *ctx, const rngsnap_comm *comm,
                                   const char *dir, unsigned flags);
/* Collective: rank 0 verifies the manifest and sends each rank its
 * record; every rank reads and verifies only its own bytes (checksum,
 * registry match, coordinates); only when every rank is ready does any
 * rank change its live state, and if any rank then fails, every rank
 * rolls back.  Another world size is RNGSNAP_E_MISMATCH unless flags has
 * RNGSNAP_LOAD_FORK.  Every rank returns the same code. */
RNGSNAP_API int rngsnap_load_ranks(rngsnap *ctx, const rngsnap_comm *comm,
                                   const char *dir, unsigned flags);

/* ---- streams ----------------------------------------------------------- */

RNGSNAP_API int rngsnap_stream_find(rngsnap *ctx, const char *backend,
                                    int device, const char *name,
                                    rngsnap_stream **out);
RNGSNAP_API size_t rngsnap_stream_count(const rngsnap *ctx);
RNGSNAP_API rngsnap_stream *rngsnap_stream_at(rngsnap *ctx, size_t i);
RNGSNAP_API const char *rngsnap_stream_backend(const rngsnap_stream *s);
RNGSNAP_API int rngsnap_stream_device(const rngsnap_stream *s);
RNGSNAP_API const char *rngsnap_stream_name(const rngsnap_stream *s);
RNGSNAP_API rngsnap_memory rngsnap_stream_memory(const rngsnap_stream *s);
/* The stream's current Philox position, without advancing it
 * (RNGSNAP_E_UNAVAILABLE for a backend whose state is not Philox). */
RNGSNAP_API int rngsnap_stream_position(rngsnap_stream *s,
                                        rngsnap_philox *at);

/* Draw n values of dist into out (memory per rngsnap_stream_memory). */
RNGSNAP_API int rngsnap_generate(rngsnap_stream *s, rngsnap_dist dist,
                                 void *out, size_t n);
/* Hand the next n words to the caller's own kernels: *at is the position
 * of the first reserved word; the stream advances by n (0: report only). */
RNGSNAP_API int rngsnap_reserve(rngsnap_stream *s, uint64_t n,
                                rngsnap_philox *at);

/* Keyed derivation (docs/user-guide.md, "Keyed streams"): the Philox
 * position of key (k0, k1) of s, e.g. (epoch, sample index) for a
 * data-loader worker.  A pure function of s's seed and subsequence (its
 * seeding) and the key: independent of s's offset, of the process and of
 * call order.  It never overlaps s's own draws (another subsequence), and
 * two keys share a Philox stream only if a 63-bit hash collides.  Refused
 * (RNGSNAP_E_ORDER) before the load of a context opened with
 * RNGSNAP_RESUME.  Allowed in a fork() child, where non-keyed draws are
 * refused ("Processes", at the top): the fix for a forked worker. */
RNGSNAP_API int rngsnap_derive(rngsnap_stream *s, uint64_t k0, uint64_t k1,
                               rngsnap_philox *at);
/* Draw n values of dist starting at *at with s's backend (out in the
 * memory rngsnap_stream_memory gives), then advance at->offset by the
 * words used; s's own position is unchanged.  With rngsnap_derive this
 * makes a keyed stream. */
RNGSNAP_API int rngsnap_generate_at(rngsnap_stream *s, rngsnap_philox *at,
                                    rngsnap_dist dist, void *out, size_t n);

/* The engine of the built-in backends, for apps and out-of-tree plugins
 * (docs/engine.md, "The engine for every backend"): fill out[0..n) (host
 * memory) with n values of dist drawn from the Philox4x32-10 position
 * *at (curand_init terms) and advance at->offset by the words used,
 * rngsnap_dist_words(dist, n): the same bits as the cpu backend from the
 * same position, cuRAND-exact for the RNGSNAP_CURAND_* dists, on the
 * best SIMD path of this processor (RNGSNAP_PHILOX_ISA forces one).  The
 * position is the whole state: an odd count of normals drops the last
 * pair's second value (no spare is kept anywhere), so drawing in pieces
 * equals one draw when every piece but the last has an even count of
 * normals.  Thread-safe (no shared state but the ISA choice, made once).
 * Returns RNGSNAP_OK; RNGSNAP_E_INVALID (at NULL, unknown dist, out NULL
 * with n > 0, or the 64-bit offset would wrap), *at then unchanged;
 * RNGSNAP_E_CONFIG when RNGSNAP_PHILOX_ISA names a path that is unknown
 * or that this processor lacks.  Plugins get the same function as
 * rngsnap_host.philox_generate (docs/plugin-guide.md). */
RNGSNAP_API int rngsnap_philox_generate(rngsnap_philox *at, rngsnap_dist dist,
                                        void *out, size_t n);
/* Words of the stream that n values of dist use (what the two functions
 * above add to the offset); 0 for an unknown dist. */
RNGSNAP_API uint64_t rngsnap_dist_words(rngsnap_dist dist, size_t n);

/* Size in bytes of one value of dist, and words of the stream it uses. */
RNGSNAP_API size_t rngsnap_dist_size(rngsnap_dist dist);
RNGSNAP_API const char *rngsnap_dist_name(rngsnap_dist dist);

/* ---- backends (for listing tools) -------------------------------------- */

typedef struct rngsnap_backend_info {
    const char *name;        /* section name after "backend."             */
    const char *plugin_path; /* absolute path of the loaded .so, or the
                                paths tried when it could not be loaded    */
    const char *version;     /* plugin version string, NULL if not loaded */
    const char *status;      /* plugin's one-line status, e.g. emulation  */
    const char *reason;      /* why unavailable/skipped, else NULL        */
    int required;
    int available;           /* has at least one device                   */
    int skipped;             /* optional and unavailable: not in registry */
    int emulated;            /* devices are emulated in host memory       */
    int device_count;
    size_t stream_names;     /* number of stream names per device         */
} rngsnap_backend_info;

RNGSNAP_API size_t rngsnap_backend_count(const rngsnap *ctx);
RNGSNAP_API int rngsnap_backend_get(const rngsnap *ctx, size_t i,
                                    rngsnap_backend_info *out);
RNGSNAP_API const char *rngsnap_backend_device_name(const rngsnap *ctx,
                                                    size_t backend,
                                                    int device);
RNGSNAP_API const char *rngsnap_backend_stream_name(const rngsnap *ctx,
                                                    size_t backend,
                                                    size_t i);

/* ---- checkpoint files, read without a registry (inspect/verify/diff) --- */

typedef struct rngsnap_file rngsnap_file;

typedef enum rngsnap_section_kind {
    RNGSNAP_SECTION_STREAM = 1, /* one registry entry's state */
    RNGSNAP_SECTION_APP = 2     /* one registered app state   */
} rngsnap_section_kind;

typedef struct rngsnap_file_header {
    uint32_t format_version;
    char library_version[16]; /* NUL-terminated */
    int32_t rank, world_size;
    int64_t created_unix;     /* seconds since the epoch (UTC) */
    uint32_t section_count;
    uint64_t file_size;
    uint64_t file_checksum;   /* XXH3-64 of the file, see docs/format.md */
} rngsnap_file_header;

typedef struct rngsnap_file_section {
    rngsnap_section_kind kind;
    const char *backend;  /* stream sections; NULL for app state */
    int device;           /* stream sections; -1 for app state   */
    const char *name;     /* stream name or app state name       */
    uint32_t state_format;
    size_t state_size;
    const void *state;
    uint64_t checksum;    /* the section's stored (verified) checksum */
} rngsnap_file_section;

/* Read and verify the whole file (structure and every checksum).  On
 * failure returns RNGSNAP_E_IO / RNGSNAP_E_CORRUPT and writes the reason
 * into err (if errlen > 0); *out is NULL. */
RNGSNAP_API int rngsnap_file_open(const char *path, rngsnap_file **out,
                                  char *err, size_t errlen);
RNGSNAP_API void rngsnap_file_close(rngsnap_file *f);
RNGSNAP_API const rngsnap_file_header *
rngsnap_file_header_get(const rngsnap_file *f);
RNGSNAP_API size_t rngsnap_file_section_count(const rngsnap_file *f);
RNGSNAP_API const rngsnap_file_section *
rngsnap_file_section_at(const rngsnap_file *f, size_t i);
/* Decode a section's state as a Philox position; RNGSNAP_E_INVALID if the
 * state format is not the built-in Philox format. */
RNGSNAP_API int rngsnap_philox_decode(const rngsnap_file_section *sec,
                                      rngsnap_philox *out);

/* A committed multi-rank folder, read without a registry (tools). */
typedef struct rngsnap_manifest rngsnap_manifest;

typedef struct rngsnap_manifest_info {
    uint32_t format_version; /* 1: one file per rank; 2: nodes (or ranks
                                with RNGSNAP_SAVE_PER_RANK_FILES)       */
    char id[33];           /* checkpoint id, 32 lowercase hex digits       */
    char forked_from[33];  /* id of the checkpoint a fork in this job's
                              history started from; "" when none           */
    int32_t world_size;
    int64_t created_unix;
    size_t app_count;      /* app states recorded (rank 0's list)          */
    /* appended in version 2 (version 1: world_size files, 0) */
    size_t file_count;     /* data files the manifest names              */
    uint32_t emulated_ranks_per_node; /* RNGSNAP_RANKS_PER_NODE at save,
                                         0 when nodes were real          */
} rngsnap_manifest_info;

typedef struct rngsnap_manifest_rank {
    const char *file;      /* name of the file inside the folder holding
                              this rank's image                         */
    uint64_t size;         /* bytes of this rank's image                   */
    uint64_t checksum;     /* XXH3-64 of this rank's image                 */
    /* appended in version 2 (version 1: 0, the rank, "") */
    uint64_t offset;       /* where the image starts in file               */
    size_t file_index;     /* its file, for rngsnap_manifest_file_at        */
    const char *coords;    /* rngsnap_set_coords at save; "" when none      */
} rngsnap_manifest_rank;

/* One data file of a folder: a node's (node-NNNNN.<id>.rngsnap, the
 * images of its ranks end to end, ascending) or a rank's. */
typedef struct rngsnap_manifest_file {
    const char *name;      /* file name inside the folder                  */
    int32_t first_rank;    /* its lowest rank (the node's leader)          */
    uint32_t rank_count;   /* images it holds                              */
    uint64_t size;         /* bytes                                        */
    uint64_t checksum;     /* XXH3-64 of the whole file                    */
} rngsnap_manifest_file;

typedef struct rngsnap_manifest_app {
    const char *name;
    uint64_t checksum;     /* XXH3-64 of rank 0's state bytes              */
    int same_on_all_ranks; /* every saved rank had these exact bytes       */
} rngsnap_manifest_app;

/* Read and verify dir's manifest (structure and checksum; rank files are
 * not read).  RNGSNAP_E_IO (no manifest: not a committed checkpoint) or
 * RNGSNAP_E_CORRUPT with the reason in err. */
RNGSNAP_API int rngsnap_manifest_open(const char *dir, rngsnap_manifest **out,
                                      char *err, size_t errlen);
RNGSNAP_API void rngsnap_manifest_close(rngsnap_manifest *m);
RNGSNAP_API const rngsnap_manifest_info *
rngsnap_manifest_info_get(const rngsnap_manifest *m);
/* NULL when rank is out of range. */
RNGSNAP_API const rngsnap_manifest_rank *
rngsnap_manifest_rank_at(const rngsnap_manifest *m, int rank);
RNGSNAP_API const rngsnap_manifest_app *
rngsnap_manifest_app_at(const rngsnap_manifest *m, size_t i);
/* NULL when i >= info.file_count. */
RNGSNAP_API const rngsnap_manifest_file *
rngsnap_manifest_file_at(const rngsnap_manifest *m, size_t i);
/* Open rank's image as rngsnap_file_open does a file, after checking its
 * length and XXH3-64 against the manifest (RNGSNAP_E_CORRUPT naming the
 * file, offset and rank when they differ).  Reads only those bytes. */
RNGSNAP_API int rngsnap_manifest_open_rank(const rngsnap_manifest *m,
                                           int rank, rngsnap_file **out,
                                           char *err, size_t errlen);

/* ---- divergence ledger (docs/user-guide.md, "Why does my resumed run
 * differ?"; format in docs/format.md) ----------------------------------- */

/* Open (or continue: a resumed job) the ledger at path, one file per
 * rank; a path ending in '/' or naming a folder means
 * path/rank-NNNNN.ledger for this context's rank (set the rank first).
 * flags: 0. */
RNGSNAP_API int rngsnap_ledger_open(rngsnap *ctx, const char *path,
                                    unsigned flags);
/* Note a value (a loss, a tensor digest) for the next step's record; the
 * same name noted again before the step replaces the value. */
RNGSNAP_API int rngsnap_ledger_note(rngsnap *ctx, const char *name,
                                    const void *value, size_t size);
/* Append one record: step, every entry's exact position, a digest of
 * every app state, the notes since the last step (one write, no fsync). */
RNGSNAP_API int rngsnap_ledger_step(rngsnap *ctx, uint64_t step);
/* fsync and close the ledger (rngsnap_close closes it too). */
RNGSNAP_API int rngsnap_ledger_close(rngsnap *ctx);

/* ---- errors ------------------------------------------------------------ */

/* Detailed message of the last error on ctx; with NULL, the last failed
 * rngsnap_open of this thread.  Never NULL. */
RNGSNAP_API const char *rngsnap_errmsg(const rngsnap *ctx);
/* Short fixed text of a return code.  Never NULL. */
RNGSNAP_API const char *rngsnap_strerror(int code);
/* Name of a return code, e.g. "RNGSNAP_E_MISMATCH".  Never NULL. */
RNGSNAP_API const char *rngsnap_error_name(int code);

RNGSNAP_API const char *rngsnap_version(void);

#ifdef __cplusplus
}
#endif
#endif /* RNGSNAP_H */
