/*
 * loader.h - finding, opening, checking and closing backend plugins.
 */
#ifndef RNGSNAP_CORE_LOADER_H
#define RNGSNAP_CORE_LOADER_H

#include "config.h"
#include "context.h"

/* Largest stream state a plugin may declare (bytes). */
#define RS_STATE_SIZE_MAX 4096u

/* Find b's plugin file, open it (absolute path, local symbols), fetch
 * and check its table.  On success b->plugin_path, b->dl and b->vt are
 * set.  On failure returns RNGSNAP_E_PLUGIN (or E_NOMEM) with ctx's
 * message naming the plugin path(s) and the reason; b->plugin_path then
 * holds the path(s) tried and nothing stays loaded. */
int rs_plugin_load(struct rngsnap *ctx, rs_backend *b, const rs_config *cfg);

/* Close b's plugin (after its streams and backend context are closed). */
void rs_plugin_unload(rs_backend *b);

#endif /* RNGSNAP_CORE_LOADER_H */
