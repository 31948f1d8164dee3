/*
 * cmd_verify.c - `rngsnap verify FILE|DIR [--json]`: structure and every
 * checksum of a checkpoint; the first problem is printed with its reason.
 * A multi-rank folder is verified by folder/verify_folder.c.
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
        "usage: rngsnap verify FILE|DIR [--json]\n"
        "\n"
        "Read the whole checkpoint and check its structure, every section\n"
        "checksum and the whole-file checksum, without loading it into any\n"
        "registry (no rng.ini or plugin is needed).\n"
        "\n"
        "DIR, a multi-rank checkpoint folder: its MANIFEST (structure and\n"
        "checksum), then every rank file: it exists, its size and XXH3 are\n"
        "the manifest's, every section checksum, the rank and world size in\n"
        "its header are its slot's, and the app states the manifest records\n"
        "(rank 0's checksum; those identical on all ranks) are there.  Each\n"
        "rank's first problem is printed, naming the rank and the file.  A\n"
        "folder without MANIFEST is not a committed checkpoint (an\n"
        "interrupted save): exit 1, and the rank files it holds are listed.\n"
        "\n"
        "  --json   one JSON object on stdout: {\"file\", \"ok\": true,\n"
        "           \"format_version\", \"library_version\", \"section_count\",\n"
        "           \"file_size\", \"file_checksum\"}, or, when the file is not\n"
        "           sound or cannot be read, {\"file\", \"ok\": false, \"error\",\n"
        "           \"error_code\"} (and the same exit status).  DIR: {\"dir\",\n"
        "           \"ok\", \"format_version\", \"id\", \"created_unix\",\n"
        "           \"created\", \"world_size\", \"forked_from\" (null: none),\n"
        "           \"apps\": [{\"name\", \"checksum\", \"same_on_all_ranks\"}],\n"
        "           \"ranks\": [{\"rank\", \"file\", \"size\", \"checksum\",\n"
        "           \"ok\", \"error\", \"error_code\"}], \"other_files\"} (size\n"
        "           and checksum as the manifest records them; error null\n"
        "           when ok; other_files: rank-* and MANIFEST* files that\n"
        "           are not part of this checkpoint, not checked); a folder\n"
        "           whose MANIFEST is missing or damaged gives {\"file\",\n"
        "           \"ok\": false, \"error\", \"error_code\"} (+ \"stray_files\"\n"
        "           when there is no MANIFEST)\n"
        "\n"
        "Exit status: 0 the file is sound; 1 it is not (truncated, a flipped\n"
        "bit, an unknown format version: the first problem is printed), or\n"
        "DIR has no MANIFEST, a damaged one, or a rank file that fails;\n"
        "2 usage or I/O error (the file or the MANIFEST cannot be read).\n");
}

static void print_json_ok(const char *path, const rngsnap_file *f)
{
    const rngsnap_file_header *h = rngsnap_file_header_get(f);
    int n = 0;
    const char *sep = ",\n  ";
    fputs("{\n  ", stdout);
    json_key(stdout, &n, sep, "file");
    json_string(stdout, path);
    json_key(stdout, &n, sep, "ok");
    json_bool(stdout, 1);
    json_key(stdout, &n, sep, "format_version");
    printf("%" PRIu32, h->format_version);
    json_key(stdout, &n, sep, "library_version");
    json_string(stdout, h->library_version);
    json_key(stdout, &n, sep, "section_count");
    printf("%zu", rngsnap_file_section_count(f));
    json_key(stdout, &n, sep, "file_size");
    printf("%" PRIu64, h->file_size);
    json_key(stdout, &n, sep, "file_checksum");
    printf("\"%016" PRIx64 "\"\n}\n", h->file_checksum);
}

/* Declared in cli.h: the folder form (folder/verify_folder.c) adds its
 * stray files. */
void verify_json_error_open(const char *path, int *n, const char *sep)
{
    int code;
    const char *msg = cli_file_error(&code);
    fputs("{\n  ", stdout);
    json_key(stdout, n, sep, "file");
    json_string(stdout, path);
    json_key(stdout, n, sep, "ok");
    json_bool(stdout, 0);
    json_key(stdout, n, sep, "error");
    json_string(stdout, msg);
    json_key(stdout, n, sep, "error_code");
    json_string(stdout, rngsnap_error_name(code));
}

/* After a failed cli_file_open: the reason as JSON. */
static void print_json_error(const char *path)
{
    int n = 0;
    verify_json_error_open(path, &n, ",\n  ");
    fputs("\n}\n", stdout);
}

int cmd_verify(const cli_globals *g, int argc, char **argv)
{
    (void)g;
    const char *path = NULL;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        const char *unused; /* -c is accepted; no rng.ini is needed */
        int r = cli_common_arg("verify", argc, argv, &i, &unused, help);
        if (r == CLI_ARG_TAKEN)
            continue;
        if (r != CLI_ARG_OWN)
            return r == CLI_ARG_HELP ? CLI_OK : CLI_USAGE;
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if ((argv[i][0] == '-' && argv[i][1] != '\0') || path) {
            cli_err("verify", "unexpected argument '%s' (see --help)",
                    argv[i]);
            return CLI_USAGE;
        } else {
            path = argv[i];
        }
    }
    if (!path) {
        cli_err("verify", "missing FILE (see --help)");
        return CLI_USAGE;
    }
    if (folder_is_dir(path))
        return verify_folder(path, json);
    rngsnap_file *f;
    int rc = cli_file_open("verify", path, &f, 1);
    if (rc != CLI_OK) {
        if (json)
            print_json_error(path);
        return rc;
    }
    const rngsnap_file_header *h = rngsnap_file_header_get(f);
    if (json)
        print_json_ok(path, f);
    else
        printf("%s: ok (format %" PRIu32 ", %zu sections, %" PRIu64
               " bytes, checksum %016" PRIx64 ")\n", path, h->format_version,
               rngsnap_file_section_count(f), h->file_size,
               h->file_checksum);
    rngsnap_file_close(f);
    return CLI_OK;
}
