/* fake_ze.c - a stand-in for libze_loader.so.1: one driver with
 * RNGSNAP_FAKE_DEVICES GPUs plus one non-GPU device (which the xpu plugin
 * must not count), for tests on machines without an Intel GPU driver. */
#include <stdio.h>
#include <string.h>

#include <level_zero/ze_api.h>

#include "fake_env.h"

#define EXPORT __attribute__((visibility("default")))

static int fake_driver, fake_devices[65];

EXPORT ze_result_t zeInit(ze_init_flags_t flags)
{
    (void)flags;
    return (ze_result_t)FAKE_FAIL();
}
EXPORT ze_result_t zeDriverGet(uint32_t *count, ze_driver_handle_t *drv)
{
    if (drv != NULL && *count >= 1)
        drv[0] = (ze_driver_handle_t)&fake_driver;
    *count = 1;
    return ZE_RESULT_SUCCESS;
}
EXPORT ze_result_t zeDeviceGet(ze_driver_handle_t d, uint32_t *count,
                               ze_device_handle_t *dev)
{
    (void)d;
    uint32_t n = (uint32_t)FAKE_DEVICES() + 1; /* + one non-GPU device */
    if (n > 65)
        n = 65;
    if (dev != NULL) {
        if (*count < n)
            n = *count;
        for (uint32_t i = 0; i < n; i++)
            dev[i] = (ze_device_handle_t)&fake_devices[i];
    }
    *count = n;
    return ZE_RESULT_SUCCESS;
}
EXPORT ze_result_t zeDeviceGetProperties(ze_device_handle_t dev,
                                         ze_device_properties_t *p)
{
    int i = (int)((int *)dev - fake_devices);
    /* Device 0 is the non-GPU one: it comes first, as a loader may. */
    p->type = i == 0 ? ZE_DEVICE_TYPE_VPU : ZE_DEVICE_TYPE_GPU;
    snprintf(p->name, sizeof p->name, i == 0 ? "Fake NPU" : "Fake Arc %d",
             i - 1);
    return ZE_RESULT_SUCCESS;
}
