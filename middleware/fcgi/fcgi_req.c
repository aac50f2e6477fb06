/*
 * fcgi_req.c - the mw_req_t of a FastCGI request: the body reader and the
 * output writer the handler uses (mw_fc_ops).
 *
 * Writing: small writes are copied into one STDOUT record (content up to
 * 65535 bytes) that is sent when it is full, on flush, and at the end
 * together with the empty STDOUT record and END_REQUEST (fcgi_io.c).  A
 * write that would overflow the record sends the buffered record and whole
 * records of the caller's bytes straight from its buffer (headers and data
 * in one iovec), copying only the tail.
 *
 * Reading: the STDIN stream of the request, record by record; between
 * records the connection's state machine (mw_fc_next_stdin()) handles
 * whatever else arrives.  Large body reads skip the buffer: once the
 * buffered bytes are used, the rest of a STDIN record goes straight from
 * the socket into the caller's buffer.  An authorizer's request has no
 * body.
 *
 * read_fd returns -1 while buffered bytes let a read without wait make
 * progress (a poll on the socket would not see them), else the socket.
 */
#include <errno.h>
#include <string.h>

#include "fcgi_conn.h"

/* Body reads at least this large bypass the input buffer. */
#define DIRECT_MIN 4096
/* Records one sendmsg() carries from a large write. */
#define BATCH 16

/* Sends the buffered record and whole records straight from p; returns
 * the bytes of p sent (a multiple of 65535) or -errno. */
static ssize_t write_direct(conn_t *c, const uint8_t *p, size_t n)
{
    uint8_t heads[BATCH][FCGI_HEADER_LEN];
    struct iovec iov[BATCH + 1];
    size_t used = 0;
    int k = 0, r;

    if (c->out_len > 0) {
        fcgi_header_encode(c->out, FCGI_STDOUT, c->id, (uint16_t)c->out_len, 0);
        iov[k].iov_base = c->out;
        iov[k++].iov_len = FCGI_HEADER_LEN + c->out_len;
    }
    for (int i = 0; i < BATCH / 2 && n - used >= FCGI_MAX_CONTENT; i++) {
        fcgi_header_encode(heads[i], FCGI_STDOUT, c->id, FCGI_MAX_CONTENT, 0);
        iov[k].iov_base = heads[i];
        iov[k++].iov_len = FCGI_HEADER_LEN;
        iov[k].iov_base = (void *)(p + used);
        iov[k++].iov_len = FCGI_MAX_CONTENT;
        used += FCGI_MAX_CONTENT;
    }
    c->out_len = 0;
    r = mw_fc_sendv(c, iov, k);
    return r < 0 ? r : (ssize_t)used;
}

/* mw_req_ops_t.write: buffer, or send large writes without a copy. */
static int op_write(mw_req_t *req, const void *buf, size_t n)
{
    conn_t *c = (conn_t *)req;
    const uint8_t *p = buf;

    if (c->werr != 0) {
        return c->werr;
    }
    if (c->aborted) {
        return -ECONNABORTED;
    }
    while (c->out_len + n >= FCGI_MAX_CONTENT) {
        if (n >= FCGI_MAX_CONTENT) {
            ssize_t sent = write_direct(c, p, n);

            if (sent < 0) {
                return (int)sent;
            }
            p += sent;
            n -= (size_t)sent;
        } else {
            size_t k = FCGI_MAX_CONTENT - c->out_len;
            int r;

            memcpy(c->out + FCGI_HEADER_LEN + c->out_len, p, k);
            c->out_len += k;
            p += k;
            n -= k;
            r = mw_fc_flush(c, false, 0);
            if (r < 0) {
                return r;
            }
        }
    }
    if (n > 0) {
        memcpy(c->out + FCGI_HEADER_LEN + c->out_len, p, n);
        c->out_len += n;
    }
    return 0;
}

/* mw_req_ops_t.flush. */
static int op_flush(mw_req_t *req)
{
    conn_t *c = (conn_t *)req;

    if (c->werr != 0) {
        return c->werr;
    }
    return c->aborted ? -ECONNABORTED : mw_fc_flush(c, false, 0);
}

/* Marks the request broken by read error r (r < 0, not -EAGAIN). */
static ssize_t read_failed(conn_t *c, int r)
{
    if (r == -ECONNRESET) {
        mw_fc_count_abort(c);
    } else if (r == -ECONNABORTED) {
        return r;
    }
    c->broken = r;
    return r;
}

/* Reads from the current STDIN record (rec_left > 0). */
static ssize_t read_content(conn_t *c, void *buf, size_t n, int mode)
{
    size_t avail = c->in_len - c->in_off;
    ssize_t r;

    if (n > c->rec_left) {
        n = c->rec_left;
    }
    if (avail > 0) {
        r = (ssize_t)(n < avail ? n : avail);
        memcpy(buf, c->in + c->in_off, (size_t)r);
        mw_fc_consume(c, (size_t)r);
    } else if (n >= DIRECT_MIN) {
        r = mw_fc_recv_some(c, buf, n, mode);
    } else {
        r = mw_fc_need(c, 1, mode);
        if (r == 0) {
            return read_content(c, buf, n, mode);
        }
    }
    if (r > 0) {
        c->rec_left -= (size_t)r;
        if (c->rec_left == 0) {
            c->pad_left = c->rec_pad;
        }
    }
    return r;
}

/* mw_req_ops_t.read: the STDIN stream of the request. */
static ssize_t op_read(mw_req_t *req, void *buf, size_t n, bool wait)
{
    conn_t *c = (conn_t *)req;
    /* the front serves only handlers that read no body: it never waits */
    int mode = wait && !c->in_front ? FC_WAIT : FC_NOWAIT;

    if (req->role == MW_ROLE_AUTHORIZER) {
        return 0;
    }
    for (;;) {
        ssize_t r;

        if (c->aborted) {
            return -ECONNABORTED;
        }
        if (c->broken != 0) {
            return c->broken;
        }
        if (c->stdin_done || n == 0) {
            return 0;
        }
        if (c->rec_left > 0) {
            r = read_content(c, buf, n, mode);
        } else {
            r = mw_fc_next_stdin(c, mode);
            if (r == 0) {
                continue; /* a STDIN record started, or the stream ended */
            }
        }
        if (r == -EAGAIN || r > 0) {
            return r;
        }
        return read_failed(c, (int)r);
    }
}

/* Whether a read without wait would return something other than -EAGAIN
 * right now, from what is buffered. */
static bool can_progress(conn_t *c)
{
    size_t avail = c->in_len - c->in_off;
    fcgi_header_t h;

    if (c->aborted || c->broken != 0 || c->stdin_done || c->peer_closed) {
        return true;
    }
    if (c->rec_left > 0) {
        return avail > 0;
    }
    if (avail < c->pad_left + FCGI_HEADER_LEN) {
        return false;
    }
    avail -= c->pad_left;
    if (fcgi_header_decode(c->in + c->in_off + c->pad_left, &h) != SUSPECT_OK ||
        (h.type == FCGI_STDIN && h.request_id == c->id)) {
        return true;
    }
    return avail >= FCGI_HEADER_LEN + (size_t)h.content_len + h.padding_len;
}

/* mw_req_ops_t.read_fd: the socket, or -1 when buffered bytes can be
 * read at once (a poll on the socket would not see them). */
static int op_read_fd(mw_req_t *req)
{
    conn_t *c = (conn_t *)req;

    if (req->role == MW_ROLE_AUTHORIZER || can_progress(c)) {
        return -1;
    }
    return c->fd;
}

const mw_req_ops_t mw_fc_ops = {
    .read = op_read,
    .read_fd = op_read_fd,
    .write = op_write,
    .flush = op_flush,
};
