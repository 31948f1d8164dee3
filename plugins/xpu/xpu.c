/*
 * xpu.c - the Intel GPU backend: what is its own is finding the oneAPI
 * Level Zero loader (libze_loader.so.1: zeInit, zeDriverGet, zeDeviceGet,
 * zeDeviceGetProperties) and its GPU devices.  Only the types come from
 * <level_zero/ze_api.h>; the loader is opened at run time.  Streams
 * generate into host memory; an app's own SYCL/Level Zero kernels draw
 * through rngsnap_reserve.
 */
#include <stdint.h>
#include <stdio.h>
#include <dlfcn.h>

#include <level_zero/ze_api.h>

#include "devicekit.h"

typedef ze_result_t (*ze_init_fn)(ze_init_flags_t flags);
typedef ze_result_t (*ze_driver_get_fn)(uint32_t *count,
                                        ze_driver_handle_t *drivers);
typedef ze_result_t (*ze_device_get_fn)(ze_driver_handle_t driver,
                                        uint32_t *count,
                                        ze_device_handle_t *devices);
typedef ze_result_t (*ze_device_get_properties_fn)(
    ze_device_handle_t device, ze_device_properties_t *props);

#define XPU_MAX_DRIVERS 8

static const char *xpu_result_name(ze_result_t r)
{
    switch (r) {
    case ZE_RESULT_SUCCESS: return "ZE_RESULT_SUCCESS";
    case ZE_RESULT_ERROR_UNINITIALIZED: return "ZE_RESULT_ERROR_UNINITIALIZED";
    case ZE_RESULT_ERROR_DEVICE_LOST: return "ZE_RESULT_ERROR_DEVICE_LOST";
    case ZE_RESULT_ERROR_UNSUPPORTED_VERSION:
        return "ZE_RESULT_ERROR_UNSUPPORTED_VERSION";
    case ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS:
        return "ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS";
    default: return "a Level Zero error";
    }
}

static void xpu_probe(dk_probe *p)
{
    void *lib = dk_dlopen(p, "install the oneAPI Level Zero loader "
                             "(Debian: libze1) and an Intel GPU driver "
                             "(intel-level-zero-gpu)");
    if (lib == NULL)
        return;
    static const char *const names[] = {"zeInit", "zeDriverGet",
                                        "zeDeviceGet",
                                        "zeDeviceGetProperties"};
    void *fn[4];
    if (dk_dlsym_all(p, lib, names, fn, 4) != 0) {
        dlclose(lib);
        return;
    }
    /* The loader stays loaded: zeInit cannot be undone. */
    ze_result_t r = ((ze_init_fn)fn[0])(ZE_INIT_FLAG_GPU_ONLY);
    if (r != ZE_RESULT_SUCCESS) {
        dk_reason(p, "Level Zero loader present (%s), no driver: zeInit "
                  "returned %s (0x%x); install an Intel GPU driver "
                  "(intel-level-zero-gpu)",
                  p->library, xpu_result_name(r), (unsigned)r);
        return;
    }
    uint32_t nd = 0;
    r = ((ze_driver_get_fn)fn[1])(&nd, NULL);
    if (r != ZE_RESULT_SUCCESS || nd == 0) {
        dk_reason(p, "Level Zero loader present (%s), no driver: "
                  "zeDriverGet found %u drivers (%s)", p->library, nd,
                  xpu_result_name(r));
        return;
    }
    ze_driver_handle_t drv[XPU_MAX_DRIVERS];
    if (nd > XPU_MAX_DRIVERS)
        nd = XPU_MAX_DRIVERS;
    if (((ze_driver_get_fn)fn[1])(&nd, drv) != ZE_RESULT_SUCCESS)
        nd = 0;
    int count = 0;
    for (uint32_t d = 0; d < nd; d++) {
        ze_device_handle_t dev[DK_MAX_DEVICES];
        uint32_t n = 0;
        if (((ze_device_get_fn)fn[2])(drv[d], &n, NULL) != ZE_RESULT_SUCCESS)
            continue;
        if (n > DK_MAX_DEVICES)
            n = DK_MAX_DEVICES;
        if (((ze_device_get_fn)fn[2])(drv[d], &n, dev) != ZE_RESULT_SUCCESS)
            continue;
        for (uint32_t i = 0; i < n && count < DK_MAX_DEVICES; i++) {
            ze_device_properties_t pr = {0};
            pr.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;
            if (((ze_device_get_properties_fn)fn[3])(dev[i], &pr)
                    != ZE_RESULT_SUCCESS
                || pr.type != ZE_DEVICE_TYPE_GPU)
                continue; /* a GPU-only backend: NPUs etc. are not ours */
            pr.name[ZE_MAX_DEVICE_NAME - 1] = '\0';
            snprintf(p->name[count], DK_NAME_LEN, "xpu%d (%.100s)", count,
                     pr.name);
            count++;
        }
    }
    p->count = count;
    if (count == 0)
        dk_reason(p, "Level Zero driver present, no GPU devices (%u "
                  "driver%s)", nd, nd == 1 ? "" : "s");
}

static const dk_vendor xpu_vendor = {
    .name = "xpu",
    .version = RNGSNAP_VERSION_STRING,
    .runtime = "Level Zero",
    .library = "libze_loader.so.1",
    .device_prefix = "xpu",
    .probe = xpu_probe,
};

DEVICEKIT_PLUGIN(xpu_vendor)
