/*
 * check_paths.c - the engine's vector checks without cmocka, for builds
 * where the test libraries are absent (the aarch64 cross build, run under
 * qemu-user; tests/cross/meson.build).  On every ISA path this processor
 * supports (on aarch64: scalar and neon, and neon must be there):
 *
 *  - every line of philox4x32_10_kat.txt, the block at each of 100
 *    positions of a fill (every lane of a SIMD step);
 *  - every line of curand_philox4x32_10_streams.txt through the public
 *    generate, at the offset and from up to 200 words before it, and every
 *    distribution at that stream position equal to the scalar path;
 *  - random streams, positions (incl. the 2^32-block carry), sizes,
 *    output misalignments and dists against the scalar path, through the
 *    public generate and the block kernels directly.
 *
 *  - digests (FNV-1a 64) of fixed fills of every dist on every path equal
 *    to tests/cross/digests.txt, written on x86-64 by the scalar and avx2
 *    paths (`check_paths --write-digests`): the same bits across machines.
 *
 * Usage: check_paths [ITERS [DIGEST_FILE]] | check_paths --write-digests
 * Prints a summary; exits 1 on any mismatch or unreadable data.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "philox.h"
#include "philox_isa.h"
#include "vectors.h"


static int npaths;
static philox_isa paths[PHILOX_ISA_COUNT];
static unsigned long failures, checks;

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        checks++;                                                            \
        if (!(cond)) {                                                       \
            if (failures++ < 20) {                                           \
                fprintf(stderr, "MISMATCH %s:%d: ", __FILE__, __LINE__);     \
                fprintf(stderr, __VA_ARGS__);                                \
                fputc('\n', stderr);                                         \
            }                                                                \
        }                                                                    \
    } while (0)

/* xorshift64*: test inputs only */
static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 2685821657736338717ull;
}

static const char *dist_name(int d)
{
    static const char *const n[RNGSNAP_DIST_COUNT] = {
        "u32", "u64", "f32", "f64", "normal_f32", "normal_f64",
        "curand_uniform_f32", "curand_uniform_f64", "curand_normal_f32",
        "curand_normal_f64"};
    return (unsigned)d < RNGSNAP_DIST_COUNT ? n[d] : "?";
}

/* n values of dist from st on path isa and on scalar; byte-compare the
 * values and the final offsets.  mis: bytes the output is moved off its
 * natural alignment (the unaligned route of philox_generate_isa). */
static void compare_generate(rngsnap_philox st, rngsnap_dist dist, size_t n,
                             philox_isa isa, size_t mis, const char *what)
{
    size_t size = philox_value_size(dist);
    unsigned char *a = malloc(n * size + 16), *b = malloc(n * size + 16);
    if (a == NULL || b == NULL) {
        CHECK(0, "out of memory");
        free(a);
        free(b);
        return;
    }
    rngsnap_philox sa = st, sb = st;
    int ra = philox_generate_isa(&sa, dist, a + mis, n, isa);
    int rb = philox_generate_isa(&sb, dist, b, n, PHILOX_ISA_SCALAR);
    CHECK(ra == RNGSNAP_OK && rb == RNGSNAP_OK, "%s: generate failed", what);
    CHECK(sa.offset == sb.offset, "%s: offsets differ", what);
    CHECK(n == 0 || memcmp(a + mis, b, n * size) == 0,
          "%s: %s path %s, n %zu, seed %016" PRIx64 " sub %" PRIu64
          " offset %" PRIu64 " mis %zu: values differ from scalar",
          what, philox_isa_name(isa), dist_name(dist), n, st.seed,
          st.subsequence, st.offset, mis);
    free(a);
    free(b);
}


static int check_kat(void)
{
    kat_vec *v = NULL;
    int n = read_kat(&v);
    if (n <= 0)
        return -1;
    for (int i = 0; i < n; i++) {
        uint32_t o[4];
        philox4x32_10(v[i].ctr, v[i].key, o);
        CHECK(memcmp(o, v[i].expect, 16) == 0, "KAT line %d: reference", i + 1);
        uint64_t block = v[i].ctr[0] | (uint64_t)v[i].ctr[1] << 32;
        px_ctr c = {{v[i].key[0], v[i].key[1]}, 0,
                    v[i].ctr[2] | (uint64_t)v[i].ctr[3] << 32};
        for (int p = 0; p < npaths; p++) {
            for (unsigned lane = 0; lane < 100; lane++) {
                if (block < lane)
                    continue;
                uint32_t w[101 * 4];
                c.block = block - lane;
                px_fill_for(paths[p])(RNGSNAP_U32, &c, w, lane + 1, 0);
                CHECK(memcmp(&w[4 * lane], v[i].expect, 16) == 0,
                      "KAT line %d, path %s, block at position %u", i + 1,
                      philox_isa_name(paths[p]), lane);
            }
        }
    }
    free(v);
    return n;
}

static int check_streams(void)
{
    stream_vec *v = NULL;
    int n = read_streams(&v);
    if (n <= 0)
        return -1;
    for (int i = 0; i < n; i++) {
        for (int p = 0; p < npaths; p++) {
            philox_isa isa = paths[p];
            rngsnap_philox st = {v[i].seed, v[i].subsequence, v[i].offset};
            uint32_t w[4 + 1100];
            int rc = philox_generate_isa(&st, RNGSNAP_U32, w, 4, isa);
            CHECK(rc == RNGSNAP_OK && memcmp(w, v[i].expect, 16) == 0 &&
                      st.offset == v[i].offset + 4,
                  "stream line %d, path %s: at the offset", i + 1,
                  philox_isa_name(isa));
            /* k words earlier: mid-block starts, the target inside a run */
            for (uint64_t k = 1; k <= 200 && k <= v[i].offset; k += 1 + k / 8) {
                st = (rngsnap_philox){v[i].seed, v[i].subsequence,
                                      v[i].offset - k};
                rc = philox_generate_isa(&st, RNGSNAP_U32, w, k + 4, isa);
                CHECK(rc == RNGSNAP_OK &&
                          memcmp(&w[k], v[i].expect, 16) == 0,
                      "stream line %d, path %s: from %" PRIu64
                      " words before", i + 1, philox_isa_name(isa), k);
            }
            /* deep inside a long SIMD run */
            uint64_t k = v[i].offset < 997 ? v[i].offset : 997;
            st = (rngsnap_philox){v[i].seed, v[i].subsequence, v[i].offset - k};
            rc = philox_generate_isa(&st, RNGSNAP_U32, w, 1100, isa);
            CHECK(rc == RNGSNAP_OK && memcmp(&w[k], v[i].expect, 16) == 0,
                  "stream line %d, path %s: inside a 1100-word run", i + 1,
                  philox_isa_name(isa));
            /* every dist at this stream position, against scalar */
            for (int d = 0; d < RNGSNAP_DIST_COUNT; d++) {
                rngsnap_philox s0 = {v[i].seed, v[i].subsequence, v[i].offset};
                compare_generate(s0, (rngsnap_dist)d, 101, isa, 0,
                                 "stream position");
            }
        }
    }
    free(v);
    return n;
}

static unsigned long random_cases;

static void check_random(int iters)
{
    for (int it = 0; it < iters; it++) {
        rngsnap_dist dist = (rngsnap_dist)(rnd() % RNGSNAP_DIST_COUNT);
        rngsnap_philox st = {rnd(), rnd() % 4 ? rnd() % 1000 : rnd(), 0};
        switch (rnd() % 4) {
        case 0: st.offset = rnd() % 4096; break;
        case 1: /* around the 2^32-block carry */
            st.offset = (1ull << 34) - 64 + rnd() % 128;
            break;
        case 2: st.offset = rnd() >> 2; break;
        default: st.offset = (rnd() % 100000) * 4; break;
        }
        size_t n = rnd() % 8 ? rnd() % 700 : rnd() % 20000;
        size_t mis = rnd() % 3 == 0 ? (size_t)(rnd() % 8) : 0;
        for (int p = 0; p < npaths; p++) {
            if (paths[p] == PHILOX_ISA_SCALAR)
                continue;
            compare_generate(st, dist, n, paths[p], mis, "random");
            /* the block kernel directly: 64-bit counter wrap included */
            px_ctr c = {{(uint32_t)st.seed, (uint32_t)(st.seed >> 32)},
                        rnd() % 3 ? st.offset / 4 : UINT64_MAX - rnd() % 40,
                        st.subsequence};
            size_t nb = n / 4 + 1;
            size_t bytes = nb * (dist == RNGSNAP_CURAND_UNIFORM_F64 ? 32 : 16);
            unsigned char *a = malloc(bytes), *b = malloc(bytes);
            if (a == NULL || b == NULL) {
                CHECK(0, "out of memory");
            } else {
                int nt = (int)(rnd() % 2);
                px_fill_for(paths[p])(dist, &c, a, nb, nt);
                px_fill_scalar(dist, &c, b, nb, 0);
                CHECK(memcmp(a, b, bytes) == 0,
                      "kernel %s %s, block %" PRIu64 ", %zu blocks, nt %d",
                      philox_isa_name(paths[p]), dist_name(dist), c.block,
                      nb, nt);
            }
            free(a);
            free(b);
        }
        random_cases++;
    }
}

/* FNV-1a 64 of fixed fills of dist on path isa: 4 streams (one past the
 * 2^32-block carry), an odd count of 4099 values each. */
static uint64_t digest(rngsnap_dist dist, philox_isa isa)
{
    static const rngsnap_philox streams[4] = {
        {0, 0, 0},
        {0x0123456789ABCDEFull, 7, 13},
        {0xDEADBEEFCAFEF00Dull, 2, (1ull << 34) - 40},
        {UINT64_MAX, 65535, 1001},
    };
    enum { N = 4099 };
    static double buf[2 * N]; /* room for N values of any dist */
    uint64_t h = 0xCBF29CE484222325ull;
    for (int i = 0; i < 4; i++) {
        rngsnap_philox st = streams[i];
        if (philox_generate_isa(&st, dist, buf, N, isa) != RNGSNAP_OK)
            return 0;
        const unsigned char *b = (const unsigned char *)buf;
        for (size_t k = 0; k < N * (size_t)philox_value_size(dist); k++)
            h = (h ^ b[k]) * 0x100000001B3ull;
        h ^= st.offset; /* the words consumed count too */
    }
    return h;
}

/* Every path's digests against the file (lines "dist hex"). */
static int check_digests(const char *file)
{
    FILE *f = fopen(file, "r");
    if (f == NULL) {
        fprintf(stderr, "cannot open %s\n", file);
        return -1;
    }
    char line[256], name[64];
    int n = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        if (line[0] == '#' || strspn(line, " \t\r\n") == strlen(line))
            continue;
        uint64_t want;
        int d;
        if (sscanf(line, "%63s %" SCNx64, name, &want) != 2) {
            fprintf(stderr, "bad digest line: %s", line);
            fclose(f);
            return -1;
        }
        for (d = 0; d < RNGSNAP_DIST_COUNT; d++)
            if (strcmp(name, dist_name(d)) == 0)
                break;
        CHECK(d < RNGSNAP_DIST_COUNT, "digest file: unknown dist %s", name);
        for (int p = 0; d < RNGSNAP_DIST_COUNT && p < npaths; p++) {
            uint64_t got = digest((rngsnap_dist)d, paths[p]);
            CHECK(got == want, "digest of %s on %s: %016" PRIx64
                  ", file says %016" PRIx64, name,
                  philox_isa_name(paths[p]), got, want);
        }
        n++;
    }
    fclose(f);
    CHECK(n == RNGSNAP_DIST_COUNT, "digest file: %d dists, not %d", n,
          RNGSNAP_DIST_COUNT);
    return n;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--write-digests") == 0) {
        printf("# check_paths --write-digests: FNV-1a 64 of fixed fills per "
               "dist (tests/cross/check_paths.c)\n");
        for (int d = 0; d < RNGSNAP_DIST_COUNT; d++)
            printf("%s %016" PRIx64 "\n", dist_name(d),
                   digest((rngsnap_dist)d, PHILOX_ISA_AUTO));
        return 0;
    }
    int iters = argc > 1 ? atoi(argv[1]) : 8000;
    const char *digest_file = argc > 2 ? argv[2] : NULL;
    for (int i = PHILOX_ISA_SCALAR; i < PHILOX_ISA_COUNT; i++) {
        philox_isa isa = (philox_isa)i;
        if (philox_isa_supported(isa) && px_fill_for(isa) != NULL)
            paths[npaths++] = isa;
    }
    printf("paths:");
    for (int p = 0; p < npaths; p++)
        printf(" %s", philox_isa_name(paths[p]));
    printf("\n");
#if defined(__aarch64__)
    if (!philox_isa_supported(PHILOX_ISA_NEON)) {
        printf("FAIL: aarch64 build without the neon path\n");
        return 1;
    }
    philox_isa best;
    if (philox_isa_resolve(PHILOX_ISA_AUTO, &best, NULL) != RNGSNAP_OK ||
        (getenv("RNGSNAP_PHILOX_ISA") == NULL && best != PHILOX_ISA_NEON)) {
        printf("FAIL: auto does not choose neon on aarch64\n");
        return 1;
    }
#endif
    int nk = check_kat(), ns = check_streams();
    if (nk < 0 || ns < 0) {
        printf("FAIL: cannot read the vector files (RNGSNAP_TEST_DATA)\n");
        return 1;
    }
    check_random(iters);
    int nd = 0;
    if (digest_file != NULL && (nd = check_digests(digest_file)) < 0) {
        printf("FAIL: cannot read the digest file %s\n", digest_file);
        return 1;
    }
    printf("KAT: %d lines x %d paths (100 positions each); cuRAND streams: "
           "%d lines x %d paths (%d dists each vs scalar); random cases: "
           "%lu x %d non-scalar paths; digests: %d dists x %d paths; "
           "%lu checks, %lu mismatches\n",
           nk, npaths, ns, npaths, RNGSNAP_DIST_COUNT, random_cases,
           npaths - 1, nd, npaths, checks, failures);
    printf("%s\n", failures == 0 ? "OK" : "FAIL");
    return failures == 0 ? 0 : 1;
}
