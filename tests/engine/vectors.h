/*
 * vectors.h - readers for the shared reference files in $RNGSNAP_TEST_DATA
 * (philox4x32_10_kat.txt, curand_philox4x32_10_streams.txt), shared by the
 * engine tests.  Every line is read; a line that does not parse fails.
 */
#ifndef RNGSNAP_TEST_VECTORS_H
#define RNGSNAP_TEST_VECTORS_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct kat_vec {
    uint32_t ctr[4], key[2], expect[4];
} kat_vec;

typedef struct stream_vec {
    uint64_t seed, subsequence, offset;
    uint32_t expect[4];
} stream_vec;

static inline FILE *vec_open(const char *name)
{
    const char *dir = getenv("RNGSNAP_TEST_DATA");
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir ? dir : "tests/data", name);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        fprintf(stderr, "cannot open %s\n", path);
    return f;
}

/* Returns the number of vectors (malloc'd in *out), or -1. */
static inline int read_kat(kat_vec **out)
{
    FILE *f = vec_open("philox4x32_10_kat.txt");
    if (f == NULL)
        return -1;
    char line[512];
    int n = 0, bad = 0;
    kat_vec *v = NULL;
    while (fgets(line, sizeof line, f) != NULL) {
        if (line[0] == '#' || strspn(line, " \t\r\n") == strlen(line))
            continue;
        kat_vec k;
        int rounds;
        if (sscanf(line,
                   "philox4x32 %d %x %x %x %x %x %x %x %x %x %x",
                   &rounds, &k.ctr[0], &k.ctr[1], &k.ctr[2], &k.ctr[3],
                   &k.key[0], &k.key[1], &k.expect[0], &k.expect[1],
                   &k.expect[2], &k.expect[3]) != 11 || rounds != 10) {
            fprintf(stderr, "bad KAT line: %s", line);
            bad = 1;
            break;
        }
        v = realloc(v, (size_t)(n + 1) * sizeof *v);
        v[n++] = k;
    }
    fclose(f);
    if (bad || n == 0) {
        free(v);
        return -1;
    }
    *out = v;
    return n;
}

static inline int read_streams(stream_vec **out)
{
    FILE *f = vec_open("curand_philox4x32_10_streams.txt");
    if (f == NULL)
        return -1;
    char line[512];
    int n = 0, bad = 0;
    stream_vec *v = NULL;
    while (fgets(line, sizeof line, f) != NULL) {
        if (line[0] == '#' || strspn(line, " \t\r\n") == strlen(line))
            continue;
        stream_vec s;
        if (sscanf(line, "%" SCNx64 " %" SCNu64 " %" SCNu64 " %x %x %x %x",
                   &s.seed, &s.subsequence, &s.offset, &s.expect[0],
                   &s.expect[1], &s.expect[2], &s.expect[3]) != 7) {
            fprintf(stderr, "bad stream line: %s", line);
            bad = 1;
            break;
        }
        v = realloc(v, (size_t)(n + 1) * sizeof *v);
        v[n++] = s;
    }
    fclose(f);
    if (bad || n == 0) {
        free(v);
        return -1;
    }
    *out = v;
    return n;
}

#endif
