/*
 * fcgi_serve.c - one FastCGI request served by a worker, from the moment
 * its PARAMS have all arrived (the front collected them) to END_REQUEST;
 * and a connection's life: made at accept, freed at close.
 *
 * Serving: the PARAMS are decoded (fcgi_params.c), the handler runs with
 * the connection's mw_req_t, the STDIN the handler left unread is dropped
 * as far as it has arrived, and the request ends: the last STDOUT record,
 * the empty one and END_REQUEST in one send.  Then the connection goes
 * back to the front: to wait for the next request (FCGI_KEEP_CONN), to
 * linger (body bytes may still come) or to close.
 *
 * The front serves some requests itself (mw_fc_run_in_front(): the same
 * run with the front's scratch, reads and sends that never wait); a
 * response it could not send at once is sent by a worker
 * (mw_fc_send_unsent()) before the connection moves on.
 *
 * Bounds: PARAMS are capped at params_max bytes and pairs_max pairs (over
 * either: a 431 response and close).  A worker lends its scratch (the
 * STDOUT record, the decoded pairs) to the connection it serves, so a
 * request allocates nothing once the worker's buffers have grown, and a
 * connection that waits costs none of them.
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

conn_t *mw_fc_conn_new(fc_shared_t *srv, int fd)
{
    conn_t *c = suspect_calloc(1, sizeof(*c));

    if (c == NULL) {
        return NULL;
    }
    c->srv = srv;
    c->fd = fd;
    c->fresh = true;
    c->phase = FC_PH_IDLE;
    return c;
}

void mw_fc_conn_free(conn_t *c)
{
    if (c == NULL) {
        return;
    }
    if (c->fd >= 0) {
        close(c->fd);
    }
    free(c->in);
    free(c->pbuf);
    free(c->unsent);
    free(c);
}

void mw_fc_lend(conn_t *c, fc_scratch_t *s)
{
    c->out = s->out;
    c->params = s->params;
    c->params_cap = s->params_cap;
    c->mcap = s->mcap;
    c->hkey = s->hkey;
    c->hkey_set = s->hkey_set;
    c->nowait = false;
}

void mw_fc_take_back(conn_t *c, fc_scratch_t *s)
{
    s->params = c->params;
    s->params_cap = c->params_cap;
    s->mcap = c->mcap;
    s->hkey = c->hkey;
    s->hkey_set = c->hkey_set;
    c->out = NULL;
    c->params = NULL;
    c->params_cap = 0;
    c->mcap = 0;
    c->nowait = true;
}

void mw_fc_scratch_free(fc_scratch_t *s)
{
    free(s->out);
    free(s->params);
    memset(s, 0, sizeof(*s));
}

int mw_fc_refuse_too_large(conn_t *c)
{
    uint8_t
        buf[FCGI_HEADER_LEN + sizeof(too_large_response) + 3 * FCGI_HEADER_LEN];
    size_t n = sizeof(too_large_response) - 1;
    struct iovec iov = {buf, 0};

    atomic_fetch_add(&c->srv->too_large, 1);
    fcgi_header_encode(buf, FCGI_STDOUT, c->id, (uint16_t)n, 0);
    memcpy(buf + FCGI_HEADER_LEN, too_large_response, n);
    n += FCGI_HEADER_LEN;
    fcgi_header_encode(buf + n, FCGI_STDOUT, c->id, 0, 0);
    fcgi_header_encode(buf + n + 8, FCGI_END_REQUEST, c->id, 8, 0);
    fcgi_end_encode(buf + n + 16, 0, FCGI_REQUEST_COMPLETE);
    iov.iov_len = n + 3 * FCGI_HEADER_LEN;
    if (mw_fc_sendv(c, &iov, 1) == 0) {
        c->linger = true;
    }
    mw_fc_ignore(c, c->id);
    c->phase = FC_PH_IDLE;
    return -ECANCELED;
}

/* Readies the mw_req_t of the request whose PARAMS arrived. */
static void start_request(conn_t *c)
{
    c->out_len = 0;
    c->req.ops = &mw_fc_ops;
    c->req.params = NULL;
    c->req.nparams = 0;
    c->req.pre = NULL;
    c->req.pre_len = 0;
    c->req.pre_off = 0;
    c->req.filter = NULL;
    c->req.refused = 0;
    c->req.refused_why = NULL;
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

/* What the connection does after the request ended with r. */
static int next_of(conn_t *c, int r)
{
    if (r == -EPROTO) {
        atomic_fetch_add(&c->srv->bad_records, 1);
    }
    if (r == 0 && !atomic_load(&c->srv->stopping)) {
        return FC_NEXT_KEEP;
    }
    return c->linger && r != -EPROTO && r != -ECONNRESET ? FC_NEXT_LINGER
                                                         : FC_NEXT_CLOSE;
}

int mw_fc_run(conn_t *c)
{
    int r;

    start_request(c);
    r = mw_fc_decode_params(c);
    if (r == -EMSGSIZE) {
        r = mw_fc_refuse_too_large(c);
    } else if (r == 0) {
        atomic_fetch_add(&c->srv->requests, 1);
        c->srv->handler(&c->req, c->srv->arg);
        r = end_request(c);
    } else {
        c->phase = FC_PH_IDLE;
    }
    return next_of(c, r);
}

int mw_fc_run_in_front(conn_t *c, fc_scratch_t *s)
{
    int next;

    atomic_fetch_add(&c->srv->in_front, 1); /* before the answer leaves */
    mw_fc_lend(c, s);
    c->nowait = true;
    c->in_front = true;
    next = mw_fc_run(c);
    c->in_front = false;
    mw_fc_take_back(c, s);
    return next;
}

int mw_fc_send_unsent(conn_t *c)
{
    uint8_t *unsent = c->unsent;
    struct iovec iov = {unsent, c->unsent_len};
    int r;

    c->unsent = NULL; /* sent now, not kept again */
    c->unsent_len = 0;
    r = mw_fc_sendv(c, &iov, 1); /* moves iov on */
    free(unsent);
    return r == 0 ? c->after : FC_NEXT_CLOSE;
}
