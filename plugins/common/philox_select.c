/*
 * philox_select.c - which ISA path runs: what the processor supports
 * (__builtin_cpu_supports, which also checks that the OS saves the
 * registers; NEON is always there on aarch64), and
 * RNGSNAP_PHILOX_ISA=scalar|avx2|avx512|neon|auto to force one.
 * A forced path the processor lacks is an error, never a fallback.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "philox_isa.h"

static const char *const px_isa_names[PHILOX_ISA_COUNT] = {
    [PHILOX_ISA_AUTO] = "auto",
    [PHILOX_ISA_SCALAR] = "scalar",
    [PHILOX_ISA_AVX2] = "avx2",
    [PHILOX_ISA_AVX512] = "avx512",
    [PHILOX_ISA_NEON] = "neon",
};

const char *philox_isa_name(philox_isa isa)
{
    return (unsigned)isa < PHILOX_ISA_COUNT ? px_isa_names[isa] : NULL;
}

int philox_isa_parse(const char *name)
{
    for (int i = 0; name != NULL && i < PHILOX_ISA_COUNT; i++)
        if (strcmp(name, px_isa_names[i]) == 0)
            return i;
    return -1;
}

int philox_isa_supported(philox_isa isa)
{
    switch (isa) {
    case PHILOX_ISA_AUTO:
    case PHILOX_ISA_SCALAR:
        return 1;
#if defined(__x86_64__) || defined(__i386__)
    case PHILOX_ISA_AVX2:
        return __builtin_cpu_supports("avx2") != 0;
    case PHILOX_ISA_AVX512:
        return __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl");
#endif
#if defined(__aarch64__) && defined(__ARM_NEON)
    case PHILOX_ISA_NEON: /* Advanced SIMD: baseline of AArch64 */
        return 1;
#endif
    default:
        return 0;
    }
}

static pthread_once_t px_once = PTHREAD_ONCE_INIT;
static philox_isa px_default = PHILOX_ISA_SCALAR;
static char px_env_error[160]; /* empty: the variable is fine */
static unsigned char px_ok[PHILOX_ISA_COUNT]; /* supported, cached */

static void px_select_init(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
#endif
    for (int i = 0; i < PHILOX_ISA_COUNT; i++)
        px_ok[i] = philox_isa_supported((philox_isa)i) != 0;
    px_tune = px_tuning_env(px_tuning_detect(),
                            getenv("RNGSNAP_PHILOX_NT_MIN"));
    const char *v = getenv("RNGSNAP_PHILOX_ISA");
    int want = (v == NULL || *v == '\0') ? PHILOX_ISA_AUTO
                                         : philox_isa_parse(v);
    if (want < 0) {
        snprintf(px_env_error, sizeof px_env_error,
                 "RNGSNAP_PHILOX_ISA=%.40s: unknown path "
                 "(scalar, avx2, avx512, neon or auto)", v);
        return;
    }
    if (want != PHILOX_ISA_AUTO) {
        if (!philox_isa_supported((philox_isa)want)) {
            snprintf(px_env_error, sizeof px_env_error,
                     "RNGSNAP_PHILOX_ISA=%s: this processor does not "
                     "support it", v);
            return;
        }
        px_default = (philox_isa)want;
        return;
    }
    for (int i = PHILOX_ISA_COUNT - 1; i > PHILOX_ISA_SCALAR; i--)
        if (philox_isa_supported((philox_isa)i)) {
            px_default = (philox_isa)i;
            return;
        }
}

int philox_isa_resolve(philox_isa want, philox_isa *out, const char **why)
{
    if (want == PHILOX_ISA_AUTO) {
        pthread_once(&px_once, px_select_init);
        if (px_env_error[0] != '\0') {
            if (why != NULL)
                *why = px_env_error;
            return RNGSNAP_E_CONFIG;
        }
        *out = px_default;
        return RNGSNAP_OK;
    }
    if ((unsigned)want >= PHILOX_ISA_COUNT) {
        if (why != NULL)
            *why = "unknown ISA path";
        return RNGSNAP_E_CONFIG;
    }
    pthread_once(&px_once, px_select_init);
    if (!px_ok[want]) {
        if (why != NULL)
            *why = "this processor does not support the requested ISA path";
        return RNGSNAP_E_CONFIG;
    }
    *out = want;
    return RNGSNAP_OK;
}
