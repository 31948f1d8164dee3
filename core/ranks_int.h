/*
 * ranks_int.h - what the multi-rank save (ranks_save.c) and load
 * (ranks_load.c) share: the call in progress and its first checks.
 * ranks.c holds the public entry points.
 */
#ifndef RNGSNAP_CORE_RANKS_INT_H
#define RNGSNAP_CORE_RANKS_INT_H

#include "ranks_net.h"

/* One collective call in progress. */
typedef struct rs_job {
    struct rngsnap *ctx;
    const rngsnap_comm *c;
    const char *op;  /* "save_ranks" or "load_ranks" */
    const char *dir;
    rs_net net;      /* opened by the step that needs it */
} rs_job;

/* The checks of every rank before anything collective: the comm matches
 * the context, a folder is named, the flags are known, the context is
 * usable.  Local: the first agree tells every rank. */
int rs_ranks_first_checks(rs_job *j, unsigned flags, unsigned allowed);

int rs_ranks_save(rs_job *j, unsigned flags);
int rs_ranks_load(rs_job *j, unsigned flags);

#endif /* RNGSNAP_CORE_RANKS_INT_H */
