/*
 * philox_tune.c - what a large fill does, chosen per CPU family.
 *
 * Three choices depend on the processor more than on the ISA: whether to
 * write with non-temporal stores, whether to prefetch each output line for
 * writing ahead of plain stores, and (avx2) from which size the kernel with
 * fewer groups per step runs.  Each row below comes from measurements on
 * that family (docs/performance.md, "Large fills: how each CPU family's
 * row was chosen"); a family without a row gets the "other" row, which is
 * what the engine did before the table existed.  Where two machines of one
 * family disagreed, the row lets the process measure: the first fill of
 * at least nt_min bytes on a path is written half plain, half
 * non-temporal, and the faster way is used from then on (px_nt_probe).
 * RNGSNAP_PHILOX_NT_MIN=<bytes> overrides nt_min and turns the probe off.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "philox_isa.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#define PX_MIB ((size_t)1 << 20)

typedef struct px_family_row {
    const char *vendor;    /* cpuid leaf 0 vendor string */
    unsigned family;       /* display family (base + extended) */
    unsigned model_lo, model_hi; /* display model range, inclusive */
    px_tuning tuning;
} px_family_row;

static const px_family_row px_rows[] = {
    /* AMD Zen 3 (EPYC 7003, Ryzen 5000).  Measured on an EPYC VM:
     * non-temporal stores with 3 groups were as fast as or faster than
     * prefetchw at 4-256 MiB (+0-22%), also with the output read back
     * right after, and 4 groups beat 3 when streaming (+2-6%); prefetchw
     * stays for fills that cannot stream (unaligned outputs). */
    {"AuthenticAMD", 0x19, 0x00, 0x0F,
     {"AMD Zen 3", 4 * PX_MIB, 4 * PX_MIB, 4 * PX_MIB, 4, 0}},
    {"AuthenticAMD", 0x19, 0x20, 0x5F,
     {"AMD Zen 3", 4 * PX_MIB, 4 * PX_MIB, 4 * PX_MIB, 4, 0}},
    /* AMD Zen 5 (EPYC 9005).  Two EPYC VMs, avx512 path, disagree:
     * on one, non-temporal stores ran 0.54-0.87x plain at 16 MiB-1 GiB;
     * on the other 1.13x at 64 MiB and 1.07x at 256 MiB.  No fixed size
     * suits both (streaming from any size costs the first up to 46%;
     * never streaming costs the second 6-12%), so from 64 MiB the first
     * fill measures both ways, and streams only if that was clearly
     * faster (px_nt_verdict).  Prefetch as the "other" row (not
     * measured). */
    {"AuthenticAMD", 0x1A, 0x00, 0xFF,
     {"AMD Zen 5", 64 * PX_MIB, 4 * PX_MIB, 4 * PX_MIB, 3, 1}},
    /* Intel Xeon, Emerald Rapids.  Measured on a KVM guest (avx512 path):
     * non-temporal stores 1.01-1.30x plain at 16-256 MiB in every one of
     * 14 runs, also with the output read back (+2-7%); slower at 4 MiB
     * read back.
     * Prefetch and groups (avx2 only) as the "other" row: no way was
     * steadily ahead there. */
    {"GenuineIntel", 0x06, 0xCF, 0xCF,
     {"Intel Emerald Rapids", 16 * PX_MIB, 4 * PX_MIB, 4 * PX_MIB, 3, 0}},
};

/* Every other processor: prefetchw and 3 groups from 4 MiB (the best
 * plain-store choice on Zen 3), no non-temporal stores (up to 46% slower
 * on one Zen 5 VM).  Also what px_tune holds until the ISA choice sets
 * it. */
#define PX_OTHER_ROW {"other", SIZE_MAX, 4 * PX_MIB, 4 * PX_MIB, 3, 0}
static const px_tuning px_other = PX_OTHER_ROW;

px_tuning px_tune = PX_OTHER_ROW;

px_tuning px_tuning_for(const char *vendor, unsigned family, unsigned model)
{
    for (size_t i = 0; i < sizeof px_rows / sizeof px_rows[0]; i++) {
        const px_family_row *r = &px_rows[i];
        if (vendor != NULL && strcmp(vendor, r->vendor) == 0 &&
            family == r->family && model >= r->model_lo &&
            model <= r->model_hi)
            return r->tuning;
    }
    return px_other;
}

px_tuning px_tuning_env(px_tuning row, const char *nt_min)
{
    if (nt_min == NULL || *nt_min == '\0')
        return row;
    char *end;
    unsigned long long b = strtoull(nt_min, &end, 10);
    if (*end == '\0') { /* an explicit size: the row's probe is off */
        row.nt_min = (size_t)b;
        row.nt_probe = 0;
    }
    return row;
}

void px_cpuid_display(uint32_t eax, unsigned *family, unsigned *model)
{
    /* display family and model, as the vendors' manuals define them:
     * the extended family is added when the base family is 0xF, the
     * extended model is the high nibble when it is 6 or 0xF (AMD: 0xF
     * only, and its family 6 parts have extended model 0) */
    unsigned base = (eax >> 8) & 0xF;
    *family = base;
    *model = (eax >> 4) & 0xF;
    if (base == 0xF)
        *family += (eax >> 20) & 0xFF;
    if (base == 0xF || base == 6)
        *model |= ((eax >> 16) & 0xF) << 4;
}

px_tuning px_tuning_detect(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (__get_cpuid(0, &a, &b, &c, &d) == 0)
        return px_other;
    char vendor[13];
    memcpy(vendor, &b, 4);
    memcpy(vendor + 4, &d, 4);
    memcpy(vendor + 8, &c, 4);
    vendor[12] = '\0';
    if (__get_cpuid(1, &a, &b, &c, &d) == 0)
        return px_other;
    unsigned family, model;
    px_cpuid_display(a, &family, &model);
    return px_tuning_for(vendor, family, model);
#else
    return px_other;
#endif
}

/* ---- the probe: plain or non-temporal, measured once per path ----------- */

enum { PX_NT_UNDECIDED, PX_NT_PROBING, PX_NT_PLAIN, PX_NT_STREAM };
/* per path; read and written atomically (fills run on many threads) */
static int px_nt_state[PHILOX_ISA_COUNT];

int px_nt_choice(philox_isa isa, size_t bytes)
{
    if (bytes < px_tune.nt_min)
        return 0;
    if (!px_tune.nt_probe || (unsigned)isa >= PHILOX_ISA_COUNT)
        return 1;
    int expect = PX_NT_UNDECIDED;
    if (__atomic_compare_exchange_n(&px_nt_state[isa], &expect,
                                    PX_NT_PROBING, 0, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE))
        return PX_NT_PROBE;
    /* while another thread probes, plain stores (the safe way) */
    return expect == PX_NT_STREAM;
}

/* median of n <= PX_PROBE_PIECES values (n even: the mean of the middle
 * two) */
static double px_median(const double *v, int n)
{
    double s[PX_PROBE_PIECES];
    for (int i = 0; i < n; i++) { /* insertion sort: n is 4 */
        int j = i;
        for (; j > 0 && s[j - 1] > v[i]; j--)
            s[j] = s[j - 1];
        s[j] = v[i];
    }
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

int px_nt_verdict(const double *plain, const double *nt, int n)
{
    return px_median(nt, n) * (1 + PX_PROBE_MARGIN) < px_median(plain, n);
}

/* On the thread's CPU clock: a piece during which another job held the
 * core is not counted slower (on a shared 2-vCPU VM under load, half the
 * pieces of a 64 MiB fill were, on the wall clock).  Two system calls a
 * piece, against a piece of a millisecond or more. */
static double px_piece_timed(px_fill_fn fill, rngsnap_dist dist,
                             const px_ctr *c, void *out, size_t nb, int nt)
{
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    fill(dist, c, out, nb, nt);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
}

px_probe_piece_fn px_probe_piece = px_piece_timed;

void px_nt_probe(px_fill_fn fill, philox_isa isa, rngsnap_dist dist,
                 const px_ctr *c, void *out, size_t nb, size_t block_bytes)
{
    /* P N N P P N N P: a drift of the machine's speed during the fill
     * weighs on both ways alike */
    static const int way[PX_PROBE_PIECES] = {0, 1, 1, 0, 0, 1, 1, 0};
    double t[2][PX_PROBE_PIECES / 2];
    int k[2] = {0, 0};
    size_t piece = nb / PX_PROBE_PIECES;
    if (piece == 0) { /* too small to tell: plain, and ask again later */
        fill(dist, c, out, nb, 0);
        if ((unsigned)isa < PHILOX_ISA_COUNT)
            __atomic_store_n(&px_nt_state[isa], PX_NT_UNDECIDED,
                             __ATOMIC_RELEASE);
        return;
    }
    px_ctr pc = *c;
    char *o = out;
    for (int i = 0; i < PX_PROBE_PIECES; i++) {
        size_t n = i == PX_PROBE_PIECES - 1 ? nb - piece * i : piece;
        double s = px_probe_piece(fill, dist, &pc, o, n, way[i]);
        t[way[i]][k[way[i]]++] = s / (double)n;
        pc.block += n;
        o += n * block_bytes;
    }
    int v = px_nt_verdict(t[0], t[1], PX_PROBE_PIECES / 2) ? PX_NT_STREAM
                                                           : PX_NT_PLAIN;
    if ((unsigned)isa < PHILOX_ISA_COUNT)
        __atomic_store_n(&px_nt_state[isa], v, __ATOMIC_RELEASE);
}

const char *px_nt_verdict_name(philox_isa isa)
{
    int v = (unsigned)isa < PHILOX_ISA_COUNT
                ? __atomic_load_n(&px_nt_state[isa], __ATOMIC_ACQUIRE)
                : PX_NT_UNDECIDED;
    return v == PX_NT_STREAM  ? "non-temporal stores"
           : v == PX_NT_PLAIN ? "plain stores"
                              : "not measured yet";
}

void px_nt_probe_reset(void)
{
    for (int i = 0; i < PHILOX_ISA_COUNT; i++)
        __atomic_store_n(&px_nt_state[i], PX_NT_UNDECIDED, __ATOMIC_RELEASE);
    px_probe_piece = px_piece_timed;
}
