/*
 * matrix_resume.c - the end-to-end resume test, run once per cluster file
 * (meson suite "matrix").
 *
 * Open the cluster's rng.ini, seed, draw every dist on every stream, save;
 * draw three more rounds and record them; then, in a new process
 * (matrix_continue), open the same file with RNGSNAP_RESUME, load and
 * draw: the recordings must be equal bit for bit.  A negative control
 * loads a checkpoint from another point and must be told apart, so the
 * comparison can fail.
 *
 * usage: matrix_resume CLUSTER.ini PATH/TO/matrix_continue
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rngsnap.h>

#include "matrix_util.h"

#define ROUNDS_AFTER 3

static int run_helper(const char *helper, const char *ini,
                      const char *ckpt, const char *want)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return -1;
    }
    if (pid == 0) {
        execl(helper, helper, ini, ckpt, want, (char *)NULL);
        perror(helper);
        _exit(127);
    }
    int st = 0;
    if (waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void show_backends(rngsnap *ctx)
{
    for (size_t i = 0; i < rngsnap_backend_count(ctx); i++) {
        rngsnap_backend_info bi;
        if (rngsnap_backend_get(ctx, i, &bi) != RNGSNAP_OK)
            continue;
        printf("  %-5s %d device(s)%s: %s\n", bi.name, bi.device_count,
               bi.emulated ? " [emulated]" : "",
               bi.status ? bi.status : "");
    }
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s CLUSTER.ini MATRIX_CONTINUE\n", argv[0]);
        return 2;
    }
    const char *ini = argv[1], *helper = argv[2];
    char dir[512], at_seed[600], ckpt[600], want_path[600];
    mx_tempdir(dir, sizeof dir, "matrix");
    snprintf(at_seed, sizeof at_seed, "%s/at-seed.ckpt", dir);
    snprintf(ckpt, sizeof ckpt, "%s/resume.ckpt", dir);
    snprintf(want_path, sizeof want_path, "%s/want.bin", dir);

    const char *ne = getenv("RNGSNAP_NO_EMULATION");
    int no_emulation = ne != NULL && *ne != '\0' && strcmp(ne, "0") != 0;
    rngsnap *ctx = NULL;
    int rc = rngsnap_open(&ctx, ini, 0);
    MX_CHECK(rc == RNGSNAP_OK, "open %s: %s: %s", ini,
             rngsnap_error_name(rc), rngsnap_errmsg(NULL));
    printf("cluster %s: %zu streams\n", ini, rngsnap_stream_count(ctx));
    show_backends(ctx);
    for (size_t i = 0; i < rngsnap_backend_count(ctx); i++) {
        rngsnap_backend_info bi;
        MX_CHECK(rngsnap_backend_get(ctx, i, &bi) == RNGSNAP_OK,
                 "backend %zu", i);
        MX_CHECK(bi.available && bi.device_count > 0 && !bi.skipped,
                 "backend %s has no devices: %s", bi.name,
                 bi.reason ? bi.reason : "(no reason)");
        /* Hardware runners set RNGSNAP_NO_EMULATION: real devices only. */
        MX_CHECK(!(no_emulation && bi.emulated),
                 "backend %s is emulated although RNGSNAP_NO_EMULATION is "
                 "set", bi.name);
    }
    MX_CHECK(rngsnap_set_rank(ctx, 0, 1) == RNGSNAP_OK, "set_rank");
    rc = rngsnap_seed_all(ctx, 20261130u);
    MX_CHECK(rc == RNGSNAP_OK, "seed_all: %s", rngsnap_errmsg(ctx));
    rc = rngsnap_save(ctx, at_seed, 0);
    MX_CHECK(rc == RNGSNAP_OK, "save: %s", rngsnap_errmsg(ctx));

    mx_buf warm = {0}, want = {0};
    MX_CHECK(mx_draw_round(ctx, 0, &warm) == RNGSNAP_OK, "round 0");
    rc = rngsnap_save(ctx, ckpt, 0);
    MX_CHECK(rc == RNGSNAP_OK, "save: %s", rngsnap_errmsg(ctx));
    for (int r = 1; r <= ROUNDS_AFTER; r++)
        MX_CHECK(mx_draw_round(ctx, r, &want) == RNGSNAP_OK, "round %d", r);
    MX_CHECK(mx_write_file(want_path, want.p, want.len) == 0, "write %s",
             want_path);
    printf("recorded %zu bytes after the checkpoint\n", want.len);
    rngsnap_close(ctx);

    int st = run_helper(helper, ini, ckpt, want_path);
    MX_CHECK(st == 0, "resumed process did not continue bit for bit "
             "(helper exit %d)", st);
    printf("resume in a new process: bit-exact\n");

    /* Negative control: a checkpoint of another point must differ. */
    st = run_helper(helper, ini, at_seed, want_path);
    MX_CHECK(st == 1, "negative control: a checkpoint taken before round "
             "0 was not told apart (helper exit %d)", st);
    printf("negative control: other checkpoint told apart\n");

    mx_free(&warm);
    mx_free(&want);
    mx_rmdir(dir);
    return 0;
}
