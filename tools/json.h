/*
 * json.h - the few JSON writing helpers of the --json output of
 * `inspect`, `backends`, `verify` and `diff`.
 */
#ifndef RNGSNAP_TOOLS_JSON_H
#define RNGSNAP_TOOLS_JSON_H

#include <stdio.h>

/* Write s as a JSON string (quotes included); NULL writes null. */
void json_string(FILE *to, const char *s);

/* The separator and "key": of the next member of an object.  *n counts
 * the members written so far (0: no separator); sep goes between members:
 * ", " for an object on one line, ",\n  " for one member a line. */
void json_key(FILE *to, int *n, const char *sep, const char *key);

/* true or false. */
void json_bool(FILE *to, int v);

/* With --json, a failure still prints one JSON object on stdout:
 * {"<key>": value, "error": message, "error_code": "RNGSNAP_E_..."}. */
void json_error(FILE *to, const char *key, const char *value,
                const char *message, int code);

#endif
