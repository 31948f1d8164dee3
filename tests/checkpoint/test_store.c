/*
 * test_store.c - atomic, crash-safe checkpoint files.  fsync, rename,
 * renameat2 and write are wrapped (-Wl,--wrap, static core) so that each
 * step can be made to fail: the previous file must stay intact and no
 * temporary file may remain.  Also: no overwrite without
 * RNGSNAP_SAVE_REPLACE, NO_SYNC really skips the fsyncs.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ckpt_test.h"
#include "store.h"

/* ---- wrapped libc calls: fail the n-th call (1-based) when armed ------ */

static int fsync_calls, fsync_fail_at, fsync_errno = EIO;
static int rename_calls, rename_fail_at;
static int renameat2_calls, renameat2_fail_at, renameat2_errno = EIO;
static int write_calls, write_fail_at;

int __real_fsync(int fd);
int __real_rename(const char *a, const char *b);
int __real_renameat2(int, const char *, int, const char *, unsigned);
ssize_t __real_write(int fd, const void *buf, size_t n);

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
    /* short writes: the store must loop */
    return __real_write(fd, buf, n > 7 ? n / 2 : n);
}

static void reset(void)
{
    fsync_calls = fsync_fail_at = 0;
    rename_calls = rename_fail_at = 0;
    renameat2_calls = renameat2_fail_at = 0;
    write_calls = write_fail_at = 0;
    race_path = NULL;
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
    return rs_store_write(fx->path, NEW, sizeof NEW, flags, err, errlen);
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
    assert_non_null(strstr(err, fx->path));
    assert_non_null(strstr(err, "fsync"));
    assert_non_null(strstr(err, strerror(EIO)));
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
 * place, the call still reports that durability is not assured. */
static void failing_folder_fsync(void **state)
{
    fixture *fx = *state;
    char err[1024];
    fsync_fail_at = 2;
    assert_int_equal(save(fx, RNGSNAP_SAVE_REPLACE, err, sizeof err),
                     RNGSNAP_E_IO);
    assert_non_null(strstr(err, "folder"));
    assert_new(fx);
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
    assert_int_equal(rs_store_write(ct_path(fx->dir, "nodir/x.ckpt"), NEW,
                                    sizeof NEW, 0, err, sizeof err),
                     RNGSNAP_E_IO);
    assert_non_null(strstr(err, "nodir"));
    assert_int_equal(rs_store_write("", NEW, 1, 0, err, sizeof err),
                     RNGSNAP_E_INVALID);
    assert_int_equal(rs_store_write(ct_path(fx->dir, "d/"), NEW, 1, 0, err,
                                    sizeof err),
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

/* A long target name still gets a temporary name within NAME_MAX. */
static void long_name(void **state)
{
    fixture *fx = *state;
    char name[256], err[1024];
    memset(name, 'n', 250);
    strcpy(name + 250, ".ck");
    const char *p = ct_path(fx->dir, name);
    assert_int_equal(rs_store_write(p, NEW, sizeof NEW, 0, err, sizeof err),
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
    const char *ini = ct_write_ini(fx->dir, "rng.ini",
                                   "[backend.multidev]\n"
                                   "plugin = rngsnap_multidev\n"
                                   "streams = a, b\ndevices = 2\n");
    rngsnap *ctx = ct_open(ini, 0);
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
        cmocka_unit_test_setup_teardown(no_sync_skips_fsync, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_paths, setup, teardown),
        cmocka_unit_test_setup_teardown(long_name, setup, teardown),
        cmocka_unit_test_setup_teardown(read_with_any_hint, setup, teardown),
        cmocka_unit_test_setup_teardown(save_failure_keeps_previous_checkpoint,
                                        setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
