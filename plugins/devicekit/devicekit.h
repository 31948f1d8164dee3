/*
 * devicekit.h - the one shared piece of the device plugins (cuda, hpu,
 * xpu, npu).
 *
 * devicekit owns everything a device plugin has in common: the backend
 * table, option parsing (emulate_devices, runtime_library), emulation,
 * per-device Philox streams (philox_stream embedded first) and host
 * generation.  A plugin file only fills a dk_vendor: its name, how to find
 * its runtime and devices (probe), and, if it has one, how to generate into
 * device memory.  Then it says DEVICEKIT_PLUGIN(its_vendor).
 */
#ifndef RNGSNAP_DEVICEKIT_H
#define RNGSNAP_DEVICEKIT_H

#include <stddef.h>
#include <stdint.h>

#include <rngsnap/backend.h>

#include "philox_stream.h"

#define DK_MAX_DEVICES 64
#define DK_NAME_LEN 128
#define DK_REASON_LEN 512

/* What a probe found.  probe() fills count, name[] and, when count is 0,
 * reason; it may keep its own handles in vendor_state (released by the
 * vendor's release()). */
typedef struct dk_probe {
    const rngsnap_host *host; /* for logging                               */
    const char *library;      /* runtime to dlopen: the runtime_library
                                 option, else the vendor's default         */
    int count;
    char name[DK_MAX_DEVICES][DK_NAME_LEN];
    char reason[DK_REASON_LEN];
    void *vendor_state;
} dk_probe;

/* A device generate call: fill out (device memory) with n values of dist
 * from *pos; devicekit advances pos afterwards on success. */
typedef struct dk_fill {
    const rngsnap_host *host;
    void *vendor_state;
    int device;
    rngsnap_philox pos;
    rngsnap_dist dist;
    void *out;
    size_t n;
} dk_fill;

typedef struct dk_vendor {
    const char *name;           /* backend name, e.g. "cuda"                 */
    const char *version;        /* plugin version                            */
    const char *runtime;        /* words for the runtime, e.g. "CUDA driver" */
    const char *library;        /* default runtime file, e.g. "libcuda.so.1" */
    const char *device_prefix;  /* "cuda" -> device names "cuda0 (...)"      */
    /* Find the runtime and devices.  Never fails: no runtime is 0 devices
     * with a reason a person can act on. */
    void (*probe)(dk_probe *p);
    void (*release)(dk_probe *p);   /* optional */
    /* Where a real (not emulated) device's streams write: DEVICE needs
     * fill; HOST (0, the default) generates on the host, and
     * rngsnap_reserve feeds the app's own device kernels.  Emulated
     * devices always write host memory. */
    rngsnap_memory memory;
    /* Generate into device memory on a real device (memory DEVICE). */
    int (*fill)(const dk_fill *f);
    /* Optional note added to the status line, e.g. "built without GPU
     * support". */
    const char *build_note;
} dk_vendor;

/* The backend table for vendor v.  Call it from rngsnap_backend_v1 (the
 * DEVICEKIT_PLUGIN macro does); a plugin file holds exactly one vendor. */
const rngsnap_backend *devicekit_backend(const dk_vendor *v);

/* Helpers for probes: format into p->reason; dlopen with a reason. */
void dk_reason(dk_probe *p, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* dlopen p->library (RTLD_NOW|RTLD_LOCAL).  On failure sets p->reason to
 * "<library> not found (<dlerror>); <hint>" and returns NULL. */
void *dk_dlopen(dk_probe *p, const char *hint);
/* Resolve nsyms names into fns[]; on a missing one sets p->reason and
 * returns -1. */
int dk_dlsym_all(dk_probe *p, void *handle, const char *const *names,
                 void **fns, size_t nsyms);

#define DEVICEKIT_PLUGIN(vendor)                                   \
    RNGSNAP_PLUGIN_EXPORT const rngsnap_backend *rngsnap_backend_v1(void) \
    {                                                              \
        return devicekit_backend(&(vendor));                       \
    }

#endif
