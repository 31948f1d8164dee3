/*
 * plugin_check.h - what the files of `rngsnap plugin-check` share.
 *
 * Each check runs in a forked child (plugin_check_run.c) that opens the
 * rng.ini afresh, wraps the backend's table so that every plugin call is
 * recorded before it is made (plugin_check_wrap.c), and reports findings
 * through a pipe.  A child killed by a signal is reported by the parent
 * with the call that was in flight.
 *
 * Why the core's internal tables, not only the public API: a conformance
 * check must call get_state, set_state, validate_state and generate on ONE
 * stream with chosen arguments (a wrong length, bad bytes, an unknown
 * distribution) and name the exact call and stream a crash happened in;
 * the public API only reaches them through whole-context save/load.  So
 * the rngsnap command links the core's static library (tools/meson.build)
 * and the checks use both: the public API for seed_all and the
 * save -> load -> draw path a job takes, the backend table for the rest.
 */
#ifndef RNGSNAP_TOOLS_PLUGIN_CHECK_H
#define RNGSNAP_TOOLS_PLUGIN_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <rngsnap.h>
#include <rngsnap/backend.h>

#include "context.h"

/* One check's run, inside its child. */
typedef struct pc {
    const char *ini;        /* rng.ini path as given                    */
    const char *backend;    /* BACKEND of the command line              */
    rngsnap *ctx;           /* opened by pc_open                        */
    rs_backend *b;          /* the backend under check                  */
    rngsnap_stream **s;     /* its registry entries, in registry order  */
    size_t ns;
    unsigned supported;     /* bit d: generate draws dist d (pc_probe)  */
    int failures;           /* pc_fail calls                            */
} pc;

typedef struct pc_check {
    const char *name;       /* shown as "FAIL name: ..."                */
    const char *what;       /* one line, for --help and the docs        */
    void (*run)(pc *p);
} pc_check;

/* ---- plugin_check_run.c: the child, its findings and its crash ---- */

/* Run c in a child; print its findings (and a crash, naming the call in
 * flight).  Returns 0 passed, 1 failed, 2 config error (message printed). */
int pc_run(const pc_check *c, const char *ini, const char *backend);
/* A finding: "FAIL <check>: <text>" (one line; keep text free of
 * addresses and timings so that tests can match it exactly). */
void pc_fail(pc *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An indented detail line under the last finding or the check's line. */
void pc_note(pc *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Stop the child: the config cannot be checked (exit status 2). */
_Noreturn void pc_config_error(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
/* What the check is doing, added to a crash report ("after set_state of
 * 24 bytes of 0xff").  NULL clears it. */
void pc_doing(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Record a plugin call before it is made (this thread's slot), and its
 * return.  where: "X:1/default" or "X". */
void pc_enter(const char *call, const char *where);
void pc_leave(void);

/* ---- plugin_check_wrap.c: open the config, wrap the table ---- */

/* Open p->ini, find p->backend, wrap its table, list its streams and
 * probe which distributions it draws.  Config problems end the child
 * (pc_config_error). */
void pc_open(pc *p);
void pc_close(pc *p);

/* ---- plugin_check_ops.c: direct calls on one stream ---- */

int pc_seed(pc *p, rngsnap_stream *s, uint64_t seed, uint64_t subsequence);
int pc_get(pc *p, rngsnap_stream *s, void *buf, size_t len);
int pc_set(pc *p, rngsnap_stream *s, const void *buf, size_t len);
int pc_gen(pc *p, rngsnap_stream *s, rngsnap_dist dist, void *out, size_t n);
/* The plugin's message of the last failed direct call on this thread
 * (set through host->error), or NULL when it set none. */
const char *pc_plugin_msg(pc *p);
/* "X:1/default" of s into buf. */
const char *pc_label(const rngsnap_stream *s, char *buf, size_t len);
/* Name of a distribution ("normal_f32"; "dist 10" past the header's). */
const char *pc_dist_name(int dist);
/* Bytes of one value of dist. */
size_t pc_dist_size(int dist);
/* Whether the n values at out are in the range dist promises; else
 * writes why into why. */
int pc_values_ok(int dist, const void *out, size_t n, char *why, size_t len);
/* State of s into a fresh malloc'ed buffer (NULL on failure, reported). */
uint8_t *pc_state(pc *p, rngsnap_stream *s);
/* Draw n values of dist into a fresh malloc'ed buffer; NULL on failure
 * (reported as a finding naming what, the call and the plugin's words). */
void *pc_draw(pc *p, rngsnap_stream *s, int dist, size_t n, const char *what);

/* ---- the checks (one file each) ---- */

void pc_check_state(pc *p);     /* plugin_check_state.c    */
void pc_check_dists(pc *p);     /* plugin_check_dists.c    */
void pc_check_seeding(pc *p);   /* plugin_check_seed.c     */
void pc_check_points(pc *p);    /* plugin_check_points.c   */
void pc_check_saveload(pc *p);  /* plugin_check_saveload.c */
void pc_check_errors(pc *p);    /* plugin_check_errors.c   */
void pc_check_threads(pc *p);   /* plugin_check_threads.c  */
/* Part of "state" for a PHX1 backend: its values are the engine's. */
void pc_check_engine_words(pc *p, rngsnap_stream *s); /* plugin_check_engine.c */

#endif
