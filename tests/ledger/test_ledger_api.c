/*
 * test_ledger_api.c - the C API of the divergence ledger: its errors (each
 * message exact), the bytes of a record, a new layout when app states
 * change, continuing a ledger (torn tail cut, another rank's refused, a
 * damaged or foreign file refused), a failing app state and a failing
 * write.  The fault sweep is test_ledger_sweep.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <rngsnap.h>

#include "ledger_format.h"

static char dir[256];
static char ini[512];

static const char *path(const char *name)
{
    static char buf[4][600];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
    return buf[k];
}

static rngsnap *open_ctx(unsigned flags)
{
    rngsnap *ctx = NULL;
    int rc = rngsnap_open(&ctx, ini, flags);
    if (rc)
        fail_msg("open %s: %s", ini, rngsnap_errmsg(NULL));
    if (!(flags & RNGSNAP_RESUME))
        assert_int_equal(rngsnap_seed_all(ctx, 5), RNGSNAP_OK);
    return ctx;
}

static uint8_t *slurp(const char *p, size_t *len)
{
    FILE *f = fopen(p, "rb");
    assert_non_null(f);
    static uint8_t buf[1 << 16];
    *len = fread(buf, 1, sizeof buf, f);
    fclose(f);
    return buf;
}

#define assert_msg(ctx, text) assert_string_equal(rngsnap_errmsg(ctx), text)

static void test_errors(void **state)
{
    (void)state;
    rngsnap *ctx = open_ctx(0);
    int x = 1;
    assert_int_equal(rngsnap_ledger_step(ctx, 0), RNGSNAP_E_INVALID);
    assert_msg(ctx, "rngsnap_ledger_step: no ledger is open on this "
               "context: call rngsnap_ledger_open first");
    assert_int_equal(rngsnap_ledger_note(ctx, "x", &x, 4), RNGSNAP_E_INVALID);
    assert_msg(ctx, "rngsnap_ledger_note: no ledger is open on this "
               "context: call rngsnap_ledger_open first");
    assert_int_equal(rngsnap_ledger_close(ctx), RNGSNAP_E_INVALID);
    assert_int_equal(rngsnap_ledger_open(ctx, NULL, 0), RNGSNAP_E_INVALID);
    assert_msg(ctx, "rngsnap_ledger_open: path is NULL");
    const char *p = path("e.ledger");
    assert_int_equal(rngsnap_ledger_open(ctx, p, 1), RNGSNAP_E_INVALID);
    char want[1024];
    snprintf(want, sizeof want, "rngsnap_ledger_open %s: flags 0x1 (it "
             "takes none: pass 0)", p);
    assert_msg(ctx, want);
    assert_int_equal(rngsnap_ledger_open(ctx, p, 0), RNGSNAP_OK);
    assert_int_equal(rngsnap_ledger_open(ctx, path("f.ledger"), 0),
                     RNGSNAP_E_INVALID);
    snprintf(want, sizeof want, "rngsnap_ledger_open %s: ledger %s is "
             "already open on this context: close it first",
             path("f.ledger"), p);
    assert_msg(ctx, want);
    assert_int_equal(rngsnap_ledger_note(ctx, "", &x, 4), RNGSNAP_E_INVALID);
    assert_msg(ctx, "rngsnap_ledger_note: a note's name has 1 to 255 bytes, "
               "not 0");
    assert_int_equal(rngsnap_ledger_note(ctx, "x", NULL, 4),
                     RNGSNAP_E_INVALID);
    assert_msg(ctx, "rngsnap_ledger_note: value is NULL");
    assert_int_equal(rngsnap_ledger_note(ctx, "x", &x, (1u << 20) + 1),
                     RNGSNAP_E_INVALID);
    assert_msg(ctx, "rngsnap_ledger_note x: value of 1048577 bytes, more "
               "than the 1048576 a note holds (note a digest instead)");
    assert_int_equal(rngsnap_ledger_close(ctx), RNGSNAP_OK);
    assert_int_equal(rngsnap_ledger_step(NULL, 0), RNGSNAP_E_INVALID);
    assert_string_equal(rngsnap_errmsg(NULL),
                        "rngsnap_ledger_step: ctx is NULL");
    rngsnap_close(ctx);
}

/* Offset of the record after the one at off. */
static size_t next(const uint8_t *b, size_t off)
{
    return off + rs_lg_get32(b + off);
}

static void test_record_bytes(void **state)
{
    (void)state;
    rngsnap *ctx = open_ctx(0);
    const char *p = path("r.ledger");
    assert_int_equal(rngsnap_ledger_open(ctx, p, 0), RNGSNAP_OK);
    rngsnap_stream *s;
    assert_int_equal(rngsnap_stream_find(ctx, "cpu", 0, "dropout", &s), 0);
    uint32_t w[7];
    assert_int_equal(rngsnap_generate(s, RNGSNAP_U32, w, 7), RNGSNAP_OK);
    double loss = 0.5;
    assert_int_equal(rngsnap_ledger_note(ctx, "loss", &loss, 8), 0);
    assert_int_equal(rngsnap_ledger_step(ctx, 42), RNGSNAP_OK);
    size_t len;
    const uint8_t *b = slurp(p, &len);
    assert_memory_equal(b, "RNGSNAPL\1\0\0\0\0\0\0\0", 16);
    size_t o = 16;
    assert_int_equal(b[o + 4], 'O');
    o = next(b, o);
    assert_int_equal(b[o + 4], 'L');
    o = next(b, o);
    assert_int_equal(b[o + 4], 'S');
    /* 23 bytes + 16 per stream (3) + a note of 6 + 4 + 8 */
    assert_int_equal(rs_lg_get32(b + o), 23 + 16 * 3 + 18);
    assert_int_equal(o + 23 + 16 * 3 + 18, len);
    assert_int_equal(rs_lg_get64(b + o + 5), 42);
    /* dropout is the registry's second entry: 7 words drawn */
    assert_int_equal(rs_lg_get64(b + o + 13 + 16), 7);
    assert_int_equal(rs_lg_get64(b + o + 13), 0);
    rngsnap_ledger_close(ctx);
    rngsnap_close(ctx);
}

static size_t st_size(void *u)
{
    (void)u;
    return 4;
}
static int st_save(void *u, void *buf, size_t len)
{
    memcpy(buf, u, len);
    return *(int *)u == 99 ? 7 : 0;
}
static int st_load(void *u, const void *buf, size_t len)
{
    memcpy(u, buf, len);
    return 0;
}
static const rngsnap_state_ops ops = {st_size, st_save, st_load};

static void test_layout_and_app_failure(void **state)
{
    (void)state;
    rngsnap *ctx = open_ctx(0);
    const char *p = path("a.ledger");
    int v = 1;
    assert_int_equal(rngsnap_ledger_open(ctx, p, 0), RNGSNAP_OK);
    assert_int_equal(rngsnap_ledger_step(ctx, 0), RNGSNAP_OK);
    assert_int_equal(rngsnap_register_state(ctx, "bad", &ops, &v), 0);
    assert_int_equal(rngsnap_ledger_step(ctx, 1), RNGSNAP_OK);
    size_t len;
    const uint8_t *b = slurp(p, &len);
    char kinds[8] = {0};
    int n = 0;
    for (size_t o = 16; o < len && n < 7; o = next(b, o))
        kinds[n++] = (char)b[o + 4];
    assert_string_equal(kinds, "OLSLS"); /* a new layout before step 1 */
    v = 99;
    assert_int_equal(rngsnap_ledger_step(ctx, 3), RNGSNAP_E_BACKEND);
    assert_msg(ctx, "rngsnap_ledger_step 3: app state bad: save callback "
               "returned 7");
    size_t after;
    slurp(p, &after);
    assert_int_equal(after, len); /* nothing written */
    rngsnap_close(ctx);
}

static void test_continue(void **state)
{
    (void)state;
    char p[600];
    snprintf(p, sizeof p, "%s", path("c.ledger"));
    rngsnap *ctx = open_ctx(0);
    assert_int_equal(rngsnap_ledger_open(ctx, p, 0), RNGSNAP_OK);
    assert_int_equal(rngsnap_ledger_step(ctx, 0), RNGSNAP_OK);
    assert_int_equal(rngsnap_ledger_step(ctx, 1), RNGSNAP_OK);
    rngsnap_close(ctx); /* closes the ledger too */
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(truncate(p, st.st_size - 3), 0); /* torn step 1 */

    ctx = open_ctx(RNGSNAP_RESUME);
    assert_int_equal(rngsnap_ledger_open(ctx, p, 0), RNGSNAP_OK);
    rngsnap_ledger_close(ctx);
    rngsnap_close(ctx);
    size_t len;
    const uint8_t *b = slurp(p, &len);
    char kinds[8] = {0};
    int n = 0;
    size_t o = 16;
    for (; o < len && n < 7; o = next(b, o))
        kinds[n++] = (char)b[o + 4];
    assert_int_equal(o, len); /* whole records only */
    assert_string_equal(kinds, "OLSOL"); /* torn step 1 cut, segment 1 */
    o = next(b, next(b, next(b, 16)));
    assert_int_equal(rs_lg_get32(b + o + 5), 1); /* segment number */
    assert_int_equal(rs_lg_get16(b + o + 9),
                     RS_LG_F_CONTINUED | RS_LG_F_RESUME);

    ctx = open_ctx(0);
    assert_int_equal(rngsnap_set_rank(ctx, 2, 4), RNGSNAP_OK);
    assert_int_equal(rngsnap_ledger_open(ctx, p, 0), RNGSNAP_E_MISMATCH);
    char want[1024];
    snprintf(want, sizeof want, "rngsnap_ledger_open %s: the ledger was "
             "written by rank 0 of 1, this context is rank 2 of 4: give each "
             "rank its own ledger (a path ending in / makes one per rank)", p);
    assert_msg(ctx, want);
    /* a folder path: this rank's file in it */
    assert_int_equal(rngsnap_ledger_open(ctx, path("ranks/"), 0), RNGSNAP_OK);
    rngsnap_ledger_close(ctx);
    assert_int_equal(stat(path("ranks/rank-00002.ledger"), &st), 0);
    rngsnap_close(ctx);

    ctx = open_ctx(0);
    FILE *f = fopen(path("other"), "w");
    fputs("not a ledger at all\n", f);
    fclose(f);
    assert_int_equal(rngsnap_ledger_open(ctx, path("other"), 0),
                     RNGSNAP_E_CORRUPT);
    snprintf(want, sizeof want, "rngsnap_ledger_open %s: the file exists "
             "and is not a ledger (no RNGSNAPL prefix): pass another path",
             path("other"));
    assert_msg(ctx, want);
    /* a flipped byte in the first record, records after it */
    f = fopen(p, "r+b");
    fseek(f, 20, SEEK_SET);
    fputc(0x55, f);
    fclose(f);
    assert_int_equal(rngsnap_ledger_open(ctx, p, 0), RNGSNAP_E_CORRUPT);
    snprintf(want, sizeof want, "rngsnap_ledger_open %s: the record at byte "
             "16 is damaged (checksum mismatch) and more follow: the ledger "
             "cannot be continued; pass another path", p);
    assert_msg(ctx, want);
    rngsnap_close(ctx);
}

/* /dev/full (Linux): every write fails with ENOSPC. */
static void test_write_fails(void **state)
{
    (void)state;
    rngsnap *ctx = open_ctx(0);
    assert_int_equal(rngsnap_ledger_open(ctx, "/dev/full", 0), RNGSNAP_E_IO);
    assert_msg(ctx, "rngsnap_ledger_open: write to ledger /dev/full failed: "
               "No space left on device");
    rngsnap_close(ctx);
}

int main(void)
{
    const char *build = getenv("RNGSNAP_BUILD_ROOT");
    if (!build) {
        fprintf(stderr, "test_ledger_api: RNGSNAP_BUILD_ROOT is not set "
                "(run it with meson test)\n");
        return 77;
    }
    snprintf(ini, sizeof ini, "%s/config/rng.ini", build);
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/rngsnap-ledger-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_record_bytes),
        cmocka_unit_test(test_layout_and_app_failure),
        cmocka_unit_test(test_continue),
        cmocka_unit_test(test_write_fails),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    return rc;
}
