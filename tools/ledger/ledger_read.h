/*
 * ledger_read.h - reading divergence ledgers (core/ledger_format.h,
 * docs/format.md) for `rngsnap ledger show` and `rngsnap ledger diff`.
 */
#ifndef RNGSNAP_TOOLS_LEDGER_READ_H
#define RNGSNAP_TOOLS_LEDGER_READ_H

#include <stddef.h>
#include <stdint.h>

/* The entries of the steps that follow one LAYOUT record. */
typedef struct lg_layout {
    uint32_t nstreams, napps;
    char **names;     /* nstreams stream labels, then napps app names */
    uint8_t *kinds;   /* per stream: 'P' Philox, 'O' opaque           */
} lg_layout;

typedef struct lg_note {
    uint8_t type;     /* 'b' 'i' 'f' 's' */
    char *name;
    const uint8_t *value;  /* into the file's bytes */
    uint32_t len;
} lg_note;

typedef struct lg_record {
    uint64_t step;
    uint32_t segment;
    size_t offset;            /* byte offset in the file */
    const lg_layout *layout;
    const uint8_t *words;     /* 16 per stream, then 8 per app (LE) */
    lg_note *notes;
    size_t nnotes;
} lg_record;

typedef struct lg_segment {
    uint32_t number;
    unsigned flags;           /* RS_LG_F_* */
    int64_t time;
    size_t offset;
} lg_segment;

typedef struct lg_file {
    char *path;
    uint8_t *bytes;
    size_t size;
    int32_t rank, world_size;
    lg_segment *segs;
    size_t nsegs;
    lg_layout **layouts;
    size_t nlayouts;
    lg_record *recs;          /* every step record, in file order */
    size_t nrecs;
    size_t torn_offset;       /* a torn last record: where it began */
    size_t torn_bytes;        /* and how long it is (0: none)       */
} lg_file;

/* Read and check path.  NULL on failure with the reason in err. */
lg_file *lg_read(const char *path, char *err, size_t errlen);
void lg_free(lg_file *f);

/* Stream i's (i < nstreams) two words and app j's digest of a record. */
uint64_t lg_stream_a(const lg_record *r, uint32_t i);
uint64_t lg_stream_b(const lg_record *r, uint32_t i);
uint64_t lg_app(const lg_record *r, uint32_t j);

/* A note's value as a person reads it, into buf. */
const char *lg_note_text(const lg_note *n, char *buf, size_t len);

/* The files of a per-rank folder (or the one file): the ledgers it
 * holds, sorted by rank; NULL with err on failure (two files of one
 * rank, none at all, an unreadable one). */
lg_file **lg_read_set(const char *path, size_t *n, char *err, size_t errlen);
void lg_free_set(lg_file **set, size_t n);

#endif
