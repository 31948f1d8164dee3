/* fake_cuda.c - a stand-in for libcuda.so.1 (driver API subset the cuda
 * plugin probes with), for tests on machines without NVIDIA hardware. */
#include <stdio.h>

#include "fake_env.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT int cuInit(unsigned flags)
{
    (void)flags;
    return FAKE_FAIL();
}
EXPORT int cuDeviceGetCount(int *n)
{
    *n = FAKE_DEVICES();
    return 0;
}
EXPORT int cuDeviceGet(int *dev, int ordinal)
{
    *dev = ordinal;
    return 0;
}
EXPORT int cuDeviceGetName(char *name, int len, int dev)
{
    snprintf(name, (size_t)len, "Fake GPU %d", dev);
    return 0;
}
EXPORT int cuGetErrorName(int err, const char **s)
{
    *s = err == 100 ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_FAKE";
    return 0;
}
