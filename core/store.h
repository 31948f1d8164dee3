/*
 * store.h - moving checkpoint bytes to and from files: one atomic,
 * crash-safe write of a whole buffer, one bounded read of a whole file.
 *
 * Errors are written into err (naming the path and strerror(errno)), as
 * these functions serve both a context and the context-free read API.
 */
#ifndef RNGSNAP_CORE_STORE_H
#define RNGSNAP_CORE_STORE_H

#include <stddef.h>
#include <stdint.h>

struct rngsnap;

/* Write buf[0..len) to path atomically: a unique, locked temporary file
 * in the same folder, fsync, rename into place (without
 * RNGSNAP_SAVE_REPLACE a no-replace rename: an existing path is
 * RNGSNAP_E_EXISTS), fsync the folder.  RNGSNAP_SAVE_NO_SYNC skips both
 * fsyncs.  First, stale temporary files of the same target that no live
 * save owns are removed (each logged at INFO through lctx, which may be
 * NULL).  Failures before the rename: RNGSNAP_E_IO etc., the temporary
 * file is removed and the previous file at path is intact.  Failures
 * after it (open, fsync or close of the folder, close of the new file):
 * RNGSNAP_E_DURABILITY, the new file is in place. */
/* Format a message into err[0..errlen) (when err is given) and return
 * code: how store.c and manifest.c report to callers that own the
 * buffer. */
int rs_say(char *err, size_t errlen, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* rs_store_write flag (beside the RNGSNAP_SAVE_* ones): path names a
 * file no earlier save can have written (a multi-rank save's rank file,
 * named by a fresh random id), so no stale temporary of it can exist and
 * the folder scan is skipped: with N ranks in one folder the scans would
 * cost N x N directory entries. */
#define RS_STORE_FRESH_NAME 0x100u

int rs_store_write(const struct rngsnap *lctx, const char *path,
                   const void *buf, size_t len, unsigned flags, char *err,
                   size_t errlen);

/* Read the whole file at path into a new buffer (free()): only a
 * regular file (anything else is RNGSNAP_E_IO "not a regular file",
 * without blocking), at most RS_FMT_FILE_MAX bytes (RNGSNAP_E_CORRUPT),
 * as many bytes as fstat says it holds, whatever the number of short or
 * interrupted reads it takes.  hint: the size the caller expects (0:
 * unknown), used only where the filesystem reports no size. */
int rs_store_read(const char *path, size_t hint, uint8_t **buf, size_t *len,
                  char *err, size_t errlen);

/* Read bytes [offset, offset + length) of the regular file at path into
 * a new buffer (free()), reading only those bytes (pread).  When
 * file_size is not 0 the file must hold exactly that many bytes
 * (RNGSNAP_E_CORRUPT naming both sizes otherwise: a truncated or grown
 * node file).  A file too short for the range is RNGSNAP_E_CORRUPT; a
 * missing or unreadable one RNGSNAP_E_IO; length above RS_FMT_FILE_MAX
 * RNGSNAP_E_CORRUPT. */
int rs_store_read_range(const char *path, uint64_t offset, size_t length,
                        uint64_t file_size, uint8_t **buf, char *err,
                        size_t errlen);

#endif /* RNGSNAP_CORE_STORE_H */
