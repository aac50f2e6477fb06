/*
 * fcgi_serve.c - serving one accepted FastCGI connection: its requests one
 * after another, each from BEGIN_REQUEST to END_REQUEST.
 *
 * A connection is idle (waiting for BEGIN_REQUEST, idle_timeout_ms), then
 * collects the PARAMS of one request (fcgi_params.c), runs the handler
 * with the connection's mw_req_t, drops the STDIN the handler left unread
 * as far as it has arrived, and ends the request: the last STDOUT record,
 * the empty one and END_REQUEST in one send.  Without FCGI_KEEP_CONN the
 * connection then closes (lingering when body bytes may still come, see
 * mw_fc_linger()); with it, the next request follows.
 *
 * Bounds: PARAMS are capped at params_max bytes and pairs_max pairs (over
 * either: a 431 response and close).  Once the server stops, a used
 * connection takes no new request.  Each worker owns one connection object
 * for its whole life (fcgi_conn.h), so a request allocates nothing once
 * the buffers have grown.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "fcgi_conn.h"

/* Unread body dropped at once when a request ends; more is drained later
 * (kept connection) or by the lingering close. */
#define DRAIN_MAX (256 * 1024)

static const char too_large_response[] =
    "Status: 431 Request Header Fields Too Large\r\n"
    "Content-Type: text/plain\r\n"
    "Content-Length: 32\r\n"
    "\r\n"
    "Request header fields too large\n";

conn_t *mw_fc_conn_new(fc_shared_t *srv)
{
    conn_t *c = suspect_calloc(1, sizeof(*c));

    if (c == NULL) {
        return NULL;
    }
    c->srv = srv;
    c->fd = -1;
    c->in = suspect_malloc(FC_IN_CAP);
    c->out = suspect_malloc(FCGI_HEADER_LEN + FCGI_MAX_CONTENT);
    if (c->in == NULL || c->out == NULL) {
        mw_fc_conn_free(c);
        return NULL;
    }
    return c;
}

void mw_fc_conn_free(conn_t *c)
{
    if (c == NULL) {
        return;
    }
    free(c->in);
    free(c->out);
    free(c->pbuf);
    free(c->params);
    free(c);
}

/* Answers a request whose PARAMS are too large, then closes. */
static int refuse_too_large(conn_t *c)
{
    size_t n = sizeof(too_large_response) - 1;

    atomic_fetch_add(&c->srv->too_large, 1);
    memcpy(c->out + FCGI_HEADER_LEN, too_large_response, n);
    c->out_len = n;
    if (mw_fc_flush(c, true, FCGI_REQUEST_COMPLETE) == 0) {
        c->linger = true;
    }
    return -ECANCELED;
}

/* Resets the per-request state for request c->id. */
static void start_request(conn_t *c)
{
    c->phase = FC_PH_PARAMS;
    c->stdin_done = false;
    c->aborted = false;
    c->broken = 0;
    c->counted = false;
    c->rec_left = 0;
    c->out_len = 0;
    c->req.ops = &mw_fc_ops;
    c->req.params = NULL;
    c->req.nparams = 0;
    c->req.pre = NULL;
    c->req.pre_len = 0;
    c->req.pre_off = 0;
    c->req.body_done = c->req.role == MW_ROLE_AUTHORIZER;
    c->req.output_started = false;
    c->req.cut = false;
    c->req.watch = NULL;
    c->req.watch_arg = NULL;
    c->req.prelude = NULL;
    c->req.prelude_len = 0;
    c->req.has_conn = true;
    c->req.conn_fd = c->fd;
}

/*
 * Drops what is left of the request's STDIN without waiting, up to
 * DRAIN_MAX bytes.  Usually the web server has sent it all already (a
 * GET's empty STDIN record comes with the PARAMS), and then the connection
 * closes, or takes the next request, without lingering.
 */
static void drain_stdin(conn_t *c)
{
    size_t dropped = 0;

    while (!c->stdin_done && !c->aborted && c->broken == 0 &&
           dropped < DRAIN_MAX) {
        int r;

        if (c->rec_left > 0) {
            size_t k;

            r = mw_fc_need(c, 1, FC_NOWAIT);
            if (r == 0) {
                k = c->in_len - c->in_off;
                k = k < c->rec_left ? k : c->rec_left;
                mw_fc_consume(c, k);
                c->rec_left -= k;
                dropped += k;
                if (c->rec_left == 0) {
                    c->pad_left = c->rec_pad;
                }
            }
        } else {
            r = mw_fc_next_stdin(c, FC_NOWAIT);
        }
        if (r == -ECONNRESET) {
            mw_fc_count_abort(c);
        }
        if (r < 0 && r != -EAGAIN && r != -ECONNABORTED) {
            c->broken = r;
        }
        if (r < 0) {
            return;
        }
    }
}

/*
 * Ends a response that stopped short (mw_req_t.cut): what was written goes
 * out, END_REQUEST never, and the connection closes.  A close alone is not
 * enough: nginx without fastcgi_keep_conn takes it for the normal end of
 * the response and sends its client the last chunk, so a cut response
 * would look whole.  So the close comes after a record no web server
 * accepts (version 0), which every one of them treats as a broken
 * upstream: nginx logs "upstream sent unsupported FastCGI protocol
 * version: 0" and closes its client's connection short.
 */
static int end_cut(conn_t *c)
{
    uint8_t bad[FCGI_HEADER_LEN] = {0, FCGI_STDOUT, 0, 0, 0, 0, 0, 0};
    struct iovec iov = {bad, sizeof(bad)};
    int r = mw_fc_flush(c, false, 0);

    bad[2] = (uint8_t)(c->id >> 8);
    bad[3] = (uint8_t)c->id;
    if (r == 0) {
        r = mw_fc_sendv(c, &iov, 1);
    }
    if (r == 0) {
        c->linger = true; /* a half-close first, then close */
        r = -ECANCELED;
    }
    return r;
}

/* Ends the request after the handler (or an abort before it). */
static int end_request(conn_t *c)
{
    int r = 0;

    mw_req_release(&c->req);
    drain_stdin(c);
    if (c->broken == -EPROTO) {
        r = -EPROTO;
    } else if (c->werr != 0 || c->broken == -ECONNRESET) {
        r = -ECONNRESET;
    } else if (c->req.cut && !c->aborted) {
        r = end_cut(c);
    } else {
        if (c->aborted) {
            c->out_len = 0; /* nobody wants it */
        }
        r = mw_fc_flush(c, true, FCGI_REQUEST_COMPLETE);
        if (r == 0 && (c->broken != 0 || !c->keep)) {
            c->linger = !c->stdin_done;
            r = -ECANCELED;
        }
    }
    if (c->rec_left > 0) {
        /* the handler stopped inside a STDIN record: skip its rest */
        c->pad_left = c->rec_left + c->rec_pad;
        c->rec_left = 0;
    }
    if (!c->stdin_done) {
        mw_fc_ignore(c, c->id);
    }
    c->phase = FC_PH_IDLE;
    return r;
}

/* Serves one request whose BEGIN_REQUEST was accepted. */
static int run_request(conn_t *c)
{
    int r;

    start_request(c);
    r = mw_fc_read_params(c);
    if (r == 0) {
        r = mw_fc_decode_params(c);
    }
    if (r == -EMSGSIZE) {
        r = refuse_too_large(c);
    } else if (r == 0) {
        c->phase = FC_PH_BODY;
        atomic_fetch_add(&c->srv->requests, 1);
        c->srv->handler(&c->req, c->srv->arg);
        return end_request(c);
    } else if (r == -ECONNABORTED) {
        return end_request(c);
    } else if (r == -ECONNRESET) {
        mw_fc_count_abort(c);
    }
    c->phase = FC_PH_IDLE;
    return r;
}

void mw_fc_serve(conn_t *c, int fd)
{
    int r;

    c->fd = fd;
    c->in_off = c->in_len = 0;
    c->pad_left = c->rec_left = 0;
    c->peer_closed = false;
    c->out_len = 0;
    c->werr = 0;
    c->phase = FC_PH_IDLE;
    c->linger = false;
    c->fresh = true;
    c->nignored = 0;
    do {
        r = mw_fc_wait_begin(c);
        if (r == 0) {
            atomic_fetch_add(&c->srv->busy, 1);
            r = run_request(c);
            atomic_fetch_sub(&c->srv->busy, 1);
        }
    } while (r == 0);
    if (r == -EPROTO) {
        atomic_fetch_add(&c->srv->bad_records, 1);
    }
    if (c->linger) {
        mw_fc_linger(c);
    }
    close(fd);
    c->fd = -1;
}
