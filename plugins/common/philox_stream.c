/*
 * philox_stream.c - a host-memory Philox stream: the stream members of a
 * backend table, ready to use.  State blob: philox_state_pack's 24 bytes.
 */
#include <stdlib.h>

#include "philox.h"
#include "philox_isa.h"
#include "philox_stream.h"

int philox_stream_new(void *bctx, int device, size_t struct_size,
                      void **stream)
{
    if (stream == NULL || struct_size < sizeof(philox_stream))
        return RNGSNAP_E_INVALID;
    philox_stream *s = calloc(1, struct_size);
    if (s == NULL)
        return RNGSNAP_E_NOMEM;
    s->device = device;
    s->bctx = bctx;
    s->isa = PHILOX_ISA_AUTO;
    *stream = s;
    return RNGSNAP_OK;
}

void philox_stream_free(void *stream)
{
    free(stream);
}

int philox_stream_seed(void *stream, uint64_t seed, uint64_t subsequence)
{
    philox_stream *s = stream;
    s->pos.seed = seed;
    s->pos.subsequence = subsequence;
    s->pos.offset = 0;
    return RNGSNAP_OK;
}

int philox_stream_get_state(void *stream, void *buf, size_t len)
{
    philox_stream *s = stream;
    if (buf == NULL || len != RNGSNAP_STATE_PHILOX_SIZE)
        return RNGSNAP_E_INVALID;
    philox_state_pack(&s->pos, buf);
    return RNGSNAP_OK;
}

int philox_stream_validate_state(void *bctx, const void *buf, size_t len)
{
    (void)bctx;
    /* Every (seed, subsequence, offset) is a valid position. */
    return (buf != NULL && len == RNGSNAP_STATE_PHILOX_SIZE)
               ? RNGSNAP_OK
               : RNGSNAP_E_INVALID;
}

int philox_stream_set_state(void *stream, const void *buf, size_t len)
{
    philox_stream *s = stream;
    int rc = philox_stream_validate_state(s->bctx, buf, len);
    if (rc == RNGSNAP_OK)
        philox_state_unpack(buf, &s->pos);
    return rc;
}

int philox_stream_generate(void *stream, rngsnap_dist dist, void *out,
                           size_t n)
{
    philox_stream *s = stream;
    return philox_generate_cached(&s->pos, &s->cache, dist, out, n, s->isa);
}

int philox_stream_reserve(void *stream, uint64_t n, rngsnap_philox *at)
{
    philox_stream *s = stream;
    if (n > UINT64_MAX - s->pos.offset)
        return RNGSNAP_E_INVALID;
    if (at != NULL)
        *at = s->pos;
    s->pos.offset += n;
    return RNGSNAP_OK;
}
