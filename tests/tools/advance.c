/*
 * advance.c - test helper for `rngsnap diff`/`inspect`: seed every stream,
 * save checkpoint A, draw N words from one stream, save checkpoint B.
 *
 *   tools_advance INI A B BACKEND DEVICE STREAM N SEED
 *
 * Prints each entry's Philox position as seen through the library when A
 * and B were saved ("A|B backend device stream seed subsequence offset"),
 * so the test can compare what inspect reads from the files.
 * An app state "test.counter" (8 bytes) is saved in both files.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rngsnap.h>

static uint64_t counter = 0x0123456789abcdefull;

static size_t c_size(void *u) { (void)u; return 8; }
static int c_save(void *u, void *buf, size_t len)
{
    (void)u;
    if (len != 8) return -1;
    memcpy(buf, &counter, 8);
    return 0;
}
static int c_load(void *u, const void *buf, size_t len)
{
    (void)u;
    if (len != 8) return -1;
    memcpy(&counter, buf, 8);
    return 0;
}
static const rngsnap_state_ops ops = {c_size, c_save, c_load};

static void die(rngsnap *ctx, const char *what, int rc)
{
    fprintf(stderr, "tools_advance: %s: %s (%s)\n", what,
            rngsnap_errmsg(ctx), rngsnap_error_name(rc));
    exit(2);
}

static void positions(rngsnap *ctx, const char *tag)
{
    for (size_t i = 0; i < rngsnap_stream_count(ctx); i++) {
        rngsnap_stream *s = rngsnap_stream_at(ctx, i);
        rngsnap_philox p;
        if (rngsnap_stream_position(s, &p) != RNGSNAP_OK)
            continue;
        printf("%s %s %d %s %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", tag,
               rngsnap_stream_backend(s), rngsnap_stream_device(s),
               rngsnap_stream_name(s), p.seed, p.subsequence, p.offset);
    }
}

int main(int argc, char **argv)
{
    if (argc != 9) {
        fprintf(stderr, "usage: tools_advance INI A B BACKEND DEVICE STREAM "
                "N SEED\n");
        return 2;
    }
    rngsnap *ctx;
    rngsnap_stream *s;
    int rc = rngsnap_open(&ctx, argv[1], 0);
    if (rc)
        die(NULL, argv[1], rc);
    if ((rc = rngsnap_register_state(ctx, "test.counter", &ops, NULL)))
        die(ctx, "register_state", rc);
    if ((rc = rngsnap_seed_all(ctx, strtoull(argv[8], NULL, 0))))
        die(ctx, "seed_all", rc);
    if ((rc = rngsnap_stream_find(ctx, argv[4], atoi(argv[5]), argv[6], &s)))
        die(ctx, "stream_find", rc);
    if ((rc = rngsnap_save(ctx, argv[2], RNGSNAP_SAVE_REPLACE)))
        die(ctx, argv[2], rc);
    positions(ctx, "A");
    /* Draw N words, in chunks, as U32 (one word each). */
    uint64_t n = strtoull(argv[7], NULL, 0);
    static uint32_t buf[4096];
    while (n) {
        size_t k = n < 4096 ? (size_t)n : 4096;
        if ((rc = rngsnap_generate(s, RNGSNAP_U32, buf, k)))
            die(ctx, "generate", rc);
        n -= k;
    }
    counter++;
    if ((rc = rngsnap_save(ctx, argv[3], RNGSNAP_SAVE_REPLACE)))
        die(ctx, argv[3], rc);
    positions(ctx, "B");
    rngsnap_close(ctx);
    return 0;
}
