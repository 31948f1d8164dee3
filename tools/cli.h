/*
 * cli.h - what the subcommands of the rngsnap command share: the global
 * options, the exit codes, and small helpers (config path, messages).
 */
#ifndef RNGSNAP_TOOLS_CLI_H
#define RNGSNAP_TOOLS_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <rngsnap.h>

/* Exit codes of every subcommand (documented in --help and docs). */
enum {
    CLI_OK = 0,    /* the command did what was asked; checks passed  */
    CLI_FAIL = 1,  /* a check failed: verify, diff, demo mismatch    */
    CLI_USAGE = 2  /* bad usage, bad config, I/O error               */
};

/* Options given before the subcommand. */
typedef struct cli_globals {
    const char *config;  /* -c/--config, else NULL                       */
    const char *argv0;   /* program name for messages                    */
} cli_globals;

/* One subcommand: name, one-line summary, entry, whether hidden. */
typedef struct cli_command {
    const char *name;
    const char *summary;
    int (*run)(const cli_globals *g, int argc, char **argv);
    int hidden;
} cli_command;

/* The rng.ini to use and where that choice came from ("-c", "RNGSNAP_CONFIG",
 * "build tree", "installed default").  Never NULL. */
const char *cli_config_path(const cli_globals *g, const char **origin);
#ifdef RNGSNAP_PACKAGE_COMMAND
/* The command inside the Python wheel: <its folder>/../rng.ini. */
const char *cli_package_ini(void);
#endif

/* After a failed rngsnap_open: print the library's message and, when the
 * file was not chosen explicitly, how it was chosen. */
void cli_open_failed(const char *cmd, const char *ini, const char *origin);

/* Print "rngsnap CMD: message" to stderr. */
void cli_err(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* True when arg is -h or --help. */
int cli_is_help(const char *arg);

/* -c FILE, --config FILE or --config=FILE at argv[*i], accepted by every
 * subcommand (after the command as well as before it).  Returns 1 and
 * sets *config (advancing *i past FILE), 0 when argv[*i] is something
 * else, -1 after printing "CMD: -c needs a FILE". */
int cli_config_arg(const char *cmd, int argc, char **argv, int *i,
                   const char **config);

/* What cli_common_arg made of argv[*i]. */
enum { CLI_ARG_BAD = -1, CLI_ARG_OWN = 0, CLI_ARG_TAKEN = 1, CLI_ARG_HELP = 2 };

/* The arguments every subcommand accepts wherever they stand: -c/--config
 * FILE (via cli_config_arg, into *config) and -h/--help (help() printed).
 * CLI_ARG_OWN: argv[*i] is the subcommand's own to parse. */
int cli_common_arg(const char *cmd, int argc, char **argv, int *i,
                   const char **config, void (*help)(void));

/* Open and verify a checkpoint with rngsnap_file_open.  On failure print
 * "rngsnap CMD: PATH: reason" and return the exit code: CLI_FAIL for a
 * corrupt file when corrupt_is_check (verify, inspect), else CLI_USAGE. */
int cli_file_open(const char *cmd, const char *path, rngsnap_file **out,
                  int corrupt_is_check);

/* The library's message and code of the last failed cli_file_open (or
 * cli_manifest_open, folder/folder.h). */
const char *cli_file_error(int *rc);

/* Record a failure for cli_file_error (the --json error objects). */
void cli_set_file_error(int rc, const char *msg);

/* "2026-11-30T22:12:22Z" of a Unix time, into buf. */
const char *cli_iso_time(int64_t t, char *buf, size_t len);

/* Printable name of a state format ("philox4x32-10", or its four ASCII
 * characters, or hex) into buf. */
const char *cli_format_name(uint32_t format, char *buf, size_t len);

/* "backend:device/name" or "app:name" of a section, into buf. */
const char *cli_section_label(const rngsnap_file_section *s, char *buf,
                              size_t len);

/* verify's JSON error object for path ("file", "ok": false, "error",
 * "error_code" of the last failure), opened for the file and folder forms
 * of verify; the caller may add members (n and sep as for json_key) and
 * closes it with "\n}\n". */
void verify_json_error_open(const char *path, int *n, const char *sep);

/* One checkpoint file's report, shared by the file and folder forms of
 * inspect and diff (a folder's report is one per rank).  The JSON forms
 * write one object without a final newline; ind is put after each
 * newline inside it, so that it can be nested. */
void inspect_file_text(const char *path, const rngsnap_file *f);
void inspect_file_json(const char *path, const rngsnap_file *f,
                       const char *ind);
/* Exit code CLI_OK (identical) or CLI_FAIL (they differ). */
int diff_files_text(const char *const path[2], rngsnap_file *const f[2],
                    int all);
int diff_files_json(const char *const path[2], rngsnap_file *const f[2],
                    int all, const char *ind);

/* `ledger diff A B [--json]` (ledger/ledger_diff.c), also run by
 * `demo --ledger` to name where its runs part: CLI_OK every common step
 * matches, CLI_FAIL a difference (reported), CLI_USAGE unreadable or
 * nothing in common. */
int ledger_diff(const char *a, const char *b, int json);

/* The subcommands. */
int cmd_backends(const cli_globals *g, int argc, char **argv);
int cmd_inspect(const cli_globals *g, int argc, char **argv);
int cmd_verify(const cli_globals *g, int argc, char **argv);
int cmd_diff(const cli_globals *g, int argc, char **argv);
int cmd_demo(const cli_globals *g, int argc, char **argv);
int cmd_demo_job(const cli_globals *g, int argc, char **argv);
int cmd_ledger(const cli_globals *g, int argc, char **argv);
int cmd_plugin_check(const cli_globals *g, int argc, char **argv);

/* Shared text of the exit-code paragraph in every --help. */
#define CLI_EXIT_HELP                                                  \
    "Exit status: 0 ok; 1 a check failed; 2 usage, config or I/O error.\n"

#endif
