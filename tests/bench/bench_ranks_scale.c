/*
 * bench_ranks_scale.c - rngsnap-bench-ranks-scale: one mpirun job that
 * saves and loads a multi-rank checkpoint in one layout and says what it
 * cost: the time on the slowest rank, the files in the folder, and the
 * bytes each rank sent and received through the communicator.
 *
 *   mpirun -np N rngsnap-bench-ranks-scale --dir DIR --ini PATH
 *          [--per-rank-files] [--runs R] [--coords] [--mark]
 *
 * Run it through tests/bench/bench_ranks_scale.py, which starts the
 * matrix (8, 64, 256 ranks x node files / per-rank files), counts the
 * file system calls under strace in separate runs and prints the table
 * (docs/performance.md, "Multi-rank at scale").  Rank 0 prints one line,
 * "RESULT key=value ...", for that script; figures only, no thresholds.
 *
 * The times are those of rngsnap_mpi_save/rngsnap_mpi_load, what a job
 * calls.  The bytes are counted here, not in librngsnap_mpi: one more
 * save and load go through an rngsnap_comm of this program's own, made
 * once, of the same MPI calls as the adapter's (MPI_Bcast, MPI_Send,
 * MPI_Recv from MPI_ANY_SOURCE, the node from MPI_Comm_split_type), with
 * a counter in each member, so the library carries no test hook.  Its
 * time is printed too ("counted"): the adapter makes its communicators
 * anew on every call, this one does not.
 *
 * With --mark every rank calls
 * access("/rngsnap-bench-mark/<op>-begin|end/<rank>") around each
 * counted operation: a name no file has, which the script finds in
 * strace's output to count only that operation's calls.
 */
#include <rngsnap/mpi.h>

#include <dirent.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_RUNS 64
#define TAG 0x52534e /* "RSN": this program's messages only */

static int rank, world;

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static void die(const char *what, rngsnap *ctx)
{
    fprintf(stderr, "rank %d: %s: %s\n", rank, what,
            ctx ? rngsnap_errmsg(ctx) : "failed");
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* ---- the counting communicator --------------------------------------------- */

/* What one rank moved during one operation.  A broadcast counts len
 * bytes out at its root and len bytes in at every other rank (what the
 * protocol asks for; MPI's tree forwards more on the inner ranks). */
enum { C_SEND, C_SEND_MSGS, C_RECV, C_RECV_MSGS, C_BCAST_OUT, C_BCAST_IN,
       C_BCAST_CALLS, C_IN, C_OUT, /* the rank's totals, set at the report */
       C_COUNT };
static const char *const counter_names[C_COUNT] = {
    "send_bytes", "send_msgs", "recv_bytes", "recv_msgs", "bcast_out_bytes",
    "bcast_in_bytes", "bcast_calls", "in_bytes", "out_bytes"};

typedef struct counting {
    MPI_Comm comm;
    uint64_t n[C_COUNT];
} counting;

static int c_broadcast(void *user, void *buf, size_t len, int root)
{
    counting *u = user;
    if (len > INT_MAX)
        return 1; /* a tiny registry's protocol never gets near this */
    u->n[C_BCAST_CALLS]++;
    u->n[rank == root ? C_BCAST_OUT : C_BCAST_IN] += len;
    return MPI_Bcast(buf, (int)len, MPI_BYTE, root, u->comm) != MPI_SUCCESS;
}

static int c_send(void *user, const void *buf, size_t len, int dest)
{
    counting *u = user;
    if (len > INT_MAX)
        return 1;
    u->n[C_SEND] += len;
    u->n[C_SEND_MSGS]++;
    return MPI_Send(buf, (int)len, MPI_BYTE, dest, TAG, u->comm) != MPI_SUCCESS;
}

static int c_recv(void *user, void *buf, size_t len, int src, int *from)
{
    counting *u = user;
    MPI_Status st;
    int got = -1;
    if (len > INT_MAX
        || MPI_Recv(buf, (int)len, MPI_BYTE, src < 0 ? MPI_ANY_SOURCE : src,
                    TAG, u->comm, &st) != MPI_SUCCESS
        || MPI_Get_count(&st, MPI_BYTE, &got) != MPI_SUCCESS
        || got != (int)len)
        return 1;
    *from = st.MPI_SOURCE;
    u->n[C_RECV] += len;
    u->n[C_RECV_MSGS]++;
    return 0;
}

static counting cu;
static rngsnap_comm comm;
static int *node_ranks;

/* The node's ranks as MPI sees them (MPI_COMM_TYPE_SHARED: on this one
 * machine, every rank); RNGSNAP_RANKS_PER_NODE overrides them in the core. */
static void comm_fill(void)
{
    MPI_Comm node;
    int node_size;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank,
                            MPI_INFO_NULL, &node) != MPI_SUCCESS
        || MPI_Comm_size(node, &node_size) != MPI_SUCCESS)
        die("MPI_Comm_split_type", NULL);
    node_ranks = malloc(sizeof *node_ranks * (size_t)node_size);
    if (!node_ranks
        || MPI_Allgather(&rank, 1, MPI_INT, node_ranks, 1, MPI_INT, node)
               != MPI_SUCCESS)
        die("the node's ranks", NULL);
    MPI_Comm_free(&node); /* key = rank: node_ranks is ascending */
    cu.comm = MPI_COMM_WORLD;
    memset(&comm, 0, sizeof comm);
    comm.rank = rank;
    comm.size = world;
    comm.user = &cu;
    comm.broadcast = c_broadcast;
    comm.send = c_send;
    comm.recv = c_recv;
    comm.node_size = node_size;
    comm.node_ranks = node_ranks;
}

/* ---- what rank 0 reports --------------------------------------------------- */

/* Rank 0 prints, for one operation, its own counters, the largest of
 * every other rank's, and the sum over all ranks. */
static void report_counts(const char *op)
{
    uint64_t *all = NULL;
    if (rank == 0 && !(all = malloc(sizeof *all * C_COUNT * (size_t)world)))
        die("out of memory", NULL);
    cu.n[C_IN] = cu.n[C_RECV] + cu.n[C_BCAST_IN];
    cu.n[C_OUT] = cu.n[C_SEND] + cu.n[C_BCAST_OUT];
    MPI_Gather(cu.n, C_COUNT, MPI_UINT64_T, all, C_COUNT, MPI_UINT64_T, 0,
               MPI_COMM_WORLD);
    if (rank != 0)
        return;
    for (int k = 0; k < C_COUNT; k++) {
        uint64_t other = 0, sum = 0;
        for (int r = 0; r < world; r++) {
            uint64_t v = all[(size_t)r * C_COUNT + (size_t)k];
            sum += v;
            if (r > 0 && v > other)
                other = v;
        }
        printf(" %s_%s_r0=%" PRIu64 " %s_%s_maxother=%" PRIu64
               " %s_%s_sum=%" PRIu64, op, counter_names[k], all[k], op,
               counter_names[k], other, op, counter_names[k], sum);
    }
    free(all);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Entries and bytes of the folder (rank 0). */
static void report_folder(const char *dir, const char *when)
{
    long files = 0;
    long long bytes = 0;
    DIR *d = opendir(dir);
    if (!d)
        die("opendir of the folder", NULL);
    for (struct dirent *e; (e = readdir(d));) {
        char p[4400];
        struct stat st;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        files++;
        if (stat(p, &st) == 0)
            bytes += st.st_size;
    }
    closedir(d);
    printf(" files_%s=%ld folder_bytes_%s=%lld", when, files, when, bytes);
}

/* This process's peak resident memory in KiB (VmHWM). */
static long peak_rss_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %ld", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

/* ---- the operations -------------------------------------------------------- */

static rngsnap *ctx;
static char dir[4096];
static unsigned save_flags;
static int marking;

static void mark(const char *op, const char *edge)
{
    char p[128];
    if (!marking)
        return;
    snprintf(p, sizeof p, "/rngsnap-bench-mark/%s-%s/%d", op, edge, rank);
    (void)access(p, F_OK);
}

/* One save or load, started at a barrier, through librngsnap_mpi (what a
 * job calls) or through the counting communicator (the counters zeroed
 * first, the markers around it); returns the slowest rank's
 * microseconds (on every rank). */
static double timed(const char *op, int load, unsigned flags, int counted)
{
    int rc;
    MPI_Barrier(MPI_COMM_WORLD);
    memset(cu.n, 0, sizeof cu.n);
    if (counted)
        mark(op, "begin");
    double t0 = now_us();
    if (counted)
        rc = load ? rngsnap_load_ranks(ctx, &comm, dir, 0)
                  : rngsnap_save_ranks(ctx, &comm, dir, flags);
    else
        rc = load ? rngsnap_mpi_load(ctx, MPI_COMM_WORLD, dir, 0)
                  : rngsnap_mpi_save(ctx, MPI_COMM_WORLD, dir, flags);
    double mine = now_us() - t0, slowest;
    if (counted)
        mark(op, "end");
    if (rc != RNGSNAP_OK)
        die(op, ctx);
    MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return slowest;
}

/* runs through librngsnap_mpi (their median and best), then one through
 * the counting communicator (its time and its counts). */
static void series(const char *op, int load, int runs)
{
    double t[MAX_RUNS];
    unsigned flags = save_flags | RNGSNAP_SAVE_REPLACE;
    for (int i = 0; i < runs; i++)
        t[i] = timed(op, load, flags, 0);
    qsort(t, (size_t)runs, sizeof t[0], cmp_double);
    double counted = timed(op, load, flags, 1);
    if (rank == 0)
        printf(" %s_median_us=%.1f %s_best_us=%.1f %s_counted_us=%.1f", op,
               t[runs / 2], op, t[0], op, counted);
    report_counts(op);
}

static void usage(const char *argv0)
{
    if (rank == 0)
        fprintf(stderr, "usage: mpirun -np N %s --dir DIR [--ini PATH] "
                "[--per-rank-files] [--runs R (1..%d)] [--coords] [--mark]\n",
                argv0, MAX_RUNS);
    MPI_Finalize();
    exit(2);
}

int main(int argc, char **argv)
{
    const char *ini = NULL, *base = NULL;
    int runs = 5, coords = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--dir") == 0 && i + 1 < argc)
            base = argv[++i];
        else if (strcmp(argv[i], "--ini") == 0 && i + 1 < argc)
            ini = argv[++i];
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--per-rank-files") == 0)
            save_flags |= RNGSNAP_SAVE_PER_RANK_FILES;
        else if (strcmp(argv[i], "--coords") == 0)
            coords = 1;
        else if (strcmp(argv[i], "--mark") == 0)
            marking = 1;
        else
            usage(argv[0]);
    }
    if (!base || runs < 1 || runs > MAX_RUNS)
        usage(argv[0]);
    /* A folder that does not exist yet: the first save creates it. */
    snprintf(dir, sizeof dir, "%s/ckpt", base);
    comm_fill();
    if (rngsnap_open(&ctx, ini, 0) != RNGSNAP_OK)
        die("rngsnap_open", ctx);
    if (rngsnap_seed_all(ctx, 42) != RNGSNAP_OK)
        die("rngsnap_seed_all", ctx);
    if (coords) { /* a 4-D job's coordinates: 8 tp x 4 pp x 4 ep, dp outermost */
        char c[96];
        snprintf(c, sizeof c, "dp=%d,ep=%d,pp=%d,tp=%d", rank / 128,
                 rank / 32 % 4, rank / 8 % 4, rank % 8);
        if (rngsnap_set_coords(ctx, c) != RNGSNAP_OK)
            die("rngsnap_set_coords", ctx);
    }
    if (rank == 0)
        printf("RESULT ranks=%d layout=%s ranks_per_node_env=%s runs=%d",
               world, save_flags & RNGSNAP_SAVE_PER_RANK_FILES ? "rank" : "node",
               getenv("RNGSNAP_RANKS_PER_NODE") ? getenv("RNGSNAP_RANKS_PER_NODE")
                                                : "", runs);

    /* A save into a new folder, then the same folder replaced: a job that
     * keeps one folder does the second; one that starts a folder per
     * step, the first. */
    double fresh = timed("save_fresh", 0, save_flags, 1);
    if (rank == 0)
        printf(" save_fresh_us=%.1f", fresh);
    report_counts("save_fresh");
    if (rank == 0)
        report_folder(dir, "fresh");
    series("save", 0, runs);
    if (rank == 0)
        report_folder(dir, "replaced");
    series("load", 1, runs);

    long kib = peak_rss_kib(), max_kib = 0, sum_kib = 0;
    MPI_Reduce(&kib, &max_kib, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&kib, &sum_kib, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        printf(" peak_rss_kib_max=%ld peak_rss_kib_sum=%ld\n", max_kib, sum_kib);
        fflush(stdout);
    }
    rngsnap_close(ctx);
    free(node_ranks);
    MPI_Finalize();
    return 0;
}
