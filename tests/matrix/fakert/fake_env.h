/*
 * fake_env.h - what the fake vendor runtimes read from the environment:
 * RNGSNAP_FAKE_DEVICES (device count, default 2) and RNGSNAP_FAKE_FAIL
 * (the status code the init call returns, default 0).  Test-only.
 */
#ifndef FAKE_ENV_H
#define FAKE_ENV_H

#include <stdlib.h>

static inline int fake_env(const char *name, int def)
{
    const char *v = getenv(name);
    return v != NULL && *v != '\0' ? atoi(v) : def;
}
#define FAKE_DEVICES() fake_env("RNGSNAP_FAKE_DEVICES", 2)
#define FAKE_FAIL() fake_env("RNGSNAP_FAKE_FAIL", 0)

#endif
