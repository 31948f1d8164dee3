/*
 * mpi_check.c - one rank of the mpirun tests of librngsnap_mpi
 * (run_mpi.py starts it under mpirun; see there for the scenarios).
 *
 *   mpi_check save   DIR gen=G [replace] [nosync] [perrank] [shared] [killapp=R] [expect=CODE]
 *   mpi_check check  DIR gens=G[,G2] [absent]
 *   mpi_check fail   DIR gen=G code=CODE rank=R [appfail]
 *   mpi_check fork   DIR gen=G saved=W out=PATH
 *   mpi_check forkapps DIR          (fork refused: app states differ)
 *   mpi_check forkbad DIR gen=G bad=B kind=damaged|truncated|missing
 *                                   (fork refused: saved rank B's file)
 *   mpi_check invalid DIR
 *   mpi_check split   DIR           (MPI_Comm_split halves; intercomm refused)
 *   mpi_check noinit  DIR           (MPI not initialised / finalised)
 *
 * Every rank checks what a user sees (codes, messages, live states) and
 * prints "rank R: FAIL ..." on a failure; the exit code is 1 on any rank
 * that failed, so mpirun fails.  Kill points: mpi_kill.h.
 */
#include "mpi_kill.h"
#include "mpi_state.h"

#include <rngsnap/mpi.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

static int rank, world, failed;
static const char *mode, *dir;
static int argc_g;
static char **argv_g;

static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "rank %d of %d: FAIL %s %s: ", rank, world, mode, dir);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    failed = 1;
}

/* key=value argument, or flag presence ("1"); NULL when absent. */
static const char *opt(const char *key)
{
    size_t k = strlen(key);
    for (int i = 3; i < argc_g; i++) {
        if (strncmp(argv_g[i], key, k) == 0 && argv_g[i][k] == '=')
            return argv_g[i] + k + 1;
        if (strcmp(argv_g[i], key) == 0)
            return "1";
    }
    return NULL;
}

static long opt_long(const char *key, long def)
{
    const char *v = opt(key);
    return v ? strtol(v, NULL, 10) : def;
}

static int code_of(const char *name)
{
    for (int c = 0; c < 64; c++)
        if (strcmp(rngsnap_error_name(c), name) == 0)
            return c;
    fprintf(stderr, "unknown code name %s\n", name);
    exit(2);
}

static rngsnap *open_ctx(unsigned flags, int shared_only)
{
    rngsnap *ctx = NULL;
    const char *ini = getenv("RNGSNAP_MPI_INI");
    if (rngsnap_open(&ctx, ini, flags)) {
        fail("rngsnap_open(%s): %s", ini ? ini : "(default)", rngsnap_errmsg(NULL));
        return NULL;
    }
    int r = -1, w = -1;
    rngsnap_get_rank(ctx, &r, &w);
    if (r != rank || w != world)
        fail("context rank %d/%d from the launcher's variables, MPI says %d/%d",
             r, w, rank, world);
    if (apps_register(ctx, shared_only))
        fail("register_state: %s", rngsnap_errmsg(ctx));
    return ctx;
}

/* Every rank got the same code: the collective promise of the API. */
static void same_code_everywhere(int rc, const char *what)
{
    int *all = malloc(sizeof(int) * (size_t)world);
    MPI_Allgather(&rc, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < world; r++)
        if (all[r] != rc)
            fail("%s: this rank got %s, rank %d got %s", what,
                 rngsnap_error_name(rc), r, rngsnap_error_name(all[r]));
    free(all);
}

static void expect_code(rngsnap *ctx, int rc, int want, const char *what)
{
    if (rc != want)
        fail("%s returned %s, expected %s (%s)", what, rngsnap_error_name(rc),
             rngsnap_error_name(want), rc ? rngsnap_errmsg(ctx) : "no error");
    same_code_everywhere(rc, what);
}

static void expect_msg(rngsnap *ctx, const char *needle, const char *what)
{
    const char *msg = rngsnap_errmsg(ctx);
    if (!strstr(msg, needle))
        fail("%s: message does not name \"%s\": %s", what, needle, msg);
}

/* The message names number n as a word, outside the folder's path (which
 * may hold digits of its own). */
static void expect_number(rngsnap *ctx, long n, const char *what)
{
    char msg[2048], num[32];
    snprintf(msg, sizeof msg, "%s", rngsnap_errmsg(ctx));
    for (char *p; (p = strstr(msg, dir));)
        memset(p, '_', strlen(dir));
    snprintf(num, sizeof num, "%ld", n);
    size_t k = strlen(num);
    for (const char *p = msg; (p = strstr(p, num)); p += k) {
        int before = p > msg && p[-1] >= '0' && p[-1] <= '9';
        int after = p[k] >= '0' && p[k] <= '9';
        if (!before && !after)
            return;
    }
    fail("%s: message does not name %ld: %s", what, n, rngsnap_errmsg(ctx));
}

/* Live app states equal generation g's. */
static void check_apps(uint64_t g, int shared_only, const char *what)
{
    for (int a = 0; a < APP_COUNT; a++) {
        if (shared_only && a != APP_SHARED)
            continue;
        unsigned char want[APP_MAX];
        size_t len;
        app_expected(a, g, rank, want, &len);
        if (apps[a].len != len || memcmp(apps[a].buf, want, len))
            fail("%s: app state %s differs from generation %" PRIu64, what,
                 apps[a].name, g);
    }
}

/* ctx's streams equal a fresh context's set to generation g. */
static void check_streams(rngsnap *ctx, uint64_t g, const char *what)
{
    rngsnap *ref = open_ctx(0, 0);
    char why[512];
    if (!ref)
        return;
    if (streams_set(ref, g))
        fail("reference: %s", rngsnap_errmsg(ref));
    else if (streams_compare(ctx, ref, why, sizeof why))
        fail("%s: %s (generation %" PRIu64 ")", what, why, g);
    rngsnap_close(ref);
}

static int do_save(void)
{
    uint64_t g = (uint64_t)opt_long("gen", 0);
    int shared = opt("shared") != NULL;
    rngsnap *ctx = open_ctx(0, shared);
    if (!ctx)
        return 1;
    if (streams_set(ctx, g))
        fail("seed: %s", rngsnap_errmsg(ctx));
    apps_set(g, rank);
    if (opt_long("killapp", -1) == rank)
        apps[APP_BLOB].kill_save = 1;
    unsigned flags = (opt("replace") ? RNGSNAP_SAVE_REPLACE : 0)
                     | (opt("nosync") ? RNGSNAP_SAVE_NO_SYNC : 0)
                     | (opt("perrank") ? RNGSNAP_SAVE_PER_RANK_FILES : 0);
    const char *expect = opt("expect");
    kill_setup(rank);
    apps[APP_BLOB].armed = 1;
    kill_arm(1);
    int rc = rngsnap_mpi_save(ctx, MPI_COMM_WORLD, dir, flags);
    kill_arm(0);
    apps[APP_BLOB].armed = 0;
    expect_code(ctx, rc, expect ? code_of(expect) : RNGSNAP_OK, "rngsnap_mpi_save");
    /* Ranks make different numbers of calls (a leader receives what its
     * node's ranks send): each says its own. */
    printf("calls %d %ld\n", rank, kill_calls());
    printf("io %d %ld\n", rank, kill_io_calls());
    fflush(stdout);
    rngsnap_close(ctx);
    return 0;
}

static int do_check(void)
{
    const char *gens = opt("gens");
    rngsnap *ctx = open_ctx(RNGSNAP_RESUME, 0);
    if (!ctx)
        return 1;
    int rc = rngsnap_mpi_load(ctx, MPI_COMM_WORLD, dir, 0);
    same_code_everywhere(rc, "rngsnap_mpi_load");
    if (rc == RNGSNAP_E_IO && opt("absent")) {
        /* An uncommitted folder (no manifest): refused alike everywhere. */
        if (rank == 0)
            printf("GEN none (%s: %s)\n", rngsnap_error_name(rc), rngsnap_errmsg(ctx));
        rngsnap_close(ctx);
        return 0;
    }
    if (rc) {
        fail("rngsnap_mpi_load returned %s: %s", rngsnap_error_name(rc),
             rngsnap_errmsg(ctx));
        rngsnap_close(ctx);
        return 1;
    }
    uint64_t g = apps_marker(rank);
    int allowed = 0;
    for (const char *p = gens; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : "")
        allowed |= strtoull(p, NULL, 10) == g;
    if (!allowed)
        fail("loaded generation %" PRIu64 ", expected one of %s", g, gens);
    uint64_t *all = malloc(sizeof(uint64_t) * (size_t)world);
    MPI_Allgather(&g, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, MPI_COMM_WORLD);
    for (int r = 0; r < world; r++)
        if (all[r] != g)
            fail("a mix: this rank loaded generation %" PRIu64 ", rank %d %" PRIu64,
                 g, r, all[r]);
    free(all);
    check_apps(g, 0, "after load");
    check_streams(ctx, g, "after load");
    if (rank == 0)
        printf("GEN %" PRIu64 "\n", g);
    rngsnap_close(ctx);
    return 0;
}

/* A live state at generation g, a load that must fail everywhere with
 * code, naming rank R first, and every live state unchanged after it. */
static int do_fail(void)
{
    uint64_t g = (uint64_t)opt_long("gen", 0);
    int bad = (int)opt_long("rank", 0);
    int want = code_of(opt("code") ? opt("code") : "?");
    rngsnap *ctx = open_ctx(0, 0);
    if (!ctx)
        return 1;
    if (streams_set(ctx, g))
        fail("seed: %s", rngsnap_errmsg(ctx));
    apps_set(g, rank);
    if (opt("appfail") && rank == bad)
        apps[APP_BLOB].fail_load = 1;
    rngsnap_philox before[256], after[256];
    size_t nb, na;
    if (positions_get(ctx, before, 256, &nb))
        fail("positions: %s", rngsnap_errmsg(ctx));
    int rc = rngsnap_mpi_load(ctx, MPI_COMM_WORLD, dir, 0);
    expect_code(ctx, rc, want, "rngsnap_mpi_load");
    char needle[64];
    snprintf(needle, sizeof needle, "rank %d of %d", bad, world);
    expect_msg(ctx, needle, "rngsnap_mpi_load");
    if (positions_get(ctx, after, 256, &na) || na != nb
        || memcmp(before, after, nb * sizeof before[0]))
        fail("a failed load changed a stream position");
    apps[APP_BLOB].fail_load = 0;
    check_apps(g, 0, "after the failed load");
    check_streams(ctx, g, "after the failed load");
    if (rank == 0)
        printf("refused: %s\n", rngsnap_errmsg(ctx));
    rngsnap_close(ctx);
    return 0;
}

/* Refused on another world size, then forked: draws written to
 * out.<rank> (run_mpi.py compares two forks), streams distinct across
 * every rank, the shared app state restored. */
static int do_fork(void)
{
    uint64_t g = (uint64_t)opt_long("gen", 0);
    long saved = opt_long("saved", 0);
    rngsnap *ctx = open_ctx(RNGSNAP_RESUME, 1);
    if (!ctx)
        return 1;
    int rc = rngsnap_mpi_load(ctx, MPI_COMM_WORLD, dir, 0);
    expect_code(ctx, rc, RNGSNAP_E_MISMATCH, "load without RNGSNAP_LOAD_FORK");
    expect_number(ctx, saved, "load without RNGSNAP_LOAD_FORK (saved size)");
    expect_number(ctx, world, "load without RNGSNAP_LOAD_FORK (current size)");
    expect_msg(ctx, "RNGSNAP_LOAD_FORK", "load without RNGSNAP_LOAD_FORK (way out)");
    if (rank == 0)
        printf("refused: %s\n", rngsnap_errmsg(ctx));
    rc = rngsnap_mpi_load(ctx, MPI_COMM_WORLD, dir, RNGSNAP_LOAD_FORK);
    expect_code(ctx, rc, RNGSNAP_OK, "load with RNGSNAP_LOAD_FORK");
    if (rc) {
        rngsnap_close(ctx);
        return 1;
    }
    check_apps(g, 1, "after the fork");
    size_t n = 0;
    rngsnap_philox pos[256];
    if (positions_get(ctx, pos, 256, &n))
        fail("positions: %s", rngsnap_errmsg(ctx));
    /* No two streams of the job share a Philox stream (seed, subsequence). */
    rngsnap_philox *all = malloc(sizeof pos[0] * n * (size_t)world);
    MPI_Allgather(pos, (int)(n * sizeof pos[0]), MPI_BYTE, all,
                  (int)(n * sizeof pos[0]), MPI_BYTE, MPI_COMM_WORLD);
    for (size_t i = 0; i < n * (size_t)world; i++)
        for (size_t j = i + 1; j < n * (size_t)world; j++)
            if (all[i].seed == all[j].seed && all[i].subsequence == all[j].subsequence)
                fail("streams %zu (rank %zu) and %zu (rank %zu) share seed %" PRIu64
                     " subsequence %" PRIu64, i % n, i / n, j % n, j / n,
                     all[i].seed, all[i].subsequence);
    free(all);
    char path[4096];
    snprintf(path, sizeof path, "%s.%d", opt("out"), rank);
    FILE *f = fopen(path, "w");
    for (size_t i = 0; f && i < n; i++) {
        rngsnap_stream *s = rngsnap_stream_at(ctx, i);
        uint32_t w[8];
        if (rngsnap_generate(s, RNGSNAP_U32, w, 8))
            fail("draw: %s", rngsnap_errmsg(ctx));
        fprintf(f, "%s/%d/%s %016" PRIx64 " %016" PRIx64 " %" PRIu64 " :",
                rngsnap_stream_backend(s), rngsnap_stream_device(s),
                rngsnap_stream_name(s), pos[i].seed, pos[i].subsequence,
                pos[i].offset);
        for (int k = 0; k < 8; k++)
            fprintf(f, " %08" PRIx32, w[k]);
        fputc('\n', f);
    }
    if (!f || fclose(f))
        fail("cannot write %s", path);
    rngsnap_close(ctx);
    return 0;
}

/* A fork needs every app state identical on all saved ranks. */
static int do_forkapps(void)
{
    rngsnap *ctx = open_ctx(RNGSNAP_RESUME, 0);
    if (!ctx)
        return 1;
    int rc = rngsnap_mpi_load(ctx, MPI_COMM_WORLD, dir, RNGSNAP_LOAD_FORK);
    expect_code(ctx, rc, RNGSNAP_E_MISMATCH, "fork with per-rank app states");
    expect_msg(ctx, "marker", "fork with per-rank app states");
    if (rank == 0)
        printf("refused: %s\n", rngsnap_errmsg(ctx));
    rngsnap_close(ctx);
    return 0;
}

/* The whole message every rank of a fork of dir must return when saved
 * rank bad's file is `kind` (the test damaged it so): the new rank that
 * checks that file (bad % world) is the first to fail.  0, or 1 when
 * the folder cannot tell what to expect. */
static int fork_refusal(int bad, const char *kind, char *out, size_t len)
{
    rngsnap_manifest *m;
    char err[1024], path[4096];
    if (rngsnap_manifest_open(dir, &m, err, sizeof err)) {
        fail("manifest: %s", err);
        return 1;
    }
    const rngsnap_manifest_info *info = rngsnap_manifest_info_get(m);
    const rngsnap_manifest_rank *r = rngsnap_manifest_rank_at(m, bad);
    int n = snprintf(out, len, "rank %d of %d: load_ranks %s: fork of %d "
                     "ranks onto %d: ", bad % world, world, dir,
                     (int)info->world_size, world);
    snprintf(path, sizeof path, "%s/%s", dir, r ? r->file : "?");
    FILE *f = fopen(path, "rb");
    unsigned char *buf = malloc(r ? (size_t)r->size + 1 : 1);
    size_t got = f && buf ? fread(buf, 1, (size_t)r->size + 1, f) : 0;
    if (f)
        fclose(f);
    int rc = 0;
    if (!strcmp(kind, "missing") && !f)
        snprintf(out + n, len - (size_t)n, "%s: cannot open: %s; nothing "
                 "restored", path, strerror(ENOENT));
    else if (!strcmp(kind, "truncated") && f && got < r->size)
        snprintf(out + n, len - (size_t)n, "%s: %zu bytes, the manifest "
                 "records %" PRIu64 " (truncated, grown, or another "
                 "checkpoint's file); nothing restored", path, got, r->size);
    else if (!strcmp(kind, "damaged") && f && got == r->size)
        snprintf(out + n, len - (size_t)n, "%s (rank %d's file): XXH3-64 "
                 "0x%016" PRIx64 ", the manifest of checkpoint %s records "
                 "0x%016" PRIx64 " (damaged, swapped, or another checkpoint's "
                 "file); nothing restored", path, bad,
                 (uint64_t)XXH3_64bits(buf, got), info->id, r->checksum);
    else {
        fail("saved rank %d's file %s is not %s", bad, path, kind);
        rc = 1;
    }
    free(buf);
    rngsnap_manifest_close(m);
    return rc;
}

/* A fork reads its streams from no rank file, yet it must refuse a
 * folder with one damaged, truncated or missing: every rank gets the
 * same code and the exact message, and keeps its live state
 * (generation g: positions, the next draws, the shared app state). */
static int do_forkbad(void)
{
    uint64_t g = (uint64_t)opt_long("gen", 0);
    int bad = (int)opt_long("bad", 0);
    const char *kind = opt("kind") ? opt("kind") : "?";
    int want = !strcmp(kind, "missing") ? RNGSNAP_E_IO : RNGSNAP_E_CORRUPT;
    char msg[8192];
    rngsnap *ctx = open_ctx(0, 1);
    if (!ctx)
        return 1;
    if (fork_refusal(bad, kind, msg, sizeof msg)) {
        rngsnap_close(ctx);
        return 1;
    }
    if (streams_set(ctx, g))
        fail("seed: %s", rngsnap_errmsg(ctx));
    apps_set(g, rank);
    rngsnap_philox before[256], after[256];
    size_t nb, na;
    if (positions_get(ctx, before, 256, &nb))
        fail("positions: %s", rngsnap_errmsg(ctx));
    int rc = rngsnap_mpi_load(ctx, MPI_COMM_WORLD, dir, RNGSNAP_LOAD_FORK);
    expect_code(ctx, rc, want, "fork of a folder with a bad rank file");
    if (strcmp(rngsnap_errmsg(ctx), msg))
        fail("message\n  %s\nexpected\n  %s", rngsnap_errmsg(ctx), msg);
    if (positions_get(ctx, after, 256, &na) || na != nb
        || memcmp(before, after, nb * sizeof before[0]))
        fail("a refused fork changed a stream position");
    check_apps(g, 1, "after the refused fork");
    check_streams(ctx, g, "after the refused fork");
    if (rank == 0)
        printf("refused: %s\n", rngsnap_errmsg(ctx));
    rngsnap_close(ctx);
    return 0;
}

/* The context's rank/world must equal the communicator's. */
static int do_invalid(void)
{
    rngsnap *ctx = open_ctx(0, 0);
    if (!ctx)
        return 1;
    if (streams_set(ctx, 1))
        fail("seed: %s", rngsnap_errmsg(ctx));
    static const struct { int drank, dworld; } cases[] = {{1, 0}, {0, 1}};
    for (size_t c = 0; c < 2; c++) {
        int r = (rank + cases[c].drank) % world, w = world + cases[c].dworld;
        if (world == 1 && cases[c].drank)
            continue; /* one rank: no other rank to swap with */
        rngsnap_set_rank(ctx, r, w);
        /* Every rank reads rank 0's message: both of rank 0's pairs. */
        char comm_pair[64], ctx_pair[64];
        snprintf(comm_pair, sizeof comm_pair, "rank 0 of %d", world);
        snprintf(ctx_pair, sizeof ctx_pair, "rank %d of %d", cases[c].drank % world, w);
        int rc = rngsnap_mpi_save(ctx, MPI_COMM_WORLD, dir, RNGSNAP_SAVE_REPLACE);
        expect_code(ctx, rc, RNGSNAP_E_INVALID, "save with a wrong rank/world");
        expect_msg(ctx, comm_pair, "save with a wrong rank/world (communicator)");
        expect_msg(ctx, ctx_pair, "save with a wrong rank/world (context)");
        rc = rngsnap_mpi_load(ctx, MPI_COMM_WORLD, dir, 0);
        expect_code(ctx, rc, RNGSNAP_E_INVALID, "load with a wrong rank/world");
        expect_msg(ctx, comm_pair, "load with a wrong rank/world (communicator)");
        expect_msg(ctx, ctx_pair, "load with a wrong rank/world (context)");
        if (rank == 0)
            printf("refused: %s\n", rngsnap_errmsg(ctx));
    }
    /* Bad arguments, alike on every rank: refused, nothing written. */
    rngsnap_set_rank(ctx, rank, world);
    int rc = rngsnap_mpi_save(ctx, MPI_COMM_WORLD, NULL, 0);
    expect_code(ctx, rc, RNGSNAP_E_INVALID, "save into a NULL folder");
    rc = rngsnap_mpi_save(ctx, MPI_COMM_WORLD, dir, 0x80u);
    expect_code(ctx, rc, RNGSNAP_E_INVALID, "save with an unknown flag");
    rc = rngsnap_mpi_load(ctx, MPI_COMM_WORLD, dir, 0x80u);
    expect_code(ctx, rc, RNGSNAP_E_INVALID, "load with an unknown flag");
    rc = rngsnap_mpi_save(ctx, MPI_COMM_NULL, dir, 0);
    expect_code(ctx, rc, RNGSNAP_E_INVALID, "save over MPI_COMM_NULL");
    expect_msg(ctx, "MPI_COMM_NULL", "save over MPI_COMM_NULL");
    rc = rngsnap_mpi_load(NULL, MPI_COMM_WORLD, dir, 0);
    expect_code(NULL, rc, RNGSNAP_E_INVALID, "load into a NULL context");
    if (access(dir, F_OK) == 0)
        fail("a refused save created %s", dir);
    rngsnap_close(ctx);
    return 0;
}

/* The job's communicator is the one passed in: two halves of the job
 * (MPI_Comm_split) each save and restore their own folder; an
 * inter-communicator between them is refused. */
static int do_split(void)
{
    int color = rank % 2, srank, ssize;
    MPI_Comm sub, inter;
    MPI_Comm_split(MPI_COMM_WORLD, color, rank, &sub);
    MPI_Comm_rank(sub, &srank);
    MPI_Comm_size(sub, &ssize);
    rngsnap *ctx = open_ctx(0, 0);
    if (!ctx)
        return 1;
    rngsnap_set_rank(ctx, srank, ssize);
    if (streams_set(ctx, 20 + (uint64_t)color))
        fail("seed: %s", rngsnap_errmsg(ctx));
    apps_set(20 + (uint64_t)color, srank);
    app_state saved[APP_COUNT];
    memcpy(saved, apps, sizeof saved);
    rngsnap_philox before[256], after[256];
    size_t nb = 0, na = 0;
    positions_get(ctx, before, 256, &nb);
    char d[4096];
    snprintf(d, sizeof d, "%s-half%d", dir, color);
    int rc = rngsnap_mpi_save(ctx, sub, d, RNGSNAP_SAVE_REPLACE);
    expect_code(ctx, rc, RNGSNAP_OK, "save over a split communicator");
    streams_set(ctx, 99);
    apps_set(99, srank);
    rc = rngsnap_mpi_load(ctx, sub, d, 0);
    expect_code(ctx, rc, RNGSNAP_OK, "load over a split communicator");
    positions_get(ctx, after, 256, &na);
    if (na != nb || memcmp(before, after, nb * sizeof before[0]))
        fail("split communicator: stream positions not restored");
    for (int a = 0; a < APP_COUNT; a++)
        if (apps[a].len != saved[a].len || memcmp(apps[a].buf, saved[a].buf, saved[a].len))
            fail("split communicator: app state %s not restored", apps[a].name);
    MPI_Intercomm_create(sub, 0, MPI_COMM_WORLD, color ? 0 : 1, 7, &inter);
    rc = rngsnap_mpi_save(ctx, inter, d, RNGSNAP_SAVE_REPLACE);
    expect_code(ctx, rc, RNGSNAP_E_INVALID, "save over an inter-communicator");
    rc = rngsnap_mpi_load(ctx, inter, d, 0);
    expect_code(ctx, rc, RNGSNAP_E_INVALID, "load over an inter-communicator");
    expect_msg(ctx, "inter-communicator", "load over an inter-communicator");
    MPI_Comm_free(&inter);
    MPI_Comm_free(&sub);
    if (rank == 0)
        printf("split: halves of %d ranks saved and restored their own folders\n", world);
    rngsnap_close(ctx);
    return 0;
}

/* Before MPI_Init and after MPI_Finalize: refused on this rank alone. */
static int noinit_try(rngsnap *ctx, const char *when, const char *why)
{
    int rc = rngsnap_mpi_save(ctx, MPI_COMM_WORLD, dir, RNGSNAP_SAVE_REPLACE);
    if (rc != RNGSNAP_E_INVALID)
        fail("save %s returned %s", when, rngsnap_error_name(rc));
    expect_msg(ctx, why, when);
    rc = rngsnap_mpi_load(ctx, MPI_COMM_WORLD, dir, 0);
    if (rc != RNGSNAP_E_INVALID)
        fail("load %s returned %s", when, rngsnap_error_name(rc));
    expect_msg(ctx, why, when);
    printf("%s: %s\n", when, rngsnap_errmsg(ctx));
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: see the top of mpi_check.c\n");
        return 2;
    }
    argc_g = argc;
    argv_g = argv;
    mode = argv[1];
    dir = argv[2];
    if (strcmp(mode, "noinit") == 0) {
        rngsnap *ctx = NULL;
        if (rngsnap_open(&ctx, getenv("RNGSNAP_MPI_INI"), 0)) {
            fprintf(stderr, "rngsnap_open: %s\n", rngsnap_errmsg(NULL));
            return 1;
        }
        noinit_try(ctx, "before MPI_Init", "MPI is not initialised");
        MPI_Init(&argc, &argv);
        MPI_Finalize();
        noinit_try(ctx, "after MPI_Finalize", "MPI has already been finalised");
        rngsnap_close(ctx);
        return failed;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    static const struct { const char *name; int (*run)(void); } modes[] = {
        {"save", do_save},         {"check", do_check},   {"fail", do_fail},
        {"fork", do_fork},         {"forkapps", do_forkapps},
        {"forkbad", do_forkbad},
        {"invalid", do_invalid},   {"split", do_split}};
    int known = 0;
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        if (strcmp(mode, modes[i].name) == 0) {
            modes[i].run();
            known = 1;
        }
    if (!known)
        fail("unknown mode");
    /* The job fails if any rank failed (each rank prints its own). */
    int any = 0;
    MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any;
}
