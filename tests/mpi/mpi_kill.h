/*
 * mpi_kill.h - kill points through the MPI profiling interface: this
 * program's MPI_Allgather and MPI_Bcast count the calls made while
 * "armed" (during the save under test) and SIGKILL this rank at one of
 * them; librngsnap_mpi's calls resolve to these wrappers.
 */
#ifndef RNGSNAP_TEST_MPI_KILL_H
#define RNGSNAP_TEST_MPI_KILL_H

/* Read RNGSNAP_TEST_KILL="rank:call:before|after" (call counts from 1). */
void kill_setup(int rank);
void kill_arm(int on);
/* Collective calls made while armed. */
long kill_calls(void);

#endif
