/*
 * cmd_ledger.c - `rngsnap ledger show FILE` and the dispatch of
 * `rngsnap ledger diff A B [--json]` (ledger_diff.c): the divergence
 * ledger's tools (docs/user-guide.md, "Why does my resumed run differ?").
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "ledger_format.h"
#include "ledger_read.h"

static void help(void)
{
    printf(
        "usage: rngsnap ledger show FILE|FOLDER\n"
        "       rngsnap ledger diff A B [--json]\n"
        "\n"
        "A ledger (rngsnap_ledger_open, ctx.ledger() in Python) records,\n"
        "at every step a job marks, the exact position of every stream,\n"
        "a digest of every app state and tracked generator, and the values\n"
        "the job noted (a loss).  One file per rank; A and B are files or\n"
        "folders of per-rank files.\n"
        "\n"
        "show  prints a ledger (a folder: each rank's), record by record.\n"
        "diff  compares two runs (an uninterrupted one and a resumed one)\n"
        "      on the steps both recorded, and names the first step, rank\n"
        "      and each entry where they part: a stream N words ahead or\n"
        "      behind, a re-seeded stream, a state that differs (with the\n"
        "      last step it matched), or 'compute drift, not RNG' when only\n"
        "      noted values differ.  A torn last record (a kill mid-write)\n"
        "      is dropped and reported.\n"
        "\n"
        "Exit status: 0 every common step matches (show: printed); 1 a\n"
        "difference; 2 usage, an unreadable or damaged ledger, or no step\n"
        "in common.\n");
}

static void show_segment(const lg_file *f, const lg_segment *s)
{
    char t[64];
    printf("segment %" PRIu32 " at byte %zu: opened %s%s%s\n", s->number,
           s->offset, cli_iso_time(s->time, t, sizeof t),
           s->flags & RS_LG_F_CONTINUED ? ", continuing the ledger" : "",
           s->flags & RS_LG_F_RESUME ? ", by a resumed (RNGSNAP_RESUME) "
                                       "context" : "");
    (void)f;
}

static void show_one(const lg_file *f)
{
    const char *path = f->path;
    printf("ledger %s: rank %d of %d, format %u, %zu segment%s, %zu step "
           "record%s\n", path, (int)f->rank, (int)f->world_size,
           RS_LG_VERSION, f->nsegs, f->nsegs == 1 ? "" : "s", f->nrecs,
           f->nrecs == 1 ? "" : "s");
    size_t seg = 0;
    const lg_layout *shown = NULL;
    char v[256];
    for (size_t i = 0; i < f->nrecs; i++) {
        const lg_record *r = &f->recs[i];
        while (seg < f->nsegs && f->segs[seg].offset < r->offset)
            show_segment(f, &f->segs[seg++]);
        if (r->layout != shown) {
            shown = r->layout;
            printf("layout: %" PRIu32 " stream%s, %" PRIu32 " app state%s\n",
                   shown->nstreams, shown->nstreams == 1 ? "" : "s",
                   shown->napps, shown->napps == 1 ? "" : "s");
        }
        int again = 0;
        for (size_t j = i + 1; j < f->nrecs && !again; j++)
            again = f->recs[j].step == r->step;
        printf("step %" PRIu64 "%s\n", r->step,
               again ? " (recorded again later: the later record counts)"
                     : "");
        for (uint32_t s = 0; s < shown->nstreams; s++) {
            if (shown->kinds[s] == RS_LG_PHILOX)
                printf("  %-28s offset %" PRIu64 "  key %016" PRIx64 "\n",
                       shown->names[s], lg_stream_a(r, s), lg_stream_b(r, s));
            else
                printf("  %-28s state %016" PRIx64 "\n", shown->names[s],
                       lg_stream_b(r, s));
        }
        for (uint32_t a = 0; a < shown->napps; a++)
            printf("  state %-22s %016" PRIx64 "\n",
                   shown->names[shown->nstreams + a], lg_app(r, a));
        for (size_t n = 0; n < r->nnotes; n++)
            printf("  note %-23s %s\n", r->notes[n].name,
                   lg_note_text(&r->notes[n], v, sizeof v));
    }
    while (seg < f->nsegs)
        show_segment(f, &f->segs[seg++]);
    if (f->torn_bytes)
        printf("torn last record at byte %zu (%zu bytes, a write cut short "
               "by a kill): dropped\n", f->torn_offset, f->torn_bytes);
}

/* A file, or every rank's file of a folder, in rank order. */
static int ledger_show(const char *path)
{
    char err[1024];
    size_t n;
    lg_file **set = lg_read_set(path, &n, err, sizeof err);
    if (!set) {
        cli_err("ledger show", "%s", err);
        return CLI_USAGE;
    }
    for (size_t i = 0; i < n; i++) {
        if (i)
            printf("\n");
        show_one(set[i]);
    }
    lg_free_set(set, n);
    return CLI_OK;
}

int cmd_ledger(const cli_globals *g, int argc, char **argv)
{
    (void)g;
    const char *arg[3] = {NULL, NULL, NULL};
    int json = 0, n = 0;
    for (int i = 1; i < argc; i++) {
        const char *unused; /* -c is accepted; no rng.ini is needed */
        int r = cli_common_arg("ledger", argc, argv, &i, &unused, help);
        if (r == CLI_ARG_TAKEN)
            continue;
        if (r != CLI_ARG_OWN)
            return r == CLI_ARG_HELP ? CLI_OK : CLI_USAGE;
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if ((argv[i][0] == '-' && argv[i][1] != '\0') || n == 3) {
            cli_err("ledger", "unexpected argument '%s' (see --help)",
                    argv[i]);
            return CLI_USAGE;
        } else {
            arg[n++] = argv[i];
        }
    }
    if (n == 2 && strcmp(arg[0], "show") == 0 && !json)
        return ledger_show(arg[1]);
    if (n == 3 && strcmp(arg[0], "diff") == 0)
        return ledger_diff(arg[1], arg[2], json);
    cli_err("ledger", "needs 'show FILE' or 'diff A B [--json]' (see "
            "--help)");
    return CLI_USAGE;
}
