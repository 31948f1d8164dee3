/*
 * philox_tune.c - what a large fill does, chosen per CPU family.
 *
 * Three choices depend on the processor more than on the ISA: whether to
 * write with non-temporal stores, whether to prefetch each output line for
 * writing ahead of plain stores, and (avx2) from which size the kernel with
 * fewer groups per step runs.  Each row below comes from measurements on
 * that family (docs/performance.md, "Large fills per CPU family"); a family
 * without a row gets the "other" row, which is what the engine did before
 * the table existed.  RNGSNAP_PHILOX_NT_MIN=<bytes> overrides nt_min.
 */
#include <stdint.h>
#include <string.h>

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
     {"AMD Zen 3", 4 * PX_MIB, 4 * PX_MIB, 4 * PX_MIB, 4}},
    {"AuthenticAMD", 0x19, 0x20, 0x5F,
     {"AMD Zen 3", 4 * PX_MIB, 4 * PX_MIB, 4 * PX_MIB, 4}},
    /* AMD Zen 5 (EPYC 9005).  Measured on an EPYC VM (avx512 path):
     * non-temporal stores 10-14 GB/s against 19-22 plain at 256 MiB and
     * 1 GiB, so never; prefetch as the "other" row (not measured). */
    {"AuthenticAMD", 0x1A, 0x00, 0xFF,
     {"AMD Zen 5", SIZE_MAX, 4 * PX_MIB, 4 * PX_MIB, 3}},
};

/* Every other processor: prefetchw and 3 groups from 4 MiB (the best
 * plain-store choice on Zen 3), no non-temporal stores (slower on Zen 5).
 * Also what px_tune holds until the ISA choice sets it. */
#define PX_OTHER_ROW {"other", SIZE_MAX, 4 * PX_MIB, 4 * PX_MIB, 3}
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
