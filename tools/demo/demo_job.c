/*
 * demo_job.c - `rngsnap __demo-job`: the simulated training job that
 * `rngsnap demo` runs in child processes (never called by people).
 *
 * Each step draws several distributions from every stream of the registry,
 * the way a trainer's data loader, dropout and augmentation would.  Values
 * drawn after the checkpoint step are hashed per stream (XXH64), so the
 * parent can compare a resumed job with an uninterrupted one.  Streams
 * whose memory is DEVICE (cuda on a real GPU) cannot be drawn into host
 * buffers here, so the job reserves words for "its own kernels" with
 * rngsnap_reserve and hashes the reserved positions instead.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xxhash.h>

#include "cli.h"
#include "demo.h"

/* What one step draws from a host-memory stream. */
static const struct {
    rngsnap_dist dist;
    size_t n;
} host_draws[] = {
    {RNGSNAP_U32, 64},         /* batch indices           */
    {RNGSNAP_F32, 256},        /* dropout mask            */
    {RNGSNAP_F64, 32},         /* augmentation parameters */
    {RNGSNAP_NORMAL_F32, 33},  /* noise, odd count        */
    {RNGSNAP_U64, 5},          /* shuffling keys          */
    {RNGSNAP_NORMAL_F64, 7},   /* weight perturbation     */
};
/* What one step reserves from a device-memory stream. */
static const uint64_t device_reserves[] = {1024, 333, 4096};

typedef struct job_stream {
    rngsnap_stream *s;
    XXH64_state_t *hash;
    uint64_t words;     /* drawn after save_at (from positions)   */
    int words_known;    /* 0 when the backend has no Philox state */
} job_stream;

typedef struct job {
    demo_mode mode;
    demo_params p;
    int out_fd, ack_fd;
    FILE *out;
    rngsnap *ctx;
    job_stream *js;
    size_t n;
    uint64_t progress; /* last finished step: the registered app state */
    const char *ledger; /* --ledger: this run's divergence ledger, or NULL */
} job;

static int fail(job *j, const char *what, int rc)
{
    fprintf(stderr, "rngsnap __demo-job: %s: %s (%s)\n", what,
            rngsnap_errmsg(j->ctx), rngsnap_error_name(rc));
    return CLI_USAGE;
}

/* ---- app state: the job's progress --------------------------------- */

static size_t progress_size(void *user)
{
    (void)user;
    return 8;
}

static int progress_save(void *user, void *buf, size_t len)
{
    uint64_t v = ((job *)user)->progress;
    if (len != 8)
        return -1;
    for (int i = 0; i < 8; i++)
        ((unsigned char *)buf)[i] = (unsigned char)(v >> (8 * i));
    return 0;
}

static int progress_load(void *user, const void *buf, size_t len)
{
    uint64_t v = 0;
    if (len != 8)
        return -1;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)((const unsigned char *)buf)[i] << (8 * i);
    ((job *)user)->progress = v;
    return 0;
}

static const rngsnap_state_ops progress_ops = {progress_size, progress_save,
                                               progress_load};

/* ---- one step -------------------------------------------------------- */

static int draw_step(job *j, int hashed)
{
    static union {
        uint64_t u64[256];
        double f64[256];
    } buf;
    for (size_t k = 0; k < j->n; k++) {
        job_stream *x = &j->js[k];
        rngsnap_philox before, after;
        int have_pos = rngsnap_stream_position(x->s, &before) == RNGSNAP_OK;
        int rc;
        if (rngsnap_stream_memory(x->s) == RNGSNAP_MEMORY_DEVICE) {
            for (size_t r = 0; r < sizeof device_reserves / 8; r++) {
                rngsnap_philox at;
                rc = rngsnap_reserve(x->s, device_reserves[r], &at);
                if (rc != RNGSNAP_OK)
                    return fail(j, "reserve", rc);
                if (hashed)
                    XXH64_update(x->hash, &at, sizeof at);
            }
        } else {
            for (size_t d = 0; d < sizeof host_draws / sizeof host_draws[0];
                 d++) {
                rc = rngsnap_generate(x->s, host_draws[d].dist, &buf,
                                      host_draws[d].n);
                if (rc != RNGSNAP_OK)
                    return fail(j, "generate", rc);
                if (hashed)
                    XXH64_update(x->hash, &buf,
                                 host_draws[d].n
                                     * rngsnap_dist_size(host_draws[d].dist));
            }
        }
        if (hashed && have_pos
            && rngsnap_stream_position(x->s, &after) == RNGSNAP_OK)
            x->words += after.offset - before.offset;
        else if (hashed)
            x->words_known = 0;
    }
    return CLI_OK;
}

/* demo --ledger: a debug draw someone left in (DEMO_STRAY_WORDS words of
 * the last stream), not hashed: only the ledger can say where it was. */
static int stray_draw(job *j)
{
    if (j->n == 0)
        return CLI_OK;
    rngsnap_stream *s = j->js[j->n - 1].s;
    uint32_t buf[DEMO_STRAY_WORDS];
    rngsnap_philox at;
    int rc = rngsnap_stream_memory(s) == RNGSNAP_MEMORY_DEVICE
                 ? rngsnap_reserve(s, DEMO_STRAY_WORDS, &at)
                 : rngsnap_generate(s, RNGSNAP_U32, buf, DEMO_STRAY_WORDS);
    return rc ? fail(j, "stray draw", rc) : CLI_OK;
}

static void report(job *j)
{
    for (size_t k = 0; k < j->n; k++) {
        job_stream *x = &j->js[k];
        fprintf(j->out, "stream\t%s\t%d\t%s\t%s\t%" PRId64 "\t%016" PRIx64
                "\n", rngsnap_stream_backend(x->s),
                rngsnap_stream_device(x->s), rngsnap_stream_name(x->s),
                rngsnap_stream_memory(x->s) == RNGSNAP_MEMORY_DEVICE
                    ? "device" : "host",
                x->words_known ? (int64_t)x->words : (int64_t)-1,
                (uint64_t)XXH64_digest(x->hash));
    }
    fprintf(j->out, "end\n");
    fflush(j->out);
}

static int run(job *j)
{
    unsigned flags = j->mode == DEMO_RESUME ? RNGSNAP_RESUME : 0;
    int rc = rngsnap_open(&j->ctx, j->p.ini, flags);
    if (rc != RNGSNAP_OK)
        return fail(j, j->p.ini, rc);
    rc = rngsnap_register_state(j->ctx, DEMO_APP_STATE, &progress_ops, j);
    if (rc != RNGSNAP_OK)
        return fail(j, "register_state", rc);

    size_t n = rngsnap_stream_count(j->ctx);
    j->js = calloc(n ? n : 1, sizeof *j->js);
    if (!j->js)
        return CLI_USAGE;
    j->n = n;
    for (size_t k = 0; k < j->n; k++) {
        j->js[k].s = rngsnap_stream_at(j->ctx, k);
        j->js[k].hash = XXH64_createState();
        j->js[k].words_known = 1;
        if (!j->js[k].hash)
            return CLI_USAGE;
        XXH64_reset(j->js[k].hash, 0);
    }

    unsigned first = 1;
    if (j->mode == DEMO_RESUME) {
        /* Load before the first draw: the resume gate refuses otherwise. */
        rc = rngsnap_load(j->ctx, j->p.checkpoint, 0);
        if (rc != RNGSNAP_OK)
            return fail(j, j->p.checkpoint, rc);
        if (j->progress != j->p.save_at) {
            fprintf(stderr, "rngsnap __demo-job: checkpoint says step %"
                    PRIu64 ", expected %u\n", j->progress, j->p.save_at);
            return CLI_USAGE;
        }
        fprintf(j->out, "resumed %" PRIu64 "\n", j->progress);
        fflush(j->out);
        first = (unsigned)j->progress + 1;
    } else {
        rc = rngsnap_seed_all(j->ctx, j->p.seed);
        if (rc != RNGSNAP_OK)
            return fail(j, "seed_all", rc);
    }

    if (j->ledger && (rc = rngsnap_ledger_open(j->ctx, j->ledger, 0)))
        return fail(j, j->ledger, rc);
    for (unsigned step = first; step <= j->p.steps; step++) {
        rc = draw_step(j, step > j->p.save_at);
        if (rc != CLI_OK)
            return rc;
        if (step == j->p.stray_at && (rc = stray_draw(j)) != CLI_OK)
            return rc;
        if (j->ledger && (rc = rngsnap_ledger_step(j->ctx, step)))
            return fail(j, "ledger step", rc);
        j->progress = step;
        fprintf(j->out, "step %u\n", step);
        if (j->mode == DEMO_CRASH && step == j->p.save_at) {
            rc = rngsnap_save(j->ctx, j->p.checkpoint, RNGSNAP_SAVE_REPLACE);
            if (rc != RNGSNAP_OK)
                return fail(j, j->p.checkpoint, rc);
            fprintf(j->out, "saved %u\n", step);
        }
        fflush(j->out);
        if (j->mode == DEMO_CRASH) {
            /* Wait for the parent: it kills us instead of answering. */
            char c;
            ssize_t r;
            do
                r = read(j->ack_fd, &c, 1);
            while (r < 0 && errno == EINTR);
            if (r != 1)
                return CLI_USAGE;
        }
    }
    if (j->mode != DEMO_CRASH)
        report(j);
    return CLI_OK;
}

static int parse_uint(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s || *end || s[0] == '-')
        return -1;
    *out = v;
    return 0;
}

int cmd_demo_job(const cli_globals *g, int argc, char **argv)
{
    (void)g;
    job j = {.mode = DEMO_FULL, .out_fd = -1, .ack_fd = -1};
    uint64_t v;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *val = argv[i + 1];
        if (strcmp(k, "--ini") == 0)
            j.p.ini = val;
        else if (strcmp(k, "--checkpoint") == 0)
            j.p.checkpoint = val;
        else if (strcmp(k, "--ledger") == 0)
            j.ledger = val;
        else if (strcmp(k, "--mode") == 0)
            j.mode = strcmp(val, "crash") == 0    ? DEMO_CRASH
                     : strcmp(val, "resume") == 0 ? DEMO_RESUME
                                                  : DEMO_FULL;
        else if (parse_uint(val, &v) != 0)
            return CLI_USAGE;
        else if (strcmp(k, "--steps") == 0)
            j.p.steps = (unsigned)v;
        else if (strcmp(k, "--save-at") == 0)
            j.p.save_at = (unsigned)v;
        else if (strcmp(k, "--seed") == 0)
            j.p.seed = v;
        else if (strcmp(k, "--stray-at") == 0)
            j.p.stray_at = (unsigned)v;
        else if (strcmp(k, "--out-fd") == 0)
            j.out_fd = (int)v;
        else if (strcmp(k, "--ack-fd") == 0)
            j.ack_fd = (int)v;
        else
            return CLI_USAGE;
    }
    if (!j.p.ini || !j.p.checkpoint || j.out_fd < 0
        || (j.mode == DEMO_CRASH && j.ack_fd < 0)) {
        cli_err("__demo-job", "internal subcommand of `rngsnap demo`");
        return CLI_USAGE;
    }
    j.out = fdopen(j.out_fd, "w");
    if (!j.out)
        return CLI_USAGE;
    int rc = run(&j);
    for (size_t k = 0; k < j.n; k++)
        XXH64_freeState(j.js[k].hash);
    free(j.js);
    rngsnap_close(j.ctx);
    fclose(j.out);
    return rc;
}
