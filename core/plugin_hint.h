/*
 * plugin_hint.h - what a "plugin not found" message adds for the admin:
 * the plugin file that is there (a near miss of the value written), and
 * how to make the core search other folders.
 */
#ifndef RNGSNAP_CORE_PLUGIN_HINT_H
#define RNGSNAP_CORE_PLUGIN_HINT_H

#include <stddef.h>

#include "config.h"
#include "context.h"

/* Where the candidate files of a plugin value came from. */
typedef enum rs_plugin_origin {
    RS_PLUGIN_FROM_PATH,       /* the value is a path (has a '/')        */
    RS_PLUGIN_FROM_ENV,        /* folders of RNGSNAP_PLUGIN_PATH         */
    RS_PLUGIN_FROM_PLUGIN_DIR, /* folders of plugin_dir in [rngsnap]     */
    RS_PLUGIN_FROM_BUILTIN     /* the folder baked in at build time      */
} rs_plugin_origin;

/* " (did you mean 'rngsnap_cuda'?)" into buf when a *.so file in the
 * folders of tried[0..n) is a near miss (rs_near_miss) of b's plugin
 * value, and that file's path into path; else "" into both.  A file rngsnap_Y.so is the plugin of backend Y and
 * is never offered for another backend: the core would refuse it by
 * its name ("hpu" missing is not a typo of the cpu plugin next to it). */
void rs_plugin_suggest(const rs_backend *b, char *const *tried, size_t n,
                       char *buf, size_t len, char *path, size_t pathlen);

/* "; to search other folders, ..." into buf: the keys and variables
 * that choose the folders for this origin (RNGSNAP_PLUGIN_PATH only
 * where this process reads it), with the ini's file and line. */
void rs_plugin_elsewhere(const struct rngsnap *ctx, const rs_backend *b,
                         const rs_config *cfg, rs_plugin_origin origin,
                         char *buf, size_t len);

/* What the folders searched say: "; folder X does not exist" for each
 * missing one, and, when a built-in plugin (or a file of the built-in
 * folder) was looked for in folders that leave the built-in one out,
 * where that folder is and how to keep it (@builtin).  "" when neither. */
void rs_plugin_folders_note(const rs_backend *b, char *const *tried,
                            size_t n, rs_plugin_origin origin, char *buf,
                            size_t len);

#endif /* RNGSNAP_CORE_PLUGIN_HINT_H */
