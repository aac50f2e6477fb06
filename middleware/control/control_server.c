/*
 * control_server.c - the control socket's listener (control_server.h).
 *
 * The socket is made by mw_listen_open() (fcgi/listen.c): a stale socket
 * is replaced, a live one or any other file is not, and the mode is set
 * before listen().  Then its group is set, when one is configured.
 *
 * The thread polls the listening socket and an eventfd that stop() writes
 * to.  Each accepted connection is checked (peer_allowed), read (one
 * request, mw_ctl_request_limits, within io_timeout_ms), answered through
 * the handler and closed.  A refused peer, a malformed request and a
 * request of another version still get a reply, "error denied|protocol|
 * version TEXT", so suspectctl can say what went wrong; the log gets one
 * warning per refused peer, with its uid and pid only.
 *
 * Ownership: the server owns the socket, the eventfd, the thread and a
 * copy of the path; the handler's arg is borrowed.
 */
#include "control_server.h"

#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "clock.h"
#include "control_io.h"
#include "fcgi/listen.h"
#include "log/log.h"

#define BACKLOG         16
#define IO_TIMEOUT_MS   5000
#define PEER_GROUPS_MAX 1024
#define GROUP_BUF_BYTES 16384
#define DRAIN_BYTES     (1u << 20)
#define DRAIN_MS        100

struct mw_ctl_server {
    char *spec; /* "unix:" + path, for mw_listen_cleanup() */
    int fd, stop_fd;
    bool have_group;
    gid_t gid;
    unsigned io_timeout_ms;
    mw_ctl_handler_fn handler;
    void *arg;
    pthread_t thread;
    bool started;
};

/* ---- who may talk ------------------------------------------------------- */

/* Whether gid is among the supplementary groups of fd's peer. */
static bool peer_in_group(int fd, gid_t gid)
{
    gid_t groups[PEER_GROUPS_MAX];
    socklen_t len = sizeof(groups);

    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) != 0) {
        return false;
    }
    for (size_t i = 0; i < len / sizeof(gid_t); i++) {
        if (groups[i] == gid) {
            return true;
        }
    }
    return false;
}

/* Whether fd's peer is root, our user or a member of the group; *cred gets
 * the peer's credentials. */
static bool peer_allowed(const mw_ctl_server_t *s, int fd, struct ucred *cred)
{
    socklen_t len = sizeof(*cred);

    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cred, &len) != 0) {
        memset(cred, 0, sizeof(*cred));
        cred->uid = (uid_t)-1;
        return false;
    }
    if (cred->uid == 0 || cred->uid == geteuid()) {
        return true;
    }
    return s->have_group && (cred->gid == s->gid || peer_in_group(fd, s->gid));
}

/* ---- one connection ----------------------------------------------------- */

/* Begins reply with "error CODE TEXT". */
static void reply_error(mw_ctl_out_t *reply, const char *code, const char *text)
{
    mw_ctl_out_begin(reply);
    mw_ctl_out_line(reply, "error");
    mw_ctl_out_str(reply, code);
    mw_ctl_out_str(reply, text);
}

/* Reads the request of fd and builds its reply. */
static void answer(mw_ctl_server_t *s, int fd, int64_t deadline,
                   mw_ctl_out_t *reply)
{
    mw_ctl_msg_t req;
    suspect_err_t err;
    suspect_rc_t rc;
    char why[300];

    suspect_err_clear(&err);
    rc = mw_ctl_read(fd, &mw_ctl_request_limits, deadline, &req, &err);
    if (rc == SUSPECT_OK && req.version != MW_CTL_VERSION) {
        snprintf(why, sizeof(why),
                 "this suspect-fcgi speaks version %u, not %u", MW_CTL_VERSION,
                 req.version);
        reply_error(reply, "version", why);
    } else if (rc == SUSPECT_OK) {
        mw_ctl_out_begin(reply);
        s->handler(s->arg, &req, reply);
    } else {
        suspect_err_format(&err, why, sizeof(why));
        reply_error(reply, "protocol", why);
    }
    mw_ctl_msg_free(&req);
}

/* Reads and drops what the peer still sends (a request cut short by a
 * protocol error), up to DRAIN_BYTES or DRAIN_MS, so the close after the
 * reply does not reset the connection before the peer has read it. */
static void drain(int fd)
{
    int64_t deadline = mono_ms() + DRAIN_MS;
    size_t total = 0;
    char buf[4096];

    shutdown(fd, SHUT_WR);
    while (total < DRAIN_BYTES && mono_ms() < deadline) {
        struct pollfd p = {fd, POLLIN, 0};
        ssize_t r;

        if (poll(&p, 1, DRAIN_MS) <= 0) {
            return;
        }
        r = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (r <= 0) {
            return;
        }
        total += (size_t)r;
    }
}

/* Serves the accepted connection fd, then closes it.  A refused peer's
 * request is read too (and dropped): closing a socket with unread bytes
 * resets the connection, and the peer would never read why. */
static void serve(mw_ctl_server_t *s, int fd)
{
    int64_t deadline = mono_ms() + s->io_timeout_ms;
    mw_ctl_out_t reply;
    mw_ctl_msg_t req;
    struct ucred cred;

    memset(&reply, 0, sizeof(reply));
    if (!peer_allowed(s, fd, &cred)) {
        mw_log(MW_LOG_WARNING,
               "control socket: refused uid %ld (pid %ld): not root, the "
               "daemon's user or its group",
               (long)(int)cred.uid, (long)cred.pid);
        (void)mw_ctl_read(fd, &mw_ctl_request_limits, deadline, &req, NULL);
        mw_ctl_msg_free(&req);
        reply_error(&reply, "denied",
                    "the control socket takes root, the daemon's user and "
                    "<Control group> only");
    } else {
        answer(s, fd, deadline, &reply);
    }
    if (mw_ctl_out_end(&reply) != SUSPECT_OK) {
        reply_error(&reply, "internal", "the reply could not be written");
        mw_ctl_out_end(&reply);
    }
    if (reply.rc == SUSPECT_OK &&
        mw_ctl_write(fd, reply.buf, reply.len, mono_ms() + s->io_timeout_ms,
                     NULL) == SUSPECT_OK) {
        drain(fd);
    }
    mw_ctl_out_free(&reply);
    close(fd);
}

static void *server_main(void *arg)
{
    mw_ctl_server_t *s = arg;

    for (;;) {
        struct pollfd p[2] = {{s->fd, POLLIN, 0}, {s->stop_fd, POLLIN, 0}};
        int fd;

        if (poll(p, 2, -1) < 0) {
            continue;
        }
        if (p[1].revents != 0) {
            return NULL;
        }
        fd = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd >= 0) {
            serve(s, fd);
        }
    }
}

/* ---- life cycle --------------------------------------------------------- */

/* The gid of group name; SUSPECT_E_CONFIG when there is none. */
static suspect_rc_t group_id(const char *name, gid_t *gid, suspect_err_t *err)
{
    struct group gr, *res = NULL;
    char *buf = suspect_malloc(GROUP_BUF_BYTES);
    int r;

    if (buf == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "control socket: out of memory");
    }
    r = getgrnam_r(name, &gr, buf, GROUP_BUF_BYTES, &res);
    if (r == 0 && res != NULL) {
        *gid = gr.gr_gid;
    }
    free(buf);
    if (res == NULL) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, NULL, 0,
                               "<Control group=\"%s\">: no such group", name);
    }
    return SUSPECT_OK;
}

/* Frees s and what it holds (the thread is not running). */
static void server_free(mw_ctl_server_t *s)
{
    if (s->fd >= 0) {
        close(s->fd);
        mw_listen_cleanup(s->spec);
    }
    if (s->stop_fd >= 0) {
        close(s->stop_fd);
    }
    free(s->spec);
    free(s);
}

/* Opens the socket of opts into s. */
static suspect_rc_t open_socket(mw_ctl_server_t *s,
                                const mw_ctl_server_opts_t *opts,
                                suspect_err_t *err)
{
    size_t n = strlen(opts->path) + 6;
    suspect_rc_t rc;

    s->spec = suspect_malloc(n);
    if (s->spec == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "control socket: out of memory");
    }
    snprintf(s->spec, n, "unix:%s", opts->path);
    rc = mw_listen_open(s->spec, BACKLOG, opts->mode != 0 ? opts->mode : 0660,
                        &s->fd, err);
    if (rc == SUSPECT_OK && s->have_group &&
        chown(opts->path, (uid_t)-1, s->gid) != 0) {
        rc = suspect_err_sys(err, SUSPECT_E_IO, NULL,
                             "control socket %s: chown to group %s", opts->path,
                             opts->group);
    }
    return rc;
}

suspect_rc_t mw_ctl_server_start(const mw_ctl_server_opts_t *opts,
                                 mw_ctl_server_t **out, suspect_err_t *err)
{
    mw_ctl_server_t *s = suspect_calloc(1, sizeof(*s));
    suspect_rc_t rc = SUSPECT_OK;

    *out = NULL;
    if (s == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "control socket: out of memory");
    }
    s->fd = s->stop_fd = -1;
    s->io_timeout_ms =
        opts->io_timeout_ms != 0 ? opts->io_timeout_ms : IO_TIMEOUT_MS;
    s->handler = opts->handler;
    s->arg = opts->arg;
    if (opts->group != NULL) {
        rc = group_id(opts->group, &s->gid, err);
        s->have_group = rc == SUSPECT_OK;
    }
    if (rc == SUSPECT_OK) {
        rc = open_socket(s, opts, err);
    }
    if (rc == SUSPECT_OK) {
        s->stop_fd = eventfd(0, EFD_CLOEXEC);
        if (s->stop_fd < 0) {
            rc = suspect_err_sys(err, SUSPECT_E_IO, NULL,
                                 "control socket: eventfd");
        }
    }
    if (rc == SUSPECT_OK &&
        pthread_create(&s->thread, NULL, server_main, s) != 0) {
        rc = suspect_err_set(err, SUSPECT_E_IO, NULL, 0,
                             "control socket: cannot start its thread");
    }
    if (rc != SUSPECT_OK) {
        server_free(s);
        return rc;
    }
    s->started = true;
    *out = s;
    return SUSPECT_OK;
}

void mw_ctl_server_stop(mw_ctl_server_t *s)
{
    uint64_t one = 1;

    if (s == NULL) {
        return;
    }
    if (s->started) {
        if (write(s->stop_fd, &one, sizeof(one)) < 0) {
            /* an eventfd write does not fail with a count this small */
        }
        pthread_join(s->thread, NULL);
    }
    server_free(s);
}
