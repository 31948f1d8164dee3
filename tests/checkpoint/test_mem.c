/*
 * test_mem.c - checkpoints as bytes (rngsnap_save_mem, rngsnap_load_mem,
 * rngsnap_free): the bytes are the file format, and every promise of
 * rngsnap_save/rngsnap_load holds for them: bit-exact resume with app
 * states, the same bytes as a file of the same state (both ways), every
 * flipped byte and every truncation refused with nothing changed, the
 * resume gate, rank and world size, and exact messages for bad
 * arguments.
 *
 * time() is wrapped (-Wl,--wrap=time, the core is linked statically) so
 * that a file and a memory save of the same state carry the same
 * creation time and can be compared byte for byte.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <cmocka.h>

#include "ckpt_test.h"
#include "format.h"

/* ---- the pinned clock ----------------------------------------------------- */

static time_t pinned; /* 0: the real clock */
time_t __real_time(time_t *t);
time_t __wrap_time(time_t *t);
time_t __wrap_time(time_t *t)
{
    if (!pinned)
        return __real_time(t);
    if (t)
        *t = pinned;
    return pinned;
}

/* ---- fixtures ------------------------------------------------------------- */

static const char *dir;

/* config/clusters/mixed.ini: all five backends (the device ones
 * emulated), 18 streams. */
static const char *mixed(void) { return MIXED_INI; }

/* An app state: a short string, and how often each callback ran. */
typedef struct app {
    char data[64];
    size_t len;
    int loads, saves;
} app;

static size_t app_size(void *u) { return ((app *)u)->len; }
static int app_save(void *u, void *buf, size_t len)
{
    app *a = u;
    a->saves++;
    memcpy(buf, a->data, len < a->len ? len : a->len);
    return 0;
}
static int app_load(void *u, const void *buf, size_t len)
{
    app *a = u;
    a->loads++;
    if (len > sizeof a->data)
        return -1;
    memcpy(a->data, buf, len);
    a->len = len;
    return 0;
}
static const rngsnap_state_ops app_ops = {app_size, app_save, app_load};

static void app_set(app *a, const char *s)
{
    snprintf(a->data, sizeof a->data, "%s", s);
    a->len = strlen(s);
}

/* Seeded context of mixed.ini with app state "progress" = a, advanced a
 * little so that positions are not the seeded ones. */
static rngsnap *open_with_app(app *a, unsigned flags)
{
    rngsnap *ctx = ct_open(mixed(), flags);
    assert_int_equal(rngsnap_register_state(ctx, "progress", &app_ops, a),
                     0);
    if (!(flags & RNGSNAP_RESUME)) {
        assert_int_equal(rngsnap_seed_all(ctx, 0x5eed), 0);
        free(ct_draw_all(ctx, 7));
    }
    return ctx;
}

static void save_mem_ok(rngsnap *ctx, void **data, size_t *size)
{
    int rc = rngsnap_save_mem(ctx, data, size, 0);
    if (rc)
        fail_msg("save_mem: %s: %s", rngsnap_error_name(rc),
                 rngsnap_errmsg(ctx));
    assert_non_null(*data);
}

/* ---- round trip ----------------------------------------------------------- */

static void round_trip_resumes_bit_exactly(void **state)
{
    (void)state;
    app a = {0};
    app_set(&a, "epoch=3 step=1200");
    rngsnap *ctx = open_with_app(&a, 0);
    size_t n = rngsnap_stream_count(ctx);
    void *data;
    size_t size;
    save_mem_ok(ctx, &data, &size);
    uint32_t *w1 = ct_draw_all(ctx, 1000);
    app_set(&a, "epoch=4 step=1 (later)");

    /* the same context goes back */
    assert_int_equal(rngsnap_load_mem(ctx, data, size, 0), 0);
    assert_int_equal(a.len, strlen("epoch=3 step=1200"));
    assert_memory_equal(a.data, "epoch=3 step=1200", a.len);
    uint32_t *w2 = ct_draw_all(ctx, 1000);
    assert_memory_equal(w1, w2, n * 1000 * sizeof *w1);

    /* a fresh RESUME context of the same config resumes identically */
    app b = {0};
    app_set(&b, "fresh");
    rngsnap *other = open_with_app(&b, RNGSNAP_RESUME);
    assert_int_equal(rngsnap_load_mem(other, data, size, 0), 0);
    assert_memory_equal(b.data, "epoch=3 step=1200", b.len);
    uint32_t *w3 = ct_draw_all(other, 1000);
    assert_memory_equal(w1, w3, n * 1000 * sizeof *w1);

    free(w1);
    free(w2);
    free(w3);
    rngsnap_free(data);
    rngsnap_free(NULL);
    rngsnap_close(other);
    rngsnap_close(ctx);
}

/* ---- the bytes are the file format ----------------------------------------- */

static void bytes_equal_a_file_of_the_same_state(void **state)
{
    (void)state;
    app a = {0};
    app_set(&a, "progress 17");
    rngsnap *ctx = open_with_app(&a, 0);
    pinned = 1767225600; /* 2026-01-01 */
    const char *file = ct_path(dir, "same.ckpt");
    assert_int_equal(rngsnap_save(ctx, file, RNGSNAP_SAVE_REPLACE), 0);
    void *data;
    size_t size;
    save_mem_ok(ctx, &data, &size);
    pinned = 0;
    size_t flen;
    uint8_t *fbytes = ct_read(file, &flen);
    assert_non_null(fbytes);
    assert_int_equal(size, flen);
    assert_memory_equal(data, fbytes, size);
    free(fbytes);
    rngsnap_free(data);
    rngsnap_close(ctx);
}

/* Bytes written to a file verify (the reader `rngsnap verify` uses) and
 * load with rngsnap_load; a file's bytes load with rngsnap_load_mem. */
static void bytes_and_files_load_both_ways(void **state)
{
    (void)state;
    app a = {0};
    app_set(&a, "progress 5");
    rngsnap *ctx = open_with_app(&a, 0);
    size_t n = rngsnap_stream_count(ctx);
    void *data;
    size_t size;
    save_mem_ok(ctx, &data, &size);
    ct_snap at_save = ct_take(ctx);
    const char *file = ct_path(dir, "from-mem.ckpt");
    ct_write(file, data, size);

    rngsnap_file *f;
    char err[512];
    int rc = rngsnap_file_open(file, &f, err, sizeof err);
    if (rc)
        fail_msg("rngsnap_file_open: %s", err);
    assert_int_equal(rngsnap_file_section_count(f), n + 1);
    assert_string_equal(rngsnap_file_section_at(f, n)->name, "progress");
    rngsnap_file_close(f);

    free(ct_draw_all(ctx, 50));
    app_set(&a, "progress 6");
    assert_int_equal(rngsnap_load(ctx, file, 0), 0);
    ct_snap loaded = ct_take(ctx);
    assert_true(ct_snap_equal(at_save, loaded));
    assert_memory_equal(a.data, "progress 5", a.len);
    ct_snap_free(&loaded);

    /* the other way: a file written by rngsnap_save, given as bytes */
    const char *saved = ct_path(dir, "saved.ckpt");
    assert_int_equal(rngsnap_save(ctx, saved, RNGSNAP_SAVE_REPLACE), 0);
    size_t flen;
    uint8_t *fbytes = ct_read(saved, &flen);
    assert_non_null(fbytes);
    free(ct_draw_all(ctx, 50));
    app_set(&a, "progress 7");
    /* a load after draws, on purpose: the loaded context's run is left
     * first (otherwise RNGSNAP_E_ORDER, test_gate.c) */
    assert_int_equal(rngsnap_branch(ctx), 0);
    assert_int_equal(rngsnap_load_mem(ctx, fbytes, flen, 0), 0);
    loaded = ct_take(ctx);
    assert_true(ct_snap_equal(at_save, loaded));
    assert_memory_equal(a.data, "progress 5", a.len);

    free(fbytes);
    ct_snap_free(&loaded);
    ct_snap_free(&at_save);
    rngsnap_free(data);
    rngsnap_close(ctx);
}

/* ---- damaged bytes ----------------------------------------------------------- */

/* A small checkpoint (one stream, one app state): every byte flipped
 * three ways and every truncation to 1..len-1 bytes is E_CORRUPT naming
 * "checkpoint bytes", and changes nothing: the positions, the app state
 * (whose load callback never runs), and what the streams draw next. */
static void every_flip_and_truncation_refused(void **state)
{
    (void)state;
    app a = {0};
    app_set(&a, "step=7");
    const char *small = ct_write_ini(dir, "small.ini",
                                     "[backend.multidev]\nplugin = "
                                     "rngsnap_multidev\nstreams = a\n"
                                     "devices = 1\n\n");
    char small_ini[1024];
    snprintf(small_ini, sizeof small_ini, "%s", small);
    rngsnap *ctx = ct_open(small_ini, 0);
    assert_int_equal(rngsnap_register_state(ctx, "progress", &app_ops, &a),
                     0);
    assert_int_equal(rngsnap_seed_all(ctx, 8), 0);
    void *data;
    size_t len;
    save_mem_ok(ctx, &data, &len);
    uint8_t *good = data;
    free(ct_draw_all(ctx, 5));
    app_set(&a, "step=9");
    ct_snap before = ct_take(ctx);
    /* the twin: a context at the same live state, never handed bad bytes */
    app twin_app = {0};
    rngsnap *twin = ct_open(small_ini, 0);
    assert_int_equal(rngsnap_register_state(twin, "progress", &app_ops,
                                            &twin_app),
                     0);
    void *live;
    size_t live_len;
    save_mem_ok(ctx, &live, &live_len);
    assert_int_equal(rngsnap_load_mem(twin, live, live_len, 0), 0);
    rngsnap_free(live);

    int loads = a.loads;
    uint8_t *bad = malloc(len);
    assert_non_null(bad);
    const uint8_t masks[] = {0x01, 0xff, 0x80};
    size_t tries = 0;
    /* i < 3 len: flip byte i / 3 with mask i % 3; then truncate to
     * 1..len-1 bytes (each in its own buffer of that size, so that
     * ASan and valgrind see any read past it) */
    for (size_t i = 0; i < 3 * len + len - 1; i++) {
        size_t n = len, at = i / 3;
        int flip = i < 3 * len;
        if (!flip)
            n = i - 3 * len + 1;
        uint8_t *b = flip ? bad : malloc(n);
        assert_non_null(b);
        memcpy(b, good, n);
        if (flip)
            b[at] ^= masks[i % 3];
        int rc = rngsnap_load_mem(ctx, b, n, 0);
        if (rc != RNGSNAP_E_CORRUPT)
            fail_msg("case %zu (%s %zu): %s: %s", i,
                     flip ? "flip at" : "cut to", flip ? at : n,
                     rngsnap_error_name(rc), rngsnap_errmsg(ctx));
        ct_assert_msg(ctx, "checkpoint bytes: ");
        ct_assert_msg(ctx, "; nothing restored");
        if (!flip)
            free(b);
        tries++;
    }
    assert_int_equal(tries, 3 * len + len - 1);
    assert_int_equal(a.loads, loads);
    assert_memory_equal(a.data, "step=9", a.len);
    ct_snap after = ct_take(ctx);
    assert_true(ct_snap_equal(before, after));
    uint32_t *w = ct_draw_all(ctx, 100), *wt = ct_draw_all(twin, 100);
    assert_memory_equal(w, wt, rngsnap_stream_count(ctx) * 100 * sizeof *w);
    free(w);
    free(wt);

    /* and the undamaged bytes still load */
    assert_int_equal(rngsnap_load_mem(ctx, good, len, 0), 0);
    assert_memory_equal(a.data, "step=7", a.len);
    ct_snap_free(&before);
    ct_snap_free(&after);
    free(bad);
    rngsnap_free(data);
    rngsnap_close(twin);
    rngsnap_close(ctx);
}

/* More than a checkpoint may hold is refused before a byte is read
 * (the pages are reserved, never touched). */
/* A flip in a section's header hides which entry the section held: the
 * load names the entry this context saves at that place, in C words. */
static void damaged_section_names_its_entry(void **state)
{
    (void)state;
    app a = {0};
    app_set(&a, "p");
    rngsnap *ctx = open_with_app(&a, 0);
    void *data;
    size_t size;
    save_mem_ok(ctx, &data, &size);
    size_t n = rngsnap_stream_count(ctx), at[64], count = 0;
    for (size_t off = RS_FMT_HEADER_SIZE; off < size - RS_FMT_TRAILER_SIZE;
         count++) {
        assert_true(count < 64);
        at[count] = off;
        uint32_t sz;
        memcpy(&sz, (uint8_t *)data + off + 4, 4);
        off += sz;
    }
    assert_int_equal(count, n + 1); /* the streams, then "progress" */
    assert_true(n >= 2);
    ct_snap before = ct_take(ctx);
    for (size_t i = 1; i <= n; i += n - 1) {
        uint8_t *bad = malloc(size);
        memcpy(bad, data, size);
        bad[at[i]] ^= 4; /* the kind: no label can be read */
        assert_int_equal(rngsnap_load_mem(ctx, bad, size, 0),
                         RNGSNAP_E_CORRUPT);
        char entry[300], want[600];
        if (i < n) {
            rngsnap_stream *s = rngsnap_stream_at(ctx, i);
            snprintf(entry, sizeof entry, "%s:%d/%s",
                     rngsnap_stream_backend(s), rngsnap_stream_device(s),
                     rngsnap_stream_name(s));
        } else {
            snprintf(entry, sizeof entry, "app state progress");
        }
        snprintf(want, sizeof want, "checkpoint bytes: section %zu at byte "
                 "%zu: checksum mismatch (its label cannot be read from the "
                 "damaged bytes); this context saves %s there; nothing "
                 "restored", i, at[i], entry);
        assert_string_equal(rngsnap_errmsg(ctx), want);
        free(bad);
    }
    /* A flip in the device field: the header reads another entry, which
     * the message gives only as read from the damaged bytes, next to the
     * entry this context saves there (issue 31, item 5). */
    rngsnap_stream *s1 = rngsnap_stream_at(ctx, 1);
    const char *b1 = rngsnap_stream_backend(s1);
    int d1 = rngsnap_stream_device(s1);
    size_t dev_at = at[1] + 8 + 2 + strlen(b1) + 1; /* kind, size, name */
    uint8_t *bad = malloc(size);
    memcpy(bad, data, size);
    bad[dev_at] ^= 16;
    assert_int_equal(rngsnap_load_mem(ctx, bad, size, 0), RNGSNAP_E_CORRUPT);
    char want[600];
    snprintf(want, sizeof want, "checkpoint bytes: section 1 at byte %zu: "
             "checksum mismatch (its label as read from the damaged bytes: "
             "%s:%d/%s); this context saves %s:%d/%s there; nothing "
             "restored", at[1], b1, d1 ^ 16, rngsnap_stream_name(s1), b1, d1,
             rngsnap_stream_name(s1));
    assert_string_equal(rngsnap_errmsg(ctx), want);
    /* the state damaged, the header sound: the label read is the entry's
     * own, so nothing is added */
    bad[dev_at] ^= 16;
    bad[at[2] - 9] ^= 1; /* the last state byte of section 1 */
    assert_int_equal(rngsnap_load_mem(ctx, bad, size, 0), RNGSNAP_E_CORRUPT);
    snprintf(want, sizeof want, "checkpoint bytes: section 1 at byte %zu: "
             "checksum mismatch (its label as read from the damaged bytes: "
             "%s:%d/%s); nothing restored", at[1], b1, d1,
             rngsnap_stream_name(s1));
    assert_string_equal(rngsnap_errmsg(ctx), want);
    free(bad);
    ct_snap after = ct_take(ctx);
    assert_true(ct_snap_equal(before, after));
    ct_snap_free(&before);
    ct_snap_free(&after);
    assert_int_equal(a.loads, 0);
    rngsnap_free(data);
    rngsnap_close(ctx);
}

static void oversized_bytes_refused(void **state)
{
    (void)state;
    rngsnap *ctx = ct_open(mixed(), 0);
    size_t n = RS_FMT_FILE_MAX + 1;
    void *big = mmap(NULL, n, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS
                                             | MAP_NORESERVE, -1, 0);
    assert_true(big != MAP_FAILED);
    assert_int_equal(rngsnap_load_mem(ctx, big, n, 0), RNGSNAP_E_CORRUPT);
    char want[200];
    snprintf(want, sizeof want, "checkpoint bytes: %zu bytes, more than "
             "the %zu a checkpoint may hold; nothing restored", n,
             (size_t)RS_FMT_FILE_MAX);
    assert_string_equal(rngsnap_errmsg(ctx), want);
    munmap(big, n);
    rngsnap_close(ctx);
}

/* ---- matching: rank, world size, app states ------------------------------- */

/* load_mem(data) on ctx is refused with want and a message containing
 * text, and no stream state changes. */
static void refused_mem(rngsnap *ctx, const void *data, size_t size,
                        int want, const char *text)
{
    ct_snap before = ct_take(ctx);
    int rc = rngsnap_load_mem(ctx, data, size, 0);
    if (rc != want)
        fail_msg("load_mem: %s (%s), wanted %s", rngsnap_error_name(rc),
                 rngsnap_errmsg(ctx), rngsnap_error_name(want));
    ct_assert_msg(ctx, text);
    ct_snap after = ct_take(ctx);
    assert_true(ct_snap_equal(before, after));
    ct_snap_free(&before);
    ct_snap_free(&after);
}

static void rank_and_world_size_checked(void **state)
{
    (void)state;
    rngsnap *ctx = ct_open(mixed(), 0);
    assert_int_equal(rngsnap_set_rank(ctx, 1, 4), 0);
    assert_int_equal(rngsnap_seed_all(ctx, 1), 0);
    void *data;
    size_t size;
    save_mem_ok(ctx, &data, &size);
    rngsnap_close(ctx);

    ctx = ct_open(mixed(), 0);
    assert_int_equal(rngsnap_set_rank(ctx, 0, 2), 0);
    assert_int_equal(rngsnap_seed_all(ctx, 1), 0);
    refused_mem(ctx, data, size, RNGSNAP_E_MISMATCH,
                "checkpoint bytes: checkpoint is rank 1 of 4, this process "
                "is rank 0 of 2; nothing restored");
    /* same rank, another world size */
    assert_int_equal(rngsnap_set_rank(ctx, 1, 2), 0);
    refused_mem(ctx, data, size, RNGSNAP_E_MISMATCH,
                "checkpoint bytes: checkpoint is rank 1 of 4, this process "
                "is rank 1 of 2; nothing restored");
    assert_int_equal(rngsnap_set_rank(ctx, 1, 4), 0);
    assert_int_equal(rngsnap_load_mem(ctx, data, size, 0), 0);
    rngsnap_free(data);
    rngsnap_close(ctx);
}

static void app_states_must_match(void **state)
{
    (void)state;
    app a = {0};
    app_set(&a, "p");
    rngsnap *ctx = open_with_app(&a, 0);
    void *data;
    size_t size;
    save_mem_ok(ctx, &data, &size);
    rngsnap_close(ctx);

    ctx = ct_open(mixed(), 0); /* no app state registered */
    assert_int_equal(rngsnap_seed_all(ctx, 2), 0);
    refused_mem(ctx, data, size, RNGSNAP_E_MISMATCH,
                "checkpoint bytes: checkpoint has app state progress, which "
                "this context did not register (rngsnap_register_state "
                "before the load); nothing restored");
    rngsnap_close(ctx);

    /* and the other way: one more app state here */
    app extra = {0};
    app_set(&extra, "x");
    ctx = open_with_app(&a, 0);
    assert_int_equal(rngsnap_register_state(ctx, "extra", &app_ops, &extra),
                     0);
    refused_mem(ctx, data, size, RNGSNAP_E_MISMATCH,
                "checkpoint bytes: this context has app state extra "
                "(registered with rngsnap_register_state), which the "
                "checkpoint lacks; nothing restored");
    assert_int_equal(extra.loads, 0);
    rngsnap_free(data);
    rngsnap_close(ctx);
}

/* ---- resume gate ---------------------------------------------------------- */

static void resume_gate_both_ways(void **state)
{
    (void)state;
    app a = {0};
    app_set(&a, "saved");
    rngsnap *src = open_with_app(&a, 0);
    void *data;
    size_t size;
    save_mem_ok(src, &data, &size);

    app b = {0};
    app_set(&b, "fresh");
    rngsnap *ctx = open_with_app(&b, RNGSNAP_RESUME);
    rngsnap_stream *s = rngsnap_stream_at(ctx, 0);
    uint32_t w[4];
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, w, 4), RNGSNAP_E_ORDER);
    /* saving before the load would hand out fresh states as the job's */
    void *early = (void *)1;
    size_t early_size = 99;
    assert_int_equal(rngsnap_save_mem(ctx, &early, &early_size, 0),
                     RNGSNAP_E_ORDER);
    assert_string_equal(rngsnap_errmsg(ctx),
                        "save checkpoint bytes: this context was opened "
                        "with RNGSNAP_RESUME and has not loaded a "
                        "checkpoint yet (call rngsnap_load, "
                        "rngsnap_load_mem or rngsnap_mpi_load first). On "
                        "a first run, with no checkpoint yet, open the "
                        "context without RNGSNAP_RESUME and seed it "
                        "(rngsnap_seed_all)");
    assert_null(early);
    assert_int_equal(early_size, 0);
    /* a failed load keeps the gate shut */
    uint8_t *cut = malloc(size - 1);
    assert_non_null(cut);
    memcpy(cut, data, size - 1);
    assert_int_equal(rngsnap_load_mem(ctx, cut, size - 1, 0),
                     RNGSNAP_E_CORRUPT);
    free(cut);
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, w, 4), RNGSNAP_E_ORDER);
    assert_int_equal(rngsnap_load_mem(ctx, data, size, 0), 0);
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, w, 4), 0);
    assert_int_equal(rngsnap_seed_all(ctx, 1), RNGSNAP_E_ORDER);
    void *after;
    size_t after_size;
    save_mem_ok(ctx, &after, &after_size);
    rngsnap_free(after);
    rngsnap_free(data);
    rngsnap_close(ctx);
    rngsnap_close(src);
}

/* A RNGSNAP_PROBE_ONLY context whose required backend has no device
 * can list, not save or load: bytes no more than files. */
static void probe_only_context_refused(void **state)
{
    (void)state;
    app a = {0};
    app_set(&a, "p");
    rngsnap *src = open_with_app(&a, 0);
    void *data;
    size_t size;
    save_mem_ok(src, &data, &size);
    rngsnap_close(src);
    char two[1024];
    snprintf(two, sizeof two, "%s",
             ct_write_ini(dir, "nodev.ini",
                          "[backend.multidev2]\nplugin = rngsnap_multidev2\n"
                          "streams = x\ndevices = 0\n\n"));
    rngsnap *ctx = ct_open(two, RNGSNAP_PROBE_ONLY);
    void *d;
    size_t n;
    assert_int_equal(rngsnap_save_mem(ctx, &d, &n, 0),
                     RNGSNAP_E_UNAVAILABLE);
    ct_assert_msg(ctx, "this context was opened with RNGSNAP_PROBE_ONLY");
    assert_null(d);
    assert_int_equal(rngsnap_load_mem(ctx, data, size, 0),
                     RNGSNAP_E_UNAVAILABLE);
    ct_assert_msg(ctx, "this context was opened with RNGSNAP_PROBE_ONLY");
    rngsnap_free(data);
    rngsnap_close(ctx);
}

/* ---- arguments ------------------------------------------------------------ */

static void bad_arguments_named(void **state)
{
    (void)state;
    app a = {0};
    app_set(&a, "args");
    rngsnap *ctx = open_with_app(&a, 0);
    void *data;
    size_t size;
    save_mem_ok(ctx, &data, &size);
    ct_snap before = ct_take(ctx);
    int saves = a.saves;

    void *d = (void *)1;
    size_t n = 99;
    assert_int_equal(rngsnap_save_mem(NULL, &d, &n, 0), RNGSNAP_E_INVALID);
    assert_string_equal(rngsnap_errmsg(NULL), "rngsnap_save_mem: ctx is "
                                              "NULL");
    assert_null(d);
    assert_int_equal(n, 0);
    n = 99;
    assert_int_equal(rngsnap_save_mem(ctx, NULL, &n, 0), RNGSNAP_E_INVALID);
    assert_string_equal(rngsnap_errmsg(ctx), "rngsnap_save_mem: data is "
                                             "NULL");
    assert_int_equal(n, 0);
    d = (void *)1;
    assert_int_equal(rngsnap_save_mem(ctx, &d, NULL, 0), RNGSNAP_E_INVALID);
    assert_string_equal(rngsnap_errmsg(ctx), "rngsnap_save_mem: size is "
                                             "NULL");
    assert_null(d);
    /* the file flags mean nothing here */
    assert_int_equal(rngsnap_save_mem(ctx, &d, &n, RNGSNAP_SAVE_REPLACE),
                     RNGSNAP_E_INVALID);
    assert_string_equal(rngsnap_errmsg(ctx), "rngsnap_save_mem: unknown "
                        "flags 0x1 (it takes none: pass 0)");
    assert_null(d);
    assert_int_equal(a.saves, saves); /* nothing was even sized */

    assert_int_equal(rngsnap_load_mem(NULL, data, size, 0),
                     RNGSNAP_E_INVALID);
    assert_string_equal(rngsnap_errmsg(NULL), "rngsnap_load_mem: ctx is "
                                              "NULL");
    assert_int_equal(rngsnap_load_mem(ctx, NULL, size, 0),
                     RNGSNAP_E_INVALID);
    assert_string_equal(rngsnap_errmsg(ctx), "rngsnap_load_mem: data is "
                                             "NULL");
    assert_int_equal(rngsnap_load_mem(ctx, data, 0, 0), RNGSNAP_E_INVALID);
    assert_string_equal(rngsnap_errmsg(ctx), "rngsnap_load_mem: size is 0 "
                                             "(no checkpoint bytes)");
    assert_int_equal(rngsnap_load_mem(ctx, data, size, RNGSNAP_LOAD_FORK),
                     RNGSNAP_E_INVALID);
    assert_string_equal(rngsnap_errmsg(ctx), "rngsnap_load_mem: unknown "
                        "flags 0x1 (it takes none: pass 0)");
    ct_snap after = ct_take(ctx);
    assert_true(ct_snap_equal(before, after));
    assert_int_equal(a.loads, 0);
    ct_snap_free(&before);
    ct_snap_free(&after);
    rngsnap_free(data);
    rngsnap_close(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip_resumes_bit_exactly),
        cmocka_unit_test(bytes_equal_a_file_of_the_same_state),
        cmocka_unit_test(bytes_and_files_load_both_ways),
        cmocka_unit_test(every_flip_and_truncation_refused),
        cmocka_unit_test(damaged_section_names_its_entry),
        cmocka_unit_test(oversized_bytes_refused),
        cmocka_unit_test(rank_and_world_size_checked),
        cmocka_unit_test(app_states_must_match),
        cmocka_unit_test(resume_gate_both_ways),
        cmocka_unit_test(probe_only_context_refused),
        cmocka_unit_test(bad_arguments_named),
    };
    dir = ct_setup_dir();
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    ct_remove_dir(dir);
    return failed;
}
