/*
 * cmd_demo.c - `rngsnap demo`: the README's first experience.
 *
 * Runs a small simulated training job (demo_job.c) over every stream of
 * the registry in a child process, which saves a checkpoint at one step;
 * a few steps later the parent kills it with SIGKILL.  A fresh child
 * resumes from the checkpoint, a third runs the job uninterrupted, and
 * the per-stream digests of everything drawn after the checkpoint step
 * are compared.  Children are this same program (fork + exec of
 * /proc/self/exe with the hidden `__demo-job` subcommand), so each is a
 * genuinely new process with nothing inherited but its arguments.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "demo.h"

#define MAX_LINE 1024
#define CHILD_TIMEOUT_MS 120000 /* no progress for this long: give up */

static void help(void)
{
    printf(
        "usage: rngsnap [-c FILE] demo [-c FILE] [--steps N] [--save-at K]\n"
        "                              [--kill-at M] [--seed S] [--keep DIR]\n"
        "                              [--ledger]\n"
        "\n"
        "Watch a job resume bit for bit.  A simulated training job draws\n"
        "several distributions from every stream of every available backend\n"
        "each step.  It runs in a child process that saves a checkpoint after\n"
        "step K and is killed with SIGKILL after step M; a fresh process\n"
        "resumes from the checkpoint and finishes the job; a third process\n"
        "runs it uninterrupted.  Everything each stream produced after step K\n"
        "is hashed (XXH64) and the two runs are compared stream by stream.\n"
        "Streams in device memory (cuda on a real GPU) are driven with\n"
        "rngsnap_reserve, as an app's own kernels would, and the reserved\n"
        "positions are hashed.\n"
        "\n"
        "  -c, --config FILE  rng.ini (default: see rngsnap --help)\n"
        "  --steps N          steps of the job (default 12)\n"
        "  --save-at K        checkpoint after step K (default 4)\n"
        "  --kill-at M        SIGKILL after step M, K < M <= N (default 7)\n"
        "  --seed S           seed for rngsnap_seed_all (default 2026)\n"
        "  --keep DIR         write the checkpoint into DIR and keep it\n"
        "  --ledger           every run keeps a divergence ledger, and the\n"
        "                     resumed run makes one stray draw of 4 words on\n"
        "                     the last stream two steps after the resume:\n"
        "                     `rngsnap ledger diff` of the uninterrupted and\n"
        "                     the resumed run's ledgers names it (exit 0 when\n"
        "                     it does)\n"
        "\n"
        "The last line reads \"resume is bit-exact on N of N streams\".\n"
        "Exit status: 0 every stream matches; 1 a stream does not; 2 usage,\n"
        "config or I/O error, or a child that failed.\n");
}

/* One registry entry as a child reported it. */
typedef struct result {
    char backend[128], name[128], memory[16];
    int device;
    int64_t words;
    char digest[32];
} result;

typedef struct child {
    pid_t pid;
    int in_fd;   /* progress pipe, read end  */
    int ack_fd;  /* ack pipe, write end (crash mode only) */
    char buf[MAX_LINE * 4];
    size_t len;
} child;

/* ---- children --------------------------------------------------------- */

/* This program's path, resolved once: exec'ing it (rather than the
 * /proc/self/exe link itself) also works under valgrind, which answers
 * readlink for its client but not exec of the link. */
static const char *self_path(void)
{
    static char path[4096];
    if (!path[0]) {
        ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
        if (n <= 0 || (size_t)n >= sizeof path - 1)
            snprintf(path, sizeof path, "/proc/self/exe");
        else
            path[n] = '\0';
    }
    return path;
}

static int spawn(const demo_params *p, const char *mode, child *c)
{
    int prog[2], ack[2] = {-1, -1};
    char steps[32], save_at[32], seed[32], out_fd[16], ack_fd[16];
    int crash = strcmp(mode, "crash") == 0;
    if (pipe2(prog, O_CLOEXEC) != 0 || (crash && pipe2(ack, O_CLOEXEC) != 0)) {
        cli_err("demo", "pipe: %s", strerror(errno));
        return -1;
    }
    snprintf(steps, sizeof steps, "%u", p->steps);
    snprintf(save_at, sizeof save_at, "%u", p->save_at);
    snprintf(seed, sizeof seed, "%" PRIu64, p->seed);
    snprintf(out_fd, sizeof out_fd, "%d", prog[1]);
    snprintf(ack_fd, sizeof ack_fd, "%d", crash ? ack[0] : -1);
    const char *exe = self_path();
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        cli_err("demo", "fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        /* Keep only the child's ends open across exec. */
        fcntl(prog[1], F_SETFD, 0);
        if (crash)
            fcntl(ack[0], F_SETFD, 0);
        char stray[32];
        snprintf(stray, sizeof stray, "%u", p->stray_at);
        int full = strcmp(mode, "full") == 0;
        const char *ledger = full ? p->ledger_full : p->ledger_resumed;
        char *argv[24] = {"rngsnap", "__demo-job", "--ini", (char *)p->ini,
                          "--checkpoint", (char *)p->checkpoint, "--mode",
                          (char *)mode, "--steps", steps, "--save-at",
                          save_at, "--seed", seed, "--out-fd", out_fd};
        int n = 16;
        if (crash) {
            argv[n++] = "--ack-fd";
            argv[n++] = ack_fd;
        }
        if (ledger) {
            argv[n++] = "--ledger";
            argv[n++] = (char *)ledger;
        }
        if (ledger && strcmp(mode, "resume") == 0 && p->stray_at) {
            argv[n++] = "--stray-at";
            argv[n++] = stray;
        }
        argv[n] = NULL;
        execv(exe, argv);
        fprintf(stderr, "rngsnap demo: exec %s: %s\n", exe, strerror(errno));
        _exit(127);
    }
    close(prog[1]);
    if (crash)
        close(ack[0]);
    c->pid = pid;
    c->in_fd = prog[0];
    c->ack_fd = crash ? ack[1] : -1;
    c->len = 0;
    return 0;
}

/* Next line from the child into line; 1 got one, 0 end of pipe, -1 error
 * (timeout). */
static int next_line(child *c, char *line, size_t size)
{
    for (;;) {
        char *nl = memchr(c->buf, '\n', c->len);
        if (nl) {
            size_t n = (size_t)(nl - c->buf);
            if (n >= size)
                n = size - 1;
            memcpy(line, c->buf, n);
            line[n] = '\0';
            c->len -= (size_t)(nl - c->buf) + 1;
            memmove(c->buf, nl + 1, c->len);
            return 1;
        }
        if (c->len == sizeof c->buf)
            return -1; /* a line longer than anything the child writes */
        struct pollfd pfd = {.fd = c->in_fd, .events = POLLIN};
        int pr = poll(&pfd, 1, CHILD_TIMEOUT_MS);
        if (pr == 0) {
            cli_err("demo", "child %d made no progress for %d s",
                    (int)c->pid, CHILD_TIMEOUT_MS / 1000);
            return -1;
        }
        if (pr < 0 && errno == EINTR)
            continue;
        ssize_t r = read(c->in_fd, c->buf + c->len, sizeof c->buf - c->len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return r == 0 ? 0 : -1;
        c->len += (size_t)r;
    }
}

/* Close the pipes and reap the child; returns its wait status. */
static int finish(child *c, int kill_it)
{
    int status = 0;
    if (kill_it)
        kill(c->pid, SIGKILL);
    close(c->in_fd);
    if (c->ack_fd >= 0)
        close(c->ack_fd);
    while (waitpid(c->pid, &status, 0) < 0 && errno == EINTR)
        ;
    return status;
}

static int status_ok(const char *what, int status)
{
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 1;
    if (WIFEXITED(status))
        cli_err("demo", "%s exited with status %d", what,
                WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        cli_err("demo", "%s died of signal %d", what, WTERMSIG(status));
    return 0;
}

/* Run a child that reports results (resume or full); 0 on success. */
static int run_reporting(const demo_params *p, const char *mode,
                         result *res, size_t nres, size_t *got)
{
    child c;
    char line[MAX_LINE];
    int r, ended = 0;
    *got = 0;
    if (spawn(p, mode, &c) != 0)
        return -1;
    printf("%s job (pid %d): ", mode[0] == 'r' ? "resumed" : "uninterrupted",
           (int)c.pid);
    while ((r = next_line(&c, line, sizeof line)) == 1) {
        unsigned k;
        if (sscanf(line, "step %u", &k) == 1) {
            printf("%u ", k);
        } else if (sscanf(line, "resumed %u", &k) == 1) {
            printf("loaded the step-%u checkpoint; steps ", k);
        } else if (strncmp(line, "stream\t", 7) == 0 && *got < nres) {
            result *x = &res[(*got)++];
            if (sscanf(line, "stream\t%127[^\t]\t%d\t%127[^\t]\t%15[^\t]\t%"
                       SCNd64 "\t%31s", x->backend, &x->device, x->name,
                       x->memory, &x->words, x->digest) != 6)
                r = -1;
        } else if (strcmp(line, "end") == 0) {
            ended = 1;
        }
        fflush(stdout);
        if (r < 0)
            break;
    }
    printf("%s\n", ended ? "done" : "FAILED");
    int status = finish(&c, r < 0);
    if (!status_ok(mode[0] == 'r' ? "resumed job" : "uninterrupted job",
                   status) || !ended || r < 0)
        return -1;
    return 0;
}

/* The job that gets killed: returns 0 when it saved at save_at and died of
 * our SIGKILL after kill_at. */
static int run_crash(const demo_params *p)
{
    child c;
    char line[MAX_LINE];
    int r, saved = 0, killed = 0;
    if (spawn(p, "crash", &c) != 0)
        return -1;
    printf("training job (pid %d), seed %" PRIu64 ": steps ", (int)c.pid,
           p->seed);
    while ((r = next_line(&c, line, sizeof line)) == 1) {
        unsigned k;
        if (sscanf(line, "saved %u", &k) == 1) {
            printf("[checkpoint] ");
            saved = k == p->save_at;
        } else if (sscanf(line, "step %u", &k) == 1) {
            printf("%u ", k);
            if (k >= p->kill_at) {
                printf("-> SIGKILL\n");
                kill(c.pid, SIGKILL);
                killed = 1;
                break;
            }
            if (write(c.ack_fd, "c", 1) != 1) /* next step, please */
                break;
        }
        fflush(stdout);
    }
    int status = finish(&c, !killed);
    if (!killed) {
        printf("FAILED\n");
        status_ok("training job", status);
        return -1;
    }
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL) {
        cli_err("demo", "training job was not killed by SIGKILL");
        return -1;
    }
    if (!saved) {
        cli_err("demo", "training job did not report its checkpoint");
        return -1;
    }
    return 0;
}

/* ---- the command ------------------------------------------------------ */

static int parse_u(const char *opt, const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s || *end || s[0] == '-') {
        cli_err("demo", "%s needs a number, not '%s'", opt, s);
        return -1;
    }
    *out = v;
    return 0;
}

/* Open the config once in this process: config errors are reported here
 * with the library's message, and skipped backends are listed. */
static int preflight(const char *ini, const char *origin, size_t *nstreams)
{
    rngsnap *ctx;
    int rc = rngsnap_open(&ctx, ini, 0);
    if (rc != RNGSNAP_OK) {
        cli_open_failed("demo", ini, origin);
        return -1;
    }
    printf("config: %s (%s)\n", ini, origin);
    for (size_t i = 0; i < rngsnap_backend_count(ctx); i++) {
        rngsnap_backend_info b;
        if (rngsnap_backend_get(ctx, i, &b) != RNGSNAP_OK)
            continue;
        if (b.skipped)
            printf("backend %s: skipped (%s)\n", b.name,
                   b.reason ? b.reason : "no device");
        else
            printf("backend %s: %d device(s)%s%s\n", b.name, b.device_count,
                   b.status ? ", " : "", b.status ? b.status : "");
    }
    *nstreams = rngsnap_stream_count(ctx);
    printf("%zu stream(s) in the registry\n", *nstreams);
    rngsnap_close(ctx);
    return 0;
}

int cmd_demo(const cli_globals *g0, int argc, char **argv)
{
    cli_globals g = *g0;
    demo_params p = {.steps = 12, .save_at = 4, .kill_at = 7, .seed = 2026};
    const char *keep = NULL;
    int ledger = 0;
    uint64_t v;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            help();
            return CLI_OK;
        }
        int r = cli_config_arg("demo", argc, argv, &i, &g.config);
        if (r < 0)
            return CLI_USAGE;
        if (r > 0)
            continue;
        if (strcmp(a, "--ledger") == 0) {
            ledger = 1;
            continue;
        }
        int known = strcmp(a, "--keep") == 0 || strcmp(a, "--steps") == 0
                    || strcmp(a, "--save-at") == 0
                    || strcmp(a, "--kill-at") == 0 || strcmp(a, "--seed") == 0;
        if (!known) {
            cli_err("demo", "unexpected argument '%s' (see --help)", a);
            return CLI_USAGE;
        }
        if (i + 1 >= argc) {
            cli_err("demo", "%s needs a value (see --help)", a);
            return CLI_USAGE;
        }
        const char *val = argv[++i];
        if (strcmp(a, "--keep") == 0) {
            keep = val;
        } else if (parse_u(a, val, &v) != 0) {
            return CLI_USAGE;  /* parse_u said why */
        } else if (strcmp(a, "--seed") == 0) {
            p.seed = v;
        } else if (v > UINT_MAX) {
            /* Steps are counted in an unsigned: never wrap silently. */
            cli_err("demo", "%s %s is too large (at most %u)", a, val,
                    UINT_MAX);
            return CLI_USAGE;
        } else if (strcmp(a, "--steps") == 0) {
            p.steps = (unsigned)v;
        } else if (strcmp(a, "--save-at") == 0) {
            p.save_at = (unsigned)v;
        } else {
            p.kill_at = (unsigned)v;
        }
    }
    if (!(p.save_at >= 1 && p.save_at < p.kill_at && p.kill_at <= p.steps
          && p.steps <= 100000)) {
        cli_err("demo", "need 1 <= --save-at < --kill-at <= --steps "
                "(got %u, %u, %u)", p.save_at, p.kill_at, p.steps);
        return CLI_USAGE;
    }

    const char *origin;
    p.ini = cli_config_path(&g, &origin);
    size_t nstreams;
    if (preflight(p.ini, origin, &nstreams) != 0)
        return CLI_USAGE;

    /* The checkpoint lives in a private folder, removed at the end. */
    char dir[4096], ckpt[4200];
    if (keep) {
        struct stat st;
        if (mkdir(keep, 0700) != 0
            && (errno != EEXIST || stat(keep, &st) != 0
                || !S_ISDIR(st.st_mode))) {
            cli_err("demo", "--keep %s: %s", keep,
                    errno == EEXIST ? "exists and is not a folder"
                                    : strerror(errno));
            return CLI_USAGE;
        }
        snprintf(dir, sizeof dir, "%s", keep);
    } else {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/rngsnap-demo-XXXXXX",
                 tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir)) {
            cli_err("demo", "mkdtemp %s: %s", dir, strerror(errno));
            return CLI_USAGE;
        }
    }
    snprintf(ckpt, sizeof ckpt, "%s/demo.rngsnap", dir);
    p.checkpoint = ckpt;
    char led_res[4200], led_full[4200];
    snprintf(led_res, sizeof led_res, "%s/resumed.ledger", dir);
    snprintf(led_full, sizeof led_full, "%s/full.ledger", dir);
    /* stale ledgers from an earlier run must not count either */
    unlink(led_res);
    unlink(led_full);
    if (ledger) {
        p.ledger_resumed = led_res;
        p.ledger_full = led_full;
        p.stray_at = p.save_at + 2 <= p.steps ? p.save_at + 2 : p.save_at + 1;
    }
    if (keep)
        unlink(ckpt); /* a stale file from an earlier run must not count */
    printf("checkpoint after step %u, SIGKILL after step %u, %u steps\n\n",
           p.save_at, p.kill_at, p.steps);

    /* A child that dies early must not kill us with SIGPIPE. */
    signal(SIGPIPE, SIG_IGN);
    result *resumed = calloc(nstreams + 1, sizeof *resumed);
    result *full = calloc(nstreams + 1, sizeof *full);
    size_t nr = 0, nf = 0;
    int rc = CLI_USAGE;
    if (!resumed || !full)
        goto out;
    if (run_crash(&p) != 0)
        goto out;
    rngsnap_file *f;
    if (cli_file_open("demo", ckpt, &f, 0) != CLI_OK)
        goto out;
    printf("checkpoint survived the kill: %s (%zu sections, verified%s)\n",
           ckpt, rngsnap_file_section_count(f),
           keep ? "" : "; deleted at exit, --keep DIR keeps it");
    rngsnap_file_close(f);
    if (run_reporting(&p, "resume", resumed, nstreams, &nr) != 0
        || run_reporting(&p, "full", full, nstreams, &nf) != 0)
        goto out;
    if (nr != nstreams || nf != nstreams) {
        cli_err("demo", "children reported %zu and %zu streams, expected %zu",
                nr, nf, nstreams);
        goto out;
    }

    printf("\n%-10s %6s  %-16s %-6s %12s  %-16s %s\n", "BACKEND", "DEVICE",
           "STREAM", "MEMORY", "WORDS DRAWN", "DIGEST", "MATCH");
    size_t match = 0;
    for (size_t i = 0; i < nstreams; i++) {
        const result *a = &resumed[i], *b = &full[i];
        int same_entry = strcmp(a->backend, b->backend) == 0
                         && a->device == b->device
                         && strcmp(a->name, b->name) == 0;
        int ok = same_entry && a->words == b->words
                 && strcmp(a->digest, b->digest) == 0;
        char words[32];
        if (a->words < 0)
            snprintf(words, sizeof words, "n/a");
        else
            snprintf(words, sizeof words, "%" PRId64, a->words);
        printf("%-10s %6d  %-16s %-6s %12s  %-16s %s\n", a->backend,
               a->device, a->name, a->memory, words, a->digest,
               ok ? "yes" : "NO");
        if (!ok && same_entry)
            printf("%-10s %6s  %-16s %-6s %12" PRId64 "  %-16s (uninterrupted)\n",
                   "", "", "", "", b->words, b->digest);
        match += ok;
    }
    printf("\nresume is bit-exact on %zu of %zu streams\n", match, nstreams);
    rc = match == nstreams && nstreams > 0 ? CLI_OK : CLI_FAIL;
    if (ledger) {
        printf("\nA stray draw of %d words was made on the last stream at step "
               "%u of the resumed run.\nWhere did the runs part?  rngsnap "
               "ledger diff %s %s:\n\n", DEMO_STRAY_WORDS, p.stray_at,
               led_full, led_res);
        fflush(stdout);
        int lrc = ledger_diff(led_full, led_res, 0);
        /* The demo worked when the ledger found the one stray draw. */
        rc = lrc == CLI_FAIL && match + 1 == nstreams ? CLI_OK : CLI_FAIL;
    }
out:
    free(resumed);
    free(full);
    if (!keep) {
        unlink(ckpt);
        unlink(led_res);
        unlink(led_full);
        rmdir(dir);
    }
    return rc;
}
