/*
 * demo.h - what `rngsnap demo` (the parent, cmd_demo.c) and its hidden
 * child job (`rngsnap __demo-job`, demo_job.c) agree on: the job's
 * parameters, its modes and the lines it writes to the progress pipe.
 *
 * Progress pipe protocol (one line each, child -> parent):
 *   "step I"            step I is done (crash mode then waits for one ack
 *                       byte from the parent before the next step)
 *   "saved K"           checkpoint written after step K
 *   "resumed K"         checkpoint loaded; steps K+1.. follow
 *   "stream BACKEND DEVICE NAME MEMORY WORDS DIGEST"   one per registry entry
 *   "end"               all results written
 */
#ifndef RNGSNAP_TOOLS_DEMO_H
#define RNGSNAP_TOOLS_DEMO_H

#include <stdint.h>

typedef enum demo_mode {
    DEMO_FULL,   /* seed, run every step, report digests after save_at */
    DEMO_CRASH,  /* seed, save at save_at, keep going until killed     */
    DEMO_RESUME  /* open with RNGSNAP_RESUME, load, finish, report     */
} demo_mode;

typedef struct demo_params {
    const char *ini;
    const char *checkpoint;
    unsigned steps;    /* the job runs steps 1..steps                  */
    unsigned save_at;  /* checkpoint written after this step           */
    unsigned kill_at;  /* crash run is killed after this step          */
    uint64_t seed;
    /* --ledger: each child keeps a divergence ledger (the crashed and the
     * resumed run continue one, the uninterrupted run has its own), and
     * the resumed run makes one stray draw at stray_at (0: none). */
    const char *ledger_resumed, *ledger_full;
    unsigned stray_at;
} demo_params;

/* What the stray draw of `demo --ledger` takes: words of the last stream. */
#define DEMO_STRAY_WORDS 4

/* Name of the registered app state holding the job's progress. */
#define DEMO_APP_STATE "demo.progress"

#endif
