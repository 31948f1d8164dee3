/*
 * diff_folders.c - `rngsnap diff A B` for two multi-rank folders: rank by
 * rank, each pair of rank files compared as `diff FILE FILE` does (the
 * same functions, diff_files_text/json).  Folders of different world
 * sizes are not compared rank by rank: that is the difference reported.
 * Every file is opened and verified before anything is compared, so a
 * damaged folder is exit 2 and 1 always means "they differ".
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "folder.h"
#include "json.h"

/* Both folders' manifests and every rank file of both. */
typedef struct pair {
    rngsnap_manifest *m[2];
    int32_t world[2];
    rngsnap_file **f[2]; /* world[k] files each, when the sizes agree */
} pair;

static void pair_close(pair *p)
{
    for (int k = 0; k < 2; k++) {
        for (int32_t r = 0; p->f[k] && r < p->world[k]; r++)
            rngsnap_file_close(p->f[k][r]);
        free(p->f[k]);
        rngsnap_manifest_close(p->m[k]);
    }
}

/* Open every rank file of folder k; exit code as cli_file_open's. */
static int open_ranks(pair *p, int k, const char *dir)
{
    char err[8192];
    p->f[k] = calloc(p->world[k] > 0 ? (size_t)p->world[k] : 1,
                     sizeof *p->f[k]);
    if (!p->f[k]) {
        cli_err("diff", "%s: out of memory", dir);
        cli_set_file_error(RNGSNAP_E_NOMEM, "out of memory");
        return CLI_USAGE;
    }
    for (int r = 0; r < p->world[k]; r++) {
        int code = folder_rank_open(p->m[k], dir, r, &p->f[k][r], err,
                                    sizeof err);
        if (code != RNGSNAP_OK) {
            cli_err("diff", "%s: %s (%s)", dir, err,
                    rngsnap_error_name(code));
            cli_set_file_error(code, err);
            return CLI_USAGE;
        }
    }
    return CLI_OK;
}

static int compare_text(const char *const dir[2], const pair *p, int all)
{
    for (int k = 0; k < 2; k++)
        printf("%c: %s (checkpoint %s, world size %" PRId32 ")\n", "AB"[k],
               dir[k], rngsnap_manifest_info_get(p->m[k])->id, p->world[k]);
    if (p->world[0] != p->world[1]) {
        printf("world sizes differ: A %" PRId32 ", B %" PRId32
               " (not compared rank by rank)\n", p->world[0], p->world[1]);
        return CLI_FAIL;
    }
    int ndiff = 0;
    char list[256] = "";
    size_t used = 0;
    int cut = 0;
    for (int r = 0; r < p->world[0]; r++) {
        char pa[4096], pb[4096];
        const char *path[2] = {
            folder_image_label(p->m[0], dir[0], r, pa, sizeof pa),
            folder_image_label(p->m[1], dir[1], r, pb, sizeof pb)};
        rngsnap_file *f[2] = {p->f[0][r], p->f[1][r]};
        printf("\n== rank %d ==\n", r);
        if (diff_files_text(path, f, all) == CLI_OK)
            continue;
        /* The differing ranks, for the closing line (the first few). */
        if (used < sizeof list - 16)
            used += (size_t)snprintf(list + used, sizeof list - used,
                                     "%s%d", ndiff ? ", " : "", r);
        else if (!cut)
            cut = snprintf(list + used, sizeof list - used, ", ...");
        ndiff++;
    }
    if (ndiff)
        printf("\n%d of %" PRId32 " ranks differ: rank%s %s\n", ndiff,
               p->world[0], ndiff > 1 ? "s" : "", list);
    else
        printf("\n0 of %" PRId32 " ranks differ\n", p->world[0]);
    return ndiff ? CLI_FAIL : CLI_OK;
}

static int compare_json(const char *const dir[2], const pair *p, int all)
{
    int n = 0, same_world = p->world[0] == p->world[1];
    const char *sep = ",\n  ";
    fputs("{\n  ", stdout);
    json_key(stdout, &n, sep, "a");
    json_string(stdout, dir[0]);
    json_key(stdout, &n, sep, "b");
    json_string(stdout, dir[1]);
    json_key(stdout, &n, sep, "id");
    fputs("{\"a\": ", stdout);
    json_string(stdout, rngsnap_manifest_info_get(p->m[0])->id);
    fputs(", \"b\": ", stdout);
    json_string(stdout, rngsnap_manifest_info_get(p->m[1])->id);
    fputs("}", stdout);
    json_key(stdout, &n, sep, "world_size");
    printf("{\"a\": %" PRId32 ", \"b\": %" PRId32 "}", p->world[0],
           p->world[1]);
    json_key(stdout, &n, sep, "ranks");
    fputs("[", stdout);
    int *differs = calloc(same_world && p->world[0] > 0
                          ? (size_t)p->world[0] : 1, sizeof *differs);
    int ndiff = 0;
    for (int r = 0; same_world && r < p->world[0]; r++) {
        char pa[4096], pb[4096];
        const char *path[2] = {
            folder_image_label(p->m[0], dir[0], r, pa, sizeof pa),
            folder_image_label(p->m[1], dir[1], r, pb, sizeof pb)};
        rngsnap_file *f[2] = {p->f[0][r], p->f[1][r]};
        printf("%s\n    ", r ? "," : "");
        int d = diff_files_json(path, f, all, "    ") != CLI_OK;
        if (differs)
            differs[r] = d;
        ndiff += d;
    }
    printf("%s]", same_world && p->world[0] ? "\n  " : "");
    json_key(stdout, &n, sep, "differing_ranks");
    fputs("[", stdout);
    for (int r = 0, shown = 0; differs && same_world && r < p->world[0]; r++)
        if (differs[r])
            printf("%s%d", shown++ ? ", " : "", r);
    fputs("]", stdout);
    free(differs);
    json_key(stdout, &n, sep, "identical");
    json_bool(stdout, same_world && !ndiff);
    fputs("\n}\n", stdout);
    return same_world && !ndiff ? CLI_OK : CLI_FAIL;
}

int diff_folders(const char *const dir[2], int all, int json)
{
    pair p = {{NULL, NULL}, {0, 0}, {NULL, NULL}};
    int rc = CLI_OK, k = 0;
    for (; k < 2 && rc == CLI_OK; k++) {
        int why;
        rc = cli_manifest_open("diff", dir[k], &p.m[k], 0, &why);
        if (rc == CLI_OK)
            p.world[k] = rngsnap_manifest_info_get(p.m[k])->world_size;
        else
            rc = CLI_USAGE; /* a damaged folder is 2, as a damaged file */
    }
    for (k = 0; k < 2 && rc == CLI_OK && p.world[0] == p.world[1]; k++)
        rc = open_ranks(&p, k, dir[k]);
    if (rc != CLI_OK) {
        if (json) {
            int code;
            const char *msg = cli_file_error(&code);
            json_error(stdout, "file", dir[k - 1], msg, code);
        }
        pair_close(&p);
        return rc;
    }
    rc = json ? compare_json(dir, &p, all) : compare_text(dir, &p, all);
    pair_close(&p);
    return rc;
}
