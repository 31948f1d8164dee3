/*
 * json.h - the few JSON writing helpers of `inspect --json` and
 * `backends --json`.
 */
#ifndef RNGSNAP_TOOLS_JSON_H
#define RNGSNAP_TOOLS_JSON_H

#include <stdio.h>

/* Write s as a JSON string (quotes included); NULL writes null. */
void json_string(FILE *to, const char *s);

/* With --json, a failure still prints one JSON object on stdout:
 * {"<key>": value, "error": message, "error_code": "RNGSNAP_E_..."}. */
void json_error(FILE *to, const char *key, const char *value,
                const char *message, int code);

#endif
