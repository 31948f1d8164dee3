/*
 * bench_floor.c - the system calls a checkpoint save and load cannot
 * avoid, timed bare (no library, no encoding, no checksums), so that
 * save/load figures can be read against what the kernel alone costs on
 * the machine at hand.  The sequences are the ones core/store.c makes
 * (strace a save to compare):
 *   save, fsync:  open folder, create temp, write, fsync, close, rename,
 *                 fsync folder, close folder
 *   save, no sync: create temp, write, close, rename
 *   load:         open, read, close
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

struct floor_job {
    const char *dir;
    char path[256], tmp[256];
    const char *tname; /* tmp relative to dir */
    unsigned char buf[16384];
    size_t bytes;
    int sync;
};

static void die(const char *what, const char *path)
{
    perror(what);
    fprintf(stderr, "  (%s)\n", path);
    abort();
}

static void floor_save(floor_job *j)
{
    int dfd = -1;
    if (j->sync && (dfd = open(j->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        die("open folder", j->dir);
    int fd = dfd >= 0 ? openat(dfd, j->tname,
                               O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666)
                      : open(j->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                             0666);
    if (fd < 0)
        die("create", j->tmp);
    if (write(fd, j->buf, j->bytes) != (ssize_t)j->bytes)
        die("write", j->tmp);
    if (j->sync && fsync(fd) != 0)
        die("fsync", j->tmp);
    close(fd);
    if (rename(j->tmp, j->path) != 0)
        die("rename", j->path);
    if (dfd >= 0) {
        if (fsync(dfd) != 0)
            die("fsync folder", j->dir);
        close(dfd);
    }
}

void bench_floor_save_sync(void *a)
{
    floor_job *j = a;
    j->sync = 1;
    floor_save(j);
}

void bench_floor_save_nosync(void *a)
{
    floor_job *j = a;
    j->sync = 0;
    floor_save(j);
}

void bench_floor_load(void *a)
{
    floor_job *j = a;
    int fd = open(j->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        die("open", j->path);
    if (read(fd, j->buf, j->bytes + 1) != (ssize_t)j->bytes)
        die("read", j->path);
    close(fd);
}

floor_job *bench_floor_job(const char *dir, size_t bytes)
{
    floor_job *j = calloc(1, sizeof *j);
    if (j == NULL || bytes >= sizeof j->buf) {
        free(j);
        return NULL;
    }
    j->dir = dir;
    j->bytes = bytes;
    memset(j->buf, 0xa5, sizeof j->buf);
    snprintf(j->path, sizeof j->path, "%s/rngsnap-floor-%d", dir,
             (int)getpid());
    snprintf(j->tmp, sizeof j->tmp, "%s/.rngsnap-floor-%d.tmp", dir,
             (int)getpid());
    j->tname = j->tmp + strlen(dir) + 1;
    floor_save(j); /* the file bench_floor_load reads */
    return j;
}

void bench_floor_done(floor_job *j)
{
    if (j != NULL)
        unlink(j->path);
    free(j);
}
