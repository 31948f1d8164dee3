/*
 * store.c - atomic whole-file write and bounded whole-file read of
 * checkpoints.
 *
 * Write: a unique temporary file next to the target (so the rename stays
 * inside one filesystem), one write() of the whole buffer, fsync, rename
 * into place, fsync of the folder so the new name itself is durable.  A
 * crash at any point leaves either the old file or the new one at path,
 * never a torn one.  With the fsyncs a save costs 8 system calls (open
 * folder, create temporary, write, fsync, close, rename, fsync folder,
 * close folder); names are resolved relative to the folder's fd.  Read:
 * open, one read() of the whole file (sized by the caller's hint), close.
 */
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <rngsnap.h>

#include "format.h"

/* Longest base name kept in a temporary name, so that it stays within
 * NAME_MAX whatever the target's name. */
#define TMP_BASE_MAX 160

static int say(char *err, size_t errlen, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static int say(char *err, size_t errlen, int code, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

/* Split path into its folder (written to dir, "." when none) and the
 * offset of its base name. */
static int split_path(const char *path, char *dir, size_t dirlen,
                      size_t *base_off)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(dir, dirlen, ".");
        *base_off = 0;
        return 0;
    }
    size_t n = (size_t)(slash - path);
    if (n == 0)
        n = 1; /* "/name": the folder is "/" */
    if (n >= dirlen)
        return -1;
    memcpy(dir, path, n);
    dir[n] = 0;
    *base_off = (size_t)(slash - path) + 1;
    return 0;
}

/* v in base 10 or 16 at q; returns the end. */
static char *put_num(char *q, unsigned long v, unsigned base)
{
    char d[24];
    int n = 0;
    do {
        d[n++] = "0123456789abcdef"[v % base];
        v /= base;
    } while (v != 0);
    while (n > 0)
        *q++ = d[--n];
    return q;
}

/* Create a new, unique temporary file next to path: ".<base>.tmp-<pid>-
 * <counter>-<nanoseconds>", opened O_EXCL with mode 0666 & ~umask (as a
 * plain open of the target would be; mkstemp forces 0600).  tmp gets the
 * full name; with a folder fd, the file is created by its base name
 * (tmp + base_off) relative to it. */
static int open_temp(int dfd, const char *path, size_t base_off, char *tmp,
                     size_t tmplen)
{
    static atomic_uint counter;
    /* A forked child may share the cached pid and counter with its
     * parent: the nanoseconds differ, and O_EXCL settles any clash. */
    static atomic_int pid;
    const char *base = path + base_off;
    int baselen = (int)strlen(base);
    if (baselen > TMP_BASE_MAX)
        baselen = TMP_BASE_MAX;
    for (int attempt = 0; attempt < 100; attempt++) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        unsigned c = atomic_fetch_add(&counter, 1u);
        if (!atomic_load(&pid)) /* cached: getpid() is a system call */
            atomic_store(&pid, (int)getpid());
        /* "%.*s.%.*s.tmp-%d-%u-%lx" by hand: snprintf was ~2200 of the
         * ~2600 instructions of this function */
        size_t need = base_off + 1 + (size_t)baselen + 5 + 3 * 21 + 1;
        if (need > tmplen) {
            errno = ENAMETOOLONG;
            return -1;
        }
        char *q = tmp;
        memcpy(q, path, base_off);
        q += base_off;
        *q++ = '.';
        memcpy(q, base, (size_t)baselen);
        q += baselen;
        memcpy(q, ".tmp-", 5);
        q = put_num(q + 5, (unsigned long)atomic_load(&pid), 10);
        *q++ = '-';
        q = put_num(q, c, 10);
        *q++ = '-';
        q = put_num(q, (unsigned long)ts.tv_nsec, 16);
        *q = 0;
        int fd = openat(dfd, dfd == AT_FDCWD ? tmp : tmp + base_off,
                        O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    errno = EEXIST;
    return -1;
}

static int write_all(int fd, const uint8_t *p, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (w == 0) {
            errno = EIO;
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Move tmp to path without replacing anything there.  renameat2 does it
 * in one step; filesystems without RENAME_NOREPLACE get link + unlink,
 * which is just as safe against a racing creator. */
static int rename_noreplace(int dfd, const char *tmp, const char *path)
{
    if (renameat2(dfd, tmp, dfd, path, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP)
        return -1;
    if (linkat(dfd, tmp, dfd, path, 0) != 0)
        return -1;
    unlinkat(dfd, tmp, 0);
    return 0;
}

static int fsync_dir(int dfd)
{
    int rc = fsync(dfd);
    /* Some filesystems cannot fsync a folder; nothing more can be done
     * there, and the rename itself already happened. */
    if (rc != 0 && (errno == EINVAL || errno == ENOTSUP))
        rc = 0;
    return rc;
}

/* The folder is opened once, first, when the save syncs: its fd serves
 * the no-replace check, the temporary file, the no-replace rename
 * (names relative to it: no path walk each time) and the folder fsync,
 * and it is closed before returning (never kept across calls: the folder
 * could be renamed in between).  Without sync no folder fd is needed and
 * full paths are used.  If the folder cannot be opened (a folder that
 * may be written but not read), the save goes on by full paths and
 * reports the missing folder fsync at the end, as before. */
int rs_store_write(const char *path, const void *buf, size_t len,
                   unsigned flags, char *err, size_t errlen)
{
    char dir[PATH_MAX], tmp[PATH_MAX];
    size_t base_off;
    if (!path || !*path || path[strlen(path) - 1] == '/')
        return say(err, errlen, RNGSNAP_E_INVALID,
                   "checkpoint path \"%s\" does not name a file",
                   path ? path : "(null)");
    if (split_path(path, dir, sizeof dir, &base_off) != 0)
        return say(err, errlen, RNGSNAP_E_INVALID,
                   "checkpoint path %s is too long", path);
    int sync = !(flags & RNGSNAP_SAVE_NO_SYNC);
    int dfd = AT_FDCWD, dir_errno = 0, fd = -1, rc;
    const char *tname = NULL, *step = NULL;
    if (sync) {
        dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0) {
            dir_errno = errno;
            dfd = AT_FDCWD;
        }
    }
    /* path's name relative to dfd */
    const char *name = dfd == AT_FDCWD ? path : path + base_off;
    struct stat st;
    /* Early answer for the common case; the no-replace rename below is
     * what settles a race with another creator. */
    if (!(flags & RNGSNAP_SAVE_REPLACE) &&
        fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        rc = say(err, errlen, RNGSNAP_E_EXISTS,
                 "%s exists; pass RNGSNAP_SAVE_REPLACE to replace it", path);
        goto out;
    }

    fd = open_temp(dfd, path, base_off, tmp, sizeof tmp);
    if (fd < 0) {
        rc = say(err, errlen, RNGSNAP_E_IO,
                 "%s: cannot create a temporary file in %s: %s", path, dir,
                 strerror(errno));
        goto out;
    }
    tname = dfd == AT_FDCWD ? tmp : tmp + base_off;
    if (write_all(fd, buf, len) != 0) {
        step = "write";
        goto fail_open;
    }
    if (sync && fsync(fd) != 0) {
        step = "fsync";
        goto fail_open;
    }
    if (close(fd) != 0) {
        fd = -1;
        step = "close";
        goto fail;
    }
    fd = -1;
    if (flags & RNGSNAP_SAVE_REPLACE) {
        /* rename() by full paths: as cheap as renameat here save for the
         * path walk, and the store tests inject failures into rename */
        if (rename(tmp, path) != 0) {
            step = "rename";
            goto fail;
        }
    } else if (rename_noreplace(dfd, tname, name) != 0) {
        if (errno == EEXIST) {
            unlinkat(dfd, tname, 0);
            rc = say(err, errlen, RNGSNAP_E_EXISTS,
                     "%s exists; pass RNGSNAP_SAVE_REPLACE to replace it",
                     path);
            goto out;
        }
        step = "rename";
        goto fail;
    }
    rc = RNGSNAP_OK;
    if (sync && dfd != AT_FDCWD && fsync_dir(dfd) != 0)
        dir_errno = errno;
    if (sync && dir_errno != 0)
        /* The new file is complete and in place; only the durability of
         * its name is in doubt, and nothing is left to clean up. */
        rc = say(err, errlen, RNGSNAP_E_IO,
                 "%s: saved, but fsync of folder %s failed: %s", path, dir,
                 strerror(dir_errno));
    goto out;

fail_open:;
    int saved = errno;
    close(fd);
    errno = saved;
fail:
    saved = errno;
    unlinkat(dfd, tname, 0);
    rc = say(err, errlen, RNGSNAP_E_IO,
             "%s: %s of temporary file %s failed: %s (previous file "
             "untouched)",
             path, step, tmp, strerror(saved));
out:
    if (dfd != AT_FDCWD)
        close(dfd);
    return rc;
}

/* One read(), retried only when interrupted before any byte. */
static ssize_t read_once(int fd, uint8_t *p, size_t n)
{
    ssize_t r;
    do
        r = read(fd, p, n);
    while (r < 0 && errno == EINTR);
    return r;
}

int rs_store_read(const char *path, size_t hint, uint8_t **buf, size_t *len,
                  char *err, size_t errlen)
{
    *buf = NULL;
    *len = 0;
    /* O_NONBLOCK: a FIFO at path must not hang the caller. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return say(err, errlen, RNGSNAP_E_IO, "%s: cannot open: %s", path,
                   strerror(errno));
    int rc = RNGSNAP_OK;
    /* Fast path: the caller's expected size plus one byte.  A regular
     * file's read() returns less than asked only at its end, so a short
     * read is the whole file: open, read, close and nothing else. */
    if (hint == 0 || hint > RS_FMT_FILE_MAX)
        hint = 4096; /* unknown or absurd: start small, measure below */
    size_t cap = hint + 1, got = 0;
    uint8_t *p = malloc(cap);
    if (!p) {
        rc = say(err, errlen, RNGSNAP_E_NOMEM,
                 "%s: out of memory for %zu bytes", path, cap);
        goto out;
    }
    for (;;) {
        ssize_t r = read_once(fd, p + got, cap - got);
        if (r < 0) {
            rc = say(err, errlen, RNGSNAP_E_IO, "%s: read failed: %s", path,
                     strerror(errno));
            goto fail;
        }
        got += (size_t)r;
        /* Short read: end of file, unless nothing came at all, where an
         * empty file and /dev/null or a FIFO must be told apart (a
         * checkpoint is never empty, so this costs a valid load nothing). */
        if (got < cap && got > 0)
            break;
        /* Larger than expected, or empty: ask the file its size and kind,
         * bound it, grow. */
        struct stat st;
        if (fstat(fd, &st) != 0) {
            rc = say(err, errlen, RNGSNAP_E_IO, "%s: cannot stat: %s", path,
                     strerror(errno));
            goto fail;
        }
        if (!S_ISREG(st.st_mode)) {
            rc = say(err, errlen, RNGSNAP_E_IO, "%s: not a regular file",
                     path);
            goto fail;
        }
        if (got == 0)
            break; /* an empty regular file: the decoder says "empty" */
        size_t want = (uint64_t)st.st_size > got ? (size_t)st.st_size : got;
        if (want > RS_FMT_FILE_MAX || cap > RS_FMT_FILE_MAX) {
            rc = say(err, errlen, RNGSNAP_E_CORRUPT,
                     "%s: %lld bytes, more than the %zu a checkpoint may "
                     "hold",
                     path, (long long)st.st_size, (size_t)RS_FMT_FILE_MAX);
            goto fail;
        }
        cap = want > got ? want + 1 : 2 * cap;
        uint8_t *q = realloc(p, cap);
        if (!q) {
            rc = say(err, errlen, RNGSNAP_E_NOMEM,
                     "%s: out of memory for %zu bytes", path, cap);
            goto fail;
        }
        p = q;
    }
    *buf = p;
    *len = got;
    goto out;
fail:
    free(p);
out:
    close(fd);
    return rc;
}
