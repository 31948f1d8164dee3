/*
 * main.c - the rngsnap command: global options and dispatch to one
 * subcommand (one file per subcommand, cmd_*.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "rngsnap_build_config.h"

static int cmd_help(const cli_globals *g, int argc, char **argv);

static const cli_command commands[] = {
    {"backends", "list every configured backend, its devices and streams",
     cmd_backends, 0},
    {"inspect", "show a checkpoint file or multi-rank folder, section by "
     "section", cmd_inspect, 0},
    {"verify", "check a checkpoint file or folder: structure, every checksum",
     cmd_verify, 0},
    {"diff", "compare two checkpoints (files; folders rank by rank)",
     cmd_diff, 0},
    {"demo", "kill a simulated training job and resume it bit for bit",
     cmd_demo, 0},
    {"ledger", "compare two runs' divergence ledgers: where they part",
     cmd_ledger, 0},
    {"plugin-check", "check that a backend plugin resumes bit for bit "
     "(conformance)", cmd_plugin_check, 0},
    {"help", "help on a command: rngsnap help COMMAND", cmd_help, 0},
    /* The child process of demo (fork+exec of this program). */
    {"__demo-job", "", cmd_demo_job, 1},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void usage(FILE *to)
{
    fprintf(to,
        "usage: rngsnap [-c FILE] COMMAND [ARGS...]\n"
        "       rngsnap COMMAND --help | --help | --version\n"
        "\n"
        "Checkpoint and restore every random-number stream of a process.\n"
        "\n"
        "Commands:\n");
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (!commands[i].hidden)
            fprintf(to, "  %-12s %s\n", commands[i].name, commands[i].summary);
    fprintf(to,
        "\n"
        "Options:\n"
        "  -c, --config FILE  rng.ini to use (also accepted after COMMAND)\n"
        "  -h, --help         this text\n"
        "      --version      library and program version\n"
        "\n");
#ifdef RNGSNAP_PACKAGE_COMMAND
    fprintf(to,
        "The rng.ini used is the first of: -c FILE; the RNGSNAP_CONFIG\n"
        "variable; the rng.ini installed inside the Python package\n"
        "(%s).\n"
        "\n" CLI_EXIT_HELP,
        cli_package_ini());
#else
    fprintf(to,
        "The rng.ini used is the first of: -c FILE; the RNGSNAP_CONFIG\n"
        "variable; the build tree's config/rng.ini when this program runs\n"
        "from its build folder; the installed default (%s).\n"
        "\n" CLI_EXIT_HELP,
        RNGSNAP_DEFAULT_INI);
#endif
}

/* `rngsnap help [COMMAND]`: the same text as COMMAND --help. */
static int cmd_help(const cli_globals *g, int argc, char **argv)
{
    (void)argv;
    if (argc < 2) {
        usage(stdout);
        return CLI_OK;
    }
    for (size_t c = 0; c < NCOMMANDS; c++) {
        if (!commands[c].hidden && commands[c].run != cmd_help
            && strcmp(argv[1], commands[c].name) == 0) {
            char *args[] = {argv[1], "--help", NULL};
            return commands[c].run(g, 2, args);
        }
    }
    cli_err("help", "unknown command '%s' (see rngsnap --help)", argv[1]);
    return CLI_USAGE;
}

void cli_err(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "rngsnap%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int cli_is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

int cli_config_arg(const char *cmd, int argc, char **argv, int *i,
                   const char **config)
{
    const char *a = argv[*i];
    if (strncmp(a, "--config=", 9) == 0) {
        if (!a[9]) {
            cli_err(cmd, "--config= needs a FILE");
            return -1;
        }
        *config = a + 9;
        return 1;
    }
    if (strcmp(a, "-c") != 0 && strcmp(a, "--config") != 0)
        return 0;
    if (*i + 1 >= argc) {
        cli_err(cmd, "%s needs a FILE", a);
        return -1;
    }
    *config = argv[++*i];
    return 1;
}

int cli_common_arg(const char *cmd, int argc, char **argv, int *i,
                   const char **config, void (*help)(void))
{
    if (cli_is_help(argv[*i])) {
        help();
        return CLI_ARG_HELP;
    }
    int r = cli_config_arg(cmd, argc, argv, i, config);
    return r < 0 ? CLI_ARG_BAD : r > 0 ? CLI_ARG_TAKEN : CLI_ARG_OWN;
}

int main(int argc, char **argv)
{
    cli_globals g = {.config = NULL, .argv0 = argv[0]};
    int i = 1;

    /* Global options stop at the first word that is not one. */
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];
        if (cli_is_help(a)) {
            usage(stdout);
            return CLI_OK;
        } else if (strcmp(a, "--version") == 0) {
            printf("rngsnap %s (library %s)\n", RNGSNAP_VERSION_STRING,
                   rngsnap_version());
            return CLI_OK;
        } else {
            int r = cli_config_arg(NULL, argc, argv, &i, &g.config);
            if (r < 0)
                return CLI_USAGE;
            if (r == 0) {
                cli_err(NULL, "unknown option '%s' (see rngsnap --help)", a);
                return CLI_USAGE;
            }
        }
    }
    if (i >= argc) {
        usage(stderr);
        return CLI_USAGE;
    }
    for (size_t c = 0; c < NCOMMANDS; c++)
        if (strcmp(argv[i], commands[c].name) == 0)
            return commands[c].run(&g, argc - i, argv + i);
    cli_err(NULL, "unknown command '%s' (see rngsnap --help)", argv[i]);
    return CLI_USAGE;
}
