/*
 * fcgi_io.c - the socket side of a FastCGI connection: a buffered reader
 * that never trusts a length, the sending of records, the lingering close.
 * The mw_req_t ops of the request in progress are fcgi_req.c's.
 *
 * Reading: recv(MSG_DONTWAIT) first, poll() only when it would block, so a
 * read without wait is the same code with no poll, and every blocking read
 * is bounded by io_timeout_ms (idle_timeout_ms while waiting for the next
 * request, when the server's stop eventfd also wakes the poll).
 *
 * Writing: the STDOUT record being built is sent when it is full, on
 * flush, and at the end together with the empty STDOUT record and
 * END_REQUEST in one sendmsg().  Every send uses MSG_NOSIGNAL and is
 * bounded by io_timeout_ms of no progress.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "fcgi_conn.h"

/* How often an idle kept connection looks for starving new ones, and how
 * long a new connection must have waited before one yields to it. */
#define YIELD_CHECK_MS 20
#define YIELD_GRACE_MS 10
/* Lingering close: at most this long (and io_timeout_ms). */
#define LINGER_MS 5000

static int left_ms(long long deadline)
{
    long long d = deadline - mono_ms();

    return d < 0 ? 0 : (int)d;
}

/* Claims the accept of a waiting connection for this worker (accepting
 * 0 -> 1); -EBUSY when it did, else 0 (another worker is accepting). */
static int try_yield(conn_t *c)
{
    unsigned zero = 0;

    if (atomic_compare_exchange_strong(&c->srv->accepting, &zero, 1)) {
        c->claimed = true;
        return -EBUSY;
    }
    return 0;
}

/*
 * Waits until fd is readable (events POLLIN) or writable (POLLOUT) before
 * deadline.  In FC_IDLE mode the stop eventfd also wakes it: a connection
 * that has been used is then closed at once; a fresh one still serves the
 * request whose bytes have already arrived.
 *
 * A used idle connection with nothing buffered also watches the listening
 * socket while no worker is accepting (looking again every YIELD_CHECK_MS
 * otherwise).  When a connection still waits there YIELD_GRACE_MS after it
 * was first seen (a worker about to call accept() again takes it sooner),
 * one idle worker claims it and yields (-EBUSY): idle kept connections
 * cannot starve new ones.
 */
static int wait_fd(conn_t *c, short events, int mode, long long deadline)
{
    fc_shared_t *sh = c->srv;
    bool may_yield = mode == FC_IDLE && !c->fresh && c->in_len == c->in_off;
    long long quiet_until = 0, pending_since = -1;

    for (;;) {
        struct pollfd p[3] = {{c->fd, events, 0},
                              {sh->stop_fd, POLLIN, 0},
                              {sh->listen_fd, POLLIN, 0}};
        bool watch = may_yield && atomic_load(&sh->accepting) == 0 &&
                     mono_ms() >= quiet_until;
        nfds_t n = mode != FC_IDLE ? 1 : watch ? 3 : 2;
        int t = left_ms(deadline), r;

        if (may_yield && !watch && t > YIELD_CHECK_MS) {
            t = YIELD_CHECK_MS;
        }
        r = poll(p, n, t);
        if (r < 0 && errno != EINTR) {
            return -errno;
        }
        if (r > 0 && n >= 2 && p[1].revents != 0 &&
            (!c->fresh || p[0].revents == 0)) {
            return -ESHUTDOWN;
        }
        if (r > 0 && p[0].revents != 0) {
            return 0;
        }
        if (left_ms(deadline) == 0) {
            return -ETIMEDOUT;
        }
        if (!watch || r < 0) {
            continue;
        }
        if (p[2].revents == 0) {
            pending_since = -1;
        } else if (pending_since < 0) {
            pending_since = mono_ms();
            quiet_until = pending_since + YIELD_GRACE_MS;
        } else if (try_yield(c) != 0) {
            return -EBUSY;
        } else {
            quiet_until = mono_ms() + YIELD_CHECK_MS;
        }
    }
}

/* The deadline of a wait in mode. */
static long long deadline_of(conn_t *c, int mode)
{
    return mono_ms() +
           (mode == FC_IDLE ? c->srv->idle_timeout_ms : c->srv->io_timeout_ms);
}

/* Receives up to n bytes into buf; >0 bytes, -ECONNRESET at EOF, -EAGAIN
 * (FC_NOWAIT), -ETIMEDOUT, -ESHUTDOWN, -errno. */
ssize_t mw_fc_recv_some(conn_t *c, void *buf, size_t n, int mode)
{
    long long deadline = -1;

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
            deadline = deadline_of(c, mode);
        }
        w = wait_fd(c, POLLIN, mode, deadline);
        if (w < 0) {
            return w;
        }
    }
}

int mw_fc_need(conn_t *c, size_t n, int mode)
{
    while (c->in_len - c->in_off < n) {
        ssize_t r;

        if (c->in_off > 0 && c->in_off + n > FC_IN_CAP) {
            memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
            c->in_len -= c->in_off;
            c->in_off = 0;
        }
        r = mw_fc_recv_some(c, c->in + c->in_len, FC_IN_CAP - c->in_len, mode);
        if (r < 0) {
            return (int)r;
        }
        c->in_len += (size_t)r;
    }
    return 0;
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

int mw_fc_sendv(conn_t *c, struct iovec *iov, int n)
{
    struct msghdr m;
    long long deadline = -1;

    if (c->werr != 0) {
        return c->werr;
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
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int w;

            if (deadline < 0) {
                deadline = deadline_of(c, FC_WAIT);
            }
            w = wait_fd(c, POLLOUT, FC_WAIT, deadline);
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

void mw_fc_linger(conn_t *c)
{
    unsigned ms =
        c->srv->io_timeout_ms < LINGER_MS ? c->srv->io_timeout_ms : LINGER_MS;
    long long deadline = mono_ms() + ms;

    if (c->peer_closed || shutdown(c->fd, SHUT_WR) != 0) {
        return;
    }
    while (left_ms(deadline) > 0) {
        struct pollfd p = {c->fd, POLLIN, 0};
        ssize_t r = recv(c->fd, c->in, FC_IN_CAP, MSG_DONTWAIT);

        if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) {
            break;
        }
        if (r < 0 && errno == EAGAIN && poll(&p, 1, left_ms(deadline)) < 0 &&
            errno != EINTR) {
            break;
        }
    }
    c->in_off = 0;
    c->in_len = 0;
}
