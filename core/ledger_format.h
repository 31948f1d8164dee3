/*
 * ledger_format.h - the divergence ledger's file layout (docs/format.md,
 * "Divergence ledger"), shared by the writer (core/ledger.c) and the
 * reader of the rngsnap command (tools/ledger/ledger_read.c).
 *
 * Every integer is little-endian whatever the machine, so a ledger
 * written on one machine reads on any other.  A file is a 16-byte
 * prefix, then records; each record is
 *     u32 len (the whole record, these 4 bytes and the checksum included)
 *     u8  kind
 *     ... payload ...
 *     u64 XXH3-64 of every byte before it in the record
 * and is written with one write(2): a kill leaves every earlier record
 * whole, at worst a torn last one, which readers detect and drop.
 */
#ifndef RNGSNAP_CORE_LEDGER_FORMAT_H
#define RNGSNAP_CORE_LEDGER_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define RS_LG_MAGIC "RNGSNAPL"     /* 8 bytes, no NUL */
#define RS_LG_VERSION 1u
#define RS_LG_PREFIX_SIZE 16       /* magic, u32 version, u32 0 */
#define RS_LG_REC_HEAD 5           /* u32 len, u8 kind */
#define RS_LG_REC_MIN (RS_LG_REC_HEAD + 8)
#define RS_LG_REC_MAX (64u << 20)  /* a reader refuses longer records */

/* Record kinds. */
enum {
    RS_LG_OPEN = 'O',   /* an open: u32 segment, u16 flags, i32 rank,
                           i32 world_size, i64 unix time               */
    RS_LG_LAYOUT = 'L', /* the entries of the next steps: u32 nstreams,
                           u32 napps; per stream u8 kind, u16 len,
                           label; per app u16 len, name                */
    RS_LG_STEP = 'S'    /* u64 step; per stream u64 a, u64 b; per app
                           u64 digest; u16 nnotes; per note u8 type,
                           u8 name len, u32 value len, name, value     */
};

/* RS_LG_OPEN flags. */
#define RS_LG_F_CONTINUED 1u /* appended to an existing ledger         */
#define RS_LG_F_RESUME 2u    /* the context was opened with RNGSNAP_RESUME */

/* A stream's kind in the layout, and what its two step words hold. */
enum {
    RS_LG_PHILOX = 'P', /* a: offset in words; b: XXH3-64 of
                           (seed, subsequence), 16 bytes LE             */
    RS_LG_OPAQUE = 'O'  /* a: 0; b: XXH3-64 of the plugin's state bytes */
};

/* Note value types (Python's note() picks one; C's is bytes). */
enum {
    RS_LG_NOTE_BYTES = 'b',
    RS_LG_NOTE_INT = 'i',   /* i64 */
    RS_LG_NOTE_FLOAT = 'f', /* IEEE-754 binary64 */
    RS_LG_NOTE_STR = 's'    /* UTF-8 */
};
#define RS_LG_NOTE_NAME_MAX 255
#define RS_LG_NOTE_VALUE_MAX (1u << 20)

static inline void rs_lg_put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void rs_lg_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline void rs_lg_put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t rs_lg_get16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t rs_lg_get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}
static inline uint64_t rs_lg_get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

/* The Python package's note() (typed); C's rngsnap_ledger_note is the
 * RS_LG_NOTE_BYTES case.  Defined in core/ledger.c. */
struct rngsnap;
int rs_ledger_note_typed(struct rngsnap *ctx, const char *name, int type,
                         const void *value, size_t size);

#endif /* RNGSNAP_CORE_LEDGER_FORMAT_H */
