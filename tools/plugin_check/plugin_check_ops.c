/*
 * plugin_check_ops.c - the checks' direct calls on one stream (through the
 * wrapped table, so each is recorded), and what they need to judge the
 * results: distribution sizes, names and value ranges.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "plugin_check.h"

static _Thread_local unsigned long mark; /* rs_error_mark of the last call */

int pc_seed(pc *p, rngsnap_stream *s, uint64_t seed, uint64_t subsequence)
{
    mark = rs_error_mark();
    return p->b->vt->seed(s->handle, seed, subsequence);
}

int pc_get(pc *p, rngsnap_stream *s, void *buf, size_t len)
{
    mark = rs_error_mark();
    return p->b->vt->get_state(s->handle, buf, len);
}

int pc_set(pc *p, rngsnap_stream *s, const void *buf, size_t len)
{
    mark = rs_error_mark();
    return p->b->vt->set_state(s->handle, buf, len);
}

int pc_gen(pc *p, rngsnap_stream *s, rngsnap_dist dist, void *out, size_t n)
{
    mark = rs_error_mark();
    return p->b->vt->generate(s->handle, dist, out, n);
}

const char *pc_plugin_msg(pc *p)
{
    return rs_error_since(p->ctx, mark);
}

const char *pc_label(const rngsnap_stream *s, char *buf, size_t len)
{
    return rs_stream_label(s, buf, len);
}

const char *pc_dist_name(int dist)
{
    static _Thread_local char buf[32];
    if (dist >= 0 && dist < RNGSNAP_DIST_COUNT)
        return rngsnap_dist_name((rngsnap_dist)dist);
    snprintf(buf, sizeof buf, "dist %d", dist);
    return buf;
}

size_t pc_dist_size(int dist)
{
    return dist >= 0 && dist < RNGSNAP_DIST_COUNT
               ? rngsnap_dist_size((rngsnap_dist)dist) : 8;
}

/* The ranges of include/rngsnap.h: uniform [0,1) (cuRAND's (0,1]),
 * normals finite; and not every value the same. */
int pc_values_ok(int dist, const void *out, size_t n, char *why, size_t len)
{
    size_t size = pc_dist_size(dist);
    for (size_t i = 0; i < n; i++) {
        double v;
        if (size == 4 && dist != RNGSNAP_U32) {
            float f;
            memcpy(&f, (const char *)out + i * 4, 4);
            v = f;
        } else if (size == 8 && dist != RNGSNAP_U64) {
            memcpy(&v, (const char *)out + i * 8, 8);
        } else {
            continue;
        }
        int ok;
        switch (dist) {
        case RNGSNAP_F32: case RNGSNAP_F64:
            ok = v >= 0.0 && v < 1.0;
            break;
        case RNGSNAP_CURAND_UNIFORM_F32: case RNGSNAP_CURAND_UNIFORM_F64:
            ok = v > 0.0 && v <= 1.0;
            break;
        default:
            ok = isfinite(v) && fabs(v) < 64.0;
        }
        if (!ok) {
            snprintf(why, len, "value %zu is %.17g, outside the range of %s",
                     i, v, pc_dist_name(dist));
            return 0;
        }
    }
    if (n >= 8) {
        size_t same = 1;
        for (size_t i = 1; i < n; i++)
            same += memcmp(out, (const char *)out + i * size, size) == 0;
        if (same == n) {
            snprintf(why, len, "all %zu values are the same", n);
            return 0;
        }
    }
    return 1;
}

uint8_t *pc_state(pc *p, rngsnap_stream *s)
{
    size_t size = p->b->vt->state_size;
    uint8_t *buf = calloc(1, size);
    char l[256];
    if (!buf) {
        pc_fail(p, "out of memory");
        return NULL;
    }
    int rc = pc_get(p, s, buf, size);
    if (rc) {
        const char *m = pc_plugin_msg(p);
        pc_fail(p, "get_state of %s failed: %s%s%s",
                pc_label(s, l, sizeof l), rngsnap_error_name(rc),
                m ? ": " : "", m ? m : "");
        free(buf);
        return NULL;
    }
    return buf;
}

void *pc_draw(pc *p, rngsnap_stream *s, int dist, size_t n, const char *what)
{
    void *out = calloc(n ? n : 1, pc_dist_size(dist));
    char l[256];
    if (!out) {
        pc_fail(p, "out of memory");
        return NULL;
    }
    int rc = pc_gen(p, s, (rngsnap_dist)dist, out, n);
    if (rc) {
        const char *m = pc_plugin_msg(p);
        pc_fail(p, "generate(%s, %zu) on %s failed %s: %s%s%s",
                pc_dist_name(dist), n, pc_label(s, l, sizeof l), what,
                rngsnap_error_name(rc), m ? ": " : "", m ? m : "");
        free(out);
        return NULL;
    }
    return out;
}
