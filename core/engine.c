/*
 * engine.c - the built-in Philox4x32-10 engine (plugins/common, linked
 * into the core with hidden symbols) as public API: rngsnap_philox_generate
 * for apps, and the same function in every plugin's host table
 * (rngsnap_host.philox_generate, host.c), so that an out-of-tree backend
 * draws the built-in bits without linking the core (docs/plugin-guide.md).
 */
#include <rngsnap.h>

#include "philox.h"

int rngsnap_philox_generate(rngsnap_philox *at, rngsnap_dist dist, void *out,
                            size_t n)
{
    /* philox_generate checks every argument before it touches *at. */
    return philox_generate(at, dist, out, n);
}

uint64_t rngsnap_dist_words(rngsnap_dist dist, size_t n)
{
    return philox_words_for(dist, n);
}
