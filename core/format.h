/*
 * format.h - the checkpoint file format (docs/format.md): encode into one
 * buffer, decode and verify one whole buffer into a view.
 *
 * Pure byte work: no I/O, no registry.  store.c moves the bytes,
 * checkpoint.c matches the view against the registry.
 */
#ifndef RNGSNAP_CORE_FORMAT_H
#define RNGSNAP_CORE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include <rngsnap.h>

#define RS_FMT_VERSION 1u
#define RS_FMT_MAGIC "RNGSNAP"      /* 8 bytes with its NUL */
#define RS_FMT_END_MAGIC "RNGSEND"  /* 8 bytes with its NUL */
#define RS_FMT_HEADER_SIZE 64u
#define RS_FMT_TRAILER_SIZE 24u
/* Fixed bytes of a section around its two names and its state:
 * kind 4, size 4, backend len 2 + NUL 1, device 4, name len 2 + NUL 1,
 * state_format 4, state_size 4, checksum 8. */
#define RS_FMT_SECTION_FIXED 34u
/* Smallest valid section: an app state with a 1-byte name, empty state. */
#define RS_FMT_SECTION_MIN (RS_FMT_SECTION_FIXED + 1u)

#define RS_FMT_NAME_MAX 255u                     /* bytes, without NUL  */
#define RS_FMT_STREAM_STATE_MAX (1u << 20)       /* 1 MiB               */
#define RS_FMT_APP_STATE_MAX (64u << 20)         /* 64 MiB              */
#define RS_FMT_FILE_MAX ((size_t)256u << 20)     /* 256 MiB             */

/* One decoded section: the public view plus where it lies in the file. */
typedef struct rs_fmt_section {
    rngsnap_file_section pub; /* strings point into the file buffer */
    uint32_t offset;          /* byte offset of the section         */
    uint32_t size;            /* section_size                       */
    uint16_t backend_len, name_len;
} rs_fmt_section;

/* A decoded, verified file.  Points into the buffer it was decoded from. */
typedef struct rs_fmt_view {
    rngsnap_file_header header;
    rs_fmt_section *sections; /* header.section_count of them (malloc) */
    /* After a failed decode: 1 + the index of the section that failed
     * (0: none), and its label as its possibly damaged header reads,
     * "cpu:0/augment", or "" where unreadable. */
    uint32_t damaged;
    char damaged_label[160];
} rs_fmt_view;

/* Size of a section with these name lengths and state size. */
static inline size_t rs_fmt_section_size(size_t backend_len, size_t name_len,
                                         size_t state_size)
{
    return RS_FMT_SECTION_FIXED + backend_len + name_len + state_size;
}

/* ---- encoding: the caller sizes the buffer, then fills it in order ---- */

/* Write the 64-byte header (checksum included) at p. */
void rs_fmt_put_header(uint8_t *p, int32_t rank, int32_t world_size,
                       int64_t created_unix, uint32_t section_count);

/* Write a section's fields up to its state at p (backend NULL for an app
 * state, device then -1).  Returns where the state_size state bytes go;
 * the caller fills them, then calls rs_fmt_section_seal(p, ...). */
uint8_t *rs_fmt_put_section(uint8_t *p, rngsnap_section_kind kind,
                            const char *backend, size_t backend_len,
                            int32_t device, const char *name,
                            size_t name_len, uint32_t state_format,
                            uint32_t state_size);
/* Store the checksum of the section at p (size bytes in all). */
void rs_fmt_section_seal(uint8_t *p, size_t size);

/* Write the trailer in the last 24 bytes of the file buf[0..size). */
void rs_fmt_put_trailer(uint8_t *buf, size_t size);

/* ---- decoding ---------------------------------------------------------- */

/* Decode flags. */
#define RS_FMT_CHECK_DUPLICATES 0x1u /* refuse two sections with one key */

/* Verify buf[0..len) completely (structure, every length, every
 * checksum) and fill *v (v->sections allocated; free with
 * rs_fmt_view_free).  Returns RNGSNAP_OK, RNGSNAP_E_CORRUPT or
 * RNGSNAP_E_NOMEM with the reason in err, prefixed by "what: ". */
int rs_fmt_decode(const uint8_t *buf, size_t len, const char *what,
                  unsigned flags, rs_fmt_view *v, char *err, size_t errlen);
void rs_fmt_view_free(rs_fmt_view *v);

/* The public reader's object (rngsnap_file_open) from bytes the caller
 * already read and checked: buf (malloc'd) is taken over, kept by *out
 * or freed on failure, so a file is read once (rngsnap_manifest_open_rank
 * checks its bytes against the manifest first).  Decoded as
 * rngsnap_file_open decodes, what naming it in messages. */
int rs_fmt_file_adopt(uint8_t *buf, size_t len, const char *what,
                      rngsnap_file **out, char *err, size_t errlen);

/* "cpu:0/dropout" or "app state progress" into out, for messages. */
void rs_fmt_section_label(const rngsnap_file_section *s, char *out,
                          size_t outlen);

#endif /* RNGSNAP_CORE_FORMAT_H */
