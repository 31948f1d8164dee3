/*
 * cmd_backends.c - `rngsnap backends`: every backend the rng.ini lists,
 * whether it loaded and has devices (and why not), its devices and streams.
 *
 * The context is opened with RNGSNAP_PROBE_ONLY so that a required backend
 * without a device, or a backend whose plugin is missing or refused, is
 * shown (with the reason) instead of failing the listing.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "json.h"

static void help(void)
{
    printf(
        "usage: rngsnap [-c FILE] backends [-c FILE] [--json]\n"
        "\n"
        "List every backend of the rng.ini: plugin path and version, state\n"
        "(available; skipped: optional without a device or plugin file;\n"
        "unavailable: required without a device; broken: its plugin is\n"
        "missing or was refused), the plugin's status line (emulated\n"
        "devices are always marked), the reason a backend is not in use,\n"
        "the devices with their names and the streams each device carries.\n"
        "\n"
        "  --json   one JSON object on stdout instead of the table; when the\n"
        "           rng.ini cannot be used: {\"config\", \"error\",\n"
        "           \"error_code\"} (and exit status 2)\n"
        "\n"
        "Exit status: 0 every required backend is available; 1 a required\n"
        "backend is unavailable; 2 usage or config error (bad rng.ini), or\n"
        "a backend is broken (every backend is still listed).\n");
}

/* A backend whose plugin did not load: every loaded plugin has a version
 * (the loader refuses a NULL one); the probe-only open keeps the reason. */
static int is_broken(const rngsnap_backend_info *b)
{
    return !b->available && !b->skipped && !b->version && b->reason;
}

static const char *state_word(const rngsnap_backend_info *b)
{
    if (b->available)
        return b->emulated ? "emulated" : "available";
    if (is_broken(b))
        return "broken";
    return b->skipped ? "skipped" : "unavailable";
}

/* The exit status the listing stands for (see help()). */
static int listing_status(rngsnap *ctx)
{
    int rc = CLI_OK;
    for (size_t i = 0; i < rngsnap_backend_count(ctx); i++) {
        rngsnap_backend_info b;
        if (rngsnap_backend_get(ctx, i, &b) != RNGSNAP_OK)
            continue;
        if (is_broken(&b))
            return CLI_USAGE;
        if (b.required && !b.available)
            rc = CLI_FAIL;
    }
    return rc;
}

static const char *nz(const char *s, const char *dflt)
{
    return s && *s ? s : dflt;
}

static void print_json(rngsnap *ctx, const char *ini, const char *origin)
{
    printf("{\n  \"config\": ");
    json_string(stdout, ini);
    printf(",\n  \"config_origin\": ");
    json_string(stdout, origin);
    printf(",\n  \"stream_count\": %zu,\n  \"backends\": [",
           rngsnap_stream_count(ctx));
    size_t nb = rngsnap_backend_count(ctx), shown = 0;
    for (size_t i = 0; i < nb; i++) {
        rngsnap_backend_info b;
        if (rngsnap_backend_get(ctx, i, &b) != RNGSNAP_OK)
            continue;
        printf("%s\n    {\"name\": ", shown++ ? "," : "");
        json_string(stdout, b.name);
        printf(", \"state\": \"%s\", \"required\": %s, \"available\": %s, "
               "\"skipped\": %s, \"emulated\": %s,\n     \"plugin_path\": ",
               state_word(&b), b.required ? "true" : "false",
               b.available ? "true" : "false", b.skipped ? "true" : "false",
               b.emulated ? "true" : "false");
        json_string(stdout, b.plugin_path);
        printf(", \"version\": ");
        json_string(stdout, b.version);
        printf(",\n     \"status\": ");
        json_string(stdout, b.status);
        printf(", \"reason\": ");
        json_string(stdout, b.reason);
        printf(",\n     \"devices\": [");
        for (int d = 0; d < b.device_count; d++) {
            printf("%s", d ? ", " : "");
            json_string(stdout, rngsnap_backend_device_name(ctx, i, d));
        }
        printf("], \"streams\": [");
        for (size_t k = 0; k < b.stream_names; k++) {
            printf("%s", k ? ", " : "");
            json_string(stdout, rngsnap_backend_stream_name(ctx, i, k));
        }
        printf("]}");
    }
    printf("%s]\n}\n", shown ? "\n  " : "");
}

int cmd_backends(const cli_globals *g0, int argc, char **argv)
{
    cli_globals g = *g0;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        int r = cli_common_arg("backends", argc, argv, &i, &g.config, help);
        if (r == CLI_ARG_TAKEN)
            continue;
        if (r != CLI_ARG_OWN)
            return r == CLI_ARG_HELP ? CLI_OK : CLI_USAGE;
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else {
            cli_err("backends", "unexpected argument '%s' (see --help)",
                    argv[i]);
            return CLI_USAGE;
        }
    }

    const char *origin;
    const char *ini = cli_config_path(&g, &origin);
    rngsnap *ctx = NULL;
    int rc = rngsnap_open(&ctx, ini, RNGSNAP_PROBE_ONLY);
    if (rc != RNGSNAP_OK) {
        if (json)
            json_error(stdout, "config", ini, rngsnap_errmsg(NULL), rc);
        cli_open_failed("backends", ini, origin);
        return CLI_USAGE;
    }

    int status = listing_status(ctx);
    if (json) {
        print_json(ctx, ini, origin);
        rngsnap_close(ctx);
        return status;
    }
    printf("config: %s (%s)\n\n", ini, origin);
    printf("%-10s %-8s %-11s %7s %7s  %-9s %s\n", "BACKEND", "REQUIRED",
           "STATE", "DEVICES", "STREAMS", "VERSION", "PLUGIN");
    size_t nb = rngsnap_backend_count(ctx);
    for (size_t i = 0; i < nb; i++) {
        rngsnap_backend_info b;
        if (rngsnap_backend_get(ctx, i, &b) != RNGSNAP_OK)
            continue;
        printf("%-10s %-8s %-11s %7d %7zu  %-9s %s\n", b.name,
               b.required ? "yes" : "no", state_word(&b), b.device_count,
               b.stream_names, nz(b.version, "-"), nz(b.plugin_path, "-"));
    }

    /* Details: status line, reason, device names, stream names. */
    for (size_t i = 0; i < nb; i++) {
        rngsnap_backend_info b;
        if (rngsnap_backend_get(ctx, i, &b) != RNGSNAP_OK)
            continue;
        printf("\n[%s]\n", b.name);
        /* Emulation is always said, even if the plugin's line does not. */
        printf("  status:  %s%s\n", nz(b.status, "-"),
               b.emulated && !(b.status && strstr(b.status, "emulat"))
                   ? "  (EMULATION: devices live in host memory)" : "");
        if (b.reason)
            printf("  reason:  %s\n", b.reason);
        printf("  devices:");
        if (b.device_count == 0)
            printf(" none");
        printf("\n");
        for (int d = 0; d < b.device_count; d++)
            printf("    %d  %s\n", d,
                   nz(rngsnap_backend_device_name(ctx, i, d), "?"));
        printf("  streams:");
        for (size_t s = 0; s < b.stream_names; s++)
            printf("%s %s", s ? "," : "",
                   nz(rngsnap_backend_stream_name(ctx, i, s), "?"));
        printf("\n");
    }
    printf("\n%zu stream(s) in the registry\n", rngsnap_stream_count(ctx));
    for (size_t i = 0; i < nb; i++) {
        rngsnap_backend_info b;
        if (rngsnap_backend_get(ctx, i, &b) == RNGSNAP_OK && is_broken(&b))
            cli_err("backends", "backend %s is broken: %s", b.name,
                    b.reason);
    }
    rngsnap_close(ctx);
    return status;
}
