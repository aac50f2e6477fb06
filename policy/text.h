/*
 * text.h - the byte-level text helpers that several layers need: the value
 * of a hex digit, the hex digits of either case, the length of a valid UTF-8
 * sequence, and whether two optional strings differ.  Inline: each is a few
 * comparisons, used in loops over client bytes, and a header costs no symbol.
 * Private to the project.
 */
#ifndef SUSPECT_TEXT_H
#define SUSPECT_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* The digits of a lower-case hex rendering (ids, digests), and of an
 * upper-case one (the %XX escapes of keys, the control protocol and
 * multipart names, as RFC 3986 recommends). */
static const char hex_lower[] = "0123456789abcdef";
static const char hex_upper[] = "0123456789ABCDEF";

/* The value of hex digit c (either case), or -1. */
static inline int hex_value(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/* Length of the valid UTF-8 sequence at p (1 to 4, avail >= 1 bytes
 * there), or 0: no overlong forms, no surrogates, nothing above
 * U+10FFFF, no stray continuation byte. */
static inline size_t utf8_len(const unsigned char *p, size_t avail)
{
    size_t need;
    unsigned lo = 0x80, hi = 0xbf;

    if (p[0] < 0x80) {
        return 1;
    }
    if (p[0] >= 0xc2 && p[0] <= 0xdf) {
        need = 2;
    } else if (p[0] >= 0xe0 && p[0] <= 0xef) {
        need = 3;
        lo = p[0] == 0xe0 ? 0xa0 : 0x80;
        hi = p[0] == 0xed ? 0x9f : 0xbf;
    } else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
        need = 4;
        lo = p[0] == 0xf0 ? 0x90 : 0x80;
        hi = p[0] == 0xf4 ? 0x8f : 0xbf;
    } else {
        return 0;
    }
    if (avail < need || p[1] < lo || p[1] > hi) {
        return 0;
    }
    for (size_t i = 2; i < need; i++) {
        if (p[i] < 0x80 || p[i] > 0xbf) {
            return 0;
        }
    }
    return need;
}

/* Whether a and b differ, either or both possibly NULL (NULL equals only
 * NULL): for settings a reload compares. */
static inline bool str_differs(const char *a, const char *b)
{
    if (a == NULL || b == NULL) {
        return a != b;
    }
    return strcmp(a, b) != 0;
}

#endif
