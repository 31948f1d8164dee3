/*
 * matrix_continue.c - the "new process" half of matrix_resume: open the
 * cluster file with RNGSNAP_RESUME, check the resume gate refuses a draw
 * before the load, load the checkpoint, draw the rounds matrix_resume
 * recorded and compare.
 *
 * usage: matrix_continue CLUSTER.ini CHECKPOINT WANT.bin
 * exit: 0 equal, 1 different, 2 error.
 */
#include <stdio.h>

#include <rngsnap.h>

#include "matrix_util.h"

#define ROUNDS_AFTER 3

#define MC_CHECK(cond, ...)                                            \
    do {                                                               \
        if (!(cond)) {                                                 \
            fprintf(stderr, "matrix_continue: ");                      \
            fprintf(stderr, __VA_ARGS__);                              \
            fprintf(stderr, "\n");                                     \
            return 2;                                                  \
        }                                                              \
    } while (0)

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s CLUSTER.ini CHECKPOINT WANT.bin\n",
                argv[0]);
        return 2;
    }
    mx_buf want = {0}, got = {0};
    MC_CHECK(mx_read_file(argv[3], &want) == 0, "read %s", argv[3]);

    rngsnap *ctx = NULL;
    int rc = rngsnap_open(&ctx, argv[1], RNGSNAP_RESUME);
    MC_CHECK(rc == RNGSNAP_OK, "open: %s", rngsnap_errmsg(NULL));
    MC_CHECK(rngsnap_set_rank(ctx, 0, 1) == RNGSNAP_OK, "set_rank");
    MC_CHECK(rngsnap_stream_count(ctx) > 0, "no streams");

    /* The resume gate: no draw before the load. */
    unsigned buf[4];
    rc = rngsnap_generate(rngsnap_stream_at(ctx, 0), RNGSNAP_U32, buf, 1);
    MC_CHECK(rc == RNGSNAP_E_ORDER, "draw before load gave %s, not "
             "RNGSNAP_E_ORDER", rngsnap_error_name(rc));

    rc = rngsnap_load(ctx, argv[2], 0);
    MC_CHECK(rc == RNGSNAP_OK, "load %s: %s: %s", argv[2],
             rngsnap_error_name(rc), rngsnap_errmsg(ctx));
    for (int r = 1; r <= ROUNDS_AFTER; r++)
        MC_CHECK(mx_draw_round(ctx, r, &got) == RNGSNAP_OK, "round %d", r);
    rngsnap_close(ctx);

    int diff = mx_compare(&want, &got);
    mx_free(&want);
    mx_free(&got);
    return diff ? 1 : 0;
}
