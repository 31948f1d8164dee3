/*
 * checkpoint.h - what checkpoint.c offers the rest of the core.
 */
#ifndef RNGSNAP_CORE_CHECKPOINT_H
#define RNGSNAP_CORE_CHECKPOINT_H

struct rngsnap;

/* Free every registered app state (names and the array); for
 * rngsnap_close.  Safe to call twice. */
void rs_apps_free(struct rngsnap *ctx);

#endif /* RNGSNAP_CORE_CHECKPOINT_H */
