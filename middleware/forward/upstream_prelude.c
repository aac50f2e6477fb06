/*
 * upstream_prelude.c - the first bytes of a request to the upstream: its
 * BEGIN_REQUEST, the request's variables as PARAMS records, then an empty
 * PARAMS, built in the connection's buffer (up_conn_t.pre).
 *
 * The variables are the request's that go on to an application
 * (fwd_params.c: CGI/1.1, headers, what <Upstream passParams> names;
 * never HTTP_PROXY; PHP_VALUE and PHP_ADMIN_VALUE only when named), with
 * these edits: SCRIPT_FILENAME is replaced when configured,
 * REDIRECT_STATUS=200 added when missing (php-cgi's cgi.force_redirect)
 * and CONTENT_LENGTH set for a buffered body.  A pair never straddles two
 * records unless it alone is larger than one (PHP parses each record on
 * its own); no empty PARAMS record is sent before the last.  The buffer is
 * sized once from a bound on the bytes needed, so encoding never
 * overruns it.
 */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "fwd_params.h"
#include "upstream_internal.h"

/* Writes PARAMS records into buf, tracking the open record. */
typedef struct pwriter {
    uint8_t *buf;
    size_t pos;
    size_t rec;     /* offset of the open record's header */
    size_t rec_len; /* its content so far */
} pwriter_t;

static void pw_open(pwriter_t *w)
{
    w->rec = w->pos;
    w->pos += FCGI_HEADER_LEN;
    w->rec_len = 0;
}

static void pw_close(pwriter_t *w)
{
    if (w->rec_len == 0) {
        w->pos = w->rec; /* never send an empty record mid-stream */
        return;
    }
    fcgi_header_encode(w->buf + w->rec, FCGI_PARAMS, UP_REQUEST_ID,
                       (uint16_t)w->rec_len, 0);
}

/* Copies a pair larger than one record across as many as it needs. */
static suspect_rc_t pw_huge(pwriter_t *w, const char *name, size_t nlen,
                            const char *value, size_t vlen)
{
    size_t size = fcgi_nv_size(nlen, vlen), off = 0;
    uint8_t *tmp = suspect_malloc(size);

    if (tmp == NULL) {
        return SUSPECT_E_NOMEM;
    }
    fcgi_nv_encode(tmp, name, nlen, value, vlen);
    while (off < size) {
        size_t k = FCGI_MAX_CONTENT - w->rec_len;

        if (k == 0) {
            pw_close(w);
            pw_open(w);
            continue;
        }
        k = k < size - off ? k : size - off;
        memcpy(w->buf + w->pos, tmp + off, k);
        w->pos += k;
        w->rec_len += k;
        off += k;
    }
    free(tmp);
    return SUSPECT_OK;
}

/* Appends one pair, starting a new record when it would not fit. */
static suspect_rc_t pw_pair(pwriter_t *w, const char *name, size_t nlen,
                            const char *value, size_t vlen)
{
    size_t size = fcgi_nv_size(nlen, vlen);

    if (size > FCGI_MAX_CONTENT) {
        return pw_huge(w, name, nlen, value, vlen);
    }
    if (w->rec_len + size > FCGI_MAX_CONTENT) {
        pw_close(w);
        pw_open(w);
    }
    w->pos += fcgi_nv_encode(w->buf + w->pos, name, nlen, value, vlen);
    w->rec_len += size;
    return SUSPECT_OK;
}

static bool name_is(const mw_param_t *p, const char *name, size_t len)
{
    return p->name_len == len && memcmp(p->name, name, len) == 0;
}

#define NAME_IS(p, lit) name_is((p), lit, sizeof(lit) - 1)

/* Whether variable p is sent as it is; notes REDIRECT_STATUS, and a
 * php.ini variable left out. */
static bool keep_param(const mw_param_t *p, const up_edits_t *e, bool *redirect,
                       bool *ini_dropped)
{
    if (e->plain && fwd_param_encoding(p->name, p->name_len)) {
        return false;
    }
    if (!fwd_param_allowed(p->name, p->name_len, e->pass)) {
        *ini_dropped |=
            NAME_IS(p, "PHP_VALUE") || NAME_IS(p, "PHP_ADMIN_VALUE");
        return false;
    }
    if (NAME_IS(p, "REDIRECT_STATUS")) {
        *redirect = true;
        return true;
    }
    if (e->script != NULL && NAME_IS(p, "SCRIPT_FILENAME")) {
        return false;
    }
    return e->clen_len == 0 || !NAME_IS(p, "CONTENT_LENGTH");
}

/* Bytes the prelude needs at most (headers: one per pair, one per full
 * record, BEGIN, the last and the empty PARAMS). */
static size_t prelude_bound(const mw_req_t *req, const up_edits_t *e)
{
    size_t total = fcgi_nv_size(15, e->script_len) + fcgi_nv_size(15, 3) +
                   fcgi_nv_size(14, e->clen_len);
    size_t pairs = req->nparams + 3;

    for (size_t i = 0; i < req->nparams; i++) {
        total +=
            fcgi_nv_size(req->params[i].name_len, req->params[i].value_len);
    }
    return 2 * FCGI_HEADER_LEN + total +
           FCGI_HEADER_LEN * (pairs + total / FCGI_MAX_CONTENT + 3);
}

/* Builds the prelude into c->pre; keep sets FCGI_KEEP_CONN. */
suspect_rc_t up_prelude_build(up_conn_t *c, const mw_req_t *req,
                              const up_edits_t *e, bool keep, bool *ini_dropped)
{
    size_t need = prelude_bound(req, e);
    bool redirect = false;
    suspect_rc_t rc = SUSPECT_OK;
    pwriter_t w;

    *ini_dropped = false;
    if (need > c->pre_cap) {
        uint8_t *p = suspect_realloc(c->pre, need < 4096 ? 4096 : need);

        if (p == NULL) {
            return SUSPECT_E_NOMEM;
        }
        c->pre = p;
        c->pre_cap = need < 4096 ? 4096 : need;
    }
    w.buf = c->pre;
    fcgi_header_encode(w.buf, FCGI_BEGIN_REQUEST, UP_REQUEST_ID, 8, 0);
    fcgi_begin_encode(w.buf + FCGI_HEADER_LEN, FCGI_RESPONDER,
                      keep ? FCGI_KEEP_CONN : 0);
    w.pos = 2 * FCGI_HEADER_LEN;
    pw_open(&w);
    for (size_t i = 0; i < req->nparams && rc == SUSPECT_OK; i++) {
        const mw_param_t *p = &req->params[i];

        if (keep_param(p, e, &redirect, ini_dropped)) {
            rc = pw_pair(&w, p->name, p->name_len, p->value, p->value_len);
        }
    }
    if (rc == SUSPECT_OK && e->script != NULL) {
        rc = pw_pair(&w, "SCRIPT_FILENAME", 15, e->script, e->script_len);
    }
    if (rc == SUSPECT_OK && !redirect) {
        rc = pw_pair(&w, "REDIRECT_STATUS", 15, "200", 3);
    }
    if (rc == SUSPECT_OK && e->clen_len > 0) {
        rc = pw_pair(&w, "CONTENT_LENGTH", 14, e->clen, e->clen_len);
    }
    pw_close(&w);
    fcgi_header_encode(w.buf + w.pos, FCGI_PARAMS, UP_REQUEST_ID, 0, 0);
    c->pre_len = w.pos + FCGI_HEADER_LEN;
    return rc;
}
