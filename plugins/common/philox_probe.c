/*
 * philox_probe.c - plain or non-temporal stores, measured on the machine.
 *
 * From px_tune.nt_min on, the first fills of each size class (nt_min, 4x,
 * 16x, 64x and up) on a path are written in 8 pieces, plain and
 * non-temporal in turn, each piece timed on the thread's CPU clock; after
 * PX_PROBE_ROUNDS such fills the faster way is kept for that class and
 * path for the life of the process.  The first round is not counted: it
 * pays each piece's change of store kind (a non-temporal store to a line
 * that plain stores left dirty in the cache evicts it first; plain stores
 * after streaming refill the cache), which later fills of one kind do not
 * pay.  A round during which pages faulted in (a fresh buffer: the kernel's
 * work, not the stores') is not counted either.  The bits are those of one
 * fill whatever is chosen.
 */
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "philox_isa.h"

enum { PX_NT_UNDECIDED, PX_NT_PROBING, PX_NT_PLAIN, PX_NT_STREAM };

/* One size class of one path.  state is read and written atomically (fills
 * run on many threads); the rest only by the thread that moved state from
 * UNDECIDED to PROBING, until it stores state again (release). */
typedef struct px_probe_slot {
    int state;
    int rounds; /* rounds counted, the warm-up included */
    int tries;  /* rounds written, faulted ones included */
    int n;      /* samples kept per way */
    double t[2][PX_PROBE_SAMPLES]; /* seconds per block, plain / nt */
} px_probe_slot;

static px_probe_slot px_slots[PHILOX_ISA_COUNT][PX_NT_CLASSES];

int px_nt_class(size_t bytes)
{
    size_t lim = px_tune.nt_min ? px_tune.nt_min : 1;
    int k = 0;
    for (; k < PX_NT_CLASSES - 1 && bytes / 4 >= lim; k++)
        lim *= 4;
    return k;
}

static px_probe_slot *px_slot(philox_isa isa, size_t bytes)
{
    return (unsigned)isa < PHILOX_ISA_COUNT ? &px_slots[isa][px_nt_class(bytes)]
                                            : NULL;
}

int px_nt_choice(philox_isa isa, size_t bytes)
{
    if (bytes < px_tune.nt_min)
        return 0;
    px_probe_slot *s = px_slot(isa, bytes);
    if (!px_tune.nt_probe || s == NULL)
        return 1;
    int expect = PX_NT_UNDECIDED;
    if (__atomic_compare_exchange_n(&s->state, &expect, PX_NT_PROBING, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return PX_NT_PROBE;
    /* while another thread probes, plain stores (the safe way) */
    return expect == PX_NT_STREAM;
}

/* median of n <= PX_PROBE_SAMPLES values (n even: the mean of the middle
 * two) */
static double px_median(const double *v, int n)
{
    double s[PX_PROBE_SAMPLES];
    for (int i = 0; i < n; i++) { /* insertion sort: n is at most 8 */
        int j = i;
        for (; j > 0 && s[j - 1] > v[i]; j--)
            s[j] = s[j - 1];
        s[j] = v[i];
    }
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

int px_nt_verdict(const double *plain, const double *nt, int n)
{
    return px_median(nt, n) < px_median(plain, n) * (1 + PX_PROBE_MARGIN);
}

static long px_faults_now(void)
{
#ifdef RUSAGE_THREAD
    struct rusage u;
    if (getrusage(RUSAGE_THREAD, &u) == 0)
        return u.ru_minflt + u.ru_majflt;
#endif
    return 0;
}

/* On the thread's CPU clock: a piece during which another job held the
 * core is not counted slower (on a shared 2-vCPU VM under load, half the
 * pieces of a 64 MiB fill were, on the wall clock).  Four system calls a
 * piece, against a piece of half a millisecond or more. */
static double px_piece_timed(px_fill_fn fill, rngsnap_dist dist,
                             const px_ctr *c, void *out, size_t nb, int nt,
                             long *faults)
{
    struct timespec a, b;
    long f0 = px_faults_now();
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    fill(dist, c, out, nb, nt);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    *faults = px_faults_now() - f0;
    return (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
}

px_probe_piece_fn px_probe_piece = px_piece_timed;

/* After a round: the next state of s (UNDECIDED: measure again on the
 * next fill of the class). */
static int px_round_done(px_probe_slot *s, const double t[2][PX_PROBE_PIECES / 2],
                         long faults)
{
    __atomic_store_n(&s->tries, s->tries + 1, __ATOMIC_RELAXED);
    int warm = s->rounds == 0;
    if (warm || faults == 0)
        s->rounds++;
    if (!warm && faults == 0)
        for (int i = 0; i < PX_PROBE_PIECES / 2 && s->n < PX_PROBE_SAMPLES;
             i++, s->n++) {
            s->t[0][s->n] = t[0][i];
            s->t[1][s->n] = t[1][i];
        }
    if (s->rounds < PX_PROBE_ROUNDS && s->tries < PX_PROBE_TRIES)
        return PX_NT_UNDECIDED;
    /* enough rounds, or fills that keep faulting: decide on what was
     * kept, plain if nothing was */
    return s->n > 0 && px_nt_verdict(s->t[0], s->t[1], s->n) ? PX_NT_STREAM
                                                            : PX_NT_PLAIN;
}

void px_nt_probe(px_fill_fn fill, philox_isa isa, rngsnap_dist dist,
                 const px_ctr *c, void *out, size_t nb, size_t block_bytes)
{
    /* P N N P P N N P: a drift of the machine's speed during the fill
     * weighs on both ways alike, and each piece of a buffer filled again
     * keeps its way from one round to the next */
    static const int way[PX_PROBE_PIECES] = {0, 1, 1, 0, 0, 1, 1, 0};
    px_probe_slot *s = px_slot(isa, nb * 16);
    size_t piece = nb / PX_PROBE_PIECES;
    if (piece == 0) { /* too small to tell: plain, and ask again later */
        fill(dist, c, out, nb, 0);
        if (s != NULL)
            __atomic_store_n(&s->state, PX_NT_UNDECIDED, __ATOMIC_RELEASE);
        return;
    }
    double t[2][PX_PROBE_PIECES / 2];
    int k[2] = {0, 0};
    long faults = 0;
    px_ctr pc = *c;
    char *o = out;
    for (int i = 0; i < PX_PROBE_PIECES; i++) {
        size_t n = i == PX_PROBE_PIECES - 1 ? nb - piece * i : piece;
        long f = 0;
        double sec = px_probe_piece(fill, dist, &pc, o, n, way[i], &f);
        faults += f;
        t[way[i]][k[way[i]]++] = sec / (double)n;
        pc.block += n;
        o += n * block_bytes;
    }
    if (s != NULL)
        __atomic_store_n(&s->state, px_round_done(s, t, faults),
                         __ATOMIC_RELEASE);
}

const char *px_nt_verdict_name(philox_isa isa, size_t bytes)
{
    px_probe_slot *s = px_slot(isa, bytes);
    int v = s ? __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) : PX_NT_UNDECIDED;
    return v == PX_NT_STREAM  ? "non-temporal stores"
           : v == PX_NT_PLAIN ? "plain stores"
           : v == PX_NT_PROBING ||
                   (s && __atomic_load_n(&s->tries, __ATOMIC_RELAXED) > 0)
               ? "being measured"
               : "not measured yet";
}

int px_nt_probe_medians(philox_isa isa, size_t bytes, double med[2])
{
    px_probe_slot *s = px_slot(isa, bytes);
    if (s == NULL || __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) < PX_NT_PLAIN ||
        s->n == 0)
        return 0;
    med[0] = px_median(s->t[0], s->n);
    med[1] = px_median(s->t[1], s->n);
    return s->n;
}

void px_nt_probe_reset(void)
{
    for (int i = 0; i < PHILOX_ISA_COUNT; i++)
        for (int k = 0; k < PX_NT_CLASSES; k++) {
            px_slots[i][k].rounds = px_slots[i][k].tries = 0;
            px_slots[i][k].n = 0;
            __atomic_store_n(&px_slots[i][k].state, PX_NT_UNDECIDED,
                             __ATOMIC_RELEASE);
        }
    px_probe_piece = px_piece_timed;
}
