/*
 * test_unregister.c - rngsnap_unregister_state: a removed app state is
 * left out of later saves, no longer required by later loads and its
 * callbacks are never called again; the others keep their order; bad
 * arguments and calls from a callback of the same context (locked while
 * it runs) are RNGSNAP_E_INVALID with a message, while another thread's
 * call waits for the save instead.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ckpt_test.h"

static const char *dir;

#define ONE_STREAM "[backend.multidev]\nplugin = rngsnap_multidev\n" \
                   "streams = a\ndevices = 1\n\n"

static const char *ckpt(const char *name) { return ct_path(dir, name); }

#define assert_errmsg(ctx, text)                                         \
    do {                                                                 \
        if (strcmp(rngsnap_errmsg(ctx), text) != 0)                      \
            fail_msg("message \"%s\", expected \"%s\"",                  \
                     rngsnap_errmsg(ctx), text);                         \
    } while (0)

/* An app state of one byte that counts its callbacks; `hook`, when set,
 * runs inside save() (to call rngsnap from a callback). */
typedef struct app {
    unsigned char value;
    int calls;
    void (*hook)(struct app *);
    rngsnap *ctx;
    int hook_rc;
    char hook_msg[512];
} app;

static size_t app_size(void *u)
{
    ((app *)u)->calls++;
    return 1;
}

static int app_save(void *u, void *buf, size_t len)
{
    app *a = u;
    a->calls++;
    if (a->hook)
        a->hook(a);
    assert_int_equal(len, 1);
    memcpy(buf, &a->value, 1);
    return 0;
}

static int app_load(void *u, const void *buf, size_t len)
{
    app *a = u;
    a->calls++;
    if (len != 1)
        return -1;
    memcpy(&a->value, buf, 1);
    return 0;
}

static const rngsnap_state_ops ops = {app_size, app_save, app_load};

static rngsnap *open_ctx(void)
{
    return ct_open(ct_write_ini(dir, "rng.ini", ONE_STREAM), 0);
}

/* The app-state names of a checkpoint file, in file order, joined by
 * commas. */
static void app_names(const char *path, char *out, size_t len)
{
    rngsnap_file *f;
    char err[256];
    assert_int_equal(rngsnap_file_open(path, &f, err, sizeof err), 0);
    out[0] = 0;
    for (size_t i = 0; i < rngsnap_file_section_count(f); i++) {
        const rngsnap_file_section *s = rngsnap_file_section_at(f, i);
        if (s->kind != RNGSNAP_SECTION_APP)
            continue;
        size_t used = strlen(out);
        snprintf(out + used, len - used, "%s%s", used ? "," : "", s->name);
    }
    rngsnap_file_close(f);
}

static void removed_from_saves_and_loads(void **state)
{
    (void)state;
    app a = {.value = 1}, b = {.value = 2}, c = {.value = 3};
    app d = {.value = 4};
    rngsnap *ctx = open_ctx();
    assert_int_equal(rngsnap_register_state(ctx, "a", &ops, &a), 0);
    assert_int_equal(rngsnap_register_state(ctx, "b", &ops, &b), 0);
    assert_int_equal(rngsnap_register_state(ctx, "c", &ops, &c), 0);
    assert_int_equal(rngsnap_register_state(ctx, "d", &ops, &d), 0);
    assert_int_equal(rngsnap_seed_all(ctx, 5), 0);
    assert_int_equal(rngsnap_save(ctx, ckpt("abc.ckpt"), 0), 0);

    assert_int_equal(rngsnap_unregister_state(ctx, "b"), 0);
    b.calls = 0;
    assert_int_equal(rngsnap_save(ctx, ckpt("ac.ckpt"), 0), 0);
    char names[256];
    app_names(ckpt("ac.ckpt"), names, sizeof names);
    assert_string_equal(names, "a,c,d"); /* the others keep their order */

    /* A checkpoint that still holds b no longer fits: refused, nothing
     * changed. */
    a.value = 11;
    c.value = 33;
    ct_snap before = ct_take(ctx);
    assert_int_equal(rngsnap_load(ctx, ckpt("abc.ckpt"), 0),
                     RNGSNAP_E_MISMATCH);
    if (!strstr(rngsnap_errmsg(ctx), "checkpoint has app state b, which "
                                     "this context did not register "
                                     "(rngsnap_register_state before the "
                                     "load); nothing restored"))
        fail_msg("message: %s", rngsnap_errmsg(ctx));
    ct_snap after = ct_take(ctx);
    assert_true(ct_snap_equal(before, after));
    ct_snap_free(&after);
    assert_int_equal(a.value, 11);

    assert_int_equal(rngsnap_load(ctx, ckpt("ac.ckpt"), 0), 0);
    assert_int_equal(a.value, 1);
    assert_int_equal(c.value, 3);
    assert_int_equal(d.value, 4);
    assert_int_equal(b.calls, 0); /* never called once removed */

    /* The name is free again (registered after a load: on purpose, so
     * the loaded run is left first; test_gate.c has the refusal). */
    assert_int_equal(rngsnap_branch(ctx), 0);
    assert_int_equal(rngsnap_register_state(ctx, "b", &ops, &b), 0);
    assert_int_equal(rngsnap_save(ctx, ckpt("acb.ckpt"), 0), 0);
    app_names(ckpt("acb.ckpt"), names, sizeof names);
    assert_string_equal(names, "a,c,d,b");
    ct_snap_free(&before);
    rngsnap_close(ctx);
}

static void bad_arguments(void **state)
{
    (void)state;
    app a = {.value = 1};
    rngsnap *ctx = open_ctx();
    assert_int_equal(rngsnap_unregister_state(ctx, "nope"),
                     RNGSNAP_E_INVALID);
    assert_errmsg(ctx, "rngsnap_unregister_state: no app state nope is "
                       "registered");
    assert_int_equal(rngsnap_register_state(ctx, "a", &ops, &a), 0);
    assert_int_equal(rngsnap_unregister_state(ctx, "a"), 0);
    assert_int_equal(rngsnap_unregister_state(ctx, "a"), RNGSNAP_E_INVALID);
    assert_errmsg(ctx, "rngsnap_unregister_state: no app state a is "
                       "registered");
    assert_int_equal(rngsnap_unregister_state(ctx, NULL), RNGSNAP_E_INVALID);
    assert_errmsg(ctx, "rngsnap_unregister_state: name is NULL");
    assert_int_equal(rngsnap_unregister_state(NULL, "a"), RNGSNAP_E_INVALID);
    assert_string_equal(rngsnap_errmsg(NULL),
                        "rngsnap_unregister_state: ctx is NULL");
    rngsnap_close(ctx);
}

/* ---- from a callback ------------------------------------------------------ */

static void unregister_self(app *a)
{
    a->hook_rc = rngsnap_unregister_state(a->ctx, "a");
    snprintf(a->hook_msg, sizeof a->hook_msg, "%s", rngsnap_errmsg(a->ctx));
}

static void register_other(app *a)
{
    static app other;
    a->hook_rc = rngsnap_register_state(a->ctx, "late", &ops, &other);
    snprintf(a->hook_msg, sizeof a->hook_msg, "%s", rngsnap_errmsg(a->ctx));
}

static void refused_inside_callbacks(void **state)
{
    (void)state;
    rngsnap *ctx = open_ctx();
    app a = {.value = 1, .ctx = ctx, .hook = unregister_self};
    assert_int_equal(rngsnap_register_state(ctx, "a", &ops, &a), 0);
    assert_int_equal(rngsnap_seed_all(ctx, 5), 0);

    /* from save(): refused (not a deadlock), and the save goes on */
    a.hook_rc = -100;
    assert_int_equal(rngsnap_save(ctx, ckpt("cb.ckpt"), 0), 0);
    assert_int_equal(a.hook_rc, RNGSNAP_E_INVALID);
    assert_string_equal(a.hook_msg, "rngsnap_unregister_state a: called "
                                    "from a save or load callback of the "
                                    "same context (it is locked while they "
                                    "run)");
    /* from save() during a load (its backup) */
    a.hook_rc = -100;
    assert_int_equal(rngsnap_load(ctx, ckpt("cb.ckpt"), 0), 0);
    assert_int_equal(a.hook_rc, RNGSNAP_E_INVALID);
    char names[256];
    app_names(ckpt("cb.ckpt"), names, sizeof names);
    assert_string_equal(names, "a"); /* still registered */

    a.hook = register_other;
    a.hook_rc = -100;
    assert_int_equal(rngsnap_save(ctx, ckpt("cb2.ckpt"), 0), 0);
    assert_int_equal(a.hook_rc, RNGSNAP_E_INVALID);
    assert_string_equal(a.hook_msg, "rngsnap_register_state late: called "
                                    "from a save or load callback of the "
                                    "same context (it is locked while they "
                                    "run)");
    app_names(ckpt("cb2.ckpt"), names, sizeof names);
    assert_string_equal(names, "a");
    rngsnap_close(ctx);
}

/* Another thread's unregister during a save's callback is not "from a
 * callback": it waits for the save, then succeeds. */
typedef struct handoff {
    pthread_mutex_t m;
    pthread_cond_t cv;
    int in_callback, other_started;
    rngsnap *ctx;
    int rc;
} handoff;

static handoff hand = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER,
                       0, 0, NULL, -100};

static void wait_for_other(app *a)
{
    (void)a;
    pthread_mutex_lock(&hand.m);
    hand.in_callback = 1;
    pthread_cond_broadcast(&hand.cv);
    while (!hand.other_started)
        pthread_cond_wait(&hand.cv, &hand.m);
    pthread_mutex_unlock(&hand.m);
}

static void *other_thread(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&hand.m);
    while (!hand.in_callback)
        pthread_cond_wait(&hand.cv, &hand.m);
    hand.other_started = 1;
    pthread_cond_broadcast(&hand.cv);
    pthread_mutex_unlock(&hand.m);
    hand.rc = rngsnap_unregister_state(hand.ctx, "b");
    return NULL;
}

static void other_thread_waits(void **state)
{
    (void)state;
    rngsnap *ctx = open_ctx();
    app a = {.value = 1, .hook = wait_for_other}, b = {.value = 2};
    assert_int_equal(rngsnap_register_state(ctx, "a", &ops, &a), 0);
    assert_int_equal(rngsnap_register_state(ctx, "b", &ops, &b), 0);
    assert_int_equal(rngsnap_seed_all(ctx, 5), 0);
    hand.ctx = ctx;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, other_thread, NULL), 0);
    assert_int_equal(rngsnap_save(ctx, ckpt("thr.ckpt"), 0), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_int_equal(hand.rc, 0);
    char names[256];
    app_names(ckpt("thr.ckpt"), names, sizeof names);
    assert_string_equal(names, "a,b"); /* removed after the save, whole */
    a.hook = NULL;
    assert_int_equal(rngsnap_save(ctx, ckpt("thr2.ckpt"), 0), 0);
    app_names(ckpt("thr2.ckpt"), names, sizeof names);
    assert_string_equal(names, "a");
    rngsnap_close(ctx);
}

static int group_setup(void **state)
{
    (void)state;
    dir = ct_setup_dir();
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    ct_remove_dir(dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(removed_from_saves_and_loads),
        cmocka_unit_test(bad_arguments),
        cmocka_unit_test(refused_inside_callbacks),
        cmocka_unit_test(other_thread_waits),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
