/*
 * ledger_diff.c - `rngsnap ledger diff A B [--json]`: compare two runs'
 * ledgers (files, or per-rank folders) on the steps both recorded, and
 * name the first step, the rank and each entry where they part: a Philox
 * stream N words ahead or behind, a re-seeded stream, an app state (a
 * generator, a sampler) that differs, or, when every stream and state
 * matched, noted values that differ: compute drift, not RNG.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "json.h"
#include "ledger_format.h"
#include "ledger_read.h"

#define CMD "ledger diff"

/* One step of one side: the record that counts (the last one written). */
typedef struct side_step {
    uint64_t step;
    const lg_record *rec;
} side_step;

typedef struct common {
    uint64_t step;
    const lg_record *a, *b;
} common;

static int by_step(const void *x, const void *y)
{
    const side_step *a = x, *b = y;
    if (a->step != b->step)
        return (a->step > b->step) - (a->step < b->step);
    /* Later in the file wins: keep file order among equal steps. */
    return (a->rec > b->rec) - (a->rec < b->rec);
}

/* f's steps, sorted, each once (its last record). */
static side_step *steps_of(const lg_file *f, size_t *n)
{
    side_step *s = malloc((f->nrecs + 1) * sizeof *s);
    if (!s)
        return NULL;
    for (size_t i = 0; i < f->nrecs; i++)
        s[i] = (side_step){f->recs[i].step, &f->recs[i]};
    qsort(s, f->nrecs, sizeof *s, by_step);
    size_t k = 0;
    for (size_t i = 0; i < f->nrecs; i++) {
        if (k && s[k - 1].step == s[i].step)
            s[k - 1] = s[i];
        else
            s[k++] = s[i];
    }
    *n = k;
    return s;
}

/* Index of name among l's entries, or -1. */
static long find_entry(const lg_layout *l, const char *name, int stream)
{
    uint32_t lo = stream ? 0 : l->nstreams;
    uint32_t hi = stream ? l->nstreams : l->nstreams + l->napps;
    for (uint32_t i = lo; i < hi; i++)
        if (strcmp(l->names[i], name) == 0)
            return (long)(i - lo);
    return -1;
}

/* How entry (name, stream?) compares at one common step. */
enum { SAME, AHEAD, RESEEDED, STATE, ONLY_A, ONLY_B };

typedef struct cmp {
    int how;
    uint64_t a_off, b_off;
} cmp;

static cmp compare_entry(const common *c, const char *name, int stream)
{
    cmp r = {SAME, 0, 0};
    long ia = find_entry(c->a->layout, name, stream);
    long ib = find_entry(c->b->layout, name, stream);
    if (ia < 0 || ib < 0) {
        r.how = ia < 0 && ib < 0 ? SAME : ia < 0 ? ONLY_B : ONLY_A;
        return r;
    }
    if (!stream) {
        r.how = lg_app(c->a, (uint32_t)ia) == lg_app(c->b, (uint32_t)ib)
                    ? SAME : STATE;
        return r;
    }
    uint32_t a = (uint32_t)ia, b = (uint32_t)ib;
    r.a_off = lg_stream_a(c->a, a);
    r.b_off = lg_stream_a(c->b, b);
    int philox = c->a->layout->kinds[a] == RS_LG_PHILOX
                 && c->b->layout->kinds[b] == RS_LG_PHILOX;
    if (lg_stream_b(c->a, a) != lg_stream_b(c->b, b))
        r.how = philox ? RESEEDED : STATE;
    else if (r.a_off != r.b_off)
        r.how = philox ? AHEAD : STATE;
    return r;
}

/* Every entry name of both sides at step c: streams first, then apps,
 * A's order then B's extras.  Returns the count; names[i] borrowed. */
static size_t entry_names(const common *c, const char **names, int *stream)
{
    size_t n = 0;
    for (int side = 0; side < 2; side++) {
        const lg_layout *l = side ? c->b->layout : c->a->layout;
        const lg_layout *o = side ? c->a->layout : c->b->layout;
        for (uint32_t i = 0; i < l->nstreams + l->napps; i++) {
            int st = i < l->nstreams;
            if (side && find_entry(o, l->names[i], st) >= 0)
                continue;
            names[n] = l->names[i];
            stream[n++] = st;
        }
    }
    return n;
}

static const lg_note *find_note(const lg_record *r, const char *name)
{
    for (size_t i = 0; i < r->nnotes; i++)
        if (strcmp(r->notes[i].name, name) == 0)
            return &r->notes[i];
    return NULL;
}

static int note_same(const lg_note *x, const lg_note *y)
{
    return x && y && x->type == y->type && x->len == y->len
           && memcmp(x->value, y->value, x->len) == 0;
}

static int notes_differ(const common *c)
{
    for (int side = 0; side < 2; side++) {
        const lg_record *r = side ? c->b : c->a, *o = side ? c->a : c->b;
        for (size_t i = 0; i < r->nnotes; i++)
            if (!note_same(&r->notes[i], find_note(o, r->notes[i].name)))
                return 1;
    }
    return 0;
}

static int rng_differs(const common *c, const char **names, int *stream)
{
    size_t n = entry_names(c, names, stream);
    for (size_t i = 0; i < n; i++)
        if (compare_entry(c, names[i], stream[i]).how != SAME)
            return 1;
    return 0;
}

/* One rank's comparison. */
typedef struct rank_diff {
    const lg_file *a, *b;
    common *steps;
    size_t n;
    size_t first;   /* index of the first differing step, n if none */
} rank_diff;

static const char *how_word(int how)
{
    static const char *const w[] = {"same", "ahead", "reseeded", "state",
                                    "only_a", "only_b"};
    return w[how];
}

/* "last matched at step S" / "matches again at step M" for one entry. */
static int last_match(const rank_diff *d, const char *name, int stream,
                      uint64_t *step)
{
    for (size_t i = d->first; i-- > 0;)
        if (compare_entry(&d->steps[i], name, stream).how == SAME) {
            *step = d->steps[i].step;
            return 1;
        }
    return 0;
}

static int next_match(const rank_diff *d, const char *name, int stream,
                      uint64_t *step)
{
    for (size_t i = d->first + 1; i < d->n; i++)
        if (compare_entry(&d->steps[i], name, stream).how == SAME) {
            *step = d->steps[i].step;
            return 1;
        }
    return 0;
}

static void print_entry_text(const rank_diff *d, const char *name,
                             int stream, cmp r)
{
    printf("  %s%s: ", stream ? "" : "state ", name);
    switch (r.how) {
    case AHEAD: {
        int ahead = r.b_off > r.a_off;
        uint64_t w = ahead ? r.b_off - r.a_off : r.a_off - r.b_off;
        printf("%" PRIu64 " word%s %s in B (offset %" PRIu64 " in A, %" PRIu64
               " in B)", w, w == 1 ? "" : "s", ahead ? "ahead" : "behind",
               r.a_off, r.b_off);
        break;
    }
    case RESEEDED:
        printf("re-seeded: its seed or subsequence differs (offset %" PRIu64
               " in A, %" PRIu64 " in B)", r.a_off, r.b_off);
        break;
    case STATE: printf("state differs"); break;
    case ONLY_A: printf("only in A"); break;
    case ONLY_B: printf("only in B"); break;
    }
    uint64_t s;
    if (r.how == ONLY_A || r.how == ONLY_B) {
        printf("\n");
        return;
    }
    if (last_match(d, name, stream, &s))
        printf("; last matched at step %" PRIu64, s);
    else
        printf("; no earlier common step");
    if (next_match(d, name, stream, &s))
        printf("; matches again at step %" PRIu64, s);
    else if (d->first + 1 < d->n)
        printf("; still differs at step %" PRIu64 " (the last common step)",
               d->steps[d->n - 1].step);
    printf("\n");
}

static void json_u64_or_null(int ok, uint64_t v)
{
    if (ok)
        printf("%" PRIu64, v);
    else
        printf("null");
}

static void print_entry_json(const rank_diff *d, const char *name,
                             int stream, cmp r, int *k)
{
    printf("%s{\"entry\": ", (*k)++ ? ", " : "");
    json_string(stdout, name);
    printf(", \"kind\": \"%s\", \"how\": \"%s\"", stream ? "stream" : "state",
           how_word(r.how));
    if (r.how == AHEAD) {
        int ahead = r.b_off > r.a_off;
        printf(", \"words\": %" PRIu64 ", \"direction\": \"%s\"",
               ahead ? r.b_off - r.a_off : r.a_off - r.b_off,
               ahead ? "ahead" : "behind");
    }
    if (stream && (r.how == AHEAD || r.how == RESEEDED))
        printf(", \"a_offset\": %" PRIu64 ", \"b_offset\": %" PRIu64,
               r.a_off, r.b_off);
    uint64_t s = 0;
    int ok = last_match(d, name, stream, &s);
    printf(", \"last_matched\": ");
    json_u64_or_null(ok, s);
    ok = next_match(d, name, stream, &s);
    printf(", \"matches_again\": ");
    json_u64_or_null(ok, s);
    printf("}");
}

static void print_notes(const common *c, int json)
{
    char va[256], vb[256];
    int k = 0;
    for (int side = 0; side < 2; side++) {
        const lg_record *r = side ? c->b : c->a, *o = side ? c->a : c->b;
        for (size_t i = 0; i < r->nnotes; i++) {
            const lg_note *x = &r->notes[i];
            const lg_note *y = find_note(o, x->name);
            if (note_same(x, y) || (side && y))
                continue;
            const lg_note *na = side ? y : x, *nb = side ? x : y;
            const char *ta = na ? lg_note_text(na, va, sizeof va) : NULL;
            const char *tb = nb ? lg_note_text(nb, vb, sizeof vb) : NULL;
            if (json) {
                printf("%s{\"name\": ", k++ ? ", " : "");
                json_string(stdout, x->name);
                printf(", \"a\": ");
                json_string(stdout, ta);
                printf(", \"b\": ");
                json_string(stdout, tb);
                printf("}");
            } else {
                printf("  note %s: %s in A, %s in B\n", x->name,
                       ta ? ta : "(not noted)", tb ? tb : "(not noted)");
            }
        }
    }
}

/* The report of rank d at its first differing step. */
static void report_rank(const rank_diff *d, int json, int *k)
{
    const common *c = &d->steps[d->first];
    const char *names[1024];
    int stream[1024];
    size_t n = entry_names(c, names, stream);
    int rng = 0;
    for (size_t i = 0; i < n; i++)
        rng |= compare_entry(c, names[i], stream[i]).how != SAME;
    if (json) {
        printf("%s{\"rank\": %d, \"step\": %" PRIu64 ", \"kind\": \"%s\", "
               "\"entries\": [", (*k)++ ? ", " : "", (int)d->a->rank, c->step,
               rng ? "rng" : "compute");
        int e = 0;
        for (size_t i = 0; i < n; i++) {
            cmp r = compare_entry(c, names[i], stream[i]);
            if (r.how != SAME)
                print_entry_json(d, names[i], stream[i], r, &e);
        }
        printf("], \"notes\": [");
        print_notes(c, 1);
        printf("]}");
        return;
    }
    printf("rank %d, step %" PRIu64 "%s\n", (int)d->a->rank, c->step,
           rng ? "" : ": compute drift, not RNG (every stream and state "
                      "matched; noted values differ)");
    for (size_t i = 0; i < n; i++) {
        cmp r = compare_entry(c, names[i], stream[i]);
        if (r.how != SAME)
            print_entry_text(d, names[i], stream[i], r);
    }
    print_notes(c, 0);
}

/* Compare one rank's two ledgers; -1 out of memory. */
static int diff_rank(const lg_file *a, const lg_file *b, rank_diff *d)
{
    size_t na, nb;
    side_step *sa = steps_of(a, &na), *sb = steps_of(b, &nb);
    d->a = a;
    d->b = b;
    d->steps = malloc((na < nb ? na : nb) * sizeof *d->steps + 1);
    if (!sa || !sb || !d->steps) {
        free(sa);
        free(sb);
        return -1;
    }
    size_t i = 0, j = 0;
    d->n = 0;
    while (i < na && j < nb) {
        if (sa[i].step < sb[j].step)
            i++;
        else if (sb[j].step < sa[i].step)
            j++;
        else
            d->steps[d->n++] = (common){sa[i].step, sa[i].rec, sb[j].rec},
            i++, j++;
    }
    free(sa);
    free(sb);
    const char *names[1024];
    int stream[1024];
    d->first = d->n;
    for (size_t k = 0; k < d->n; k++) {
        const common *c = &d->steps[k];
        if (c->a->layout->nstreams + c->a->layout->napps
                + c->b->layout->nstreams + c->b->layout->napps > 1024)
            return -2;
        if (rng_differs(c, names, stream) || notes_differ(c)) {
            d->first = k;
            break;
        }
    }
    return 0;
}

/* The ranks of set that other lacks (JSON array members). */
static void print_unpaired(lg_file **set, size_t n, lg_file **other,
                           size_t no)
{
    int k = 0;
    for (size_t i = 0; i < n; i++) {
        int found = 0;
        for (size_t j = 0; j < no; j++)
            found |= other[j]->rank == set[i]->rank;
        if (!found)
            printf("%s%d", k++ ? ", " : "", (int)set[i]->rank);
    }
}

static void print_torn(lg_file **set, size_t n, const char *side, int json,
                       int *k)
{
    for (size_t i = 0; i < n; i++) {
        if (!set[i]->torn_bytes)
            continue;
        if (json) {
            printf("%s{\"side\": \"%s\", \"file\": ", (*k)++ ? ", " : "",
                   side);
            json_string(stdout, set[i]->path);
            printf(", \"offset\": %zu, \"bytes\": %zu}", set[i]->torn_offset,
                   set[i]->torn_bytes);
        } else {
            fprintf(stderr, "rngsnap " CMD ": %s (%s): a torn last record "
                    "(%zu bytes at byte %zu, a write cut short by a kill) "
                    "was dropped\n", set[i]->path, side, set[i]->torn_bytes,
                    set[i]->torn_offset);
        }
    }
}

int ledger_diff(const char *pa, const char *pb, int json)
{
    char err[1024];
    size_t na = 0, nb = 0;
    lg_file **A = lg_read_set(pa, &na, err, sizeof err);
    lg_file **B = A ? lg_read_set(pb, &nb, err, sizeof err) : NULL;
    if (!A || !B) {
        if (json)
            json_error(stdout, "ledger", A ? pb : pa, err, RNGSNAP_E_IO);
        else
            cli_err(CMD, "%s", err);
        lg_free_set(A, na);
        return CLI_USAGE;
    }
    /* Pair ranks; two plain files pair as they are. */
    rank_diff *d = calloc(na + 1, sizeof *d);
    size_t nd = 0, common_steps = 0;
    int rc = CLI_OK;
    if (!d)
        goto nomem;
    int files = na == 1 && nb == 1;
    for (size_t i = 0; i < na; i++) {
        const lg_file *b = NULL;
        for (size_t j = 0; j < nb; j++)
            if (files || B[j]->rank == A[i]->rank)
                b = B[j];
        if (!b) {
            if (!json)
                fprintf(stderr, "rngsnap " CMD ": rank %d is only in A (%s): "
                        "not compared\n", (int)A[i]->rank, A[i]->path);
            continue;
        }
        int r = diff_rank(A[i], b, &d[nd]);
        if (r == -2) {
            cli_err(CMD, "%s: more than 1024 entries in a step",
                    A[i]->path);
            free(d[nd].steps);
            rc = CLI_USAGE;
            goto out;
        }
        if (r)
            goto nomem;
        common_steps += d[nd].n;
        nd++;
    }
    for (size_t j = 0; j < nb && !files && !json; j++) {
        int found = 0;
        for (size_t i = 0; i < na; i++)
            found |= A[i]->rank == B[j]->rank;
        if (!found)
            fprintf(stderr, "rngsnap " CMD ": rank %d is only in B (%s): not "
                    "compared\n", (int)B[j]->rank, B[j]->path);
    }
    if (common_steps == 0) {
        snprintf(err, sizeof err, "%s and %s have no step in common on any "
                 "rank: nothing to compare", pa, pb);
        if (json)
            json_error(stdout, "ledger", pa, err, RNGSNAP_E_MISMATCH);
        else
            cli_err(CMD, "%s", err);
        rc = CLI_USAGE;
        goto out;
    }
    /* The first step at which any rank differs. */
    int any = 0;
    uint64_t first = 0;
    for (size_t i = 0; i < nd; i++)
        if (d[i].first < d[i].n
            && (!any || d[i].steps[d[i].first].step < first)) {
            first = d[i].steps[d[i].first].step;
            any = 1;
        }
    int k = 0;
    if (json) {
        printf("{\"result\": \"%s\", \"common_steps\": %zu, \"ranks\": %zu, "
               "\"torn\": [", any ? "differ" : "match", common_steps, nd);
        print_torn(A, na, "A", 1, &k);
        print_torn(B, nb, "B", 1, &k);
        printf("], \"only_in_a\": [");
        if (!files)
            print_unpaired(A, na, B, nb);
        printf("], \"only_in_b\": [");
        if (!files)
            print_unpaired(B, nb, A, na);
        printf("]");
        if (any)
            printf(", \"first_step\": %" PRIu64, first);
        printf(", \"differences\": [");
        k = 0;
    } else {
        print_torn(A, na, "A", 0, &k);
        print_torn(B, nb, "B", 0, &k);
        k = 0;
        if (any)
            printf("ledger diff: the runs part at step %" PRIu64 " (A %s, "
                   "B %s)\n", first, pa, pb);
        else
            printf("ledger diff: every one of the %zu common steps matches "
                   "on %zu rank%s\n", common_steps, nd, nd == 1 ? "" : "s");
    }
    for (size_t i = 0; any && i < nd; i++)
        if (d[i].first < d[i].n && d[i].steps[d[i].first].step == first)
            report_rank(&d[i], json, &k);
    if (json)
        printf("]}\n");
    rc = any ? CLI_FAIL : CLI_OK;
    goto out;
nomem:
    cli_err(CMD, "out of memory");
    rc = CLI_USAGE;
out:
    for (size_t i = 0; d && i < nd; i++)
        free(d[i].steps);
    free(d);
    lg_free_set(A, na);
    lg_free_set(B, nb);
    return rc;
}
