/*
 * ranks_wire.h - the bytes of the messages ranks send each other in a
 * multi-rank save or load: a growing writer and a bounded reader.  Both
 * ends are one job built from one library, so values go in host order;
 * the reader still bounds every length by the bytes it has, so a
 * damaged message is refused, never read past.
 */
#ifndef RNGSNAP_CORE_RANKS_WIRE_H
#define RNGSNAP_CORE_RANKS_WIRE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct rs_wbuf {
    uint8_t *p;
    size_t len, cap;
    int nomem; /* a growth failed: the buffer is incomplete */
} rs_wbuf;

static inline void rs_w_put(rs_wbuf *w, const void *src, size_t n)
{
    if (w->nomem)
        return;
    if (w->len + n > w->cap) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap < w->len + n)
            cap *= 2;
        uint8_t *p = realloc(w->p, cap);
        if (!p) {
            w->nomem = 1;
            return;
        }
        w->p = p;
        w->cap = cap;
    }
    if (n)
        memcpy(w->p + w->len, src, n);
    w->len += n;
}

static inline void rs_w_u32(rs_wbuf *w, uint32_t v) { rs_w_put(w, &v, 4); }
static inline void rs_w_u64(rs_wbuf *w, uint64_t v) { rs_w_put(w, &v, 8); }
/* A string as u16 length and bytes (no NUL). */
static inline void rs_w_str(rs_wbuf *w, const char *s)
{
    size_t n = strlen(s);
    uint16_t l = (uint16_t)n;
    rs_w_put(w, &l, 2);
    rs_w_put(w, s, n);
}

typedef struct rs_rbuf {
    const uint8_t *p, *end;
    int bad; /* a read went past the end: every later read gives zeros */
} rs_rbuf;

static inline int rs_r_take(rs_rbuf *r, void *dst, size_t n)
{
    if (r->bad || (size_t)(r->end - r->p) < n) {
        r->bad = 1;
        memset(dst, 0, n);
        return 0;
    }
    memcpy(dst, r->p, n);
    r->p += n;
    return 1;
}

static inline uint32_t rs_r_u32(rs_rbuf *r)
{
    uint32_t v;
    rs_r_take(r, &v, 4);
    return v;
}

static inline uint64_t rs_r_u64(rs_rbuf *r)
{
    uint64_t v;
    rs_r_take(r, &v, 8);
    return v;
}

/* A string of at most max-1 bytes into out[max], NUL-terminated. */
static inline void rs_r_str(rs_rbuf *r, char *out, size_t max)
{
    uint16_t l = 0;
    rs_r_take(r, &l, 2);
    if (l >= max)
        r->bad = 1;
    if (!rs_r_take(r, out, r->bad ? 0 : l) || r->bad)
        l = 0;
    out[l] = 0;
}

#endif /* RNGSNAP_CORE_RANKS_WIRE_H */
