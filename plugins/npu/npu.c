/*
 * npu.c - the Huawei Ascend backend: what is its own is finding CANN's ACL
 * runtime (libascendcl.so: aclInit, aclrtGetDeviceCount, aclrtGetSocName)
 * and its devices.  ACL stays initialised and loaded for the life of the
 * process: the app uses it too, and aclFinalize cannot be undone.  rngsnap does not build against CANN, so
 * streams generate into host memory; an app's own AscendC kernels draw
 * through rngsnap_reserve.
 */
#include <stdint.h>
#include <stdio.h>
#include <dlfcn.h>

#include "devicekit.h"

/* aclError is int; ACL_SUCCESS is 0 (acl/acl_base.h). */
#define NPU_ACL_ERROR_REPEAT_INITIALIZE 100002

typedef int (*acl_init_fn)(const char *config_path);
typedef int (*aclrt_get_device_count_fn)(uint32_t *count);
typedef const char *(*aclrt_get_soc_name_fn)(void);

static void npu_probe(dk_probe *p)
{
    void *lib = dk_dlopen(p, "install the Ascend CANN toolkit and source "
                             "its set_env.sh");
    if (lib == NULL)
        return;
    static const char *const names[] = {"aclInit", "aclrtGetDeviceCount"};
    void *fn[2];
    if (dk_dlsym_all(p, lib, names, fn, 2) != 0) {
        dlclose(lib);
        return;
    }
    int st = ((acl_init_fn)fn[0])(NULL);
    if (st != 0 && st != NPU_ACL_ERROR_REPEAT_INITIALIZE) {
        dk_reason(p, "CANN present (%s), aclInit failed with aclError %d: "
                  "is the Ascend driver installed?", p->library, st);
        return;
    }
    uint32_t n = 0;
    int cst = ((aclrt_get_device_count_fn)fn[1])(&n);
    if (cst != 0) {
        dk_reason(p, "CANN aclrtGetDeviceCount failed with aclError %d "
                  "(driver present, no usable devices?)", cst);
        n = 0;
    } else if (n == 0) {
        dk_reason(p, "CANN present (%s), driver reports no Ascend devices",
                  p->library);
    }
    /* aclrtGetSocName is optional (newer CANN): the chip name, if any. */
    aclrt_get_soc_name_fn soc =
        (aclrt_get_soc_name_fn)dlsym(lib, "aclrtGetSocName");
    const char *chip = soc != NULL ? soc() : NULL;
    p->count = (int)(n > DK_MAX_DEVICES ? DK_MAX_DEVICES : n);
    for (int i = 0; i < p->count; i++)
        snprintf(p->name[i], DK_NAME_LEN, "npu%d (%s)", i,
                 chip != NULL ? chip : "Ascend via CANN");
}

static const dk_vendor npu_vendor = {
    .name = "npu",
    .version = RNGSNAP_VERSION_STRING,
    .runtime = "CANN ACL",
    .library = "libascendcl.so",
    .device_prefix = "npu",
    .probe = npu_probe,
};

DEVICEKIT_PLUGIN(npu_vendor)
