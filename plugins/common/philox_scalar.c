/*
 * philox_scalar.c - the portable path: one Philox block at a time, then
 * the conversion.  Also the reference the SIMD paths are tested against.
 */
#include "philox_loop.h"

#define PX_SCALAR_CHUNK 64 /* blocks converted per batch */

void px_fill_scalar(rngsnap_dist dist, const px_ctr *c, void *out,
                    size_t nblocks, int nt)
{
    (void)nt;
    uint32_t w[PX_SCALAR_CHUNK * 4];
    uint64_t block = c->block;
    char *o = out;
    while (nblocks > 0) {
        size_t nb = nblocks < PX_SCALAR_CHUNK ? nblocks : PX_SCALAR_CHUNK;
        /* words go straight to out for U32/U64, else through w */
        uint32_t *dst = dist <= RNGSNAP_U64 ? (uint32_t *)(void *)o : w;
        for (size_t b = 0; b < nb; b++, block++) {
            uint32_t ctr[4] = {(uint32_t)block, (uint32_t)(block >> 32),
                               (uint32_t)c->subseq,
                               (uint32_t)(c->subseq >> 32)};
            px_block(ctr, c->key, &dst[4 * b]);
        }
        if (dst == w)
            px_convert_loop(dist, w, o, nb);
        o += nb * px_block_bytes(dist);
        nblocks -= nb;
    }
}

void px_convert_blocks(rngsnap_dist dist, const uint32_t *w, void *out,
                       size_t nblocks)
{
    px_convert_loop(dist, w, out, nblocks);
}
