/*
 * ranks_folder.h - the folder of a multi-rank checkpoint: made ready
 * before a save (rank 0), and tidied after its commit (rank 0).
 */
#ifndef RNGSNAP_CORE_RANKS_FOLDER_H
#define RNGSNAP_CORE_RANKS_FOLDER_H

#include <stdint.h>

#include "manifest.h"

struct rngsnap;

/* dir/name into a new string (NULL: no memory). */
char *rs_folder_join(const char *dir, const char *name);

/* Rank 0, before anything is written: the folder exists (one level is
 * created), it holds no committed checkpoint unless replace (then
 * old_hex gets the id of the manifest replaced, or "" when unreadable),
 * and id gets a new checkpoint id.  op names the call in messages. */
int rs_folder_prepare(struct rngsnap *ctx, const char *op, const char *dir,
                      int replace, uint8_t id[RS_MAN_ID_SIZE],
                      char old_hex[2 * RS_MAN_ID_SIZE + 1]);

/* Rank 0, after the commit of keep_hex: remove the data files of the
 * manifest replaced (old_hex, may be ""), and data files and their
 * temporaries that no save has touched for a minute (saves that never
 * committed).  Only names of the data files' shapes are ever removed. */
void rs_folder_clean(struct rngsnap *ctx, const char *op, const char *dir,
                     const char *keep_hex, const char *old_hex);

#endif /* RNGSNAP_CORE_RANKS_FOLDER_H */
