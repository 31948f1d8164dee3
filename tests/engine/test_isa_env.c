/*
 * test_isa_env.c - RNGSNAP_PHILOX_ISA.  Run by meson twice:
 *   RNGSNAP_PHILOX_ISA=bogus  -> every auto fill and the plugin's open fail
 *                               with RNGSNAP_E_CONFIG naming the variable
 *                               (no silent fallback);
 *   RNGSNAP_PHILOX_ISA=scalar -> the plugin runs the scalar path even with
 *                               isa = avx2 in its section, and says so.
 * And with RNGSNAP_PHILOX_NT_MIN=12345 and =never as well: a size replaces
 * the measured choice (non-temporal stores from that size, no probe),
 * "never" keeps plain stores (without it the processor's own values
 * stand).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "philox.h"
#include "philox_isa.h"
#include "stub_host.h"

static void test_env(void **state)
{
    (void)state;
    const char *env = getenv("RNGSNAP_PHILOX_ISA");
    assert_non_null(env);
    const rngsnap_backend *cpu = stub_load_plugin("cpu");
    assert_non_null(cpu);
    stub_host h;
    const stub_option o[] = {{"isa", "avx2", 6}};
    stub_host_init(&h, "cpu", philox_isa_supported(PHILOX_ISA_AVX2) ? o : NULL,
                   philox_isa_supported(PHILOX_ISA_AVX2) ? 1 : 0);
    void *b = NULL;
    int rc = cpu->open(&h.host, &b);
    rngsnap_philox p = {1, 2, 3};
    uint32_t w[8];
    if (strcmp(env, "bogus") == 0) {
        print_message("# %s\n", h.error);
        assert_int_equal(rc, RNGSNAP_E_CONFIG);
        assert_non_null(strstr(h.error, "RNGSNAP_PHILOX_ISA"));
        assert_int_equal(philox_generate(&p, RNGSNAP_U32, w, 8),
                         RNGSNAP_E_CONFIG);
        assert_true(p.offset == 3); /* nothing moved */
        /* an explicit path still works */
        assert_int_equal(philox_generate_isa(&p, RNGSNAP_U32, w, 8,
                                             PHILOX_ISA_SCALAR), RNGSNAP_OK);
    } else {
        assert_int_equal(rc, RNGSNAP_OK);
        print_message("# %s\n", cpu->status(b));
        assert_non_null(strstr(cpu->status(b), "scalar path (RNGSNAP_PHILOX_ISA)"));
        cpu->close(b);
        assert_int_equal(philox_generate(&p, RNGSNAP_U32, w, 8), RNGSNAP_OK);
    }
}

static void test_nt_min(void **state)
{
    (void)state;
    philox_isa isa;
    philox_isa_resolve(PHILOX_ISA_SCALAR, &isa, NULL); /* sets px_tune */
    px_tuning row = px_tuning_detect();
    assert_string_equal(px_tune.family, row.family);
    const char *nt = getenv("RNGSNAP_PHILOX_NT_MIN");
    if (nt != NULL && strcmp(nt, "never") == 0) { /* plain stores only */
        assert_true(px_tune.nt_min == SIZE_MAX);
        assert_int_equal(px_tune.nt_probe, 0);
    } else if (nt != NULL) { /* an explicit size: the probe is off too */
        assert_true(px_tune.nt_min == (size_t)strtoull(nt, NULL, 10));
        assert_int_equal(px_tune.nt_probe, 0);
    } else {
        assert_true(px_tune.nt_min == row.nt_min);
        assert_int_equal(px_tune.nt_probe, row.nt_probe);
    }
    assert_true(px_tune.prefetch_min == row.prefetch_min);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_env),
                                       cmocka_unit_test(test_nt_min)};
    return cmocka_run_group_tests_name("isa_env", tests, NULL, NULL);
}
