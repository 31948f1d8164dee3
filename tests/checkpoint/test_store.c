/*
 * test_store.c - atomic, crash-safe checkpoint files.  fsync, rename,
 * renameat2, write, open, close and read are wrapped (-Wl,--wrap, static
 * core) so that each step can be made to fail or to misbehave: before the
 * rename the previous file must stay intact and no temporary file may
 * remain (RNGSNAP_E_IO); after it the new file is in place
 * (RNGSNAP_E_DURABILITY).  Also: no overwrite without
 * RNGSNAP_SAVE_REPLACE, NO_SYNC really skips the fsyncs, reads survive
 * short reads and EINTR, a FIFO is refused without blocking, and stale
 * temporary files of a target are removed by its next save unless a live
 * save owns them.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "ckpt_test.h"
#include "store.h"

/* ---- wrapped libc calls: fail the n-th call (1-based) when armed ------ */

static int fsync_calls, fsync_fail_at, fsync_errno = EIO;
static int rename_calls, rename_fail_at;
static int renameat2_calls, renameat2_fail_at, renameat2_errno = EIO;
static int write_calls, write_fail_at;
static int write_kill_at;     /* raise SIGKILL at this write (a child)    */
static int write_pause_in = -1, write_pause_out = -1; /* see __wrap_write */
static int open_dir_fail;     /* fail every open of a folder: EACCES      */
static mode_t close_fail_kind; /* S_IFDIR or S_IFREG: fail its next close */
static int read_calls, read_chunk, read_eintr;
static time_t fake_now;       /* when set, the clock time() answers       */

int __real_fsync(int fd);
int __real_rename(const char *a, const char *b);
int __real_renameat2(int, const char *, int, const char *, unsigned);
ssize_t __real_write(int fd, const void *buf, size_t n);
int __real_open64(const char *path, int flags, ...);
int __real_close(int fd);
ssize_t __real_read(int fd, void *buf, size_t n);

int __wrap_fsync(int fd)
{
    if (++fsync_calls == fsync_fail_at) {
        errno = fsync_errno;
        return -1;
    }
    return __real_fsync(fd);
}
int __wrap_rename(const char *a, const char *b)
{
    if (++rename_calls == rename_fail_at) {
        errno = EIO;
        return -1;
    }
    return __real_rename(a, b);
}
int __wrap_renameat2(int da, const char *a, int db, const char *b,
                     unsigned flags)
{
    if (++renameat2_calls == renameat2_fail_at) {
        errno = renameat2_errno;
        return -1;
    }
    return __real_renameat2(da, a, db, b, flags);
}
/* The store opens only the target's folder with open(); with
 * _FILE_OFFSET_BITS=64 the symbol is open64. */
int __wrap_open64(const char *path, int flags, ...)
{
    va_list ap;
    va_start(ap, flags);
    int mode = va_arg(ap, int);
    va_end(ap);
    if (open_dir_fail && (flags & O_DIRECTORY)) {
        errno = EACCES;
        return -1;
    }
    return __real_open64(path, flags, mode);
}
/* A failing close still closes: Linux frees the fd whatever close says. */
int __wrap_close(int fd)
{
    struct stat st;
    if (close_fail_kind && fstat(fd, &st) == 0
        && (st.st_mode & S_IFMT) == close_fail_kind) {
        close_fail_kind = 0;
        __real_close(fd);
        errno = EIO;
        return -1;
    }
    return __real_close(fd);
}
/* Reads of at most read_chunk bytes (0: as asked), and one EINTR first
 * when read_eintr is set: what NFS, FUSE and Lustre may do. */
ssize_t __wrap_read(int fd, void *buf, size_t n)
{
    read_calls++;
    if (read_eintr) {
        read_eintr = 0;
        errno = EINTR;
        return -1;
    }
    if (read_chunk && n > (size_t)read_chunk)
        n = (size_t)read_chunk;
    return __real_read(fd, buf, n);
}
time_t __real_time(time_t *t);

/* The core's clock (the stale-temporary rule), fixed when fake_now is
 * set: the ages the tests give files are then exact, however long the
 * test takes between setting them and saving. */
time_t __wrap_time(time_t *t)
{
    time_t now = fake_now ? fake_now : __real_time(NULL);
    if (t)
        *t = now;
    return now;
}

static const char *race_path; /* created by "another process" on write */
static const char RACER[] = "written by a racing creator";

ssize_t __wrap_write(int fd, const void *buf, size_t n)
{
    if (race_path) {
        ct_write(race_path, RACER, sizeof RACER);
        race_path = NULL;
    }
    if (++write_calls == write_fail_at) {
        errno = ENOSPC;
        return -1;
    }
    if (write_calls == write_kill_at)
        raise(SIGKILL); /* a save killed mid-write */
    if (write_calls == 2 && write_pause_out >= 0) {
        /* A live save, paused mid-write: tell the parent, wait for it. */
        char c = 'w';
        if (__real_write(write_pause_out, &c, 1) != 1
            || __real_read(write_pause_in, &c, 1) < 0)
            _exit(3);
    }
    /* short writes: the store must loop */
    return __real_write(fd, buf, n > 7 ? n / 2 : n);
}

static void reset(void)
{
    fsync_calls = fsync_fail_at = 0;
    rename_calls = rename_fail_at = 0;
    renameat2_calls = renameat2_fail_at = 0;
    write_calls = write_fail_at = write_kill_at = 0;
    write_pause_in = write_pause_out = -1;
    open_dir_fail = 0;
    close_fail_kind = 0;
    read_calls = read_chunk = read_eintr = 0;
    race_path = NULL;
    fake_now = 0;
    fsync_errno = EIO;
    renameat2_errno = EIO;
}

static const char OLD[] = "the previous checkpoint";
static const char NEW[] = "the new checkpoint, a bit longer than the old";

typedef struct fixture {
    const char *dir;
    char path[1024];
} fixture;

static int setup(void **state)
{
    static fixture fx;
    reset();
    fx.dir = ct_setup_dir();
    snprintf(fx.path, sizeof fx.path, "%s/ck.bin", fx.dir);
    ct_write(fx.path, OLD, sizeof OLD);
    *state = &fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    ct_remove_dir(fx->dir);
    return 0;
}

static void assert_old_intact(fixture *fx)
{
    size_t len;
    uint8_t *b = ct_read(fx->path, &len);
    assert_non_null(b);
    assert_int_equal(len, sizeof OLD);
    assert_memory_equal(b, OLD, sizeof OLD);
    free(b);
    int tmp;
    /* plugins/ + ck.bin, nothing else */
    assert_int_equal(ct_count_entries(fx->dir, &tmp), 2);
    assert_false(tmp);
}

static void assert_new(fixture *fx)
{
    size_t len;
    uint8_t *b = ct_read(fx->path, &len);
    assert_non_null(b);
    assert_int_equal(len, sizeof NEW);
    assert_memory_equal(b, NEW, sizeof NEW);
    free(b);
    int tmp;
    assert_int_equal(ct_count_entries(fx->dir, &tmp), 2);
    assert_false(tmp);
}

static int save(fixture *fx, unsigned flags, char *err, size_t errlen)
{
    return rs_store_write(NULL, fx->path, NEW, sizeof NEW, flags, err, errlen);
}

/* The exact message of a failure before the rename: the temporary
 * file's name is random, so compare around it. */
static void assert_failed_before_rename(fixture *fx, const char *err,
                                        const char *step, int e)
{
    char head[1200], tail[200];
    snprintf(head, sizeof head, "%s: %s of temporary file %s/.ck.bin.tmp-",
             fx->path, step, fx->dir);
    snprintf(tail, sizeof tail, " failed: %s (previous file untouched)",
             strerror(e));
    size_t n = strlen(err), t = strlen(tail);
    if (strncmp(err, head, strlen(head)) != 0 || n < t
        || strcmp(err + n - t, tail) != 0)
        fail_msg("unexpected message: %s", err);
}

/* The exact message of a failure after the rename (what: "folder DIR"
 * or "the new file"). */
static void assert_not_durable(fixture *fx, const char *err,
                               const char *step, const char *what, int e)
{
    char want[4096];
    snprintf(want, sizeof want,
             "%s: the new checkpoint is in place, but %s of %s failed: %s "
             "(that it survives a power loss is not confirmed)",
             fx->path, step, what, strerror(e));
    assert_string_equal(err, want);
}

static const char *folder_of(fixture *fx)
{
    static char what[1100];
    snprintf(what, sizeof what, "folder %s", fx->dir);
    return what;
}

static void no_overwrite_without_replace(void **state)
{
    fixture *fx = *state;
    char err[1024];
    assert_int_equal(save(fx, 0, err, sizeof err), RNGSNAP_E_EXISTS);
    assert_non_null(strstr(err, fx->path));
    assert_old_intact(fx);
    assert_int_equal(renameat2_calls + fsync_calls, 0); /* found early */
    assert_int_equal(save(fx, RNGSNAP_SAVE_REPLACE, err, sizeof err), 0);
    assert_new(fx);
    assert_int_equal(fsync_calls, 2); /* file, then folder */
}

static void new_file_without_replace(void **state)
{
    fixture *fx = *state;
    char err[1024];
    unlink(fx->path);
    assert_int_equal(save(fx, 0, err, sizeof err), 0);
    assert_new(fx);
    assert_int_equal(renameat2_calls, 1);
}

/* A filesystem without RENAME_NOREPLACE: link + unlink instead. */
static void noreplace_fallback(void **state)
{
    fixture *fx = *state;
    char err[1024];
    renameat2_errno = EINVAL;
    renameat2_fail_at = 1;
    unlink(fx->path);
    assert_int_equal(save(fx, 0, err, sizeof err), 0);
    assert_new(fx);
    assert_int_equal(renameat2_calls, 1);
}

/* Another process creates the target while we write: the no-replace
 * rename (or its link fallback) must not clobber it. */
static void racing_creator_not_clobbered(void **state)
{
    fixture *fx = *state;
    char err[1024];
    for (int fallback = 0; fallback < 2; fallback++) {
        unlink(fx->path);
        reset();
        race_path = fx->path;
        if (fallback) {
            renameat2_errno = EINVAL;
            renameat2_fail_at = 1;
        }
        assert_int_equal(save(fx, 0, err, sizeof err), RNGSNAP_E_EXISTS);
        assert_int_equal(renameat2_calls, 1);
        size_t len;
        uint8_t *b = ct_read(fx->path, &len);
        assert_int_equal(len, sizeof RACER);
        assert_memory_equal(b, RACER, len);
        free(b);
        int tmp;
        assert_int_equal(ct_count_entries(fx->dir, &tmp), 2);
        assert_false(tmp);
    }
}

static void failing_file_fsync(void **state)
{
    fixture *fx = *state;
    char err[1024];
    fsync_fail_at = 1;
    assert_int_equal(save(fx, RNGSNAP_SAVE_REPLACE, err, sizeof err),
                     RNGSNAP_E_IO);
    assert_failed_before_rename(fx, err, "fsync", EIO);
    assert_old_intact(fx);
}

static void failing_rename(void **state)
{
    fixture *fx = *state;
    char err[1024];
    rename_fail_at = 1;
    assert_int_equal(save(fx, RNGSNAP_SAVE_REPLACE, err, sizeof err),
                     RNGSNAP_E_IO);
    assert_non_null(strstr(err, "rename"));
    assert_old_intact(fx);
    unlink(fx->path);
    renameat2_fail_at = 1;
    assert_int_equal(save(fx, 0, err, sizeof err), RNGSNAP_E_IO);
    int tmp;
    assert_int_equal(ct_count_entries(fx->dir, &tmp), 1);
    assert_false(tmp);
}

static void failing_write(void **state)
{
    fixture *fx = *state;
    char err[1024];
    write_fail_at = 2; /* after a first short write */
    assert_int_equal(save(fx, RNGSNAP_SAVE_REPLACE, err, sizeof err),
                     RNGSNAP_E_IO);
    assert_non_null(strstr(err, strerror(ENOSPC)));
    assert_old_intact(fx);
}

/* Folder fsync fails after the rename: the new file is complete and in
 * place, the call says so with its own code. */
static void failing_folder_fsync(void **state)
{
    fixture *fx = *state;
    char err[1024];
    fsync_fail_at = 2;
    assert_int_equal(save(fx, RNGSNAP_SAVE_REPLACE, err, sizeof err),
                     RNGSNAP_E_DURABILITY);
    assert_not_durable(fx, err, "fsync", folder_of(fx), EIO);
    assert_new(fx);
}

/* The folder cannot be opened (written but not read): the save goes on
 * by full paths and the new file is in place, but the failed open is
 * reported as what it is, not as a failed fsync.  Without sync nothing
 * needed the folder's fd: a plain success. */
static void failing_folder_open(void **state)
{
    fixture *fx = *state;
    char err[1024];
    open_dir_fail = 1;
    assert_int_equal(save(fx, RNGSNAP_SAVE_REPLACE, err, sizeof err),
                     RNGSNAP_E_DURABILITY);
    assert_not_durable(fx, err, "open", folder_of(fx), EACCES);
    assert_int_equal(fsync_calls, 1); /* the file's; no folder to sync */
    assert_new(fx);
    ct_write(fx->path, OLD, sizeof OLD);
    assert_int_equal(save(fx, RNGSNAP_SAVE_REPLACE | RNGSNAP_SAVE_NO_SYNC,
                          err, sizeof err),
                     RNGSNAP_OK);
    assert_new(fx);
}

/* A failed close of the folder is no longer ignored. */
static void failing_folder_close(void **state)
{
    fixture *fx = *state;
    char err[1024];
    close_fail_kind = S_IFDIR;
    assert_int_equal(save(fx, RNGSNAP_SAVE_REPLACE, err, sizeof err),
                     RNGSNAP_E_DURABILITY);
    assert_not_durable(fx, err, "close", folder_of(fx), EIO);
    assert_new(fx);
}

/* With sync the temporary file stays open (and locked) until it is in
 * place; its close failing after the rename is RNGSNAP_E_DURABILITY.
 * Without sync close comes before the rename (NFS reports write errors
 * there): failing, it leaves the previous file. */
static void failing_file_close(void **state)
{
    fixture *fx = *state;
    char err[1024];
    close_fail_kind = S_IFREG;
    assert_int_equal(save(fx, RNGSNAP_SAVE_REPLACE, err, sizeof err),
                     RNGSNAP_E_DURABILITY);
    assert_not_durable(fx, err, "close", "the new file", EIO);
    assert_int_equal(fsync_calls, 2); /* the folder's still tried */
    assert_new(fx);
    ct_write(fx->path, OLD, sizeof OLD);
    close_fail_kind = S_IFREG;
    assert_int_equal(save(fx, RNGSNAP_SAVE_REPLACE | RNGSNAP_SAVE_NO_SYNC,
                          err, sizeof err),
                     RNGSNAP_E_IO);
    assert_failed_before_rename(fx, err, "close", EIO);
    assert_old_intact(fx);
}

static void no_sync_skips_fsync(void **state)
{
    fixture *fx = *state;
    char err[1024];
    assert_int_equal(save(fx, RNGSNAP_SAVE_REPLACE | RNGSNAP_SAVE_NO_SYNC,
                          err, sizeof err),
                     0);
    assert_int_equal(fsync_calls, 0);
    assert_new(fx);
}

static void bad_paths(void **state)
{
    fixture *fx = *state;
    char err[1024];
    assert_int_equal(rs_store_write(NULL, ct_path(fx->dir, "nodir/x.ckpt"),
                                    NEW, sizeof NEW, 0, err, sizeof err),
                     RNGSNAP_E_IO);
    assert_non_null(strstr(err, "nodir"));
    assert_int_equal(rs_store_write(NULL, "", NEW, 1, 0, err, sizeof err),
                     RNGSNAP_E_INVALID);
    assert_int_equal(rs_store_write(NULL, ct_path(fx->dir, "d/"), NEW, 1, 0,
                                    err, sizeof err),
                     RNGSNAP_E_INVALID);
    uint8_t *buf;
    size_t len;
    assert_int_equal(rs_store_read(fx->dir, 0, &buf, &len, err, sizeof err),
                     RNGSNAP_E_IO);
    assert_int_equal(rs_store_read(ct_path(fx->dir, "none"), 0, &buf, &len, err,
                                   sizeof err),
                     RNGSNAP_E_IO);
    assert_non_null(strstr(err, strerror(ENOENT)));
    assert_int_equal(rs_store_read(fx->path, 0, &buf, &len, err, sizeof err), 0);
    assert_int_equal(len, sizeof OLD);
    assert_memory_equal(buf, OLD, len);
    free(buf);
}

/* Reads are whole whatever the hint: smaller, exact, larger, none. */
static void read_with_any_hint(void **state)
{
    fixture *fx = *state;
    size_t n = 100000;
    uint8_t *data = malloc(n);
    for (size_t i = 0; i < n; i++)
        data[i] = (uint8_t)(i * 7 + (i >> 8));
    const char *p = ct_path(fx->dir, "big.bin");
    ct_write(p, data, n);
    size_t hints[] = {0, 1, 100, n - 1, n, n + 1, 5 * n};
    char err[512];
    for (size_t h = 0; h < sizeof hints / sizeof *hints; h++) {
        uint8_t *buf;
        size_t len;
        assert_int_equal(rs_store_read(p, hints[h], &buf, &len, err,
                                       sizeof err),
                         0);
        assert_int_equal(len, n);
        assert_memory_equal(buf, data, n);
        free(buf);
    }
    free(data);
}

/* Short reads and EINTR mean "read more": with reads of a few bytes
 * (and one EINTR first), every hint still gives the whole file. */
static void short_reads_and_eintr(void **state)
{
    fixture *fx = *state;
    size_t n = 10007;
    uint8_t *data = malloc(n);
    for (size_t i = 0; i < n; i++)
        data[i] = (uint8_t)(i * 13 + (i >> 8));
    const char *p = ct_path(fx->dir, "chunky.bin");
    ct_write(p, data, n);
    size_t hints[] = {0, 100, n, 3 * n};
    char err[512];
    for (size_t h = 0; h < sizeof hints / sizeof *hints; h++) {
        uint8_t *buf;
        size_t len;
        reset();
        read_chunk = 7;
        read_eintr = 1;
        assert_int_equal(rs_store_read(p, hints[h], &buf, &len, err,
                                       sizeof err),
                         0);
        assert_int_equal(len, n);
        assert_memory_equal(buf, data, n);
        assert_true(read_calls >= (int)(n / 7) + 1); /* really cut */
        free(buf);
    }
    free(data);
}

/* A context of two multidev devices with streams a and b, for the tests
 * that save and load through the public API. */
static rngsnap *open_multidev(const fixture *fx)
{
    return ct_open(ct_write_ini(fx->dir, "rng.ini",
                                "[backend.multidev]\n"
                                "plugin = rngsnap_multidev\n"
                                "streams = a, b\ndevices = 2\n"), 0);
}

/* The same through the public API: a load and a file_open over reads
 * of 5 bytes, interrupted once, restore bit-exact. */
static void load_over_short_reads(void **state)
{
    fixture *fx = *state;
    rngsnap *ctx = open_multidev(fx);
    const char *ck = ct_path(fx->dir, "run.ckpt");
    assert_int_equal(rngsnap_seed_all(ctx, 7), 0);
    free(ct_draw_all(ctx, 3));
    assert_int_equal(rngsnap_save(ctx, ck, 0), 0);
    ct_snap saved = ct_take(ctx);
    uint32_t *expect = ct_draw_all(ctx, 10);
    reset();
    read_chunk = 5;
    read_eintr = 1;
    if (rngsnap_load(ctx, ck, 0) != 0)
        fail_msg("load over short reads: %s", rngsnap_errmsg(ctx));
    assert_true(read_calls > 10);
    ct_snap now = ct_take(ctx);
    assert_true(ct_snap_equal(saved, now));
    uint32_t *again = ct_draw_all(ctx, 10);
    assert_memory_equal(expect, again, 4 * 10 * sizeof *again);
    char err[512];
    rngsnap_file *f;
    reset();
    read_chunk = 3;
    read_eintr = 1;
    assert_int_equal(rngsnap_file_open(ck, &f, err, sizeof err), 0);
    assert_int_equal(rngsnap_file_section_count(f), 4);
    rngsnap_file_close(f);
    free(expect);
    free(again);
    ct_snap_free(&saved);
    ct_snap_free(&now);
    rngsnap_close(ctx);
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "blocked on a FIFO\n";
    (void)!__real_write(2, msg, sizeof msg - 1);
    _exit(1);
}

/* A FIFO is refused before any read, without blocking: without a writer
 * (where read() says 0) and with one that has written bytes (where a
 * read would have returned them as a short file). */
static void fifo_refused_without_blocking(void **state)
{
    fixture *fx = *state;
    const char *fifo = ct_path(fx->dir, "fifo");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    signal(SIGALRM, on_alarm);
    alarm(10);
    char err[512], want[1200];
    snprintf(want, sizeof want, "%s: not a regular file (a FIFO)", fifo);
    uint8_t *buf;
    size_t len;
    for (int with_writer = 0; with_writer < 2; with_writer++) {
        int w = -1;
        if (with_writer) {
            /* O_RDWR: Linux opens a FIFO so without waiting */
            w = open(fifo, O_RDWR | O_NONBLOCK);
            assert_true(w >= 0);
            assert_int_equal(__real_write(w, "abc", 3), 3);
        }
        assert_int_equal(rs_store_read(fifo, 0, &buf, &len, err,
                                       sizeof err),
                         RNGSNAP_E_IO);
        assert_string_equal(err, want);
        assert_null(buf);
        rngsnap_file *f;
        assert_int_equal(rngsnap_file_open(fifo, &f, err, sizeof err),
                         RNGSNAP_E_IO);
        assert_string_equal(err, want);
        if (w >= 0)
            close(w);
    }
    assert_int_equal(rs_store_read("/dev/null", 0, &buf, &len, err,
                                   sizeof err),
                     RNGSNAP_E_IO);
    assert_string_equal(err, "/dev/null: not a regular file (a character "
                             "device)");
    snprintf(want, sizeof want, "%s: not a regular file (a directory)",
             fx->dir);
    assert_int_equal(rs_store_read(fx->dir, 0, &buf, &len, err, sizeof err),
                     RNGSNAP_E_IO);
    assert_string_equal(err, want);
    alarm(0);
    signal(SIGALRM, SIG_DFL);
}

/* ---- stale temporary files ------------------------------------------ */

/* Name of the one entry of dir starting with prefix into out (1 if
 * found). */
static int find_entry(const char *dir, const char *prefix, char *out,
                      size_t outlen)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    int found = 0;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
            snprintf(out, outlen, "%s", e->d_name);
            found++;
        }
    closedir(d);
    return found;
}

/* Last written `by` seconds from now by the core's clock (a path; links
 * are not followed): a file's age is set, never waited for. */
static void stamp(const char *path, long by)
{
    struct timespec t[2] = {{.tv_sec = time(NULL) + by}};
    t[1] = t[0];
    assert_int_equal(utimensat(AT_FDCWD, path, t, AT_SYMLINK_NOFOLLOW), 0);
}

/* Last written an hour ago. */
static void age(const char *path)
{
    stamp(path, -3600);
}

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Run a save of fx's target in a child killed mid-write (SIGKILL at its
 * second write): what a crash leaves.  Returns the temporary's path. */
static const char *killed_save(fixture *fx)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char err[512];
        reset();
        write_kill_at = 2;
        save(fx, RNGSNAP_SAVE_REPLACE, err, sizeof err);
        _exit(0); /* not reached */
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    static char name[600];
    assert_int_equal(find_entry(fx->dir, ".ck.bin.tmp-", name, sizeof name),
                     1);
    return ct_path(fx->dir, name);
}

/* stderr of fn(fx) with RNGSNAP_LOG=info, into out. */
static int logged_save(fixture *fx, unsigned flags, char *out, size_t outlen)
{
    char err[1024];
    FILE *cap = tmpfile();
    assert_non_null(cap);
    fflush(stderr);
    int saved = dup(2);
    dup2(fileno(cap), 2);
    setenv("RNGSNAP_LOG", "info", 1);
    int rc = save(fx, flags, err, sizeof err);
    unsetenv("RNGSNAP_LOG");
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(cap);
    size_t n = fread(out, 1, outlen - 1, cap);
    out[n] = 0;
    fclose(cap);
    if (rc != RNGSNAP_OK)
        fail_msg("save failed: %s", err);
    return rc;
}

/* A save killed mid-write leaves its temporary file; the next save of
 * the same target removes it (its owner is dead: the lock is free) and
 * says so at INFO.  Before the grace period it is kept: a saver that
 * has created its file but not yet locked it must never lose it. */
static void stale_temp_removed_by_next_save(void **state)
{
    fixture *fx = *state;
    for (int sync = 0; sync < 2; sync++) {
        unsigned flags = RNGSNAP_SAVE_REPLACE
                         | (sync ? 0 : RNGSNAP_SAVE_NO_SYNC);
        reset();
        const char *tmp = killed_save(fx);
        char tmpname[1100], log[4096], want[4096];
        snprintf(tmpname, sizeof tmpname, "%s", tmp);
        struct stat st;
        assert_int_equal(stat(tmpname, &st), 0);
        assert_true(st.st_size > 0); /* part of the new checkpoint */
        /* The core's clock stands still from here: ages are exact. */
        fake_now = __real_time(NULL);
        /* 59 s old: within the grace period (60 s), kept */
        stamp(tmpname, -59);
        logged_save(fx, flags, log, sizeof log);
        assert_string_equal(log, "");
        assert_true(exists(tmpname));
        /* 61 s old and unlocked: removed, and said */
        stamp(tmpname, -61);
        logged_save(fx, flags, log, sizeof log);
        snprintf(want, sizeof want,
                 "rngsnap info: removed stale temporary file %s (%lld bytes, "
                 "unlocked and unwritten for over 60 s: left by a save that "
                 "did not finish)\n",
                 tmpname, (long long)st.st_size);
        assert_string_equal(log, want);
        assert_new(fx);
        fake_now = 0;
    }
}

/* A temporary file that a live save is writing is never removed, even
 * when it looks old: a child runs a real save, paused in mid-write
 * (holding its lock); the parent's save of the same target keeps the
 * child's file, and the child's save then completes. */
static void live_saver_temp_kept(void **state)
{
    fixture *fx = *state;
    int to_child[2], from_child[2];
    assert_int_equal(pipe(to_child), 0);
    assert_int_equal(pipe(from_child), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char err[512];
        reset();
        close(to_child[1]);
        close(from_child[0]);
        write_pause_in = to_child[0];
        write_pause_out = from_child[1];
        _exit(save(fx, RNGSNAP_SAVE_REPLACE, err, sizeof err) == 0 ? 0 : 2);
    }
    close(to_child[0]);
    close(from_child[1]);
    char c;
    assert_int_equal(__real_read(from_child[0], &c, 1), 1);
    char name[600], tmp[1100];
    assert_int_equal(find_entry(fx->dir, ".ck.bin.tmp-", name, sizeof name),
                     1);
    snprintf(tmp, sizeof tmp, "%s", ct_path(fx->dir, name));
    age(tmp); /* a slow save: only its lock protects it now */
    char log[2048];
    logged_save(fx, RNGSNAP_SAVE_REPLACE, log, sizeof log);
    assert_string_equal(log, "");
    assert_true(exists(tmp));
    close(to_child[1]); /* let the child finish its save */
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    close(from_child[0]);
    assert_new(fx);
}

/* The lock also protects a save of another thread of this process (an
 * open file description lock conflicts between two opens of one file,
 * whichever process made them); once released, the file goes. */
static void temp_locked_in_this_process_kept(void **state)
{
    fixture *fx = *state;
    const char *tmp = ct_path(fx->dir, ".ck.bin.tmp-5-5-5");
    ct_write(tmp, "partial", 7);
    age(tmp);
    int fd = open(tmp, O_WRONLY);
    assert_true(fd >= 0);
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    assert_int_equal(fcntl(fd, F_OFD_SETLK, &fl), 0);
    char log[4096];
    logged_save(fx, RNGSNAP_SAVE_REPLACE, log, sizeof log);
    assert_string_equal(log, "");
    assert_true(exists(tmp));
    close(fd);
    logged_save(fx, RNGSNAP_SAVE_REPLACE, log, sizeof log);
    assert_non_null(strstr(log, ".ck.bin.tmp-5-5-5 (7 bytes"));
    assert_new(fx);
}

/* Only the target's own temporaries, in exactly the form a save names
 * them, as regular files: another target's, look-alike names, a link
 * and a folder stay, however old. */
static void other_names_untouched(void **state)
{
    fixture *fx = *state;
    static const char *const keep[] = {
        ".other.bin.tmp-1-2-3",   /* another target                  */
        ".ck.bin.tmp-1-2-xyz",    /* not the form of a temporary     */
        ".ck.bin.tmp-1-2-3.bak",  /* user's file, look-alike         */
        "ck.bin.tmp-1-2-3",       /* no leading dot                  */
        ".ck.bin.tmp-1-2",        /* too few parts                   */
        ".ck.tmp-1-2-3",          /* target "ck", not "ck.bin"       */
    };
    size_t nkeep = sizeof keep / sizeof *keep;
    for (size_t i = 0; i < nkeep; i++) {
        ct_write(ct_path(fx->dir, keep[i]), "x", 1);
        age(ct_path(fx->dir, keep[i]));
    }
    /* a link named like a temporary, to an old file: neither goes */
    ct_write(ct_path(fx->dir, "victim"), "v", 1);
    age(ct_path(fx->dir, "victim"));
    assert_int_equal(symlink("victim", ct_path(fx->dir, ".ck.bin.tmp-7-7-7")),
                     0);
    age(ct_path(fx->dir, ".ck.bin.tmp-7-7-7"));
    assert_int_equal(mkdir(ct_path(fx->dir, ".ck.bin.tmp-8-8-8"), 0755), 0);
    age(ct_path(fx->dir, ".ck.bin.tmp-8-8-8"));
    /* and one real stale temporary of the target, which goes */
    ct_write(ct_path(fx->dir, ".ck.bin.tmp-9-9-9"), "s", 1);
    age(ct_path(fx->dir, ".ck.bin.tmp-9-9-9"));
    char log[2048];
    logged_save(fx, RNGSNAP_SAVE_REPLACE, log, sizeof log);
    assert_non_null(strstr(log, ".ck.bin.tmp-9-9-9 (1 bytes"));
    assert_false(exists(ct_path(fx->dir, ".ck.bin.tmp-9-9-9")));
    for (size_t i = 0; i < nkeep; i++)
        if (!exists(ct_path(fx->dir, keep[i])))
            fail_msg("%s was removed", keep[i]);
    assert_true(exists(ct_path(fx->dir, ".ck.bin.tmp-7-7-7")));
    assert_true(exists(ct_path(fx->dir, "victim")));
    assert_true(exists(ct_path(fx->dir, ".ck.bin.tmp-8-8-8")));
    /* plugins, ck.bin, the kept names, victim, the link, the folder */
    assert_int_equal(ct_count_entries(fx->dir, NULL), 2 + nkeep + 3);
}

/* A long target name still gets a temporary name within NAME_MAX. */
static void long_name(void **state)
{
    fixture *fx = *state;
    char name[256], err[1024];
    memset(name, 'n', 250);
    strcpy(name + 250, ".ck");
    const char *p = ct_path(fx->dir, name);
    assert_int_equal(rs_store_write(NULL, p, NEW, sizeof NEW, 0, err,
                                    sizeof err),
                     0);
    int tmp;
    assert_int_equal(ct_count_entries(fx->dir, &tmp), 3);
    assert_false(tmp);
}

/* End to end through rngsnap_save: a failing fsync leaves the previous
 * checkpoint in place, loadable, and no temporary file. */
static void save_failure_keeps_previous_checkpoint(void **state)
{
    fixture *fx = *state;
    rngsnap *ctx = open_multidev(fx);
    const char *ck = ct_path(fx->dir, "run.ckpt");
    assert_int_equal(rngsnap_seed_all(ctx, 1), 0);
    assert_int_equal(rngsnap_save(ctx, ck, 0), 0);
    size_t len1, len2;
    uint8_t *first = ct_read(ck, &len1);
    free(ct_draw_all(ctx, 10));
    reset();
    fsync_fail_at = 1;
    assert_int_equal(rngsnap_save(ctx, ck, RNGSNAP_SAVE_REPLACE),
                     RNGSNAP_E_IO);
    if (!strstr(rngsnap_errmsg(ctx), "run.ckpt"))
        fail_msg("message lacks the path: %s", rngsnap_errmsg(ctx));
    uint8_t *now = ct_read(ck, &len2);
    assert_int_equal(len1, len2);
    assert_memory_equal(first, now, len1);
    int tmp;
    ct_count_entries(fx->dir, &tmp);
    assert_false(tmp);
    assert_int_equal(rngsnap_load(ctx, ck, 0), 0);
    free(first);
    free(now);
    rngsnap_close(ctx);
}

/* End to end: the folder fsync fails after the rename.  rngsnap_save
 * says RNGSNAP_E_DURABILITY with the exact message, and the file at the
 * path is the new checkpoint: it loads, and restores the saved state. */
static void save_durability_unconfirmed(void **state)
{
    fixture *fx = *state;
    rngsnap *ctx = open_multidev(fx);
    const char *ck = ct_path(fx->dir, "run.ckpt");
    assert_int_equal(rngsnap_seed_all(ctx, 1), 0);
    assert_int_equal(rngsnap_save(ctx, ck, 0), 0);
    free(ct_draw_all(ctx, 10));
    ct_snap second = ct_take(ctx);
    reset();
    fsync_fail_at = 2; /* the file's passes, the folder's fails */
    assert_int_equal(rngsnap_save(ctx, ck, RNGSNAP_SAVE_REPLACE),
                     RNGSNAP_E_DURABILITY);
    char want[4096];
    snprintf(want, sizeof want,
             "save %s: the new checkpoint is in place, but fsync of folder "
             "%s failed: %s (that it survives a power loss is not "
             "confirmed)",
             ck, fx->dir, strerror(EIO));
    assert_string_equal(rngsnap_errmsg(ctx), want);
    assert_string_equal(rngsnap_error_name(RNGSNAP_E_DURABILITY),
                        "RNGSNAP_E_DURABILITY");
    assert_string_equal(rngsnap_strerror(RNGSNAP_E_DURABILITY),
                        "checkpoint replaced, durability not confirmed");
    free(ct_draw_all(ctx, 10));
    assert_int_equal(rngsnap_load(ctx, ck, 0), 0);
    ct_snap now = ct_take(ctx);
    assert_true(ct_snap_equal(second, now));
    ct_snap_free(&second);
    ct_snap_free(&now);
    rngsnap_close(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(no_overwrite_without_replace, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(new_file_without_replace, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(noreplace_fallback, setup, teardown),
        cmocka_unit_test_setup_teardown(racing_creator_not_clobbered, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(failing_file_fsync, setup, teardown),
        cmocka_unit_test_setup_teardown(failing_rename, setup, teardown),
        cmocka_unit_test_setup_teardown(failing_write, setup, teardown),
        cmocka_unit_test_setup_teardown(failing_folder_fsync, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(failing_folder_open, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(failing_folder_close, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(failing_file_close, setup, teardown),
        cmocka_unit_test_setup_teardown(no_sync_skips_fsync, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_paths, setup, teardown),
        cmocka_unit_test_setup_teardown(long_name, setup, teardown),
        cmocka_unit_test_setup_teardown(read_with_any_hint, setup, teardown),
        cmocka_unit_test_setup_teardown(short_reads_and_eintr, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(load_over_short_reads, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(fifo_refused_without_blocking, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(stale_temp_removed_by_next_save,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(live_saver_temp_kept, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(temp_locked_in_this_process_kept,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(other_names_untouched, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(save_failure_keeps_previous_checkpoint,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(save_durability_unconfirmed, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
