/*
 * make_folder.c - writes an N-rank checkpoint folder for the tests of
 * `rngsnap verify/inspect/diff DIR` (test_folders.py), with N threads of
 * one process joined by the in-process communicator (tests/common/
 * thread_comm.h) and rngsnap_save_ranks: the same folder an N-rank MPI
 * job writes.
 *
 * usage: make_folder INI DIR NRANKS SEED [EXTRA_RANK EXTRA_WORDS]
 *                    [--same-apps] [--fork SRC] [--nodes N]
 *
 * One file per rank (RNGSNAP_SAVE_PER_RANK_FILES) unless --nodes N: one
 * file per node of N consecutive ranks.
 *
 * Every rank seeds with SEED, draws 100*rank + 7 words from cpu:0/dropout
 * (so every rank's position differs) and, on EXTRA_RANK only,
 * EXTRA_WORDS words from cpu:0/augment; it registers two app states:
 * "test.step" (8 bytes, the same on every rank) and "test.rank" (8
 * bytes, its own on each rank; rank 0's on every rank with --same-apps).
 * --fork SRC: instead of seeding, load folder SRC with RNGSNAP_LOAD_FORK
 * (SRC of another world size, its app states identical on all ranks), so
 * that the new folder's manifest records the fork.  Printed after the
 * save, in rank order, what the test compares inspect's output with:
 *   stream RANK BACKEND DEVICE NAME SEED SUBSEQUENCE OFFSET
 *   app RANK NAME HEX
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rngsnap.h>

#include "thread_comm.h"

#define MAX_RANKS 64
#define MAX_LINES 64

typedef struct job {
    const char *ini, *dir, *fork_src;
    int nranks, extra_rank, same_apps, nodes;
    uint64_t seed, extra_words;
    char lines[MAX_RANKS][MAX_LINES][160]; /* what each rank prints */
    int nlines[MAX_RANKS];
} job;

/* An app state of 8 bytes held by the rank's thread. */
static size_t st_size(void *u)
{
    (void)u;
    return 8;
}

static int st_save(void *u, void *buf, size_t len)
{
    memcpy(buf, u, len < 8 ? len : 8);
    return 0;
}

static int st_load(void *u, const void *buf, size_t len)
{
    if (len != 8)
        return 1;
    memcpy(u, buf, 8);
    return 0;
}

static const rngsnap_state_ops st_ops = {st_size, st_save, st_load};

static void say(job *j, int rank, const char *line)
{
    if (j->nlines[rank] < MAX_LINES)
        snprintf(j->lines[rank][j->nlines[rank]++], 160, "%s", line);
}

static int draw(rngsnap *ctx, const char *name, uint64_t words)
{
    rngsnap_stream *s;
    int rc = rngsnap_stream_find(ctx, "cpu", 0, name, &s);
    uint32_t buf[256];
    while (rc == RNGSNAP_OK && words) {
        size_t n = words < 256 ? (size_t)words : 256;
        rc = rngsnap_generate(s, RNGSNAP_U32, buf, n);
        words -= n;
    }
    return rc;
}

/* One rank: open, seed, draw, save collectively, report. */
static int rank_body(int rank, const rngsnap_comm *comm, void *arg)
{
    job *j = arg;
    uint8_t step[8], mine[8];
    for (int i = 0; i < 8; i++) {
        step[i] = (uint8_t)(j->seed >> (8 * i)) ^ 0x5a;
        mine[i] = (uint8_t)((j->same_apps ? 0 : rank) * 16 + i);
    }
    rngsnap *ctx;
    int rc = rngsnap_open(&ctx, j->ini, 0);
    if (rc) {
        fprintf(stderr, "rank %d: open: %s\n", rank, rngsnap_errmsg(NULL));
        return rc;
    }
    rc = rngsnap_set_rank(ctx, rank, comm->size);
    if (!rc)
        rc = rngsnap_register_state(ctx, "test.step", &st_ops, step);
    if (!rc)
        rc = rngsnap_register_state(ctx, "test.rank", &st_ops, mine);
    if (!rc && j->fork_src)
        rc = rngsnap_load_ranks(ctx, comm, j->fork_src, RNGSNAP_LOAD_FORK);
    else if (!rc)
        rc = rngsnap_seed_all(ctx, j->seed);
    if (!rc)
        rc = draw(ctx, "dropout", 100u * (unsigned)rank + 7);
    if (!rc && rank == j->extra_rank)
        rc = draw(ctx, "augment", j->extra_words);
    /* Every rank takes part in the save, whatever happened before. */
    int save = rngsnap_save_ranks(ctx, comm, j->dir,
                                  j->nodes ? 0 : RNGSNAP_SAVE_PER_RANK_FILES);
    if (rc || save) {
        fprintf(stderr, "rank %d: %s\n", rank, rngsnap_errmsg(ctx));
        rngsnap_close(ctx);
        return rc ? rc : save;
    }
    char line[160];
    for (size_t i = 0; i < rngsnap_stream_count(ctx); i++) {
        rngsnap_stream *s = rngsnap_stream_at(ctx, i);
        rngsnap_philox at;
        if (rngsnap_stream_position(s, &at) != RNGSNAP_OK)
            continue;
        snprintf(line, sizeof line, "stream %d %s %d %s %" PRIu64 " %" PRIu64
                 " %" PRIu64, rank, rngsnap_stream_backend(s),
                 rngsnap_stream_device(s), rngsnap_stream_name(s), at.seed,
                 at.subsequence, at.offset);
        say(j, rank, line);
    }
    const char *names[2] = {"test.step", "test.rank"};
    const uint8_t *bytes[2] = {step, mine};
    for (int k = 0; k < 2; k++) {
        int w = snprintf(line, sizeof line, "app %d %s ", rank, names[k]);
        for (int i = 0; i < 8; i++)
            w += snprintf(line + w, sizeof line - (size_t)w, "%02x",
                          bytes[k][i]);
        say(j, rank, line);
    }
    rngsnap_close(ctx);
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: make_folder INI DIR NRANKS SEED [EXTRA_RANK "
                    "EXTRA_WORDS] [--same-apps] [--fork SRC]\n");
    return 2;
}

int main(int argc, char **argv)
{
    static job j;
    int pos = 0;
    j.extra_rank = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--same-apps") == 0)
            j.same_apps = 1;
        else if (strcmp(a, "--fork") == 0 && i + 1 < argc)
            j.fork_src = argv[++i];
        else if (strcmp(a, "--nodes") == 0 && i + 1 < argc)
            j.nodes = atoi(argv[++i]);
        else if (pos == 0)
            j.ini = a, pos++;
        else if (pos == 1)
            j.dir = a, pos++;
        else if (pos == 2)
            j.nranks = atoi(a), pos++;
        else if (pos == 3)
            j.seed = strtoull(a, NULL, 0), pos++;
        else if (pos == 4)
            j.extra_rank = atoi(a), pos++;
        else if (pos == 5)
            j.extra_words = strtoull(a, NULL, 0), pos++;
        else
            return usage();
    }
    if (pos != 4 && pos != 6)
        return usage();
    if (j.nranks < 1 || j.nranks > MAX_RANKS) {
        fprintf(stderr, "make_folder: NRANKS must be 1..%d\n", MAX_RANKS);
        return 2;
    }
    thread_comm_nodes(j.nodes);
    int rc = thread_comm_run(j.nranks, rank_body, &j);
    if (rc) {
        fprintf(stderr, "make_folder: the save failed (%d)\n", rc);
        return 1;
    }
    for (int r = 0; r < j.nranks; r++)
        for (int i = 0; i < j.nlines[r]; i++)
            printf("%s\n", j.lines[r][i]);
    return 0;
}
