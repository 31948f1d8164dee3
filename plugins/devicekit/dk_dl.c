/*
 * dk_dl.c - loading a vendor runtime for a probe: dlopen/dlsym with the
 * reason a person can act on when it fails.  The vendor runtimes are not
 * plugins, so plain libc dlopen is used here, not libltdl.
 */
#include "devicekit.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void dk_reason(dk_probe *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->reason, sizeof p->reason, fmt, ap);
    va_end(ap);
}

void *dk_dlopen(dk_probe *p, const char *hint)
{
    dlerror();
    void *h = dlopen(p->library, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *e = dlerror();
        size_t ll = strlen(p->library);
        if (e == NULL)
            e = "dlopen failed";
        else if (strncmp(e, p->library, ll) == 0 && strncmp(e + ll, ": ", 2) == 0)
            e += ll + 2; /* dlerror repeats the file name */
        dk_reason(p, "%s not found (%s); %s", p->library, e, hint);
    }
    return h;
}

int dk_dlsym_all(dk_probe *p, void *handle, const char *const *names,
                 void **fns, size_t nsyms)
{
    for (size_t i = 0; i < nsyms; i++) {
        dlerror();
        fns[i] = dlsym(handle, names[i]);
        if (fns[i] == NULL) {
            dk_reason(p, "%s lacks %s (too old or not the vendor runtime?)",
                      p->library, names[i]);
            return -1;
        }
    }
    return 0;
}
