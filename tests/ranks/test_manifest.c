/*
 * test_manifest.c - the multi-rank folder's manifest codec (core/
 * manifest.c) and its readers, without a job: version-2 round trips
 * (node layout, per-rank layout, coordinates, emulated nodes); every
 * refusal of the encoder and of the decoder (each field made wrong under
 * a valid checksum, every flipped byte, every truncation); version 1
 * read as version 2 (tests/data/v1-folder, written by the pre-node
 * build); rngsnap_manifest_open_rank reading one image out of a node's
 * file; rs_store_read_range; rs_coords_canon.
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
#include <xxhash.h>

#include <rngsnap.h>

#include "coords.h"
#include "manifest.h"
#include "remove_tree.h"
#include "store.h"

static char scratch[512];

/* ---- a version-2 manifest to start from ---------------------------------- */

/* Five ranks on two nodes (ranks 0-2, 3-4), images of 100 + 20 r bytes,
 * coordinates on ranks 0-3, two app states, emulated nodes of 3. */
#define W 5
static const uint8_t id5[16] = {0x10, 1, 2, 3, 4, 5, 6, 7,
                                8, 9, 10, 11, 12, 13, 14, 0xef};
#define ID5 "100102030405060708090a0b0c0d0eef"
static const uint8_t fork5[16] = {0xaa, [15] = 0xbb};

typedef struct sample {
    rngsnap_manifest_file files[W];
    rngsnap_manifest_rank ranks[W];
    rngsnap_manifest_app apps[2];
    char coords[W][32];
    rs_man_out o;
} sample;

static void sample_nodes(sample *s)
{
    memset(s, 0, sizeof *s);
    s->files[0] = (rngsnap_manifest_file){NULL, 0, 3, 100 + 120 + 140,
                                          0xf0f0};
    s->files[1] = (rngsnap_manifest_file){NULL, 3, 2, 160 + 180, 0xf1f1};
    uint64_t at = 0;
    for (int r = 0; r < W; r++) {
        if (r == 3)
            at = 0;
        snprintf(s->coords[r], sizeof s->coords[r],
                 r < 4 ? "dp=%d,tp=%d" : "", r / 2, r % 2);
        s->ranks[r] = (rngsnap_manifest_rank){
            .size = 100 + 20u * (unsigned)r, .checksum = 0x1000u + (unsigned)r,
            .offset = at, .file_index = r < 3 ? 0 : 1,
            .coords = s->coords[r]};
        at += s->ranks[r].size;
    }
    s->apps[0] = (rngsnap_manifest_app){"a.one", 0xa1, 1};
    s->apps[1] = (rngsnap_manifest_app){"b.two", 0xb2, 0};
    s->o = (rs_man_out){.world_size = W, .created_unix = 1700000123,
                        .id = id5, .forked_from = fork5,
                        .per_rank_files = 0, .emulated_ranks_per_node = 3,
                        .files = s->files, .file_count = 2,
                        .ranks = s->ranks, .apps = s->apps, .app_count = 2};
}

/* The same five ranks, one file each. */
static void sample_per_rank(sample *s)
{
    sample_nodes(s);
    for (int r = 0; r < W; r++) {
        s->files[r] = (rngsnap_manifest_file){NULL, r, 1, s->ranks[r].size,
                                              0x2000u + (unsigned)r};
        s->ranks[r].offset = 0;
        s->ranks[r].file_index = (size_t)r;
    }
    s->o.file_count = W;
    s->o.per_rank_files = 1;
    s->o.emulated_ranks_per_node = 0;
    s->o.forked_from = NULL;
}

static uint8_t *encode(const rs_man_out *o, size_t *len)
{
    uint8_t *b;
    char err[1024] = "";
    int rc = rs_man_encode(o, &b, len, err, sizeof err);
    if (rc)
        fail_msg("rs_man_encode: %s", err);
    return b;
}

/* ---- round trips ---------------------------------------------------------- */

static void check_same(const sample *s, const rngsnap_manifest *m,
                       const char *const names[])
{
    const rngsnap_manifest_info *in = rngsnap_manifest_info_get(m);
    assert_int_equal(in->format_version, 2);
    assert_string_equal(in->id, ID5);
    assert_int_equal(in->world_size, W);
    assert_int_equal(in->created_unix, 1700000123);
    assert_int_equal(in->app_count, 2);
    assert_int_equal(in->file_count, s->o.file_count);
    assert_int_equal(in->emulated_ranks_per_node,
                     s->o.emulated_ranks_per_node);
    for (size_t i = 0; i < s->o.file_count; i++) {
        const rngsnap_manifest_file *f = rngsnap_manifest_file_at(m, i);
        assert_non_null(f);
        assert_string_equal(f->name, names[i]);
        assert_int_equal(f->first_rank, s->files[i].first_rank);
        assert_int_equal(f->rank_count, s->files[i].rank_count);
        assert_int_equal(f->size, s->files[i].size);
        assert_int_equal(f->checksum, s->files[i].checksum);
    }
    assert_null(rngsnap_manifest_file_at(m, s->o.file_count));
    for (int r = 0; r < W; r++) {
        const rngsnap_manifest_rank *k = rngsnap_manifest_rank_at(m, r);
        assert_non_null(k);
        assert_int_equal(k->file_index, s->ranks[r].file_index);
        assert_string_equal(k->file, names[k->file_index]);
        assert_int_equal(k->offset, s->ranks[r].offset);
        assert_int_equal(k->size, s->ranks[r].size);
        assert_int_equal(k->checksum, s->ranks[r].checksum);
        assert_string_equal(k->coords, s->coords[r]);
    }
    assert_null(rngsnap_manifest_rank_at(m, W));
    assert_null(rngsnap_manifest_rank_at(m, -1));
    for (size_t i = 0; i < 2; i++) {
        const rngsnap_manifest_app *a = rngsnap_manifest_app_at(m, i);
        assert_string_equal(a->name, s->apps[i].name);
        assert_int_equal(a->checksum, s->apps[i].checksum);
        assert_int_equal(a->same_on_all_ranks, s->apps[i].same_on_all_ranks);
    }
}

static void test_round_trip_nodes(void **state)
{
    (void)state;
    sample s;
    sample_nodes(&s);
    size_t len;
    uint8_t *b = encode(&s.o, &len);
    rngsnap_manifest *m;
    char err[1024];
    assert_int_equal(rs_man_decode(b, len, "M", "/d", &m, err, sizeof err),
                     RNGSNAP_OK);
    const char *names[] = {"node-00000." ID5 ".rngsnap",
                           "node-00003." ID5 ".rngsnap"};
    check_same(&s, m, names);
    assert_string_equal(rngsnap_manifest_info_get(m)->forked_from,
                        "aa0000000000000000000000000000bb");
    rngsnap_manifest_close(m);
    free(b);
}

static void test_round_trip_per_rank(void **state)
{
    (void)state;
    sample s;
    sample_per_rank(&s);
    size_t len;
    uint8_t *b = encode(&s.o, &len);
    rngsnap_manifest *m;
    char err[1024];
    assert_int_equal(rs_man_decode(b, len, "M", "/d", &m, err, sizeof err),
                     RNGSNAP_OK);
    char nm[W][RS_MAN_RANK_NAME_MAX];
    const char *names[W];
    for (int r = 0; r < W; r++) {
        snprintf(nm[r], sizeof nm[r], "rank-%05d." ID5 ".rngsnap", r);
        names[r] = nm[r];
    }
    check_same(&s, m, names);
    assert_string_equal(rngsnap_manifest_info_get(m)->forked_from, "");
    rngsnap_manifest_close(m);
    free(b);
}

/* ---- the encoder's refusals ------------------------------------------------ */

static void encode_refused(const rs_man_out *o, const char *why)
{
    uint8_t *b = (uint8_t *)"x";
    size_t len = 1;
    char err[1024] = "";
    assert_int_equal(rs_man_encode(o, &b, &len, err, sizeof err),
                     RNGSNAP_E_INVALID);
    assert_null(b);
    assert_int_equal(len, 0);
    if (!strstr(err, why))
        fail_msg("encoder: \"%s\" lacks \"%s\"", err, why);
}

static void test_encode_refusals(void **state)
{
    (void)state;
    sample s;
    sample_nodes(&s);
    s.ranks[1].offset = 101; /* a gap */
    encode_refused(&s.o, "rank 1: offset 101, expected 100");
    sample_nodes(&s);
    s.ranks[4].offset = 150; /* overlaps rank 3 */
    encode_refused(&s.o, "rank 4: offset 150, expected 160");
    sample_nodes(&s);
    s.files[1].size = 339;
    encode_refused(&s.o, "file 1: size 339, its ranks' images sum to 340");
    sample_nodes(&s);
    s.files[1].first_rank = 4; /* rank 3 in no file */
    encode_refused(&s.o, "rank 3: file_index 1, whose first_rank is 4 (a file's lowest rank)");
    sample_nodes(&s);
    s.o.file_count = 1; /* ranks 3 and 4 in no file */
    encode_refused(&s.o, "rank 3: file_index 1 outside 0..0");
    sample_nodes(&s);
    s.ranks[2].file_index = 1;
    encode_refused(&s.o, "rank 2: file_index 1, whose first_rank is 3 (a file's lowest rank)");
    sample_nodes(&s);
    s.ranks[0].size = 87;
    encode_refused(&s.o, "rank 0: length 87 outside 88..");
    sample_nodes(&s);
    snprintf(s.coords[2], sizeof s.coords[2], "tp=0,dp=1");
    encode_refused(&s.o, "rank 2: coordinates \"tp=0,dp=1\" are not in "
                         "canonical form (dp=1,tp=0)");
    sample_nodes(&s);
    snprintf(s.coords[2], sizeof s.coords[2], "dp=1,dp=2");
    encode_refused(&s.o, "rank 2: coordinates \"dp=1,dp=2\": name dp given "
                         "twice");
    sample_per_rank(&s);
    s.files[0].rank_count = 2;
    encode_refused(&s.o, "file 0: rank_count 2, expected 1 (the ranks whose "
                         "file_index is 0), and 1 with per-rank files");
    sample_nodes(&s);
    s.o.world_size = 0;
    encode_refused(&s.o, "0 ranks");
    sample_nodes(&s);
    s.apps[1].name = "";
    encode_refused(&s.o, "app state name of 0 bytes");
}

/* ---- the decoder's refusals ------------------------------------------------ */

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void rehash(uint8_t *b, size_t len)
{
    put64(b + len - 8, XXH3_64bits(b, len - 8));
}

static void decode_refused(const uint8_t *b, size_t len, const char *why)
{
    rngsnap_manifest *m = (rngsnap_manifest *)1;
    char err[1024] = "";
    assert_int_equal(rs_man_decode(b, len, "DIR/MANIFEST", "DIR", &m, err,
                                   sizeof err),
                     RNGSNAP_E_CORRUPT);
    assert_null(m);
    if (strncmp(err, "DIR/MANIFEST: ", 14) != 0 || !strstr(err, why))
        fail_msg("decoder: \"%s\" lacks \"DIR/MANIFEST: ...%s\"", err, why);
}

/* Where the sample's records lie (docs/format.md, version 2): header 72,
 * file records of 2 + 51 + 24 bytes, rank records of 30 + coordinates. */
#define HDR 72u
#define FREC (2u + 51u + 24u)
static size_t rank_at(const sample *s, int r)
{
    size_t at = HDR + s->o.file_count * FREC;
    for (int k = 0; k < r; k++)
        at += 30 + strlen(s->coords[k]);
    return at;
}

/* b with n bytes at off replaced (then the checksum made valid again). */
static void patch_refused(const uint8_t *good, size_t len, size_t off,
                          const void *bytes, size_t n, const char *why)
{
    uint8_t *b = malloc(len);
    memcpy(b, good, len);
    memcpy(b + off, bytes, n);
    rehash(b, len);
    decode_refused(b, len, why);
    free(b);
}

static void patch32_refused(const uint8_t *good, size_t len, size_t off,
                            uint32_t v, const char *why)
{
    uint8_t le[4];
    put32(le, v);
    patch_refused(good, len, off, le, 4, why);
}

static void patch64_refused(const uint8_t *good, size_t len, size_t off,
                            uint64_t v, const char *why)
{
    uint8_t le[8];
    put64(le, v);
    patch_refused(good, len, off, le, 8, why);
}

static void test_decode_header_refusals(void **state)
{
    (void)state;
    sample s;
    sample_nodes(&s);
    size_t len;
    uint8_t *g = encode(&s.o, &len);
    patch_refused(g, len, 0, "RSNPMAX", 8, "not a rngsnap manifest");
    patch32_refused(g, len, 8, 3, "manifest format version 3, this library "
                                  "reads 1 and 2");
    patch32_refused(g, len, 12, 0, "world size 0 outside 1..1048576");
    patch32_refused(g, len, 12, (1u << 20) + 1, "world size 1048577");
    patch32_refused(g, len, 12, 1000, "1000 ranks, 2 files and 2 app states "
                                      "do not fit");
    patch32_refused(g, len, 56, 70000, "70000 app states, at most 65536");
    patch32_refused(g, len, 60, 0, "file count 0 outside 1..5");
    patch32_refused(g, len, 60, 6, "file count 6 outside 1..5");
    patch32_refused(g, len, 64, 2, "flags 0x2, only 0x1 (per-rank files)");
    patch32_refused(g, len, 68, (1u << 20) + 1,
                    "emulated_ranks_per_node 1048577, at most 1048576");
    /* the per-rank bit on a node layout: its names are wrong */
    patch32_refused(g, len, 64, 1, "file record 0: name \"node-00000." ID5
                                   ".rngsnap\", expected rank-00000." ID5
                                   ".rngsnap");
    free(g);
    /* per-rank files: a first_rank out of range is named as such */
    sample_per_rank(&s);
    g = encode(&s.o, &len);
    size_t r2 = HDR + 2 * FREC + 2 + 51;
    patch32_refused(g, len, r2, 7, "file 2: first_rank 7 outside 0..4");
    patch32_refused(g, len, r2, 3, "file record 2: name \"rank-00002." ID5
                                   ".rngsnap\", expected rank-00003." ID5);
    free(g);
}

static void test_decode_file_refusals(void **state)
{
    (void)state;
    sample s;
    sample_nodes(&s);
    size_t len;
    uint8_t *g = encode(&s.o, &len);
    size_t f0 = HDR, f1 = HDR + FREC;
    /* names: exact, from the layout and the id */
    patch_refused(g, len, f1 + 2, "node-00000", 10,
                  "file record 1: name \"node-00000." ID5 ".rngsnap\", "
                  "expected node-00003." ID5 ".rngsnap");
    patch_refused(g, len, f0 + 2, "rank", 4,
                  "file record 0: name \"rank-00000." ID5 ".rngsnap\"");
    patch_refused(g, len, f0 + 2, "../..", 5,
                  "file record 0: name \"../..00000.");
    patch_refused(g, len, f0 + 2 + 11, "0", 1, /* another checkpoint's */
                  "file record 0: name \"node-00000.000102");
    uint8_t l[2] = {200, 0};
    patch_refused(g, len, f0, l, 2, "file record 0 is truncated or its name "
                                    "length is out of range");
    l[0] = 0;
    patch_refused(g, len, f0, l, 2, "file record 0 is truncated");
    /* first_rank, rank_count, size */
    /* (a node file's name carries its first rank: that differs first) */
    patch32_refused(g, len, f1 + 53, 2, "file record 1: name \"node-00003."
                    ID5 ".rngsnap\", expected node-00002." ID5 ".rngsnap");
    patch32_refused(g, len, f1 + 53, 0xffffffffu,
                    "file 1: first_rank -1 outside 0..4");
    patch32_refused(g, len, f0 + 57, 0, "file 0: rank_count 0, expected "
                                        "3 (the ranks whose file_index is "
                                        "0)");
    patch32_refused(g, len, f1 + 57, 3, "file 1: rank_count 3, expected "
                                        "2 (the ranks whose file_index is "
                                        "1)");
    patch32_refused(g, len, f0 + 57, 2, "file 0: rank_count 2, expected "
                                        "3 (the ranks whose file_index is "
                                        "0)");
    patch64_refused(g, len, f0 + 61, 361, "file 0: size 361, its ranks' "
                                          "images sum to 360");
    patch64_refused(g, len, f1 + 61, UINT64_MAX,
                    "file 1: size 18446744073709551615, its ranks' images "
                    "sum to 340");
    free(g);
}

static void test_decode_rank_refusals(void **state)
{
    (void)state;
    sample s;
    sample_nodes(&s);
    size_t len;
    uint8_t *g = encode(&s.o, &len);
    size_t r0 = rank_at(&s, 0), r1 = rank_at(&s, 1), r3 = rank_at(&s, 3);
    patch32_refused(g, len, r1, 1, "rank 1: file_index 1, whose first_rank "
                                   "is 3 (a file's lowest rank)");
    patch32_refused(g, len, r1, 7, "rank 1: file_index 7, the manifest has "
                                   "2 files");
    patch64_refused(g, len, r1 + 4, 99, "rank 1: offset 99, expected 100 "
                                        "(images lie end to end from offset "
                                        "0: a gap or an overlap)");
    patch64_refused(g, len, r1 + 4, 101, "rank 1: offset 101, expected 100");
    patch64_refused(g, len, r3 + 4, 5, "rank 3: offset 5, expected 0");
    patch64_refused(g, len, r0 + 12, 87, "rank 0: length 87 outside "
                                         "88..268435456");
    patch64_refused(g, len, r0 + 12, (256u << 20) + 1,
                    "rank 0: length 268435457 outside");
    /* a longer image that the file's size does not count */
    patch64_refused(g, len, r3 + 12, 161, "rank 4: offset 160, expected 161");
    /* coordinates: canonical or empty, no NUL, within the bytes */
    patch_refused(g, len, r0 + 30, "tp=0,dp=0", 9,
                  "rank 0: coordinates \"tp=0,dp=0\" are not in canonical "
                  "form (dp=0,tp=0)");
    patch_refused(g, len, r0 + 30, "dp=0,DP=0", 9,
                  "rank 0: coordinates \"dp=0,DP=0\": pair 2 \"DP=0\": a "
                  "name starts with a letter a-z");
    patch_refused(g, len, r0 + 30, "dp=00tp=0", 9, "rank 0: coordinates");
    patch_refused(g, len, r0 + 30, "dp=0\0tp=0", 9,
                  "rank 0: coordinates of 9 bytes (at most 447, no NUL");
    uint8_t cl[2] = {0xc0, 0x01}; /* 448 */
    patch_refused(g, len, r0 + 28, cl, 2, "rank 0: coordinates of 448 bytes");
    cl[0] = 0xbf; /* 447: more than the bytes left */
    patch_refused(g, len, r0 + 28, cl, 2, "rank 0: coordinates of 447 bytes");
    free(g);
}

static void test_decode_app_and_tail_refusals(void **state)
{
    (void)state;
    sample s;
    sample_nodes(&s);
    size_t len;
    uint8_t *g = encode(&s.o, &len);
    size_t a0 = rank_at(&s, W), a1 = a0 + 2 + 5 + 9;
    uint8_t two = 2;
    patch_refused(g, len, a0 + 2 + 5 + 8, &two, 1,
                  "app state record 0 is truncated or malformed");
    patch_refused(g, len, a1 + 2, "a.one", 5, "app state a.one recorded "
                                              "twice");
    patch_refused(g, len, a1 + 2, "a\0one", 5, "app state record 1 is");
    /* one byte more before the checksum */
    uint8_t *b = malloc(len + 1);
    memcpy(b, g, len - 8);
    b[len - 8] = 0;
    rehash(b, len + 1);
    decode_refused(b, len + 1, "1 bytes after the last record");
    /* one record less: the apps cut short */
    memcpy(b, g, len);
    put32(b + 56, 3);
    rehash(b, len);
    decode_refused(b, len, "app state record 2 is truncated");
    free(b);
    free(g);
}

/* Without a valid checksum nothing is read: every flipped bit and every
 * truncation of both layouts is refused. */
static void test_decode_every_flip_and_cut(void **state)
{
    (void)state;
    sample s;
    for (int layout = 0; layout < 2; layout++) {
        if (layout)
            sample_per_rank(&s);
        else
            sample_nodes(&s);
        size_t len;
        uint8_t *g = encode(&s.o, &len);
        for (size_t i = 0; i < len; i++) {
            for (int bit = 0; bit < 8; bit += 3) {
                g[i] ^= (uint8_t)(1u << bit);
                rngsnap_manifest *m;
                char err[1024] = "";
                int rc = rs_man_decode(g, len, "DIR/MANIFEST", "DIR", &m, err,
                                       sizeof err);
                if (rc != RNGSNAP_E_CORRUPT || m
                    || strncmp(err, "DIR/MANIFEST: ", 14) != 0)
                    fail_msg("layout %d, byte %zu bit %d: %d %s", layout, i,
                             bit, rc, err);
                g[i] ^= (uint8_t)(1u << bit);
            }
        }
        for (size_t n = 0; n < len; n++) {
            rngsnap_manifest *m;
            char err[1024] = "";
            if (rs_man_decode(g, n, "DIR/MANIFEST", "DIR", &m, err,
                              sizeof err)
                != RNGSNAP_E_CORRUPT)
                fail_msg("layout %d, cut to %zu: accepted", layout, n);
        }
        free(g);
    }
}

/* ---- version 1: tests/data/v1-folder --------------------------------------- */

static const char *v1_dir(void)
{
    static char d[1024];
    const char *data = getenv("RNGSNAP_TEST_DATA");
    if (!data)
        fail_msg("RNGSNAP_TEST_DATA is not set (meson test sets it)");
    snprintf(d, sizeof d, "%s/v1-folder", data);
    return d;
}

#define V1_ID "bdf135b2fa67b62d70f59c27914bdc3c"

static uint8_t *slurp(const char *path, size_t *len)
{
    uint8_t *b;
    char err[1024];
    if (rs_store_read(path, 0, &b, len, err, sizeof err))
        fail_msg("%s", err);
    return b;
}

static void test_v1_folder(void **state)
{
    (void)state;
    rngsnap_manifest *m;
    char err[1024];
    const char *dir = v1_dir();
    assert_int_equal(rngsnap_manifest_open(dir, &m, err, sizeof err),
                     RNGSNAP_OK);
    const rngsnap_manifest_info *in = rngsnap_manifest_info_get(m);
    assert_int_equal(in->format_version, 1);
    assert_string_equal(in->id, V1_ID);
    assert_string_equal(in->forked_from, "");
    assert_int_equal(in->world_size, 4);
    assert_int_equal(in->file_count, 4);
    assert_int_equal(in->emulated_ranks_per_node, 0);
    assert_int_equal(in->app_count, 1);
    assert_string_equal(rngsnap_manifest_app_at(m, 0)->name, "app.step");
    assert_int_equal(rngsnap_manifest_app_at(m, 0)->checksum,
                     XXH3_64bits("step=17\n", 8));
    assert_null(rngsnap_manifest_file_at(m, 4));
    for (int r = 0; r < 4; r++) {
        char name[128], path[1200];
        snprintf(name, sizeof name, "rank-%05d." V1_ID ".rngsnap", r);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        size_t len;
        uint8_t *whole = slurp(path, &len);
        const rngsnap_manifest_file *f = rngsnap_manifest_file_at(m, (size_t)r);
        const rngsnap_manifest_rank *k = rngsnap_manifest_rank_at(m, r);
        assert_string_equal(f->name, name);
        assert_int_equal(f->first_rank, r);
        assert_int_equal(f->rank_count, 1);
        assert_int_equal(f->size, len);
        assert_int_equal(f->checksum, XXH3_64bits(whole, len));
        assert_ptr_equal(k->file, f->name);
        assert_int_equal(k->file_index, r);
        assert_int_equal(k->offset, 0);
        assert_int_equal(k->size, len);
        assert_int_equal(k->checksum, f->checksum);
        assert_string_equal(k->coords, "");
        rngsnap_file *cf;
        assert_int_equal(rngsnap_manifest_open_rank(m, r, &cf, err,
                                                    sizeof err),
                         RNGSNAP_OK);
        assert_int_equal(rngsnap_file_header_get(cf)->rank, r);
        assert_int_equal(rngsnap_file_header_get(cf)->world_size, 4);
        /* cpu/0: default, dropout, augment, and app.step */
        assert_int_equal(rngsnap_file_section_count(cf), 4);
        rngsnap_file_close(cf);
        free(whole);
    }
    rngsnap_file *cf = (rngsnap_file *)1;
    assert_int_equal(rngsnap_manifest_open_rank(m, 4, &cf, err, sizeof err),
                     RNGSNAP_E_INVALID);
    assert_null(cf);
    assert_non_null(strstr(err, "rank 4 outside 0..3"));
    rngsnap_manifest_close(m);
}

/* ---- a node folder: images of v1-folder's ranks, two to a file ------------- */

static const uint8_t idn[16] = {0x77, [7] = 0x42, [15] = 0x99};
#define IDN "77000000000000420000000000000099"

/* scratch/nodes: node-00000 = ranks 0,1; node-00002 = ranks 2,3. */
static void write_node_folder(char *dir, size_t dlen, uint8_t *img[4],
                              size_t ilen[4])
{
    snprintf(dir, dlen, "%s/nodes", scratch);
    remove_tree(dir);
    assert_int_equal(mkdir(dir, 0755), 0);
    rngsnap_manifest_file files[2];
    rngsnap_manifest_rank ranks[4];
    char err[1024];
    for (int node = 0; node < 2; node++) {
        size_t a = ilen[2 * node], b = ilen[2 * node + 1];
        uint8_t *both = malloc(a + b);
        memcpy(both, img[2 * node], a);
        memcpy(both + a, img[2 * node + 1], b);
        char name[RS_MAN_RANK_NAME_MAX], path[1200];
        rs_man_node_file(2 * node, idn, name);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        assert_int_equal(rs_store_write(NULL, path, both, a + b,
                                        RNGSNAP_SAVE_NO_SYNC, err,
                                        sizeof err),
                         RNGSNAP_OK);
        files[node] = (rngsnap_manifest_file){NULL, 2 * node, 2, a + b,
                                              XXH3_64bits(both, a + b)};
        for (int i = 0; i < 2; i++) {
            int r = 2 * node + i;
            ranks[r] = (rngsnap_manifest_rank){
                .size = ilen[r], .checksum = XXH3_64bits(img[r], ilen[r]),
                .offset = i ? a : 0, .file_index = (size_t)node,
                .coords = i ? "dp=1" : "dp=0"};
        }
        free(both);
    }
    rngsnap_manifest_app app = {"app.step", XXH3_64bits("step=17\n", 8), 1};
    rs_man_out o = {.world_size = 4, .created_unix = 1, .id = idn,
                    .emulated_ranks_per_node = 2, .files = files,
                    .file_count = 2, .ranks = ranks, .apps = &app,
                    .app_count = 1};
    size_t len;
    uint8_t *b = encode(&o, &len);
    char mp[1200];
    snprintf(mp, sizeof mp, "%s/MANIFEST", dir);
    assert_int_equal(rs_store_write(NULL, mp, b, len, RNGSNAP_SAVE_NO_SYNC,
                                    err, sizeof err),
                     RNGSNAP_OK);
    free(b);
}

static void open_rank_expect(const rngsnap_manifest *m, int r, int want,
                             const char *why)
{
    rngsnap_file *f = (rngsnap_file *)1;
    char err[2048] = "";
    int rc = rngsnap_manifest_open_rank(m, r, &f, err, sizeof err);
    if (rc != want || (why && !strstr(err, why)))
        fail_msg("open_rank %d: %s (%s), expected %s \"%s\"", r,
                 rngsnap_error_name(rc), err, rngsnap_error_name(want),
                 why ? why : "");
    if (want == RNGSNAP_OK) {
        assert_int_equal(rngsnap_file_header_get(f)->rank, r);
        assert_int_equal(rngsnap_file_header_get(f)->world_size, 4);
        rngsnap_file_close(f);
    } else {
        assert_null(f);
    }
}

static void test_node_folder_open_rank(void **state)
{
    (void)state;
    uint8_t *img[4];
    size_t ilen[4];
    for (int r = 0; r < 4; r++) {
        char p[1200];
        snprintf(p, sizeof p, "%s/rank-%05d." V1_ID ".rngsnap", v1_dir(), r);
        img[r] = slurp(p, &ilen[r]);
    }
    char dir[700], n1[1200], err[1024];
    write_node_folder(dir, sizeof dir, img, ilen);
    snprintf(n1, sizeof n1, "%s/node-00002." IDN ".rngsnap", dir);
    rngsnap_manifest *m;
    assert_int_equal(rngsnap_manifest_open(dir, &m, err, sizeof err),
                     RNGSNAP_OK);
    assert_int_equal(rngsnap_manifest_info_get(m)->emulated_ranks_per_node,
                     2);
    assert_string_equal(rngsnap_manifest_rank_at(m, 3)->coords, "dp=1");
    for (int r = 0; r < 4; r++)
        open_rank_expect(m, r, RNGSNAP_OK, NULL);

    /* A flipped byte in rank 3's image: rank 3 refused, naming the file
     * and the image's place; rank 2, in the same file, still opens
     * (only its own bytes are read). */
    size_t nlen;
    uint8_t *node = slurp(n1, &nlen);
    assert_int_equal(nlen, ilen[2] + ilen[3]);
    node[ilen[2] + 40] ^= 0x04;
    assert_int_equal(rs_store_write(NULL, n1, node, nlen,
                                    RNGSNAP_SAVE_NO_SYNC | RNGSNAP_SAVE_REPLACE,
                                    err, sizeof err),
                     RNGSNAP_OK);
    char why[1400];
    snprintf(why, sizeof why, "%s (rank 3's image at offset %zu): XXH3-64",
             n1, ilen[2]);
    open_rank_expect(m, 3, RNGSNAP_E_CORRUPT, why);
    open_rank_expect(m, 2, RNGSNAP_OK, NULL);
    /* One byte short: the file's size is checked before any image. */
    node[ilen[2] + 40] ^= 0x04;
    assert_int_equal(rs_store_write(NULL, n1, node, nlen - 1,
                                    RNGSNAP_SAVE_NO_SYNC | RNGSNAP_SAVE_REPLACE,
                                    err, sizeof err),
                     RNGSNAP_OK);
    snprintf(why, sizeof why, "%s: %zu bytes, the manifest records %zu", n1,
             nlen - 1, nlen);
    open_rank_expect(m, 2, RNGSNAP_E_CORRUPT, why);
    open_rank_expect(m, 1, RNGSNAP_OK, NULL);
    free(node);
    /* Missing, or not a regular file: RNGSNAP_E_IO. */
    assert_int_equal(unlink(n1), 0);
    open_rank_expect(m, 2, RNGSNAP_E_IO, "cannot open");
    assert_int_equal(mkdir(n1, 0755), 0);
    open_rank_expect(m, 3, RNGSNAP_E_IO, "not a regular file (a directory)");
    rngsnap_manifest_close(m);
    for (int r = 0; r < 4; r++)
        free(img[r]);
}

/* ---- rs_store_read_range --------------------------------------------------- */

static void test_read_range(void **state)
{
    (void)state;
    char p[700], err[1024];
    snprintf(p, sizeof p, "%s/range", scratch);
    uint8_t bytes[100];
    for (int i = 0; i < 100; i++)
        bytes[i] = (uint8_t)i;
    assert_int_equal(rs_store_write(NULL, p, bytes, 100,
                                    RNGSNAP_SAVE_NO_SYNC | RNGSNAP_SAVE_REPLACE,
                                    err, sizeof err),
                     RNGSNAP_OK);
    uint8_t *b;
    assert_int_equal(rs_store_read_range(p, 30, 70, 100, &b, err, sizeof err),
                     RNGSNAP_OK);
    assert_memory_equal(b, bytes + 30, 70);
    free(b);
    assert_int_equal(rs_store_read_range(p, 0, 100, 0, &b, err, sizeof err),
                     RNGSNAP_OK);
    assert_memory_equal(b, bytes, 100);
    free(b);
    assert_int_equal(rs_store_read_range(p, 31, 70, 0, &b, err, sizeof err),
                     RNGSNAP_E_CORRUPT);
    assert_null(b);
    assert_non_null(strstr(err, "100 bytes, too short for bytes 31..101"));
    assert_int_equal(rs_store_read_range(p, 0, 10, 101, &b, err, sizeof err),
                     RNGSNAP_E_CORRUPT);
    assert_non_null(strstr(err, "100 bytes, the manifest records 101"));
    assert_int_equal(rs_store_read_range(p, UINT64_MAX - 5, 10, 0, &b, err,
                                         sizeof err),
                     RNGSNAP_E_CORRUPT);
    assert_non_null(strstr(err, "is past any file"));
    assert_int_equal(rs_store_read_range(p, 0, (256u << 20) + 1, 0, &b, err,
                                         sizeof err),
                     RNGSNAP_E_CORRUPT);
    assert_non_null(strstr(err, "more than the 268435456"));
}

/* ---- rs_coords_canon -------------------------------------------------------- */

static void canon_is(const char *in, const char *want)
{
    char out[RS_COORDS_MAX], err[512] = "";
    if (rs_coords_canon(in, out, err, sizeof err) != RNGSNAP_OK)
        fail_msg("\"%s\" refused: %s", in, err);
    assert_string_equal(out, want);
}

static void canon_refused(const char *in, const char *why)
{
    char out[RS_COORDS_MAX], err[1024] = "";
    assert_int_equal(rs_coords_canon(in, out, err, sizeof err),
                     RNGSNAP_E_INVALID);
    if (!strstr(err, why))
        fail_msg("\"%s\": \"%s\" lacks \"%s\"", in, err, why);
}

static void test_coords(void **state)
{
    (void)state;
    canon_is(NULL, "");
    canon_is("", "");
    canon_is("dp=3,tp=1,pp=0,ep=2", "dp=3,ep=2,pp=0,tp=1");
    canon_is("tp=007,dp=0", "dp=0,tp=7");
    canon_is("a_1=2147483647", "a_1=2147483647");
    canon_is("abcdefghijklmno=1", "abcdefghijklmno=1");
    char many[512];
    int w = 0;
    for (int i = 0; i < 16; i++)
        w += snprintf(many + w, sizeof many - (size_t)w, "%sn%02d_abcdefghijk=%d",
                      i ? "," : "", 15 - i, 2147483600 + i);
    char out[RS_COORDS_MAX], err[1024];
    assert_int_equal(rs_coords_canon(many, out, err, sizeof err), RNGSNAP_OK);
    assert_true(strlen(out) < RS_COORDS_MAX);
    assert_true(strncmp(out, "n00_abcdefghijk=2147483615,", 27) == 0);
    strcat(many, ",z=1");
    canon_refused(many, "more than 16 pairs");
    canon_refused("dp", "pair 1 \"dp\" has no '='");
    canon_refused("dp=1,,tp=2", "pair 2 is empty");
    canon_refused("dp=1,", "pair 2 is empty");
    canon_refused(",dp=1", "pair 1 is empty");
    canon_refused("=1", "a name has 1 to 15 characters");
    canon_refused("abcdefghijklmnop=1", "a name has 1 to 15 characters");
    canon_refused("1dp=1", "a name starts with a letter a-z");
    canon_refused("_dp=1", "a name starts with a letter a-z");
    canon_refused("d-p=1", "a name holds only a-z, 0-9 and _");
    canon_refused("dP=1", "a name holds only a-z, 0-9 and _");
    canon_refused("dp=", "a value is a decimal number 0..2147483647");
    canon_refused("dp=2147483648", "a value is a decimal number");
    canon_refused("dp=-1", "a value is a decimal number");
    canon_refused("dp=1 ", "a value is a decimal number");
    canon_refused("dp=99999999999999999999999", "a value is a decimal");
    canon_refused("dp=1,tp=2,dp=3", "name dp given twice");
}

static int setup(void **state)
{
    (void)state;
    snprintf(scratch, sizeof scratch, "/tmp/rngsnap-manifest-XXXXXX");
    return mkdtemp(scratch) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    remove_tree(scratch);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_nodes),
        cmocka_unit_test(test_round_trip_per_rank),
        cmocka_unit_test(test_encode_refusals),
        cmocka_unit_test(test_decode_header_refusals),
        cmocka_unit_test(test_decode_file_refusals),
        cmocka_unit_test(test_decode_rank_refusals),
        cmocka_unit_test(test_decode_app_and_tail_refusals),
        cmocka_unit_test(test_decode_every_flip_and_cut),
        cmocka_unit_test(test_v1_folder),
        cmocka_unit_test(test_node_folder_open_rank),
        cmocka_unit_test(test_read_range),
        cmocka_unit_test(test_coords),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
