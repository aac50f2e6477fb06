/*
 * backlog.h - what waits in a listening socket's backlog, read from the
 * kernel: the condition a test waits on instead of sleeping when it must
 * know that a server has taken in (or not) the connections it opened.
 */
#ifndef SUSPECT_TESTS_BACKLOG_H
#define SUSPECT_TESTS_BACKLOG_H

#include <stdbool.h>

/* How many connections wait, not accepted yet, in the backlog of the
 * listening unix socket bound at path (any process's); -1 when no such
 * socket listens or the kernel cannot say. */
int test_unix_backlog(const char *path);

/* Waits until the unix socket at path has nothing left in its backlog,
 * ms (scaled by test_scale_ms()) at the most; whether it happened. */
bool test_unix_backlog_drained(const char *path, unsigned ms);

/* Whether the backlog of the listening TCP socket fd (this process's)
 * is full: a new connection's SYN would be dropped. */
bool test_tcp_backlog_full(int fd);

#endif
