/*
 * json.h - the few JSON writing helpers `inspect --json` needs.
 */
#ifndef RNGSNAP_TOOLS_JSON_H
#define RNGSNAP_TOOLS_JSON_H

#include <stdio.h>

/* Write s as a JSON string (quotes included); NULL writes null. */
void json_string(FILE *to, const char *s);

#endif
