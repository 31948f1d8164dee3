/*
 * mpi_kill.h - kill points through the MPI profiling interface: this
 * program's MPI_Allgather and MPI_Bcast count the calls made while
 * "armed" (during the save under test) and SIGKILL this rank at one of
 * them; librngsnap_mpi's calls resolve to these wrappers.  The same for
 * the file system calls that order a save (fsync, rename, unlink): this
 * program's definitions take the place of libc's for librngsnap too, so
 * a rank dies between any two of them (after a write, before its fsync,
 * before or after a rename, in the middle of the cleanup).
 */
#ifndef RNGSNAP_TEST_MPI_KILL_H
#define RNGSNAP_TEST_MPI_KILL_H

/* Read RNGSNAP_TEST_KILL="rank:call:before|after" (collective call,
 * counted from 1) or "rank:io:call" (before that file system call). */
void kill_setup(int rank);
void kill_arm(int on);
/* Collective calls made while armed. */
long kill_calls(void);
/* File system calls made while armed. */
long kill_io_calls(void);

#endif
