/*
 * test_resume.c - bit-exact resume across processes.  A child process
 * (resume_helper) seeds, advances to step k and saves; another child,
 * a fresh process opened with RNGSNAP_RESUME, loads and draws the next
 * 100,000 words of every stream (and some normals); a third runs
 * uninterrupted.  Both outputs must be byte-identical.  This process
 * also loads the checkpoint itself and compares.  Backends: multidev,
 * multidev2 and the cpu backend when it is built.
 */
#include <setjmp.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "ckpt_test.h"

#ifndef RESUME_HELPER
#error "RESUME_HELPER must be defined by the build"
#endif

#define N_WORDS 100000
extern char **environ;

static void run_helper(const char *const *args)
{
    const char *argv[8] = {RESUME_HELPER};
    size_t i = 0;
    for (; args[i]; i++)
        argv[i + 1] = args[i];
    argv[i + 1] = NULL;
    pid_t pid;
    int rc = posix_spawn(&pid, RESUME_HELPER, NULL, NULL, (char **)argv,
                         environ);
    if (rc != 0)
        fail_msg("posix_spawn %s: %s", RESUME_HELPER, strerror(rc));
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("helper %s failed (status 0x%x)", args[0], status);
}

static void resume_at(const char *dir, const char *ini, const char *k)
{
    const char *ck = ct_path(dir, "step.ckpt");
    char n[32];
    snprintf(n, sizeof n, "%d", N_WORDS);
    char resumed[1024], straight[1024];
    snprintf(resumed, sizeof resumed, "%s", ct_path(dir, "resumed.bin"));
    snprintf(straight, sizeof straight, "%s", ct_path(dir, "straight.bin"));

    run_helper((const char *[]){"save", ini, "0x5eed", k, ck, NULL});
    run_helper((const char *[]){"resume", ini, ck, n, resumed, NULL});
    run_helper((const char *[]){"straight", ini, "0x5eed", k, n, straight,
                                NULL});
    size_t la, lb;
    uint8_t *a = ct_read(resumed, &la), *b = ct_read(straight, &lb);
    assert_non_null(a);
    assert_non_null(b);

    rngsnap *ctx = ct_open(ini, RNGSNAP_RESUME);
    size_t streams = rngsnap_stream_count(ctx);
    size_t normals = ct_have_cpu() ? 2 * 101 * 8 : 0; /* cpu: 2 streams */
    assert_int_equal(la, streams * N_WORDS * 4 + normals);
    assert_int_equal(lb, la);
    if (memcmp(a, b, la) != 0) {
        size_t i = 0;
        while (a[i] == b[i])
            i++;
        fail_msg("resumed run differs from the uninterrupted one at byte "
                 "%zu of %zu (k = %s)", i, la, k);
    }

    /* this process, fresh to this checkpoint, resumes identically */
    if (rngsnap_load(ctx, ck, 0) != 0)
        fail_msg("load: %s", rngsnap_errmsg(ctx));
    uint32_t *w = ct_draw_all(ctx, N_WORDS);
    size_t off = 0;
    for (size_t i = 0; i < streams; i++) {
        rngsnap_stream *s = rngsnap_stream_at(ctx, i);
        if (memcmp(w + i * N_WORDS, a + off, N_WORDS * 4) != 0)
            fail_msg("stream %s:%d/%s differs after an in-process load",
                     rngsnap_stream_backend(s), rngsnap_stream_device(s),
                     rngsnap_stream_name(s));
        off += N_WORDS * 4;
        if (strcmp(rngsnap_stream_backend(s), "cpu") == 0)
            off += 101 * 8;
    }
    free(w);
    rngsnap_close(ctx);
    free(a);
    free(b);
}

static void bit_exact_resume_across_processes(void **state)
{
    (void)state;
    const char *dir = ct_setup_dir();
    char body[1024];
    snprintf(body, sizeof body, "%s%s",
             ct_have_cpu() ? "[backend.cpu]\nplugin = rngsnap_cpu\n"
                             "streams = default, dropout\n\n"
                           : "",
             "[backend.multidev]\nplugin = rngsnap_multidev\n"
             "streams = a, b\ndevices = 2\n\n"
             "[backend.multidev2]\nplugin = rngsnap_multidev2\n"
             "streams = x\ndevices = 1\n\n");
    char ini[1024];
    snprintf(ini, sizeof ini, "%s", ct_write_ini(dir, "rng.ini", body));
    resume_at(dir, ini, "12345");
    resume_at(dir, ini, "2");
    if (!ct_have_cpu())
        print_message("note: cpu plugin not built; multidev backends only\n");
    ct_remove_dir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bit_exact_resume_across_processes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
