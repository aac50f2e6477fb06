/*
 * upstream_io.c - one FastCGI request over one connection: send the
 * prepared records and the body, relay the records that come back.
 *
 * One poll() loop watches the upstream socket (always for input, for
 * output while something is queued) and, while the output queue is empty
 * and the body is not finished, the request's body descriptor.  Sending
 * and receiving interleave, so an upstream that writes a large response
 * before reading a large body never deadlocks against us.  Every socket
 * call is non-blocking (MSG_DONTWAIT) and never raises SIGPIPE
 * (MSG_NOSIGNAL); the descriptor itself stays blocking.
 *
 * Output queue: at most four pieces (prelude, STDIN header, STDIN data,
 * empty STDIN) sent with one sendmsg(); a body chunk is read only when the
 * queue is empty, so one STDIN record is in flight at a time and the
 * body window can be reused.  Streamed body bytes go into the
 * connection's window one after the other; while the whole body consumed
 * so far fits, the window doubles as the replay buffer (replayable).
 *
 * Input: records are parsed as they arrive, in pieces: a header may be
 * split across reads and STDOUT content is relayed without waiting for
 * the rest of its record.  STDOUT goes to mw_req_write(); STDERR is
 * logged line by line (capped); END_REQUEST for our id ends the exchange.
 * Records for another request id, or of a type a responder never sends,
 * are protocol errors.  Management records (id 0) are skipped.
 *
 * Timeout: timeout_ms without any progress (bytes sent, received or read
 * from the body) ends the exchange with UP_TIMEOUT.
 *
 * The web server's connection and the daemon's stop are watched by the
 * same poll() (upstream_watch.c): a client that leaves while the app is
 * still working ends the exchange at once (UP_CLIENT), and so does the
 * stop once its grace period is over (UP_STOPPED).
 */
#include "upstream_internal.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "clock.h"
#include "log/log.h"

/* Without the stop eventfd, a wait looks at the stop flag this often. */
#define STOP_SLICE_MS 100

static up_end_t fail(up_xchg_t *x, up_end_t end, int sys_errno,
                     const char *what)
{
    x->sys_errno = sys_errno;
    x->what = what;
    return end;
}

/* ---- output queue --------------------------------------------------- */

static void q_add(up_xchg_t *x, const void *p, size_t n)
{
    x->iov[x->iov_n].iov_base = (void *)p;
    x->iov[x->iov_n].iov_len = n;
    x->iov_n++;
}

static bool q_empty(const up_xchg_t *x)
{
    return x->iov_at == x->iov_n;
}

/* Sends what the queue holds.  0 when all went, -EAGAIN when the socket
 * is full, else -errno; *sent is set when any byte went. */
static int q_send(up_xchg_t *x, bool *sent)
{
    struct msghdr msg;
    ssize_t n;

    while (!q_empty(x)) {
        memset(&msg, 0, sizeof(msg));
        msg.msg_iov = x->iov + x->iov_at;
        msg.msg_iovlen = (size_t)(x->iov_n - x->iov_at);
        n = sendmsg(x->c->fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return errno == EWOULDBLOCK ? -EAGAIN : -errno;
        }
        *sent = *sent || n > 0;
        while (n > 0) {
            struct iovec *v = &x->iov[x->iov_at];
            size_t k = (size_t)n < v->iov_len ? (size_t)n : v->iov_len;

            v->iov_base = (uint8_t *)v->iov_base + k;
            v->iov_len -= k;
            n -= (ssize_t)k;
            if (v->iov_len == 0) {
                x->iov_at++;
            }
        }
        /* Skip pieces that were empty from the start. */
        while (!q_empty(x) && x->iov[x->iov_at].iov_len == 0) {
            x->iov_at++;
        }
    }
    x->iov_at = x->iov_n = 0;
    return 0;
}

/* Queues one STDIN record of data[0..n) (n <= FCGI_MAX_CONTENT). */
static void q_stdin(up_xchg_t *x, const uint8_t *data, size_t n)
{
    fcgi_header_encode(x->data_hdr, FCGI_STDIN, UP_REQUEST_ID, (uint16_t)n, 0);
    q_add(x, x->data_hdr, sizeof(x->data_hdr));
    q_add(x, data, n);
}

static void q_eof(up_xchg_t *x)
{
    q_add(x, x->eof_hdr, sizeof(x->eof_hdr));
    x->stdin_done = true;
}

/* ---- body ----------------------------------------------------------- */

/* Queues the next chunk of a buffered body. */
static void feed_mem(up_xchg_t *x)
{
    size_t k = x->mem_len - x->mem_off;

    if (k > FCGI_MAX_CONTENT) {
        k = FCGI_MAX_CONTENT;
    }
    if (k > 0) {
        q_stdin(x, x->mem + x->mem_off, k);
        x->mem_off += k;
    }
    if (x->mem_off == x->mem_len) {
        q_eof(x);
    }
}

/*
 * Reads the next chunk of the request body (without waiting) into the
 * window and queues it.  UP_MORE when something was queued or nothing
 * could be read yet (-EAGAIN in *again), UP_CLIENT when the read failed.
 */
static up_end_t feed_req(up_xchg_t *x, bool *again)
{
    size_t want;
    ssize_t n;

    if (x->req_left == 0) {
        q_eof(x);
        return UP_MORE;
    }
    if (x->win_len == UP_BODY_WINDOW) {
        x->replayable = false; /* the start is about to be overwritten */
    }
    if (!x->replayable) {
        x->win_len = 0; /* the window only stages one record now */
    }
    want = UP_BODY_WINDOW - x->win_len;
    if (x->req_left < want) {
        want = (size_t)x->req_left;
    }
    n = mw_req_read(x->req, x->c->body + x->win_len, want, false);
    if (n == -EAGAIN) {
        *again = true;
        return UP_MORE;
    }
    if (n < 0) {
        return fail(x, UP_CLIENT, (int)-n, "reading the request body");
    }
    if (n == 0) {
        /* The body ended before CONTENT_LENGTH: send what came. */
        q_eof(x);
        return UP_MORE;
    }
    q_stdin(x, x->c->body + x->win_len, (size_t)n);
    x->win_len += (size_t)n;
    x->req_left -= (unsigned long long)n;
    if (x->req_left == 0) {
        q_eof(x);
    }
    return UP_MORE;
}

/* Queues body bytes when the queue is empty (or just holds the prelude
 * and nothing was fed yet).  Sets *again when the body has nothing now. */
static up_end_t feed(up_xchg_t *x, bool *again)
{
    *again = false;
    if (x->stdin_done) {
        return UP_MORE;
    }
    if (x->mem != NULL) {
        feed_mem(x);
        return UP_MORE;
    }
    return feed_req(x, again);
}

/* ---- input ---------------------------------------------------------- */

static void log_line(up_xchg_t *x)
{
    if (x->line_len == 0) {
        return;
    }
    if (x->lines < UP_STDERR_LINES) {
        mw_log(MW_LOG_WARNING, "upstream stderr: %.*s", (int)x->line_len,
               x->line);
        x->lines++;
    } else {
        x->dropped += x->line_len;
    }
    x->line_len = 0;
}

/* Collects STDERR bytes into lines and logs each; a line longer than
 * the buffer is logged in pieces. */
static void on_stderr(up_xchg_t *x, const uint8_t *p, size_t n)
{
    while (n > 0) {
        const uint8_t *nl = memchr(p, '\n', n);
        size_t k = nl != NULL ? (size_t)(nl - p) : n;
        size_t room = sizeof(x->line) - x->line_len;

        if (k > room) {
            memcpy(x->line + x->line_len, p, room);
            x->line_len += room;
            log_line(x);
            p += room;
            n -= room;
            continue;
        }
        memcpy(x->line + x->line_len, p, k);
        x->line_len += k;
        p += k;
        n -= k;
        if (nl != NULL) {
            log_line(x);
            p++;
            n--;
        }
    }
}

/* Relays n content bytes of the current record. */
static up_end_t on_content(up_xchg_t *x, const uint8_t *p, size_t n)
{
    int r;

    if (x->rec.request_id == FCGI_NULL_REQUEST_ID) {
        return UP_MORE;
    }
    switch (x->rec.type) {
    case FCGI_STDOUT:
        r = mw_req_write(x->req, p, n);
        if (r < 0) {
            return fail(x, UP_CLIENT, -r, "writing the response");
        }
        x->wrote = true;
        x->unflushed = true;
        return UP_MORE;
    case FCGI_STDERR:
        on_stderr(x, p, n);
        return UP_MORE;
    default: /* END_REQUEST: its 8 bytes */
        memcpy(x->end_body + x->end_len, p, n);
        x->end_len += (unsigned)n;
        return UP_MORE;
    }
}

/* Checks a record header just decoded. */
static up_end_t on_header(up_xchg_t *x)
{
    if (fcgi_header_decode(x->hdr, &x->rec) != SUSPECT_OK) {
        return fail(x, UP_FAILED, 0, "not a FastCGI record");
    }
    x->content_left = x->rec.content_len;
    x->pad_left = x->rec.padding_len;
    if (x->rec.request_id == FCGI_NULL_REQUEST_ID) {
        return UP_MORE; /* a management record: skipped */
    }
    if (x->rec.request_id != UP_REQUEST_ID) {
        return fail(x, UP_FAILED, 0, "record for another request id");
    }
    switch (x->rec.type) {
    case FCGI_STDOUT:
    case FCGI_STDERR:
        return UP_MORE;
    case FCGI_END_REQUEST:
        if (x->rec.content_len != sizeof(x->end_body)) {
            return fail(x, UP_FAILED, 0, "bad END_REQUEST length");
        }
        x->end_len = 0;
        return UP_MORE;
    default:
        return fail(x, UP_FAILED, 0, "unexpected record type");
    }
}

/* A record is complete. */
static up_end_t on_record(up_xchg_t *x)
{
    x->hdr_len = 0;
    if (x->rec.request_id != UP_REQUEST_ID || x->rec.type != FCGI_END_REQUEST) {
        return UP_MORE;
    }
    fcgi_end_decode(x->end_body, sizeof(x->end_body), &x->app_status,
                    &x->proto_status);
    x->got_end = true;
    return UP_DONE;
}

/* Parses received bytes p[0..n). */
static up_end_t parse(up_xchg_t *x, const uint8_t *p, size_t n)
{
    up_end_t r = UP_MORE;

    while (n > 0) {
        size_t k;

        if (x->hdr_len < FCGI_HEADER_LEN) {
            k = FCGI_HEADER_LEN - x->hdr_len;
            k = k < n ? k : n;
            memcpy(x->hdr + x->hdr_len, p, k);
            x->hdr_len += (unsigned)k;
            if (x->hdr_len == FCGI_HEADER_LEN) {
                r = on_header(x);
            }
        } else if (x->content_left > 0) {
            k = x->content_left < n ? x->content_left : n;
            x->content_left -= k;
            r = on_content(x, p, k);
        } else {
            k = x->pad_left < n ? x->pad_left : n;
            x->pad_left -= k;
        }
        p += k;
        n -= k;
        if (r == UP_MORE && x->hdr_len == FCGI_HEADER_LEN &&
            x->content_left == 0 && x->pad_left == 0) {
            r = on_record(x);
        }
        if (r != UP_MORE) {
            x->trailing = r == UP_DONE && n > 0;
            return r;
        }
    }
    return UP_MORE;
}

/* Reads what the upstream has sent and parses it. */
static up_end_t receive(up_xchg_t *x)
{
    for (;;) {
        ssize_t n = recv(x->c->fd, x->c->in, sizeof(x->c->in), MSG_DONTWAIT);
        up_end_t r;

        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                return UP_MORE;
            }
            return fail(x, errno == ECONNRESET ? UP_CLOSED : UP_FAILED, errno,
                        "read");
        }
        if (n == 0 && x->send_errno != 0) {
            return fail(x, UP_CLOSED, x->send_errno, "write");
        }
        if (n == 0) {
            return fail(x, UP_CLOSED, 0,
                        "connection closed before END_REQUEST");
        }
        x->received = true;
        r = parse(x, x->c->in, (size_t)n);
        if (r != UP_MORE || (size_t)n < sizeof(x->c->in)) {
            return r;
        }
    }
}

/* ---- the loop ------------------------------------------------------- */

/* Feeds the body and sends until both are blocked or done.  *body_wait
 * is set when the body has nothing to read right now. */
static up_end_t pump(up_xchg_t *x, bool *body_wait, bool *progress)
{
    *body_wait = false;
    while (x->send_errno == 0) {
        up_end_t r;
        int s;

        if (q_empty(x)) {
            if (x->stdin_done) {
                return UP_MORE;
            }
            r = feed(x, body_wait);
            if (r != UP_MORE) {
                return r;
            }
            if (*body_wait) {
                return UP_MORE;
            }
        }
        s = q_send(x, progress);
        if (s == -EAGAIN) {
            return UP_MORE;
        }
        if (s < 0) {
            /* The upstream may have answered and closed: read on, the
             * end of input decides. */
            x->send_errno = -s;
            x->iov_at = x->iov_n = 0;
            return UP_MORE;
        }
    }
    return UP_MORE;
}

/* Flushes relayed output before we may block, so a slow response
 * streams instead of sitting in the request I/O's buffer. */
static up_end_t flush_out(up_xchg_t *x)
{
    int r;

    if (!x->unflushed) {
        return UP_MORE;
    }
    x->unflushed = false;
    r = mw_req_flush(x->req);
    return r < 0 ? fail(x, UP_CLIENT, -r, "writing the response") : UP_MORE;
}

/* ---- the wait -------------------------------------------------------- */

static up_end_t stopped(up_xchg_t *x)
{
    return fail(x, UP_STOPPED, 0, "cancelled: the daemon is stopping");
}

/* Adds fd with events to the poll set at *n; its index, or -1. */
static int watch(struct pollfd *p, nfds_t *n, int fd, short events)
{
    if (fd < 0 || events == 0) {
        return -1;
    }
    p[*n].fd = fd;
    p[*n].events = events;
    p[*n].revents = 0;
    return (int)(*n)++;
}

/* One poll() over the upstream, maybe the body, the web server's
 * connection and the stop.  UP_MORE, or how the wait ended. */
static up_end_t wait_io(up_xchg_t *x, bool body_wait, long long deadline,
                        bool *readable)
{
    struct pollfd p[4];
    nfds_t n = 0;
    long long left;
    int r, at_client, at_stop, bfd = body_wait ? mw_req_read_fd(x->req) : -1;

    if (up_stopping()) {
        return stopped(x);
    }
    if (body_wait && bfd < 0) {
        /* Contract: without a descriptor, reads never return -EAGAIN. */
        return fail(x, UP_CLIENT, EAGAIN, "reading the request body");
    }
    watch(p, &n, x->c->fd, (short)(POLLIN | (q_empty(x) ? 0 : POLLOUT)));
    watch(p, &n, bfd, POLLIN);
    at_client = watch(p, &n, x->req->conn_fd, up_client_events(x));
    at_stop = watch(p, &n, up_stop_fd(), POLLIN);
    left = deadline - mono_ms();
    if (left <= 0) {
        return fail(x, UP_TIMEOUT, 0, "no progress within the timeout");
    }
    if (up_stop_fd() < 0 && left > STOP_SLICE_MS) {
        left = STOP_SLICE_MS; /* no eventfd: look at the flag now and then */
    }
    r = poll(p, n, (int)left);
    if (r < 0) {
        return errno == EINTR ? UP_MORE : fail(x, UP_FAILED, errno, "poll");
    }
    if (up_stopping() || (at_stop >= 0 && p[at_stop].revents != 0)) {
        return stopped(x);
    }
    if (r == 0) {
        return mono_ms() < deadline
                   ? UP_MORE
                   : fail(x, UP_TIMEOUT, 0, "no progress within the timeout");
    }
    if (at_client >= 0 && p[at_client].revents != 0) {
        up_end_t c = up_on_client(x, p[at_client].revents);

        if (c != UP_MORE) {
            return c;
        }
    }
    *readable = (p[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0;
    return UP_MORE;
}

up_end_t up_xchg_run(up_xchg_t *x)
{
    long long deadline = mono_ms() + x->timeout_ms;

    if (x->early != UP_MORE) {
        return x->early;
    }
    for (;;) {
        bool body_wait, readable = false, progress = false;
        up_end_t r = pump(x, &body_wait, &progress);

        if (r == UP_MORE) {
            r = flush_out(x);
        }
        if (r == UP_MORE) {
            if (progress) {
                deadline = mono_ms() + x->timeout_ms;
            }
            r = wait_io(x, body_wait, deadline, &readable);
        }
        if (r == UP_MORE && readable) {
            deadline = mono_ms() + x->timeout_ms;
            r = receive(x);
        }
        if (r != UP_MORE) {
            return r;
        }
    }
}

/* ---- start, replay, results ----------------------------------------- */

void up_xchg_start(up_xchg_t *x, mw_req_t *req, up_conn_t *c,
                   const uint8_t *mem, size_t mem_len,
                   unsigned long long body_len, unsigned timeout_ms)
{
    bool again;

    memset(x, 0, sizeof(*x));
    x->req = req;
    x->c = c;
    x->timeout_ms = timeout_ms;
    x->mem = mem;
    x->mem_len = mem_len;
    x->req_left = mem != NULL ? 0 : body_len;
    x->replayable = true;
    fcgi_header_encode(x->eof_hdr, FCGI_STDIN, UP_REQUEST_ID, 0, 0);
    q_add(x, c->pre, c->pre_len);
    /* The first body chunk, when at hand, goes with the prelude; a body
     * read error is reported by run() before anything is sent. */
    x->early = feed(x, &again);
}

bool up_xchg_rewind(up_xchg_t *x)
{
    bool again;

    if (!x->replayable || x->wrote) {
        return false;
    }
    x->iov_at = x->iov_n = 0;
    x->hdr_len = 0;
    x->content_left = x->pad_left = 0;
    x->got_end = x->trailing = x->received = false;
    x->sys_errno = x->send_errno = 0;
    x->what = NULL;
    q_add(x, x->c->pre, x->c->pre_len);
    if (x->mem != NULL) {
        x->mem_off = 0;
        x->stdin_done = false;
        feed(x, &again);
        return true;
    }
    if (x->win_len > 0) {
        q_stdin(x, x->c->body, x->win_len);
    }
    if (x->stdin_done) {
        q_add(x, x->eof_hdr, sizeof(x->eof_hdr));
    }
    return true;
}

bool up_xchg_reusable(const up_xchg_t *x)
{
    return x->got_end && !x->trailing && x->stdin_done && q_empty(x) &&
           x->send_errno == 0 && x->proto_status == FCGI_REQUEST_COMPLETE;
}

void up_xchg_finish(up_xchg_t *x)
{
    if (x->line_len > 0) {
        log_line(x);
    }
    if (x->dropped > 0) {
        mw_log(MW_LOG_WARNING, "upstream stderr: %zu more bytes dropped",
               x->dropped);
        x->dropped = 0;
    }
}
