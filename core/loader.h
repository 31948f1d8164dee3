/*
 * loader.h - finding, opening, checking and closing backend plugins.
 */
#ifndef RNGSNAP_CORE_LOADER_H
#define RNGSNAP_CORE_LOADER_H

#include "config.h"
#include "context.h"

/* Largest stream state a plugin may declare (bytes). */
#define RS_STATE_SIZE_MAX 4096u

/* Check b's plugin value, find its file, check that only root or the
 * effective user can change the file and its folders (before anything
 * of it runs), open it (absolute path, local symbols), fetch and check
 * its table.  On success b->plugin_path, b->dl and b->vt are set.  On
 * failure returns RNGSNAP_E_PLUGIN (a bad plugin value: RNGSNAP_E_CONFIG;
 * or E_NOMEM) with ctx's message naming the plugin path(s) and the
 * reason, and nothing stays loaded; *missing is 1 when no candidate file
 * exists (b->plugin_path then lists the paths tried), else 0. */
int rs_plugin_load(struct rngsnap *ctx, rs_backend *b, const rs_config *cfg,
                   int *missing);

/* getenv(name) for a variable that names a path: NULL when unset or
 * empty, and in a secure-execution process (getauxval(AT_SECURE):
 * setuid, setgid, file capabilities), where it is ignored and logged. */
const char *rs_path_env(const struct rngsnap *ctx, const char *name);

/* 0 in a secure-execution process, where rs_path_env ignores variables
 * naming paths; else 1. */
int rs_env_paths_trusted(void);

/* Close b's plugin (after its streams and backend context are closed). */
void rs_plugin_unload(rs_backend *b);

#endif /* RNGSNAP_CORE_LOADER_H */
