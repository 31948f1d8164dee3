/*
 * philox_tune.c - what a large fill does on this processor.
 *
 * Whether to write with non-temporal stores is decided on the machine,
 * for every CPU: a fill whose output fits the core's own cache (L2, from
 * the OS) is written with plain stores, since its reader will find it
 * there; from the size where that is no longer clear (px_cache_floor), the
 * process measures both ways once per size class and path and keeps the
 * faster (philox_probe.c).  The table below is only for what a
 * measurement does not decide: prefetchw ahead of plain stores and the
 * avx2 kernel's groups per step (measured per family, docs/performance.md,
 * "Large fills: how the store kind is chosen"), a family whose
 * probe must start higher (Zen 5), and one known exception that streams
 * without measuring (Emerald Rapids, where a one-fill probe misjudged).
 * RNGSNAP_PHILOX_NT_MIN=<bytes> streams from that size with no probe;
 * "never" keeps plain stores.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
     * stays for fills that cannot stream (unaligned outputs).  The store
     * kind is measured, as on every CPU. */
    {"AuthenticAMD", 0x19, 0x00, 0x0F,
     {"AMD Zen 3", 0, 4 * PX_MIB, 4 * PX_MIB, 4, 1}},
    {"AuthenticAMD", 0x19, 0x20, 0x5F,
     {"AMD Zen 3", 0, 4 * PX_MIB, 4 * PX_MIB, 4, 1}},
    /* AMD Zen 5 (EPYC 9005).  Two EPYC VMs, avx512 path, disagree:
     * on one, non-temporal stores ran 0.54-0.87x plain at 16 MiB-1 GiB;
     * on the other 1.13x at 64 MiB and 1.07x at 256 MiB.  The probe starts
     * at 64 MiB (below, streaming never won there).  Prefetch as the
     * "other" row (not measured). */
    {"AuthenticAMD", 0x1A, 0x00, 0xFF,
     {"AMD Zen 5", 64 * PX_MIB, 4 * PX_MIB, 4 * PX_MIB, 3, 1}},
    /* Intel Xeon, Emerald Rapids: the known exception.  Measured on a KVM
     * guest (avx512 path): non-temporal stores 1.01-1.30x plain at
     * 16-256 MiB in every one of 14 runs, also with the output read back
     * (+2-7%); slower at 4 MiB read back; a one-fill probe kept plain in
     * 17 of 20 processes.  So it streams from 16 MiB without measuring.
     * Prefetch and groups (avx2 only) as the "other" row: no way was
     * steadily ahead there. */
    {"GenuineIntel", 0x06, 0xCF, 0xCF,
     {"Intel Emerald Rapids", 16 * PX_MIB, 4 * PX_MIB, 4 * PX_MIB, 3, 0}},
};

/* Every other processor: prefetchw and 3 groups from 4 MiB (the best
 * plain-store choice on Zen 3); the store kind measured from the size
 * the caches give (px_cache_floor). */
static const px_tuning px_other = {"other", 0, 4 * PX_MIB, 4 * PX_MIB, 3, 1};

/* Until the ISA choice sets it: plain stores only. */
px_tuning px_tune = {"other", SIZE_MAX, 4 * PX_MIB, 4 * PX_MIB, 3, 0};

/* The size of this CPU's level-`level` data (or unified) cache in bytes,
 * from sysfs, else sysconf; 0 when the OS does not say. */
size_t px_cache_bytes(int level)
{
    for (int i = 0; i < 8; i++) {
        char path[96], buf[32];
        snprintf(path, sizeof path,
                 "/sys/devices/system/cpu/cpu0/cache/index%d/level", i);
        FILE *f = fopen(path, "r");
        if (f == NULL)
            break;
        int lv = fgets(buf, sizeof buf, f) ? atoi(buf) : 0;
        fclose(f);
        if (lv != level)
            continue;
        snprintf(path, sizeof path,
                 "/sys/devices/system/cpu/cpu0/cache/index%d/type", i);
        f = fopen(path, "r");
        int data = f && fgets(buf, sizeof buf, f) &&
                   strncmp(buf, "Instruction", 11) != 0;
        if (f)
            fclose(f);
        if (!data)
            continue;
        snprintf(path, sizeof path,
                 "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        f = fopen(path, "r");
        char *end = NULL;
        unsigned long long v = 0;
        if (f && fgets(buf, sizeof buf, f))
            v = strtoull(buf, &end, 10);
        if (f)
            fclose(f);
        if (v > 0 && end != NULL)
            return (size_t)(*end == 'K' ? v << 10 : *end == 'M' ? v << 20 : v);
    }
#if defined(_SC_LEVEL2_CACHE_SIZE) && defined(_SC_LEVEL3_CACHE_SIZE)
    long v = level == 2 ? sysconf(_SC_LEVEL2_CACHE_SIZE)
             : level == 3 ? sysconf(_SC_LEVEL3_CACHE_SIZE) : 0;
    if (v > 0)
        return (size_t)v;
#endif
    return 0;
}

size_t px_cache_floor(size_t l2)
{
    /* twice the core's own cache: a fill that size cannot be there for
     * its reader; never below 4 MiB, the smallest size at which streaming
     * won on any CPU measured (and the answer when the OS is silent) */
    size_t floor = 4 * PX_MIB;
    return l2 <= SIZE_MAX / 2 && 2 * l2 > floor ? 2 * l2 : floor;
}

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
    if (strcmp(nt_min, "never") == 0) {
        row.nt_min = SIZE_MAX;
        row.nt_probe = 0;
        return row;
    }
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

/* The row for this processor's vendor, family and model ("other" off
 * x86). */
static px_tuning px_row_detect(void)
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

px_tuning px_tuning_detect(void)
{
    px_tuning t = px_row_detect();
    if (t.nt_probe) {
        size_t floor = px_cache_floor(px_cache_bytes(2));
        if (t.nt_min < floor)
            t.nt_min = floor;
    }
    return t;
}
