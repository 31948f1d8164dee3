/*
 * fuzz_load.c - fuzz target: rngsnap_load's whole path after the read
 * (rs_load_image: decode, match against the registry, validate, back up,
 * set, roll back) on arbitrary bytes, against two live registries of the
 * cpu plugin and the multidev test plugin (2 devices) with two app states.
 *
 * Registry "ok" accepts good files.  Registry "failing" is the same with
 * the multidev hook fail_set_state_on_device = 1, so every load that gets
 * past validation fails midway and must roll back.  App state "progress"
 * fails its load callback AFTER copying the bytes in when the state ends
 * in 0xEE: a callback failing halfway, which the core must undo too.
 *
 * Invariants, for each registry, with the input as it is and with its
 * checksums repaired:
 *   - a failed load returns an RNGSNAP_E_* code with a message, and every
 *     stream state and app state is byte for byte what it was before;
 *   - a successful load ("ok" only; "failing" can never succeed) leaves
 *     every entry with exactly its section's state.
 *
 * RNGSNAP_FUZZ_SAVE_SEED=path: save a checkpoint of "ok" there and exit
 * (how corpus/load/ got its seed files).  RNGSNAP_FUZZ_VERBOSE=1: print
 * each load's result (to see which paths a corpus reaches).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clean_env.h"
#include "context.h"
#include "format.h"
#include "fuzz.h"
#include "internal.h"

#ifndef FUZZ_PLUGIN_DIR
#error "FUZZ_PLUGIN_DIR (the cpu plugin's folder) must be defined"
#endif
#ifndef FUZZ_MULTIDEV_DIR
#error "FUZZ_MULTIDEV_DIR (the multidev test plugin's folder) must be defined"
#endif

int LLVMFuzzerInitialize(int *argc, char ***argv);

/* ---- app states ---------------------------------------------------------- */

#define APP_MAX 64

typedef struct app {
    uint8_t data[APP_MAX];
    size_t len;
    int fixed; /* load refuses any other size than len */
} app;

static size_t app_size(void *user) { return ((app *)user)->len; }

static int app_save(void *user, void *buf, size_t len)
{
    app *a = user;
    if (len != a->len)
        return 1;
    memcpy(buf, a->data, len);
    return 0;
}

static int app_load(void *user, const void *buf, size_t len)
{
    app *a = user;
    if (len > APP_MAX || (a->fixed && len != a->len))
        return 1;
    memcpy(a->data, buf, len);
    a->len = len;
    /* A callback that fails halfway: its own bytes are already in. */
    if (len && a->data[len - 1] == 0xEE)
        return 2;
    return 0;
}

static const rngsnap_state_ops app_ops = {app_size, app_save, app_load};

/* ---- registries ------------------------------------------------------------ */

typedef struct reg {
    const char *name;
    rngsnap *ctx;
    app progress, gen;
} reg;

static reg regs[2] = {{.name = "ok"}, {.name = "failing"}};
static int verbose;

static void open_reg(reg *r, const char *dir, const char *hook)
{
    char ini[600];
    snprintf(ini, sizeof ini, "%s/%s.ini", dir, r->name);
    FILE *f = fopen(ini, "w");
    FUZZ_CHECK(f != NULL, "cannot write %s", ini);
    fprintf(f,
            "[rngsnap]\n"
            "plugin_dir = %s:%s\n"
            "[backend.cpu]\n"
            "streams = default, dropout\n"
            "[backend.multidev]\n"
            "devices = 2\n"
            "streams = a, b\n"
            "%s\n",
            FUZZ_PLUGIN_DIR, FUZZ_MULTIDEV_DIR, hook);
    fclose(f);
    int rc = rngsnap_open(&r->ctx, ini, 0);
    FUZZ_CHECK(rc == RNGSNAP_OK, "rngsnap_open %s: %s", ini,
               rngsnap_errmsg(NULL));
    unlink(ini);
    r->progress.fixed = 0;
    r->gen.fixed = 1;
    FUZZ_CHECK(rngsnap_register_state(r->ctx, "progress", &app_ops,
                                      &r->progress) == 0, "register");
    FUZZ_CHECK(rngsnap_register_state(r->ctx, "gen", &app_ops, &r->gen)
                   == 0, "register");
}

/* The same starting point before every load.  One context takes every
 * input: after a load that succeeded it is a resumed one, which refuses
 * seed_all; the harness starts over on purpose (rngsnap_branch). */
static void reset(reg *r)
{
    if (atomic_load(&r->ctx->loaded))
        FUZZ_CHECK(rngsnap_branch(r->ctx) == RNGSNAP_OK, "branch: %s",
                   rngsnap_errmsg(r->ctx));
    FUZZ_CHECK(rngsnap_seed_all(r->ctx, 2024) == RNGSNAP_OK, "seed_all: %s",
               rngsnap_errmsg(r->ctx));
    uint32_t w[3];
    rngsnap_stream *s = rngsnap_stream_at(r->ctx, 1);
    FUZZ_CHECK(rngsnap_generate(s, RNGSNAP_U32, w, 3) == RNGSNAP_OK,
               "generate");
    r->progress.len = 12;
    memcpy(r->progress.data, "epoch=1 step", 12);
    r->gen.len = 16;
    memcpy(r->gen.data, "private gen 0123", 16);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    test_clean_env();
    const char *tmp = getenv("TMPDIR");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/rngsnap-fuzz-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    FUZZ_CHECK(mkdtemp(dir) != NULL, "mkdtemp %s", dir);
    open_reg(&regs[0], dir, "");
    open_reg(&regs[1], dir, "fail_set_state_on_device = 1");
    rmdir(dir);
    verbose = getenv("RNGSNAP_FUZZ_VERBOSE") != NULL;
    const char *seed = getenv("RNGSNAP_FUZZ_SAVE_SEED");
    if (seed && *seed) {
        reset(&regs[0]);
        int rc = rngsnap_save(regs[0].ctx, seed, RNGSNAP_SAVE_REPLACE);
        FUZZ_CHECK(rc == RNGSNAP_OK, "save: %s", rngsnap_errmsg(regs[0].ctx));
        exit(0);
    }
    return 0;
}

/* ---- snapshots ------------------------------------------------------------- */

typedef struct snap {
    uint8_t bytes[4096];
    size_t len;
} snap;

static void take(const reg *r, snap *s)
{
    rngsnap *ctx = r->ctx;
    s->len = 0;
    for (size_t i = 0; i < ctx->nstreams; i++) {
        struct rngsnap_stream *e = &ctx->streams[i];
        uint32_t n = e->backend->vt->state_size;
        FUZZ_CHECK(s->len + n <= sizeof s->bytes, "snapshot too small");
        FUZZ_CHECK(e->backend->vt->get_state(e->handle, s->bytes + s->len, n)
                       == RNGSNAP_OK, "get_state");
        s->len += n;
    }
    const app *apps[2] = {&r->progress, &r->gen};
    for (int i = 0; i < 2; i++) {
        memcpy(s->bytes + s->len, &apps[i]->len, sizeof apps[i]->len);
        s->len += sizeof apps[i]->len;
        memcpy(s->bytes + s->len, apps[i]->data, apps[i]->len);
        s->len += apps[i]->len;
    }
}

/* After a successful load: every entry holds its section's state. */
static void check_restored(const reg *r, const uint8_t *buf, size_t len)
{
    rs_fmt_view v;
    char err[512];
    FUZZ_CHECK(rs_fmt_decode(buf, len, "fuzz", 0, &v, err, sizeof err)
                   == RNGSNAP_OK, "load accepted what decode refuses: %s",
               err);
    rngsnap *ctx = r->ctx;
    FUZZ_CHECK(v.header.section_count == ctx->nstreams + ctx->napps,
               "%u sections restored into %zu entries",
               v.header.section_count, ctx->nstreams + ctx->napps);
    for (uint32_t i = 0; i < v.header.section_count; i++) {
        const rngsnap_file_section *sec = &v.sections[i].pub;
        if (sec->kind == RNGSNAP_SECTION_APP) {
            const app *a = strcmp(sec->name, "progress") == 0 ? &r->progress
                           : strcmp(sec->name, "gen") == 0    ? &r->gen
                                                              : NULL;
            FUZZ_CHECK(a && a->len == sec->state_size
                           && memcmp(a->data, sec->state, a->len) == 0,
                       "app state %s not restored", sec->name);
            continue;
        }
        rngsnap_stream *s = NULL;
        FUZZ_CHECK(rngsnap_stream_find(ctx, sec->backend, sec->device,
                                       sec->name, &s) == RNGSNAP_OK,
                   "section %s:%d/%s has no entry", sec->backend,
                   sec->device, sec->name);
        uint8_t st[64];
        FUZZ_CHECK(sec->state_size <= sizeof st, "state size");
        FUZZ_CHECK(s->backend->vt->get_state(s->handle, st, sec->state_size)
                       == RNGSNAP_OK, "get_state");
        FUZZ_CHECK(memcmp(st, sec->state, sec->state_size) == 0,
                   "%s:%d/%s not restored", sec->backend, sec->device,
                   sec->name);
    }
    rs_fmt_view_free(&v);
}

static void load_one(reg *r, const uint8_t *buf, size_t len)
{
    static snap before, after;
    reset(r);
    take(r, &before);
    int rc = rs_load_image(r->ctx, "fuzz.ckpt", buf, len);
    if (verbose)
        printf("%s %s: %s\n", r->name, rngsnap_error_name(rc),
               rc ? rngsnap_errmsg(r->ctx) : "restored");
    if (rc == RNGSNAP_OK) {
        FUZZ_CHECK(r == &regs[0], "registry %s loaded although set_state "
                   "of multidev:1 always fails", r->name);
        check_restored(r, buf, len);
        return;
    }
    const char *msg = rngsnap_errmsg(r->ctx);
    FUZZ_CHECK(rc > RNGSNAP_OK && rc <= RNGSNAP_E_BACKEND, "rc %d", rc);
    FUZZ_CHECK(msg && *msg && strcmp(msg, "no error") != 0, "no message");
    take(r, &after);
    FUZZ_CHECK(before.len == after.len
                   && memcmp(before.bytes, after.bytes, before.len) == 0,
               "registry %s changed by a failed load (%s): %s", r->name,
               rngsnap_error_name(rc), msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *fixed = fuzz_fix_checksums(data, size);
    for (int i = 0; i < 2; i++) {
        load_one(&regs[i], data, size);
        load_one(&regs[i], fixed, size);
    }
    free(fixed);
    return 0;
}
