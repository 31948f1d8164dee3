/*
 * test_format.c - the checkpoint byte format on its own (no plugins):
 * a file built by the encoder has the layout docs/format.md describes,
 * decodes back to the same fields, and every kind of damage (each byte
 * flipped, each truncation, bad magic, unknown version, bad lengths that
 * carry valid checksums) is RNGSNAP_E_CORRUPT.
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

#include <rngsnap/backend.h>

#include "ckpt_test.h"
#include "format.h"

/* Little-endian readers written independently of format.c. */
static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16
           | (uint32_t)p[3] << 24;
}
static uint64_t le64(const uint8_t *p)
{
    return le32(p) | (uint64_t)le32(p + 4) << 32;
}
static void wle32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void wle64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static const uint8_t philox_state[24] = {
    0x11, 0, 0, 0, 0, 0, 0, 0,    /* seed 0x11        */
    3, 0, 0, 0, 0, 0, 0, 0,       /* subsequence 3    */
    0, 1, 0, 0, 1, 0, 0, 0};      /* offset 2^32+256  */
static const char app_bytes[] = "epoch=3 step=1200";

/* A three-section file: cpu:0/default, cpu:1/dropout (Philox), app
 * "progress".  *len gets its size. */
static uint8_t *build(size_t *len)
{
    size_t s1 = rs_fmt_section_size(3, 7, 24), s2 = rs_fmt_section_size(3, 7, 24);
    size_t s3 = rs_fmt_section_size(0, 8, sizeof app_bytes);
    size_t total = RS_FMT_HEADER_SIZE + s1 + s2 + s3 + RS_FMT_TRAILER_SIZE;
    uint8_t *b = calloc(1, total);
    assert_non_null(b);
    rs_fmt_put_header(b, 2, 5, 1700000000, 3);
    uint8_t *p = b + RS_FMT_HEADER_SIZE;
    uint8_t *st = rs_fmt_put_section(p, RNGSNAP_SECTION_STREAM, "cpu", 3, 0,
                                     "default", 7, RNGSNAP_STATE_PHILOX4X32_10,
                                     24);
    memcpy(st, philox_state, 24);
    rs_fmt_section_seal(p, s1);
    p += s1;
    st = rs_fmt_put_section(p, RNGSNAP_SECTION_STREAM, "cpu", 3, 1, "dropout",
                            7, RNGSNAP_STATE_PHILOX4X32_10, 24);
    memset(st, 0x5a, 24);
    rs_fmt_section_seal(p, s2);
    p += s2;
    st = rs_fmt_put_section(p, RNGSNAP_SECTION_APP, NULL, 0, -1, "progress", 8,
                            0, sizeof app_bytes);
    memcpy(st, app_bytes, sizeof app_bytes);
    rs_fmt_section_seal(p, s3);
    rs_fmt_put_trailer(b, total);
    *len = total;
    return b;
}

static int decode_rc(const uint8_t *b, size_t len, char *err, size_t errlen)
{
    rs_fmt_view v;
    int rc = rs_fmt_decode(b, len, "t.ckpt", RS_FMT_CHECK_DUPLICATES, &v, err,
                           errlen);
    if (rc == RNGSNAP_OK)
        rs_fmt_view_free(&v);
    return rc;
}

/* The bytes are where docs/format.md says, checked with our own readers
 * and libxxhash's XXH3_64bits directly. */
static void layout_matches_spec(void **state)
{
    (void)state;
    size_t len;
    uint8_t *b = build(&len);
    assert_memory_equal(b, "RNGSNAP\0", 8);
    assert_int_equal(le32(b + 8), 1);
    assert_int_equal(le32(b + 12), 64);
    assert_string_equal((const char *)b + 16, RNGSNAP_VERSION_STRING);
    assert_int_equal(le32(b + 32), 2);
    assert_int_equal(le32(b + 36), 5);
    assert_int_equal(le64(b + 40), 1700000000);
    assert_int_equal(le32(b + 48), 3);
    assert_int_equal(le32(b + 52), 0);
    assert_true(le64(b + 56) == XXH3_64bits(b, 56));
    /* first section */
    const uint8_t *s = b + 64;
    assert_int_equal(le32(s), 1);
    uint32_t size = le32(s + 4);
    assert_int_equal(size, 34 + 3 + 7 + 24);
    assert_int_equal(s[8] | s[9] << 8, 3);
    assert_memory_equal(s + 10, "cpu\0", 4);
    assert_int_equal(le32(s + 14), 0);
    assert_int_equal(s[18] | s[19] << 8, 7);
    assert_memory_equal(s + 20, "default\0", 8);
    assert_int_equal(le32(s + 28), RNGSNAP_STATE_PHILOX4X32_10);
    assert_int_equal(le32(s + 32), 24);
    assert_memory_equal(s + 36, philox_state, 24);
    assert_true(le64(s + 60) == XXH3_64bits(s, 60));
    /* trailer */
    const uint8_t *t = b + len - 24;
    assert_memory_equal(t, "RNGSEND\0", 8);
    assert_int_equal(le64(t + 8), len);
    assert_true(le64(t + 16) == XXH3_64bits(b, len - 8));
    free(b);
}

static void roundtrip_through_file_api(void **state)
{
    (void)state;
    const char *dir = ct_setup_dir();
    size_t len;
    uint8_t *b = build(&len);
    const char *path = ct_path(dir, "t.ckpt");
    ct_write(path, b, len);
    rngsnap_file *f = NULL;
    char err[512];
    assert_int_equal(rngsnap_file_open(path, &f, err, sizeof err), 0);
    const rngsnap_file_header *h = rngsnap_file_header_get(f);
    assert_int_equal(h->format_version, 1);
    assert_string_equal(h->library_version, RNGSNAP_VERSION_STRING);
    assert_int_equal(h->rank, 2);
    assert_int_equal(h->world_size, 5);
    assert_int_equal(h->created_unix, 1700000000);
    assert_int_equal(h->section_count, 3);
    assert_int_equal(h->file_size, len);
    assert_true(h->file_checksum == XXH3_64bits(b, len - 8));
    assert_int_equal(rngsnap_file_section_count(f), 3);

    const rngsnap_file_section *s = rngsnap_file_section_at(f, 0);
    assert_int_equal(s->kind, RNGSNAP_SECTION_STREAM);
    assert_string_equal(s->backend, "cpu");
    assert_int_equal(s->device, 0);
    assert_string_equal(s->name, "default");
    assert_int_equal(s->state_size, 24);
    rngsnap_philox ph;
    assert_int_equal(rngsnap_philox_decode(s, &ph), 0);
    assert_true(ph.seed == 0x11 && ph.subsequence == 3
                && ph.offset == (1ull << 32) + 256);

    s = rngsnap_file_section_at(f, 1);
    assert_string_equal(s->name, "dropout");
    assert_int_equal(s->device, 1);

    s = rngsnap_file_section_at(f, 2);
    assert_int_equal(s->kind, RNGSNAP_SECTION_APP);
    assert_null(s->backend);
    assert_int_equal(s->device, -1);
    assert_string_equal(s->name, "progress");
    assert_int_equal(s->state_size, sizeof app_bytes);
    assert_memory_equal(s->state, app_bytes, sizeof app_bytes);
    assert_int_equal(rngsnap_philox_decode(s, &ph), RNGSNAP_E_INVALID);
    assert_null(rngsnap_file_section_at(f, 3));
    rngsnap_file_close(f);
    rngsnap_file_close(NULL);

    /* a missing file is E_IO and names the path */
    assert_int_equal(rngsnap_file_open(ct_path(dir, "absent"), &f, err,
                                       sizeof err),
                     RNGSNAP_E_IO);
    assert_null(f);
    assert_non_null(strstr(err, "absent"));
    free(b);
    ct_remove_dir(dir);
}

/* Every byte XOR 0x01 and XOR 0xFF, and every truncation: E_CORRUPT. */
static void every_flip_and_truncation(void **state)
{
    (void)state;
    size_t len;
    uint8_t *b = build(&len);
    char err[512];
    assert_int_equal(decode_rc(b, len, err, sizeof err), 0);
    const uint8_t masks[] = {0x01, 0xff, 0x80};
    for (size_t i = 0; i < len; i++)
        for (size_t m = 0; m < sizeof masks; m++) {
            b[i] ^= masks[m];
            int rc = decode_rc(b, len, err, sizeof err);
            if (rc != RNGSNAP_E_CORRUPT)
                fail_msg("byte %zu ^ 0x%02x: rc %d", i, masks[m], rc);
            assert_non_null(strstr(err, "t.ckpt: "));
            b[i] ^= masks[m];
        }
    for (size_t n = 0; n < len; n++) {
        int rc = decode_rc(b, n, err, sizeof err);
        if (rc != RNGSNAP_E_CORRUPT)
            fail_msg("truncated to %zu: rc %d", n, rc);
    }
    /* a byte appended is damage too */
    uint8_t *longer = calloc(1, len + 1);
    memcpy(longer, b, len);
    assert_int_equal(decode_rc(longer, len + 1, err, sizeof err),
                     RNGSNAP_E_CORRUPT);
    free(longer);
    free(b);
}

/* Messages say what was wrong. */
static void messages_name_the_damage(void **state)
{
    (void)state;
    size_t len;
    uint8_t *b = build(&len);
    char err[512], want[512];
    /* A damaged section is named by its place; its label is only what
     * the damaged bytes read (issue 31: a flipped device byte read
     * "section 1 (cpu:17/dropout)" for the stream saved as
     * cpu:1/dropout).  The state of section 1 (cpu:1/dropout): */
    size_t s1 = rs_fmt_section_size(3, 7, 24), at1 = 64 + s1;
    b[at1 + 40] ^= 1;
    assert_int_equal(decode_rc(b, len, err, sizeof err), RNGSNAP_E_CORRUPT);
    snprintf(want, sizeof want, "t.ckpt: section 1 at byte %zu: checksum "
             "mismatch (its label as read from the damaged bytes: "
             "cpu:1/dropout)", at1);
    assert_string_equal(err, want);
    b[at1 + 40] ^= 1;
    /* its device field (after kind, size, "cpu" and its NUL): 1 ^ 16 */
    b[at1 + 14] ^= 16;
    assert_int_equal(decode_rc(b, len, err, sizeof err), RNGSNAP_E_CORRUPT);
    snprintf(want, sizeof want, "t.ckpt: section 1 at byte %zu: checksum "
             "mismatch (its label as read from the damaged bytes: "
             "cpu:17/dropout)", at1);
    assert_string_equal(err, want);
    b[at1 + 14] ^= 16;
    /* its kind: no label can be read */
    b[at1] ^= 4;
    assert_int_equal(decode_rc(b, len, err, sizeof err), RNGSNAP_E_CORRUPT);
    snprintf(want, sizeof want, "t.ckpt: section 1 at byte %zu: checksum "
             "mismatch (its label cannot be read from the damaged bytes)",
             at1);
    assert_string_equal(err, want);
    b[at1] ^= 4;
    assert_int_equal(decode_rc(b, len, err, sizeof err), RNGSNAP_OK);
    assert_int_equal(decode_rc(b, len - 100, err, sizeof err),
                     RNGSNAP_E_CORRUPT);
    assert_non_null(strstr(err, "truncated"));
    b[0] = 'X';
    assert_int_equal(decode_rc(b, len, err, sizeof err), RNGSNAP_E_CORRUPT);
    assert_non_null(strstr(err, "bad magic"));
    free(b);
}

/* Damage that carries valid checksums (a buggy or hostile writer) is
 * still found by the structural checks. */
static void reseal_header(uint8_t *b) { wle64(b + 56, XXH3_64bits(b, 56)); }
static void reseal_file(uint8_t *b, size_t len)
{
    wle64(b + len - 8, XXH3_64bits(b, len - 8));
}

static void structure_checked_beyond_checksums(void **state)
{
    (void)state;
    size_t len;
    char err[512];
    uint8_t *b = build(&len);

    wle32(b + 8, 2); /* version 2, consistent checksums */
    reseal_header(b);
    reseal_file(b, len);
    assert_int_equal(decode_rc(b, len, err, sizeof err), RNGSNAP_E_CORRUPT);
    assert_non_null(strstr(err, "unknown format version 2"));
    free(b);

    b = build(&len);
    wle32(b + 48, 0x7fffffff); /* section count beyond the file */
    reseal_header(b);
    reseal_file(b, len);
    assert_int_equal(decode_rc(b, len, err, sizeof err), RNGSNAP_E_CORRUPT);
    free(b);

    b = build(&len);
    wle32(b + 48, 2); /* one section fewer: bytes left over */
    reseal_header(b);
    reseal_file(b, len);
    assert_int_equal(decode_rc(b, len, err, sizeof err), RNGSNAP_E_CORRUPT);
    free(b);

    b = build(&len);
    wle32(b + 36, 2); /* rank 2 of world size 2 */
    reseal_header(b);
    reseal_file(b, len);
    assert_int_equal(decode_rc(b, len, err, sizeof err), RNGSNAP_E_CORRUPT);
    free(b);

    b = build(&len);
    wle32(b + 12, 72); /* header size */
    reseal_header(b);
    reseal_file(b, len);
    assert_int_equal(decode_rc(b, len, err, sizeof err), RNGSNAP_E_CORRUPT);
    free(b);

    /* section 0's state_size one byte off, section resealed */
    b = build(&len);
    size_t s1 = rs_fmt_section_size(3, 7, 24);
    wle32(b + 64 + 32, 23);
    wle64(b + 64 + s1 - 8, XXH3_64bits(b + 64, s1 - 8));
    reseal_file(b, len);
    assert_int_equal(decode_rc(b, len, err, sizeof err), RNGSNAP_E_CORRUPT);
    free(b);

    /* a NUL inside a name */
    b = build(&len);
    b[64 + 21] = 0;
    wle64(b + 64 + s1 - 8, XXH3_64bits(b + 64, s1 - 8));
    reseal_file(b, len);
    assert_int_equal(decode_rc(b, len, err, sizeof err), RNGSNAP_E_CORRUPT);
    free(b);

    /* two sections with one key: section 1 made cpu:0/default too */
    b = build(&len);
    memcpy(b + 64 + s1 + 20, "default", 7);
    wle32(b + 64 + s1 + 14, 0);
    wle64(b + 64 + 2 * s1 - 8, XXH3_64bits(b + 64 + s1, s1 - 8));
    reseal_file(b, len);
    assert_int_equal(decode_rc(b, len, err, sizeof err), RNGSNAP_E_CORRUPT);
    assert_non_null(strstr(err, "repeats section 0"));
    free(b);

    /* empty and tiny files */
    assert_int_equal(decode_rc((const uint8_t *)"", 0, err, sizeof err),
                     RNGSNAP_E_CORRUPT);
    assert_int_equal(decode_rc((const uint8_t *)"RNG", 3, err, sizeof err),
                     RNGSNAP_E_CORRUPT);
}

static void oversized_file_is_refused_before_reading(void **state)
{
    (void)state;
    const char *dir = ct_setup_dir();
    const char *path = ct_path(dir, "huge.ckpt");
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(truncate(path, (off_t)RS_FMT_FILE_MAX + 1), 0);
    rngsnap_file *rf;
    char err[512];
    assert_int_equal(rngsnap_file_open(path, &rf, err, sizeof err),
                     RNGSNAP_E_CORRUPT);
    assert_non_null(strstr(err, "huge.ckpt"));
    ct_remove_dir(dir);
}

/* A file of many small app sections, named "%06u" by index. */
static uint8_t *build_many(uint32_t n, size_t *len)
{
    size_t sec = rs_fmt_section_size(0, 6, 0);
    *len = RS_FMT_HEADER_SIZE + n * sec + RS_FMT_TRAILER_SIZE;
    uint8_t *b = calloc(1, *len);
    assert_non_null(b);
    rs_fmt_put_header(b, 0, 1, 0, n);
    uint8_t *p = b + RS_FMT_HEADER_SIZE;
    for (uint32_t i = 0; i < n; i++, p += sec) {
        char name[8];
        snprintf(name, sizeof name, "%06u", i);
        rs_fmt_put_section(p, RNGSNAP_SECTION_APP, NULL, 0, -1, name, 6, 0,
                           0);
        rs_fmt_section_seal(p, sec);
    }
    rs_fmt_put_trailer(b, *len);
    return b;
}

/* Rename section i of a build_many file to the name of section as. */
static void rename_as(uint8_t *b, size_t len, uint32_t i, uint32_t as)
{
    size_t sec = rs_fmt_section_size(0, 6, 0);
    uint8_t *p = b + RS_FMT_HEADER_SIZE + i * sec;
    char name[8];
    snprintf(name, sizeof name, "%06u", as);
    memcpy(p + 8 + 3 + 4 + 2, name, 6); /* kind, size, backend, device, len */
    wle64(p + sec - 8, XXH3_64bits(p, sec - 8));
    reseal_file(b, len);
}

/* The read API's repeated-key check on 400,000 sections: a quadratic one
 * takes minutes here (it did: rngsnap inspect hung on such a file);
 * sorted it takes well under a second, far inside the test's timeout.
 * The answer is still the first section whose key an earlier one has. */
static void many_sections_repeats_found_fast(void **state)
{
    (void)state;
    const uint32_t n = 400000;
    size_t len;
    uint8_t *b = build_many(n, &len);
    rs_fmt_view v;
    char err[512];
    assert_int_equal(rs_fmt_decode(b, len, "many", RS_FMT_CHECK_DUPLICATES,
                                   &v, err, sizeof err), RNGSNAP_OK);
    assert_int_equal(v.header.section_count, n);
    rs_fmt_view_free(&v);

    rename_as(b, len, n - 1, 5);  /* a repeat at the very end ...     */
    rename_as(b, len, 300000, 7); /* ... and an earlier one: reported */
    assert_int_equal(rs_fmt_decode(b, len, "many", RS_FMT_CHECK_DUPLICATES,
                                   &v, err, sizeof err), RNGSNAP_E_CORRUPT);
    assert_non_null(strstr(err, "section 300000 (app state 000007) repeats "
                                "section 7"));
    rename_as(b, len, 300000, 300000);
    assert_int_equal(rs_fmt_decode(b, len, "many", RS_FMT_CHECK_DUPLICATES,
                                   &v, err, sizeof err), RNGSNAP_E_CORRUPT);
    assert_non_null(strstr(err, "section 399999 (app state 000005) repeats "
                                "section 5"));
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(layout_matches_spec),
        cmocka_unit_test(roundtrip_through_file_api),
        cmocka_unit_test(every_flip_and_truncation),
        cmocka_unit_test(messages_name_the_damage),
        cmocka_unit_test(structure_checked_beyond_checksums),
        cmocka_unit_test(oversized_file_is_refused_before_reading),
        cmocka_unit_test(many_sections_repeats_found_fast),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
