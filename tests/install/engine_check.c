/*
 * engine_check.c - built by install_test.sh out of tree, against the
 * installed headers and library only: the example plugin
 * (docs/examples/minimal_plugin.c, drawing through host->philox_generate)
 * against the cpu backend and cuRAND's reference words.
 *
 *   engine_check words INI CURAND_STREAMS_TXT
 *     every reference line (seed, subsequence, offset, 4 words of
 *     curand_init + curand()): minimal's words there equal cuRAND's and
 *     the cpu backend's, and every dist (odd and even counts) equals the
 *     cpu backend's and rngsnap_philox_generate's, same advance;
 *   engine_check advance INI A B N
 *     seed, save A, draw N u32 from minimal:1/noise, save B (rngsnap diff
 *     A B then says how many words apart they are).
 * Exit 0: all equal; 1: a difference (printed); 2: usage or setup.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rngsnap.h>

static rngsnap_stream *find(rngsnap *ctx, const char *backend, int dev,
                            const char *name)
{
    rngsnap_stream *s = NULL;
    if (rngsnap_stream_find(ctx, backend, dev, name, &s) != RNGSNAP_OK) {
        fprintf(stderr, "%s\n", rngsnap_errmsg(ctx));
        exit(2);
    }
    return s;
}

static int words(rngsnap *ctx, const char *ref)
{
    rngsnap_stream *cpu = find(ctx, "cpu", 0, "default");
    rngsnap_stream *min = find(ctx, "minimal", 0, "default");
    FILE *f = fopen(ref, "r");
    if (!f) {
        perror(ref);
        return 2;
    }
    char line[512];
    int lines = 0, bad = 0;
    static double a[1000], b[1000], c[1000];
    while (fgets(line, sizeof line, f)) {
        uint64_t seed, sub, off;
        uint32_t w[4];
        if (line[0] == '#'
            || sscanf(line, "%" SCNx64 " %" SCNu64 " %" SCNu64 " %" SCNx32
                      " %" SCNx32 " %" SCNx32 " %" SCNx32, &seed, &sub, &off,
                      &w[0], &w[1], &w[2], &w[3]) != 7)
            continue;
        lines++;
        rngsnap_philox pm = {seed, sub, off}, pc = pm;
        uint32_t got[4], cw[4];
        if (rngsnap_generate_at(min, &pm, RNGSNAP_U32, got, 4)
            || rngsnap_generate_at(cpu, &pc, RNGSNAP_U32, cw, 4)) {
            fprintf(stderr, "%s\n", rngsnap_errmsg(ctx));
            return 2;
        }
        if (memcmp(got, w, sizeof w) || memcmp(cw, w, sizeof w)) {
            printf("words differ at %s", line);
            bad++;
        }
        for (int d = 0; d < RNGSNAP_DIST_COUNT; d++)
            for (size_t n = 997; n <= 1000; n += 3) {
                rngsnap_philox p1 = {seed, sub, off}, p2 = p1, p3 = p1;
                memset(b, 0xa5, sizeof b);
                if (rngsnap_generate_at(cpu, &p1, d, a, n)
                    || rngsnap_generate_at(min, &p2, d, b, n)
                    || rngsnap_philox_generate(&p3, d, c, n)) {
                    fprintf(stderr, "%s\n", rngsnap_errmsg(ctx));
                    return 2;
                }
                size_t bytes = n * rngsnap_dist_size(d);
                if (memcmp(a, b, bytes) || memcmp(a, c, bytes)
                    || p1.offset != p2.offset || p1.offset != p3.offset) {
                    printf("%s x %zu differs from the cpu backend at %s",
                           rngsnap_dist_name(d), n, line);
                    bad++;
                }
            }
    }
    fclose(f);
    printf("%d reference positions, %d differences\n", lines, bad);
    return lines > 0 && bad == 0 ? 0 : 1;
}

static int advance(rngsnap *ctx, const char *a, const char *b, unsigned n)
{
    rngsnap_stream *s = find(ctx, "minimal", 1, "noise");
    uint32_t w[64];
    if (n > 64 || rngsnap_save(ctx, a, RNGSNAP_SAVE_REPLACE)
        || rngsnap_generate(s, RNGSNAP_U32, w, n)
        || rngsnap_save(ctx, b, RNGSNAP_SAVE_REPLACE)) {
        fprintf(stderr, "%s\n", rngsnap_errmsg(ctx));
        return 2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int words_mode = argc == 4 && strcmp(argv[1], "words") == 0;
    int adv_mode = argc == 6 && strcmp(argv[1], "advance") == 0;
    if (!words_mode && !adv_mode) {
        fprintf(stderr, "usage: engine_check words INI REF | advance INI A "
                        "B N\n");
        return 2;
    }
    rngsnap *ctx = NULL;
    if (rngsnap_open(&ctx, argv[2], 0) || rngsnap_seed_all(ctx, 7)) {
        fprintf(stderr, "%s\n", rngsnap_errmsg(ctx));
        return 2;
    }
    int rc = words_mode ? words(ctx, argv[3])
                        : advance(ctx, argv[3], argv[4],
                                  (unsigned)strtoul(argv[5], NULL, 10));
    rngsnap_close(ctx);
    return rc;
}
