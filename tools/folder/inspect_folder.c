/*
 * inspect_folder.c - `rngsnap inspect DIR`: a multi-rank folder's
 * manifest (its data files among it), then each rank's image as `inspect
 * FILE` shows a file (the same functions, inspect_file_text/json).  A
 * rank that cannot be shown is reported in its place; the others are
 * still shown.
 */
#include <inttypes.h>
#include <stdio.h>

#include "cli.h"
#include "folder.h"
#include "json.h"

/* One rank as a member of "ranks": the manifest's slot and the file's
 * own report, or the reason it cannot be shown. */
static int rank_json(const rngsnap_manifest *m, const char *dir, int r)
{
    const rngsnap_manifest_rank *slot = rngsnap_manifest_rank_at(m, r);
    char path[4096], err[8192];
    rngsnap_file *f;
    int code = folder_rank_open(m, dir, r, &f, err, sizeof err);
    int k = 0;
    const char *sep = ",\n      ";
    printf("%s\n    {\n      ", r ? "," : "");
    json_key(stdout, &k, sep, "rank");
    printf("%d", r);
    folder_rank_json(slot, &k, sep);
    json_key(stdout, &k, sep, "error");
    json_string(stdout, code ? err : NULL);
    json_key(stdout, &k, sep, "error_code");
    json_string(stdout, code ? rngsnap_error_name(code) : NULL);
    json_key(stdout, &k, sep, "inspect");
    if (code == RNGSNAP_OK) {
        inspect_file_json(folder_image_label(m, dir, r, path, sizeof path),
                          f, "      ");
        rngsnap_file_close(f);
    } else {
        fputs("null", stdout);
        cli_err("inspect", "%s (%s)", err, rngsnap_error_name(code));
    }
    fputs("\n    }", stdout);
    return code;
}

static int rank_text(const rngsnap_manifest *m, const char *dir, int r)
{
    const rngsnap_manifest_rank *slot = rngsnap_manifest_rank_at(m, r);
    int32_t world = rngsnap_manifest_info_get(m)->world_size;
    char path[4096], err[8192];
    rngsnap_file *f;
    int code = folder_rank_open(m, dir, r, &f, err, sizeof err);
    printf("\n== rank %d of %" PRId32 ": %s (%" PRIu64 " bytes at offset %"
           PRIu64 ", XXH3-64 %016" PRIx64 ") ==\n", r, world, slot->file,
           slot->size, slot->offset, slot->checksum);
    printf("coordinates:     %s\n", slot->coords[0] ? slot->coords : "-");
    if (code != RNGSNAP_OK) {
        printf("FAILED: %s\n", err);
        cli_err("inspect", "%s (%s)", err, rngsnap_error_name(code));
        return code;
    }
    inspect_file_text(folder_image_label(m, dir, r, path, sizeof path), f);
    rngsnap_file_close(f);
    return code;
}

int inspect_folder(const char *dir, int json)
{
    rngsnap_manifest *m;
    int why;
    int rc = cli_manifest_open("inspect", dir, &m, 0, &why);
    if (rc != CLI_OK) {
        if (json) {
            int code;
            const char *msg = cli_file_error(&code);
            json_error(stdout, "file", dir, msg, code);
        }
        return rc;
    }
    int32_t world = rngsnap_manifest_info_get(m)->world_size;
    int failed = 0;
    if (json) {
        int n = 0;
        const char *sep = ",\n  ";
        fputs("{\n  ", stdout);
        json_key(stdout, &n, sep, "dir");
        json_string(stdout, dir);
        folder_manifest_json(m, &n, sep);
        json_key(stdout, &n, sep, "files");
        fputs("[", stdout);
        size_t nf = rngsnap_manifest_info_get(m)->file_count;
        for (size_t i = 0; i < nf; i++) {
            int k = 0;
            printf("%s\n    {", i ? "," : "");
            folder_file_json(rngsnap_manifest_file_at(m, i), &k, ", ");
            fputs("}", stdout);
        }
        printf("%s]", nf ? "\n  " : "");
        json_key(stdout, &n, sep, "ranks");
        fputs("[", stdout);
        for (int r = 0; r < world; r++)
            failed += rank_json(m, dir, r) != RNGSNAP_OK;
        printf("%s]\n}\n", world ? "\n  " : "");
    } else {
        folder_manifest_text(dir, m);
        for (int r = 0; r < world; r++)
            failed += rank_text(m, dir, r) != RNGSNAP_OK;
    }
    rngsnap_manifest_close(m);
    /* As for one file: a rank file that cannot be shown is damage. */
    return failed ? CLI_FAIL : CLI_OK;
}
