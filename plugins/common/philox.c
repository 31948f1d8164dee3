/*
 * philox.c - the engine's entry points: the reference block, words per
 * value, generate (any offset: mid-block heads and tails through a small
 * word buffer, whole blocks through the chosen ISA kernel) and the
 * 24-byte state encoding.
 */
#include <string.h>

#include "philox.h"
#include "philox_convert.h"
#include "philox_isa.h"
#include "philox_loop.h"

void philox4x32_10(const uint32_t ctr[4], const uint32_t key[2],
                   uint32_t out[4])
{
    px_block(ctr, key, out);
}

/* A unit: the words that make one indivisible group of values. */
typedef struct px_unit {
    uint8_t words;  /* words consumed per unit        */
    uint8_t values; /* values produced per unit       */
    uint8_t size;   /* bytes per value                */
} px_unit;

static const px_unit px_units[RNGSNAP_DIST_COUNT] = {
    [RNGSNAP_U32] = {1, 1, 4},        [RNGSNAP_U64] = {2, 1, 8},
    [RNGSNAP_F32] = {1, 1, 4},        [RNGSNAP_F64] = {2, 1, 8},
    [RNGSNAP_NORMAL_F32] = {2, 2, 4}, /* Box-Muller pair from 2 words */
    [RNGSNAP_NORMAL_F64] = {4, 2, 8}, /* Box-Muller pair from 4 words */
    [RNGSNAP_CURAND_UNIFORM_F32] = {1, 1, 4},
    [RNGSNAP_CURAND_UNIFORM_F64] = {1, 1, 8}, /* one word, as cuRAND */
    [RNGSNAP_CURAND_NORMAL_F32] = {2, 2, 4},
    [RNGSNAP_CURAND_NORMAL_F64] = {4, 2, 8},
};

uint64_t philox_words_for(rngsnap_dist dist, size_t n)
{
    if ((unsigned)dist >= RNGSNAP_DIST_COUNT)
        return 0;
    const px_unit *u = &px_units[dist];
    return ((uint64_t)n + u->values - 1) / u->values * u->words;
}

unsigned philox_unit_words(rngsnap_dist dist)
{
    return (unsigned)dist < RNGSNAP_DIST_COUNT ? px_units[dist].words : 0;
}

unsigned philox_unit_values(rngsnap_dist dist)
{
    return (unsigned)dist < RNGSNAP_DIST_COUNT ? px_units[dist].values : 0;
}

unsigned philox_value_size(rngsnap_dist dist)
{
    return (unsigned)dist < RNGSNAP_DIST_COUNT ? px_units[dist].size : 0;
}

static const px_fill_fn px_fills[PHILOX_ISA_COUNT] = {
    [PHILOX_ISA_SCALAR] = px_fill_scalar,
    [PHILOX_ISA_AVX2] = px_fill_avx2,
    [PHILOX_ISA_AVX512] = px_fill_avx512,
#if defined(__aarch64__)
    [PHILOX_ISA_NEON] = px_fill_neon, /* philox_neon.c: aarch64 only */
#endif
};

px_fill_fn px_fill_for(philox_isa isa)
{
    return (unsigned)isa < PHILOX_ISA_COUNT ? px_fills[isa] : NULL;
}

static const px_convert_fn px_converts[PHILOX_ISA_COUNT] = {
    [PHILOX_ISA_SCALAR] = px_convert_blocks,
    [PHILOX_ISA_AVX2] = px_convert_avx2,
    [PHILOX_ISA_AVX512] = px_convert_avx512,
#if defined(__aarch64__)
    [PHILOX_ISA_NEON] = px_convert_neon,
#endif
};

px_convert_fn px_convert_for(philox_isa isa)
{
    return (unsigned)isa < PHILOX_ISA_COUNT ? px_converts[isa] : NULL;
}

/* nw consecutive words of the stream from word offset off. */
static void px_words(px_fill_fn fill, const rngsnap_philox *p, uint64_t off,
                     uint32_t *w, size_t nw)
{
    px_ctr c = {{(uint32_t)p->seed, (uint32_t)(p->seed >> 32)},
                off / 4, p->subsequence};
    unsigned k = (unsigned)(off % 4);
    while (nw > 0 && (k != 0 || nw < 4)) { /* partial block */
        uint32_t ctr[4] = {(uint32_t)c.block, (uint32_t)(c.block >> 32),
                           (uint32_t)c.subseq, (uint32_t)(c.subseq >> 32)};
        uint32_t b[4];
        px_block(ctr, c.key, b);
        size_t take = 4 - k < nw ? 4 - k : nw;
        memcpy(w, b + k, take * 4);
        w += take;
        nw -= take;
        k = 0;
        c.block++;
    }
    if (nw >= 4) {
        size_t nb = nw / 4;
        fill(RNGSNAP_U32, &c, w, nb, 0);
        c.block += nb;
        w += nb * 4;
        nw -= nb * 4;
        if (nw > 0) { /* tail */
            uint32_t ctr[4] = {(uint32_t)c.block, (uint32_t)(c.block >> 32),
                               (uint32_t)c.subseq,
                               (uint32_t)(c.subseq >> 32)};
            uint32_t b[4];
            px_block(ctr, c.key, b);
            memcpy(w, b, nw * 4);
        }
    }
}

/* Convert units whole units of words in w, writing the first vals values
 * (vals < units * values only for an odd count of normals). */
static void px_convert_units(rngsnap_dist dist, const uint32_t *w,
                             size_t units, char *out, size_t vals)
{
    const px_unit *u = &px_units[dist];
    for (size_t i = 0; i < units; i++) {
        const uint32_t *x = w + i * u->words;
        char *o = out + i * u->values * u->size;
        size_t keep = vals - i * u->values;
        if (keep > u->values)
            keep = u->values;
        if (dist == RNGSNAP_U32 || dist == RNGSNAP_U64) {
            memcpy(o, x, u->size);
        } else {
            double z[2]; /* room for one unit of any dist */
            px_convert_unit(dist, x, z);
            memcpy(o, z, keep * u->size);
        }
    }
}

#define PX_SLOW_WORDS 512 /* words per batch of the general path */

/* The general path: nvals values from word offset off (a unit boundary
 * or not), through a word buffer.  A last partial unit (an odd count of
 * normals) converts its whole pair and keeps the first value. */
static void px_slow(px_fill_fn fill, const rngsnap_philox *p, uint64_t off,
                    rngsnap_dist dist, char *out, size_t nvals)
{
    const px_unit *u = &px_units[dist];
    uint32_t w[PX_SLOW_WORDS];
    while (nvals > 0) {
        size_t units = (nvals + u->values - 1) / u->values;
        if (units > PX_SLOW_WORDS / u->words)
            units = PX_SLOW_WORDS / u->words;
        size_t nw = units * u->words;
        px_words(fill, p, off, w, nw);
        size_t vals = units * u->values < nvals ? units * u->values : nvals;
        if (vals == units * u->values && nw % 4 == 0) {
            px_convert_loop(dist, w, out, nw / 4);
        } else { /* value by value: a unit that is not whole blocks */
            px_convert_units(dist, w, units, out, vals);
        }
        off += nw;
        out += vals * u->size;
        nvals -= vals;
    }
}

/* out is not aligned for the value type, and a typed store through it
 * would be undefined in C: draw through an aligned buffer instead, in
 * pieces of whole units (an even count of normals), so the stream advances
 * exactly as by one call. */
static int px_generate_unaligned(rngsnap_philox *st, rngsnap_dist dist,
                                 char *out, size_t n, philox_isa isa)
{
    double piece[512]; /* 4 KiB, aligned for every value type */
    size_t size = px_units[dist].size;
    size_t per = sizeof piece / size; /* a multiple of 2: whole units */
    while (n > 0) {
        size_t k = n < per ? n : per;
        int rc = philox_generate_isa(st, dist, piece, k, isa);
        if (rc != RNGSNAP_OK)
            return rc;
        memcpy(out, piece, k * size);
        out += k * size;
        n -= k;
    }
    return RNGSNAP_OK;
}

int philox_generate_isa(rngsnap_philox *st, rngsnap_dist dist, void *out,
                        size_t n, philox_isa isa)
{
    if (st == NULL || (unsigned)dist >= RNGSNAP_DIST_COUNT ||
        (out == NULL && n > 0) || n > SIZE_MAX / 16)
        return RNGSNAP_E_INVALID;
    uint64_t words = philox_words_for(dist, n);
    if (words > UINT64_MAX - st->offset)
        return RNGSNAP_E_INVALID; /* the 64-bit word offset would wrap */
    if (n == 0)
        return RNGSNAP_OK;
    if ((uintptr_t)out % px_units[dist].size != 0)
        return px_generate_unaligned(st, dist, out, n, isa);
    philox_isa real;
    int rc = philox_isa_resolve(isa, &real, NULL);
    if (rc != RNGSNAP_OK)
        return rc;
    px_fill_fn fill = px_fills[real];
    const px_unit *u = &px_units[dist];

    uint64_t off = st->offset;
    char *o = out;
    size_t left = n;
    if (off % u->words == 0) { /* units line up with blocks */
        size_t whole = left / u->values;
        size_t head = (size_t)((4 - off % 4) % 4) / u->words;
        if (head > whole)
            head = whole;
        if (head > 0) {
            px_slow(fill, st, off, dist, o, head * u->values);
            off += head * u->words;
            o += head * u->values * u->size;
            left -= head * u->values;
            whole -= head;
        }
        size_t nb = whole * u->words / 4;
        if (nb > 0) {
            px_ctr c = {{(uint32_t)st->seed, (uint32_t)(st->seed >> 32)},
                        off / 4, st->subsequence};
            size_t vals = nb * 4 / u->words * u->values;
            int nt = px_nt_choice(real, nb * 16);
            if (nt == PX_NT_PROBE)
                px_nt_probe(fill, real, dist, &c, o, nb,
                            4 / u->words * u->values * u->size);
            else
                fill(dist, &c, o, nb, nt);
            off += nb * 4;
            o += vals * u->size;
            left -= vals;
        }
    }
    if (left > 0)
        px_slow(fill, st, off, dist, o, left);
    st->offset += words;
    return RNGSNAP_OK;
}

int philox_generate_cached(rngsnap_philox *st, philox_cache *cache,
                           rngsnap_dist dist, void *out, size_t n, int isa)
{
    if (cache == NULL || st == NULL || out == NULL || n == 0 || n > 4 ||
        (unsigned)dist >= RNGSNAP_DIST_COUNT)
        return philox_generate_isa(st, dist, out, n, (philox_isa)isa);
    const px_unit *u = &px_units[dist];
    size_t units = u->values == 1 ? n : (n + 1) / 2; /* no division */
    unsigned words = (unsigned)units * u->words;
    uint64_t off = st->offset;
    if (words > 8 || words > UINT64_MAX - off)
        return philox_generate_isa(st, dist, out, n, (philox_isa)isa);
    unsigned k = (unsigned)(off % 4);
    uint64_t b = off / 4;
    const uint32_t *src;
    uint32_t w[8];
    if (k + words <= 4 && cache->valid && cache->block == b &&
        cache->seed == st->seed && cache->subsequence == st->subsequence) {
        src = cache->w + k; /* the common case: all in the cached block */
    } else {
        for (unsigned i = 0; i < words; b++) {
            if (!cache->valid || cache->block != b ||
                cache->seed != st->seed ||
                cache->subsequence != st->subsequence) {
                uint32_t ctr[4] = {(uint32_t)b, (uint32_t)(b >> 32),
                                   (uint32_t)st->subsequence,
                                   (uint32_t)(st->subsequence >> 32)};
                uint32_t key[2] = {(uint32_t)st->seed,
                                   (uint32_t)(st->seed >> 32)};
                px_block(ctr, key, cache->w);
                cache->seed = st->seed;
                cache->subsequence = st->subsequence;
                cache->block = b;
                cache->valid = 1;
            }
            unsigned take = 4 - k < words - i ? 4 - k : words - i;
            memcpy(w + i, cache->w + k, take * 4);
            i += take;
            k = 0;
        }
        src = w;
    }
    px_convert_units(dist, src, units, out, n);
    st->offset = off + words;
    return RNGSNAP_OK;
}

int philox_generate(rngsnap_philox *st, rngsnap_dist dist, void *out,
                    size_t n)
{
    return philox_generate_isa(st, dist, out, n, PHILOX_ISA_AUTO);
}

/* Little-endian 64-bit fields: a plain copy on little-endian hosts (the
 * byte loop cost ~250 instructions per state, a tenth of a checkpoint
 * load of 3 entries), the byte loop elsewhere. */
static void px_put64(unsigned char *b, uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(b, &v, 8);
#else
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
#endif
}

static uint64_t px_get64(const unsigned char *b)
{
    uint64_t v = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(&v, b, 8);
#else
    for (int i = 7; i >= 0; i--)
        v = v << 8 | b[i];
#endif
    return v;
}

void philox_state_pack(const rngsnap_philox *st, void *buf24)
{
    unsigned char *b = buf24;
    px_put64(b, st->seed);
    px_put64(b + 8, st->subsequence);
    px_put64(b + 16, st->offset);
}

void philox_state_unpack(const void *buf24, rngsnap_philox *st)
{
    const unsigned char *b = buf24;
    st->seed = px_get64(b);
    st->subsequence = px_get64(b + 8);
    st->offset = px_get64(b + 16);
}
