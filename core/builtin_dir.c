/*
 * builtin_dir.c - where the built-in plugin folder is: the folder searched
 * when rng.ini has no plugin_dir, and the @builtin entry of plugin_dir and
 * RNGSNAP_PLUGIN_PATH.
 *
 * A normal build bakes it in: RNGSNAP_PLUGIN_DIR, {libdir}/rngsnap-1.  The
 * Python wheel (-Dpython_wheel=true builds the core with
 * RNGSNAP_PACKAGE_PLUGINS) is installed wherever pip puts it, so there the
 * folder is found at run time from the file that holds this code: the
 * package's rngsnap/plugins, beside the extension (rngsnap/_rngsnap*.so)
 * and one folder above the command (rngsnap/_bin/rngsnap).
 */
#include <limits.h>
#include <stdio.h>

#include "config.h"
#include "rngsnap_build_config.h"

#ifdef RNGSNAP_PACKAGE_PLUGINS
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static char package_dir[PATH_MAX + 16];
static pthread_once_t package_once = PTHREAD_ONCE_INIT;

static void find_package_dir(void)
{
    Dl_info info;
    struct link_map *map = NULL;
    char file[PATH_MAX];
    /* The main program's link map has an empty name: then this code is in
     * the command, whose real path /proc/self/exe gives. */
    if (!dladdr1((void *)find_package_dir, &info, (void **)&map,
                 RTLD_DL_LINKMAP) || !map)
        return;
    const char *name = map->l_name[0] ? map->l_name : "/proc/self/exe";
    if (!realpath(name, file))
        return;
    char *slash = strrchr(file, '/');
    if (!slash)
        return;
    *slash = '\0';
    slash = strrchr(file, '/');
    if (slash && strcmp(slash + 1, "_bin") == 0)
        *slash = '\0';
    snprintf(package_dir, sizeof package_dir, "%s/plugins", file);
}

const char *rs_builtin_plugin_dir(void)
{
    pthread_once(&package_once, find_package_dir);
    /* Not found (no /proc, a stripped link map): the baked-in folder, which
     * a message then names, rather than no folder at all. */
    return package_dir[0] ? package_dir : RNGSNAP_PLUGIN_DIR;
}
#else
const char *rs_builtin_plugin_dir(void)
{
    return RNGSNAP_PLUGIN_DIR;
}
#endif
