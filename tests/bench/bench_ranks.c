/*
 * bench_ranks.c - rngsnap-bench-ranks: what a multi-rank checkpoint
 * costs next to a single-process save of the same registry and the bare
 * collectives, for 1, 2, 4 and 8 ranks, on tmpfs and on disk.
 *
 *   rngsnap-bench-ranks [--quick] [--ranks 1,2,4,8] [--disk DIR] [--ini PATH]
 * starts itself under `mpirun --oversubscribe -np N` for each N (exit 77
 * without mpirun or librngsnap_mpi's MPI); each job's rank 0 prints its
 * rows.  A figure is the time of one operation on the slowest rank
 * (MPI_Allreduce MAX of each rank's time), median and best of the runs.
 * Figures only, no thresholds (docs/performance.md, "Multi-rank").
 */
#include <rngsnap/mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_RUNS 64

/* The registry measured: the build tree's mixed.ini (five backends,
 * emulated devices) unless --ini or RNGSNAP_MPI_INI names another. */
#ifndef BENCH_RANKS_INI
#define BENCH_RANKS_INI NULL
#endif
static const char *ini = BENCH_RANKS_INI;

static int rank, world, runs = 15;

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct figure {
    double median, best;
} figure;

enum { OP_BARRIER, OP_ALLGATHER, OP_SINGLE, OP_SAVE, OP_LOAD, OP_COUNT };

static rngsnap *ctx;
static char single_path[4096], multi_dir[4096];

/* One operation; returns nonzero on failure. */
static int run_op(int op)
{
    static unsigned char send[8], recv[8 * 1024];
    switch (op) {
    case OP_BARRIER:
        return MPI_Barrier(MPI_COMM_WORLD) != MPI_SUCCESS;
    case OP_ALLGATHER:
        return MPI_Allgather(send, 8, MPI_BYTE, recv, 8, MPI_BYTE,
                             MPI_COMM_WORLD) != MPI_SUCCESS;
    case OP_SINGLE:
        return rngsnap_save(ctx, single_path, RNGSNAP_SAVE_REPLACE);
    case OP_SAVE:
        return rngsnap_mpi_save(ctx, MPI_COMM_WORLD, multi_dir, RNGSNAP_SAVE_REPLACE);
    default:
        return rngsnap_mpi_load(ctx, MPI_COMM_WORLD, multi_dir, 0);
    }
}

/* Runs of op, each aligned by a barrier, timed on the slowest rank (the
 * first MPI collectives of a pair of ranks set up their shared memory:
 * one untimed run first). */
static figure measure(int op)
{
    double t[MAX_RUNS];
    for (int i = -1; i < runs; i++) { /* run -1 warms up, untimed */
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now_us();
        if (run_op(op)) {
            fprintf(stderr, "rank %d: operation %d failed: %s\n", rank, op,
                    rngsnap_errmsg(ctx));
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        double mine = now_us() - t0;
        if (i < 0)
            continue;
        MPI_Allreduce(&mine, &t[i], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    }
    qsort(t, (size_t)runs, sizeof t[0], cmp_double);
    return (figure){t[runs / 2], t[0]};
}

static void app_bytes(unsigned char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)(i * 13 + (size_t)rank);
}

static unsigned char app_buf[256];
static size_t app_size(void *u) { (void)u; return sizeof app_buf; }
static int app_save(void *u, void *b, size_t n) { (void)u; memcpy(b, app_buf, n); return 0; }
static int app_load(void *u, const void *b, size_t n)
{
    (void)u;
    if (n != sizeof app_buf)
        return 1;
    memcpy(app_buf, b, n);
    return 0;
}

static int child(const char *disk)
{
    static const rngsnap_state_ops ops = {app_size, app_save, app_load};
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    if (rngsnap_open(&ctx, ini, 0) || rngsnap_seed_all(ctx, 42)
        || rngsnap_register_state(ctx, "progress", &ops, NULL)) {
        fprintf(stderr, "rank %d: %s\n", rank, ctx ? rngsnap_errmsg(ctx)
                                                   : rngsnap_errmsg(NULL));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    app_bytes(app_buf, sizeof app_buf);
    const struct { const char *name, *base; } fss[] = {{"tmpfs", "/dev/shm"},
                                                       {"disk", disk}};
    for (size_t f = 0; f < 2; f++) {
        char base[3000];
        snprintf(base, sizeof base, "%s/rngsnap-bench-ranks-%d", fss[f].base,
                 (int)getppid());
        if (rank == 0)
            mkdir(base, 0755);
        MPI_Barrier(MPI_COMM_WORLD);
        snprintf(single_path, sizeof single_path, "%s/single-%d.rngsnap", base, rank);
        snprintf(multi_dir, sizeof multi_dir, "%s/multi", base);
        if (run_op(OP_SAVE)) { /* first save creates the folder */
            fprintf(stderr, "rank %d: %s\n", rank, rngsnap_errmsg(ctx));
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        figure fig[OP_COUNT];
        for (int op = 0; op < OP_COUNT; op++)
            fig[op] = measure(op);
        if (rank == 0) {
            double floor = fig[OP_SINGLE].median + fig[OP_BARRIER].median
                           + fig[OP_ALLGATHER].median;
            printf("%5d  %-5s", world, fss[f].name);
            for (int op = 0; op < OP_COUNT; op++)
                printf(" %8.1f/%-8.1f", fig[op].median, fig[op].best);
            printf("  %5.2fx\n", fig[OP_SAVE].median / floor);
            fflush(stdout);
            char cmd[8300];
            snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
            if (system(cmd) != 0)
                fprintf(stderr, "could not remove %s\n", base);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    rngsnap_close(ctx);
    return 0;
}

int main(int argc, char **argv)
{
    const char *ranks = "1,2,4,8", *disk = "/tmp";
    int is_child = 0;
    if (getenv("RNGSNAP_MPI_INI"))
        ini = getenv("RNGSNAP_MPI_INI");
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0)
            runs = 5;
        else if (strcmp(argv[i], "--child") == 0)
            is_child = 1;
        else if (strcmp(argv[i], "--ranks") == 0 && i + 1 < argc)
            ranks = argv[++i];
        else if (strcmp(argv[i], "--disk") == 0 && i + 1 < argc)
            disk = argv[++i];
        else if (strcmp(argv[i], "--ini") == 0 && i + 1 < argc)
            ini = argv[++i];
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--quick] [--ranks 1,2,4,8] [--disk DIR] "
                    "[--runs N] [--ini PATH]\n", argv[0]);
            return 2;
        }
    }
    if (ini && !*ini)
        ini = NULL; /* a child told "": the library's default */
    if (runs < 1 || runs > MAX_RUNS)
        runs = 15;
    if (is_child) {
        MPI_Init(&argc, &argv);
        int rc = child(disk);
        MPI_Finalize();
        return rc;
    }
    if (system("command -v mpirun >/dev/null 2>&1") != 0) {
        printf("skip: no mpirun on PATH\n");
        return 77;
    }
    if (geteuid() == 0) { /* Open MPI refuses root without these */
        setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
        setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    }
    printf("multi-rank checkpoint, registry of %s, %d runs, microseconds "
           "median/best on the slowest rank; tmpfs = /dev/shm, disk = %s\n",
           ini ? ini : "the default rng.ini", runs, disk);
    printf("ranks  fs     barrier           allgather(8 B)    single save       "
           "multi save        multi load         save/(single+2 coll)\n");
    fflush(stdout);
    int status = 0;
    for (const char *p = ranks; *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : "") {
        int n = atoi(p);
        char cmd[8192];
        snprintf(cmd, sizeof cmd, "mpirun --oversubscribe --bind-to none -np %d "
                 "'%s' --child --runs %d --disk '%s' --ini '%s'", n, argv[0], runs,
                 disk, ini ? ini : "");
        if (system(cmd) != 0) {
            fprintf(stderr, "%d ranks: the job failed\n", n);
            status = 1;
        }
    }
    return status;
}
