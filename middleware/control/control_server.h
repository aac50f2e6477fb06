/*
 * control_server.h - the control socket of a running suspect-fcgi: a unix
 * socket that answers one control request per connection
 * (control_proto.h) to the peers it trusts.
 *
 * Who may talk to it: the socket's mode (default 0660) and group keep
 * others from connecting at all; then, per connection, the peer's
 * credentials as the kernel gives them (SO_PEERCRED, SO_PEERGROUPS): root,
 * the daemon's own user, or a member of the configured group (as its
 * primary or a supplementary group).  Anyone else gets "error denied"
 * and a warning in the log naming its uid and pid, never more.
 *
 * One thread serves connections one after the other: read one request
 * (within the request bounds and io_timeout_ms), call the handler, write
 * the reply (within io_timeout_ms), close.  A slow or silent peer holds it
 * for at most two timeouts; operators do not need more than one at once.
 * What the handler does runs on this thread, never on a request's.
 */
#ifndef MW_CONTROL_SERVER_H
#define MW_CONTROL_SERVER_H

#include "control_proto.h"
#include "suspect_error.h"

/*
 * Answers one well-formed request of this version: writes the reply's
 * field lines into reply, which is begun already ("ok" or "error ..."
 * first, docs/control.md).  Runs on the server's thread.
 */
typedef void (*mw_ctl_handler_fn)(void *arg, const mw_ctl_msg_t *req,
                                  mw_ctl_out_t *reply);

typedef struct mw_ctl_server_opts {
    const char *path;       /* the socket's path */
    unsigned mode;          /* its permissions; 0 = 0660 */
    const char *group;      /* a group whose members may use it, or NULL */
    unsigned io_timeout_ms; /* per read or write of a peer; 0 = 5000 */
    mw_ctl_handler_fn handler;
    void *arg;
} mw_ctl_server_opts_t;

typedef struct mw_ctl_server mw_ctl_server_t;

/*
 * Creates the socket (replacing only a stale one: a live one means
 * another daemon serves it there), gives it the mode and group, and
 * starts the thread.  The calling thread must block every signal first.
 * SUSPECT_E_IO (errno set) or SUSPECT_E_CONFIG (no such group).
 */
suspect_rc_t mw_ctl_server_start(const mw_ctl_server_opts_t *opts,
                                 mw_ctl_server_t **out, suspect_err_t *err);

/* Stops the thread (a request in progress finishes first), removes the
 * socket and frees.  NULL is a no-op. */
void mw_ctl_server_stop(mw_ctl_server_t *s);

#endif
