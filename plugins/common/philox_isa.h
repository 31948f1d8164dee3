/*
 * philox_isa.h - engine internals: the per-ISA block kernels and the
 * choice between them.  Not for plugins (they use philox.h); tests and the
 * benchmark use it to force a path.
 */
#ifndef RNGSNAP_PHILOX_ISA_H
#define RNGSNAP_PHILOX_ISA_H

#include <stddef.h>
#include <stdint.h>

#include "philox.h"

typedef enum philox_isa {
    PHILOX_ISA_AUTO = 0,   /* RNGSNAP_PHILOX_ISA, else the best supported */
    PHILOX_ISA_SCALAR = 1, /* portable C                                  */
    PHILOX_ISA_AVX2 = 2,
    PHILOX_ISA_AVX512 = 3, /* AVX-512 F/DQ/BW/VL                          */
    PHILOX_ISA_NEON = 4    /* aarch64 Advanced SIMD                       */
} philox_isa;
#define PHILOX_ISA_COUNT 5

/* Where a run of whole blocks starts: key, first block index, subsequence. */
typedef struct px_ctr {
    uint32_t key[2];
    uint64_t block;
    uint64_t subseq;
} px_ctr;

/* Write nblocks whole blocks as values of dist: per block 4 x U32/F32,
 * 2 x U64/F64, 4 x NORMAL_F32 (pairs (w0,w1), (w2,w3)), 2 x NORMAL_F64;
 * the CURAND_* dists likewise (4 x CURAND_UNIFORM_F64: 32 bytes).
 * nt: the caller allows non-temporal stores (large output). */
typedef void (*px_fill_fn)(rngsnap_dist dist, const px_ctr *c, void *out,
                           size_t nblocks, int nt);

void px_fill_scalar(rngsnap_dist, const px_ctr *, void *, size_t, int);
void px_fill_avx2(rngsnap_dist, const px_ctr *, void *, size_t, int);
void px_fill_avx512(rngsnap_dist, const px_ctr *, void *, size_t, int);
/* Built on aarch64 hosts only (philox_neon.c). */
void px_fill_neon(rngsnap_dist, const px_ctr *, void *, size_t, int);
/* The kernel of a path, or NULL where this build has none (neon off
 * aarch64).  The one table of kernels: the engine and its tests use it. */
px_fill_fn px_fill_for(philox_isa isa);

/* Convert whole blocks of words (4 per block) already in w: the shared
 * tail of every kernel for the normal distributions. */
void px_convert_blocks(rngsnap_dist dist, const uint32_t *w, void *out,
                       size_t nblocks);
/* The same signature: a path's conversion of whole blocks of words. */
typedef void (*px_convert_fn)(rngsnap_dist dist, const uint32_t *w,
                              void *out, size_t nblocks);
/* Each SIMD path's own, compiled with its file's flags: avx2 has
 * NORMAL_F64 in intrinsics, the others the shared loop vectorised for
 * their ISA (neon: aarch64 builds only). */
void px_convert_avx2(rngsnap_dist, const uint32_t *, void *, size_t);
void px_convert_avx512(rngsnap_dist, const uint32_t *, void *, size_t);
void px_convert_neon(rngsnap_dist, const uint32_t *, void *, size_t);
/* The conversion a path's normals go through (never NULL for a path this
 * build has): tests feed it edge words directly. */
px_convert_fn px_convert_for(philox_isa isa);

/* "scalar", "avx2", "avx512", "neon", "auto"; NULL for a bad value. */
const char *philox_isa_name(philox_isa isa);
/* Parse a name ("auto" included); -1 when unknown. */
int philox_isa_parse(const char *name);
/* Nonzero when this processor can run isa (AUTO and SCALAR always). */
int philox_isa_supported(philox_isa isa);
/* Resolve AUTO: RNGSNAP_PHILOX_ISA if set, else the best supported ISA.
 * Returns RNGSNAP_OK, or RNGSNAP_E_CONFIG when the variable names an
 * unknown or unsupported ISA (*why then says which); never falls back. */
int philox_isa_resolve(philox_isa want, philox_isa *out, const char **why);

/* Same as philox_generate, on a given path (AUTO: as philox_generate). */
int philox_generate_isa(rngsnap_philox *st, rngsnap_dist dist, void *out,
                        size_t n, philox_isa isa);

/* What large fills do on this CPU family (philox_tune.c): each field the
 * output size in bytes from which it applies, SIZE_MAX for never. */
typedef struct px_tuning {
    const char *family; /* the row's name: "AMD Zen 3", ..., "other"     */
    size_t nt_min;       /* non-temporal stores (SIMD paths but neon)     */
    size_t prefetch_min; /* prefetchw ahead of plain stores (avx2)        */
    size_t large_min;    /* avx2: the kernel with fewer groups per step   */
    int large_groups;    /* avx2: its groups of 8 blocks per step: 3 or 4 */
} px_tuning;

/* The tuning fills use: set once with the ISA choice (the row of this
 * processor's family, nt_min from RNGSNAP_PHILOX_NT_MIN when set); tests
 * and the benchmark change it between fills, single-threaded. */
extern px_tuning px_tune;
/* The row for a cpuid vendor string, display family and model. */
px_tuning px_tuning_for(const char *vendor, unsigned family, unsigned model);
/* Display family and model from cpuid leaf 1's eax. */
void px_cpuid_display(uint32_t eax, unsigned *family, unsigned *model);
/* The row for this processor ("other" off x86). */
px_tuning px_tuning_detect(void);

#endif
