/*
 * fcgi_conn.c - one FastCGI connection: the record state machine.
 *
 * A connection is idle (waiting for BEGIN_REQUEST, idle_timeout_ms), then
 * collects the PARAMS of one request (fcgi_params.c), runs the handler
 * with the connection's mw_req_t, drops the STDIN the handler left unread
 * as far as it has arrived, and ends the request: the last STDOUT record,
 * the empty one and END_REQUEST in one send.  Without FCGI_KEEP_CONN the
 * connection then closes (lingering when body bytes may still come, see
 * mw_fc_linger()); with it, the next request follows.
 *
 * Records that do not belong to the request in progress are handled
 * whenever they arrive (while idle, while collecting PARAMS, or inside a
 * body read): GET_VALUES is answered, unknown management types get
 * UNKNOWN_TYPE, a BEGIN_REQUEST for another id while busy gets
 * FCGI_CANT_MPX_CONN, ABORT_REQUEST of the current id aborts it.  The
 * streams of refused requests and the rest of the STDIN of a finished
 * request that had not arrived yet (an authorizer's, a body the handler
 * did not read, an aborted one) are skipped by remembering their ids;
 * that is how the unread body of a kept connection is drained.  Anything else
 * (a bad version, a truncated record, PARAMS before BEGIN_REQUEST, STDIN for an
 * unknown id, malformed pairs) closes the connection and counts bad_records.
 *
 * Bounds: a record is only ever read into the fixed input buffer; PARAMS
 * are capped at params_max bytes and pairs_max pairs (over either: a 431
 * response and close).  Once the server stops, a used connection takes no
 * new request.
 */
#include <errno.h>
#include <stdio.h>
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

static bool is_ignored(const conn_t *c, uint16_t id)
{
    for (unsigned i = 0; i < c->nignored; i++) {
        if (c->ignored[i] == id) {
            return true;
        }
    }
    return false;
}

static void unignore(conn_t *c, uint16_t id)
{
    for (unsigned i = 0; i < c->nignored; i++) {
        if (c->ignored[i] == id) {
            c->ignored[i] = c->ignored[--c->nignored];
            return;
        }
    }
}

/* Skips the rest of request id's streams (the oldest id is forgotten when
 * the set is full; its records would then close the connection). */
static void ignore(conn_t *c, uint16_t id)
{
    if (is_ignored(c, id)) {
        return;
    }
    if (c->nignored == FC_IGNORED_MAX) {
        memmove(c->ignored, c->ignored + 1,
                (FC_IGNORED_MAX - 1) * sizeof(c->ignored[0]));
        c->nignored--;
    }
    c->ignored[c->nignored++] = id;
}

/* Sends END_REQUEST with protocol status proto for id. */
static int send_end(conn_t *c, uint16_t id, uint8_t proto)
{
    uint8_t body[8];

    fcgi_end_encode(body, 0, proto);
    return mw_fc_send_record(c, FCGI_END_REQUEST, id, body, sizeof(body));
}

/*
 * Reads the next record header and, unless it starts a STDIN record of the
 * request being served (streamed by the body reader), its whole content
 * and padding.  EOF inside a record is a protocol error.
 */
static int next_record(conn_t *c, int mode, fcgi_header_t *h)
{
    int r = mw_fc_skip_pad(c, mode);

    if (r == 0) {
        r = mw_fc_need(c, FCGI_HEADER_LEN, mode);
    }
    if (r == -ECONNRESET && c->in_len > c->in_off) {
        return -EPROTO;
    }
    if (r < 0) {
        return r;
    }
    if (fcgi_header_decode(c->in + c->in_off, h) != SUSPECT_OK) {
        return -EPROTO;
    }
    if (c->phase == FC_PH_BODY && h->type == FCGI_STDIN &&
        h->request_id == c->id) {
        return 0;
    }
    r = mw_fc_need(c, FCGI_HEADER_LEN + (size_t)h->content_len + h->padding_len,
                   mode == FC_IDLE ? FC_WAIT : mode);
    return r == -ECONNRESET ? -EPROTO : r;
}

static void consume_record(conn_t *c, const fcgi_header_t *h)
{
    mw_fc_consume(c, FCGI_HEADER_LEN + (size_t)h->content_len + h->padding_len);
}

/* Answers GET_VALUES with the variables we know, each at most once. */
static int get_values(conn_t *c, const uint8_t *p, size_t len)
{
    static const char *const names[] = {"FCGI_MAX_CONNS", "FCGI_MAX_REQS",
                                        "FCGI_MPXS_CONNS"};
    uint8_t out[128];
    size_t off = 0, at = 0;
    unsigned done = 0;
    fcgi_nv_t nv;
    suspect_rc_t rc;

    while ((rc = fcgi_nv_decode(p, len, &off, &nv)) == SUSPECT_OK) {
        for (unsigned i = 0; i < 3; i++) {
            char v[16];
            size_t n = strlen(names[i]);

            if ((done & (1u << i)) != 0 || nv.name_len != n ||
                memcmp(nv.name, names[i], n) != 0) {
                continue;
            }
            done |= 1u << i;
            n = (size_t)snprintf(v, sizeof(v), "%u",
                                 i == 2 ? 0u : c->srv->workers);
            at += fcgi_nv_encode(out + at, names[i], strlen(names[i]), v, n);
        }
    }
    if (rc != SUSPECT_E_NOTFOUND) {
        return -EPROTO;
    }
    return mw_fc_send_record(c, FCGI_GET_VALUES_RESULT, 0, out, at);
}

static int unknown_type(conn_t *c, uint8_t type)
{
    uint8_t body[8] = {type, 0, 0, 0, 0, 0, 0, 0};

    return mw_fc_send_record(c, FCGI_UNKNOWN_TYPE, 0, body, sizeof(body));
}

/*
 * BEGIN_REQUEST.  Idle: starts the request (1), or refuses an unknown role
 * (0, or -ECANCELED when the connection is not kept).  Busy: refuses the
 * id with FCGI_CANT_MPX_CONN.
 */
static int begin(conn_t *c, const fcgi_header_t *h, const uint8_t *body)
{
    uint16_t role;
    uint8_t flags;
    int r;

    if (h->request_id == 0 ||
        fcgi_begin_decode(body, h->content_len, &role, &flags) != SUSPECT_OK) {
        return -EPROTO;
    }
    if (c->phase != FC_PH_IDLE) {
        if (h->request_id == c->id) {
            return -EPROTO;
        }
        ignore(c, h->request_id);
        return send_end(c, h->request_id, FCGI_CANT_MPX_CONN);
    }
    unignore(c, h->request_id);
    if (role != FCGI_RESPONDER && role != FCGI_AUTHORIZER) {
        ignore(c, h->request_id);
        r = send_end(c, h->request_id, FCGI_UNKNOWN_ROLE);
        if (r == 0 && (flags & FCGI_KEEP_CONN) == 0) {
            c->linger = true;
            r = -ECANCELED;
        }
        return r;
    }
    c->id = h->request_id;
    c->keep = (flags & FCGI_KEEP_CONN) != 0;
    c->req.role =
        role == FCGI_AUTHORIZER ? MW_ROLE_AUTHORIZER : MW_ROLE_RESPONDER;
    return 1;
}

/* Handles a record that is not PARAMS or STDIN of the request being
 * served; it stays buffered until the caller consumes it. */
static int dispatch(conn_t *c, const fcgi_header_t *h)
{
    const uint8_t *body = c->in + c->in_off + FCGI_HEADER_LEN;
    bool current = c->phase != FC_PH_IDLE && h->request_id == c->id;

    switch (h->type) {
    case FCGI_GET_VALUES:
        return h->request_id == 0 ? get_values(c, body, h->content_len)
                                  : -EPROTO;
    case FCGI_BEGIN_REQUEST:
        return begin(c, h, body);
    case FCGI_ABORT_REQUEST:
        if (current) {
            c->aborted = true;
            mw_fc_count_abort(c);
            return -ECONNABORTED;
        }
        return 0; /* late: the request has ended */
    case FCGI_PARAMS:
    case FCGI_STDIN:
    case FCGI_DATA:
        if (h->request_id != 0 && is_ignored(c, h->request_id)) {
            return 0; /* until a BEGIN_REQUEST reuses the id */
        }
        return current && h->type == FCGI_DATA ? 0 : -EPROTO;
    default:
        if (h->request_id == 0 || h->type > FCGI_UNKNOWN_TYPE) {
            return unknown_type(c, h->type);
        }
        return -EPROTO;
    }
}

int mw_fc_next_stdin(conn_t *c, int mode)
{
    for (;;) {
        fcgi_header_t h;
        int r = next_record(c, mode, &h);

        if (r < 0) {
            return r;
        }
        if (h.type == FCGI_STDIN && h.request_id == c->id) {
            mw_fc_consume(c, FCGI_HEADER_LEN);
            if (h.content_len == 0) {
                c->stdin_done = true;
                c->pad_left = h.padding_len;
            } else {
                c->rec_left = h.content_len;
                c->rec_pad = h.padding_len;
            }
            return 0;
        }
        r = dispatch(c, &h);
        consume_record(c, &h);
        if (r < 0) {
            return r;
        }
    }
}

/* Waits for a BEGIN_REQUEST we accept; 0, or a code to close.  Once the
 * server stops, a used connection takes no new request, even one that is
 * already buffered. */
static int wait_begin(conn_t *c)
{
    for (;;) {
        fcgi_header_t h;
        int r;

        if (!c->fresh && atomic_load(&c->srv->stopping)) {
            return -ESHUTDOWN;
        }
        r = next_record(c, FC_IDLE, &h);
        if (r < 0) {
            return r;
        }
        r = dispatch(c, &h);
        consume_record(c, &h);
        c->fresh = false;
        if (r < 0) {
            return r;
        }
        if (r == 1) {
            return 0;
        }
    }
}

/* Collects the PARAMS stream of the request (until its empty record). */
static int read_params(conn_t *c)
{
    c->plen = 0;
    for (;;) {
        fcgi_header_t h;
        int r = next_record(c, FC_WAIT, &h);

        if (r < 0) {
            return r;
        }
        if (h.type == FCGI_PARAMS && h.request_id == c->id) {
            r = mw_fc_add_params(c, c->in + c->in_off + FCGI_HEADER_LEN,
                                 h.content_len);
            consume_record(c, &h);
            if (r < 0 || h.content_len == 0) {
                return r;
            }
            continue;
        }
        r = dispatch(c, &h);
        consume_record(c, &h);
        if (r < 0) {
            return r;
        }
    }
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
        ignore(c, c->id);
    }
    c->phase = FC_PH_IDLE;
    return r;
}

/* Serves one request whose BEGIN_REQUEST was accepted. */
static int run_request(conn_t *c)
{
    int r;

    start_request(c);
    r = read_params(c);
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
        r = wait_begin(c);
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
