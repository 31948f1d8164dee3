/*
 * store.c - atomic whole-file write and bounded whole-file or range
 * read of checkpoints.
 *
 * Write: open the folder; remove the stale temporary files of this
 * target (below); a unique temporary file next to the target (so the
 * rename stays inside one filesystem), locked while it is ours; one
 * write() of the whole buffer; fsync; rename into place; fsync of the
 * folder so that the new name itself is durable.  A crash at any point
 * leaves either the old file or the new one at path, never a torn one.
 * Names are resolved relative to the folder's fd.  A synced save of a
 * target in a small folder is 11 system calls: open folder, getdents64
 * twice, create, lock, write, fsync, rename, close, fsync folder, close
 * folder (before the cleaning and the lock it was 8).
 *
 * Two kinds of failure: before the rename nothing was replaced
 * (RNGSNAP_E_IO, the temporary file is removed); after it the new file IS
 * in place and only a later step failed (RNGSNAP_E_DURABILITY).
 *
 * Stale temporary files: a save killed mid-write leaves its
 * ".NAME.tmp-PID-N-NS".  Each save of NAME removes those of NAME that no
 * live save owns: a saver holds an exclusive lock (an open file
 * description lock, F_OFD_SETLK) on its temporary file from just after
 * creating it until the rename, and a temporary is removed only if that
 * lock is free and the file was last written more than TMP_GRACE_S ago
 * (docs/format.md, "Stale temporary files").
 *
 * Read: open (non-blocking), fstat (only a regular file is read; its
 * size sizes the buffer), read until that size is in, close.  A short
 * read() or EINTR means "read more" (NFS, FUSE and Lustre return short
 * reads), never the end of the file.  A load is 4 system calls: open,
 * fstat, read, close.
 *
 * Range read (one rank's image in a node's file): open, fstat (a regular
 * file of exactly the size the manifest records), pread until the range
 * is in, close; the rest of the file is never read.
 */
#include "store.h"

#include <dirent.h>
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
#include "internal.h"
#include "words.h"

/* Longest base name kept in a temporary name, so that it stays within
 * NAME_MAX whatever the target's name. */
#define TMP_BASE_MAX 160

/* A temporary file unwritten for this long, with its lock free, belongs
 * to no live save.  The grace covers the instant between a saver's
 * O_EXCL create and its lock, and savers on filesystems that do not
 * share locks between hosts (NFS mounted with nolock). */
#define TMP_GRACE_S 60

/* Take the exclusive lock of a temporary file without waiting; 0 when
 * taken.  An open file description lock, not flock() or a classic POSIX
 * lock: it conflicts between two opens in one process (two threads
 * saving), is not dropped when the process closes some other descriptor
 * of the file, and NFS sends it to the server as a POSIX lock, which
 * other clients and the server's own processes see. */
static int try_lock(int fd)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    return fcntl(fd, F_OFD_SETLK, &fl);
}


/* Format a message into err (when given) and return code. */
int rs_say(char *err, size_t errlen, int code, const char *fmt, ...)
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
        if (fd >= 0 || errno != EEXIST) {
            /* Ours from now on: a cleaner leaves a locked file alone.
             * A filesystem without locks (ENOLCK, ENOTSUP) still has
             * the grace period; nobody else can hold a lock on a file
             * this new, so no failure here stops the save. */
            if (fd >= 0)
                (void)try_lock(fd);
            return fd;
        }
    }
    errno = EEXIST;
    return -1;
}

/* ---- stale temporary files ------------------------------------------- */

/* name is a temporary file of the target whose (cut) base name is
 * base[0..baselen): exactly ".<base>.tmp-<dec>-<dec>-<hex>", the form
 * open_temp gives, so no file of the user's is ever taken for one. */
static int is_temp_of(const char *name, const char *base, size_t baselen)
{
    static const char *const digits[3] = {"0123456789", "0123456789",
                                          "0123456789abcdef"};
    if (name[0] != '.' || strncmp(name + 1, base, baselen) != 0
        || strncmp(name + 1 + baselen, ".tmp-", 5) != 0)
        return 0;
    const char *q = name + 1 + baselen + 5;
    for (int part = 0; part < 3; part++) {
        size_t n = strspn(q, digits[part]);
        if (n == 0)
            return 0;
        q += n;
        if (part < 2 && *q++ != '-')
            return 0;
    }
    return *q == 0;
}

static int same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Remove temporary file name (in folder dfd, printed as prefix + name)
 * if no live save owns it: a regular file (links are never followed),
 * unwritten for TMP_GRACE_S, whose lock can be taken, and still the same
 * file under that name just before it goes. */
static void remove_if_stale(const struct rngsnap *lctx, int dfd,
                            const char *prefix, int prefix_len,
                            const char *name, time_t now)
{
    struct stat st, fst;
    /* Age first, without opening: a fresh file (every live save's) is
     * never even opened. */
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0
        || !S_ISREG(st.st_mode) || now - st.st_mtime < TMP_GRACE_S)
        return;
    /* O_WRONLY: a write lock needs a file open for writing.
     * O_NONBLOCK: nothing here may wait. */
    int fd = openat(dfd, name,
                    O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY
                        | O_CLOEXEC);
    if (fd < 0)
        return;
    if (fstat(fd, &fst) == 0 && same_file(&st, &fst)
        && try_lock(fd) == 0
        && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0
        && same_file(&st, &fst) && unlinkat(dfd, name, 0) == 0)
        rs_log(lctx, RNGSNAP_LOG_INFO,
               "removed stale temporary file %.*s%s (%lld bytes, unlocked "
               "and unwritten for over %d s: left by a save that did not "
               "finish)",
               prefix_len, prefix, name, (long long)fst.st_size,
               TMP_GRACE_S);
    close(fd);
}

/* Remove the stale temporary files of the target path + base_off from
 * its folder dfd.  Best effort: what cannot be listed or checked stays. */
static void clean_stale_temps(const struct rngsnap *lctx, int dfd,
                              const char *path, size_t base_off)
{
    const char *base = path + base_off;
    size_t baselen = strlen(base);
    if (baselen > TMP_BASE_MAX)
        baselen = TMP_BASE_MAX;
    time_t now = time(NULL);
    /* getdents64 on the folder fd the save holds anyway: no opendir,
     * whose open and fstat would cost two more system calls. */
    _Alignas(struct dirent64) char buf[8192];
    ssize_t n;
    while ((n = getdents64(dfd, buf, sizeof buf)) > 0) {
        for (ssize_t off = 0; off < n;) {
            const struct dirent64 *d = (const struct dirent64 *)(buf + off);
            off += d->d_reclen;
            if ((d->d_type == DT_REG || d->d_type == DT_UNKNOWN)
                && is_temp_of(d->d_name, base, baselen))
                remove_if_stale(lctx, dfd, path, (int)base_off, d->d_name,
                                now);
        }
    }
}

/* ---- write ------------------------------------------------------------ */

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

/* The new file is in place; what failed afterwards is named as what it
 * is ("open", "fsync" or "close" of what). */
static int not_durable(char *err, size_t errlen, const char *path,
                       const char *step, const char *what, int e)
{
    return rs_say(err, errlen, RNGSNAP_E_DURABILITY,
               "%s: the new checkpoint is in place, but %s of %s failed: "
               "%s (that it survives a power loss is not confirmed)",
               path, step, what, strerror(e));
}

/* After the rename: close the still open temporary file (sync mode),
 * make the new name durable, close the folder.  The first failure is
 * reported; each is RNGSNAP_E_DURABILITY. */
static int finish_replaced(const char *path, const char *dir, int fd,
                           int dfd, int dir_errno, int sync, char *err,
                           size_t errlen)
{
    int rc = RNGSNAP_OK;
    char what[PATH_MAX + 16];
    if (fd >= 0 && close(fd) != 0)
        rc = not_durable(err, errlen, path, "close", "the new file", errno);
    snprintf(what, sizeof what, "folder %s", dir);
    if (sync && rc == RNGSNAP_OK && dfd == AT_FDCWD)
        rc = not_durable(err, errlen, path, "open", what, dir_errno);
    /* tried even after a failed close: the name's durability is still
     * worth having */
    if (sync && dfd != AT_FDCWD && fsync_dir(dfd) != 0 && rc == RNGSNAP_OK)
        rc = not_durable(err, errlen, path, "fsync", what, errno);
    if (dfd != AT_FDCWD && close(dfd) != 0 && rc == RNGSNAP_OK)
        rc = not_durable(err, errlen, path, "close", what, errno);
    return rc;
}

/* The folder is opened once, first: its fd serves the listing of stale
 * temporary files, the no-replace check, the temporary file, the
 * no-replace rename (names relative to it: no path walk each time) and
 * the folder fsync, and it is closed before returning (never kept across
 * calls: the folder could be renamed in between).  If it cannot be opened
 * (a folder that may be written but not read), the save goes on by full
 * paths, cleans nothing, and (when syncing) reports the failed open as
 * RNGSNAP_E_DURABILITY at the end.
 *
 * With sync, the temporary file stays open (and locked) until it is in
 * place: fsync already reported any write error.  Without sync, close is
 * where NFS reports write errors, so it comes before the rename; the
 * grace period covers the instant in between. */
int rs_store_write(const struct rngsnap *lctx, const char *path,
                   const void *buf, size_t len, unsigned flags, char *err,
                   size_t errlen)
{
    char dir[PATH_MAX], tmp[PATH_MAX];
    size_t base_off;
    if (!path || !*path || path[strlen(path) - 1] == '/')
        return rs_say(err, errlen, RNGSNAP_E_INVALID,
                   "checkpoint path \"%s\" does not name a file",
                   path ? path : "(null)");
    if (split_path(path, dir, sizeof dir, &base_off) != 0)
        return rs_say(err, errlen, RNGSNAP_E_INVALID,
                   "checkpoint path %s is too long", path);
    int sync = !(flags & RNGSNAP_SAVE_NO_SYNC);
    int dir_errno = 0, fd = -1, rc;
    const char *tname = NULL, *step = NULL;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        dir_errno = errno;
        dfd = AT_FDCWD;
    }
    /* path's name relative to dfd */
    const char *name = dfd == AT_FDCWD ? path : path + base_off;
    struct stat st;
    /* Early answer for the common case; the no-replace rename below is
     * what settles a race with another creator. */
    if (!(flags & RNGSNAP_SAVE_REPLACE)
        && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        rc = rs_say(err, errlen, RNGSNAP_E_EXISTS,
                 "%s exists; pass %s to replace it", path,
                 rs_word(lctx, RS_W_SAVE_REPLACE));
        goto out;
    }
    if (dfd != AT_FDCWD && !(flags & RS_STORE_FRESH_NAME))
        clean_stale_temps(lctx, dfd, path, base_off);

    fd = open_temp(dfd, path, base_off, tmp, sizeof tmp);
    if (fd < 0) {
        rc = rs_say(err, errlen, RNGSNAP_E_IO,
                 "%s: cannot create a temporary file in %s: %s", path, dir,
                 strerror(errno));
        goto out;
    }
    tname = dfd == AT_FDCWD ? tmp : tmp + base_off;
    if (write_all(fd, buf, len) != 0) {
        step = "write";
        goto fail;
    }
    if (sync && fsync(fd) != 0) {
        step = "fsync";
        goto fail;
    }
    if (!sync) {
        int c = close(fd);
        fd = -1;
        if (c != 0) {
            step = "close";
            goto fail;
        }
    }
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
            rc = rs_say(err, errlen, RNGSNAP_E_EXISTS,
                     "%s exists; pass %s to replace it", path,
                     rs_word(lctx, RS_W_SAVE_REPLACE));
            goto out;
        }
        step = "rename";
        goto fail;
    }
    /* Replaced: from here on, no failure may claim otherwise. */
    return finish_replaced(path, dir, fd, dfd, dir_errno, sync, err,
                           errlen);

fail:;
    int saved = errno;
    unlinkat(dfd, tname, 0);
    rc = rs_say(err, errlen, RNGSNAP_E_IO,
             "%s: %s of temporary file %s failed: %s (previous file "
             "untouched)",
             path, step, tmp, strerror(saved));
out:
    /* Nothing was replaced and the first error is already reported: a
     * failing close here would add nothing a caller could act on. */
    if (fd >= 0)
        close(fd);
    if (dfd != AT_FDCWD)
        close(dfd);
    return rc;
}

/* ---- read ------------------------------------------------------------- */

/* One read() that a signal or a non-blocking regular file cannot cut
 * short before any byte: EINTR is retried, and EAGAIN (a filesystem that
 * honours O_NONBLOCK on regular files) turns O_NONBLOCK off first. */
static ssize_t read_some(int fd, uint8_t *p, size_t n)
{
    for (;;) {
        ssize_t r = read(fd, p, n);
        if (r >= 0)
            return r;
        if (errno == EINTR)
            continue;
        int fl = errno == EAGAIN ? fcntl(fd, F_GETFL) : -1;
        if (fl >= 0 && (fl & O_NONBLOCK)
            && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0)
            continue;
        return -1;
    }
}

static const char *file_kind(mode_t m)
{
    return S_ISDIR(m)    ? "a directory"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
                         : "not a plain file";
}

/* Read from fd into *p (capacity *cap, grown up to RS_FMT_FILE_MAX)
 * until want bytes are in (want 0: the size is unknown, read to the end
 * of the file) or the file ends.  Short reads just mean "read more". */
static int read_all(int fd, const char *path, size_t want, uint8_t **p,
                    size_t *cap, size_t *got, char *err, size_t errlen)
{
    while (want == 0 || *got < want) {
        if (*got == *cap) {
            if (*cap >= RS_FMT_FILE_MAX)
                return rs_say(err, errlen, RNGSNAP_E_CORRUPT,
                           "%s: more than the %zu bytes a checkpoint may "
                           "hold",
                           path, (size_t)RS_FMT_FILE_MAX);
            size_t ncap = *cap * 2 < RS_FMT_FILE_MAX ? *cap * 2
                                                     : RS_FMT_FILE_MAX;
            uint8_t *q = realloc(*p, ncap);
            if (!q)
                return rs_say(err, errlen, RNGSNAP_E_NOMEM,
                           "%s: out of memory for %zu bytes", path, ncap);
            *p = q;
            *cap = ncap;
        }
        size_t ask = (want ? want : *cap) - *got;
        ssize_t r = read_some(fd, *p + *got, ask);
        if (r < 0)
            return rs_say(err, errlen, RNGSNAP_E_IO, "%s: read failed: %s",
                       path, strerror(errno));
        if (r == 0)
            break; /* shorter than its size said: the decoder says so */
        *got += (size_t)r;
    }
    return RNGSNAP_OK;
}

/* hint: the size the caller expects, used only where the filesystem
 * reports no size (st_size 0). */
int rs_store_read(const char *path, size_t hint, uint8_t **buf, size_t *len,
                  char *err, size_t errlen)
{
    *buf = NULL;
    *len = 0;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return rs_say(err, errlen, RNGSNAP_E_IO, "%s: cannot open: %s", path,
                   strerror(errno));
    int rc;
    struct stat st;
    uint8_t *p = NULL;
    size_t cap, got = 0;
    /* Before any read: a FIFO with a writer, a device or a directory is
     * refused whatever it would have given. */
    if (fstat(fd, &st) != 0) {
        rc = rs_say(err, errlen, RNGSNAP_E_IO, "%s: cannot stat: %s", path,
                 strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = rs_say(err, errlen, RNGSNAP_E_IO, "%s: not a regular file (%s)",
                 path, file_kind(st.st_mode));
        goto out;
    }
    if ((uint64_t)st.st_size > RS_FMT_FILE_MAX) {
        rc = rs_say(err, errlen, RNGSNAP_E_CORRUPT,
                 "%s: %lld bytes, more than the %zu a checkpoint may hold",
                 path, (long long)st.st_size, (size_t)RS_FMT_FILE_MAX);
        goto out;
    }
    /* The size fstat gave is the file: checkpoints are replaced by
     * rename, never appended to, and the decoder checks what it gets. */
    size_t want = (size_t)st.st_size;
    cap = want ? want : (hint && hint < RS_FMT_FILE_MAX ? hint : 4096);
    p = malloc(cap);
    if (!p) {
        rc = rs_say(err, errlen, RNGSNAP_E_NOMEM,
                 "%s: out of memory for %zu bytes", path, cap);
        goto out;
    }
    rc = read_all(fd, path, want, &p, &cap, &got, err, errlen);
    if (rc == RNGSNAP_OK) {
        *buf = p;
        *len = got;
        p = NULL;
    }
out:
    free(p);
    close(fd);
    return rc;
}

/* A node's file holds many ranks' images: a load reads only its own,
 * with pread, after checking the file is the size the manifest says. */
int rs_store_read_range(const char *path, uint64_t offset, size_t length,
                        uint64_t file_size, uint8_t **buf, char *err,
                        size_t errlen)
{
    *buf = NULL;
    if (length > RS_FMT_FILE_MAX)
        return rs_say(err, errlen, RNGSNAP_E_CORRUPT,
                      "%s: a range of %zu bytes, more than the %zu a "
                      "checkpoint may hold",
                      path, length, (size_t)RS_FMT_FILE_MAX);
    if (offset > (uint64_t)INT64_MAX - length)
        return rs_say(err, errlen, RNGSNAP_E_CORRUPT,
                      "%s: a range at offset %llu is past any file", path,
                      (unsigned long long)offset);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return rs_say(err, errlen, RNGSNAP_E_IO, "%s: cannot open: %s", path,
                      strerror(errno));
    int rc = RNGSNAP_OK;
    struct stat st;
    uint8_t *p = NULL;
    if (fstat(fd, &st) != 0) {
        rc = rs_say(err, errlen, RNGSNAP_E_IO, "%s: cannot stat: %s", path,
                    strerror(errno));
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = rs_say(err, errlen, RNGSNAP_E_IO, "%s: not a regular file (%s)",
                    path, file_kind(st.st_mode));
        goto out;
    }
    if (file_size && (uint64_t)st.st_size != file_size) {
        rc = rs_say(err, errlen, RNGSNAP_E_CORRUPT,
                    "%s: %lld bytes, the manifest records %llu (truncated, "
                    "grown, or another checkpoint's file)",
                    path, (long long)st.st_size,
                    (unsigned long long)file_size);
        goto out;
    }
    if (offset + length > (uint64_t)st.st_size) {
        rc = rs_say(err, errlen, RNGSNAP_E_CORRUPT,
                    "%s: %lld bytes, too short for bytes %llu..%llu",
                    path, (long long)st.st_size,
                    (unsigned long long)offset,
                    (unsigned long long)(offset + length));
        goto out;
    }
    p = malloc(length ? length : 1);
    if (!p) {
        rc = rs_say(err, errlen, RNGSNAP_E_NOMEM,
                    "%s: out of memory for %zu bytes", path, length);
        goto out;
    }
    for (size_t got = 0; got < length;) {
        ssize_t r = pread(fd, p + got, length - got,
                          (off_t)(offset + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = rs_say(err, errlen, RNGSNAP_E_IO, "%s: read failed: %s",
                        path, strerror(errno));
            goto out;
        }
        if (r == 0) { /* shrunk since the fstat */
            rc = rs_say(err, errlen, RNGSNAP_E_CORRUPT,
                        "%s: ended at byte %llu, before the end of bytes "
                        "%llu..%llu",
                        path, (unsigned long long)(offset + got),
                        (unsigned long long)offset,
                        (unsigned long long)(offset + length));
            goto out;
        }
        got += (size_t)r;
    }
    *buf = p;
    p = NULL;
out:
    free(p);
    close(fd);
    return rc;
}
