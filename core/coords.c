/*
 * coords.c - a rank's parallel coordinates ("dp=3,tp=1,pp=0,ep=2"):
 * check the text against rngsnap_set_coords's rules and write its one
 * canonical form (pairs sorted by name, values without leading zeros).
 * The manifest decoder uses the same function to accept only canonical
 * coordinates, so two equal sets are always equal strings.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rngsnap.h>

#include "coords.h"
#include "store.h"

#define PAIRS_MAX 16
#define NAME_MAX_LEN 15
#define VALUE_MAX 2147483647u

typedef struct pair {
    char name[NAME_MAX_LEN + 1];
    uint32_t value;
} pair;

static int by_name(const void *a, const void *b)
{
    return strcmp(((const pair *)a)->name, ((const pair *)b)->name);
}

static int is_lower(char c)
{
    return c >= 'a' && c <= 'z';
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Parse one "name=value" of n bytes at s (pair number k, from 1) into
 * *out; the reason in err otherwise. */
static int parse_pair(const char *text, const char *s, size_t n, int k,
                      pair *out, char *err, size_t errlen)
{
    const char *eq = memchr(s, '=', n);
    if (!eq)
        return rs_say(err, errlen, RNGSNAP_E_INVALID,
                      "coordinates \"%s\": pair %d \"%.*s\" has no '=' "
                      "(write name=value, e.g. dp=3)",
                      text, k, (int)n, s);
    size_t nl = (size_t)(eq - s), vl = n - nl - 1;
    if (nl < 1 || nl > NAME_MAX_LEN)
        return rs_say(err, errlen, RNGSNAP_E_INVALID,
                      "coordinates \"%s\": pair %d \"%.*s\": a name has 1 "
                      "to %d characters",
                      text, k, (int)n, s, NAME_MAX_LEN);
    if (!is_lower(s[0]))
        return rs_say(err, errlen, RNGSNAP_E_INVALID,
                      "coordinates \"%s\": pair %d \"%.*s\": a name starts "
                      "with a letter a-z",
                      text, k, (int)n, s);
    for (size_t i = 1; i < nl; i++)
        if (!is_lower(s[i]) && !is_digit(s[i]) && s[i] != '_')
            return rs_say(err, errlen, RNGSNAP_E_INVALID,
                          "coordinates \"%s\": pair %d \"%.*s\": a name "
                          "holds only a-z, 0-9 and _",
                          text, k, (int)n, s);
    uint64_t v = 0;
    for (size_t i = 0; i < vl; i++) {
        char c = eq[1 + i];
        if (!is_digit(c)) {
            v = UINT64_MAX;
            break;
        }
        v = v * 10 + (uint64_t)(c - '0');
        if (v > VALUE_MAX)
            break;
    }
    if (vl == 0 || v > VALUE_MAX)
        return rs_say(err, errlen, RNGSNAP_E_INVALID,
                      "coordinates \"%s\": pair %d \"%.*s\": a value is a "
                      "decimal number 0..%u",
                      text, k, (int)n, s, VALUE_MAX);
    memcpy(out->name, s, nl);
    out->name[nl] = 0;
    out->value = (uint32_t)v;
    return RNGSNAP_OK;
}

int rs_coords_canon(const char *text, char out[RS_COORDS_MAX], char *err,
                    size_t errlen)
{
    out[0] = 0;
    if (!text || !*text)
        return RNGSNAP_OK;
    pair v[PAIRS_MAX];
    int n = 0;
    for (const char *s = text;;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        if (n == PAIRS_MAX)
            return rs_say(err, errlen, RNGSNAP_E_INVALID,
                          "coordinates \"%.*s...\": more than %d pairs",
                          (int)(s - text), text, PAIRS_MAX);
        if (len == 0)
            return rs_say(err, errlen, RNGSNAP_E_INVALID,
                          "coordinates \"%s\": pair %d is empty (pairs are "
                          "separated by one ',', none at either end)",
                          text, n + 1);
        int rc = parse_pair(text, s, len, n + 1, &v[n], err, errlen);
        if (rc)
            return rc;
        n++;
        if (!comma)
            break;
        s = comma + 1;
    }
    qsort(v, (size_t)n, sizeof *v, by_name);
    for (int i = 1; i < n; i++)
        if (strcmp(v[i - 1].name, v[i].name) == 0)
            return rs_say(err, errlen, RNGSNAP_E_INVALID,
                          "coordinates \"%s\": name %s given twice", text,
                          v[i].name);
    /* 16 pairs of at most 15 + 1 + 10 + 1 bytes fit RS_COORDS_MAX. */
    size_t at = 0;
    for (int i = 0; i < n; i++)
        at += (size_t)snprintf(out + at, RS_COORDS_MAX - at, "%s%s=%u",
                               i ? "," : "", v[i].name, v[i].value);
    return RNGSNAP_OK;
}
