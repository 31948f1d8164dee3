/*
 * test_coords.c - rngsnap_set_coords / rngsnap_get_coords (issue 32,
 * item 3): the canonical form a context keeps (sorted by name, values
 * without leading zeros), clearing with NULL and "", the largest set
 * that fits, and every refusal with its exact message, after which the
 * coordinates are those of before.  Refused too: from a save callback of
 * the same context (it is locked while they run) and in a fork() child
 * (whose saves and loads are refused, so its coordinates would never be
 * used); the child's check reports through its exit status (waitpid, no
 * timeouts).
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <rngsnap.h>

#include "helpers.h"

static char ini[4096];

static void set_ok(rngsnap *ctx, const char *text, const char *want)
{
    assert_int_equal(rngsnap_set_coords(ctx, text), RNGSNAP_OK);
    assert_string_equal(rngsnap_get_coords(ctx), want);
}

static void test_canonical(void **state)
{
    (void)state;
    rngsnap *ctx = th_open_ok(ini, 0);
    assert_string_equal(rngsnap_get_coords(ctx), ""); /* none at open */
    set_ok(ctx, "tp=1,dp=3,pp=0,ep=2", "dp=3,ep=2,pp=0,tp=1");
    set_ok(ctx, "dp=007,tp=0000,ep=10", "dp=7,ep=10,tp=0");
    set_ok(ctx, "x=2147483647", "x=2147483647"); /* 2^31-1: the largest */
    set_ok(ctx, "expert_1=5,b2=0", "b2=0,expert_1=5");
    rngsnap_close(ctx);
}

static void test_clear(void **state)
{
    (void)state;
    rngsnap *ctx = th_open_ok(ini, 0);
    set_ok(ctx, "dp=1", "dp=1");
    set_ok(ctx, NULL, "");
    set_ok(ctx, "dp=1", "dp=1");
    set_ok(ctx, "", "");
    rngsnap_close(ctx);
}

/* 16 pairs of 15-character names and 10-digit values: what the context
 * keeps at most (RS_COORDS_MAX), round trip. */
static void test_largest(void **state)
{
    (void)state;
    char text[1024] = "";
    for (int i = 15; i >= 0; i--) /* given unsorted: p..a */
        snprintf(text + strlen(text), sizeof text - strlen(text),
                 "%s%c%014d=2147483647", i == 15 ? "" : ",", 'a' + i, 0);
    char want[1024] = "";
    for (int i = 0; i < 16; i++)
        snprintf(want + strlen(want), sizeof want - strlen(want),
                 "%s%c%014d=2147483647", i ? "," : "", 'a' + i, 0);
    rngsnap *ctx = th_open_ok(ini, 0);
    set_ok(ctx, text, want);
    assert_int_equal(strlen(want), 16 * 27 - 1);
    rngsnap_close(ctx);
}

static void test_refusals(void **state)
{
    (void)state;
    char seventeen[256] = "";
    for (int i = 0; i < 17; i++)
        snprintf(seventeen + strlen(seventeen),
                 sizeof seventeen - strlen(seventeen), "%s%c=%d",
                 i ? "," : "", 'a' + i, i);
    char over17[320];
    snprintf(over17, sizeof over17, "rngsnap_set_coords: coordinates "
             "\"%.*s...\": more than 16 pairs",
             (int)(strchr(seventeen, 'q') - seventeen), seventeen);
    const struct {
        const char *text, *want;
    } cases[] = {
        {"1dp=3", "rngsnap_set_coords: coordinates \"1dp=3\": pair 1 "
                  "\"1dp=3\": a name starts with a letter a-z"},
        {"dp=1,t-p=2", "rngsnap_set_coords: coordinates \"dp=1,t-p=2\": "
                       "pair 2 \"t-p=2\": a name holds only a-z, 0-9 and _"},
        {"DP=3", "rngsnap_set_coords: coordinates \"DP=3\": pair 1 "
                 "\"DP=3\": a name starts with a letter a-z"},
        {"dP=3", "rngsnap_set_coords: coordinates \"dP=3\": pair 1 "
                 "\"dP=3\": a name holds only a-z, 0-9 and _"},
        {"abcdefghijklmnop=1",
         "rngsnap_set_coords: coordinates \"abcdefghijklmnop=1\": pair 1 "
         "\"abcdefghijklmnop=1\": a name has 1 to 15 characters"},
        {"=1", "rngsnap_set_coords: coordinates \"=1\": pair 1 \"=1\": a "
               "name has 1 to 15 characters"},
        {"dp3", "rngsnap_set_coords: coordinates \"dp3\": pair 1 \"dp3\" "
                "has no '=' (write name=value, e.g. dp=3)"},
        {"dp=", "rngsnap_set_coords: coordinates \"dp=\": pair 1 \"dp=\": "
                "a value is a decimal number 0..2147483647"},
        {"dp=3a", "rngsnap_set_coords: coordinates \"dp=3a\": pair 1 "
                  "\"dp=3a\": a value is a decimal number 0..2147483647"},
        {"dp=-1", "rngsnap_set_coords: coordinates \"dp=-1\": pair 1 "
                  "\"dp=-1\": a value is a decimal number 0..2147483647"},
        {"dp=2147483648",
         "rngsnap_set_coords: coordinates \"dp=2147483648\": pair 1 "
         "\"dp=2147483648\": a value is a decimal number 0..2147483647"},
        {"dp=99999999999999999999999",
         "rngsnap_set_coords: coordinates \"dp=99999999999999999999999\": "
         "pair 1 \"dp=99999999999999999999999\": a value is a decimal "
         "number 0..2147483647"},
        {"dp=1,tp=2,dp=3", "rngsnap_set_coords: coordinates "
                           "\"dp=1,tp=2,dp=3\": name dp given twice"},
        {seventeen, over17},
        {"dp=1,", "rngsnap_set_coords: coordinates \"dp=1,\": pair 2 is "
                  "empty (pairs are separated by one ',', none at either "
                  "end)"},
        {",dp=1", "rngsnap_set_coords: coordinates \",dp=1\": pair 1 is "
                  "empty (pairs are separated by one ',', none at either "
                  "end)"},
        {"dp=1,,tp=2", "rngsnap_set_coords: coordinates \"dp=1,,tp=2\": "
                       "pair 2 is empty (pairs are separated by one ',', "
                       "none at either end)"},
        {"dp = 1", "rngsnap_set_coords: coordinates \"dp = 1\": pair 1 "
                   "\"dp = 1\": a name holds only a-z, 0-9 and _"},
    };
    rngsnap *ctx = th_open_ok(ini, 0);
    set_ok(ctx, "pp=4,dp=2", "dp=2,pp=4");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        assert_int_equal(rngsnap_set_coords(ctx, cases[i].text),
                         RNGSNAP_E_INVALID);
        assert_string_equal(rngsnap_errmsg(ctx), cases[i].want);
        /* refused: what was set stays */
        assert_string_equal(rngsnap_get_coords(ctx), "dp=2,pp=4");
    }
    rngsnap_close(ctx);
    assert_int_equal(rngsnap_set_coords(NULL, "dp=1"), RNGSNAP_E_INVALID);
    assert_string_equal(rngsnap_errmsg(NULL),
                        "rngsnap_set_coords: ctx is NULL");
    assert_string_equal(rngsnap_get_coords(NULL), "");
}

/* ---- from a callback of the same context ------------------------------- */

typedef struct {
    rngsnap *ctx;
    int rc;
    char msg[1024];
} cb_probe;

static size_t probe_size(void *user)
{
    (void)user;
    return 1;
}

static int probe_save(void *user, void *buf, size_t len)
{
    cb_probe *p = user;
    memset(buf, 0, len);
    p->rc = rngsnap_set_coords(p->ctx, "dp=9");
    snprintf(p->msg, sizeof p->msg, "%s", rngsnap_errmsg(p->ctx));
    return 0;
}

static int probe_load(void *user, const void *buf, size_t len)
{
    (void)user;
    (void)buf;
    (void)len;
    return 0;
}

static void test_from_callback(void **state)
{
    (void)state;
    rngsnap *ctx = th_open_ok(ini, 0);
    set_ok(ctx, "dp=1", "dp=1");
    assert_int_equal(rngsnap_seed_all(ctx, 1), RNGSNAP_OK);
    cb_probe p = {ctx, -1, ""};
    static const rngsnap_state_ops ops = {probe_size, probe_save,
                                          probe_load};
    assert_int_equal(rngsnap_register_state(ctx, "probe", &ops, &p),
                     RNGSNAP_OK);
    void *data = NULL;
    size_t size = 0;
    assert_int_equal(rngsnap_save_mem(ctx, &data, &size, 0), RNGSNAP_OK);
    rngsnap_free(data);
    assert_int_equal(p.rc, RNGSNAP_E_INVALID);
    assert_string_equal(p.msg, "rngsnap_set_coords: called from a save or "
                        "load callback of the same context (it is locked "
                        "while they run); set the coordinates before the "
                        "save or load");
    assert_string_equal(rngsnap_get_coords(ctx), "dp=1");
    rngsnap_close(ctx);
}

/* ---- in a fork() child -------------------------------------------------- */

/* Static: still reachable when the child _exits without closing it, so
 * valgrind's leak check in the child has nothing to report. */
static rngsnap *volatile fork_ctx; /* volatile: the store is kept */

static void test_in_fork_child(void **state)
{
    (void)state;
    rngsnap *ctx = fork_ctx = th_open_ok(ini, 0);
    set_ok(ctx, "dp=1", "dp=1");
    static const char want[] =
        "rngsnap_set_coords refused: this process is a fork() child of the "
        "process that opened the context, whose saves and loads are "
        "refused here, so coordinates set here would never be recorded "
        "nor checked. Set them in the process that opened the context";
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int bad = 0;
        if (rngsnap_set_coords(ctx, "dp=2") != RNGSNAP_E_ORDER) {
            fprintf(stderr, "child: set_coords was not RNGSNAP_E_ORDER\n");
            bad++;
        }
        if (strcmp(rngsnap_errmsg(ctx), want) != 0) {
            fprintf(stderr, "child: got\n  %s\nwant\n  %s\n",
                    rngsnap_errmsg(ctx), want);
            bad++;
        }
        if (strcmp(rngsnap_get_coords(ctx), "dp=1") != 0) {
            fprintf(stderr, "child: coordinates %s, not dp=1\n",
                    rngsnap_get_coords(ctx));
            bad++;
        }
        fflush(stderr);
        _exit(bad); /* no atexit, no cmocka teardown */
    }
    int st;
    pid_t got;
    while ((got = waitpid(pid, &st, 0)) < 0 && errno == EINTR)
        ;
    assert_int_equal(got, pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    /* the parent's context is its own: still allowed here */
    set_ok(ctx, "dp=3", "dp=3");
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
        cmocka_unit_test(test_canonical),
        cmocka_unit_test(test_clear),
        cmocka_unit_test(test_largest),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_from_callback),
        cmocka_unit_test(test_in_fork_child),
    };
    return cmocka_run_group_tests(tests, setup, th_group_teardown);
}
