/*
 * verify_folder.c - `rngsnap verify DIR`: a multi-rank folder's manifest
 * (structure, checksum), then every rank file against its slot (exists,
 * size and XXH3 as recorded, every section checksum, rank and world size
 * in its header) and the app states the manifest records.  Every rank is
 * checked; the first problem of each is reported.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "cli.h"
#include "folder.h"
#include "json.h"

/* One rank's result. */
typedef struct rank_check {
    int code;          /* RNGSNAP_OK or the first problem's code */
    char *error;       /* the first problem, naming rank and file
                          (malloc'd, failed ranks only: a world of
                          10^6 ranks costs 24 bytes each)          */
    size_t sections;
} rank_check;

/* The manifest's app records against the rank file's app sections: rank
 * 0's bytes have the recorded checksum, and a state recorded identical on
 * all ranks has the same bytes here.  RNGSNAP_OK when they agree, else
 * RNGSNAP_E_CORRUPT with the reason in err. */
static int check_apps(const rngsnap_manifest *m, const rngsnap_file *f,
                      int rank, const char *path, char *err, size_t errlen)
{
    size_t na = rngsnap_manifest_info_get(m)->app_count;
    size_t ns = rngsnap_file_section_count(f);
    for (size_t i = 0; i < na; i++) {
        const rngsnap_manifest_app *a = rngsnap_manifest_app_at(m, i);
        if (rank != 0 && !a->same_on_all_ranks)
            continue;
        const rngsnap_file_section *s = NULL;
        for (size_t k = 0; k < ns && !s; k++) {
            const rngsnap_file_section *t = rngsnap_file_section_at(f, k);
            if (t->kind == RNGSNAP_SECTION_APP && strcmp(t->name, a->name) == 0)
                s = t;
        }
        uint64_t h = s ? XXH3_64bits(s->state, s->state_size) : 0;
        if (s && h == a->checksum)
            continue;
        snprintf(err, errlen, "rank %d: %s: app state '%s' %s "
                 "(the manifest records %016" PRIx64 "%s)", rank, path,
                 a->name, s ? "has other bytes than the manifest records"
                            : "is missing", a->checksum,
                 rank ? ", identical on all ranks" : " for rank 0");
        return RNGSNAP_E_CORRUPT;
    }
    return RNGSNAP_OK;
}

static void check_rank(const rngsnap_manifest *m, const char *dir, int rank,
                       rank_check *c)
{
    rngsnap_file *f;
    char path[4096], err[8192];
    memset(c, 0, sizeof *c);
    folder_rank_path(m, dir, rank, path, sizeof path);
    c->code = folder_rank_open(m, dir, rank, &f, err, sizeof err);
    if (c->code == RNGSNAP_OK) {
        c->sections = rngsnap_file_section_count(f);
        c->code = check_apps(m, f, rank, path, err, sizeof err);
        rngsnap_file_close(f);
    }
    if (c->code != RNGSNAP_OK)
        c->error = strdup(err); /* NULL: printed as "out of memory" */
}

static const char *problem(const rank_check *c)
{
    return c->error ? c->error : "(out of memory for the message)";
}

static void print_text(const char *dir, const rngsnap_manifest *m,
                       const rank_check *c, int failed)
{
    const rngsnap_manifest_info *in = rngsnap_manifest_info_get(m);
    printf("%s: manifest ok (checkpoint %s, world size %" PRId32
           ", %zu app states%s%s)\n", dir, in->id, in->world_size,
           in->app_count, in->forked_from[0] ? ", forked from " : "",
           in->forked_from);
    for (int r = 0; r < in->world_size; r++) {
        const rngsnap_manifest_rank *slot = rngsnap_manifest_rank_at(m, r);
        if (c[r].code == RNGSNAP_OK)
            printf("  rank %d: %s ok (%zu sections, %" PRIu64 " bytes, "
                   "XXH3-64 %016" PRIx64 " as recorded)\n", r, slot->file,
                   c[r].sections, slot->size, slot->checksum);
        else
            printf("  rank %d: %s FAILED: %s\n", r, slot->file,
                   problem(&c[r]));
    }
    char **other = folder_other_names(dir, m);
    for (size_t i = 0; other && other[i]; i++)
        printf("%s%s", i ? ", " : "  not part of this checkpoint (left by "
               "an earlier or interrupted save; not checked): ", other[i]);
    if (other && other[0])
        putchar('\n');
    folder_names_free(other);
    if (failed)
        printf("%s: %d of %" PRId32 " rank files failed\n", dir, failed,
               in->world_size);
    else
        printf("%s: ok (%" PRId32 " rank files, every checksum verified)\n",
               dir, in->world_size);
}

static void print_json(const char *dir, const rngsnap_manifest *m,
                       const rank_check *c, int failed)
{
    const rngsnap_manifest_info *in = rngsnap_manifest_info_get(m);
    int n = 0;
    const char *sep = ",\n  ";
    fputs("{\n  ", stdout);
    json_key(stdout, &n, sep, "dir");
    json_string(stdout, dir);
    json_key(stdout, &n, sep, "ok");
    json_bool(stdout, !failed);
    folder_manifest_json(m, &n, sep);
    json_key(stdout, &n, sep, "ranks");
    fputs("[", stdout);
    for (int r = 0; r < in->world_size; r++) {
        const rngsnap_manifest_rank *slot = rngsnap_manifest_rank_at(m, r);
        int k = 0, ok = c[r].code == RNGSNAP_OK;
        printf("%s\n    {", r ? "," : "");
        json_key(stdout, &k, ", ", "rank");
        printf("%d", r);
        json_key(stdout, &k, ", ", "file");
        json_string(stdout, slot->file);
        json_key(stdout, &k, ", ", "size");
        printf("%" PRIu64, slot->size);
        json_key(stdout, &k, ", ", "checksum");
        printf("\"%016" PRIx64 "\"", slot->checksum);
        json_key(stdout, &k, ", ", "ok");
        json_bool(stdout, ok);
        json_key(stdout, &k, ", ", "error");
        json_string(stdout, ok ? NULL : problem(&c[r]));
        json_key(stdout, &k, ", ", "error_code");
        json_string(stdout, ok ? NULL : rngsnap_error_name(c[r].code));
        fputs("}", stdout);
    }
    printf("%s]", in->world_size ? "\n  " : "");
    char **other = folder_other_names(dir, m);
    json_key(stdout, &n, sep, "other_files");
    fputs("[", stdout);
    for (size_t i = 0; other && other[i]; i++) {
        fputs(i ? ", " : "", stdout);
        json_string(stdout, other[i]);
    }
    fputs("]\n}\n", stdout);
    folder_names_free(other);
}

/* The manifest could not be used: verify's error object, with the files
 * an uncommitted save left behind. */
static void print_json_error(const char *dir, int why)
{
    int n = 0;
    const char *sep = ",\n  ";
    verify_json_error_open(dir, &n, sep);
    if (why == FOLDER_NO_MANIFEST) {
        char **names = folder_stray_names(dir);
        json_key(stdout, &n, sep, "stray_files");
        fputs("[", stdout);
        for (size_t i = 0; names && names[i]; i++) {
            fputs(i ? ", " : "", stdout);
            json_string(stdout, names[i]);
        }
        fputs("]", stdout);
        folder_names_free(names);
    }
    fputs("\n}\n", stdout);
}

int verify_folder(const char *dir, int json)
{
    rngsnap_manifest *m;
    int why;
    int rc = cli_manifest_open("verify", dir, &m, 1, &why);
    if (rc != CLI_OK) {
        if (json)
            print_json_error(dir, why);
        return rc;
    }
    int32_t world = rngsnap_manifest_info_get(m)->world_size;
    rank_check *c = calloc(world > 0 ? (size_t)world : 1, sizeof *c);
    if (!c) {
        cli_err("verify", "%s: out of memory", dir);
        rngsnap_manifest_close(m);
        return CLI_USAGE;
    }
    int failed = 0;
    for (int r = 0; r < world; r++) {
        check_rank(m, dir, r, &c[r]);
        if (c[r].code != RNGSNAP_OK) {
            failed++;
            cli_err("verify", "%s (%s)", problem(&c[r]),
                    rngsnap_error_name(c[r].code));
        }
    }
    if (json)
        print_json(dir, m, c, failed);
    else
        print_text(dir, m, c, failed);
    for (int r = 0; r < world; r++)
        free(c[r].error);
    free(c);
    rngsnap_manifest_close(m);
    return failed ? CLI_FAIL : CLI_OK;
}
