/*
 * test_multibackend.c - save and load against a live registry of several
 * backends (multidev, multidev2 and, when built, cpu), each with several
 * devices: everything saved is restored; a checkpoint that lacks or adds
 * a backend, device, app state, rank or state format is refused and
 * nothing changes; damaged files are E_CORRUPT and change nothing;
 * set_state or app load failures roll back; the resume gate both ways.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <xxhash.h>

#include "ckpt_test.h"
#include "context.h"
#include "format.h"

static const char *dir;

#define MD_A "[backend.multidev]\nplugin = rngsnap_multidev\n" \
             "streams = a, b\ndevices = 3\n\n"
#define MD2_X "[backend.multidev2]\nplugin = rngsnap_multidev2\n" \
              "streams = x\ndevices = 2\n\n"

static const char *cpu_section(void)
{
    return ct_have_cpu() ? "[backend.cpu]\nplugin = rngsnap_cpu\n"
                           "streams = default, dropout\n\n"
                         : "";
}

/* An ini of [cpu +] the given sections, under a fresh name. */
static const char *ini(const char *body)
{
    static int n;
    static char path[1024];
    char name[32], all[4096];
    snprintf(name, sizeof name, "rng%d.ini", n++);
    snprintf(all, sizeof all, "%s%s", cpu_section(), body);
    snprintf(path, sizeof path, "%s", ct_write_ini(dir, name, all));
    return path;
}

static size_t ncpu(void) { return ct_have_cpu() ? 2 : 0; }

static int group_setup(void **state)
{
    (void)state;
    dir = ct_setup_dir();
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    ct_remove_dir(dir);
    return 0;
}

static const char *ckpt(const char *name) { return ct_path(dir, name); }

#define assert_msg ct_assert_msg

/* ---- the multi-backend bug ------------------------------------------------ */

static void all_backends_saved_and_restored(void **state)
{
    (void)state;
    rngsnap *ctx = ct_open(ini(MD_A MD2_X), 0);
    size_t n = rngsnap_stream_count(ctx);
    assert_int_equal(n, ncpu() + 6 + 2);
    assert_int_equal(rngsnap_seed_all(ctx, 42), 0);
    free(ct_draw_all(ctx, 100));
    ct_snap before = ct_take(ctx);
    assert_int_equal(rngsnap_save(ctx, ckpt("all.ckpt"), 0), 0);
    uint32_t *w1 = ct_draw_all(ctx, 1000);
    assert_int_equal(rngsnap_load(ctx, ckpt("all.ckpt"), 0), 0);
    ct_snap after = ct_take(ctx);
    assert_true(ct_snap_equal(before, after));
    uint32_t *w2 = ct_draw_all(ctx, 1000);
    assert_memory_equal(w1, w2, n * 1000 * sizeof *w1);
    /* every stream is its own: no two draw the same words */
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < i; j++)
            assert_memory_not_equal(w1 + i * 1000, w1 + j * 1000, 64);

    /* a second context of the same config restores the same */
    rngsnap *other = ct_open(ini(MD_A MD2_X), 0);
    assert_int_equal(rngsnap_seed_all(other, 7), 0);
    assert_int_equal(rngsnap_load(other, ckpt("all.ckpt"), 0), 0);
    uint32_t *w3 = ct_draw_all(other, 1000);
    assert_memory_equal(w1, w3, n * 1000 * sizeof *w1);

    /* the file lists every entry, in registry order */
    rngsnap_file *f;
    char err[512];
    assert_int_equal(rngsnap_file_open(ckpt("all.ckpt"), &f, err, sizeof err),
                     0);
    assert_int_equal(rngsnap_file_section_count(f), n);
    for (size_t i = 0; i < n; i++) {
        const rngsnap_file_section *s = rngsnap_file_section_at(f, i);
        rngsnap_stream *e = rngsnap_stream_at(ctx, i);
        assert_string_equal(s->backend, rngsnap_stream_backend(e));
        assert_int_equal(s->device, rngsnap_stream_device(e));
        assert_string_equal(s->name, rngsnap_stream_name(e));
    }
    rngsnap_file_close(f);

    free(w1);
    free(w2);
    free(w3);
    ct_snap_free(&before);
    ct_snap_free(&after);
    rngsnap_close(other);
    rngsnap_close(ctx);
}

/* Load file into a seeded context of ini_path; expect rc and message, and
 * that no state changed. */
static void refused_as(const char *ini_path, const char *file, int want,
                       const char *text, int exact)
{
    rngsnap *ctx = ct_open(ini_path, 0);
    assert_int_equal(rngsnap_seed_all(ctx, 99), 0);
    free(ct_draw_all(ctx, 3));
    ct_snap before = ct_take(ctx);
    int rc = rngsnap_load(ctx, file, 0);
    if (rc != want)
        fail_msg("load %s: %s (%s), wanted %s", file, rngsnap_error_name(rc),
                 rngsnap_errmsg(ctx), rngsnap_error_name(want));
    if (exact)
        assert_string_equal(rngsnap_errmsg(ctx), text);
    else
        assert_msg(ctx, text);
    ct_snap after = ct_take(ctx);
    assert_true(ct_snap_equal(before, after));
    ct_snap_free(&before);
    ct_snap_free(&after);
    rngsnap_close(ctx);
}

/* The load is refused with code `want`, nothing changes, and the message
 * contains text (refused) or is text (refused_exactly). */
static void refused(const char *ini_path, const char *file, int want,
                    const char *text)
{
    refused_as(ini_path, file, want, text, 0);
}

static void refused_exactly(const char *ini_path, const char *file,
                            int want, const char *text)
{
    refused_as(ini_path, file, want, text, 1);
}

static void save_with(const char *ini_path, const char *file)
{
    rngsnap *ctx = ct_open(ini_path, 0);
    assert_int_equal(rngsnap_seed_all(ctx, 5), 0);
    free(ct_draw_all(ctx, 11));
    int rc = rngsnap_save(ctx, file, RNGSNAP_SAVE_REPLACE);
    if (rc)
        fail_msg("save: %s", rngsnap_errmsg(ctx));
    rngsnap_close(ctx);
}

static void backend_on_one_side_only(void **state)
{
    (void)state;
    save_with(ini(MD_A), ckpt("a.ckpt"));
    save_with(ini(MD_A MD2_X), ckpt("ab.ckpt"));
    refused(ini(MD_A MD2_X), ckpt("a.ckpt"), RNGSNAP_E_MISMATCH,
            "this configuration has multidev2:0/x, which the checkpoint "
            "lacks (and 1 more)");
    const char *only_a = ini(MD_A);
    char text[1200];
    snprintf(text, sizeof text, "checkpoint has multidev2:0/x, which this "
             "configuration does not load (no [backend.multidev2] in this "
             "configuration) (and 1 more); nothing restored (configuration "
             "%s). If the checkpoint was written under another rng.ini, open "
             "this job with that one (the ini_path of rngsnap_open, or "
             "RNGSNAP_CONFIG); 'rngsnap inspect %s' lists the streams it "
             "holds", only_a, ckpt("ab.ckpt"));
    refused(only_a, ckpt("ab.ckpt"), RNGSNAP_E_MISMATCH, text);
    /* one device fewer: the counts, and where this one comes from (the
     * plugin's driver, as its status line says) */
    const char *two = ini("[backend.multidev]\nplugin = rngsnap_multidev\n"
                          "streams = a, b\ndevices = 2\n\n");
    snprintf(text, sizeof text, "%s: the checkpoint has 3 multidev devices "
             "and this configuration 2 (from the driver: test backend, 2 "
             "devices); nothing restored (configuration %s). Resume where "
             "the same devices are present as where the checkpoint was "
             "written; 'rngsnap inspect %s' shows what the checkpoint holds",
             ckpt("a.ckpt"), two, ckpt("a.ckpt"));
    refused_exactly(two, ckpt("a.ckpt"), RNGSNAP_E_MISMATCH, text);
    /* a stream renamed: both sides named */
    refused(ini("[backend.multidev]\nplugin = rngsnap_multidev\n"
                "streams = a, c\ndevices = 3\n\n"),
            ckpt("a.ckpt"), RNGSNAP_E_MISMATCH,
            "checkpoint has multidev:0/b, which this configuration does not "
            "load (and 2 more); this configuration has multidev:0/c");
}

/* A checkpoint of 2 emulated cuda devices resumed where this
 * configuration has 4, and the converse (issue 16): the counts in the
 * admin's terms, the emulate_devices line that makes this one, the way
 * out; nothing restored.  Other differences are still named. */
static const char *cuda_ini(const char *name, const char *devices,
                            const char *streams)
{
    char body[256];
    /* [rngsnap] 1-3 (ct_write_ini), [backend.cuda] 4, emulate_devices 7 */
    snprintf(body, sizeof body, "[backend.cuda]\nplugin = rngsnap_cuda\n"
             "streams = %s\nemulate_devices = %s\n", streams, devices);
    return ct_write_ini(dir, name, body);
}

static void device_count_in_admin_terms(void **state)
{
    (void)state;
    unsetenv("RNGSNAP_NO_EMULATION"); /* a hardware runner's setting */
    char ini2[1024], ini4[1024], ini1[1024], ini4d[1024], text[4096];
    snprintf(ini2, sizeof ini2, "%s", cuda_ini("cuda2.ini", "2",
                                                 "default, dropout"));
    snprintf(ini4, sizeof ini4, "%s", cuda_ini("cuda4.ini", "4",
                                                 "default, dropout"));
    snprintf(ini1, sizeof ini1, "%s", cuda_ini("cuda1.ini", "1",
                                                 "default, dropout"));
    snprintf(ini4d, sizeof ini4d, "%s", cuda_ini("cuda4d.ini", "4",
                                                   "default"));
    save_with(ini2, ckpt("cuda2.ckpt"));
    save_with(ini4, ckpt("cuda4.ckpt"));
    save_with(ini1, ckpt("cuda1.ckpt"));
    const struct {
        const char *ini, *file;
        int in_file, here;
    } cases[] = {
        {ini4, "cuda2.ckpt", 2, 4}, /* more devices here */
        {ini2, "cuda4.ckpt", 4, 2}, /* fewer */
        {ini2, "cuda1.ckpt", 1, 2}, /* one device in the checkpoint */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *file = ckpt(cases[i].file);
        snprintf(text, sizeof text, "%s: the checkpoint has %d cuda "
                 "device%s and this configuration %d (emulate_devices = %d "
                 "at %s:7); nothing restored (configuration %s). Resume "
                 "where the same devices are present as where the "
                 "checkpoint was written; 'rngsnap inspect %s' shows what "
                 "the checkpoint holds", file, cases[i].in_file,
                 cases[i].in_file == 1 ? "" : "s", cases[i].here,
                 cases[i].here, cases[i].ini, cases[i].ini, file);
        refused_exactly(cases[i].ini, file, RNGSNAP_E_MISMATCH, text);
    }
    /* A stream list that differs too is still named, beyond the count. */
    const char *file = ckpt("cuda2.ckpt");
    snprintf(text, sizeof text, "%s: the checkpoint has 2 cuda devices and "
             "this configuration 4 (emulate_devices = 4 at %s:7); checkpoint "
             "has cuda:0/dropout, which this configuration does not load "
             "(and 1 more); nothing restored (configuration %s). Resume "
             "where the same devices are present as where the checkpoint "
             "was written; 'rngsnap inspect %s' shows what the checkpoint "
             "holds", file, ini4d, ini4d, file);
    refused_exactly(ini4d, file, RNGSNAP_E_MISMATCH, text);
    /* The same devices: the per-entry message, no device count. */
    snprintf(ini4d, sizeof ini4d, "%s", cuda_ini("cuda2d.ini", "2",
                                                   "default"));
    snprintf(text, sizeof text, "%s: checkpoint has cuda:0/dropout, which "
             "this configuration does not load (and 1 more); nothing "
             "restored (configuration %s). If the checkpoint was written "
             "under another rng.ini, open this job with that one (the "
             "ini_path of rngsnap_open, or RNGSNAP_CONFIG); 'rngsnap inspect "
             "%s' lists the streams it holds", file, ini4d, file);
    refused_exactly(ini4d, file, RNGSNAP_E_MISMATCH, text);
}

/* An optional backend present on the node that saved and absent on the
 * one that resumes, and the other way round: the message says so and
 * what to do. */
#define MD2_OPTIONAL(devices)                                        \
    "[backend.multidev2]\nplugin = rngsnap_multidev2\nstreams = x\n" \
    "required = false\ndevices = " devices "\n\n"

static void optional_backend_on_one_node_only(void **state)
{
    (void)state;
    save_with(ini(MD_A MD2_OPTIONAL("2")), ckpt("with2.ckpt"));
    save_with(ini(MD_A), ckpt("without2.ckpt"));
    refused(ini(MD_A MD2_OPTIONAL("0")), ckpt("with2.ckpt"),
            RNGSNAP_E_MISMATCH,
            "checkpoint has multidev2:0/x, which this configuration does not "
            "load (backend multidev2 is optional, 'required = false', and "
            "was skipped here: devices = 0 in rng.ini; it was present where "
            "the checkpoint was written: resume where the same backends are "
            "present as where the checkpoint was written, or set 'required "
            "= true' so that a node without it stops at rngsnap_open instead "
            "of at the load) (and 1 more); nothing restored");
    refused(ini(MD_A MD2_OPTIONAL("2")), ckpt("without2.ckpt"),
            RNGSNAP_E_MISMATCH,
            "this configuration has multidev2:0/x, which the checkpoint "
            "lacks (backend multidev2 is optional, 'required = false', and "
            "present here, so it was probably absent where the checkpoint "
            "was written: resume where");
}

/* Load ckpt into a context of ini_path with warnings on stderr; returns
 * what was written there (static buffer). */
static const char *load_warnings(const char *ini_path, const char *file)
{
    static char out[4096];
    char log[1024];
    snprintf(log, sizeof log, "%s", ckpt("stderr.txt"));
    rngsnap *ctx = ct_open(ini_path, 0);
    setenv("RNGSNAP_LOG", "warn", 1);
    fflush(stderr);
    int saved = dup(2);
    FILE *cap = fopen(log, "w");
    assert_non_null(cap);
    dup2(fileno(cap), 2);
    int rc = rngsnap_load(ctx, file, 0);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    fclose(cap);
    unsetenv("RNGSNAP_LOG");
    if (rc)
        fail_msg("load: %s", rngsnap_errmsg(ctx));
    rngsnap_close(ctx);
    FILE *f = fopen(log, "r");
    assert_non_null(f);
    size_t n = fread(out, 1, sizeof out - 1, f);
    fclose(f);
    out[n] = '\0';
    return out;
}

/* Sections in another order than the registry (rng.ini reordered) still
 * match by key, with a warning naming the first difference: a job that
 * walks the registry by index would now draw from other streams. */
static void order_of_backends_does_not_matter(void **state)
{
    (void)state;
    save_with(ini(MD_A MD2_X), ckpt("order.ckpt"));
    const char *swapped = ini(MD2_X MD_A);
    const char *out = load_warnings(swapped, ckpt("order.ckpt"));
    char want[1500];
    snprintf(want, sizeof want, "rngsnap warn: load %s: the checkpoint's "
             "entries are in another order than this registry (%s): entry "
             "%zu is multidev:0/a in the checkpoint but multidev2:0/x here; "
             "restored by name, but a job that walks the registry by index "
             "(rngsnap_stream_at) now draws from other streams than the job "
             "that saved\n", ckpt("order.ckpt"), swapped, ncpu());
    assert_string_equal(out, want);
    /* The same order: no warning. */
    assert_string_equal(load_warnings(ini(MD_A MD2_X), ckpt("order.ckpt")),
                        "");
}

static void rank_mismatch(void **state)
{
    (void)state;
    rngsnap *ctx = ct_open(ini(MD_A), 0);
    assert_int_equal(rngsnap_set_rank(ctx, 1, 4), 0);
    assert_int_equal(rngsnap_seed_all(ctx, 1), 0);
    assert_int_equal(rngsnap_save(ctx, ckpt("r1of4.ckpt"), 0), 0);
    rngsnap_close(ctx);

    ctx = ct_open(ini(MD_A), 0);
    assert_int_equal(rngsnap_set_rank(ctx, 0, 2), 0);
    assert_int_equal(rngsnap_seed_all(ctx, 1), 0);
    ct_snap before = ct_take(ctx);
    assert_int_equal(rngsnap_load(ctx, ckpt("r1of4.ckpt"), 0),
                     RNGSNAP_E_MISMATCH);
    assert_msg(ctx, "checkpoint is rank 1 of 4, this process is rank 0 of 2; "
                    "nothing restored (configuration ");
    assert_msg(ctx, "Each rank loads the file its own rank saved, with the "
                    "same world size: check the launcher's RANK/WORLD_SIZE "
                    "(or OMPI_COMM_WORLD_*, PMI_*) or rngsnap_set_rank");
    ct_snap after = ct_take(ctx);
    assert_true(ct_snap_equal(before, after));
    /* same rank, other world size */
    assert_int_equal(rngsnap_set_rank(ctx, 1, 2), 0);
    assert_int_equal(rngsnap_load(ctx, ckpt("r1of4.ckpt"), 0),
                     RNGSNAP_E_MISMATCH);
    assert_int_equal(rngsnap_set_rank(ctx, 1, 4), 0);
    assert_int_equal(rngsnap_load(ctx, ckpt("r1of4.ckpt"), 0), 0);
    ct_snap_free(&before);
    ct_snap_free(&after);
    rngsnap_close(ctx);
}

/* ---- failures midway roll back -------------------------------------------- */

static void set_state_failure_rolls_back(void **state)
{
    (void)state;
    const char *bad = ini("[backend.multidev]\nplugin = rngsnap_multidev\n"
                          "streams = a, b\ndevices = 3\n"
                          "fail_set_state_on_device = 1\n\n" MD2_X);
    save_with(bad, ckpt("rb.ckpt"));
    /* entries before multidev:1/a (cpu, multidev:0/a and 0/b) are set, then
     * multidev:1/a fails: they must be back as they were */
    refused(bad, ckpt("rb.ckpt"), RNGSNAP_E_BACKEND, "multidev:1/a");
    refused(bad, ckpt("rb.ckpt"), RNGSNAP_E_BACKEND,
            "fail_set_state_on_device = 1");
}

/* A set_state that changes its stream and then fails: that stream is put
 * back too, not only the ones set before it. */
static void half_done_set_state_rolls_back(void **state)
{
    (void)state;
    const char *bad = ini("[backend.multidev]\nplugin = rngsnap_multidev\n"
                          "streams = a, b\ndevices = 3\n"
                          "half_set_state_on_device = 1\n\n" MD2_X);
    save_with(bad, ckpt("half.ckpt"));
    refused(bad, ckpt("half.ckpt"), RNGSNAP_E_BACKEND, "multidev:1/a");
    /* the message is the failing call's, not a rollback call's */
    refused(bad, ckpt("half.ckpt"), RNGSNAP_E_BACKEND,
            "state changed, then failed");
}

static void get_state_failure_fails_save(void **state)
{
    (void)state;
    rngsnap *ctx = ct_open(ini("[backend.multidev]\nplugin = rngsnap_multidev\n"
                               "streams = a\ndevices = 3\n"
                               "fail_get_state_on_device = 2\n\n"),
                           0);
    /* (no seed_all: it backs states up with get_state too) */
    assert_int_equal(rngsnap_save(ctx, ckpt("never.ckpt"), 0),
                     RNGSNAP_E_BACKEND);
    assert_msg(ctx, "multidev:2/a");
    assert_int_equal(access(ckpt("never.ckpt"), F_OK), -1);
    int tmp;
    ct_count_entries(dir, &tmp);
    assert_false(tmp);
    rngsnap_close(ctx);
}

/* ---- app states ----------------------------------------------------------- */

typedef struct app {
    char data[64];
    size_t len;
    int fail_load, fail_save;
    int fail_after_copy; /* load copies the bytes in, then fails */
} app;

static size_t app_size(void *u) { return ((app *)u)->len; }
static int app_save(void *u, void *buf, size_t len)
{
    app *a = u;
    if (a->fail_save)
        return -3;
    assert_int_equal(len, a->len);
    memcpy(buf, a->data, len);
    return 0;
}
static int app_load(void *u, const void *buf, size_t len)
{
    app *a = u;
    if (a->fail_load)
        return -1;
    if (len > sizeof a->data)
        return -2;
    memcpy(a->data, buf, len);
    a->len = len;
    return a->fail_after_copy ? -4 : 0;
}
static const rngsnap_state_ops app_ops = {app_size, app_save, app_load};

static void app_set(app *a, const char *s)
{
    memset(a, 0, sizeof *a);
    snprintf(a->data, sizeof a->data, "%s", s);
    a->len = strlen(s);
}

static void app_state_round_trip(void **state)
{
    (void)state;
    app progress, gen;
    app_set(&progress, "epoch=3 step=1200");
    app_set(&gen, "private generator");
    rngsnap *ctx = ct_open(ini(MD_A), 0);
    assert_int_equal(rngsnap_register_state(ctx, "progress", &app_ops,
                                            &progress),
                     0);
    assert_int_equal(rngsnap_register_state(ctx, "gen", &app_ops, &gen), 0);
    assert_int_equal(rngsnap_seed_all(ctx, 3), 0);
    assert_int_equal(rngsnap_save(ctx, ckpt("app.ckpt"), 0), 0);
    uint32_t *w1 = ct_draw_all(ctx, 50);
    app_set(&progress, "epoch=4 step=1 (a longer, later state)");
    app_set(&gen, "moved on");
    assert_int_equal(rngsnap_load(ctx, ckpt("app.ckpt"), 0), 0);
    assert_int_equal(progress.len, strlen("epoch=3 step=1200"));
    assert_memory_equal(progress.data, "epoch=3 step=1200", progress.len);
    assert_memory_equal(gen.data, "private generator", gen.len);
    uint32_t *w2 = ct_draw_all(ctx, 50);
    assert_memory_equal(w1, w2, rngsnap_stream_count(ctx) * 50 * 4);
    free(w1);
    free(w2);

    /* the load callback fails for the second app state: the first one
     * and every stream go back to what they were (the loaded context
     * has drawn: loading again is on purpose, after rngsnap_branch; the
     * failed loads below leave it a branched one) */
    assert_int_equal(rngsnap_branch(ctx), 0);
    app_set(&progress, "progress now");
    app_set(&gen, "gen now");
    gen.fail_load = 1;
    ct_snap before = ct_take(ctx);
    assert_int_equal(rngsnap_load(ctx, ckpt("app.ckpt"), 0),
                     RNGSNAP_E_BACKEND);
    assert_msg(ctx, "app state gen");
    assert_msg(ctx, "rolled back");
    assert_memory_equal(progress.data, "progress now", progress.len);
    ct_snap after = ct_take(ctx);
    assert_true(ct_snap_equal(before, after));
    ct_snap_free(&after);

    /* the load callback of gen fails after taking the bytes in: gen is
     * put back too */
    app_set(&gen, "gen now");
    gen.fail_after_copy = 1;
    assert_int_equal(rngsnap_load(ctx, ckpt("app.ckpt"), 0),
                     RNGSNAP_E_BACKEND);
    assert_msg(ctx, "everything rolled back");
    assert_int_equal(gen.len, strlen("gen now"));
    assert_memory_equal(gen.data, "gen now", gen.len);
    assert_memory_equal(progress.data, "progress now", progress.len);
    gen.fail_after_copy = 0;

    /* a failing save callback: save refused, load refused untouched */
    gen.fail_load = 0;
    gen.fail_save = 1;
    assert_int_equal(rngsnap_save(ctx, ckpt("app2.ckpt"), 0),
                     RNGSNAP_E_BACKEND);
    assert_msg(ctx, "app state gen");
    assert_int_equal(access(ckpt("app2.ckpt"), F_OK), -1);
    assert_int_equal(rngsnap_load(ctx, ckpt("app.ckpt"), 0),
                     RNGSNAP_E_BACKEND);
    gen.fail_save = 0;
    after = ct_take(ctx);
    assert_true(ct_snap_equal(before, after));
    ct_snap_free(&before);
    ct_snap_free(&after);
    rngsnap_close(ctx);
}

static void app_state_on_one_side_only(void **state)
{
    (void)state;
    app progress, extra;
    app_set(&progress, "p");
    app_set(&extra, "e");
    rngsnap *ctx = ct_open(ini(MD_A), 0);
    assert_int_equal(rngsnap_register_state(ctx, "progress", &app_ops,
                                            &progress),
                     0);
    assert_int_equal(rngsnap_seed_all(ctx, 3), 0);
    assert_int_equal(rngsnap_save(ctx, ckpt("app1.ckpt"), 0), 0);
    rngsnap_close(ctx);

    /* checkpoint has it, this context does not register it */
    refused(ini(MD_A), ckpt("app1.ckpt"), RNGSNAP_E_MISMATCH,
            "checkpoint has app state progress, which this context did not "
            "register (rngsnap_register_state before the load); nothing "
            "restored");

    /* this context has one more */
    ctx = ct_open(ini(MD_A), 0);
    assert_int_equal(rngsnap_register_state(ctx, "progress", &app_ops,
                                            &progress),
                     0);
    assert_int_equal(rngsnap_register_state(ctx, "extra", &app_ops, &extra),
                     0);
    ct_snap before = ct_take(ctx);
    assert_int_equal(rngsnap_load(ctx, ckpt("app1.ckpt"), 0),
                     RNGSNAP_E_MISMATCH);
    assert_msg(ctx, "this context has app state extra (registered with "
                    "rngsnap_register_state), which the checkpoint lacks; "
                    "nothing restored");
    ct_snap after = ct_take(ctx);
    assert_true(ct_snap_equal(before, after));
    ct_snap_free(&before);
    ct_snap_free(&after);
    rngsnap_close(ctx);
}

static void register_state_arguments(void **state)
{
    (void)state;
    app a;
    app_set(&a, "x");
    rngsnap *ctx = ct_open(ini(MD_A), 0);
    char longname[300];
    memset(longname, 'n', 256);
    longname[256] = 0;
    rngsnap_state_ops partial = {app_size, NULL, app_load};
    assert_int_equal(rngsnap_register_state(ctx, NULL, &app_ops, &a),
                     RNGSNAP_E_INVALID);
    assert_int_equal(rngsnap_register_state(ctx, "", &app_ops, &a),
                     RNGSNAP_E_INVALID);
    assert_int_equal(rngsnap_register_state(ctx, longname, &app_ops, &a),
                     RNGSNAP_E_INVALID);
    longname[255] = 0;
    assert_int_equal(rngsnap_register_state(ctx, longname, &app_ops, &a), 0);
    assert_int_equal(rngsnap_register_state(ctx, "s", NULL, &a),
                     RNGSNAP_E_INVALID);
    assert_int_equal(rngsnap_register_state(ctx, "s", &partial, &a),
                     RNGSNAP_E_INVALID);
    assert_int_equal(rngsnap_register_state(ctx, "s", &app_ops, &a), 0);
    assert_int_equal(rngsnap_register_state(ctx, "s", &app_ops, &a),
                     RNGSNAP_E_INVALID);
    assert_msg(ctx, "already registered");
    assert_int_equal(rngsnap_register_state(NULL, "t", &app_ops, &a),
                     RNGSNAP_E_INVALID);
    /* a 255-byte name round-trips */
    assert_int_equal(rngsnap_seed_all(ctx, 1), 0);
    assert_int_equal(rngsnap_save(ctx, ckpt("long.ckpt"), 0), 0);
    assert_int_equal(rngsnap_load(ctx, ckpt("long.ckpt"), 0), 0);
    rngsnap_close(ctx);
}

/* ---- damaged files -------------------------------------------------------- */

/* A small checkpoint: one multidev stream and one app state.  Every byte
 * flipped (three ways) and every truncation is E_CORRUPT, through load
 * (live state unchanged, app load never called) and rngsnap_file_open. */
static void every_flip_and_truncation_refused(void **state)
{
    (void)state;
    app progress;
    app_set(&progress, "step=7");
    const char *small = ini("[backend.multidev]\nplugin = rngsnap_multidev\n"
                            "streams = a\ndevices = 1\n\n");
    rngsnap *ctx = ct_open(small, 0);
    assert_int_equal(rngsnap_register_state(ctx, "progress", &app_ops,
                                            &progress),
                     0);
    assert_int_equal(rngsnap_seed_all(ctx, 8), 0);
    assert_int_equal(rngsnap_save(ctx, ckpt("small.ckpt"), 0), 0);
    size_t len;
    uint8_t *good = ct_read(ckpt("small.ckpt"), &len);
    assert_non_null(good);
    free(ct_draw_all(ctx, 5));
    app_set(&progress, "step=9");
    ct_snap before = ct_take(ctx);
    const char *bad = ckpt("bad.ckpt");
    const uint8_t masks[] = {0x01, 0xff, 0x80};
    size_t tries = 0;
    /* i < len: flip byte i; i >= len: truncate to i - len bytes */
    for (size_t i = 0; i < 4 * len; i++) {
        size_t n = len, at = i / 3;
        if (i < 3 * len)
            good[at] ^= masks[i % 3];
        else
            n = i - 3 * len;
        ct_write(bad, good, n);
        if (i < 3 * len)
            good[at] ^= masks[i % 3];
        int rc = rngsnap_load(ctx, bad, 0);
        if (rc != RNGSNAP_E_CORRUPT)
            fail_msg("case %zu (%s %zu): %s: %s", i,
                     i < 3 * len ? "flip at" : "cut to",
                     i < 3 * len ? at : n, rngsnap_error_name(rc),
                     rngsnap_errmsg(ctx));
        assert_msg(ctx, "bad.ckpt");
        rngsnap_file *f;
        char err[512];
        assert_int_equal(rngsnap_file_open(bad, &f, err, sizeof err),
                         RNGSNAP_E_CORRUPT);
        assert_null(f);
        tries++;
    }
    assert_int_equal(tries, 3 * len + len);
    ct_snap after = ct_take(ctx);
    assert_true(ct_snap_equal(before, after));
    /* and the undamaged file still loads */
    assert_int_equal(rngsnap_load(ctx, ckpt("small.ckpt"), 0), 0);
    assert_memory_equal(progress.data, "step=7", 6);
    ct_snap_free(&before);
    ct_snap_free(&after);
    free(good);
    rngsnap_close(ctx);
}

/* Rewrite one section's state_format (or state) with valid checksums. */
static void tamper(const char *from, const char *to, size_t sec,
                   int zero_state, uint32_t format)
{
    size_t len;
    uint8_t *b = ct_read(from, &len);
    rs_fmt_view v;
    char err[512];
    assert_int_equal(rs_fmt_decode(b, len, from, 0, &v, err, sizeof err), 0);
    rs_fmt_section *s = &v.sections[sec];
    uint8_t *p = b + s->offset;
    uint8_t *st = (uint8_t *)s->pub.state;
    if (zero_state)
        memset(st, 0, s->pub.state_size);
    else
        for (int i = 0; i < 4; i++)
            st[-8 + i] = (uint8_t)(format >> (8 * i));
    uint64_t h = XXH3_64bits(p, s->size - 8);
    for (int i = 0; i < 8; i++)
        p[s->size - 8 + i] = (uint8_t)(h >> (8 * i));
    h = XXH3_64bits(b, len - 8);
    for (int i = 0; i < 8; i++)
        b[len - 8 + i] = (uint8_t)(h >> (8 * i));
    rs_fmt_view_free(&v);
    ct_write(to, b, len);
    free(b);
}

static void state_format_and_plugin_check(void **state)
{
    (void)state;
    const char *cfg = ini(MD_A);
    save_with(cfg, ckpt("fmt.ckpt"));
    size_t first_md = ncpu(); /* cpu sections come first */
    tamper(ckpt("fmt.ckpt"), ckpt("fmt2.ckpt"), first_md + 1, 0, 0x32564d44);
    refused(cfg, ckpt("fmt2.ckpt"), RNGSNAP_E_MISMATCH,
            "(multidev:0/b): state format \"DMV2\" (0x32564d44) of 16 "
            "bytes, but plugin multidev (");
    refused(cfg, ckpt("fmt2.ckpt"), RNGSNAP_E_MISMATCH,
            "rngsnap_multidev.so) uses format \"MDV1\" (0x3156444d) of 16 "
            "bytes; nothing restored (configuration ");
    /* the plugin's validate_state refuses an all-zero xorshift state */
    tamper(ckpt("fmt.ckpt"), ckpt("zero.ckpt"), first_md + 3, 1, 0);
    refused(cfg, ckpt("zero.ckpt"), RNGSNAP_E_CORRUPT, "multidev:1/b");
}

/* ---- files and flags ---------------------------------------------------- */

static void no_overwrite_without_replace(void **state)
{
    (void)state;
    rngsnap *ctx = ct_open(ini(MD_A), 0);
    assert_int_equal(rngsnap_seed_all(ctx, 1), 0);
    const char *p = ckpt("once.ckpt");
    assert_int_equal(rngsnap_save(ctx, p, 0), 0);
    size_t len1, len2;
    uint8_t *first = ct_read(p, &len1);
    free(ct_draw_all(ctx, 10));
    assert_int_equal(rngsnap_save(ctx, p, 0), RNGSNAP_E_EXISTS);
    assert_msg(ctx, p);
    /* C's words (a Python context says replace=True: test_python_words) */
    assert_msg(ctx, " exists; pass RNGSNAP_SAVE_REPLACE to replace it");
    uint8_t *still = ct_read(p, &len2);
    assert_int_equal(len1, len2);
    assert_memory_equal(first, still, len1);
    free(still);
    assert_int_equal(rngsnap_save(ctx, p, RNGSNAP_SAVE_REPLACE), 0);
    still = ct_read(p, &len2);
    assert_int_equal(len1, len2);
    assert_memory_not_equal(first, still, len1);
    free(still);
    free(first);
    int tmp;
    ct_count_entries(dir, &tmp);
    assert_false(tmp);
    /* flags and arguments */
    assert_int_equal(rngsnap_save(ctx, p, 0x100), RNGSNAP_E_INVALID);
    assert_int_equal(rngsnap_load(ctx, p, 0x1), RNGSNAP_E_INVALID);
    assert_int_equal(rngsnap_save(ctx, NULL, 0), RNGSNAP_E_INVALID);
    assert_int_equal(rngsnap_load(ctx, NULL, 0), RNGSNAP_E_INVALID);
    assert_int_equal(rngsnap_save(NULL, p, 0), RNGSNAP_E_INVALID);
    assert_int_equal(rngsnap_load(NULL, p, 0), RNGSNAP_E_INVALID);
    assert_int_equal(rngsnap_load(ctx, ckpt("absent.ckpt"), 0), RNGSNAP_E_IO);
    assert_msg(ctx, "absent.ckpt");
    rngsnap_close(ctx);
}

/* ---- resume gate ---------------------------------------------------------- */

static void resume_gate_both_ways(void **state)
{
    (void)state;
    const char *cfg = ini(MD_A);
    save_with(cfg, ckpt("gate.ckpt"));
    rngsnap *ctx = ct_open(cfg, RNGSNAP_RESUME);
    rngsnap_stream *s = rngsnap_stream_at(ctx, 0);
    uint32_t w[4];
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, w, 4), RNGSNAP_E_ORDER);
    char label[300];
    snprintf(label, sizeof label, "%s:%d/%s", rngsnap_stream_backend(s),
             rngsnap_stream_device(s), rngsnap_stream_name(s));
    assert_msg(ctx, label);
    /* saving before the load would overwrite the checkpoint with fresh
     * states */
    assert_int_equal(rngsnap_save(ctx, ckpt("gate.ckpt"),
                                  RNGSNAP_SAVE_REPLACE),
                     RNGSNAP_E_ORDER);
    assert_msg(ctx, ": this context was opened with RNGSNAP_RESUME and has "
               "not loaded a checkpoint yet (call rngsnap_load, "
               "rngsnap_load_mem or rngsnap_mpi_load first)");
    /* a failed load keeps the gate shut */
    assert_int_equal(rngsnap_load(ctx, ckpt("absent.ckpt"), 0), RNGSNAP_E_IO);
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, w, 4), RNGSNAP_E_ORDER);
    assert_int_equal(rngsnap_load(ctx, ckpt("gate.ckpt"), 0), 0);
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, w, 4), 0);
    assert_int_equal(rngsnap_seed_all(ctx, 1), RNGSNAP_E_ORDER);
    assert_int_equal(rngsnap_save(ctx, ckpt("gate2.ckpt"), 0), 0);
    rngsnap_close(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(all_backends_saved_and_restored),
        cmocka_unit_test(backend_on_one_side_only),
        cmocka_unit_test(device_count_in_admin_terms),
        cmocka_unit_test(order_of_backends_does_not_matter),
        cmocka_unit_test(optional_backend_on_one_node_only),
        cmocka_unit_test(rank_mismatch),
        cmocka_unit_test(set_state_failure_rolls_back),
        cmocka_unit_test(half_done_set_state_rolls_back),
        cmocka_unit_test(get_state_failure_fails_save),
        cmocka_unit_test(app_state_round_trip),
        cmocka_unit_test(app_state_on_one_side_only),
        cmocka_unit_test(register_state_arguments),
        cmocka_unit_test(every_flip_and_truncation_refused),
        cmocka_unit_test(state_format_and_plugin_check),
        cmocka_unit_test(no_overwrite_without_replace),
        cmocka_unit_test(resume_gate_both_ways),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
