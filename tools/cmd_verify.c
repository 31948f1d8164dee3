/*
 * cmd_verify.c - `rngsnap verify FILE`: structure and every checksum of a
 * checkpoint; the first problem is printed with its reason.
 */
#include <inttypes.h>
#include <stdio.h>

#include "cli.h"

static void help(void)
{
    printf(
        "usage: rngsnap verify FILE\n"
        "\n"
        "Read the whole checkpoint and check its structure, every section\n"
        "checksum and the whole-file checksum, without loading it into any\n"
        "registry (no rng.ini or plugin is needed).\n"
        "\n"
        "Exit status: 0 the file is sound; 1 it is not (truncated, a flipped\n"
        "bit, an unknown format version: the first problem is printed);\n"
        "2 usage or I/O error (the file cannot be read).\n");
}

int cmd_verify(const cli_globals *g, int argc, char **argv)
{
    (void)g;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *unused; /* -c is accepted; no rng.ini is needed */
        int r = cli_common_arg("verify", argc, argv, &i, &unused, help);
        if (r == CLI_ARG_TAKEN)
            continue;
        if (r != CLI_ARG_OWN)
            return r == CLI_ARG_HELP ? CLI_OK : CLI_USAGE;
        if ((argv[i][0] == '-' && argv[i][1] != '\0') || path) {
            cli_err("verify", "unexpected argument '%s' (see --help)",
                    argv[i]);
            return CLI_USAGE;
        }
        path = argv[i];
    }
    if (!path) {
        cli_err("verify", "missing FILE (see --help)");
        return CLI_USAGE;
    }
    rngsnap_file *f;
    int rc = cli_file_open("verify", path, &f, 1);
    if (rc != CLI_OK)
        return rc;
    const rngsnap_file_header *h = rngsnap_file_header_get(f);
    printf("%s: ok (format %" PRIu32 ", %zu sections, %" PRIu64
           " bytes, checksum %016" PRIx64 ")\n", path, h->format_version,
           rngsnap_file_section_count(f), h->file_size, h->file_checksum);
    rngsnap_file_close(f);
    return CLI_OK;
}
