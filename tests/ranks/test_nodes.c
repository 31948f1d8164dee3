/*
 * test_nodes.c - multi-rank checkpoints with one file per node (issue
 * 32), over the in-process communicator: bit-exact resume for several
 * node layouts and for 64 ranks in emulated nodes of 8; what each rank
 * receives does not grow with the job; coordinates re-mapped between
 * ranks are refused naming both; a damaged, truncated or missing node
 * file and a damaged manifest are refused with nothing restored; and a
 * version-1 folder (file per rank) written before node files loads
 * exactly.  test_ranks.c holds the file-per-rank layout.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "remove_tree.h"
#include "rk_test.h"
#include "thread_comm.h"

#define NW 16    /* words drawn per stream to compare */
#define MAXR 64

typedef struct job {
    const char *ini, *dir;
    unsigned flags;
    uint64_t seed;
    const char *coords[MAXR];      /* set before the save     */
    const char *load_coords[MAXR]; /* set before the load     */
    int save_expect;               /* the save's code         */
    const char *save_msg;          /* text its message holds  */
    int expect;                    /* the load's code         */
    const char *msg;               /* text its message holds  */
    uint32_t *words[MAXR];         /* draws right after save  */
} job;

static const char *scratch, *cpu_ini;

static void progress_of(int rank, uint8_t out[16])
{
    for (int i = 0; i < 16; i++)
        out[i] = (uint8_t)(rank * 7 + i);
}

static int body_save(int rank, const rngsnap_comm *c, void *arg)
{
    job *j = arg;
    int bad = 0;
    rngsnap *ctx = rk_open(j->ini, rank, c->size, 0);
    if (!ctx)
        return 1;
    rk_app progress;
    memset(&progress, 0, sizeof progress);
    progress_of(rank, progress.bytes);
    EXPECT_RC(rk_register(ctx, "progress", &progress), 0, ctx);
    if (j->coords[rank])
        EXPECT_RC(rngsnap_set_coords(ctx, j->coords[rank]), 0, ctx);
    EXPECT_RC(rngsnap_seed_all(ctx, j->seed), 0, ctx);
    free(rk_draw(ctx, 5 + (size_t)rank)); /* every rank elsewhere */
    EXPECT_RC(rngsnap_save_ranks(ctx, c, j->dir, j->flags), j->save_expect,
              ctx);
    if (j->save_msg)
        EXPECT_MSG(ctx, j->save_msg);
    free(j->words[rank]);
    j->words[rank] = rk_draw(ctx, NW);
    rngsnap_close(ctx);
    return bad;
}

/* A new job's rank loads j->dir: restored exactly, or refused with
 * j->expect and j->msg and nothing changed. */
static int body_load(int rank, const rngsnap_comm *c, void *arg)
{
    job *j = arg;
    int bad = 0;
    rngsnap *ctx = rk_open(j->ini, rank, c->size, RNGSNAP_RESUME);
    if (!ctx)
        return 1;
    rk_app progress;
    memset(&progress, 0, sizeof progress);
    EXPECT_RC(rk_register(ctx, "progress", &progress), 0, ctx);
    if (j->load_coords[rank])
        EXPECT_RC(rngsnap_set_coords(ctx, j->load_coords[rank]), 0, ctx);
    size_t la, lb;
    uint8_t *before = rk_take(ctx, &la);
    EXPECT_RC(rngsnap_load_ranks(ctx, c, j->dir, 0), j->expect, ctx);
    if (j->expect == 0) {
        uint8_t want[16];
        progress_of(rank, want);
        uint32_t *got = rk_draw(ctx, NW);
        EXPECT(j->words[rank] && memcmp(got, j->words[rank],
                                        rngsnap_stream_count(ctx) * NW * 4)
                                     == 0);
        EXPECT(memcmp(progress.bytes, want, 16) == 0);
        free(got);
    } else {
        if (j->msg)
            EXPECT_MSG(ctx, j->msg);
        uint8_t *after = rk_take(ctx, &lb);
        EXPECT(la == lb && memcmp(before, after, la) == 0);
        uint8_t zero[16] = {0};
        EXPECT(memcmp(progress.bytes, zero, 16) == 0);
        free(after);
    }
    free(before);
    rngsnap_close(ctx);
    return bad;
}

static void job_free(job *j)
{
    for (int r = 0; r < MAXR; r++) {
        free(j->words[r]);
        j->words[r] = NULL;
    }
}

/* The manifest as a tool reads it: n ranks in files of per_node (0: one
 * node), each file holding its ranks' images end to end. */
static void check_layout(const char *dir, int n, int per_node,
                         uint32_t emulated)
{
    rngsnap_manifest *m;
    char err[1024];
    assert_int_equal(rngsnap_manifest_open(dir, &m, err, sizeof err), 0);
    const rngsnap_manifest_info *info = rngsnap_manifest_info_get(m);
    int per = per_node ? per_node : n;
    size_t files = (size_t)((n + per - 1) / per);
    assert_int_equal(info->format_version, 2);
    assert_int_equal(info->world_size, n);
    assert_int_equal(info->file_count, files);
    assert_int_equal(info->emulated_ranks_per_node, emulated);
    for (size_t f = 0; f < files; f++) {
        const rngsnap_manifest_file *mf = rngsnap_manifest_file_at(m, f);
        char want[80];
        snprintf(want, sizeof want, "node-%05d.%s.rngsnap", (int)f * per,
                 info->id);
        assert_string_equal(mf->name, want);
        assert_int_equal(mf->first_rank, (int)f * per);
    }
    uint64_t off = 0;
    for (int r = 0; r < n; r++) {
        const rngsnap_manifest_rank *mr = rngsnap_manifest_rank_at(m, r);
        assert_int_equal(mr->file_index, (size_t)(r / per));
        if (r % per == 0)
            off = 0;
        assert_int_equal(mr->offset, off); /* end to end, rank order */
        off += mr->size;
        rngsnap_file *f;
        assert_int_equal(rngsnap_manifest_open_rank(m, r, &f, err,
                                                    sizeof err), 0);
        assert_int_equal(rngsnap_file_header_get(f)->rank, r);
        rngsnap_file_close(f);
    }
    rngsnap_manifest_close(m);
    assert_int_equal(rk_count(dir), files + 1); /* and nothing else */
}

/* ---- bit-exact resume over node layouts ------------------------------------ */

static void resume(int n, int per_node)
{
    char dir[600];
    snprintf(dir, sizeof dir, "%s/resume-%d-%d", scratch, n, per_node);
    job j = {.ini = cpu_ini, .dir = dir, .seed = 500 + (uint64_t)n};
    thread_comm_nodes(per_node);
    assert_int_equal(thread_comm_run(n, body_save, &j), 0);
    assert_int_equal(thread_comm_run(n, body_load, &j), 0);
    thread_comm_nodes(0);
    check_layout(dir, n, per_node, 0);
    job_free(&j);
}

/* MPI may place ranks round-robin (--map-by node): node files then hold
 * ranks 0,2,4,6 and 1,3,5,7. */
static void test_resume_round_robin(void **state)
{
    (void)state;
    char dir[600];
    snprintf(dir, sizeof dir, "%s/round-robin", scratch);
    job j = {.ini = cpu_ini, .dir = dir, .seed = 808};
    thread_comm_nodes(-2);
    assert_int_equal(thread_comm_run(8, body_save, &j), 0);
    thread_comm_nodes(0);
    assert_int_equal(thread_comm_run(8, body_load, &j), 0);
    rngsnap_manifest *m;
    char err[1024];
    assert_int_equal(rngsnap_manifest_open(dir, &m, err, sizeof err), 0);
    assert_int_equal(rngsnap_manifest_info_get(m)->file_count, 2);
    assert_int_equal(rngsnap_manifest_file_at(m, 1)->first_rank, 1);
    uint64_t at[2] = {0, 0};
    for (int r = 0; r < 8; r++) {
        const rngsnap_manifest_rank *mr = rngsnap_manifest_rank_at(m, r);
        assert_int_equal(mr->file_index, (size_t)(r % 2));
        assert_int_equal(mr->offset, at[r % 2]);
        at[r % 2] += mr->size;
    }
    rngsnap_manifest_close(m);
    assert_int_equal(rk_count(dir), 3);
    job_free(&j);
}

static void test_resume_layouts(void **state)
{
    (void)state;
    resume(1, 0);
    resume(2, 0);
    resume(2, 1);
    resume(4, 2);
    resume(8, 4);
    resume(8, 3); /* a last node of 2 */
    resume(8, 0);
}

/* 64 ranks in 8 emulated nodes of 8: 9 files, recorded as emulated; the
 * comm's own layout (one node) is overridden. */
static void test_emulated_64(void **state)
{
    (void)state;
    char dir[600];
    snprintf(dir, sizeof dir, "%s/emulated-64", scratch);
    job j = {.ini = cpu_ini, .dir = dir, .seed = 64};
    setenv("RNGSNAP_RANKS_PER_NODE", "8", 1);
    assert_int_equal(thread_comm_run(64, body_save, &j), 0);
    unsetenv("RNGSNAP_RANKS_PER_NODE"); /* the load's layout may differ */
    assert_int_equal(thread_comm_run(64, body_load, &j), 0);
    check_layout(dir, 64, 8, 8);
    job_free(&j);
}

static void test_bad_ranks_per_node(void **state)
{
    (void)state;
    char dir[600];
    snprintf(dir, sizeof dir, "%s/bad-env", scratch);
    job j = {.ini = cpu_ini, .dir = dir, .seed = 9,
             .save_expect = RNGSNAP_E_INVALID,
             .save_msg = "save_ranks ",
             };
    /* refused on every rank alike (the variable is the same on all),
     * before anything is sent or written */
    const char *bad[] = {"eight", "0", "-2", "8x", "1048577"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char want[200];
        snprintf(want, sizeof want, "RNGSNAP_RANKS_PER_NODE=%s is not a "
                 "number of ranks from 1 to 1048576", bad[i]);
        j.save_msg = want;
        setenv("RNGSNAP_RANKS_PER_NODE", bad[i], 1);
        int rc = thread_comm_run(2, body_save, &j);
        unsetenv("RNGSNAP_RANKS_PER_NODE");
        assert_int_equal(rc, 0);
    }
    /* and with RNGSNAP_NO_EMULATION, emulated nodes are refused */
    setenv("RNGSNAP_RANKS_PER_NODE", "2", 1);
    setenv("RNGSNAP_NO_EMULATION", "1", 1);
    j.save_msg = "RNGSNAP_RANKS_PER_NODE=2 emulates nodes, and "
                 "RNGSNAP_NO_EMULATION is set: unset one of them";
    int rc = thread_comm_run(2, body_save, &j);
    unsetenv("RNGSNAP_NO_EMULATION");
    unsetenv("RNGSNAP_RANKS_PER_NODE");
    assert_int_equal(rc, 0);
    assert_int_equal(rk_count(dir), 0);
    job_free(&j);
}

/* ---- what each rank receives does not grow with the job -------------------- */

typedef struct received {
    size_t member, leader, root;
} received;

static received run_counted(int n, thread_comm_body body, job *j)
{
    thread_comm_nodes(4);
    assert_int_equal(thread_comm_run(n, body, j), 0);
    thread_comm_nodes(0);
    received r = {thread_comm_received(1), thread_comm_received(4),
                  thread_comm_received(0)};
    return r;
}

static void test_bytes_per_rank(void **state)
{
    (void)state;
    char d8[600], d64[600];
    snprintf(d8, sizeof d8, "%s/bytes-8", scratch);
    snprintf(d64, sizeof d64, "%s/bytes-64", scratch);
    job a = {.ini = cpu_ini, .dir = d8, .seed = 3};
    job b = {.ini = cpu_ini, .dir = d64, .seed = 3};
    received s8 = run_counted(8, body_save, &a);
    received s64 = run_counted(64, body_save, &b);
    received l8 = run_counted(8, body_load, &a);
    received l64 = run_counted(64, body_load, &b);
    print_message("save: member %zu/%zu, leader %zu/%zu, rank 0 %zu/%zu "
                  "bytes at 8/64 ranks\n", s8.member, s64.member, s8.leader,
                  s64.leader, s8.root, s64.root);
    print_message("load: member %zu/%zu, leader %zu/%zu, rank 0 %zu/%zu "
                  "bytes at 8/64 ranks\n", l8.member, l64.member, l8.leader,
                  l64.leader, l8.root, l64.root);
    /* a member and a leader (not rank 0) receive the same at 8 and 64 */
    assert_int_equal(s8.member, s64.member);
    assert_int_equal(s8.leader, s64.leader);
    assert_int_equal(l8.member, l64.member);
    assert_int_equal(l8.leader, l64.leader);
    /* rank 0 gathers every node's table: O(ranks) to it alone */
    assert_true(s64.root > s8.root);
    job_free(&a);
    job_free(&b);
}

/* ---- coordinates ----------------------------------------------------------- */

static const char *dp[] = {"dp=0,tp=0", "dp=1,tp=0", "dp=2,tp=0",
                           "dp=3,tp=0"};

static void test_coords_swapped(void **state)
{
    (void)state;
    char dir[600];
    snprintf(dir, sizeof dir, "%s/coords", scratch);
    job j = {.ini = cpu_ini, .dir = dir, .seed = 6858};
    for (int r = 0; r < 4; r++)
        j.coords[r] = j.load_coords[r] = dp[r];
    thread_comm_nodes(2);
    assert_int_equal(thread_comm_run(4, body_save, &j), 0);
    /* the same mapping: exact */
    assert_int_equal(thread_comm_run(4, body_load, &j), 0);
    /* ranks 1 and 2 swapped (same world size): refused naming both */
    j.load_coords[1] = dp[2];
    j.load_coords[2] = dp[1];
    j.expect = RNGSNAP_E_MISMATCH;
    j.msg = "rank 1 has coordinates (dp=2,tp=0) but the checkpoint's rank 1 "
            "was saved with (dp=1,tp=0); the checkpoint's rank 2 was saved "
            "with (dp=2,tp=0); this job's rank 2 has (dp=1,tp=0) (2 of 4 "
            "ranks differ)";
    assert_int_equal(thread_comm_run(4, body_load, &j), 0);
    j.msg = "rank 0 of 4: load_ranks ";
    assert_int_equal(thread_comm_run(4, body_load, &j), 0);
    /* saved with coordinates, loaded without */
    j.load_coords[1] = j.load_coords[2] = NULL;
    for (int r = 0; r < 4; r++)
        j.load_coords[r] = NULL;
    j.msg = "rank 0 has no coordinates, but the checkpoint's rank 0 was "
            "saved with (dp=0,tp=0); call rngsnap_set_coords";
    assert_int_equal(thread_comm_run(4, body_load, &j), 0);
    thread_comm_nodes(0);
    job_free(&j);

    /* saved without, loaded with: refused, load first */
    snprintf(dir, sizeof dir, "%s/no-coords", scratch);
    job k = {.ini = cpu_ini, .dir = dir, .seed = 7};
    assert_int_equal(thread_comm_run(2, body_save, &k), 0);
    k.load_coords[1] = "ep=2";
    k.expect = RNGSNAP_E_MISMATCH;
    k.msg = "the checkpoint's rank 1 was saved without coordinates, and "
            "this job's rank 1 has (ep=2); call rngsnap_set_coords after "
            "the load";
    assert_int_equal(thread_comm_run(2, body_load, &k), 0);
    job_free(&k);
}

/* Megatron-LM #6858: the same world size, every rank's expert-parallel
 * coordinate moved to another rank. */
static void test_coords_remapped_expert_parallel(void **state)
{
    (void)state;
    char dir[600], saved[8][32], now[8][32];
    snprintf(dir, sizeof dir, "%s/megatron", scratch);
    job j = {.ini = cpu_ini, .dir = dir, .seed = 6858};
    for (int r = 0; r < 8; r++) {
        snprintf(saved[r], sizeof saved[r], "dp=%d,ep=%d", r / 4, r % 4);
        snprintf(now[r], sizeof now[r], "dp=%d,ep=%d", r / 4, (r + 1) % 4);
        j.coords[r] = saved[r];
        j.load_coords[r] = now[r];
    }
    assert_int_equal(thread_comm_run(8, body_save, &j), 0);
    j.expect = RNGSNAP_E_MISMATCH;
    j.msg = "rank 0 has coordinates (dp=0,ep=1) but the checkpoint's rank 0 "
            "was saved with (dp=0,ep=0); the checkpoint's rank 1 was saved "
            "with (dp=0,ep=1); this job's rank 3 has (dp=0,ep=0) (8 of 8 "
            "ranks differ)";
    assert_int_equal(thread_comm_run(8, body_load, &j), 0);
    job_free(&j);
}

/* ---- damage ------------------------------------------------------------- */

/* A 4-rank folder in nodes of 2 and its manifest. */
static void save4(const char *name, char *dir, size_t dlen, job *j,
                  char node1[600], uint64_t *off2, uint64_t *len2)
{
    snprintf(dir, dlen, "%s/%s", scratch, name);
    j->ini = cpu_ini;
    j->dir = dir;
    j->seed = 44;
    thread_comm_nodes(2);
    assert_int_equal(thread_comm_run(4, body_save, j), 0);
    thread_comm_nodes(0);
    rngsnap_manifest *m;
    char err[1024];
    assert_int_equal(rngsnap_manifest_open(dir, &m, err, sizeof err), 0);
    const rngsnap_manifest_rank *r2 = rngsnap_manifest_rank_at(m, 2);
    snprintf(node1, 600, "%s/%s", dir, r2->file);
    *off2 = r2->offset;
    *len2 = r2->size;
    rngsnap_manifest_close(m);
}

static void test_damaged_node_file(void **state)
{
    (void)state;
    char dir[600], node1[600], want[1400];
    uint64_t off2, len2;
    job j = {0};
    save4("damaged", dir, sizeof dir, &j, node1, &off2, &len2);
    size_t len;
    uint8_t *keep = rk_read(node1, &len), *bad = malloc(len);
    assert_non_null(keep);
    assert_non_null(bad);
    assert_int_equal(len, 2 * len2); /* ranks 2 and 3, end to end */

    /* a flipped byte inside rank 2's image, the first of node 1 */
    memcpy(bad, keep, len);
    bad[off2 + len2 / 2] ^= 0x10;
    rk_write(node1, bad, len);
    j.expect = RNGSNAP_E_CORRUPT;
    snprintf(want, sizeof want, "rank 2 of 4: load_ranks %s: %s (rank 2's "
             "image, %llu bytes at offset 0): XXH3-64 0x", dir, node1,
             (unsigned long long)len2);
    j.msg = want;
    assert_int_equal(thread_comm_run(4, body_load, &j), 0);
    /* ... and in rank 3's, the second */
    memcpy(bad, keep, len);
    bad[len - 1] ^= 0x01;
    rk_write(node1, bad, len);
    snprintf(want, sizeof want, "rank 3 of 4: load_ranks %s: %s (rank 3's "
             "image, %llu bytes at offset %llu)", dir, node1,
             (unsigned long long)len2, (unsigned long long)len2);
    assert_int_equal(thread_comm_run(4, body_load, &j), 0);
    /* truncated: both of its ranks see it, rank 2 speaks first */
    rk_write(node1, keep, len - 7);
    snprintf(want, sizeof want, "rank 2 of 4: load_ranks %s: %s: %zu "
             "bytes, the manifest records %zu", dir, node1, len - 7, len);
    assert_int_equal(thread_comm_run(4, body_load, &j), 0);
    /* missing */
    remove(node1);
    j.expect = RNGSNAP_E_IO;
    snprintf(want, sizeof want, "rank 2 of 4: load_ranks %s: ", dir);
    assert_int_equal(thread_comm_run(4, body_load, &j), 0);
    /* put back: exact again */
    rk_write(node1, keep, len);
    j.expect = 0;
    j.msg = NULL;
    assert_int_equal(thread_comm_run(4, body_load, &j), 0);
    free(keep);
    free(bad);
    job_free(&j);
}

static void test_damaged_manifest(void **state)
{
    (void)state;
    char dir[600], node1[600], want[1400];
    uint64_t off2, len2;
    job j = {0};
    save4("damaged-manifest", dir, sizeof dir, &j, node1, &off2, &len2);
    const char *mpath = rk_path(dir, "MANIFEST");
    size_t len;
    uint8_t *keep = rk_read(mpath, &len), *bad = malloc(len);
    assert_non_null(keep);
    assert_non_null(bad);
    j.expect = RNGSNAP_E_CORRUPT;
    snprintf(want, sizeof want, "rank 0 of 4: load_ranks %s: ", dir);
    j.msg = want;
    for (size_t at = 0; at < len; at += len / 7 + 1) { /* spread over it */
        memcpy(bad, keep, len);
        bad[at] ^= 0x40;
        rk_write(mpath, bad, len);
        assert_int_equal(thread_comm_run(4, body_load, &j), 0);
    }
    rk_write(mpath, keep, len);
    j.expect = 0;
    j.msg = NULL;
    assert_int_equal(thread_comm_run(4, body_load, &j), 0);
    free(keep);
    free(bad);
    job_free(&j);
}

/* ---- a version-1 folder ------------------------------------------------- */

static const uint8_t step17[8] = {'s', 't', 'e', 'p', '=', '1', '7', '\n'};
static size_t v1_size(void *u) { (void)u; return 8; }
static int v1_save(void *u, void *b, size_t n)
{
    (void)u;
    memcpy(b, step17, n);
    return 0;
}
static int v1_load(void *u, const void *b, size_t n)
{
    memcpy(u, b, n < 8 ? n : 8);
    return n == 8 ? 0 : 1;
}

/* expected.txt: per rank, the 4 u64 of cpu/0/default and of
 * cpu/0/dropout drawn right after the save. */
static uint64_t v1_want[4][8];

static int body_v1(int rank, const rngsnap_comm *c, void *arg)
{
    const char *dir = arg;
    int bad = 0;
    rngsnap *ctx = rk_open(cpu_ini, rank, c->size, RNGSNAP_RESUME);
    if (!ctx)
        return 1;
    uint8_t got_step[8] = {0};
    rngsnap_state_ops ops = {v1_size, v1_save, v1_load};
    EXPECT_RC(rngsnap_register_state(ctx, "app.step", &ops, got_step), 0,
              ctx);
    EXPECT_RC(rngsnap_load_ranks(ctx, c, dir, 0), 0, ctx);
    rngsnap_stream *s, *t;
    EXPECT_RC(rngsnap_stream_find(ctx, "cpu", 0, "default", &s), 0, ctx);
    EXPECT_RC(rngsnap_stream_find(ctx, "cpu", 0, "dropout", &t), 0, ctx);
    uint64_t a[4] = {0}, b[4] = {0};
    EXPECT_RC(rngsnap_generate(s, RNGSNAP_U64, a, 4), 0, ctx);
    EXPECT_RC(rngsnap_generate(t, RNGSNAP_U64, b, 4), 0, ctx);
    EXPECT(memcmp(a, v1_want[rank], 32) == 0);
    EXPECT(memcmp(b, v1_want[rank] + 4, 32) == 0);
    EXPECT(memcmp(got_step, step17, 8) == 0);
    rngsnap_close(ctx);
    return bad;
}

static void test_version1_folder(void **state)
{
    (void)state;
    const char *data = getenv("RNGSNAP_V1_FOLDER");
    assert_non_null(data);
    char path[700], line[512];
    snprintf(path, sizeof path, "%s/expected.txt", data);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    int rows = 0;
    while (fgets(line, sizeof line, f)) {
        int r;
        unsigned long long w[8];
        if (line[0] == '#')
            continue;
        if (sscanf(line, "%d %llx %llx %llx %llx %llx %llx %llx %llx", &r,
                   &w[0], &w[1], &w[2], &w[3], &w[4], &w[5], &w[6], &w[7])
                == 9
            && r >= 0 && r < 4) {
            for (int i = 0; i < 8; i++)
                v1_want[r][i] = w[i];
            rows++;
        }
    }
    fclose(f);
    assert_int_equal(rows, 4);
    /* a copy: the load must not need to write, but keep the data clean */
    char dir[600];
    snprintf(dir, sizeof dir, "%s/v1", scratch);
    assert_int_equal(system(NULL) != 0, 1);
    char cmd[1500];
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", data, dir);
    assert_int_equal(system(cmd), 0);
    assert_int_equal(thread_comm_run(4, body_v1, dir), 0);
}

static int setup(void **state)
{
    (void)state;
    scratch = rk_setup();
    cpu_ini = rk_ini(scratch, "cpu.ini",
                     "[backend.cpu]\nplugin = rngsnap_cpu\nrequired = true\n"
                     "streams = default, dropout, augment\n");
    return scratch ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    if (scratch && !getenv("RNGSNAP_KEEP_SCRATCH"))
        remove_tree(scratch);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_resume_layouts),
        cmocka_unit_test(test_resume_round_robin),
        cmocka_unit_test(test_emulated_64),
        cmocka_unit_test(test_bad_ranks_per_node),
        cmocka_unit_test(test_bytes_per_rank),
        cmocka_unit_test(test_coords_swapped),
        cmocka_unit_test(test_coords_remapped_expert_parallel),
        cmocka_unit_test(test_damaged_node_file),
        cmocka_unit_test(test_damaged_manifest),
        cmocka_unit_test(test_version1_folder),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
