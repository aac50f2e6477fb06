/*
 * upstream_watch.c - what an exchange of upstream_io.c watches besides the
 * upstream: the web server's connection of the request, and the daemon's
 * stop.
 *
 * The web server: when the request came on a connection of its own
 * (mw_req_t.has_conn: FastCGI), the exchange's poll() also watches that
 * connection, so a client that leaves while the app is still thinking
 * ends the exchange at once (UP_CLIENT; upstream.c then closes the
 * upstream connection instead of pooling it) rather than after
 * timeout_ms.  Its hang-up (POLLRDHUP: nginx, lighttpd and Apache close
 * the connection when their client aborts) counts all the time.  Once the
 * body is sent, its input is looked at too: the bytes waiting there are
 * peeked, never read, and an ABORT_REQUEST among them ends the exchange;
 * the rest of the request's STDIN stream (its empty record) is read
 * through the request, so that an ABORT_REQUEST behind it comes to the
 * top; any other byte belongs to the request I/O, and from then on only the
 * hang-up is watched (poll() would report those bytes again and again).
 * Before the body is sent, an ABORT_REQUEST shows up as a failed body
 * read.  A kept connection (FCGI_KEEP_CONN) that stays open and silent is
 * no sign of anything.  An ABORT_REQUEST the request I/O had already read
 * into its buffer before the exchange looked is not seen (web servers
 * send it long after the request, when their client leaves).
 *
 * Stop: up_stop_all() (the daemon's stop, once its grace period is over)
 * sets a flag and makes an eventfd readable that every wait also polls,
 * so each exchange in flight ends at once (UP_STOPPED: 504, or a cut
 * response) instead of waiting for a hung app up to timeout_ms.  The
 * eventfd is made once per process and never closed.
 */
#include "upstream_internal.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

/* Bytes of the web server's connection peeked for an ABORT_REQUEST. */
#define PEEK_MAX 512

/* The daemon-wide stop: the flag, and an eventfd readable once it is set
 * (-1 when none could be made). */
static atomic_bool stopping;
static int stop_fd = -1;
static pthread_once_t stop_once = PTHREAD_ONCE_INIT;

/* The client went away: how, for the log. */
static up_end_t gone(up_xchg_t *x, int sys_errno, const char *what)
{
    x->sys_errno = sys_errno;
    x->what = what;
    return UP_CLIENT;
}

/* ---- the web server's connection ---------------------------------------- */

/* Whether the bytes waiting on fd (peeked, not read) hold an
 * ABORT_REQUEST record. */
static bool peek_abort(int fd)
{
    uint8_t b[PEEK_MAX];
    ssize_t n;
    size_t off = 0;

    do {
        n = recv(fd, b, sizeof(b), MSG_PEEK | MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    while (n > 0 && off + FCGI_HEADER_LEN <= (size_t)n) {
        fcgi_header_t h;

        if (fcgi_header_decode(b + off, &h) != SUSPECT_OK) {
            return false;
        }
        if (h.type == FCGI_ABORT_REQUEST && h.request_id != 0) {
            return true;
        }
        off += FCGI_HEADER_LEN + h.content_len + h.padding_len;
    }
    return false;
}

short up_client_events(const up_xchg_t *x)
{
    if (!x->req->has_conn || x->req->conn_fd < 0) {
        return 0;
    }
    return (short)(POLLRDHUP |
                   (x->stdin_done && !x->client_quiet ? POLLIN : 0));
}

up_end_t up_on_client(up_xchg_t *x, short revents)
{
    uint8_t rest[FCGI_HEADER_LEN];
    ssize_t r;

    if ((revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) {
        return gone(x, 0, "the web server closed the request's connection");
    }
    if ((revents & POLLIN) == 0) {
        return UP_MORE;
    }
    if (peek_abort(x->req->conn_fd)) {
        return gone(x, 0, "the web server aborted the request");
    }
    if (x->req->body_done) {
        x->client_quiet = true; /* the request I/O's bytes, not ours */
        return UP_MORE;
    }
    /* The end of the STDIN stream (or bytes past CONTENT_LENGTH, which
     * the request I/O would drop anyway). */
    r = mw_req_read(x->req, rest, sizeof(rest), false);
    if (r < 0 && r != -EAGAIN) {
        return gone(x, (int)-r,
                    r == -ECONNABORTED ? "the web server aborted the request"
                                       : "reading the request's connection");
    }
    return UP_MORE;
}

/* ---- the stop ------------------------------------------------------------ */

static void stop_init_once(void)
{
    stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
}

suspect_rc_t up_stop_init(void)
{
    pthread_once(&stop_once, stop_init_once);
    return stop_fd >= 0 ? SUSPECT_OK : SUSPECT_E_NOMEM;
}

void up_stop_all(void)
{
    uint64_t one = 1;

    atomic_store(&stopping, true);
    if (stop_fd >= 0 && write(stop_fd, &one, sizeof(one)) < 0) {
        /* EAGAIN: the counter is full, so it is readable already */
    }
}

bool up_stopping(void)
{
    return atomic_load(&stopping);
}

int up_stop_fd(void)
{
    return stop_fd;
}
