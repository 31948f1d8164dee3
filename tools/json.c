/*
 * json.c - JSON writing for --json: strings, object members, the error
 * object.  Strings are escaped per RFC 8259: quote, backslash and control
 * characters escaped; bytes >= 0x80 are passed through when they form
 * valid UTF-8 and written as \u00XX (Latin-1 reading) when they do not, so
 * the output always parses.
 */
#include <rngsnap.h>

#include "json.h"

/* Length of the valid UTF-8 sequence at s, or 0. */
static int utf8_len(const unsigned char *s)
{
    int n;
    if (s[0] >= 0xc2 && s[0] <= 0xdf)
        n = 2;
    else if (s[0] >= 0xe0 && s[0] <= 0xef)
        n = 3;
    else if (s[0] >= 0xf0 && s[0] <= 0xf4)
        n = 4;
    else
        return 0;
    /* Second byte ranges of RFC 3629: no overlong forms, no surrogates,
     * nothing above U+10FFFF (strict decoders refuse those). */
    unsigned char lo = 0x80, hi = 0xbf;
    if (s[0] == 0xe0)
        lo = 0xa0;
    else if (s[0] == 0xed)
        hi = 0x9f;
    else if (s[0] == 0xf0)
        lo = 0x90;
    else if (s[0] == 0xf4)
        hi = 0x8f;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (int i = 2; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return n;
}

void json_string(FILE *to, const char *s)
{
    if (!s) {
        fputs("null", to);
        return;
    }
    fputc('"', to);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': fputs("\\\"", to); break;
        case '\\': fputs("\\\\", to); break;
        case '\n': fputs("\\n", to); break;
        case '\r': fputs("\\r", to); break;
        case '\t': fputs("\\t", to); break;
        default:
            if (*p < 0x20) {
                fprintf(to, "\\u%04x", *p);
            } else if (*p < 0x80) {
                fputc(*p, to);
            } else {
                int n = utf8_len(p);
                if (n) {
                    fwrite(p, 1, (size_t)n, to);
                    p += n - 1;
                } else {
                    fprintf(to, "\\u%04x", *p);
                }
            }
        }
    }
    fputc('"', to);
}

void json_key(FILE *to, int *n, const char *sep, const char *key)
{
    if ((*n)++)
        fputs(sep, to);
    json_string(to, key);
    fputs(": ", to);
}

void json_bool(FILE *to, int v)
{
    fputs(v ? "true" : "false", to);
}

void json_error(FILE *to, const char *key, const char *value,
                const char *message, int code)
{
    fputs("{\n  ", to);
    json_string(to, key);
    fputs(": ", to);
    json_string(to, value);
    fputs(",\n  \"error\": ", to);
    json_string(to, message);
    fputs(",\n  \"error_code\": ", to);
    json_string(to, rngsnap_error_name(code));
    fputs("\n}\n", to);
}
