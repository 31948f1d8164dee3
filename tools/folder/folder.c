/*
 * folder.c - what verify, inspect and diff share about multi-rank
 * folders: telling a folder from a file, opening the manifest with a
 * clear message (a folder without MANIFEST is an uncommitted save, not a
 * damaged checkpoint), checking a data file whole, opening one rank's
 * image against its slot, and showing the manifest's fields.  A folder's
 * data files are one per node (node-NNNNN, images end to end) or one per
 * rank (rank-NNNNN, and every version-1 folder).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <xxhash.h>

#include "cli.h"
#include "folder.h"
#include "json.h"

int folder_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char **folder_stray_names(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        /* A save's temporaries are ".NAME.tmp-..." (core/store.c). */
        const char *name = e->d_name + (e->d_name[0] == '.');
        if (strncmp(name, "rank-", 5) != 0 && strncmp(name, "node-", 5) != 0
            && strncmp(name, FOLDER_MANIFEST, strlen(FOLDER_MANIFEST)) != 0)
            continue;
        if (n + 2 > cap) {
            size_t nc = cap ? 2 * cap : 16;
            char **p = realloc(names, nc * sizeof *p);
            if (!p)
                break;
            names = p;
            cap = nc;
        }
        if (!(names[n] = strdup(e->d_name)))
            break;
        names[++n] = NULL;
    }
    closedir(d);
    if (names)
        qsort(names, n, sizeof *names, by_name);
    return names;
}

void folder_names_free(char **names)
{
    for (size_t i = 0; names && names[i]; i++)
        free(names[i]);
    free(names);
}

char **folder_other_names(const char *dir, const rngsnap_manifest *m)
{
    char **names = folder_stray_names(dir);
    size_t k = 0;
    for (size_t i = 0; names && names[i]; i++) {
        const char *n = names[i];
        /* A data file of the manifest is named by its first rank
         * (node-NNNNN or rank-NNNNN): one of its files must bear n. */
        int mine = strcmp(n, FOLDER_MANIFEST) == 0;
        const rngsnap_manifest_file *f;
        for (size_t fi = 0; !mine && (f = rngsnap_manifest_file_at(m, fi));
             fi++)
            mine = strcmp(f->name, n) == 0;
        if (mine)
            free(names[i]);
        else
            names[k++] = names[i];
    }
    if (names)
        names[k] = NULL;
    return names;
}

/* The message for a folder without MANIFEST, with the first few strays. */
static void no_manifest_message(const char *dir, char *msg, size_t len)
{
    int w = snprintf(msg, len, "%s: not a committed multi-rank checkpoint "
                     "(no %s): a save was interrupted or this is not a "
                     "checkpoint folder", dir, FOLDER_MANIFEST);
    char **names = folder_stray_names(dir);
    size_t i = 0;
    for (; names && names[i] && i < 8 && w > 0 && (size_t)w < len; i++)
        w += snprintf(msg + w, len - (size_t)w, "%s%s",
                      i ? ", " : "; stray files of a save: ", names[i]);
    size_t more = 0;
    while (names && names[i + more])
        more++;
    if (more && w > 0 && (size_t)w < len)
        snprintf(msg + w, len - (size_t)w, " and %zu more", more);
    folder_names_free(names);
}

int cli_manifest_open(const char *cmd, const char *dir,
                      rngsnap_manifest **out, int no_manifest_is_check,
                      int *why)
{
    char path[4096], err[8192] = "";
    struct stat st;
    *out = NULL;
    snprintf(path, sizeof path, "%s/%s", dir, FOLDER_MANIFEST);
    int rc;
    /* Only a MANIFEST that is not there at all means "not committed";
     * one that cannot be read is an I/O error like any other. */
    if (stat(path, &st) != 0 && errno == ENOENT) {
        no_manifest_message(dir, err, sizeof err);
        rc = RNGSNAP_E_IO;
        *why = FOLDER_NO_MANIFEST;
    } else {
        rc = rngsnap_manifest_open(dir, out, err, sizeof err);
        if (rc == RNGSNAP_OK) {
            *why = FOLDER_OPENED;
            return CLI_OK;
        }
        *why = FOLDER_BAD_MANIFEST;
        if (!err[0])
            snprintf(err, sizeof err, "%s: %s", path, rngsnap_strerror(rc));
    }
    cli_set_file_error(rc, err);
    cli_err(cmd, "%s (%s)", err, rngsnap_error_name(rc));
    if (*why == FOLDER_NO_MANIFEST)
        return no_manifest_is_check ? CLI_FAIL : CLI_USAGE;
    return rc == RNGSNAP_E_CORRUPT ? CLI_FAIL : CLI_USAGE;
}

const char *folder_rank_path(const rngsnap_manifest *m, const char *dir,
                             int rank, char *buf, size_t len)
{
    const rngsnap_manifest_rank *r = rngsnap_manifest_rank_at(m, rank);
    snprintf(buf, len, "%s/%s", dir, r && r->file ? r->file : "?");
    return buf;
}

const char *folder_image_label(const rngsnap_manifest *m, const char *dir,
                               int rank, char *buf, size_t len)
{
    const rngsnap_manifest_rank *r = rngsnap_manifest_rank_at(m, rank);
    const rngsnap_manifest_file *f =
        r ? rngsnap_manifest_file_at(m, r->file_index) : NULL;
    if (f && f->rank_count > 1)
        snprintf(buf, len, "%s/%s (rank %d's image at offset %" PRIu64 ")",
                 dir, f->name, rank, r->offset);
    else
        folder_rank_path(m, dir, rank, buf, len);
    return buf;
}

int folder_file_check(const rngsnap_manifest *m, const char *dir, size_t i,
                      char *err, size_t errlen)
{
    const rngsnap_manifest_file *f = rngsnap_manifest_file_at(m, i);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, f->name);
    FILE *fp = fopen(path, "rb");
    struct stat st;
    if (!fp) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return RNGSNAP_E_IO;
    }
    int rc = RNGSNAP_OK;
    XXH3_state_t *h = XXH3_createState();
    if (!h || XXH3_64bits_reset(h) != XXH_OK) {
        snprintf(err, errlen, "%s: out of memory", path);
        rc = RNGSNAP_E_NOMEM;
    } else if (fstat(fileno(fp), &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s: not a regular file", path);
        rc = RNGSNAP_E_IO;
    } else if ((uint64_t)st.st_size != f->size) {
        snprintf(err, errlen, "%s: %lld bytes, the manifest records %" PRIu64
                 " (truncated, grown, or another checkpoint's file)", path,
                 (long long)st.st_size, f->size);
        rc = RNGSNAP_E_CORRUPT;
    }
    /* In pieces: a node's file holds many ranks' images. */
    static unsigned char piece[1 << 16];
    uint64_t got = 0;
    size_t n;
    while (rc == RNGSNAP_OK && (n = fread(piece, 1, sizeof piece, fp)) > 0) {
        XXH3_64bits_update(h, piece, n);
        got += n;
    }
    if (rc == RNGSNAP_OK && ferror(fp)) {
        snprintf(err, errlen, "%s: read failed: %s", path, strerror(errno));
        rc = RNGSNAP_E_IO;
    } else if (rc == RNGSNAP_OK && got != f->size) {
        snprintf(err, errlen, "%s: %" PRIu64 " bytes read, the manifest "
                 "records %" PRIu64, path, got, f->size);
        rc = RNGSNAP_E_CORRUPT;
    } else if (rc == RNGSNAP_OK && XXH3_64bits_digest(h) != f->checksum) {
        snprintf(err, errlen, "%s: XXH3-64 %016" PRIx64 ", the manifest "
                 "records %016" PRIx64 " (damaged, or another checkpoint's "
                 "file)", path, (uint64_t)XXH3_64bits_digest(h), f->checksum);
        rc = RNGSNAP_E_CORRUPT;
    }
    XXH3_freeState(h);
    fclose(fp);
    return rc;
}

int folder_rank_open(const rngsnap_manifest *m, const char *dir, int rank,
                     rngsnap_file **out, char *err, size_t errlen)
{
    char path[4096], why[2048] = "";
    folder_image_label(m, dir, rank, path, sizeof path);
    const rngsnap_manifest_rank *slot = rngsnap_manifest_rank_at(m, rank);
    const char *file = slot && slot->file ? slot->file : "?";
    int rc = rngsnap_manifest_open_rank(m, rank, out, why, sizeof why);
    if (rc != RNGSNAP_OK) {
        *out = NULL;
        if (!why[0])
            snprintf(why, sizeof why, "%s", rngsnap_strerror(rc));
        /* Name the file unless the library's message already does. */
        if (strstr(why, file))
            snprintf(err, errlen, "rank %d: %s", rank, why);
        else
            snprintf(err, errlen, "rank %d: %s: %s", rank, path, why);
        return rc;
    }
    const rngsnap_file_header *h = rngsnap_file_header_get(*out);
    int32_t world = rngsnap_manifest_info_get(m)->world_size;
    if (h->rank != rank || h->world_size != world) {
        snprintf(err, errlen, "rank %d: %s records rank %" PRId32 " of "
                 "world size %" PRId32 ", but the manifest lists it as rank "
                 "%d of %" PRId32, rank, path, h->rank, h->world_size, rank,
                 world);
        rngsnap_file_close(*out);
        *out = NULL;
        return RNGSNAP_E_MISMATCH;
    }
    return RNGSNAP_OK;
}

const char *folder_rank_span(const rngsnap_manifest_file *f, char *buf,
                             size_t len)
{
    if (f->rank_count == 1)
        snprintf(buf, len, "rank %" PRId32, f->first_rank);
    else
        snprintf(buf, len, "ranks %" PRId32 "-%" PRId32, f->first_rank,
                 f->first_rank + (int32_t)f->rank_count - 1);
    return buf;
}

void folder_manifest_text(const char *dir, const rngsnap_manifest *m)
{
    const rngsnap_manifest_info *in = rngsnap_manifest_info_get(m);
    char when[64];
    cli_iso_time(in->created_unix, when, sizeof when);
    printf("folder:          %s\n", dir);
    printf("manifest:        format %" PRIu32 ", checksum ok\n",
           in->format_version);
    printf("checkpoint id:   %s\n", in->id);
    printf("created:         %s (%" PRId64 ")\n", when, in->created_unix);
    printf("world size:      %" PRId32 "\n", in->world_size);
    printf("forked from:     %s\n", in->forked_from[0] ? in->forked_from
                                                       : "-");
    const rngsnap_manifest_file *f0 = rngsnap_manifest_file_at(m, 0);
    int per_node = f0 && strncmp(f0->name, "node-", 5) == 0;
    printf("files:           %zu, one per %s", in->file_count,
           per_node ? "node" : "rank");
    if (in->emulated_ranks_per_node)
        printf("; emulated nodes (RNGSNAP_RANKS_PER_NODE=%" PRIu32 " at "
               "save, a test aid)", in->emulated_ranks_per_node);
    putchar('\n');
    for (size_t i = 0; i < in->file_count; i++) {
        const rngsnap_manifest_file *f = rngsnap_manifest_file_at(m, i);
        char span[64];
        printf("  %s  %s, %" PRIu64 " bytes, XXH3-64 %016" PRIx64 "\n",
               f->name, folder_rank_span(f, span, sizeof span), f->size,
               f->checksum);
    }
    printf("app states:      %zu\n", in->app_count);
    for (size_t i = 0; i < in->app_count; i++) {
        const rngsnap_manifest_app *a = rngsnap_manifest_app_at(m, i);
        printf("  %-28s %016" PRIx64 "  %s\n", a->name, a->checksum,
               a->same_on_all_ranks ? "identical on all ranks"
                                    : "differs between ranks");
    }
}

void folder_manifest_json(const rngsnap_manifest *m, int *n,
                          const char *sep)
{
    const rngsnap_manifest_info *in = rngsnap_manifest_info_get(m);
    char when[64];
    cli_iso_time(in->created_unix, when, sizeof when);
    json_key(stdout, n, sep, "format_version");
    printf("%" PRIu32, in->format_version);
    json_key(stdout, n, sep, "id");
    json_string(stdout, in->id);
    json_key(stdout, n, sep, "created_unix");
    printf("%" PRId64, in->created_unix);
    json_key(stdout, n, sep, "created");
    json_string(stdout, when);
    json_key(stdout, n, sep, "world_size");
    printf("%" PRId32, in->world_size);
    json_key(stdout, n, sep, "forked_from");
    json_string(stdout, in->forked_from[0] ? in->forked_from : NULL);
    json_key(stdout, n, sep, "emulated_ranks_per_node");
    printf("%" PRIu32, in->emulated_ranks_per_node);
    json_key(stdout, n, sep, "apps");
    fputs("[", stdout);
    for (size_t i = 0; i < in->app_count; i++) {
        const rngsnap_manifest_app *a = rngsnap_manifest_app_at(m, i);
        int k = 0;
        printf("%s{", i ? ", " : "");
        json_key(stdout, &k, ", ", "name");
        json_string(stdout, a->name);
        json_key(stdout, &k, ", ", "checksum");
        printf("\"%016" PRIx64 "\"", a->checksum);
        json_key(stdout, &k, ", ", "same_on_all_ranks");
        json_bool(stdout, a->same_on_all_ranks);
        fputs("}", stdout);
    }
    fputs("]", stdout);
}

void folder_file_json(const rngsnap_manifest_file *f, int *k,
                      const char *sep)
{
    json_key(stdout, k, sep, "name");
    json_string(stdout, f->name);
    json_key(stdout, k, sep, "first_rank");
    printf("%" PRId32, f->first_rank);
    json_key(stdout, k, sep, "rank_count");
    printf("%" PRIu32, f->rank_count);
    json_key(stdout, k, sep, "size");
    printf("%" PRIu64, f->size);
    json_key(stdout, k, sep, "checksum");
    printf("\"%016" PRIx64 "\"", f->checksum);
}

void folder_rank_json(const rngsnap_manifest_rank *r, int *k,
                      const char *sep)
{
    json_key(stdout, k, sep, "file");
    json_string(stdout, r->file);
    json_key(stdout, k, sep, "offset");
    printf("%" PRIu64, r->offset);
    json_key(stdout, k, sep, "size");
    printf("%" PRIu64, r->size);
    json_key(stdout, k, sep, "checksum");
    printf("\"%016" PRIx64 "\"", r->checksum);
    json_key(stdout, k, sep, "coords");
    json_string(stdout, r->coords && r->coords[0] ? r->coords : NULL);
}
