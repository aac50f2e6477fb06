/*
 * lookup_internal.h - what the two halves of lookup.h's implementation share:
 * lookup.c (cookie, query, form and header lookups) and addr.c
 * (addresses, trusted proxies, the client address).  Pieces of an input
 * string as (start, end) pointers, and blank trimming.
 */
#ifndef MW_LOOKUP_INTERNAL_H
#define MW_LOOKUP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

/* A piece of an input string: [p, e). */
typedef struct span {
    const char *p;
    const char *e;
} span_t;

static inline bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* [p, e) without the blanks on either side. */
static inline span_t trim(const char *p, const char *e)
{
    span_t s;

    while (p < e && is_blank(*p)) {
        p++;
    }
    while (e > p && is_blank(e[-1])) {
        e--;
    }
    s.p = p;
    s.e = e;
    return s;
}

static inline size_t span_len(span_t s)
{
    return (size_t)(s.e - s.p);
}

#endif
