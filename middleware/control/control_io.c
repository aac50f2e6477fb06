/*
 * control_io.c - reading and writing one control message within a
 * deadline (control_io.h).
 *
 * Reads go into a buffer that grows (doubling from 4 KiB) up to the
 * message bound plus one read's worth, and the parser is asked after each
 * read whether the message is whole; poll() bounds every wait by what is
 * left of the deadline, so a peer that sends nothing, or too little, costs
 * at most the deadline.  Writes use MSG_NOSIGNAL: a peer that went away is
 * an error, never a signal.
 */
#include "control_io.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "alloc.h"
#include "clock.h"
#include "fcgi/listen.h"

#define READ_CHUNK 4096

/* Waits until fd is ready for events or the deadline; 0, or a failure. */
static suspect_rc_t wait_fd(int fd, short events, int64_t deadline_ms,
                            suspect_err_t *err)
{
    for (;;) {
        int64_t left = deadline_ms - mono_ms();
        struct pollfd p = {fd, events, 0};
        int r;

        if (left <= 0) {
            return suspect_err_set(err, SUSPECT_E_TIMEOUT, NULL, 0,
                                   "control socket: no answer in time");
        }
        r = poll(&p, 1, left > 60000 ? 60000 : (int)left);
        if (r > 0) {
            return SUSPECT_OK;
        }
        if (r < 0 && errno != EINTR) {
            return suspect_err_sys(err, SUSPECT_E_IO, NULL,
                                   "control socket: poll");
        }
    }
}

/* Makes room for one more read in *buf; false when out of memory. */
static bool grow(char **buf, size_t *cap, size_t len, size_t max)
{
    size_t want = *cap == 0 ? READ_CHUNK : *cap * 2;
    char *nb;

    if (*cap - len >= READ_CHUNK) {
        return true;
    }
    if (want > max + READ_CHUNK) {
        want = max + READ_CHUNK;
    }
    nb = suspect_realloc(*buf, want);
    if (nb == NULL) {
        return false;
    }
    *buf = nb;
    *cap = want;
    return true;
}

suspect_rc_t mw_ctl_read(int fd, const mw_ctl_limits_t *lim,
                         int64_t deadline_ms, mw_ctl_msg_t *out,
                         suspect_err_t *err)
{
    char *buf = NULL;
    size_t len = 0, cap = 0, used;
    suspect_rc_t rc = SUSPECT_E_NOTFOUND;

    memset(out, 0, sizeof(*out));
    while (rc == SUSPECT_E_NOTFOUND) {
        ssize_t r;

        if (!grow(&buf, &cap, len, lim->max_bytes)) {
            rc = suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                                 "control socket: out of memory");
            break;
        }
        r = recv(fd, buf + len, cap - len, MSG_DONTWAIT);
        if (r == 0) {
            rc = suspect_err_set(err, SUSPECT_E_IO, NULL, 0,
                                 "control socket: closed before the end "
                                 "of the message");
        } else if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
                             errno == EINTR)) {
            rc = wait_fd(fd, POLLIN, deadline_ms, err);
            rc = rc == SUSPECT_OK ? SUSPECT_E_NOTFOUND : rc;
        } else if (r < 0) {
            rc = suspect_err_sys(err, SUSPECT_E_IO, NULL,
                                 "control socket: read");
        } else {
            len += (size_t)r;
            rc = mw_ctl_parse(buf, len, lim, out, &used, err);
        }
    }
    free(buf);
    return rc;
}

suspect_rc_t mw_ctl_write(int fd, const char *buf, size_t len,
                          int64_t deadline_ms, suspect_err_t *err)
{
    size_t off = 0;

    while (off < len) {
        ssize_t r = send(fd, buf + off, len - off, MSG_NOSIGNAL | MSG_DONTWAIT);

        if (r >= 0) {
            off += (size_t)r;
            continue;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
            suspect_rc_t rc = wait_fd(fd, POLLOUT, deadline_ms, err);

            if (rc != SUSPECT_OK) {
                return rc;
            }
            continue;
        }
        return suspect_err_sys(err, SUSPECT_E_IO, NULL,
                               "control socket: write");
    }
    return SUSPECT_OK;
}

suspect_rc_t mw_ctl_call(const char *path, const char *req, size_t len,
                         unsigned timeout_ms, mw_ctl_msg_t *reply,
                         suspect_err_t *err)
{
    int64_t deadline = mono_ms() + timeout_ms;
    char spec[4096 + 8];
    suspect_err_t cerr;
    suspect_rc_t rc;
    int fd = -1;

    memset(reply, 0, sizeof(*reply));
    snprintf(spec, sizeof(spec), "unix:%s", path);
    suspect_err_clear(&cerr);
    rc = mw_connect(spec, timeout_ms, &fd, &cerr);
    if (rc != SUSPECT_OK) {
        int e = cerr.sys_errno;

        if (e == ENOENT || e == ECONNREFUSED) {
            return suspect_err_set(err, SUSPECT_E_NOTFOUND, NULL, 0,
                                   "no suspect-fcgi answers at %s", path);
        }
        if (err != NULL && err->code == SUSPECT_OK) {
            *err = cerr;
        }
        return rc;
    }
    rc = mw_ctl_write(fd, req, len, deadline, err);
    if (rc == SUSPECT_OK) {
        shutdown(fd, SHUT_WR);
        rc = mw_ctl_read(fd, &mw_ctl_reply_limits, deadline, reply, err);
    }
    close(fd);
    return rc;
}
