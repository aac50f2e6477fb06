/*
 * show.h - a bad value as the loaders quote it in a message: at most
 * CONFIG_SHOW_MAX bytes of it, control bytes and DEL as '?', and "..."
 * when it was longer, so a message never carries a control byte (a
 * newline that forges a log line) or an unbounded string.  One private
 * module, compiled into each library that loads a configuration (like
 * near.c), shared by the limits file's and suspect.xml's messages.
 */
#ifndef SUSPECT_SHOW_H
#define SUSPECT_SHOW_H

#include <stddef.h>

/* Bytes of a value kept; a buffer of CONFIG_SHOW_SIZE holds them all. */
#define CONFIG_SHOW_MAX  40
#define CONFIG_SHOW_SIZE (CONFIG_SHOW_MAX + 8)

/*
 * Writes the quotable copy of the n bytes at p into buf (size bytes, at
 * least 1) and returns buf, always NUL-terminated.  A buffer smaller than
 * CONFIG_SHOW_SIZE keeps fewer bytes, still with room for the "...".
 */
const char *config_show(char *buf, size_t size, const char *p, size_t n);

#endif
