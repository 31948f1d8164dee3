/*
 * fuzz_format.c - fuzz target: the checkpoint decoder (rs_fmt_decode, the
 * reader behind rngsnap_file_open and rngsnap_load) on arbitrary bytes,
 * as they are and with their checksums repaired.
 *
 * Invariants: no crash, no read outside the input, no leak; a refusal is
 * RNGSNAP_E_CORRUPT with a message; an accepted file is exactly what the
 * encoder writes: every section re-encoded from its decoded fields gives
 * the same bytes, and the sections tile the file between header and
 * trailer; with RS_FMT_CHECK_DUPLICATES no two sections share a key.
 * The raw bytes also go through the public rngsnap_file_open (from a
 * memfd), which must give the decoder's answer.
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rngsnap/backend.h>

#include "format.h"
#include "fuzz.h"

static void check_accepted(const uint8_t *buf, size_t len,
                           const rs_fmt_view *v)
{
    size_t at = RS_FMT_HEADER_SIZE;
    for (uint32_t i = 0; i < v->header.section_count; i++) {
        const rs_fmt_section *s = &v->sections[i];
        const rngsnap_file_section *p = &s->pub;
        FUZZ_CHECK(s->offset == at && s->size <= len - at,
                   "section %u at %u, expected %zu", i, s->offset, at);
        FUZZ_CHECK(p->name && strlen(p->name) == s->name_len,
                   "section %u name", i);
        int stream = p->kind == RNGSNAP_SECTION_STREAM;
        FUZZ_CHECK(stream ? p->backend && strlen(p->backend) == s->backend_len
                          : p->backend == NULL && p->device == -1,
                   "section %u backend", i);
        size_t size = rs_fmt_section_size(s->backend_len, s->name_len,
                                          p->state_size);
        FUZZ_CHECK(size == s->size, "section %u size %zu != %u", i, size,
                   s->size);
        FUZZ_CHECK(p->state == buf + at + size - 8 - p->state_size,
                   "section %u state pointer", i);
        /* Re-encode from the decoded fields: the same bytes. */
        uint8_t *re = malloc(size);
        FUZZ_CHECK(re != NULL, "malloc");
        uint8_t *st = rs_fmt_put_section(re, p->kind, p->backend,
                                         s->backend_len, p->device, p->name,
                                         s->name_len, p->state_format,
                                         (uint32_t)p->state_size);
        memcpy(st, p->state, p->state_size);
        rs_fmt_section_seal(re, size);
        FUZZ_CHECK(memcmp(re, buf + at, size) == 0,
                   "section %u re-encodes differently", i);
        free(re);
        char label[600];
        rs_fmt_section_label(p, label, sizeof label);
        rngsnap_philox ph;
        int prc = rngsnap_philox_decode(p, &ph);
        FUZZ_CHECK(prc == RNGSNAP_OK
                       || prc == RNGSNAP_E_INVALID,
                   "philox_decode %d", prc);
        at += size;
    }
    FUZZ_CHECK(at + RS_FMT_TRAILER_SIZE == len, "sections end at %zu of %zu",
               at, len);
    FUZZ_CHECK(v->header.file_size == len, "file_size");
}

/* rngsnap_file_open of the bytes, through a file: the same code as
 * decode() behind the read.  Returns its code; *count gets the sections. */
static int file_open(const uint8_t *buf, size_t len, size_t *count)
{
    int fd = memfd_create("rngsnap-fuzz", MFD_CLOEXEC);
    FUZZ_CHECK(fd >= 0, "memfd_create");
    FUZZ_CHECK(write(fd, buf, len) == (ssize_t)len, "write");
    char path[64], err[512];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    rngsnap_file *f = NULL;
    int rc = rngsnap_file_open(path, &f, err, sizeof err);
    close(fd);
    FUZZ_CHECK((rc == RNGSNAP_OK) == (f != NULL), "file handle and rc %d",
               rc);
    *count = rngsnap_file_section_count(f);
    for (size_t i = 0; i < *count; i++)
        FUZZ_CHECK(rngsnap_file_section_at(f, i) != NULL, "section %zu", i);
    FUZZ_CHECK(rngsnap_file_section_at(f, *count) == NULL, "past the end");
    rngsnap_file_close(f);
    return rc;
}

static int decode(const uint8_t *buf, size_t len, unsigned flags)
{
    rs_fmt_view v;
    char err[512];
    err[0] = 0;
    int rc = rs_fmt_decode(buf, len, "fuzz", flags, &v, err, sizeof err);
    if (rc == RNGSNAP_OK) {
        check_accepted(buf, len, &v);
        /* The decoder sorts to find repeated keys; check it pair by pair
         * (inputs are small here). */
        for (uint32_t i = 0; (flags & RS_FMT_CHECK_DUPLICATES)
                             && i < v.header.section_count; i++)
            for (uint32_t j = 0; j < i; j++) {
                const rs_fmt_section *a = &v.sections[i], *b = &v.sections[j];
                int same = a->pub.kind == b->pub.kind
                           && a->pub.device == b->pub.device
                           && strcmp(a->pub.name, b->pub.name) == 0
                           && (!a->pub.backend
                               || strcmp(a->pub.backend, b->pub.backend) == 0);
                FUZZ_CHECK(!same, "sections %u and %u share a key", j, i);
            }
        rs_fmt_view_free(&v);
        return rc;
    }
    FUZZ_CHECK(rc == RNGSNAP_E_CORRUPT || rc == RNGSNAP_E_NOMEM,
               "decode returned %d", rc);
    FUZZ_CHECK(strncmp(err, "fuzz: ", 6) == 0, "message '%s'", err);
    FUZZ_CHECK(v.sections == NULL, "sections kept after a refusal");
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    decode(data, size, 0);
    uint8_t *fixed = fuzz_fix_checksums(data, size);
    int rc = decode(fixed, size, RS_FMT_CHECK_DUPLICATES);
    size_t count;
    FUZZ_CHECK(file_open(fixed, size, &count) == rc,
               "rngsnap_file_open and the decoder disagree");
    FUZZ_CHECK(rc != RNGSNAP_OK || count == (size_t)(size >= 52
                   ? (uint32_t)(fixed[48] | fixed[49] << 8 | fixed[50] << 16
                                | (uint32_t)fixed[51] << 24) : 0),
               "section count");
    free(fixed);
    return 0;
}
