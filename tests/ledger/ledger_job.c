/*
 * ledger_job.c - a simulated multi-rank training job that keeps a
 * divergence ledger, for the fault sweep (test_ledger_sweep.py).
 *
 *   ledger_job INI LEDGER CKPT RANKS FIRST LAST SAVE_AT [FAULT...]
 *
 * Each rank (one context each, in turn) runs steps FIRST..LAST: every
 * stream draws, the app's sampler and private generator advance, a loss
 * computed from the draws is noted, and the step is marked.  After step
 * SAVE_AT it saves CKPT/rank-R.ckpt.  FIRST > 0 resumes: the context is
 * opened with RNGSNAP_RESUME and loads CKPT/rank-R.ckpt (saved after step
 * FIRST-1), and the ledger LEDGER/ (one file per rank) is continued.
 * FAULTs, each on rank R at step K:
 *   extra:R:K:S:N   one extra draw of N words on stream index S
 *   skip:R:K        the sampler skips one batch
 *   reseed:R:K      the private generator is re-seeded
 *   loss:R:K        the noted loss differs (the RNG does not)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rngsnap.h>

typedef struct app {
    uint64_t sampler; /* batches taken */
    uint64_t priv;    /* a private xorshift generator */
} app;

static size_t u64_size(void *u)
{
    (void)u;
    return 8;
}
static int u64_save(void *u, void *buf, size_t len)
{
    memcpy(buf, u, len);
    return 0;
}
static int u64_load(void *u, const void *buf, size_t len)
{
    if (len != 8)
        return 1;
    memcpy(u, buf, 8);
    return 0;
}
static const rngsnap_state_ops ops = {u64_size, u64_save, u64_load};

typedef struct fault {
    char kind[16];
    int rank;
    unsigned long step;
    int stream;
    unsigned long n;
} fault;

static int die(rngsnap *ctx, const char *what, int rc)
{
    fprintf(stderr, "ledger_job: %s: %s (%s)\n", what, rngsnap_errmsg(ctx),
            rngsnap_error_name(rc));
    exit(2);
}

#define CHECK(call, what)                                                 \
    do {                                                                  \
        int rc_ = (call);                                                 \
        if (rc_)                                                          \
            die(ctx, what, rc_);                                          \
    } while (0)

static int has(const fault *f, size_t nf, const char *kind, int rank,
               unsigned long step, size_t *at)
{
    for (size_t i = 0; i < nf; i++)
        if (strcmp(f[i].kind, kind) == 0 && f[i].rank == rank
            && f[i].step == step) {
            if (at)
                *at = i;
            return 1;
        }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 8) {
        fprintf(stderr, "usage: ledger_job INI LEDGER CKPT RANKS FIRST LAST "
                "SAVE_AT [FAULT...]\n");
        return 2;
    }
    const char *ini = argv[1], *ledger = argv[2], *ckpt = argv[3];
    int ranks = atoi(argv[4]);
    unsigned long first = strtoul(argv[5], NULL, 10);
    unsigned long last = strtoul(argv[6], NULL, 10);
    unsigned long save_at = strtoul(argv[7], NULL, 10);
    fault f[64];
    size_t nf = 0;
    for (int i = 8; i < argc && nf < 64; i++, nf++) {
        memset(&f[nf], 0, sizeof f[nf]);
        if (sscanf(argv[i], "%15[a-z]:%d:%lu:%d:%lu", f[nf].kind, &f[nf].rank,
                   &f[nf].step, &f[nf].stream, &f[nf].n) < 3) {
            fprintf(stderr, "ledger_job: bad fault '%s'\n", argv[i]);
            return 2;
        }
    }
    for (int r = 0; r < ranks; r++) {
        rngsnap *ctx = NULL;
        app a = {0, 0x9e3779b97f4a7c15ull + (uint64_t)r};
        CHECK(rngsnap_open(&ctx, ini, first ? RNGSNAP_RESUME : 0), "open");
        CHECK(rngsnap_set_rank(ctx, r, ranks), "set_rank");
        CHECK(rngsnap_register_state(ctx, "sampler", &ops, &a.sampler),
              "register sampler");
        CHECK(rngsnap_register_state(ctx, "private", &ops, &a.priv),
              "register private");
        char path[4096];
        snprintf(path, sizeof path, "%s/rank-%d.ckpt", ckpt, r);
        if (first)
            CHECK(rngsnap_load(ctx, path, 0), "load");
        else
            CHECK(rngsnap_seed_all(ctx, 1234), "seed_all");
        CHECK(rngsnap_ledger_open(ctx, ledger, 0), "ledger_open");
        size_t ns = rngsnap_stream_count(ctx);
        uint32_t buf[8192];
        for (unsigned long k = first; k <= last; k++) {
            double loss = 0;
            for (size_t s = 0; s < ns; s++) {
                size_t n = 5 * (s + 1);
                CHECK(rngsnap_generate(rngsnap_stream_at(ctx, s), RNGSNAP_U32,
                                       buf, n), "generate");
                loss += buf[0] / 4294967296.0;
            }
            size_t i;
            if (has(f, nf, "extra", r, k, &i)) {
                uint64_t left = f[i].n;
                while (left) { /* n words, drawn as u32 values */
                    size_t n = left < 8192 ? (size_t)left : 8192;
                    CHECK(rngsnap_generate(rngsnap_stream_at(ctx,
                                                             (size_t)f[i].stream),
                                           RNGSNAP_U32, buf, n), "extra draw");
                    left -= n;
                }
            }
            a.sampler += has(f, nf, "skip", r, k, NULL) ? 2 : 1;
            a.priv ^= a.priv << 13;
            a.priv ^= a.priv >> 7;
            a.priv ^= a.priv << 17;
            if (has(f, nf, "reseed", r, k, NULL))
                a.priv = 42;
            if (has(f, nf, "loss", r, k, NULL))
                loss += 1e-9;
            CHECK(rngsnap_ledger_note(ctx, "loss", &loss, sizeof loss),
                  "note");
            CHECK(rngsnap_ledger_step(ctx, k), "ledger_step");
            if (k == save_at)
                CHECK(rngsnap_save(ctx, path, RNGSNAP_SAVE_REPLACE), "save");
        }
        CHECK(rngsnap_ledger_close(ctx), "ledger_close");
        rngsnap_close(ctx);
    }
    return 0;
}
