/*
 * mismatch.h - the words of a strict load's refusal when the checkpoint's
 * sections and the live registry do not pair up (checkpoint.c pairs them).
 */
#ifndef RNGSNAP_CORE_MISMATCH_H
#define RNGSNAP_CORE_MISMATCH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "context.h"
#include "format.h"

/* live (a C string) equals the len-byte name from the file (no NUL
 * inside, verified by the decoder).  strncmp, not memcmp: a live name
 * shorter than len must not be read past its NUL. */
static inline int rs_name_is(const char *live, const char *file, size_t len)
{
    return strncmp(live, file, len) == 0 && live[len] == 0;
}

/* Set ctx's message for a load of path whose view v did not pair up with
 * the registry, and return RNGSNAP_E_MISMATCH (RNGSNAP_E_NOMEM).
 * smap[entry] / amap[app] hold the section of each live stream / app
 * state, UINT32_MAX for none; a section that none of them holds has no
 * live entry (a fork, apps_only, pairs app states only).
 *
 * A backend whose device count differs (the checkpoint has some of its
 * devices, this configuration another number) is said in the admin's
 * terms: "the checkpoint has 2 cuda devices and this configuration 4
 * (emulate_devices = 4 at FILE:LINE)", with the way out; the entries
 * that explains are not listed one by one.  Any other offender is named
 * (the first on each side, and how many more). */
int rs_mismatch_error(struct rngsnap *ctx, const char *path,
                      const rs_fmt_view *v, const uint32_t *smap,
                      const uint32_t *amap, int apps_only);

#endif /* RNGSNAP_CORE_MISMATCH_H */
