/*
 * near_miss.h - "did you mean ...?": whether a name someone typed is a
 * typo of a known one (rng.ini keys, plugin files in the folders searched).
 */
#ifndef RNGSNAP_CORE_NEAR_MISS_H
#define RNGSNAP_CORE_NEAR_MISS_H

#include <stddef.h>

/* Names this long or longer are never compared (never a near miss). */
#define RS_NEAR_MAX 64

/* Edit distance counting a swap of two neighbours as one edit (optimal
 * string alignment): "requried" is one edit from "required".  SIZE_MAX
 * when either name has RS_NEAR_MAX bytes or more. */
size_t rs_edit_distance(const char *a, const char *b);

/* 1 when typed is close enough to known to be a typo of it: at most 2
 * edits, and fewer than half of known's letters ("log" is not "isa");
 * *distance (may be NULL) gets the edits. */
int rs_near_miss(const char *typed, const char *known, size_t *distance);

#endif /* RNGSNAP_CORE_NEAR_MISS_H */
