/*
 * mpi_state.c - generation states for the mpirun tests (mpi_state.h).
 */
#include "mpi_state.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

app_state apps[APP_COUNT] = {{.name = "marker"}, {.name = "blob"},
                             {.name = "shared"}};

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

void app_expected(int a, uint64_t g, int rank, unsigned char *out, size_t *len)
{
    uint64_t h = mix(g * 131 + (uint64_t)a);
    size_t n = 32;
    if (a == APP_MARKER) {
        uint64_t words[2] = {g, (uint64_t)rank};
        memcpy(out, words, sizeof words);
        *len = sizeof words;
        return;
    }
    if (a == APP_BLOB) {
        h = mix(h ^ ((uint64_t)rank << 32));
        n = 100 + (size_t)((g * 37 + (uint64_t)rank * 211) % 2000);
    }
    for (size_t i = 0; i < n; i++) {
        if (i % 8 == 0)
            h = mix(h);
        out[i] = (unsigned char)(h >> (8 * (i % 8)));
    }
    *len = n;
}

static size_t app_size(void *user)
{
    return ((app_state *)user)->len;
}

static int app_save(void *user, void *buf, size_t len)
{
    app_state *a = user;
    if (a->kill_save && a->armed)
        raise(SIGKILL);
    if (len != a->len)
        return 1;
    memcpy(buf, a->buf, len);
    return 0;
}

static int app_load(void *user, const void *buf, size_t len)
{
    app_state *a = user;
    if (a->fail_load || len > APP_MAX)
        return 1;
    memcpy(a->buf, buf, len);
    a->len = len;
    return 0;
}

static const rngsnap_state_ops app_ops = {app_size, app_save, app_load};

int apps_register(rngsnap *ctx, int shared_only)
{
    for (int a = 0; a < APP_COUNT; a++) {
        if (shared_only && a != APP_SHARED)
            continue;
        int rc = rngsnap_register_state(ctx, apps[a].name, &app_ops, &apps[a]);
        if (rc)
            return rc;
    }
    return 0;
}

void apps_set(uint64_t g, int rank)
{
    for (int a = 0; a < APP_COUNT; a++)
        app_expected(a, g, rank, apps[a].buf, &apps[a].len);
}

uint64_t apps_marker(int rank)
{
    uint64_t words[2];
    if (apps[APP_MARKER].len != sizeof words)
        return UINT64_MAX;
    memcpy(words, apps[APP_MARKER].buf, sizeof words);
    return words[1] == (uint64_t)rank ? words[0] : UINT64_MAX;
}

int streams_set(rngsnap *ctx, uint64_t g)
{
    int rc = rngsnap_seed_all(ctx, 0x5eed0000ull + g);
    int rank = 0, world = 1;
    rngsnap_get_rank(ctx, &rank, &world);
    for (size_t i = 0; !rc && i < rngsnap_stream_count(ctx); i++) {
        uint32_t words[64];
        size_t n = 1 + (size_t)(mix(g * 7919 + (uint64_t)rank * 104729 + i) % 63);
        rc = rngsnap_generate(rngsnap_stream_at(ctx, i), RNGSNAP_U32, words, n);
    }
    return rc;
}

int positions_get(rngsnap *ctx, rngsnap_philox *out, size_t max, size_t *n)
{
    *n = rngsnap_stream_count(ctx);
    if (*n > max)
        return RNGSNAP_E_INVALID;
    for (size_t i = 0; i < *n; i++) {
        int rc = rngsnap_stream_position(rngsnap_stream_at(ctx, i), &out[i]);
        if (rc)
            return rc;
    }
    return 0;
}

int streams_compare(rngsnap *ctx, rngsnap *ref, char *why, size_t whylen)
{
    static const rngsnap_dist dists[] = {RNGSNAP_U32, RNGSNAP_F64,
                                         RNGSNAP_NORMAL_F32, RNGSNAP_U64};
    size_t n = rngsnap_stream_count(ctx);
    if (n != rngsnap_stream_count(ref)) {
        snprintf(why, whylen, "%zu streams, reference has %zu", n,
                 rngsnap_stream_count(ref));
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        rngsnap_stream *s = rngsnap_stream_at(ctx, i), *r = rngsnap_stream_at(ref, i);
        rngsnap_philox ps, pr;
        if (rngsnap_stream_position(s, &ps) || rngsnap_stream_position(r, &pr)
            || memcmp(&ps, &pr, sizeof ps)) {
            snprintf(why, whylen, "%s/%d/%s: position differs from the reference",
                     rngsnap_stream_backend(s), rngsnap_stream_device(s),
                     rngsnap_stream_name(s));
            return 1;
        }
        for (size_t d = 0; d < sizeof dists / sizeof dists[0]; d++) {
            uint64_t a[17], b[17];
            int ra = rngsnap_generate(s, dists[d], a, 17);
            int rb = rngsnap_generate(r, dists[d], b, 17);
            size_t bytes = 17 * rngsnap_dist_size(dists[d]);
            if (ra || rb || memcmp(a, b, bytes)) {
                snprintf(why, whylen, "%s/%d/%s: %s draws differ from the "
                         "reference (codes %d/%d)", rngsnap_stream_backend(s),
                         rngsnap_stream_device(s), rngsnap_stream_name(s),
                         rngsnap_dist_name(dists[d]), ra, rb);
                return 1;
            }
        }
    }
    return 0;
}
