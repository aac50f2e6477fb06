/*
 * request.c - the part independent of the request I/O of a request: variable
 * lookup and the prefetch buffer that lets form parameters be read before the
 * decision while the app still receives the body untouched, and the body
 * filter that checks the rest on its way to the app.
 *
 * Filter: the prefetched bytes it passed at once are returned from the
 * prefetch buffer; the rest goes through a window, [ret, ok) passed and
 * not yet returned, [ok, len) read but not judged yet (the prefetched
 * bytes it held back are copied there first).  A read returns passed
 * bytes when there are any; else it reads more of the body into the
 * window (waiting or not, as asked) and has the filter judge it.  So the
 * application never gets a byte the filter has not passed, and holding
 * back costs the window (FILTER_WINDOW, plus what was held back of the
 * prefetched bytes), whatever the body's size.
 */
#include "request.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

/* Bytes read ahead of the application for the filter to judge. */
#define FILTER_WINDOW (64u << 10)

struct mw_req_filter {
    mw_body_filter_t f;
    size_t pre_ok; /* prefetched bytes it passed at once */
    char *win;
    size_t cap, ret, ok, len;
    unsigned long long given; /* body bytes it was given, in all */
    bool ended;               /* the body's end was read */
    bool judged_end;          /* ... and told the filter */
};

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

/* Whether the body ends after `given` bytes. */
static bool body_ends(const mw_req_t *req, unsigned long long given)
{
    long long clen = mw_req_content_length(req);

    return req->body_done || (clen >= 0 && given >= (unsigned long long)clen);
}

/* Has the filter judge the window's unjudged bytes: 0 or -EMSGSIZE. */
static int filter_judge(mw_req_t *req)
{
    mw_req_filter_t *f = req->filter;
    size_t pass = 0;
    const char *why = NULL;
    int st = f->f.scan(f->f.arg, f->win + f->ok, f->len - f->ok, f->ended,
                       &pass, &why);

    if (st != 0) {
        req->refused = st;
        req->refused_why = why;
        return -EMSGSIZE;
    }
    f->ok = f->ended || pass > f->len - f->ok ? f->len : f->ok + pass;
    f->judged_end = f->ended;
    return 0;
}

/* Reads more of the body into the window: 0, -EAGAIN, -EMSGSIZE (the
 * filter holds back a whole window) or -errno. */
static int filter_pull(mw_req_t *req, bool wait)
{
    mw_req_filter_t *f = req->filter;
    long long clen = mw_req_content_length(req);
    size_t want;
    ssize_t r;

    if (f->ret > 0) {
        memmove(f->win, f->win + f->ret, f->len - f->ret);
        f->ok -= f->ret;
        f->len -= f->ret;
        f->ret = 0;
    }
    want = f->cap - f->len;
    if (want == 0) {
        req->refused = 413;
        req->refused_why = "body check held back too much";
        return -EMSGSIZE;
    }
    if (clen >= 0 && (unsigned long long)clen - f->given < want) {
        want = (size_t)((unsigned long long)clen - f->given);
    }
    r = want > 0 ? req->ops->read(req, f->win + f->len, want, wait) : 0;
    if (r < 0) {
        return (int)r;
    }
    if (r == 0) {
        req->body_done = true;
    }
    f->len += (size_t)r;
    f->given += (unsigned long long)r;
    f->ended = body_ends(req, f->given);
    return 0;
}

int mw_req_filter(mw_req_t *req, const mw_body_filter_t *filter,
                  const char **why)
{
    mw_req_filter_t *f = suspect_calloc(1, sizeof(*f));
    size_t held = 0, pass = 0;
    int st;

    *why = NULL;
    if (f == NULL || req->filter != NULL) {
        *why = f == NULL ? "out of memory" : "a second body filter";
        free(f);
        filter->free(filter->arg);
        return 500;
    }
    f->f = *filter;
    f->given = req->pre_len;
    f->ended = body_ends(req, f->given);
    req->filter = f;
    st = filter->scan(filter->arg, req->pre != NULL ? req->pre : "",
                      req->pre_len, f->ended, &pass, why);
    if (st == 0) {
        f->pre_ok = f->ended || pass > req->pre_len ? req->pre_len : pass;
        f->judged_end = f->ended;
        held = req->pre_len - f->pre_ok;
        f->cap = FILTER_WINDOW + held;
        f->win = suspect_malloc(f->cap);
        st = f->win == NULL ? 500 : 0;
        *why = f->win == NULL ? "out of memory" : NULL;
    }
    if (st != 0) {
        req->refused = st;
        req->refused_why = *why;
        return st;
    }
    if (held > 0) {
        memcpy(f->win, req->pre + f->pre_ok, held);
    }
    f->len = held;
    return 0;
}

/* mw_req_read() through the filter. */
static ssize_t filter_read(mw_req_t *req, void *buf, size_t n, bool wait)
{
    mw_req_filter_t *f = req->filter;

    for (;;) {
        size_t k;
        int r;

        if (req->pre_off < f->pre_ok) {
            k = f->pre_ok - req->pre_off < n ? f->pre_ok - req->pre_off : n;
            memcpy(buf, req->pre + req->pre_off, k);
            req->pre_off += k;
            return (ssize_t)k;
        }
        if (f->ok > f->ret) {
            k = f->ok - f->ret < n ? f->ok - f->ret : n;
            memcpy(buf, f->win + f->ret, k);
            f->ret += k;
            return (ssize_t)k;
        }
        if (req->refused != 0) {
            return -EMSGSIZE;
        }
        if (f->ended && f->judged_end) {
            /* All passed and returned: what the request I/O still says. */
            return req->body_done ? 0 : req->ops->read(req, buf, n, wait);
        }
        r = f->ended ? 0 : filter_pull(req, wait);
        if (r == 0) {
            r = filter_judge(req);
        }
        if (r < 0) {
            return r;
        }
    }
}

ssize_t mw_req_read(mw_req_t *req, void *buf, size_t n, bool wait)
{
    ssize_t r;

    if (req->filter != NULL) {
        r = filter_read(req, buf, n, wait);
        if (r == 0) {
            req->body_done = true;
        }
        return r;
    }

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
    const mw_req_filter_t *f = req->filter;

    if (f != NULL) {
        /* Something to return or judge without reading: a read succeeds
         * (or fails) at once. */
        if (req->pre_off < f->pre_ok || f->ok > f->ret || req->refused != 0 ||
            (f->ended && !f->judged_end)) {
            return -1;
        }
    } else if (req->pre != NULL && req->pre_off < req->pre_len) {
        return -1;
    }
    return req->body_done ? -1 : req->ops->read_fd(req);
}

/* Writes to the client, the prelude first. */
static int write_out(mw_req_t *req, const void *buf, size_t n)
{
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

struct mw_hold {
    mw_hold_fn fn;
    void *arg;
    int state; /* of the header scan: 0 line start, 1 CR, 2 in a line */
    size_t len, cap;
    char *buf;
};

/* Lets the held bytes go, after the lines fn writes when ask. */
static int hold_release(mw_req_t *req, bool ask)
{
    struct mw_hold *h = req->hold;
    char lines[1024];
    size_t n = ask ? h->fn(h->arg, lines, sizeof(lines)) : 0;
    int rc = 0;

    req->hold = NULL;
    if (n > 0) {
        rc = write_out(req, lines, n);
    }
    if (rc == 0 && h->len > 0) {
        rc = write_out(req, h->buf, h->len);
    }
    free(h->buf);
    free(h);
    return rc;
}

/* Adds buf[0..n) to what is held; lets it go once the block ended. */
static int hold_write(mw_req_t *req, const char *buf, size_t n)
{
    struct mw_hold *h = req->hold;
    bool ended = false;

    if (h->len + n > h->cap) {
        size_t cap = h->len + n + 1024;
        char *p = realloc(h->buf, cap);

        if (p == NULL) {
            return -ENOMEM;
        }
        h->buf = p;
        h->cap = cap;
    }
    for (size_t i = 0; i < n && !ended; i++) {
        char c = buf[i];

        ended = c == '\n' && h->state != 2;
        h->state = c == '\n' ? 0 : c == '\r' && h->state == 0 ? 1 : 2;
    }
    memcpy(h->buf + h->len, buf, n);
    h->len += n;
    if (ended || h->len > MW_HOLD_MAX) {
        return hold_release(req, ended);
    }
    return 0;
}

int mw_req_write(mw_req_t *req, const void *buf, size_t n)
{
    if (req->watch != NULL) {
        req->watch(req->watch_arg, buf, n);
    }
    if (req->hold != NULL) {
        return hold_write(req, buf, n);
    }
    return write_out(req, buf, n);
}

bool mw_req_hold(mw_req_t *req, mw_hold_fn fn, void *arg)
{
    struct mw_hold *h = suspect_calloc(1, sizeof(*h));

    if (h == NULL) {
        return false;
    }
    h->fn = fn;
    h->arg = arg;
    req->hold = h;
    return true;
}

int mw_req_hold_end(mw_req_t *req, bool flush)
{
    struct mw_hold *h = req->hold;

    if (h == NULL) {
        return 0;
    }
    if (flush) {
        return hold_release(req, false);
    }
    req->hold = NULL;
    free(h->buf);
    free(h);
    return 0;
}

int mw_req_flush(mw_req_t *req)
{
    return req->ops->flush(req);
}

void mw_req_release(mw_req_t *req)
{
    (void)mw_req_hold_end(req, false);
    if (req->filter != NULL) {
        req->filter->f.free(req->filter->f.arg);
        free(req->filter->win);
        free(req->filter);
        req->filter = NULL;
    }
    req->refused = 0;
    req->refused_why = NULL;
    free(req->pre);
    req->pre = NULL;
    req->pre_len = 0;
    req->pre_off = 0;
}
