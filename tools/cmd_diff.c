/*
 * cmd_diff.c - `rngsnap diff A B [--all] [--json]`: which entries of two
 * checkpoints differ or exist on one side only; for two Philox states of
 * the same (seed, subsequence), how many words apart they are.
 *
 * One walk over the entries (walk()) feeds either the text report or the
 * JSON one, so the two cannot disagree.  Two multi-rank folders are
 * compared rank by rank by folder/diff_folders.c with the same functions.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "folder/folder.h"
#include "json.h"

static void help(void)
{
    printf(
        "usage: rngsnap diff A B [--all] [--json]   (two files or two folders)\n"
        "\n"
        "Compare two checkpoints entry by entry (stream sections by backend,\n"
        "device and stream; app states by name).  For each entry that\n"
        "differs say how: present on one side only, another state format,\n"
        "other contents; for Philox streams with the same seed and\n"
        "subsequence, how many words one is ahead of the other.  Rank and\n"
        "world size are compared too; the creation time is not.\n"
        "\n"
        "A and B multi-rank checkpoint folders: every rank file of both is\n"
        "checked against its MANIFEST first, then rank by rank the files\n"
        "are compared as above (a \"== rank R ==\" line, then the file\n"
        "report), closing with the ranks that differ.  Folders of other\n"
        "world sizes differ (not compared rank by rank).  A folder and a\n"
        "file cannot be compared (usage error).\n"
        "\n"
        "  --all   list identical entries as well\n"
        "  --json  one JSON object on stdout: {\"a\", \"b\", \"identical\",\n"
        "          \"rank\", \"world_size\" ({\"a\", \"b\"} each),\n"
        "          \"header_differs\", \"entries\", \"differing\",\n"
        "          \"sections\": [{\"label\", \"kind\", (\"backend\", \"device\",)\n"
        "          \"name\", \"status\", \"difference\", \"detail\"\n"
        "          (, \"ahead\", \"words\")}]}; a file that cannot be used\n"
        "          gives {\"file\", \"error\", \"error_code\"} (exit 2).\n"
        "          Folders: {\"a\", \"b\", \"id\", \"world_size\" ({\"a\",\n"
        "          \"b\"} each), \"ranks\": [the FILE object of each rank],\n"
        "          \"differing_ranks\": [ranks], \"identical\"}\n"
        "\n"
        "Exit status: 0 identical; 1 they differ (folders: also another\n"
        "world size); 2 usage or I/O error, or a file that is not a sound\n"
        "checkpoint (folders: no MANIFEST, or a MANIFEST or rank file that\n"
        "fails verify).\n");
}

static int same_key(const rngsnap_file_section *a,
                    const rngsnap_file_section *b)
{
    if (a->kind != b->kind || strcmp(a->name, b->name) != 0)
        return 0;
    if (a->kind != RNGSNAP_SECTION_STREAM)
        return 1;
    return a->device == b->device && strcmp(a->backend, b->backend) == 0;
}

static const rngsnap_file_section *find(const rngsnap_file *f,
                                        const rngsnap_file_section *key)
{
    size_t n = rngsnap_file_section_count(f);
    for (size_t i = 0; i < n; i++) {
        const rngsnap_file_section *s = rngsnap_file_section_at(f, i);
        if (same_key(s, key))
            return s;
    }
    return NULL;
}

/* How two sections of the same key compare: data for both reports. */
typedef struct diff_result {
    const char *difference; /* NULL: identical; else state_format,
                               philox_offset, philox_stream, state_size or
                               contents (the JSON "difference")          */
    const char *ahead;      /* philox_offset: "A" or "B"                 */
    uint64_t words;         /* philox_offset: how many words ahead       */
    char detail[512];       /* the text report's words                   */
} diff_result;

/* Two Philox states of one stream: who is ahead and by how much. */
static void compare_philox(const rngsnap_philox *pa, const rngsnap_philox *pb,
                           diff_result *r)
{
    if (pa->seed != pb->seed || pa->subsequence != pb->subsequence) {
        r->difference = "philox_stream";
        snprintf(r->detail, sizeof r->detail, "different Philox streams "
                 "(A: seed 0x%016" PRIx64 " subsequence %" PRIu64 "; B: seed "
                 "0x%016" PRIx64 " subsequence %" PRIu64 ")", pa->seed,
                 pa->subsequence, pb->seed, pb->subsequence);
        return;
    }
    r->difference = "philox_offset";
    r->ahead = pb->offset > pa->offset ? "B" : "A";
    r->words = pb->offset > pa->offset ? pb->offset - pa->offset
                                       : pa->offset - pb->offset;
    snprintf(r->detail, sizeof r->detail, "same Philox stream, %s is %" PRIu64
             " words ahead (offset %" PRIu64 " in A, %" PRIu64 " in B)",
             r->ahead, r->words, pa->offset, pb->offset);
}

/* Compare a and b (same key) into *r; 0 when identical. */
static int compare(const rngsnap_file_section *a,
                   const rngsnap_file_section *b, diff_result *r)
{
    rngsnap_philox pa, pb;
    char fa[64], fb[64];
    memset(r, 0, sizeof *r);
    if (a->state_format != b->state_format) {
        r->difference = "state_format";
        snprintf(r->detail, sizeof r->detail, "state format %s in A, %s in B",
                 cli_format_name(a->state_format, fa, sizeof fa),
                 cli_format_name(b->state_format, fb, sizeof fb));
    } else if (a->state_size == b->state_size
               && memcmp(a->state, b->state, a->state_size) == 0) {
        return 0;
    } else if (a->kind == RNGSNAP_SECTION_STREAM
               && rngsnap_philox_decode(a, &pa) == RNGSNAP_OK
               && rngsnap_philox_decode(b, &pb) == RNGSNAP_OK) {
        compare_philox(&pa, &pb, r);
    } else if (a->state_size != b->state_size) {
        r->difference = "state_size";
        snprintf(r->detail, sizeof r->detail, "state size %zu in A, %zu in B",
                 a->state_size, b->state_size);
    } else {
        r->difference = "contents";
        snprintf(r->detail, sizeof r->detail, "contents differ (%zu bytes)",
                 a->state_size);
    }
    return 1;
}

/* Where an entry was found and how it compares. */
enum { ONLY_A, ONLY_B, DIFFERS, IDENTICAL };
static const char *const status_word[] = {"only_in_a", "only_in_b",
                                          "differs", "identical"};

/* The report being written: text or JSON, and what was counted. */
typedef struct diff_report {
    int json, all;
    const char *ind; /* JSON: put after each newline (nesting) */
    size_t entries, ndiff, shown;
} diff_report;

static void report_text(const rngsnap_file_section *s, int status,
                        const diff_result *r)
{
    char label[512];
    cli_section_label(s, label, sizeof label);
    if (status == DIFFERS)
        printf("  %-32s differs: %s\n", label, r->detail);
    else
        printf("  %-32s %s\n", label, status == ONLY_A ? "only in A"
                                      : status == ONLY_B ? "only in B"
                                                         : "identical");
}

static void report_json(const rngsnap_file_section *s, int status,
                        const diff_result *r, size_t index, const char *ind)
{
    char label[512];
    int n = 0;
    const char *sep = ", ";
    printf("%s\n%s    {", index ? "," : "", ind);
    json_key(stdout, &n, sep, "label");
    json_string(stdout, cli_section_label(s, label, sizeof label));
    json_key(stdout, &n, sep, "kind");
    json_string(stdout, s->kind == RNGSNAP_SECTION_STREAM ? "stream" : "app");
    if (s->kind == RNGSNAP_SECTION_STREAM) {
        json_key(stdout, &n, sep, "backend");
        json_string(stdout, s->backend);
        json_key(stdout, &n, sep, "device");
        printf("%d", s->device);
    }
    json_key(stdout, &n, sep, "name");
    json_string(stdout, s->name);
    json_key(stdout, &n, sep, "status");
    json_string(stdout, status_word[status]);
    json_key(stdout, &n, sep, "difference");
    json_string(stdout, status == DIFFERS ? r->difference : NULL);
    json_key(stdout, &n, sep, "detail");
    json_string(stdout, status == DIFFERS ? r->detail : NULL);
    if (status == DIFFERS && r->ahead) {
        json_key(stdout, &n, sep, "ahead");
        json_string(stdout, r->ahead);
        json_key(stdout, &n, sep, "words");
        printf("%" PRIu64, r->words);
    }
    fputs("}", stdout);
}

/* Count one entry and report it (identical ones only with --all). */
static void report(diff_report *rep, const rngsnap_file_section *s,
                   int status, const diff_result *r)
{
    rep->entries++;
    if (status != IDENTICAL)
        rep->ndiff++;
    else if (!rep->all)
        return;
    if (rep->json)
        report_json(s, status, r, rep->shown, rep->ind);
    else
        report_text(s, status, r);
    rep->shown++;
}

/* Every entry of A, in A's order; then those only in B. */
static void walk(rngsnap_file *const f[2], diff_report *rep)
{
    diff_result r;
    size_t na = rngsnap_file_section_count(f[0]);
    size_t nb = rngsnap_file_section_count(f[1]);
    for (size_t i = 0; i < na; i++) {
        const rngsnap_file_section *a = rngsnap_file_section_at(f[0], i);
        const rngsnap_file_section *b = find(f[1], a);
        if (!b)
            report(rep, a, ONLY_A, NULL);
        else
            report(rep, a, compare(a, b, &r) ? DIFFERS : IDENTICAL, &r);
    }
    for (size_t i = 0; i < nb; i++) {
        const rngsnap_file_section *b = rngsnap_file_section_at(f[1], i);
        if (!find(f[0], b))
            report(rep, b, ONLY_B, NULL);
    }
}

static int header_differs(const rngsnap_file_header *ha,
                          const rngsnap_file_header *hb)
{
    return ha->rank != hb->rank || ha->world_size != hb->world_size;
}

int diff_files_text(const char *const path[2], rngsnap_file *const f[2],
                    int all)
{
    const rngsnap_file_header *ha = rngsnap_file_header_get(f[0]);
    const rngsnap_file_header *hb = rngsnap_file_header_get(f[1]);
    printf("A: %s (%zu sections)\nB: %s (%zu sections)\n", path[0],
           rngsnap_file_section_count(f[0]), path[1],
           rngsnap_file_section_count(f[1]));
    int hdiff = header_differs(ha, hb);
    if (hdiff)
        printf("  rank/world size differ: A %" PRId32 "/%" PRId32 ", B %"
               PRId32 "/%" PRId32 "\n", ha->rank, ha->world_size, hb->rank,
               hb->world_size);
    diff_report rep = {.json = 0, .all = all, .ind = ""};
    walk(f, &rep);
    printf("%zu of %zu entries differ%s\n", rep.ndiff, rep.entries,
           hdiff && !rep.ndiff ? " (headers differ)" : "");
    return hdiff || rep.ndiff ? CLI_FAIL : CLI_OK;
}

int diff_files_json(const char *const path[2], rngsnap_file *const f[2],
                    int all, const char *ind)
{
    const rngsnap_file_header *ha = rngsnap_file_header_get(f[0]);
    const rngsnap_file_header *hb = rngsnap_file_header_get(f[1]);
    int n = 0;
    char sep[80];
    snprintf(sep, sizeof sep, ",\n%s  ", ind);
    printf("{\n%s  ", ind);
    json_key(stdout, &n, sep, "a");
    json_string(stdout, path[0]);
    json_key(stdout, &n, sep, "b");
    json_string(stdout, path[1]);
    json_key(stdout, &n, sep, "rank");
    printf("{\"a\": %" PRId32 ", \"b\": %" PRId32 "}", ha->rank, hb->rank);
    json_key(stdout, &n, sep, "world_size");
    printf("{\"a\": %" PRId32 ", \"b\": %" PRId32 "}", ha->world_size,
           hb->world_size);
    json_key(stdout, &n, sep, "sections");
    fputs("[", stdout);
    diff_report rep = {.json = 1, .all = all, .ind = ind};
    walk(f, &rep);
    if (rep.shown)
        printf("\n%s  ", ind);
    fputs("]", stdout);
    int hdiff = header_differs(ha, hb);
    json_key(stdout, &n, sep, "header_differs");
    json_bool(stdout, hdiff);
    json_key(stdout, &n, sep, "entries");
    printf("%zu", rep.entries);
    json_key(stdout, &n, sep, "differing");
    printf("%zu", rep.ndiff);
    json_key(stdout, &n, sep, "identical");
    json_bool(stdout, !hdiff && !rep.ndiff);
    printf("\n%s}", ind);
    return hdiff || rep.ndiff ? CLI_FAIL : CLI_OK;
}

int cmd_diff(const cli_globals *g, int argc, char **argv)
{
    (void)g;
    const char *path[2] = {NULL, NULL};
    int all = 0, json = 0, np = 0;
    for (int i = 1; i < argc; i++) {
        const char *unused; /* -c is accepted; no rng.ini is needed */
        int r = cli_common_arg("diff", argc, argv, &i, &unused, help);
        if (r == CLI_ARG_TAKEN)
            continue;
        if (r != CLI_ARG_OWN)
            return r == CLI_ARG_HELP ? CLI_OK : CLI_USAGE;
        if (strcmp(argv[i], "--all") == 0) {
            all = 1;
        } else if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if ((argv[i][0] == '-' && argv[i][1] != '\0') || np == 2) {
            cli_err("diff", "unexpected argument '%s' (see --help)", argv[i]);
            return CLI_USAGE;
        } else {
            path[np++] = argv[i];
        }
    }
    if (np != 2) {
        cli_err("diff", "needs two files A and B (see --help)");
        return CLI_USAGE;
    }
    int dirs = folder_is_dir(path[0]) + folder_is_dir(path[1]);
    if (dirs == 2)
        return diff_folders(path, all, json);
    if (dirs == 1) {
        int k = folder_is_dir(path[0]) ? 0 : 1;
        cli_err("diff", "%s is a folder and %s is not: compare two "
                "checkpoint files or two multi-rank folders (see --help)",
                path[k], path[1 - k]);
        return CLI_USAGE;
    }
    rngsnap_file *f[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        int rc = cli_file_open("diff", path[k], &f[k], 0);
        if (rc != CLI_OK) {
            if (json) {
                int code;
                const char *msg = cli_file_error(&code);
                json_error(stdout, "file", path[k], msg, code);
            }
            rngsnap_file_close(f[0]);
            return rc;
        }
    }
    int rc;
    if (json) {
        rc = diff_files_json(path, f, all, "");
        putchar('\n');
    } else {
        rc = diff_files_text(path, f, all);
    }
    rngsnap_file_close(f[0]);
    rngsnap_file_close(f[1]);
    return rc;
}
