/*
 * test_rank.c - rank and world size from the launchers' variables
 * (RANK/WORLD_SIZE, OMPI_COMM_WORLD_RANK/_SIZE, PMI_RANK/PMI_SIZE), their
 * validation (RNGSNAP_E_CONFIG naming the variable), and
 * rngsnap_set_rank / rngsnap_get_rank.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <rngsnap.h>

#include "helpers.h"

static char ini[4096];

static void expect_rank(int rank, int world)
{
    rngsnap *ctx = th_open_ok(ini, 0);
    int r = -5, w = -5;
    assert_int_equal(rngsnap_get_rank(ctx, &r, &w), RNGSNAP_OK);
    assert_int_equal(r, rank);
    assert_int_equal(w, world);
    rngsnap_close(ctx);
}

static void test_defaults(void **state)
{
    (void)state;
    test_clean_env();
    expect_rank(0, 1);
}

static void test_each_launcher(void **state)
{
    (void)state;
    static const char *const pairs[][2] = {
        {"RANK", "WORLD_SIZE"},
        {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
        {"PMI_RANK", "PMI_SIZE"}};
    for (size_t i = 0; i < 3; i++) {
        test_clean_env();
        setenv(pairs[i][0], "3", 1);
        setenv(pairs[i][1], "8", 1);
        expect_rank(3, 8);
    }
    /* torchrun's variables win over MPI's. */
    test_clean_env();
    setenv("RANK", "1", 1);
    setenv("WORLD_SIZE", "2", 1);
    setenv("OMPI_COMM_WORLD_RANK", "5", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "6", 1);
    expect_rank(1, 2);
    test_clean_env();
}

static void test_bad_variables(void **state)
{
    (void)state;
    static const struct {
        const char *vars[4]; /* name, value, name, value (or NULL) */
        const char *want[2];
    } cases[] = {
        {{"RANK", "2", NULL, NULL}, {"RANK", "WORLD_SIZE is not"}},
        {{"WORLD_SIZE", "2", NULL, NULL}, {"WORLD_SIZE", "RANK is not"}},
        {{"RANK", "4", "WORLD_SIZE", "4"}, {"RANK=4", "WORLD_SIZE=4"}},
        {{"RANK", "-1", "WORLD_SIZE", "4"}, {"RANK=-1", NULL}},
        {{"RANK", "0", "WORLD_SIZE", "0"}, {"WORLD_SIZE=0", NULL}},
        {{"RANK", "abc", "WORLD_SIZE", "4"}, {"RANK='abc'", "integer"}},
        {{"PMI_RANK", "1", "PMI_SIZE", "1x"}, {"PMI_SIZE='1x'", NULL}},
        {{"OMPI_COMM_WORLD_RANK", "9", "OMPI_COMM_WORLD_SIZE", "3"},
         {"OMPI_COMM_WORLD_RANK=9", NULL}},
        {{"RANK", "99999999999", "WORLD_SIZE", "4"}, {"RANK=", "integer"}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        test_clean_env();
        setenv(cases[i].vars[0], cases[i].vars[1], 1);
        if (cases[i].vars[2])
            setenv(cases[i].vars[2], cases[i].vars[3], 1);
        const char *msg = th_open_fails(ini, 0, RNGSNAP_E_CONFIG);
        th_contains(msg, "environment variable", cases[i].want[0]);
        if (cases[i].want[1])
            th_contains(msg, cases[i].want[1]);
    }
    test_clean_env();
}

static void test_set_rank(void **state)
{
    (void)state;
    test_clean_env();
    rngsnap *ctx = th_open_ok(ini, 0);
    int r, w;
    assert_int_equal(rngsnap_set_rank(ctx, 2, 3), RNGSNAP_OK);
    assert_int_equal(rngsnap_get_rank(ctx, &r, &w), RNGSNAP_OK);
    assert_int_equal(r, 2);
    assert_int_equal(w, 3);
    static const int bad[][2] = {{3, 3}, {-1, 3}, {0, 0}, {0, -2}};
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(rngsnap_set_rank(ctx, bad[i][0], bad[i][1]),
                         RNGSNAP_E_INVALID);
        th_contains(rngsnap_errmsg(ctx), "rngsnap_set_rank");
    }
    assert_int_equal(rngsnap_get_rank(ctx, &r, &w), RNGSNAP_OK);
    assert_int_equal(r, 2); /* unchanged by the refused calls */
    assert_int_equal(w, 3);
    assert_int_equal(rngsnap_set_rank(NULL, 0, 1), RNGSNAP_E_INVALID);
    assert_int_equal(rngsnap_get_rank(NULL, &r, &w), RNGSNAP_E_INVALID);
    rngsnap_close(ctx);
}

static int setup(void **state)
{
    (void)state;
    test_clean_env();
    snprintf(ini, sizeof ini, "%s", th_ini("[backend.good]\n"));
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_each_launcher),
        cmocka_unit_test(test_bad_variables),
        cmocka_unit_test(test_set_rank),
    };
    return cmocka_run_group_tests(tests, setup, th_group_teardown);
}
