/*
 * verify_folder.c - `rngsnap verify DIR`: a multi-rank folder's manifest
 * (structure, checksum), then every data file whole (exists, size and
 * XXH3-64 as recorded), then every rank's image against its slot (length
 * and XXH3 as recorded, every section checksum, rank and world size in
 * its header) and the app states the manifest records.  Every file and
 * every rank is checked; the first problem of each is reported.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "cli.h"
#include "folder.h"
#include "json.h"

/* One data file's or one rank's result. */
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
    folder_image_label(m, dir, rank, path, sizeof path);
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

static void check_file(const rngsnap_manifest *m, const char *dir, size_t i,
                       rank_check *c)
{
    char err[8192];
    memset(c, 0, sizeof *c);
    c->code = folder_file_check(m, dir, i, err, sizeof err);
    if (c->code != RNGSNAP_OK)
        c->error = strdup(err);
}

/* A verdict over files and ranks. */
typedef struct verdict {
    const rank_check *files, *ranks;
    int failed_files, failed_ranks;
} verdict;

static void print_text(const char *dir, const rngsnap_manifest *m,
                       const verdict *v)
{
    const rngsnap_manifest_info *in = rngsnap_manifest_info_get(m);
    printf("%s: manifest ok (format %" PRIu32 ", checkpoint %s, world size %"
           PRId32 ", %zu files, %zu app states%s%s)\n", dir,
           in->format_version, in->id, in->world_size, in->file_count,
           in->app_count, in->forked_from[0] ? ", forked from " : "",
           in->forked_from);
    for (size_t i = 0; i < in->file_count; i++) {
        const rngsnap_manifest_file *f = rngsnap_manifest_file_at(m, i);
        char span[64];
        if (v->files[i].code == RNGSNAP_OK)
            printf("  file %s ok (%s, %" PRIu64 " bytes, XXH3-64 %016" PRIx64
                   " as recorded)\n", f->name,
                   folder_rank_span(f, span, sizeof span), f->size,
                   f->checksum);
        else
            printf("  file %s FAILED: %s\n", f->name,
                   problem(&v->files[i]));
    }
    for (int r = 0; r < in->world_size; r++) {
        const rngsnap_manifest_rank *slot = rngsnap_manifest_rank_at(m, r);
        const rank_check *c = &v->ranks[r];
        if (c->code == RNGSNAP_OK)
            printf("  rank %d: %s ok (%zu sections, %" PRIu64 " bytes at "
                   "offset %" PRIu64 ", XXH3-64 %016" PRIx64 " as "
                   "recorded)\n", r, slot->file, c->sections, slot->size,
                   slot->offset, slot->checksum);
        else
            printf("  rank %d: %s FAILED: %s\n", r, slot->file, problem(c));
    }
    char **other = folder_other_names(dir, m);
    for (size_t i = 0; other && other[i]; i++)
        printf("%s%s", i ? ", " : "  not part of this checkpoint (left by "
               "an earlier or interrupted save; not checked): ", other[i]);
    if (other && other[0])
        putchar('\n');
    folder_names_free(other);
    if (v->failed_files || v->failed_ranks)
        printf("%s: %d of %zu files and %d of %" PRId32 " ranks failed\n",
               dir, v->failed_files, in->file_count, v->failed_ranks,
               in->world_size);
    else
        printf("%s: ok (%zu files, %" PRId32 " ranks, every checksum "
               "verified)\n", dir, in->file_count, in->world_size);
}

/* ok, error, error_code of one check. */
static void check_json(const rank_check *c, int *k)
{
    int ok = c->code == RNGSNAP_OK;
    json_key(stdout, k, ", ", "ok");
    json_bool(stdout, ok);
    json_key(stdout, k, ", ", "error");
    json_string(stdout, ok ? NULL : problem(c));
    json_key(stdout, k, ", ", "error_code");
    json_string(stdout, ok ? NULL : rngsnap_error_name(c->code));
}

static void print_json(const char *dir, const rngsnap_manifest *m,
                       const verdict *v)
{
    const rngsnap_manifest_info *in = rngsnap_manifest_info_get(m);
    int n = 0;
    const char *sep = ",\n  ";
    fputs("{\n  ", stdout);
    json_key(stdout, &n, sep, "dir");
    json_string(stdout, dir);
    json_key(stdout, &n, sep, "ok");
    json_bool(stdout, !v->failed_files && !v->failed_ranks);
    folder_manifest_json(m, &n, sep);
    json_key(stdout, &n, sep, "files");
    fputs("[", stdout);
    for (size_t i = 0; i < in->file_count; i++) {
        int k = 0;
        printf("%s\n    {", i ? "," : "");
        folder_file_json(rngsnap_manifest_file_at(m, i), &k, ", ");
        check_json(&v->files[i], &k);
        fputs("}", stdout);
    }
    printf("%s]", in->file_count ? "\n  " : "");
    json_key(stdout, &n, sep, "ranks");
    fputs("[", stdout);
    for (int r = 0; r < in->world_size; r++) {
        int k = 0;
        printf("%s\n    {", r ? "," : "");
        json_key(stdout, &k, ", ", "rank");
        printf("%d", r);
        folder_rank_json(rngsnap_manifest_rank_at(m, r), &k, ", ");
        check_json(&v->ranks[r], &k);
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
    size_t nf = rngsnap_manifest_info_get(m)->file_count;
    rank_check *c = calloc(world > 0 ? (size_t)world : 1, sizeof *c);
    rank_check *fc = calloc(nf ? nf : 1, sizeof *fc);
    if (!c || !fc) {
        cli_err("verify", "%s: out of memory", dir);
        free(c);
        free(fc);
        rngsnap_manifest_close(m);
        return CLI_USAGE;
    }
    verdict v = {fc, c, 0, 0};
    for (size_t i = 0; i < nf; i++) {
        check_file(m, dir, i, &fc[i]);
        if (fc[i].code != RNGSNAP_OK) {
            v.failed_files++;
            cli_err("verify", "%s (%s)", problem(&fc[i]),
                    rngsnap_error_name(fc[i].code));
        }
    }
    for (int r = 0; r < world; r++) {
        check_rank(m, dir, r, &c[r]);
        if (c[r].code != RNGSNAP_OK) {
            v.failed_ranks++;
            cli_err("verify", "%s (%s)", problem(&c[r]),
                    rngsnap_error_name(c[r].code));
        }
    }
    if (json)
        print_json(dir, m, &v);
    else
        print_text(dir, m, &v);
    for (int r = 0; r < world; r++)
        free(c[r].error);
    for (size_t i = 0; i < nf; i++)
        free(fc[i].error);
    free(c);
    free(fc);
    rngsnap_manifest_close(m);
    return v.failed_files || v.failed_ranks ? CLI_FAIL : CLI_OK;
}
