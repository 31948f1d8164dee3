/*
 * fuzz_config.c - fuzz target: the rng.ini parser (rs_config_parse, the
 * part of rngsnap_open that reads the text) on arbitrary bytes.
 *
 * Invariants: no crash, no read outside the input (it is not
 * NUL-terminated here), no leak; a refusal is RNGSNAP_E_CONFIG (or
 * E_NOMEM) with a message that starts with the file's path and a line
 * number; an accepted file gives backends with valid, distinct names, a
 * plugin name and a non-empty list of valid, distinct stream names.
 */
#include <string.h>

#include "config.h"
#include "context.h"
#include "fuzz.h"
#include "internal.h"

#define INI "/fuzz/rng.ini"

static void check_accepted(const struct rngsnap *ctx)
{
    FUZZ_CHECK(ctx->nbackends > 0, "accepted without a backend");
    for (size_t i = 0; i < ctx->nbackends; i++) {
        const rs_backend *b = &ctx->backends[i];
        FUZZ_CHECK(rs_name_ok(b->name, strlen(b->name)), "backend name");
        FUZZ_CHECK(b->plugin && *b->plugin, "plugin of %s", b->name);
        FUZZ_CHECK(b->nstreams > 0, "no stream in %s", b->name);
        for (size_t j = 0; j < i; j++)
            FUZZ_CHECK(strcmp(ctx->backends[j].name, b->name) != 0,
                       "backend %s twice", b->name);
        for (size_t k = 0; k < b->nstreams; k++) {
            FUZZ_CHECK(rs_name_ok(b->streams[k], strlen(b->streams[k])),
                       "stream name '%s'", b->streams[k]);
            for (size_t j = 0; j < k; j++)
                FUZZ_CHECK(strcmp(b->streams[j], b->streams[k]) != 0,
                           "stream %s twice", b->streams[k]);
        }
        for (size_t k = 0; k < b->noptions; k++)
            FUZZ_CHECK(b->options[k].key[0] && b->options[k].value,
                       "option %zu of %s", k, b->name);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rngsnap *ctx = calloc(1, sizeof *ctx);
    FUZZ_CHECK(ctx != NULL, "calloc");
    ctx->id = rs_new_ctx_id(); /* keys this thread's message on ctx */
    ctx->log_level = -1;
    ctx->ini_path = strdup(INI);
    rs_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.ini_dir = strdup("/fuzz");
    FUZZ_CHECK(ctx->ini_path && cfg.ini_dir, "strdup");
    /* An exact copy: the parser must not rely on a NUL after the text. */
    char *text = malloc(size ? size : 1);
    FUZZ_CHECK(text != NULL, "malloc");
    memcpy(text, data, size);
    int rc = rs_config_parse(ctx, text, size, &cfg);
    if (rc == RNGSNAP_OK) {
        check_accepted(ctx);
    } else {
        FUZZ_CHECK(rc == RNGSNAP_E_CONFIG || rc == RNGSNAP_E_NOMEM, "rc %d",
                   rc);
        FUZZ_CHECK(strncmp(rngsnap_errmsg(ctx), INI ":", strlen(INI) + 1) == 0,
                   "message does not name the file: '%s'", rngsnap_errmsg(ctx));
    }
    free(text);
    rs_config_free(&cfg);
    for (size_t i = 0; i < ctx->nbackends; i++)
        rs_backend_free_config(&ctx->backends[i]);
    free(ctx->backends);
    free(ctx->ini_path);
    free(ctx);
    return 0;
}
