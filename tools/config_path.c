/*
 * config_path.c - which rng.ini the rngsnap command uses.
 *
 * Precedence: -c/--config; the RNGSNAP_CONFIG variable; the build tree's
 * config/rng.ini when this binary is the one in <build>/tools (so a fresh
 * build works before anything is installed); the installed default.  The
 * command inside the Python wheel (RNGSNAP_PACKAGE_COMMAND, built by
 * python/meson.build into rngsnap/_bin) uses the package's own rng.ini,
 * rng.ini one folder up from its own, instead of the last two: the paths baked in
 * at build time name the wheel's build folder, not the user's install.
 * RNGSNAP_CONFIG is ignored (and that said) in a secure-execution process
 * (setuid, setgid, file capabilities), as the library does.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "cli.h"
#include "rngsnap_build_config.h"

#ifndef RNGSNAP_PACKAGE_COMMAND
/* Nonzero when /proc/self/exe lies in <RNGSNAP_BUILD_ROOT>/tools. */
static int running_from_build_tree(void)
{
    char exe[PATH_MAX], root[PATH_MAX], want[PATH_MAX + 8];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return 0;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return 0;
    *slash = '\0';
    /* The build root may be reached through a symlink: compare real paths. */
    if (!realpath(RNGSNAP_BUILD_ROOT, root))
        return 0;
    snprintf(want, sizeof want, "%s/tools", root);
    return strcmp(exe, want) == 0;
}
#endif

/* RNGSNAP_CONFIG, unless the invoking user may not choose our files. */
static const char *config_env(void)
{
    static int said;
    const char *env = getenv("RNGSNAP_CONFIG");
    if (!env || !*env)
        return NULL;
    if (getauxval(AT_SECURE)) {
        if (!said++)
            fprintf(stderr, "rngsnap: ignoring RNGSNAP_CONFIG: this process "
                    "runs with elevated privileges (setuid, setgid or file "
                    "capabilities), where variables naming paths are not "
                    "trusted\n");
        return NULL;
    }
    return env;
}

#ifdef RNGSNAP_PACKAGE_COMMAND
const char *cli_package_ini(void)
{
    static char ini[PATH_MAX + 16];
    if (ini[0])
        return ini;
    char exe[PATH_MAX];
    if (!realpath("/proc/self/exe", exe)) {
        /* No /proc: the message names a path that says what is missing. */
        snprintf(ini, sizeof ini, "/proc/self/exe/../../rng.ini");
        return ini;
    }
    /* <package>/_bin/rngsnap: drop the file name, then _bin. */
    for (int up = 0; up < 2; up++) {
        char *slash = strrchr(exe, '/');
        if (slash)
            *slash = '\0';
    }
    snprintf(ini, sizeof ini, "%s/rng.ini", exe);
    return ini;
}
#endif

const char *cli_config_path(const cli_globals *g, const char **origin)
{
    const char *dummy;
    if (!origin)
        origin = &dummy;
    if (g && g->config) {
        *origin = "-c";
        return g->config;
    }
    const char *env = config_env();
    if (env) {
        *origin = "RNGSNAP_CONFIG";
        return env;
    }
#ifdef RNGSNAP_PACKAGE_COMMAND
    *origin = "package";
    return cli_package_ini();
#else
    if (running_from_build_tree()) {
        *origin = "build tree";
        return RNGSNAP_BUILD_INI;
    }
    *origin = "installed default";
    return RNGSNAP_DEFAULT_INI;
#endif
}

void cli_open_failed(const char *cmd, const char *ini, const char *origin)
{
    /* The library's message names the file (and line) already. */
    cli_err(cmd, "%s", rngsnap_errmsg(NULL));
    const char *why = strcmp(origin, "RNGSNAP_CONFIG") == 0
                          ? "set by RNGSNAP_CONFIG"
                      : strcmp(origin, "build tree") == 0
                          ? "the build tree's rng.ini"
                      : strcmp(origin, "package") == 0
                          ? "the rng.ini installed inside the package"
                          : "the installed default";
    if (strcmp(origin, "-c") != 0)
        fprintf(stderr, "rngsnap %s: no -c given, so %s is %s; pass -c FILE "
                "to use another (see rngsnap --help)\n", cmd, ini, why);
}
