/*
 * coords.h - a rank's parallel coordinates (rngsnap_set_coords): the
 * canonical form kept in the context, recorded per rank in a multi-rank
 * folder's manifest and compared by an exact load.
 */
#ifndef RNGSNAP_CORE_COORDS_H
#define RNGSNAP_CORE_COORDS_H

#include <stddef.h>

/* Bytes of the canonical form with its NUL: 16 pairs of a 15-character
 * name, '=', 10 digits and ',' fit. */
#define RS_COORDS_MAX 448u

/* Check text (rngsnap_set_coords's rules) and write its canonical form
 * (pairs sorted by name, values without leading zeros, joined by ',')
 * into out[RS_COORDS_MAX]; "" for NULL or "".  RNGSNAP_OK, or
 * RNGSNAP_E_INVALID with what is wrong (the pair and the rule) in err. */
int rs_coords_canon(const char *text, char out[RS_COORDS_MAX], char *err,
                    size_t errlen);

#endif /* RNGSNAP_CORE_COORDS_H */
