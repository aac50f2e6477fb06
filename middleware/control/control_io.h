/*
 * control_io.h - one control message over a socket, both ways, within a
 * deadline: what the control server and suspectctl's client share.
 */
#ifndef MW_CONTROL_IO_H
#define MW_CONTROL_IO_H

#include <stddef.h>
#include <stdint.h>

#include "control_proto.h"
#include "suspect_error.h"

/*
 * Reads one message from fd (a blocking or non-blocking socket) until
 * deadline_ms (mono_ms() time, clock.h) within lim, and parses it into
 * *out.  SUSPECT_OK, SUSPECT_E_PARSE (malformed or over lim: err says
 * what), SUSPECT_E_TIMEOUT, SUSPECT_E_IO (the peer closed before the end,
 * or a read failed), SUSPECT_E_NOMEM.  Bytes after the message are
 * dropped: a connection carries one.
 */
suspect_rc_t mw_ctl_read(int fd, const mw_ctl_limits_t *lim,
                         int64_t deadline_ms, mw_ctl_msg_t *out,
                         suspect_err_t *err);

/* Writes buf[0..len) to fd before deadline_ms; SUSPECT_OK,
 * SUSPECT_E_TIMEOUT or SUSPECT_E_IO (never SIGPIPE). */
suspect_rc_t mw_ctl_write(int fd, const char *buf, size_t len,
                          int64_t deadline_ms, suspect_err_t *err);

/*
 * suspectctl's side: connects to the unix socket at path, sends the
 * encoded request req[0..len), and reads the reply into *reply, all within
 * timeout_ms.  SUSPECT_E_NOTFOUND when nobody listens there (no such
 * socket, or connection refused: no daemon runs), SUSPECT_E_IO with errno
 * (EACCES: not allowed to connect), SUSPECT_E_TIMEOUT, SUSPECT_E_PARSE.
 */
suspect_rc_t mw_ctl_call(const char *path, const char *req, size_t len,
                         unsigned timeout_ms, mw_ctl_msg_t *reply,
                         suspect_err_t *err);

#endif
