/*
 * cmd_diff.c - `rngsnap diff A B`: which entries of two checkpoints
 * differ or exist on one side only; for two Philox states of the same
 * (seed, subsequence), how many words apart they are.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static void help(void)
{
    printf(
        "usage: rngsnap diff A B [--all]\n"
        "\n"
        "Compare two checkpoints entry by entry (stream sections by backend,\n"
        "device and stream; app states by name).  For each entry that\n"
        "differs say how: present on one side only, another state format,\n"
        "other contents; for Philox streams with the same seed and\n"
        "subsequence, how many words one is ahead of the other.  Rank and\n"
        "world size are compared too; the creation time is not.\n"
        "\n"
        "  --all   list identical entries as well\n"
        "\n"
        "Exit status: 0 identical; 1 they differ; 2 usage or I/O error, or a\n"
        "file that is not a sound checkpoint.\n");
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

/* Describe how a and b (same key) differ into buf; 0 when identical. */
static int compare(const rngsnap_file_section *a,
                   const rngsnap_file_section *b, char *buf, size_t len)
{
    rngsnap_philox pa, pb;
    char fa[64], fb[64];
    if (a->state_format != b->state_format) {
        snprintf(buf, len, "state format %s in A, %s in B",
                 cli_format_name(a->state_format, fa, sizeof fa),
                 cli_format_name(b->state_format, fb, sizeof fb));
        return 1;
    }
    if (a->state_size == b->state_size
        && memcmp(a->state, b->state, a->state_size) == 0)
        return 0;
    if (a->kind == RNGSNAP_SECTION_STREAM
        && rngsnap_philox_decode(a, &pa) == RNGSNAP_OK
        && rngsnap_philox_decode(b, &pb) == RNGSNAP_OK) {
        if (pa.seed == pb.seed && pa.subsequence == pb.subsequence) {
            const char *who = pb.offset > pa.offset ? "B" : "A";
            uint64_t d = pb.offset > pa.offset ? pb.offset - pa.offset
                                               : pa.offset - pb.offset;
            snprintf(buf, len, "same Philox stream, %s is %" PRIu64
                     " words ahead (offset %" PRIu64 " in A, %" PRIu64
                     " in B)", who, d, pa.offset, pb.offset);
        } else {
            snprintf(buf, len, "different Philox streams (A: seed 0x%016"
                     PRIx64 " subsequence %" PRIu64 "; B: seed 0x%016" PRIx64
                     " subsequence %" PRIu64 ")", pa.seed, pa.subsequence,
                     pb.seed, pb.subsequence);
        }
        return 1;
    }
    if (a->state_size != b->state_size)
        snprintf(buf, len, "state size %zu in A, %zu in B", a->state_size,
                 b->state_size);
    else
        snprintf(buf, len, "contents differ (%zu bytes)", a->state_size);
    return 1;
}

int cmd_diff(const cli_globals *g, int argc, char **argv)
{
    (void)g;
    const char *path[2] = {NULL, NULL};
    int all = 0, np = 0;
    for (int i = 1; i < argc; i++) {
        const char *unused; /* -c is accepted; no rng.ini is needed */
        int r = cli_common_arg("diff", argc, argv, &i, &unused, help);
        if (r == CLI_ARG_TAKEN)
            continue;
        if (r != CLI_ARG_OWN)
            return r == CLI_ARG_HELP ? CLI_OK : CLI_USAGE;
        if (strcmp(argv[i], "--all") == 0) {
            all = 1;
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
    rngsnap_file *f[2] = {NULL, NULL};
    for (int k = 0; k < 2; k++) {
        int rc = cli_file_open("diff", path[k], &f[k], 0);
        if (rc != CLI_OK) {
            rngsnap_file_close(f[0]);
            return rc;
        }
    }

    const rngsnap_file_header *ha = rngsnap_file_header_get(f[0]);
    const rngsnap_file_header *hb = rngsnap_file_header_get(f[1]);
    size_t na = rngsnap_file_section_count(f[0]);
    size_t nb = rngsnap_file_section_count(f[1]);
    printf("A: %s (%zu sections)\nB: %s (%zu sections)\n", path[0], na,
           path[1], nb);
    int differ = 0;
    size_t entries = 0, ndiff = 0;
    if (ha->rank != hb->rank || ha->world_size != hb->world_size) {
        printf("  rank/world size differ: A %" PRId32 "/%" PRId32 ", B %"
               PRId32 "/%" PRId32 "\n", ha->rank, ha->world_size, hb->rank,
               hb->world_size);
        differ = 1;
    }

    char label[512], why[512];
    /* Every entry of A, in A's order; then those only in B. */
    for (size_t i = 0; i < na; i++) {
        const rngsnap_file_section *a = rngsnap_file_section_at(f[0], i);
        const rngsnap_file_section *b = find(f[1], a);
        cli_section_label(a, label, sizeof label);
        entries++;
        if (!b) {
            printf("  %-32s only in A\n", label);
            ndiff++;
        } else if (compare(a, b, why, sizeof why)) {
            printf("  %-32s differs: %s\n", label, why);
            ndiff++;
        } else if (all) {
            printf("  %-32s identical\n", label);
        }
    }
    for (size_t i = 0; i < nb; i++) {
        const rngsnap_file_section *b = rngsnap_file_section_at(f[1], i);
        if (find(f[0], b))
            continue;
        entries++;
        ndiff++;
        printf("  %-32s only in B\n",
               cli_section_label(b, label, sizeof label));
    }
    if (ndiff)
        differ = 1;
    printf("%zu of %zu entries differ%s\n", ndiff, entries,
           differ && !ndiff ? " (headers differ)" : "");
    rngsnap_file_close(f[0]);
    rngsnap_file_close(f[1]);
    return differ ? CLI_FAIL : CLI_OK;
}
