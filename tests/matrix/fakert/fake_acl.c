/* fake_acl.c - a stand-in for libascendcl.so (aclInit,
 * aclrtGetDeviceCount, aclrtGetSocName), for tests on machines without
 * Ascend hardware.  RNGSNAP_FAKE_FAIL=100002 is "already initialised". */
#include <stdint.h>

#include "fake_env.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT int aclInit(const char *config) { (void)config; return FAKE_FAIL(); }
EXPORT int aclrtGetDeviceCount(uint32_t *n)
{
    *n = (uint32_t)FAKE_DEVICES();
    return 0;
}
EXPORT const char *aclrtGetSocName(void) { return "FakeAscend910"; }
