/*
 * fcgi_conn.c - one FastCGI connection: the record state machine, what
 * each record that arrives means for the connection and its request.
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
 * The callers (the front, fcgi_front.c, between requests and while the
 * PARAMS arrive, without ever waiting; fcgi_req.c inside a body read) ask
 * for the next record they want; every other record is handled here on
 * the way.  A record is only ever read into the connection's input
 * buffer, whole before it is handled, so the front can stop at any byte
 * and go on when more arrives.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "fcgi_conn.h"

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
void mw_fc_ignore(conn_t *c, uint16_t id)
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
                   mode);
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
        mw_fc_ignore(c, h->request_id);
        return send_end(c, h->request_id, FCGI_CANT_MPX_CONN);
    }
    unignore(c, h->request_id);
    if (role != FCGI_RESPONDER && role != FCGI_AUTHORIZER) {
        mw_fc_ignore(c, h->request_id);
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

/* Resets the per-request state for the request c->id just begun. */
static void start_request(conn_t *c)
{
    c->phase = FC_PH_PARAMS;
    c->plen = 0;
    c->stdin_done = false;
    c->aborted = false;
    c->broken = 0;
    c->counted = false;
    c->rec_left = 0;
    c->linger = false;
    c->begun_ms = mono_ms();
}

/* One whole record in the front: see mw_fc_front_step(). */
static int front_record(conn_t *c, const fcgi_header_t *h)
{
    int r;

    if (c->phase == FC_PH_PARAMS && h->type == FCGI_PARAMS &&
        h->request_id == c->id) {
        r = mw_fc_add_params(c, c->in + c->in_off + FCGI_HEADER_LEN,
                             h->content_len);
        consume_record(c, h);
        if (r == 0 && h->content_len == 0) {
            c->phase = FC_PH_BODY;
            return FC_STEP_READY;
        }
        return r;
    }
    if (c->phase == FC_PH_IDLE && !c->fresh && atomic_load(&c->srv->stopping)) {
        return -ESHUTDOWN;
    }
    r = dispatch(c, h);
    consume_record(c, h);
    c->fresh = false;
    if (r == 1) {
        start_request(c);
        r = 0;
    }
    return r;
}

int mw_fc_front_step(conn_t *c)
{
    for (;;) {
        fcgi_header_t h;
        int r = next_record(c, FC_NOWAIT, &h);

        if (r == -EAGAIN) {
            return FC_STEP_MORE;
        }
        if (r == 0) {
            r = front_record(c, &h);
        }
        if (r != 0) {
            return r;
        }
    }
}

bool mw_fc_body_buffered(const conn_t *c)
{
    size_t off = c->in_off + c->pad_left;

    if (c->req.role == MW_ROLE_AUTHORIZER) {
        return true;
    }
    while (off + FCGI_HEADER_LEN <= c->in_len) {
        fcgi_header_t h;

        if (fcgi_header_decode(c->in + off, &h) != SUSPECT_OK) {
            return true; /* a worker will meet it and close */
        }
        if (h.type == FCGI_STDIN && h.request_id == c->id &&
            h.content_len == 0) {
            return true;
        }
        off += FCGI_HEADER_LEN + (size_t)h.content_len + h.padding_len;
    }
    return false;
}

int mw_fc_end_aborted(conn_t *c)
{
    uint8_t body[8];
    int r;

    fcgi_end_encode(body, 0, FCGI_REQUEST_COMPLETE);
    r = mw_fc_send_record(c, FCGI_END_REQUEST, c->id, body, sizeof(body));
    mw_fc_ignore(c, c->id);
    c->phase = FC_PH_IDLE;
    if (r == 0 && !c->keep) {
        c->linger = true;
        r = -ECANCELED;
    }
    return r;
}
