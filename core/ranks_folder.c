/*
 * ranks_folder.c - making a multi-rank checkpoint's folder ready and
 * tidying it after a commit (ranks_folder.h).  File names:
 * docs/format.md, "Multi-rank folders".
 */
#include "ranks_folder.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "context.h"
#include "internal.h"
#include "store.h"
#include "words.h"

/* Stale data files and temporaries older than this belong to no save. */
#define TMP_GRACE_S 60

char *rs_folder_join(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", dir, name);
    return p;
}

/* The id of the manifest a replacing save replaces: after the commit its
 * files are nobody's and go at once.  Unreadable or damaged: its files
 * are left to the age rule of rs_folder_clean. */
static void note_replaced(const char *dir, const char *mpath,
                          char old_hex[2 * RS_MAN_ID_SIZE + 1])
{
    uint8_t *buf;
    size_t len;
    char err[RS_ERRMSG_MAX];
    struct rngsnap_manifest *m;
    if (rs_store_read(mpath, 0, &buf, &len, err, sizeof err) != 0)
        return;
    if (rs_man_decode(buf, len, mpath, dir, &m, err, sizeof err) == 0) {
        memcpy(old_hex, m->info.id, 2 * RS_MAN_ID_SIZE + 1);
        rngsnap_manifest_close(m);
    }
    free(buf);
}

int rs_folder_prepare(struct rngsnap *ctx, const char *op, const char *dir,
                      int replace, uint8_t id[RS_MAN_ID_SIZE],
                      char old_hex[2 * RS_MAN_ID_SIZE + 1])
{
    struct stat st;
    old_hex[0] = 0;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return rs_error(ctx, RNGSNAP_E_IO, "%s %s: cannot create the "
                        "folder: %s", op, dir, strerror(errno));
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return rs_error(ctx, RNGSNAP_E_IO, "%s %s: not a folder", op, dir);
    char *mpath = rs_folder_join(dir, RS_MAN_FILE);
    if (!mpath)
        return rs_error(ctx, RNGSNAP_E_NOMEM, "%s %s: out of memory", op,
                        dir);
    int rc = RNGSNAP_OK;
    if (lstat(mpath, &st) == 0) {
        /* Valid or not, a manifest is someone's commit record. */
        if (!replace)
            rc = rs_error(ctx, RNGSNAP_E_EXISTS,
                          "%s %s: %s exists (a committed checkpoint); pass "
                          "%s to replace it",
                          op, dir, mpath, rs_word(ctx, RS_W_SAVE_REPLACE));
        else
            note_replaced(dir, mpath, old_hex);
    } else if (errno != ENOENT) {
        rc = rs_error(ctx, RNGSNAP_E_IO, "%s %s: cannot stat %s: %s", op,
                      dir, mpath, strerror(errno));
    }
    free(mpath);
    if (!rc && getrandom(id, RS_MAN_ID_SIZE, 0) != (ssize_t)RS_MAN_ID_SIZE)
        rc = rs_error(ctx, RNGSNAP_E_IO, "%s %s: getrandom failed: %s", op,
                      dir, strerror(errno));
    return rc;
}

/* "rank-" or "node-", digits, ".", 32 hex, ".rngsnap": a data file of
 * some checkpoint. */
static int is_data_file(const char *n)
{
    if (strncmp(n, "rank-", 5) != 0 && strncmp(n, "node-", 5) != 0)
        return 0;
    const char *p = n + 5;
    size_t digits = 0;
    while (*p >= '0' && *p <= '9') {
        p++;
        digits++;
    }
    if (digits < 5 || *p++ != '.')
        return 0;
    for (unsigned i = 0; i < 2 * RS_MAN_ID_SIZE; i++, p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return 0;
    return strcmp(p, ".rngsnap") == 0;
}

/* ".rank-....rngsnap.tmp-..." or ".node-....": a data file's temporary. */
static int is_data_temporary(const char *n)
{
    return n[0] == '.'
           && (strncmp(n + 1, "rank-", 5) == 0
               || strncmp(n + 1, "node-", 5) == 0)
           && strstr(n, ".rngsnap.tmp-") != NULL;
}

/* A young data file of another id may be another job's, about to be
 * committed (two jobs in one folder are not supported, but must not end
 * in a manifest naming removed files): only old ones go. */
void rs_folder_clean(struct rngsnap *ctx, const char *op, const char *dir,
                     const char *keep_hex, const char *old_hex)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    time_t now = time(NULL);
    while ((e = readdir(d)) != NULL) {
        const char *n = e->d_name;
        if (strstr(n, keep_hex))
            continue;
        int data = is_data_file(n), stale = 0;
        if (data && old_hex[0] && strstr(n, old_hex))
            stale = 1;
        else if (data || is_data_temporary(n)) {
            struct stat st;
            stale = fstatat(dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) == 0
                    && S_ISREG(st.st_mode)
                    && now - st.st_mtime > TMP_GRACE_S;
        }
        if (stale && unlinkat(dirfd(d), n, 0) == 0)
            rs_log(ctx, RNGSNAP_LOG_INFO,
                   "%s %s: removed %s (not part of committed checkpoint %s)",
                   op, dir, n, keep_hex);
    }
    closedir(d);
}
