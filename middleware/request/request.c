/*
 * request.c - the front-end independent part of a request: variable lookup
 * and the prefetch buffer that lets form parameters be read before the
 * decision while the app still receives the body untouched.
 */
#include "request.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

/* Front ends hand over each name once (the FastCGI server merges repeated
 * names as it decodes PARAMS, see fcgi_params.c; a CGI environment comes
 * from a web server that joins repeated headers), so the first match is
 * the only one and what the app reads too. */
const mw_param_t *mw_req_param_find(const mw_req_t *req, const char *name,
                                    size_t name_len)
{
    for (size_t i = 0; i < req->nparams; i++) {
        const mw_param_t *p = &req->params[i];

        if (p->name_len == name_len && memcmp(p->name, name, name_len) == 0) {
            return p;
        }
    }
    return NULL;
}

const char *mw_req_param_n(const mw_req_t *req, const char *name,
                           size_t name_len, size_t *len)
{
    const mw_param_t *p = mw_req_param_find(req, name, name_len);

    if (p != NULL && len != NULL) {
        *len = p->value_len;
    }
    return p != NULL ? p->value : NULL;
}

const char *mw_req_param(const mw_req_t *req, const char *name, size_t *len)
{
    return mw_req_param_n(req, name, strlen(name), len);
}

/* CONTENT_LENGTH as a number: see request.h. */
long long mw_req_content_length(const mw_req_t *req)
{
    size_t len;
    const char *v = mw_req_param(req, "CONTENT_LENGTH", &len);
    long long n = 0;

    if (v == NULL || len == 0 || len > 18) {
        return -1;
    }
    for (size_t i = 0; i < len; i++) {
        if (v[i] < '0' || v[i] > '9') {
            return -1;
        }
        n = n * 10 + (v[i] - '0');
    }
    return n;
}

suspect_rc_t mw_req_prefetch(mw_req_t *req, size_t max, const char **body,
                             size_t *len, bool *complete)
{
    long long clen = mw_req_content_length(req);
    size_t want = max;

    /* Clamped on every call, not only the first: a body longer than
     * CONTENT_LENGTH may leave the spare byte below in the buffer, and a
     * later call must not return it (the caller would see another body). */
    if (clen >= 0 && (unsigned long long)clen < want) {
        want = (size_t)clen;
    }
    if (req->pre == NULL) {
        /* One spare byte tells "exactly max" from "more than max". */
        req->pre = suspect_malloc(want + 1);
        if (req->pre == NULL) {
            return SUSPECT_E_NOMEM;
        }
        req->pre_len = 0;
        req->pre_off = 0;
        while (req->pre_len < want + 1 && !req->body_done) {
            ssize_t n = req->ops->read(req, req->pre + req->pre_len,
                                       want + 1 - req->pre_len, true);
            if (n < 0) {
                return SUSPECT_E_IO;
            }
            if (n == 0) {
                req->body_done = true;
            }
            req->pre_len += (size_t)n;
            if (clen >= 0 && req->pre_len >= (size_t)clen &&
                (size_t)clen <= want) {
                break;
            }
        }
    }
    *body = req->pre;
    *len = req->pre_len > want ? want : req->pre_len;
    *complete = req->body_done ||
                (clen >= 0 && req->pre_len >= (unsigned long long)clen);
    return SUSPECT_OK;
}

ssize_t mw_req_read(mw_req_t *req, void *buf, size_t n, bool wait)
{
    ssize_t r;

    if (req->pre != NULL && req->pre_off < req->pre_len) {
        size_t left = req->pre_len - req->pre_off;
        size_t k = n < left ? n : left;

        memcpy(buf, req->pre + req->pre_off, k);
        req->pre_off += k;
        return (ssize_t)k;
    }
    if (req->body_done) {
        return 0;
    }
    r = req->ops->read(req, buf, n, wait);
    if (r == 0) {
        req->body_done = true;
    }
    return r;
}

int mw_req_read_fd(mw_req_t *req)
{
    if ((req->pre != NULL && req->pre_off < req->pre_len) || req->body_done) {
        return -1;
    }
    return req->ops->read_fd(req);
}

int mw_req_write(mw_req_t *req, const void *buf, size_t n)
{
    if (req->watch != NULL) {
        req->watch(req->watch_arg, buf, n);
    }
    if (req->prelude != NULL && !req->output_started && n > 0) {
        int rc = req->ops->write(req, req->prelude, req->prelude_len);

        req->output_started = true;
        if (rc != 0) {
            return rc;
        }
    }
    req->output_started = true;
    return req->ops->write(req, buf, n);
}

int mw_req_flush(mw_req_t *req)
{
    return req->ops->flush(req);
}

void mw_req_release(mw_req_t *req)
{
    free(req->pre);
    req->pre = NULL;
    req->pre_len = 0;
    req->pre_off = 0;
}
