/*
 * cmd_inspect.c - `rngsnap inspect FILE [--json]`: the header and every
 * section of a checkpoint, as a table or as JSON for scripts.  A
 * multi-rank folder is shown by folder/inspect_folder.c with the same
 * per-file functions (inspect_file_text/json).
 *
 * The file is read with rngsnap_file_open, which verifies the structure
 * and every checksum first: a file that inspect shows has passed verify.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <rngsnap/backend.h>

#include "cli.h"
#include "folder/folder.h"
#include "json.h"

static void help(void)
{
    printf(
        "usage: rngsnap inspect FILE|DIR [--json]\n"
        "\n"
        "Show a checkpoint's header (format and library version, rank and\n"
        "world size, creation time, size, whole-file checksum) and every\n"
        "section: stream sections (backend, device, stream, state format,\n"
        "and seed/subsequence/offset for Philox states) and app-state\n"
        "sections (name, size), each with its checksum.  The file is fully\n"
        "verified first, so every checksum shown is correct.\n"
        "\n"
        "DIR, a multi-rank checkpoint folder: its MANIFEST (checkpoint id,\n"
        "creation time, world size, the checkpoint it was forked from, each\n"
        "app state and whether it is identical on all ranks), then each\n"
        "rank's file as inspect FILE shows it (checked against the manifest\n"
        "first; one that fails is reported in its place).\n"
        "\n"
        "  --json   one JSON object on stdout; 64-bit values are plain JSON\n"
        "           numbers (exact in Python; may exceed 2^53), checksums\n"
        "           are 16-digit hex strings.  A file that cannot be shown\n"
        "           gives {\"file\", \"error\", \"error_code\"} (and the same\n"
        "           exit status).  DIR: {\"dir\", \"format_version\", \"id\",\n"
        "           \"created_unix\", \"created\", \"world_size\",\n"
        "           \"forked_from\" (null: none), \"apps\": [{\"name\",\n"
        "           \"checksum\", \"same_on_all_ranks\"}], \"ranks\": [{\"rank\",\n"
        "           \"file\", \"size\", \"checksum\", \"error\", \"error_code\",\n"
        "           \"inspect\": the FILE object, null when it failed}]}\n"
        "\n"
        "Exit status: 0 shown; 1 the file is corrupt (checksum, truncation,\n"
        "unknown format: the reason is printed), or a rank file of DIR\n"
        "fails or its MANIFEST is damaged; 2 usage or I/O error (also: DIR\n"
        "has no MANIFEST, so there is no committed checkpoint to show).\n");
}

static void hex(FILE *to, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        fprintf(to, "%02x", b[i]);
}

void inspect_file_text(const char *path, const rngsnap_file *f)
{
    const rngsnap_file_header *h = rngsnap_file_header_get(f);
    char when[64], fmt[64], label[512];
    cli_iso_time(h->created_unix, when, sizeof when);
    printf("file:            %s\n", path);
    printf("format version:  %" PRIu32 "\n", h->format_version);
    printf("library:         %s\n", h->library_version);
    printf("rank:            %" PRId32 " of world size %" PRId32 "\n",
           h->rank, h->world_size);
    printf("created:         %s (%" PRId64 ")\n", when, h->created_unix);
    printf("size:            %" PRIu64 " bytes\n", h->file_size);
    printf("file checksum:   %016" PRIx64 " (ok)\n", h->file_checksum);
    printf("sections:        %" PRIu32 "\n\n", h->section_count);

    printf("%4s  %-6s  %-28s %-16s %5s  %-16s  %s\n", "#", "KIND", "ENTRY",
           "STATE FORMAT", "BYTES", "CHECKSUM", "STATE");
    size_t n = rngsnap_file_section_count(f);
    for (size_t i = 0; i < n; i++) {
        const rngsnap_file_section *s = rngsnap_file_section_at(f, i);
        rngsnap_philox ph;
        int is_stream = s->kind == RNGSNAP_SECTION_STREAM;
        printf("%4zu  %-6s  %-28s %-16s %5zu  %016" PRIx64 "  ", i,
               is_stream ? "stream" : "app",
               cli_section_label(s, label, sizeof label),
               is_stream ? cli_format_name(s->state_format, fmt, sizeof fmt)
                         : "-",
               s->state_size, s->checksum);
        if (is_stream && rngsnap_philox_decode(s, &ph) == RNGSNAP_OK)
            printf("seed=0x%016" PRIx64 " subsequence=%" PRIu64
                   " offset=%" PRIu64, ph.seed, ph.subsequence, ph.offset);
        else if (s->state_size <= 32)
            hex(stdout, s->state, s->state_size);
        else
            printf("%zu bytes", s->state_size);
        printf("\n");
    }
}

void inspect_file_json(const char *path, const rngsnap_file *f,
                       const char *ind)
{
    const rngsnap_file_header *h = rngsnap_file_header_get(f);
    char when[64], fmt[64];
    cli_iso_time(h->created_unix, when, sizeof when);
    printf("{\n%s  \"file\": ", ind);
    json_string(stdout, path);
    printf(",\n%s  \"header\": {\n", ind);
    printf("%s    \"format_version\": %" PRIu32 ",\n", ind,
           h->format_version);
    printf("%s    \"library_version\": ", ind);
    json_string(stdout, h->library_version);
    printf(",\n%s    \"rank\": %" PRId32 ",\n", ind, h->rank);
    printf("%s    \"world_size\": %" PRId32 ",\n", ind, h->world_size);
    printf("%s    \"created_unix\": %" PRId64 ",\n", ind, h->created_unix);
    printf("%s    \"created\": ", ind);
    json_string(stdout, when);
    printf(",\n%s    \"file_size\": %" PRIu64 ",\n", ind, h->file_size);
    printf("%s    \"file_checksum\": \"%016" PRIx64 "\",\n", ind,
           h->file_checksum);
    printf("%s    \"checksum_ok\": true,\n", ind);
    printf("%s    \"section_count\": %" PRIu32 "\n%s  },\n", ind,
           h->section_count, ind);
    printf("%s  \"sections\": [", ind);
    size_t n = rngsnap_file_section_count(f);
    for (size_t i = 0; i < n; i++) {
        const rngsnap_file_section *s = rngsnap_file_section_at(f, i);
        int is_stream = s->kind == RNGSNAP_SECTION_STREAM;
        rngsnap_philox ph;
        printf("%s\n%s    {\"index\": %zu, \"kind\": \"%s\", ",
               i ? "," : "", ind, i, is_stream ? "stream" : "app");
        if (is_stream) {
            printf("\"backend\": ");
            json_string(stdout, s->backend);
            printf(", \"device\": %d, ", s->device);
        }
        printf("\"name\": ");
        json_string(stdout, s->name);
        if (is_stream) {
            printf(", \"state_format\": \"0x%08" PRIx32 "\", "
                   "\"state_format_name\": ", s->state_format);
            json_string(stdout,
                        cli_format_name(s->state_format, fmt, sizeof fmt));
        }
        printf(", \"state_size\": %zu, \"checksum\": \"%016" PRIx64
               "\", \"checksum_ok\": true", s->state_size, s->checksum);
        if (is_stream && rngsnap_philox_decode(s, &ph) == RNGSNAP_OK)
            printf(", \"philox\": {\"seed\": %" PRIu64
                   ", \"subsequence\": %" PRIu64 ", \"offset\": %" PRIu64 "}",
                   ph.seed, ph.subsequence, ph.offset);
        if (s->state_size <= 64) {
            printf(", \"state_hex\": \"");
            hex(stdout, s->state, s->state_size);
            printf("\"");
        }
        printf("}");
    }
    if (n)
        printf("\n%s  ", ind);
    printf("]\n%s}", ind);
}

int cmd_inspect(const cli_globals *g, int argc, char **argv)
{
    (void)g;
    const char *path = NULL;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        const char *unused; /* -c is accepted; no rng.ini is needed */
        int r = cli_common_arg("inspect", argc, argv, &i, &unused, help);
        if (r == CLI_ARG_TAKEN)
            continue;
        if (r != CLI_ARG_OWN)
            return r == CLI_ARG_HELP ? CLI_OK : CLI_USAGE;
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            cli_err("inspect", "unknown option '%s' (see --help)", argv[i]);
            return CLI_USAGE;
        } else if (!path) {
            path = argv[i];
        } else {
            cli_err("inspect", "one FILE only (see --help)");
            return CLI_USAGE;
        }
    }
    if (!path) {
        cli_err("inspect", "missing FILE (see --help)");
        return CLI_USAGE;
    }
    if (folder_is_dir(path))
        return inspect_folder(path, json);
    rngsnap_file *f;
    int rc = cli_file_open("inspect", path, &f, 1);
    if (rc != CLI_OK) {
        if (json) {
            int code;
            const char *msg = cli_file_error(&code);
            json_error(stdout, "file", path, msg, code);
        }
        return rc;
    }
    if (json) {
        inspect_file_json(path, f, "");
        putchar('\n');
    } else {
        inspect_file_text(path, f);
    }
    rngsnap_file_close(f);
    return CLI_OK;
}
