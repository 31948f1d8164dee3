/*
 * test_cpu_plugin.c - the cpu backend plugin through its own table
 * (dlopen of the built rngsnap_cpu.so, a stub host): options and their
 * errors, the cuRAND vectors on every isa option, thread counts 1, 2, 3, 7
 * giving identical output and positions, reserve.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sys/wait.h>
#include <unistd.h>

#include "philox.h"
#include "philox_isa.h"
#include "stub_host.h"
#include "vectors.h"

static const rngsnap_backend *cpu;

static int setup(void **state)
{
    (void)state;
    cpu = stub_load_plugin("cpu");
    return cpu == NULL ? -1 : 0;
}

/* Open the plugin with the given options; returns the code. */
static int open_with(stub_host *h, const stub_option *o, size_t n, void **bctx)
{
    stub_host_init(h, "cpu", o, n);
    *bctx = NULL;
    return cpu->open(&h->host, bctx);
}

static void test_table(void **state)
{
    (void)state;
    assert_int_equal(cpu->abi_version, RNGSNAP_BACKEND_ABI_VERSION);
    assert_int_equal(cpu->struct_size, sizeof(rngsnap_backend));
    assert_string_equal(cpu->name, "cpu");
    assert_int_equal(cpu->state_format, RNGSNAP_STATE_PHILOX4X32_10);
    assert_int_equal(cpu->state_size, RNGSNAP_STATE_PHILOX_SIZE);
    assert_true(RNGSNAP_BACKEND_HAS(cpu, reserve));
    assert_true(RNGSNAP_BACKEND_HAS(cpu, memory));
    assert_true(RNGSNAP_BACKEND_HAS(cpu, validate_state));
    assert_true(RNGSNAP_BACKEND_HAS(cpu, status));

    stub_host h;
    void *b;
    assert_int_equal(open_with(&h, NULL, 0, &b), RNGSNAP_OK);
    const char *reason = "x";
    assert_int_equal(cpu->device_count(b, &reason), 1);
    assert_non_null(cpu->device_name(b, 0));
    assert_null(cpu->device_name(b, 1));
    const char *st = cpu->status(b);
    print_message("# status: %s; device: %s\n", st, cpu->device_name(b, 0));
    assert_non_null(strstr(st, "Philox4x32-10"));
    assert_non_null(strstr(st, " path"));
    assert_non_null(strstr(st, "1 thread"));
    /* the large-fill row of this processor's family, by name */
    char row[96];
    snprintf(row, sizeof row, "large fills: %s row", px_tuning_detect().family);
    assert_non_null(strstr(st, row));
    assert_int_equal(cpu->emulated(b), 0);
    void *s;
    assert_int_equal(cpu->stream_open(b, 0, "default", &s), RNGSNAP_OK);
    assert_int_equal(cpu->memory(s), RNGSNAP_MEMORY_HOST);
    cpu->stream_close(s);
    assert_int_not_equal(cpu->stream_open(b, 1, "default", &s), RNGSNAP_OK);
    cpu->close(b);
}

static void test_option_errors(void **state)
{
    (void)state;
    stub_host h;
    void *b;
    const stub_option unknown[] = {{"threads", "2", 5}, {"thread", "2", 7}};
    assert_int_equal(open_with(&h, unknown, 2, &b), RNGSNAP_E_CONFIG);
    print_message("# %s\n", h.error);
    assert_non_null(strstr(h.error, "'thread'"));
    assert_non_null(strstr(h.error, "rng.ini:7:"));
    assert_null(b);

    const char *bad_threads[] = {"-1", "two", "", "3x", "100000"};
    for (size_t i = 0; i < 5; i++) {
        const stub_option o[] = {{"threads", bad_threads[i], 9}};
        assert_int_equal(open_with(&h, o, 1, &b), RNGSNAP_E_CONFIG);
        assert_non_null(strstr(h.error, "threads"));
        assert_non_null(strstr(h.error, "rng.ini:9:"));
    }
    const stub_option bad_isa[] = {{"isa", "sse2", 4}};
    assert_int_equal(open_with(&h, bad_isa, 1, &b), RNGSNAP_E_CONFIG);
    assert_non_null(strstr(h.error, "isa"));
    assert_non_null(strstr(h.error, "rng.ini:4:"));

    const stub_option zero[] = {{"threads", "0", 3}};
    assert_int_equal(open_with(&h, zero, 1, &b), RNGSNAP_OK);
    print_message("# threads = 0: %s\n", cpu->status(b));
    cpu->close(b);
}

/* Every cuRAND vector through the plugin, on each isa option. */
static void test_curand_vectors(void **state)
{
    (void)state;
    stream_vec *v = NULL;
    int n = read_streams(&v);
    assert_true(n > 0);
    for (int isa = PHILOX_ISA_SCALAR; isa < PHILOX_ISA_COUNT; isa++) {
        if (!philox_isa_supported((philox_isa)isa))
            continue;
        const stub_option o[] = {{"isa", philox_isa_name((philox_isa)isa), 2}};
        stub_host h;
        void *b, *s;
        assert_int_equal(open_with(&h, o, 1, &b), RNGSNAP_OK);
        assert_non_null(strstr(cpu->status(b), philox_isa_name((philox_isa)isa)));
        assert_int_equal(cpu->stream_open(b, 0, "default", &s), RNGSNAP_OK);
        for (int i = 0; i < n; i++) {
            unsigned char st[24];
            rngsnap_philox p = {v[i].seed, v[i].subsequence, v[i].offset};
            philox_state_pack(&p, st);
            assert_int_equal(cpu->validate_state(b, st, 24), RNGSNAP_OK);
            assert_int_equal(cpu->set_state(s, st, 24), RNGSNAP_OK);
            uint32_t w[4];
            assert_int_equal(cpu->generate(s, RNGSNAP_U32, w, 4), RNGSNAP_OK);
            assert_memory_equal(w, v[i].expect, 16);
            assert_int_equal(cpu->get_state(s, st, 24), RNGSNAP_OK);
            philox_state_unpack(st, &p);
            assert_true(p.offset == v[i].offset + 4);
        }
        cpu->stream_close(s);
        cpu->close(b);
    }
    free(v);
}

/* Thread counts 1, 2, 3, 7: same values, same position, = the engine. */
static void test_threads_identical(void **state)
{
    (void)state;
    const char *counts[] = {"1", "2", "3", "7"};
    size_t n = (3u << 20) / 4 + 13; /* past the parallel threshold */
    size_t bytes = n * 8;
    unsigned char *ref = malloc(bytes), *got = malloc(bytes);
    assert_non_null(ref);
    assert_non_null(got);
    const uint64_t offsets[] = {0, 1, 2, 3, 6, ((uint64_t)1 << 34) - 4097};
    for (size_t c = 0; c < 4; c++) {
        const stub_option o[] = {{"threads", counts[c], 3}};
        stub_host h;
        void *b, *s;
        assert_int_equal(open_with(&h, o, 1, &b), RNGSNAP_OK);
        assert_int_equal(cpu->stream_open(b, 0, "default", &s), RNGSNAP_OK);
        for (int d = 0; d < RNGSNAP_DIST_COUNT; d++) {
            for (size_t k = 0; k < sizeof offsets / sizeof offsets[0]; k++) {
                size_t m = n / (philox_value_size((rngsnap_dist)d) / 4) - k;
                rngsnap_philox p = {99, 5, offsets[k]};
                assert_int_equal(philox_generate_isa(&p, (rngsnap_dist)d, ref,
                                                     m, PHILOX_ISA_SCALAR),
                                 RNGSNAP_OK);
                unsigned char st[24];
                rngsnap_philox q = {99, 5, offsets[k]};
                philox_state_pack(&q, st);
                cpu->set_state(s, st, 24);
                memset(got, 0, bytes);
                assert_int_equal(cpu->generate(s, (rngsnap_dist)d, got, m),
                                 RNGSNAP_OK);
                assert_memory_equal(ref, got, m * philox_value_size((rngsnap_dist)d));
                cpu->get_state(s, st, 24);
                philox_state_unpack(st, &q);
                assert_true(q.offset == p.offset);
            }
        }
        cpu->stream_close(s);
        cpu->close(b);
    }
    free(ref);
    free(got);
}

static void test_reserve(void **state)
{
    (void)state;
    stub_host h;
    void *b, *s;
    assert_int_equal(open_with(&h, NULL, 0, &b), RNGSNAP_OK);
    assert_int_equal(cpu->stream_open(b, 0, "x", &s), RNGSNAP_OK);
    assert_int_equal(cpu->seed(s, 11, 22), RNGSNAP_OK);
    rngsnap_philox at;
    assert_int_equal(cpu->reserve(s, 0, &at), RNGSNAP_OK);
    assert_true(at.seed == 11 && at.subsequence == 22 && at.offset == 0);
    assert_int_equal(cpu->reserve(s, 0, &at), RNGSNAP_OK);
    assert_true(at.offset == 0);
    assert_int_equal(cpu->reserve(s, 1000, &at), RNGSNAP_OK);
    assert_true(at.offset == 0);
    assert_int_equal(cpu->reserve(s, 1, &at), RNGSNAP_OK);
    assert_true(at.offset == 1000);
    uint32_t w[2], r[1003];
    cpu->generate(s, RNGSNAP_U32, w, 2);
    rngsnap_philox p = {11, 22, 0};
    philox_generate(&p, RNGSNAP_U32, r, 1003);
    assert_memory_equal(w, &r[1001], 8);
    cpu->stream_close(s);
    cpu->close(b);
}

/* A fork child (a data-loader worker) with threads = 2 fills large buffers
 * without the parent's workers (it would hang otherwise), same values. */
static void test_fork_child(void **state)
{
    (void)state;
    const stub_option o[] = {{"threads", "2", 3}};
    stub_host h;
    void *b, *s;
    assert_int_equal(open_with(&h, o, 1, &b), RNGSNAP_OK);
    assert_int_equal(cpu->stream_open(b, 0, "x", &s), RNGSNAP_OK);
    size_t n = (4u << 20) / 4;
    uint32_t *got = malloc(n * 4), *ref = malloc(n * 4);
    assert_non_null(got);
    assert_non_null(ref);
    assert_int_equal(cpu->generate(s, RNGSNAP_U32, got, n), RNGSNAP_OK);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        alarm(30); /* a hang fails the test instead of blocking it */
        rngsnap_philox p = {0, 0, n};
        philox_generate_isa(&p, RNGSNAP_U32, ref, n, PHILOX_ISA_SCALAR);
        int ok = cpu->generate(s, RNGSNAP_U32, got, n) == RNGSNAP_OK &&
                 memcmp(got, ref, n * 4) == 0;
        cpu->stream_close(s);
        cpu->close(b); /* must not join the parent's workers */
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    /* the parent's pool still works */
    assert_int_equal(cpu->generate(s, RNGSNAP_U32, got, n), RNGSNAP_OK);
    cpu->stream_close(s);
    cpu->close(b);
    free(got);
    free(ref);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_option_errors),
        cmocka_unit_test(test_curand_vectors),
        cmocka_unit_test(test_threads_identical),
        cmocka_unit_test(test_reserve),
        cmocka_unit_test(test_fork_child),
    };
    return cmocka_run_group_tests_name("cpu_plugin", tests, setup, NULL);
}
