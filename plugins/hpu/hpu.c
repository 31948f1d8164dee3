/*
 * hpu.c - the Habana Gaudi backend: what is its own is finding SynapseAI
 * (libSynapse.so: synInitialize, synDeviceGetCount) and its devices.
 * SynapseAI stays initialised and loaded for the life of the process:
 * the app uses it too, and synDestroy would pull it from under the app.
 * rngsnap does not build against SynapseAI, so streams generate into host
 * memory; an app's own TPC kernels draw through rngsnap_reserve.
 */
#include <stdint.h>
#include <stdio.h>
#include <dlfcn.h>

#include "devicekit.h"

/* synStatus (habanalabs/synapse_api_types.h): synSuccess is 0; a second
 * synInitialize returns synAlreadyInitialized when the app set
 * HABANA_DISABLE_DOUBLE_SYN_INITIALIZE, which is fine for us. */
#define HPU_SYN_ALREADY_INITIALIZED 29
typedef int (*syn_initialize_fn)(void);
typedef int (*syn_device_get_count_fn)(uint32_t *count);

static void hpu_probe(dk_probe *p)
{
    void *lib = dk_dlopen(p, "install the Habana SynapseAI software "
                             "(habanalabs-graph)");
    if (lib == NULL)
        return;
    static const char *const names[] = {"synInitialize",
                                        "synDeviceGetCount"};
    void *fn[2];
    if (dk_dlsym_all(p, lib, names, fn, 2) != 0) {
        dlclose(lib);
        return;
    }
    int st = ((syn_initialize_fn)fn[0])();
    if (st != 0 && st != HPU_SYN_ALREADY_INITIALIZED) {
        dk_reason(p, "SynapseAI present (%s), synInitialize failed with "
                  "synStatus %d: is the habanalabs driver loaded?",
                  p->library, st);
        return; /* runtime stays loaded: it may have started threads */
    }
    uint32_t n = 0;
    st = ((syn_device_get_count_fn)fn[1])(&n);
    if (st != 0) {
        dk_reason(p, "SynapseAI synDeviceGetCount failed with synStatus %d",
                  st);
        n = 0;
    } else if (n == 0) {
        dk_reason(p, "SynapseAI present (%s), no Gaudi devices "
                  "(check the habanalabs driver and device permissions)",
                  p->library);
    }
    p->count = (int)(n > DK_MAX_DEVICES ? DK_MAX_DEVICES : n);
    for (int i = 0; i < p->count; i++)
        snprintf(p->name[i], DK_NAME_LEN, "hpu%d (Gaudi via SynapseAI)", i);
}

static const dk_vendor hpu_vendor = {
    .name = "hpu",
    .version = RNGSNAP_VERSION_STRING,
    .runtime = "SynapseAI",
    .library = "libSynapse.so",
    .device_prefix = "hpu",
    .probe = hpu_probe,
};

DEVICEKIT_PLUGIN(hpu_vendor)
