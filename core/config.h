/*
 * config.h - reading rng.ini into the context's backend slots.
 */
#ifndef RNGSNAP_CORE_CONFIG_H
#define RNGSNAP_CORE_CONFIG_H

#include <stddef.h>

#include "context.h"

/* What the [rngsnap] section says, beyond the backends. */
typedef struct rs_config {
    char *ini_dir;       /* folder of the ini file (absolute)            */
    char **plugin_dirs;  /* plugin_dir entries, absolute; NULL if unset  */
    size_t nplugin_dirs;
    int plugin_dir_line; /* line of plugin_dir, 0 if unset               */
} rs_config;

/* Longest stream or backend name valid (bytes; the checkpoint format's
 * limit).  rng.ini cannot hold names that long: its 198-character lines
 * cap a stream name at 197 and [backend.NAME] a backend name at 41. */
#define RS_NAME_MAX 255

/* Read ini_path: sets ctx->ini_path (absolute), ctx->log_level and
 * ctx->backends/nbackends (config part only: nothing loaded yet).
 * Returns RNGSNAP_OK or RNGSNAP_E_CONFIG / RNGSNAP_E_NOMEM with ctx's
 * message naming file, line and key. */
int rs_config_load(struct rngsnap *ctx, const char *ini_path, rs_config *cfg);
/* The parsing part of rs_config_load: the text data[0..len) (len bytes,
 * any bytes) of the file ctx->ini_path names, cfg->ini_dir already set.
 * Also the entry point of the config fuzzer (tests/fuzz). */
int rs_config_parse(struct rngsnap *ctx, const char *data, size_t len,
                    rs_config *cfg);
void rs_config_free(rs_config *cfg);

/* Refuse a key of b's section that b's plugin (loaded, not yet opened)
 * will not read: every key outside plugin, required, streams and the
 * plugin's option_keys, or, when the plugin lists none, a near miss of
 * those three.  RNGSNAP_E_CONFIG: "FILE:LINE: unknown key 'requried' in
 * [backend.cpu]; did you mean 'required'? (...)". */
int rs_config_check_keys(struct rngsnap *ctx, const rs_backend *b);

/* Free the config-owned members of one backend slot (not the plugin). */
void rs_backend_free_config(rs_backend *b);

/* The entry of plugin_dir and RNGSNAP_PLUGIN_PATH that stands for the
 * built-in plugin folder (RNGSNAP_PLUGIN_DIR, baked in at build time), so
 * that a list can add folders and keep it: "/opt/p:@builtin". */
#define RS_BUILTIN_TOKEN "@builtin"
/* One folder of such a list, absolute: the built-in folder for the
 * token, else item relative to base.  NULL: no memory. */
char *rs_plugin_dir_item(const char *base, const char *item);

/* dir + "/" + rel, or a copy of rel when it is absolute.  NULL: no memory. */
char *rs_path_join(const char *dir, const char *rel);

/* 1 when s is a valid backend or stream name: 1..RS_NAME_MAX bytes of
 * [A-Za-z0-9_.-]. */
int rs_name_ok(const char *s, size_t len);

#endif /* RNGSNAP_CORE_CONFIG_H */
