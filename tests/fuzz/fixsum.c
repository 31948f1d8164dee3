/*
 * fixsum.c - fuzz_fix_checksums (see fuzz.h): recompute the checksums of
 * a mutated checkpoint.  Written from docs/format.md, not from format.c,
 * so that a wrong offset in either shows as a difference.
 */
#include <string.h>

#include <xxhash.h>

#include "fuzz.h"

enum { HEADER = 64, HEADER_SUM = 56, TRAILER = 24, SECTION_MIN = 35 };

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16
           | (uint32_t)p[3] << 24;
}

static void wle64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

uint8_t *fuzz_fix_checksums(const uint8_t *data, size_t size)
{
    uint8_t *b = malloc(size ? size : 1);
    if (!b)
        abort();
    memcpy(b, data, size);
    if (size < HEADER)
        return b;
    wle64(b + HEADER_SUM, XXH3_64bits(b, HEADER_SUM));
    if (size < HEADER + TRAILER)
        return b;
    size_t end = size - TRAILER, at = HEADER;
    /* Sections: u32 kind, u32 size, ..., u64 checksum of the rest. */
    while (end - at >= 8) {
        uint32_t len = le32(b + at + 4);
        if (len < SECTION_MIN || len > end - at)
            break;
        wle64(b + at + len - 8, XXH3_64bits(b + at, len - 8));
        at += len;
    }
    wle64(b + end + 8, (uint64_t)size);
    wle64(b + end + 16, XXH3_64bits(b, size - 8));
    return b;
}
