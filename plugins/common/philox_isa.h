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

/* What large fills do on this processor (philox_tune.c): each size field
 * the output size in bytes from which it applies, SIZE_MAX for never. */
typedef struct px_tuning {
    const char *family; /* the row's name: "AMD Zen 3", ..., "other"     */
    size_t nt_min;       /* non-temporal stores (SIMD paths but neon); in
                            a row that probes, the least size to measure
                            from (0: what the caches say, px_cache_floor) */
    size_t prefetch_min; /* prefetchw ahead of plain stores (avx2)        */
    size_t large_min;    /* avx2: the kernel with fewer groups per step   */
    int large_groups;    /* avx2: its groups of 8 blocks per step: 3 or 4 */
    int nt_probe;        /* nonzero: from nt_min, non-temporal only where
                            this process measured them faster, per size
                            class (philox_probe.c); 0: always from nt_min */
} px_tuning;

/* The tuning fills use: set once with the ISA choice (the row of this
 * processor, its probe floor raised to what the caches say, then
 * RNGSNAP_PHILOX_NT_MIN); tests and the benchmark change it between fills,
 * single-threaded. */
extern px_tuning px_tune;
/* The row for a cpuid vendor string, display family and model (as in the
 * table: a probing row's nt_min is its own floor, 0 for none). */
px_tuning px_tuning_for(const char *vendor, unsigned family, unsigned model);
/* Display family and model from cpuid leaf 1's eax. */
void px_cpuid_display(uint32_t eax, unsigned *family, unsigned *model);
/* The tuning for this processor: its row ("other" off x86), a probing
 * row's nt_min raised to px_cache_floor(L2 size from the OS). */
px_tuning px_tuning_detect(void);
/* Bytes of this CPU's level 2 or 3 data/unified cache, from
 * /sys/devices/system/cpu/cpu0/cache, else sysconf; 0 when unknown. */
size_t px_cache_bytes(int level);
/* Where the store kind stops being clear from the caches: 2 x the core's
 * own L2 (a fill that size cannot stay there for its reader), never below
 * 4 MiB (also the answer for l2 = 0, unknown). */
size_t px_cache_floor(size_t l2);
/* row with RNGSNAP_PHILOX_NT_MIN's value applied: a decimal byte count
 * replaces nt_min and turns the probe off, "never" keeps plain stores;
 * NULL, empty or anything else leaves the row as it is. */
px_tuning px_tuning_env(px_tuning row, const char *nt_min);

/* Non-temporal or plain stores for the whole blocks of a fill of `bytes`
 * on a path: 0 plain, 1 non-temporal, PX_NT_PROBE: this fill is to be
 * written by px_nt_probe, one round of measuring its size class. */
#define PX_NT_PROBE 2
int px_nt_choice(philox_isa isa, size_t bytes);
/* Size classes, each measured on its own: [nt_min, 4 nt_min),
 * [4 nt_min, 16 nt_min), [16 nt_min, 64 nt_min), 64 nt_min and up
 * (a larger fill may leave the cache where a smaller one stays in it). */
#define PX_NT_CLASSES 4
int px_nt_class(size_t bytes);
/* Write nb blocks (block_bytes of output each) in PX_PROBE_PIECES pieces,
 * plain and non-temporal in turn (order P N N P P N N P), timing each:
 * one round of its size class on isa.  After PX_PROBE_ROUNDS rounds (the
 * first, the warm-up, and any during which pages faulted in, not counted;
 * at most PX_PROBE_TRIES) the verdict holds for every later fill of the
 * class.  The bits are those of one fill either way. */
#define PX_PROBE_PIECES 8
#define PX_PROBE_ROUNDS 3
#define PX_PROBE_TRIES 8
#define PX_PROBE_SAMPLES (PX_PROBE_PIECES / 2 * (PX_PROBE_ROUNDS - 1))
void px_nt_probe(px_fill_fn fill, philox_isa isa, rngsnap_dist dist,
                 const px_ctr *c, void *out, size_t nb, size_t block_bytes);
/* The verdict from seconds per block of each way's n pieces (n <=
 * PX_PROBE_SAMPLES): 1 (stream) unless the median plain piece beat the
 * median non-temporal one by more than PX_PROBE_MARGIN.  The median,
 * because one slow piece (an interrupt, the host taking the vCPU) must not
 * decide, while a neighbour's steady use of the memory bus is part of what
 * streaming saves.  A tie streams: a fill written half each way flatters
 * plain stores (their half has half the footprint in the cache, and the
 * streaming pieces pay for writing back the plain pieces' dirty lines).
 * On the family 6 model A7h Xeon of docs/performance.md, in 5 processes,
 * the pieces had streaming 1.02-1.06x plain at 256 MiB on avx2 where
 * whole fills ran 1.13x, 0.97-1.08x at 64 MiB where they ran 1.11x; on an
 * Emerald Rapids VM a one-fill probe kept plain in 17 of 20 processes
 * where streaming was 1-30% faster.  With a 3% margin, 1 in 10 fresh
 * processes kept plain at 64 MiB on that Xeon (avx512), where streaming
 * whole fills ran 1.2x. */
#define PX_PROBE_MARGIN 0.05
int px_nt_verdict(const double *plain, const double *nt, int n);
/* "not measured yet", "being measured", "plain stores" or "non-temporal
 * stores": what the probe decided for fills of `bytes` on isa. */
const char *px_nt_verdict_name(philox_isa isa, size_t bytes);
/* The probe's medians (seconds per block, med[0] plain, med[1]
 * non-temporal) for fills of `bytes` on isa; returns the samples per way,
 * 0 (med untouched) when not decided by measuring. */
int px_nt_probe_medians(philox_isa isa, size_t bytes, double med[2]);
/* Times one piece: runs fill(dist, c, out, nb, nt), returns seconds and
 * sets *faults to the page faults taken meanwhile.  Tests replace it (a
 * fake that still fills, with scripted times), so no verdict of theirs
 * depends on this machine's speed. */
typedef double (*px_probe_piece_fn)(px_fill_fn fill, rngsnap_dist dist,
                                    const px_ctr *c, void *out, size_t nb,
                                    int nt, long *faults);
extern px_probe_piece_fn px_probe_piece;
/* Tests: forget every verdict (single-threaded, between fills). */
void px_nt_probe_reset(void);

#endif
