/*
 * cmd_plugin_check.c - `rngsnap plugin-check [-c FILE] BACKEND`: the
 * conformance check a plugin author runs (docs/plugin-guide.md,
 * "Check it: rngsnap plugin-check").  Runs each check of the table below
 * in a child of its own (plugin_check_run.c) and sums up.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "plugin_check.h"

static const pc_check checks[] = {
    {"state", "state format id and size; the state holds the position "
     "and the seed; set_state(get_state) changes nothing", pc_check_state},
    {"dists", "every distribution, counts 0, odd and even: exact count, "
     "range, repeatable; one not drawn refused and reported",
     pc_check_dists},
    {"seeding", "same seed, same words in fresh contexts; every pair of "
     "streams differs", pc_check_seeding},
    {"points", "saved where a cached value is pending, restored: the "
     "next draws equal the uninterrupted stream's", pc_check_points},
    {"save-load", "save -> load -> draw equals the uninterrupted draw on "
     "every stream and device", pc_check_saveload},
    {"errors", "bad lengths and bad state bytes refused (or used) "
     "without a crash", pc_check_errors},
    {"threads", "streams drawing at once draw what they draw alone",
     pc_check_threads},
};
#define NCHECKS (sizeof checks / sizeof checks[0])

static void help(void)
{
    printf(
        "usage: rngsnap [-c FILE] plugin-check [-c FILE] BACKEND\n"
        "\n"
        "Check that the plugin of [backend.BACKEND] in the rng.ini keeps its\n"
        "promises to the core, so that a checkpoint resumes it bit for bit.\n"
        "Each check runs in a child process: a plugin that crashes is named\n"
        "with the call and stream in flight (\"plugin X crashed in get_state\n"
        "of X:1/default (SIGSEGV, ...)\").  Checks:\n"
        "\n");
    for (size_t i = 0; i < NCHECKS; i++)
        printf("  %-10s %s\n", checks[i].name, checks[i].what);
    printf(
        "\n"
        "A device backend without its hardware is checked in emulation\n"
        "(emulate_devices = 2 in its section).  docs/plugin-guide.md says\n"
        "what each finding means.\n"
        "\n"
        "Exit status: 0 conformant; 1 a check failed (each finding named);\n"
        "2 usage or config error.\n");
}

int cmd_plugin_check(const cli_globals *g, int argc, char **argv)
{
    const char *config = g->config, *backend = NULL;
    for (int i = 1; i < argc; i++) {
        int r = cli_common_arg("plugin-check", argc, argv, &i, &config,
                               help);
        if (r == CLI_ARG_HELP)
            return CLI_OK;
        if (r == CLI_ARG_BAD)
            return CLI_USAGE;
        if (r == CLI_ARG_TAKEN)
            continue;
        if (argv[i][0] == '-') {
            cli_err("plugin-check", "unknown option '%s' (see rngsnap "
                    "plugin-check --help)", argv[i]);
            return CLI_USAGE;
        }
        if (backend) {
            cli_err("plugin-check", "one BACKEND at a time ('%s' and '%s')",
                    backend, argv[i]);
            return CLI_USAGE;
        }
        backend = argv[i];
    }
    if (!backend) {
        cli_err("plugin-check", "which backend? usage: rngsnap plugin-check "
                "[-c FILE] BACKEND");
        return CLI_USAGE;
    }
    const char *origin;
    const char *ini = cli_config_path(&(cli_globals){.config = config},
                                      &origin);
    printf("rngsnap plugin-check: backend %s of %s (%s)\n", backend, ini,
           origin);
    size_t failed = 0;
    for (size_t i = 0; i < NCHECKS; i++) {
        int r = pc_run(&checks[i], ini, backend);
        if (r == 2)
            return CLI_USAGE;
        failed += r != 0;
    }
    if (failed) {
        printf("backend %s: %zu of %zu checks failed (docs/plugin-guide.md, "
               "\"Check it: rngsnap plugin-check\", says what each "
               "finding means)\n", backend, failed, NCHECKS);
        return CLI_FAIL;
    }
    printf("backend %s: conformant (%zu of %zu checks passed)\n", backend,
           NCHECKS, NCHECKS);
    return CLI_OK;
}
