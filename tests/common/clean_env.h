/*
 * clean_env.h - test_clean_env(): unset every environment variable the
 * library reads (core/config.c, core/context.c), so that a test sees only
 * what it sets itself, whatever the shell or a launcher left behind.
 * One list for the core, checkpoint and fuzz tests.
 */
#ifndef RNGSNAP_TEST_CLEAN_ENV_H
#define RNGSNAP_TEST_CLEAN_ENV_H

#include <stddef.h>
#include <stdlib.h>

static inline void test_clean_env(void)
{
    static const char *const vars[] = {
        "RNGSNAP_PLUGIN_PATH", "RNGSNAP_CONFIG", "RNGSNAP_LOG",
        "RNGSNAP_NO_EMULATION", /* the core refuses emulation under it */
        /* the launchers' rank variables, as core/context.c tries them */
        "RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
        "PMI_RANK", "PMI_SIZE"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
}

#endif
