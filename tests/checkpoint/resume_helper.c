/*
 * resume_helper.c - child process of test_resume: a plain host program
 * of the shared library.
 *
 *   save     <ini> <seed> <k> <path>     seed, advance by step k, save
 *   resume   <ini> <path> <n> <out>      RESUME open, load, draw n
 *   straight <ini> <seed> <k> <n> <out>  seed, advance by step k, draw n
 *
 * "advance by step k": per stream k U32, 333 U64, 5 F64, 7 normal F64
 * (where the backend offers normals), one more U32.  "draw n": per stream
 * n U32 then 101 normal F64 (where offered), written to out in registry
 * order.  Exit 0 on success, 1 with a message otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rngsnap.h>

static int die(rngsnap *ctx, const char *what, int rc)
{
    fprintf(stderr, "resume_helper: %s: %s: %s\n", what,
            rngsnap_error_name(rc), rngsnap_errmsg(ctx));
    exit(1);
}

/* Draw n values; a backend without normals says E_INVALID: skipped. */
static int draw(rngsnap *ctx, rngsnap_stream *s, rngsnap_dist d, size_t n,
                FILE *out)
{
    void *buf = malloc(n * 8 + 8);
    int rc = rngsnap_generate(s, d, buf, n);
    if (rc == RNGSNAP_E_INVALID
        && (d == RNGSNAP_NORMAL_F64 || d == RNGSNAP_NORMAL_F32)) {
        free(buf);
        return 0;
    }
    if (rc)
        die(ctx, "generate", rc);
    if (out && fwrite(buf, rngsnap_dist_size(d), n, out) != n) {
        fprintf(stderr, "resume_helper: write failed\n");
        exit(1);
    }
    free(buf);
    return 0;
}

static void advance(rngsnap *ctx, size_t k)
{
    for (size_t i = 0; i < rngsnap_stream_count(ctx); i++) {
        rngsnap_stream *s = rngsnap_stream_at(ctx, i);
        draw(ctx, s, RNGSNAP_U32, k, NULL);
        draw(ctx, s, RNGSNAP_U64, 333, NULL);
        draw(ctx, s, RNGSNAP_F64, 5, NULL);
        draw(ctx, s, RNGSNAP_NORMAL_F64, 7, NULL);
        draw(ctx, s, RNGSNAP_U32, 1, NULL);
    }
}

static void draw_n(rngsnap *ctx, size_t n, const char *path)
{
    FILE *out = fopen(path, "wb");
    if (!out) {
        perror(path);
        exit(1);
    }
    for (size_t i = 0; i < rngsnap_stream_count(ctx); i++) {
        rngsnap_stream *s = rngsnap_stream_at(ctx, i);
        draw(ctx, s, RNGSNAP_U32, n, out);
        draw(ctx, s, RNGSNAP_NORMAL_F64, 101, out);
    }
    if (fclose(out) != 0) {
        perror(path);
        exit(1);
    }
}

int main(int argc, char **argv)
{
    rngsnap *ctx = NULL;
    int rc;
    if (argc == 6 && strcmp(argv[1], "save") == 0) {
        if ((rc = rngsnap_open(&ctx, argv[2], 0)))
            die(NULL, "open", rc);
        if ((rc = rngsnap_seed_all(ctx, strtoull(argv[3], NULL, 0))))
            die(ctx, "seed", rc);
        advance(ctx, strtoull(argv[4], NULL, 0));
        if ((rc = rngsnap_save(ctx, argv[5], RNGSNAP_SAVE_REPLACE)))
            die(ctx, "save", rc);
    } else if (argc == 6 && strcmp(argv[1], "resume") == 0) {
        if ((rc = rngsnap_open(&ctx, argv[2], RNGSNAP_RESUME)))
            die(NULL, "open", rc);
        if ((rc = rngsnap_load(ctx, argv[3], 0)))
            die(ctx, "load", rc);
        draw_n(ctx, strtoull(argv[4], NULL, 0), argv[5]);
    } else if (argc == 7 && strcmp(argv[1], "straight") == 0) {
        if ((rc = rngsnap_open(&ctx, argv[2], 0)))
            die(NULL, "open", rc);
        if ((rc = rngsnap_seed_all(ctx, strtoull(argv[3], NULL, 0))))
            die(ctx, "seed", rc);
        advance(ctx, strtoull(argv[4], NULL, 0));
        draw_n(ctx, strtoull(argv[5], NULL, 0), argv[6]);
    } else {
        fprintf(stderr, "usage: see the top of resume_helper.c\n");
        return 2;
    }
    rngsnap_close(ctx);
    return 0;
}
