/*
 * mpi_kill.c - MPI_Allgather/MPI_Bcast/MPI_Send/MPI_Recv wrappers that
 * count communication calls and SIGKILL this rank at a chosen one
 * (mpi_kill.h): every message of a save is a kill point.
 */
#include "mpi_kill.h"

#include <fcntl.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int armed;
static long calls;
static long kill_at = -1;    /* call number, or -1: never */
static int kill_after;       /* kill once the call returned */
static long io_calls;
static long io_kill_at = -1; /* file system call number, or -1 */

void kill_setup(int rank)
{
    const char *spec = getenv("RNGSNAP_TEST_KILL");
    int r;
    long k;
    char when[16] = "before";
    if (spec && sscanf(spec, "%d:io:%ld", &r, &k) == 2) {
        if (r == rank)
            io_kill_at = k;
    } else if (spec && sscanf(spec, "%d:%ld:%15s", &r, &k, when) >= 2 && r == rank) {
        kill_at = k;
        kill_after = strcmp(when, "after") == 0;
    }
}

void kill_arm(int on)
{
    armed = on;
}

long kill_calls(void)
{
    return calls;
}

long kill_io_calls(void)
{
    return io_calls;
}

static void io_point(void)
{
    if (armed && ++io_calls == io_kill_at)
        raise(SIGKILL);
}

/* The real calls go straight to the kernel (renameat2 with flags 0 is
 * rename; unlinkat at AT_FDCWD is unlink). */
int fsync(int fd)
{
    io_point();
    return (int)syscall(SYS_fsync, fd);
}

int renameat2(int olddfd, const char *old, int newdfd, const char *new_,
              unsigned flags)
{
    io_point();
    return (int)syscall(SYS_renameat2, olddfd, old, newdfd, new_, flags);
}

int rename(const char *old, const char *new_)
{
    io_point();
    return (int)syscall(SYS_renameat2, AT_FDCWD, old, AT_FDCWD, new_, 0);
}

int unlinkat(int dfd, const char *path, int flags)
{
    io_point();
    return (int)syscall(SYS_unlinkat, dfd, path, flags);
}

int unlink(const char *path)
{
    io_point();
    return (int)syscall(SYS_unlinkat, AT_FDCWD, path, 0);
}

static void kill_point(int after)
{
    if (armed && calls == kill_at && after == kill_after)
        raise(SIGKILL);
}

int MPI_Allgather(const void *send, int scount, MPI_Datatype stype, void *recv,
                  int rcount, MPI_Datatype rtype, MPI_Comm comm)
{
    if (armed)
        calls++;
    kill_point(0);
    int rc = PMPI_Allgather(send, scount, stype, recv, rcount, rtype, comm);
    kill_point(1);
    return rc;
}

int MPI_Bcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm)
{
    if (armed)
        calls++;
    kill_point(0);
    int rc = PMPI_Bcast(buf, count, type, root, comm);
    kill_point(1);
    return rc;
}

int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag,
             MPI_Comm comm)
{
    if (armed)
        calls++;
    kill_point(0);
    int rc = PMPI_Send(buf, count, type, dest, tag, comm);
    kill_point(1);
    return rc;
}

int MPI_Recv(void *buf, int count, MPI_Datatype type, int src, int tag,
             MPI_Comm comm, MPI_Status *status)
{
    if (armed)
        calls++;
    kill_point(0);
    int rc = PMPI_Recv(buf, count, type, src, tag, comm, status);
    kill_point(1);
    return rc;
}
