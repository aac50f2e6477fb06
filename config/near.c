/*
 * near.c - "did you mean" (near.h).
 *
 * The distance is the optimal string alignment distance (Levenshtein with
 * swaps of two neighbouring letters counted as one edit), computed over
 * ASCII-lowercased bytes with three rows of at most CONFIG_NEAR_MAX + 1
 * entries on the stack: no allocation, and a bounded cost per unknown
 * name, whatever a file holds.
 */
#include "near.h"

#include <ctype.h>
#include <string.h>

static unsigned char lower(char c)
{
    return (unsigned char)tolower((unsigned char)c);
}

static size_t min3(size_t a, size_t b, size_t c)
{
    size_t m = a < b ? a : b;

    return m < c ? m : c;
}

size_t config_near_distance(const char *a, const char *b)
{
    size_t rows[3][CONFIG_NEAR_MAX + 1];
    size_t la = strlen(a), lb = strlen(b);
    size_t *prev2 = rows[0], *prev = rows[1], *cur = rows[2];

    if (la > CONFIG_NEAR_MAX || lb > CONFIG_NEAR_MAX) {
        return CONFIG_NEAR_MAX + 1;
    }
    for (size_t j = 0; j <= lb; j++) {
        prev[j] = j;
    }
    for (size_t i = 1; i <= la; i++) {
        size_t *t;

        cur[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;

            cur[j] = min3(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost);
            if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
                lower(a[i - 2]) == lower(b[j - 1]) &&
                prev2[j - 2] + 1 < cur[j]) {
                cur[j] = prev2[j - 2] + 1;
            }
        }
        t = prev2;
        prev2 = prev;
        prev = cur;
        cur = t;
    }
    return prev[lb];
}

const char *config_near(const char *name, const char *const *names, size_t n)
{
    const char *best = NULL;
    size_t best_d = CONFIG_NEAR_MAX + 1;
    size_t len = strlen(name);
    size_t limit = len <= 5 ? 1 : 2;

    for (size_t i = 0; i < n && names[i] != NULL; i++) {
        size_t d;

        if (strcmp(name, names[i]) == 0) {
            return NULL;
        }
        d = config_near_distance(name, names[i]);
        if (d <= limit && d < best_d) {
            best = names[i];
            best_d = d;
        }
    }
    return best;
}
