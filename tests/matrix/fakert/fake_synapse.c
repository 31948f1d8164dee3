/* fake_synapse.c - a stand-in for libSynapse.so (synInitialize,
 * synDeviceGetCount), for tests on machines without Gaudi hardware. */
#include <stdint.h>

#include "fake_env.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT int synInitialize(void) { return FAKE_FAIL(); }
EXPORT int synDeviceGetCount(uint32_t *n)
{
    *n = (uint32_t)FAKE_DEVICES();
    return 0;
}
