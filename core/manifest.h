/*
 * manifest.h - the commit record of a multi-rank folder (docs/format.md,
 * "Multi-rank folders"): encode one into a buffer, decode and verify one
 * buffer.  Pure byte work; ranks.c moves the bytes and runs the protocol.
 */
#ifndef RNGSNAP_CORE_MANIFEST_H
#define RNGSNAP_CORE_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include <rngsnap.h>

#define RS_MAN_MAGIC "RSNPMAN"      /* 8 bytes with its NUL */
#define RS_MAN_VERSION 2u          /* written; 1 and 2 are read */
#define RS_MAN_FILE "MANIFEST"      /* the commit record's name in dir */
#define RS_MAN_WORLD_MAX (1 << 20)
#define RS_MAN_APPS_MAX 65536u
#define RS_MAN_NAME_MAX 255u
/* magic 8, version 4, world 4, created 8, id 16, forked 16, apps 4 */
#define RS_MAN_HEADER_SIZE 60u
#define RS_MAN_ID_SIZE 16u
/* "rank-" + at least 5 digits + "." + 32 hex + ".rngsnap" */
#define RS_MAN_RANK_NAME_MAX 64u

/* A decoded manifest: the public reader's object.  Strings point into
 * names (one block). */
struct rngsnap_manifest {
    char *dir;                      /* folder it was read from (copy) */
    rngsnap_manifest_info info;
    uint8_t id[RS_MAN_ID_SIZE], forked_from[RS_MAN_ID_SIZE];
    rngsnap_manifest_rank *ranks;   /* info.world_size of them */
    rngsnap_manifest_file *files;   /* info.file_count of them */
    rngsnap_manifest_app *apps;     /* info.app_count of them  */
    char *names;
};

/* "rank-%05d.<id hex>.rngsnap" into out (RS_MAN_RANK_NAME_MAX bytes). */
void rs_man_rank_file(int rank, const uint8_t id[RS_MAN_ID_SIZE], char *out);
/* "node-%05d.<id hex>.rngsnap" (the node's lowest rank, its leader: a
 * leader names its file without knowing the other nodes) into out
 * (RS_MAN_RANK_NAME_MAX bytes). */
void rs_man_node_file(int first_rank, const uint8_t id[RS_MAN_ID_SIZE],
                      char *out);
/* 32 lowercase hex digits of id into out (33 bytes). */
void rs_man_hex(const uint8_t id[RS_MAN_ID_SIZE], char *out);

/* What a save hands rs_man_encode (version 2).  files[i].name and
 * ranks[r].file are ignored: the encoder writes the names from the
 * layout (node-%05d or, per_rank_files, rank-%05d) and the id. */
typedef struct rs_man_out {
    int32_t world_size;
    int64_t created_unix;
    const uint8_t *id;          /* RS_MAN_ID_SIZE bytes                   */
    const uint8_t *forked_from; /* RS_MAN_ID_SIZE bytes, zero: none       */
    int per_rank_files;         /* files are rank-NNNNN, one rank each    */
    uint32_t emulated_ranks_per_node; /* 0 when nodes are real            */
    const rngsnap_manifest_file *files; /* file_count, in rank order      */
    size_t file_count;
    const rngsnap_manifest_rank *ranks; /* world_size: file_index, offset,
                                           size, checksum, coords         */
    const rngsnap_manifest_app *apps;
    size_t app_count;
} rs_man_out;

/* Encode a version-2 manifest into a new buffer (free()).  RNGSNAP_E_NOMEM
 * or RNGSNAP_E_INVALID (a bound exceeded, a layout that is not whole:
 * ranks of a file not consecutive from its first_rank, images not end to
 * end from offset 0 filling the file) with the reason in err. */
int rs_man_encode(const rs_man_out *o, uint8_t **buf, size_t *len,
                  char *err, size_t errlen);

/* Verify buf[0..len) completely (every bound, the file names, the
 * checksum) into a new manifest (free with rngsnap_manifest_close).
 * what names the file in messages: "what: reason".  RNGSNAP_E_CORRUPT
 * or RNGSNAP_E_NOMEM. */
int rs_man_decode(const uint8_t *buf, size_t len, const char *what,
                  const char *dir, struct rngsnap_manifest **out, char *err,
                  size_t errlen);

/* Check a rank's image bytes against its manifest record: length, then
 * XXH3-64.  RNGSNAP_E_CORRUPT naming path, offset and rank. */
int rs_man_check_rank(const struct rngsnap_manifest *m, int rank,
                      const char *path, const uint8_t *buf, size_t len,
                      char *err, size_t errlen);

#endif /* RNGSNAP_CORE_MANIFEST_H */
