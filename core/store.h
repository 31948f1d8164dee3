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

/* Write buf[0..len) to path atomically: a unique temporary file in the
 * same folder, fsync, rename into place (without RNGSNAP_SAVE_REPLACE a
 * no-replace rename: an existing path is RNGSNAP_E_EXISTS), fsync the
 * folder.  RNGSNAP_SAVE_NO_SYNC skips both fsyncs.  On failure the
 * temporary file is removed and the previous file at path is intact. */
int rs_store_write(const char *path, const void *buf, size_t len,
                   unsigned flags, char *err, size_t errlen);

/* Read the whole file at path into a new buffer (free()), refusing files
 * larger than RS_FMT_FILE_MAX (RNGSNAP_E_CORRUPT).  hint: the size the
 * caller expects (0: unknown); when right, the read costs open, one
 * read() and close. */
int rs_store_read(const char *path, size_t hint, uint8_t **buf, size_t *len,
                  char *err, size_t errlen);

#endif /* RNGSNAP_CORE_STORE_H */
