/*
 * plugin_check_points.c - the "points" check: save points where a cached
 * value may be pending.  On every stream of every device, after each save
 * point P (each distribution drawn 1, 2 and 3 times; a large draw;
 * normal_f32 then normal_f64 and the reverse; the cuRAND normals mixed),
 * the state A is taken and each distribution Q is drawn next:
 *   uninterrupted      seed, P, Q
 *   get_state only     seed, P, get_state, Q       (must equal: get is pure)
 *   round trip         seed, P, set_state(A), Q    (must equal)
 *   restored           seed other, draw even counts of everything,
 *                      set_state(A), Q             (must equal: the load)
 * The (P, Q) pairs whose restored draw differs tell what leaks: the whole
 * position, a value one distribution caches, or one shared by several.
 */
#include <stdlib.h>
#include <string.h>

#include "plugin_check.h"

#define MAXP 48
#define QN 4 /* values of Q drawn after the save point */

typedef struct point {
    int dist[2];  /* -1: none */
    size_t n[2];
    char name[96];
} point;

typedef struct ctxp {
    pc *p;
    point pts[MAXP];
    int np;
    int qs[RNGSNAP_DIST_COUNT];
    int nq;
    int base;     /* u32, or the first distribution drawn */
} ctxp;

static void add_point(ctxp *c, int d0, size_t n0, int d1, size_t n1)
{
    if (c->np >= MAXP)
        return;
    point *pt = &c->pts[c->np++];
    pt->dist[0] = d0;
    pt->n[0] = n0;
    pt->dist[1] = d1;
    pt->n[1] = n1;
    if (d0 < 0)
        snprintf(pt->name, sizeof pt->name, "seed");
    else if (d1 < 0)
        snprintf(pt->name, sizeof pt->name, "%s x%zu", pc_dist_name(d0), n0);
    else
        snprintf(pt->name, sizeof pt->name, "%s x%zu then %s x%zu",
                 pc_dist_name(d0), n0, pc_dist_name(d1), n1);
}

static int has(const pc *p, int d)
{
    return (p->supported >> d) & 1u;
}

static void build(ctxp *c)
{
    pc *p = c->p;
    c->base = has(p, RNGSNAP_U32) ? RNGSNAP_U32 : __builtin_ctz(p->supported);
    add_point(c, -1, 0, -1, 0);
    for (int d = 0; d < RNGSNAP_DIST_COUNT; d++)
        if (has(p, d)) {
            c->qs[c->nq++] = d;
            for (size_t k = 1; k <= 3; k++)
                add_point(c, d, k, -1, 0);
        }
    /* A large draw (the cpu backend fills it in parallel past 1 MiB). */
    add_point(c, c->base, 262145, -1, 0);
    static const int pairs[][2] = {
        {RNGSNAP_NORMAL_F32, RNGSNAP_NORMAL_F64},
        {RNGSNAP_NORMAL_F64, RNGSNAP_NORMAL_F32},
        {RNGSNAP_CURAND_NORMAL_F32, RNGSNAP_CURAND_NORMAL_F64},
        {RNGSNAP_NORMAL_F32, RNGSNAP_CURAND_NORMAL_F32},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++)
        if (has(p, pairs[i][0]) && has(p, pairs[i][1]))
            add_point(c, pairs[i][0], 1, pairs[i][1], 1);
}

/* Draw n of d, discarding the values; 0 on failure (reported). */
static int burn(pc *p, rngsnap_stream *s, int d, size_t n, const char *what)
{
    void *v = pc_draw(p, s, d, n, what);
    free(v);
    return v != NULL;
}

static int run_point(pc *p, rngsnap_stream *s, const point *pt,
                     uint64_t seed)
{
    pc_seed(p, s, seed, (uint64_t)s->device);
    for (int k = 0; k < 2; k++)
        if (pt->dist[k] >= 0
            && !burn(p, s, pt->dist[k], pt->n[k], "at a save point"))
            return 0;
    return 1;
}

enum { UNINT, GET, ROUND, RESTORED, NPATH };

/* Q's QN values after P along each path into out[path]; 0 on failure. */
static int paths(ctxp *c, rngsnap_stream *s, const point *pt, int q,
                 uint64_t seed, uint8_t out[NPATH][QN * 8])
{
    pc *p = c->p;
    size_t size = p->b->vt->state_size, vs = pc_dist_size(q);
    char l[256];
    pc_label(s, l, sizeof l);
    uint8_t *a = NULL;
    int ok = 0;
    for (int path = 0; path < NPATH; path++) {
        if (!run_point(p, s, pt, seed))
            goto out;
        if (path != UNINT) {
            free(a);
            if (!(a = pc_state(p, s)))
                goto out;
        }
        if (path == RESTORED) {
            /* Another stream life: other seed, even counts of everything. */
            pc_seed(p, s, seed ^ 0x5555, (uint64_t)s->device + 1);
            for (int i = 0; i < c->nq; i++)
                if (!burn(p, s, c->qs[i], 2, "before a restore"))
                    goto out;
            if (!burn(p, s, c->base, 7, "before a restore"))
                goto out;
        }
        if (path == ROUND || path == RESTORED) {
            int rc = pc_set(p, s, a, size);
            if (rc) {
                const char *m = pc_plugin_msg(p);
                pc_fail(p, "set_state of the bytes get_state gave after %s "
                        "failed on %s: %s%s%s", pt->name, l,
                        rngsnap_error_name(rc), m ? ": " : "", m ? m : "");
                goto out;
            }
        }
        void *v = pc_draw(p, s, q, QN, "after a save point");
        if (!v)
            goto out;
        memcpy(out[path], v, QN * vs);
        free(v);
    }
    ok = 1;
out:
    free(a);
    return ok;
}

static void join(char *buf, size_t len, const int *set, const char *word)
{
    buf[0] = '\0';
    int n = 0, total = 0;
    for (int d = 0; d < RNGSNAP_DIST_COUNT; d++)
        total += set[d];
    for (int d = 0; d < RNGSNAP_DIST_COUNT; d++) {
        if (!set[d])
            continue;
        n++;
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s",
                 n == 1 ? "" : n == total ? word : ", ", pc_dist_name(d));
    }
}

/* Name what leaks, from the (P, Q) pairs whose restored draw differed. */
static void classify(ctxp *c, rngsnap_stream *s,
                     unsigned char mm[MAXP][RNGSNAP_DIST_COUNT])
{
    pc *p = c->p;
    char l[256];
    pc_label(s, l, sizeof l);
    /* The whole position: after an even count of the base distribution,
     * every distribution continues from elsewhere. */
    for (int i = 0; i < c->np; i++) {
        const point *pt = &c->pts[i];
        if (pt->dist[0] != c->base || pt->n[0] != 2 || pt->dist[1] >= 0)
            continue;
        int all = 1;
        for (int k = 0; k < c->nq; k++)
            all &= mm[i][c->qs[k]];
        if (all) {
            pc_fail(p, "set_state does not restore the stream's position: "
                    "saved after %s on %s, the restored stream draws every "
                    "distribution from another place than the "
                    "uninterrupted one; the counter or offset must be in "
                    "the state", pt->name, l);
            return;
        }
    }
    /* affected[p]: the Q that differ when p was left pending. */
    int affected[RNGSNAP_DIST_COUNT][RNGSNAP_DIST_COUNT] = {{0}};
    int first[RNGSNAP_DIST_COUNT], any = 0;
    for (int d = 0; d < RNGSNAP_DIST_COUNT; d++)
        first[d] = -1;
    for (int i = 0; i < c->np; i++) {
        const point *pt = &c->pts[i];
        if (pt->dist[0] < 0 || pt->dist[1] >= 0)
            continue;
        for (int k = 0; k < c->nq; k++)
            if (mm[i][c->qs[k]]) {
                affected[pt->dist[0]][c->qs[k]] = 1;
                if (first[pt->dist[0]] < 0)
                    first[pt->dist[0]] = i;
                any = 1;
            }
    }
    int done[RNGSNAP_DIST_COUNT] = {0};
    for (int d = 0; d < RNGSNAP_DIST_COUNT; d++) {
        if (done[d] || first[d] < 0)
            continue;
        int group[RNGSNAP_DIST_COUNT] = {0};
        for (int e = d; e < RNGSNAP_DIST_COUNT; e++)
            if (!done[e] && first[e] >= 0
                && memcmp(affected[e], affected[d], sizeof affected[d]) == 0) {
                group[e] = 1;
                done[e] = 1;
            }
        char g[256], a[256];
        join(g, sizeof g, group, " or ");
        join(a, sizeof a, affected[d], " and ");
        const char *pt = c->pts[first[d]].name;
        if (memcmp(group, affected[d], sizeof group) == 0
            && strchr(a, ' ') == NULL)
            pc_fail(p, "a value cached by %s (a Box-Muller spare?) is not "
                    "in the state: saved after %s on %s, the restored "
                    "stream's next %s differ from the uninterrupted "
                    "stream's; put the value and a flag saying whether it "
                    "is there into the state, or do not cache it", g, pt,
                    l, a);
        else if (memcmp(group, affected[d], sizeof group) == 0)
            pc_fail(p, "%s share a cached value that is not in the state: "
                    "saved after %s on %s, the restored stream's next %s "
                    "differ from the uninterrupted stream's; keep a cached "
                    "value per distribution, and in the state", a, pt, l, a);
        else
            pc_fail(p, "a value cached by %s reaches %s and is not in the "
                    "state: saved after %s on %s, the restored stream's "
                    "next %s differ from the uninterrupted stream's; keep "
                    "what a distribution caches in the state", g, a, pt, l,
                    a);
    }
    if (any)
        return;
    for (int i = 0; i < c->np; i++)
        for (int k = 0; k < c->nq; k++)
            if (mm[i][c->qs[k]]) {
                pc_fail(p, "saved after %s on %s, the restored stream's "
                        "next %s differ from the uninterrupted stream's: "
                        "something the stream keeps is not in the state",
                        c->pts[i].name, l, pc_dist_name(c->qs[k]));
                return;
            }
}

void pc_check_points(pc *p)
{
    pc_open(p);
    ctxp c = {.p = p};
    build(&c);
    static unsigned char mm[MAXP][RNGSNAP_DIST_COUNT];
    for (size_t i = 0; i < p->ns; i++) {
        rngsnap_stream *s = p->s[i];
        char l[256];
        pc_label(s, l, sizeof l);
        memset(mm, 0, sizeof mm);
        int bad = 0, reported = 0;
        for (int k = 0; k < c.np; k++) {
            const point *pt = &c.pts[k];
            for (int j = 0; j < c.nq; j++) {
                int q = c.qs[j];
                uint8_t out[NPATH][QN * 8];
                size_t bytes = QN * pc_dist_size(q);
                pc_doing("saving %s after %s, then drawing %s", l, pt->name,
                         pc_dist_name(q));
                if (!paths(&c, s, pt, q, 1000 + i, out))
                    return;
                if (!reported && memcmp(out[UNINT], out[GET], bytes) != 0) {
                    pc_fail(p, "get_state changed what %s draws next: after "
                            "%s, the next %s differ when get_state was "
                            "called in between; get_state must not touch "
                            "the stream", l, pt->name, pc_dist_name(q));
                    reported = 1;
                } else if (!reported
                           && memcmp(out[UNINT], out[ROUND], bytes) != 0) {
                    pc_fail(p, "set_state of the state get_state had just "
                            "given changed what %s draws next (after %s, "
                            "then %s): set_state must put back exactly "
                            "what get_state saved", l, pt->name,
                            pc_dist_name(q));
                    reported = 1;
                }
                if (memcmp(out[UNINT], out[RESTORED], bytes) != 0) {
                    mm[k][q] = 1;
                    bad = 1;
                }
            }
        }
        pc_doing(NULL);
        if (bad)
            classify(&c, s, mm);
        if (bad || reported)
            return; /* one stream's findings say it all */
    }
}
