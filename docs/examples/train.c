/*
 * train.c - a complete training loop that checkpoints and resumes with
 * rngsnap.  It is the example of docs/user-guide.md, and the tests build
 * and run it (in the build tree and, installed, out of tree).
 *
 * The "model" is a vector of weights; each step draws, from every stream
 * of the registry, what a trainer draws (batch indices, a dropout mask,
 * noise) and updates the weights.  The step counter and the weights are
 * registered as app state, so one checkpoint holds the training progress
 * and every random stream together.
 *
 *   train -c rng.ini --checkpoint ck.rng --steps 20 --save-at 8   fresh run
 *   train -c rng.ini --checkpoint ck.rng --steps 20 --resume      resume
 *
 * Both print "final step=20 model=<hash>"; the hashes are equal when the
 * resume is bit-exact.  Build:  cc train.c $(pkg-config --cflags --libs rngsnap)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rngsnap.h>

#define NW 16 /* weights in the toy model */

typedef struct trainer {
    uint64_t step;  /* last finished step */
    double w[NW];   /* model weights      */
} trainer;

/* ---- app state: the trainer, saved in the same checkpoint ------------ */

static size_t trainer_size(void *user)
{
    (void)user;
    return sizeof(trainer);
}

static int trainer_save(void *user, void *buf, size_t len)
{
    if (len != sizeof(trainer))
        return -1;
    memcpy(buf, user, len); /* same-machine resume: raw bytes are fine */
    return 0;
}

static int trainer_load(void *user, const void *buf, size_t len)
{
    if (len != sizeof(trainer))
        return -1;
    memcpy(user, buf, len);
    return 0;
}

static const rngsnap_state_ops trainer_ops = {trainer_size, trainer_save,
                                              trainer_load};

/* ---- helpers ----------------------------------------------------------- */

static int check(rngsnap *ctx, int rc, const char *what)
{
    if (rc != RNGSNAP_OK) {
        fprintf(stderr, "train: %s: %s (%s)\n", what, rngsnap_errmsg(ctx),
                rngsnap_error_name(rc));
        exit(2);
    }
    return rc;
}

/* FNV-1a 64 over bytes: the printed model hash. */
static uint64_t fnv1a(const void *p, size_t n, uint64_t h)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* One training step: every stream of the registry contributes. */
static void train_step(rngsnap *ctx, trainer *t)
{
    size_t n = rngsnap_stream_count(ctx);
    for (size_t i = 0; i < n; i++) {
        rngsnap_stream *s = rngsnap_stream_at(ctx, i);
        if (rngsnap_stream_memory(s) == RNGSNAP_MEMORY_DEVICE) {
            /* A GPU stream: our own kernel would draw these 256 words
             * from position `at` (curand_init(at.seed, at.subsequence,
             * at.offset, &st)).  Here we only fold the position in. */
            rngsnap_philox at;
            check(ctx, rngsnap_reserve(s, 256, &at), "reserve");
            t->w[i % NW] += (double)(at.offset % 1000) * 1e-6;
            continue;
        }
        uint32_t batch[8];     /* data loader: sample indices     */
        float mask[NW];        /* dropout: keep with p = 0.9      */
        double noise[NW];      /* gradient noise                  */
        check(ctx, rngsnap_generate(s, RNGSNAP_U32, batch, 8), "batch");
        check(ctx, rngsnap_generate(s, RNGSNAP_F32, mask, NW), "mask");
        check(ctx, rngsnap_generate(s, RNGSNAP_NORMAL_F64, noise, NW),
              "noise");
        for (int k = 0; k < NW; k++) {
            double grad = (double)(batch[k % 8] % 1000) * 1e-3 - t->w[k];
            if (mask[k] >= 0.1f)
                t->w[k] += 0.05 * grad + 0.01 * noise[k];
        }
    }
}

static void usage(void)
{
    fprintf(stderr,
            "usage: train [-c rng.ini] --checkpoint FILE [--steps N] "
            "[--save-at K] [--seed S] [--resume]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *ini = getenv("RNGSNAP_CONFIG");
    const char *ckpt = NULL;
    unsigned long steps = 20, save_at = 8;
    uint64_t seed = 1234;
    int resume = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--resume") == 0)
            resume = 1;
        else if (i + 1 >= argc)
            usage();
        else if (strcmp(a, "-c") == 0)
            ini = argv[++i];
        else if (strcmp(a, "--checkpoint") == 0)
            ckpt = argv[++i];
        else if (strcmp(a, "--steps") == 0)
            steps = strtoul(argv[++i], NULL, 10);
        else if (strcmp(a, "--save-at") == 0)
            save_at = strtoul(argv[++i], NULL, 10);
        else if (strcmp(a, "--seed") == 0)
            seed = strtoull(argv[++i], NULL, 10);
        else
            usage();
    }
    if (!ini || !ckpt)
        usage();

    /* 1. Open: one registry of every (backend, device, stream).  A resumed
     *    job says so, and the library then refuses any draw before the
     *    load and any re-seed after it. */
    rngsnap *ctx;
    if (rngsnap_open(&ctx, ini, resume ? RNGSNAP_RESUME : 0) != RNGSNAP_OK) {
        fprintf(stderr, "train: %s\n", rngsnap_errmsg(NULL));
        return 2;
    }

    /* 2. Register the app's own state before the load or save. */
    trainer t = {0};
    check(ctx, rngsnap_register_state(ctx, "train.trainer", &trainer_ops, &t),
          "register_state");

    /* 3. Restore or seed, before the first batch is fetched. */
    if (resume)
        check(ctx, rngsnap_load(ctx, ckpt, 0), "resume");
    else
        check(ctx, rngsnap_seed_all(ctx, seed), "seed_all");
    printf("%s at step %" PRIu64 " with %zu streams\n",
           resume ? "resumed" : "started", t.step, rngsnap_stream_count(ctx));

    /* 4. The loop: draw, update, checkpoint. */
    for (uint64_t step = t.step + 1; step <= steps; step++) {
        train_step(ctx, &t);
        t.step = step;
        if (!resume && step == save_at) {
            check(ctx, rngsnap_save(ctx, ckpt, RNGSNAP_SAVE_REPLACE),
                  "checkpoint");
            printf("checkpoint saved at step %" PRIu64 "\n", step);
        }
    }

    uint64_t h = fnv1a(&t.step, sizeof t.step, 0xcbf29ce484222325ull);
    h = fnv1a(t.w, sizeof t.w, h);
    printf("final step=%" PRIu64 " model=%016" PRIx64 "\n", t.step, h);
    rngsnap_close(ctx);
    return 0;
}
