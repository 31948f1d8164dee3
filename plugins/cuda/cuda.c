/*
 * cuda.c - the NVIDIA backend: what is its own is finding the CUDA driver
 * (libcuda.so.1, opened at run time: cuInit, cuDeviceGetCount, cuDeviceGet,
 * cuDeviceGetName) and, when built with nvcc, generating into device memory
 * (cuda_fill.cu).  The plugin file has no hard dependency on libcuda.so.1:
 * the CUDA runtime is linked statically and itself opens the driver when
 * first used, so the plugin loads on machines without a GPU.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <dlfcn.h>

#include "devicekit.h"
#include "philox.h"
#include "rngsnap_build_config.h"

typedef int (*cu_init_fn)(unsigned flags);
typedef int (*cu_device_get_count_fn)(int *count);
typedef int (*cu_device_get_fn)(int *device, int ordinal);
typedef int (*cu_device_get_name_fn)(char *name, int len, int device);
typedef int (*cu_get_error_name_fn)(int err, const char **name);
typedef int (*cu_ctx_get_current_fn)(void **ctx);
typedef int (*cu_ctx_set_current_fn)(void *ctx);

/* Kept from the probe: the driver's current-context calls, so that a fill
 * (whose cudaSetDevice makes device N's primary context current) can give
 * the calling thread back the context it had: the app's own CUDA runtime
 * must not find itself on another device. */
typedef struct cuda_state {
    cu_ctx_get_current_fn ctx_get;
    cu_ctx_set_current_fn ctx_set;
} cuda_state;

#define CUDA_ERROR_NO_DEVICE 100

static void cuda_probe(dk_probe *p)
{
    void *lib = dk_dlopen(p, "install the NVIDIA driver");
    if (lib == NULL)
        return;
    static const char *const names[] = {"cuInit", "cuDeviceGetCount",
                                        "cuDeviceGet", "cuDeviceGetName"};
    void *fn[4];
    if (dk_dlsym_all(p, lib, names, fn, 4) != 0) {
        dlclose(lib);
        return;
    }
    /* The driver stays loaded: cuInit cannot be undone. */
    int rc = ((cu_init_fn)fn[0])(0);
    if (rc != 0) {
        const char *en = NULL;
        cu_get_error_name_fn gen =
            (cu_get_error_name_fn)dlsym(lib, "cuGetErrorName");
        if (gen == NULL || gen(rc, &en) != 0)
            en = "CUDA error";
        if (rc == CUDA_ERROR_NO_DEVICE)
            dk_reason(p, "CUDA driver present (%s), no devices: cuInit "
                      "returned %s (check CUDA_VISIBLE_DEVICES and "
                      "nvidia-smi)", p->library, en);
        else
            dk_reason(p, "CUDA driver present (%s), cuInit returned %s "
                      "(%d): driver and kernel module out of step?",
                      p->library, en, rc);
        return;
    }
    int n = 0;
    if (((cu_device_get_count_fn)fn[1])(&n) != 0 || n <= 0) {
        dk_reason(p, "CUDA driver present (%s), no devices (check "
                  "CUDA_VISIBLE_DEVICES and nvidia-smi)", p->library);
        return;
    }
    if (n > DK_MAX_DEVICES)
        n = DK_MAX_DEVICES;
    for (int i = 0; i < n; i++) {
        char dn[DK_NAME_LEN / 2] = "unknown GPU";
        int dev = 0;
        if (((cu_device_get_fn)fn[2])(&dev, i) == 0)
            ((cu_device_get_name_fn)fn[3])(dn, (int)sizeof dn, dev);
        dn[sizeof dn - 1] = '\0';
        snprintf(p->name[i], DK_NAME_LEN, "cuda%d (%s)", i, dn);
    }
    p->count = n;
    cuda_state *st = calloc(1, sizeof *st);
    if (st != NULL) {
        st->ctx_get = (cu_ctx_get_current_fn)dlsym(lib, "cuCtxGetCurrent");
        st->ctx_set = (cu_ctx_set_current_fn)dlsym(lib, "cuCtxSetCurrent");
    }
    p->vendor_state = st;
}

static void cuda_release(dk_probe *p)
{
    free(p->vendor_state); /* the driver itself stays loaded */
    p->vendor_state = NULL;
}

#if RNGSNAP_HAVE_CUDA
int rs_cuda_fill(int device, uint64_t seed, uint64_t subsequence,
                 uint64_t offset, int dist, void *out, size_t n,
                 uint64_t words, char *err, size_t errlen);

static int cuda_fill(const dk_fill *f)
{
    char err[256];
    const cuda_state *st = f->vendor_state;
    void *prev = NULL;
    int have_prev = st != NULL && st->ctx_get != NULL && st->ctx_set != NULL
                    && st->ctx_get(&prev) == 0 && prev != NULL;
    int rc = rs_cuda_fill(f->device, f->pos.seed, f->pos.subsequence,
                     f->pos.offset, (int)f->dist, f->out, f->n,
                     philox_words_for(f->dist, f->n), err, sizeof err);
    if (have_prev)
        st->ctx_set(prev);
    if (rc != 0) {
        f->host->error(f->host, "cuda%d: %s", f->device, err);
        return RNGSNAP_E_BACKEND;
    }
    return RNGSNAP_OK;
}
#endif

static const dk_vendor cuda_vendor = {
    .name = "cuda",
    .version = RNGSNAP_VERSION_STRING,
    .runtime = "CUDA driver",
    .library = "libcuda.so.1",
    .device_prefix = "cuda",
    .probe = cuda_probe,
    .release = cuda_release,
#if RNGSNAP_HAVE_CUDA
    .memory = RNGSNAP_MEMORY_DEVICE,
    .fill = cuda_fill,
#else
    .build_note = "built without GPU support (" RNGSNAP_CUDA_MISSING
                  "): generates into host memory",
#endif
};

DEVICEKIT_PLUGIN(cuda_vendor)
