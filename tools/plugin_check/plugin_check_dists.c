/*
 * plugin_check_dists.c - the "dists" check: every rngsnap_dist value the
 * header defines, and two it does not, with counts 0, odd and even, small
 * and large, on the first stream of every device.  A distribution drawn
 * writes exactly n values in its range, moves the state and repeats after
 * the same seed; one not drawn is refused with RNGSNAP_E_UNAVAILABLE and a
 * message, the stream unmoved and the buffer untouched.
 */
#include <stdlib.h>
#include <string.h>

#include "plugin_check.h"

#define CANARY 0xa5
#define PAD 64

/* 262145: past the cpu backend's 1 MiB threshold of its parallel fill. */
static const size_t counts[] = {0, 1, 2, 3, 8, 33, 4097, 262145};
#define NCOUNTS (sizeof counts / sizeof counts[0])

typedef struct draw {
    int rc;
    const char *msg;     /* the plugin's message on failure            */
    int moved;           /* the state changed                          */
    size_t past;         /* first byte written past n values, or 0     */
    int touched;         /* n = 0 or refused: a byte of out changed    */
    uint8_t *out;        /* n values + PAD canary bytes                */
} draw;

static int one(pc *p, rngsnap_stream *s, int d, size_t n, draw *r)
{
    size_t size = p->b->vt->state_size, vs = pc_dist_size(d);
    memset(r, 0, sizeof *r);
    uint8_t *before = malloc(size), *after = malloc(size);
    r->out = malloc(n * vs + PAD);
    if (!before || !after || !r->out) {
        free(before);
        free(after);
        pc_fail(p, "out of memory");
        return 0;
    }
    memset(r->out, CANARY, n * vs + PAD);
    pc_seed(p, s, 5, (uint64_t)s->device);
    int ok = pc_get(p, s, before, size) == RNGSNAP_OK;
    r->rc = pc_gen(p, s, (rngsnap_dist)d, r->out, n);
    r->msg = r->rc ? pc_plugin_msg(p) : NULL;
    ok = ok && pc_get(p, s, after, size) == RNGSNAP_OK;
    r->moved = memcmp(before, after, size) != 0;
    size_t from = r->rc == RNGSNAP_OK ? n * vs : 0;
    for (size_t i = from; i < n * vs + PAD; i++)
        if (r->out[i] != CANARY) {
            r->past = i + 1;
            break;
        }
    free(before);
    free(after);
    if (!ok)
        pc_fail(p, "get_state failed while checking generate");
    return ok;
}

/* A value the header does not define: refused, reported, nothing moved. */
static void unknown(pc *p, rngsnap_stream *s, int d)
{
    draw r;
    char l[256];
    pc_label(s, l, sizeof l);
    pc_doing("calling generate(%d, 3) on %s (no such distribution)", d, l);
    if (!one(p, s, d, 3, &r))
        return;
    if (r.rc == RNGSNAP_OK)
        pc_fail(p, "generate accepted distribution %d, which no header "
                "defines (the enum grows): refuse values you do not know "
                "in a default: branch with RNGSNAP_E_UNAVAILABLE", d);
    else if (!r.msg)
        pc_fail(p, "generate refused distribution %d (%s) without calling "
                "host->error: say which value it was and what the backend "
                "draws", d, rngsnap_error_name(r.rc));
    else if (r.moved || r.past)
        pc_fail(p, "generate refused distribution %d but %s: a refused "
                "call draws nothing", d,
                r.moved ? "the stream moved" : "it wrote into out");
    free(r.out);
}

/* A defined value the backend does not draw: RNGSNAP_E_UNAVAILABLE. */
static void not_drawn(pc *p, rngsnap_stream *s, int d)
{
    draw r;
    if (!one(p, s, d, 3, &r))
        return;
    if (r.rc != RNGSNAP_E_UNAVAILABLE)
        pc_fail(p, "generate(%s, 3) failed with %s%s%s: return "
                "RNGSNAP_E_UNAVAILABLE for a distribution the backend does "
                "not draw, or draw it", pc_dist_name(d),
                rngsnap_error_name(r.rc), r.msg ? ": " : "",
                r.msg ? r.msg : "");
    else if (!r.msg)
        pc_fail(p, "generate(%s, 3) returned RNGSNAP_E_UNAVAILABLE without "
                "calling host->error: say what the backend draws",
                pc_dist_name(d));
    else if (r.moved || r.past)
        pc_fail(p, "generate(%s, 3) was refused but %s: a refused call "
                "draws nothing", pc_dist_name(d),
                r.moved ? "the stream moved" : "it wrote into out");
    free(r.out);
}

static void drawn(pc *p, rngsnap_stream *s, int d)
{
    char l[256], why[256];
    pc_label(s, l, sizeof l);
    size_t vs = pc_dist_size(d);
    for (size_t c = 0; c < NCOUNTS; c++) {
        size_t n = counts[c];
        draw r, again;
        pc_doing("calling generate(%s, %zu) on %s", pc_dist_name(d), n, l);
        if (!one(p, s, d, n, &r))
            return;
        int bad = 1;
        if (r.rc != RNGSNAP_OK)
            pc_fail(p, "generate(%s, %zu) on %s failed: %s%s%s (the same "
                    "distribution drew one value)", pc_dist_name(d), n, l,
                    rngsnap_error_name(r.rc), r.msg ? ": " : "",
                    r.msg ? r.msg : "");
        else if (r.past)
            pc_fail(p, "generate(%s, %zu) wrote past the %zu values asked "
                    "for (byte %zu of out changed): write exactly n values "
                    "(an odd n of a pairwise method drops or keeps the last "
                    "pair's second value, it never writes it)",
                    pc_dist_name(d), n, n, r.past - 1);
        else if (n == 0 && r.moved)
            pc_fail(p, "generate(%s, 0) moved the stream: 0 values draw "
                    "nothing", pc_dist_name(d));
        else if (n > 0 && !r.moved)
            pc_fail(p, "generate(%s, %zu) did not change the state: what "
                    "the stream drew is not in get_state's bytes",
                    pc_dist_name(d), n);
        else if (!pc_values_ok(d, r.out, n, why, sizeof why))
            pc_fail(p, "generate(%s, %zu) on %s: %s", pc_dist_name(d), n, l,
                    why);
        else
            bad = 0;
        if (!bad && n > 0 && one(p, s, d, n, &again)) {
            if (again.rc != RNGSNAP_OK
                || memcmp(r.out, again.out, n * vs) != 0) {
                pc_fail(p, "generate(%s, %zu) after the same seed() gave "
                        "other values the second time: seed() must reset "
                        "everything that decides the next values (a cached "
                        "spare too)", pc_dist_name(d), n);
                bad = 1;
            }
            free(again.out);
        }
        free(r.out);
        if (bad)
            return;
    }
}

void pc_check_dists(pc *p)
{
    pc_open(p);
    int last_device = -1;
    for (size_t i = 0; i < p->ns; i++) {
        rngsnap_stream *s = p->s[i];
        if (s->device == last_device)
            continue; /* one stream per device */
        last_device = s->device;
        for (int d = 0; d < RNGSNAP_DIST_COUNT && !p->failures; d++) {
            if (p->supported & 1u << d)
                drawn(p, s, d);
            else
                not_drawn(p, s, d);
        }
        unknown(p, s, RNGSNAP_DIST_COUNT);
        unknown(p, s, RNGSNAP_DIST_COUNT + 1000);
        if (p->failures)
            break; /* the other devices would say the same */
    }
    pc_doing(NULL);
    if (p->supported != (1u << RNGSNAP_DIST_COUNT) - 1) {
        char list[512] = "";
        for (int d = 0; d < RNGSNAP_DIST_COUNT; d++)
            if (!(p->supported & 1u << d))
                snprintf(list + strlen(list), sizeof list - strlen(list),
                         "%s%s", list[0] ? ", " : "", pc_dist_name(d));
        pc_note(p, "not drawn (RNGSNAP_E_UNAVAILABLE, so not checked "
                "further): %s", list);
    }
}
