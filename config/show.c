/*
 * show.c - a bad value made safe to quote in a message: see show.h.
 */
#include "show.h"

#include <stdio.h>

const char *config_show(char *buf, size_t size, const char *p, size_t n)
{
    size_t keep = n > CONFIG_SHOW_MAX ? CONFIG_SHOW_MAX : n;

    if (keep + 4 > size) {
        keep = size > 4 ? size - 4 : 0;
    }
    for (size_t i = 0; i < keep; i++) {
        unsigned char c = (unsigned char)p[i];
        buf[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
    }
    snprintf(buf + keep, size - keep, "%s", n > keep ? "..." : "");
    return buf;
}
