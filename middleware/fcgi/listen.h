/*
 * listen.h - the listening socket of suspect-fcgi, opened by us.
 *
 * libfcgi's FCGX_OpenSocket is IPv4 only, unlinks whatever sits at a unix
 * path and exit()s when bind fails; this opens the socket with clean
 * errors instead.  Forms of spec:
 *   unix:/run/suspect/fcgi.sock   a unix socket (mode applied; an existing
 *                                 path is replaced only when it is a socket
 *                                 nobody answers on, never a regular file)
 *   tcp:127.0.0.1:9000            TCP over IPv4
 *   tcp:[::1]:9000                TCP over IPv6 (IPV6_V6ONLY)
 *   tcp:localhost:9000            a name, resolved once (first address)
 *   fd:3                          an inherited listening socket
 *   systemd                       the first socket of $LISTEN_FDS, for
 *                                 $LISTEN_PID (socket activation)
 * Under socket activation, unix: and tcp: take the passed socket bound to
 * their address rather than bind one, and fail when none is.
 * Every socket is CLOEXEC, so spawned CGI programs never inherit it.
 */
#ifndef MW_LISTEN_H
#define MW_LISTEN_H

#include "suspect_error.h"

/*
 * Opens (or adopts) the listening socket described by spec, with backlog
 * and, for unix sockets, permissions mode.  *fd is owned by the caller.
 * SUSPECT_E_CONFIG for a bad spec, SUSPECT_E_IO (with errno) when the
 * socket cannot be created, bound or listened on, or an inherited
 * descriptor is not a listening stream socket.
 */
suspect_rc_t mw_listen_open(const char *spec, int backlog, unsigned mode,
                            int *fd, suspect_err_t *err);

/* Removes the unix socket path of spec, if it is one we created. */
void mw_listen_cleanup(const char *spec);

/*
 * Connects to an upstream address ("unix:/path", "tcp:host:port",
 * "tcp:[v6]:port") within timeout_ms; the socket is CLOEXEC and blocking.
 * SUSPECT_E_CONFIG for a bad address, SUSPECT_E_TIMEOUT, SUSPECT_E_IO.
 */
suspect_rc_t mw_connect(const char *address, unsigned timeout_ms, int *fd,
                        suspect_err_t *err);

#endif
