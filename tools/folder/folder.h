/*
 * folder.h - multi-rank checkpoint folders (a MANIFEST written last plus
 * one data file per node, or per rank) for the verify, inspect and diff
 * subcommands: the shared helpers in folder.c and each command's folder
 * form.
 */
#ifndef RNGSNAP_TOOLS_FOLDER_H
#define RNGSNAP_TOOLS_FOLDER_H

#include <stddef.h>

#include <rngsnap.h>

/* The name of the commit record inside a folder (docs/format.md). */
#define FOLDER_MANIFEST "MANIFEST"

/* 1 when path names a folder (following links), else 0. */
int folder_is_dir(const char *path);

/* How cli_manifest_open failed, beyond its exit code. */
enum { FOLDER_OPENED = 0, FOLDER_NO_MANIFEST = 1, FOLDER_BAD_MANIFEST = 2 };

/* Open and verify dir's manifest.  On failure print "rngsnap CMD: reason
 * (CODE)" (for a folder without MANIFEST: that it is not a committed
 * checkpoint, and the stray rank files a save left, if any), record it for
 * cli_file_error, set *why and return the exit code: CLI_FAIL for a
 * damaged manifest, or for no manifest when no_manifest_is_check (verify),
 * else CLI_USAGE. */
int cli_manifest_open(const char *cmd, const char *dir,
                      rngsnap_manifest **out, int no_manifest_is_check,
                      int *why);

/* The files of dir that a save writes (node-*, rank-*, MANIFEST* and
 * their temporaries .node-*, .rank-*, .MANIFEST*), sorted, as
 * one malloc'd array of names ending with NULL (free with
 * folder_names_free); NULL when none or on error. */
char **folder_stray_names(const char *dir);
void folder_names_free(char **names);

/* Of those, the ones that are not m's MANIFEST or data files: left by an
 * earlier save (removed by the next one) or by an interrupted one. */
char **folder_other_names(const char *dir, const rngsnap_manifest *m);

/* Check data file i of m whole: a regular file of the recorded size and
 * XXH3-64 (read in pieces).  RNGSNAP_OK, or the code and a message
 * naming the file in err. */
int folder_file_check(const rngsnap_manifest *m, const char *dir, size_t i,
                      char *err, size_t errlen);

/* Open rank's image in a folder: length and XXH3 against the manifest,
 * the whole image verified (rngsnap_manifest_open_rank), and its header's
 * rank and world size equal to the slot's.  On failure the library's code and
 * a message naming the rank and the file go to err. */
int folder_rank_open(const rngsnap_manifest *m, const char *dir, int rank,
                     rngsnap_file **out, char *err, size_t errlen);

/* "DIR/FILE" of a rank's file, into buf. */
const char *folder_rank_path(const rngsnap_manifest *m, const char *dir,
                             int rank, char *buf, size_t len);
/* "ranks 3-5" or "rank 3": the ranks of data file f, into buf. */
const char *folder_rank_span(const rngsnap_manifest_file *f, char *buf,
                             size_t len);
/* What names a rank's image: "DIR/FILE", and in a node's file
 * "DIR/FILE (rank R's image at offset O)". */
const char *folder_image_label(const rngsnap_manifest *m, const char *dir,
                               int rank, char *buf, size_t len);

/* The manifest's fields: as text lines, or as the members of a JSON
 * object written after *n members (json_key convention, sep between). */
void folder_manifest_text(const char *dir, const rngsnap_manifest *m);
void folder_manifest_json(const rngsnap_manifest *m, int *n,
                          const char *sep);
/* A data file's members (name, first_rank, rank_count, size, checksum)
 * and a rank slot's (file, offset, size, checksum, coords), json_key
 * convention; the caller opens and closes the object. */
void folder_file_json(const rngsnap_manifest_file *f, int *k,
                      const char *sep);
void folder_rank_json(const rngsnap_manifest_rank *r, int *k,
                      const char *sep);

/* The folder forms of the subcommands: dir is known to be a folder. */
int verify_folder(const char *dir, int json);
int inspect_folder(const char *dir, int json);
int diff_folders(const char *const dir[2], int all, int json);

#endif
