/*
 * near_miss.c - the edit distance behind every "did you mean ...?" of the
 * core (near_miss.h).
 */
#include "near_miss.h"

#include <stdint.h>
#include <string.h>

size_t rs_edit_distance(const char *a, const char *b)
{
    size_t n = strlen(a), m = strlen(b);
    if (n >= RS_NEAR_MAX || m >= RS_NEAR_MAX)
        return SIZE_MAX;
    unsigned char d[RS_NEAR_MAX + 1][RS_NEAR_MAX + 1];
    for (size_t i = 0; i <= n; i++)
        d[i][0] = (unsigned char)i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = (unsigned char)j;
    for (size_t i = 1; i <= n; i++) {
        for (size_t j = 1; j <= m; j++) {
            unsigned v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1u < v)
                v = d[i - 1][j] + 1u;
            if (d[i][j - 1] + 1u < v)
                v = d[i][j - 1] + 1u;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2]
                && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1u < v)
                v = d[i - 2][j - 2] + 1u;
            d[i][j] = (unsigned char)v;
        }
    }
    return d[n][m];
}

int rs_near_miss(const char *typed, const char *known, size_t *distance)
{
    size_t d = rs_edit_distance(typed, known);
    if (distance)
        *distance = d;
    return d <= 2 && 2 * d < strlen(known);
}
