/*
 * fcgi_io.c - the socket side of a FastCGI connection: a buffered reader
 * that never trusts a length, the sending of records, the lingering close.
 * The mw_req_t ops of the request in progress are fcgi_req.c's.
 *
 * Reading: recv(MSG_DONTWAIT) first, poll() only when it would block, so a
 * read without wait is the same code with no poll (the front only reads
 * so), and every blocking read (a worker's, inside a request's body) is
 * bounded by io_timeout_ms and by the request's deadline
 * (request_timeout_ms from its BEGIN_REQUEST): a body that trickles in
 * cannot hold a worker longer than that.  The input buffer grows to what
 * a record needs, FC_IN_CAP at most, and is freed when the connection is
 * idle with nothing buffered.
 *
 * Writing: the STDOUT record being built is sent when it is full, on
 * flush, and at the end together with the empty STDOUT record and
 * END_REQUEST in one sendmsg().  Every send uses MSG_NOSIGNAL and is
 * bounded by io_timeout_ms of no progress; in the front (c->nowait), a
 * send that would block fails instead: the front never waits for one
 * peer.  When the front serves a request itself (c->in_front), what a
 * send could not send at once is kept (c->unsent), with everything
 * after it, and a worker sends it: a response is never lost, and the
 * front still never waits.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "clock.h"
#include "fcgi_conn.h"

static int left_ms(long long deadline)
{
    long long d = deadline - mono_ms();

    return d < 0 ? 0 : (int)d;
}

/* Waits until fd is readable (events POLLIN) or writable (POLLOUT) before
 * deadline: 0, -ETIMEDOUT or -errno. */
static int wait_fd(conn_t *c, short events, long long deadline)
{
    for (;;) {
        struct pollfd p = {c->fd, events, 0};
        int r = poll(&p, 1, left_ms(deadline));

        if (r < 0 && errno != EINTR) {
            return -errno;
        }
        if (r > 0) {
            return 0;
        }
        if (left_ms(deadline) == 0) {
            return -ETIMEDOUT;
        }
    }
}

/* The deadline of a read: io_timeout_ms from now, and never past the
 * request's own while its body arrives (*whole: that one is nearer). */
static long long read_deadline(conn_t *c, bool *whole)
{
    long long d = mono_ms() + c->srv->io_timeout_ms;
    long long req = c->begun_ms + c->srv->request_timeout_ms;

    *whole = c->phase == FC_PH_BODY && !c->stdin_done && req < d;
    return *whole ? req : d;
}

/* Receives up to n bytes into buf; >0 bytes, -ECONNRESET at EOF, -EAGAIN
 * (FC_NOWAIT), -ETIMEDOUT, -errno. */
ssize_t mw_fc_recv_some(conn_t *c, void *buf, size_t n, int mode)
{
    long long deadline = -1;
    bool whole = false;

    for (;;) {
        ssize_t r = recv(c->fd, buf, n, MSG_DONTWAIT);
        int w;

        if (r > 0) {
            return r;
        }
        if (r == 0) {
            c->peer_closed = true;
            return -ECONNRESET;
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            return errno == EPIPE ? -ECONNRESET : -errno;
        }
        if (mode == FC_NOWAIT) {
            return -EAGAIN;
        }
        if (deadline < 0) {
            deadline = read_deadline(c, &whole);
        }
        w = wait_fd(c, POLLIN, deadline);
        if (w == -ETIMEDOUT && whole) {
            atomic_fetch_add(&c->srv->timed_out, 1);
        }
        if (w < 0) {
            return w;
        }
    }
}

/* Makes room for want bytes in the input buffer (at most FC_IN_CAP),
 * keeping what it holds; 0 or -ENOMEM. */
static int grow_in(conn_t *c, size_t want)
{
    size_t cap = c->in_cap < FC_IN_MIN ? FC_IN_MIN : c->in_cap;
    uint8_t *nb;

    if (want <= c->in_cap) {
        return 0;
    }
    while (cap < want) {
        cap *= 2;
    }
    if (cap > FC_IN_CAP) {
        cap = FC_IN_CAP;
    }
    nb = suspect_realloc(c->in, cap);
    if (nb == NULL) {
        return -ENOMEM;
    }
    c->in = nb;
    c->in_cap = cap;
    return 0;
}

/* Moves the buffered bytes to the start of the buffer. */
static void compact(conn_t *c)
{
    if (c->in_off > 0) {
        memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
        c->in_len -= c->in_off;
        c->in_off = 0;
    }
}

int mw_fc_need(conn_t *c, size_t n, int mode)
{
    while (c->in_len - c->in_off < n) {
        ssize_t r;

        if (c->in_off + n > c->in_cap) {
            compact(c);
        }
        /* Room for what is needed, and what a usual request brings. */
        if (grow_in(c, n > c->in_len ? n : c->in_len + 1) != 0) {
            return -ENOMEM;
        }
        r = mw_fc_recv_some(c, c->in + c->in_len, c->in_cap - c->in_len, mode);
        if (r < 0) {
            return (int)r;
        }
        c->in_len += (size_t)r;
    }
    return 0;
}

ssize_t mw_fc_fill(conn_t *c)
{
    ssize_t r;

    compact(c);
    if (c->in_len == FC_IN_CAP) {
        return 0;
    }
    if (grow_in(c, c->in_len == c->in_cap ? c->in_cap + 1 : c->in_cap) != 0) {
        return -ENOMEM;
    }
    r = mw_fc_recv_some(c, c->in + c->in_len, c->in_cap - c->in_len, FC_NOWAIT);
    if (r > 0) {
        c->in_len += (size_t)r;
    }
    return r;
}

void mw_fc_shrink(conn_t *c)
{
    if (c->in_len == c->in_off) {
        free(c->in);
        c->in = NULL;
        c->in_cap = 0;
        c->in_off = 0;
        c->in_len = 0;
    }
}

void mw_fc_consume(conn_t *c, size_t n)
{
    c->in_off += n;
    if (c->in_off == c->in_len) {
        c->in_off = 0;
        c->in_len = 0;
    }
}

int mw_fc_skip_pad(conn_t *c, int mode)
{
    while (c->pad_left > 0) {
        size_t avail = c->in_len - c->in_off;
        int r;

        if (avail > 0) {
            size_t k = avail < c->pad_left ? avail : c->pad_left;

            mw_fc_consume(c, k);
            c->pad_left -= k;
            continue;
        }
        r = mw_fc_need(c, 1, mode);
        if (r < 0) {
            return r;
        }
    }
    return 0;
}

void mw_fc_count_abort(conn_t *c)
{
    if (c->phase != FC_PH_IDLE && !c->counted) {
        c->counted = true;
        atomic_fetch_add(&c->srv->aborted, 1);
    }
}

/* Keeps iov[0 .. n) in c->unsent after what it holds; 0, or -ENOBUFS
 * over FC_UNSENT_MAX (remembered in werr). */
static int keep_unsent(conn_t *c, const struct iovec *iov, int n)
{
    size_t len = c->unsent_len;
    uint8_t *nb;

    for (int i = 0; i < n; i++) {
        len += iov[i].iov_len;
    }
    if (len > FC_UNSENT_MAX ||
        (nb = suspect_realloc(c->unsent, len > 0 ? len : 1)) == NULL) {
        free(c->unsent); /* the response is lost: the connection closes */
        c->unsent = NULL;
        c->unsent_len = 0;
        c->werr = -ENOBUFS;
        return c->werr;
    }
    c->unsent = nb;
    for (int i = 0; i < n; i++) {
        memcpy(c->unsent + c->unsent_len, iov[i].iov_base, iov[i].iov_len);
        c->unsent_len += iov[i].iov_len;
    }
    return 0;
}

int mw_fc_sendv(conn_t *c, struct iovec *iov, int n)
{
    struct msghdr m;
    long long deadline = -1;

    if (c->werr != 0) {
        return c->werr;
    }
    if (c->unsent_len > 0) {
        return keep_unsent(c, iov, n); /* after what waits, in order */
    }
    memset(&m, 0, sizeof(m));
    while (n > 0) {
        ssize_t r;

        if (iov->iov_len == 0) {
            iov++;
            n--;
            continue;
        }
        m.msg_iov = iov;
        m.msg_iovlen = (size_t)n;
        r = sendmsg(c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (r >= 0) {
            deadline = -1;
            while (n > 0 && (size_t)r >= iov->iov_len) {
                r -= (ssize_t)iov->iov_len;
                iov++;
                n--;
            }
            if (n > 0) {
                iov->iov_base = (uint8_t *)iov->iov_base + r;
                iov->iov_len -= (size_t)r;
            }
            continue;
        }
        if (errno == EINTR) {
            continue;
        }
        if ((errno == EAGAIN || errno == EWOULDBLOCK) && c->in_front) {
            return keep_unsent(c, iov, n);
        }
        if ((errno == EAGAIN || errno == EWOULDBLOCK) && !c->nowait) {
            int w;

            if (deadline < 0) {
                deadline = mono_ms() + c->srv->io_timeout_ms;
            }
            w = wait_fd(c, POLLOUT, deadline);
            if (w == 0) {
                continue;
            }
            errno = -w;
        }
        c->werr = errno == ECONNRESET ? -EPIPE : -errno;
        if (c->werr == -EPIPE) {
            mw_fc_count_abort(c);
        }
        return c->werr;
    }
    return 0;
}

int mw_fc_send_record(conn_t *c, uint8_t type, uint16_t id, const void *body,
                      size_t len)
{
    uint8_t h[FCGI_HEADER_LEN];
    struct iovec iov[2] = {{h, sizeof(h)}, {(void *)body, len}};

    fcgi_header_encode(h, type, id, (uint16_t)len, 0);
    return mw_fc_sendv(c, iov, 2);
}

int mw_fc_flush(conn_t *c, bool end, uint8_t proto)
{
    uint8_t tail[3 * FCGI_HEADER_LEN];
    struct iovec iov[2];
    int n = 0, r;

    if (c->out_len > 0) {
        fcgi_header_encode(c->out, FCGI_STDOUT, c->id, (uint16_t)c->out_len, 0);
        iov[n].iov_base = c->out;
        iov[n++].iov_len = FCGI_HEADER_LEN + c->out_len;
    }
    if (end) {
        fcgi_header_encode(tail, FCGI_STDOUT, c->id, 0, 0);
        fcgi_header_encode(tail + 8, FCGI_END_REQUEST, c->id, 8, 0);
        fcgi_end_encode(tail + 16, 0, proto);
        iov[n].iov_base = tail;
        iov[n++].iov_len = sizeof(tail);
    }
    r = n > 0 ? mw_fc_sendv(c, iov, n) : 0;
    c->out_len = 0;
    return r;
}

int mw_fc_linger_step(conn_t *c)
{
    uint8_t sink[4096];

    if (c->peer_closed) {
        return -ECONNRESET;
    }
    if (!c->half_closed) {
        c->half_closed = true;
        if (shutdown(c->fd, SHUT_WR) != 0) {
            return -errno;
        }
    }
    c->in_off = c->in_len = 0;
    for (;;) {
        ssize_t r = recv(c->fd, sink, sizeof(sink), MSG_DONTWAIT);

        if (r > 0) {
            continue;
        }
        if (r == 0) {
            return -ECONNRESET;
        }
        if (errno == EINTR) {
            continue;
        }
        return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
    }
}
