/*
 * guard_multipart.c - a multipart/form-data body as the guard reads it.
 *
 * PHP reads a multipart form's fields into $_POST as it reads an
 * urlencoded form's (CGI.pm and Python's cgi too), so a route that needs
 * the body reads them: the fields of the prefetched head (at most
 * form_max bytes, request/multipart.h reading them as PHP does) become
 * an urlencoded form in the call's memory, every byte of names and values
 * kept ("%", "+", "&", "=" and ";" written %XX), and the lookups of
 * lookup.c read it exactly as they read an urlencoded body: names as PHP
 * files them, a field given twice with different values ambiguous.
 *
 * What is not read is never passed uncounted:
 *  - a body the reader refuses (a shape parsers read differently, an
 *    unusable boundary) is refused, 415;
 *  - a file part named as a form parameter a route reads ("u"; its PHP
 *    forms "u[]" too) is refused, 400: PHP files it under $_FILES, but
 *    CGI.pm reads a file's name, or a file with an empty filename="", as
 *    the parameter's value, and Python its content;
 *  - a body longer than form_max: the fields of its head are read, and
 *    the rest is checked as it goes to the application (a body filter,
 *    request.h): the reader reads on, names only, holding back each part
 *    (its delimiter line included) until its headers are read, and
 *    refuses a field past the head named as a form parameter any route
 *    reads (413: the decision could not see it), a file so named (400),
 *    or a bad shape (415).  The application never gets that part; the
 *    forwarder ends the request with the status.  A field whose value
 *    crosses form_max is past the head too; when its headers lie within
 *    the head, the filter, which judges the prefetched bytes at once,
 *    refuses it before anything is decided.  So uploads pass whatever
 *    their size, as long as the fields a route reads come before the
 *    end of the head, as browsers send fields in form order.
 *
 * The filter holds a reference on the guard (its routes name the
 * parameters) until the request ends.
 */
#include "guard_internal.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "request/multipart.h"
#include "text.h"

#define WHY_FILE "multipart file named as a form parameter"
#define WHY_LATE "multipart field past formMax"

/* Whether src is a form source named raw[0..len). */
static bool source_named(const guard_source_t *src, const char *raw, size_t len)
{
    return src->kind == SUSPECT_SRC_FORM &&
           mw_param_name_is(raw, len, src->name, src->name_len);
}

/* Whether raw[0..len) names a form parameter a route of g reads: its
 * parameter condition, a when condition, an identity source. */
static bool form_named(const mw_guard_t *g, const char *raw, size_t len)
{
    for (size_t i = 0; i < g->nroutes; i++) {
        const guard_route_t *r = &g->routes[i];
        const suspect_conf_route_t *cr = r->conf;

        if (cr->param_name != NULL && (cr->param_in & SUSPECT_PARAM_FORM) &&
            mw_param_name_is(raw, len, cr->param_name, r->param_name_len)) {
            return true;
        }
        for (size_t k = 0; k < r->nwhen; k++) {
            if (source_named(&r->when[k], raw, len)) {
                return true;
            }
        }
        for (size_t j = 0; j < r->nids; j++) {
            for (size_t k = 0; k < r->ids[j].nsources; k++) {
                if (source_named(&r->ids[j].src[k], raw, len)) {
                    return true;
                }
            }
        }
    }
    return false;
}

/* ---- the head: fields as an urlencoded form -------------------------------
 */

/* The urlencoded form being written. */
typedef struct form {
    char *buf;
    size_t len, cap;
} form_t;

/* Makes room in f for n more bytes: false when out of memory. */
static bool form_room(form_t *f, size_t n)
{
    size_t cap;
    char *nb;

    if (f->cap - f->len >= n) {
        return true;
    }
    cap = f->cap * 2 > f->len + n ? f->cap * 2 : f->len + n;
    nb = suspect_realloc(f->buf, cap);
    if (nb == NULL) {
        return false;
    }
    f->buf = nb;
    f->cap = cap;
    return true;
}

/* Appends s[0..n) to f (room made), the bytes the lookups would read
 * otherwise as %XX. */
static void form_put(form_t *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c == '%' || c == '+' || c == '&' || c == '=' || c == ';') {
            f->buf[f->len++] = '%';
            f->buf[f->len++] = hex_upper[c >> 4];
            f->buf[f->len++] = hex_upper[c & 15];
        } else {
            f->buf[f->len++] = (char)c;
        }
    }
}

/* Appends "&name=value" of a field part to f: false when out of
 * memory. */
static bool form_field(form_t *f, const mw_mp_part_t *part)
{
    if (!form_room(f, 2 + 3 * (part->name_len + part->value_len))) {
        return false;
    }
    if (f->len > 0) {
        f->buf[f->len++] = '&';
    }
    form_put(f, part->name, part->name_len);
    f->buf[f->len++] = '=';
    form_put(f, part->value, part->value_len);
    return true;
}

/* Refuses the body: the call answers status, why. */
static suspect_rc_t refuse(guard_call_t *c, int status, const char *why)
{
    c->refuse_status = status;
    c->refuse_why = why;
    return SUSPECT_E_PARSE;
}

/*
 * Reads the fields of head[0..len) (the whole body when complete) into
 * f.  *done_to gets where the parts still to come start.  SUSPECT_OK,
 * SUSPECT_E_PARSE (refused: c says why), SUSPECT_E_NOMEM.
 */
static suspect_rc_t read_head(guard_call_t *c, const char *boundary,
                              size_t blen, const char *head, size_t len,
                              bool complete, form_t *f,
                              unsigned long long *done_to)
{
    size_t from = 0;
    mw_mp_t p;

    mw_mp_init(&p, boundary, blen, true);
    for (;;) {
        mw_mp_part_t part;
        size_t used = 0;
        mw_mp_ev_t ev =
            mw_mp_next(&p, head + from, len - from, complete, &used, &part);

        from += used;
        switch (ev) {
        case MW_MP_FIELD:
            if (!form_field(f, &part)) {
                return SUSPECT_E_NOMEM;
            }
            break;
        case MW_MP_FILE:
            if (part.name != NULL &&
                form_named(c->g, part.name, part.name_len)) {
                return refuse(c, 400, WHY_FILE);
            }
            break;
        case MW_MP_REFUSE:
            return refuse(c, 415, mw_mp_why(&p));
        default: /* MORE, END */
            *done_to = mw_mp_done_to(&p);
            return SUSPECT_OK;
        }
    }
}

/* ---- the rest: checked on its way ------------------------------------------
 */

typedef struct tail {
    mw_mp_t p;               /* names only */
    unsigned long long late; /* parts from here on are past the head */
    mw_guard_t *g;           /* referenced */
} tail_t;

static int tail_scan(void *arg, const char *buf, size_t len, bool at_end,
                     size_t *pass, const char **why)
{
    tail_t *t = arg;
    size_t from = 0;

    for (;;) {
        mw_mp_part_t part;
        size_t used = 0;
        mw_mp_ev_t ev =
            mw_mp_next(&t->p, buf + from, len - from, at_end, &used, &part);
        bool named = (ev == MW_MP_FIELD || ev == MW_MP_FILE) &&
                     part.name != NULL &&
                     form_named(t->g, part.name, part.name_len);

        if (named && ev == MW_MP_FILE) {
            *why = WHY_FILE;
            return 400;
        }
        if (named && part.start >= t->late) {
            *why = WHY_LATE;
            return 413;
        }
        if (ev == MW_MP_REFUSE) {
            *why = mw_mp_why(&t->p);
            return 415;
        }
        from += used;
        if (ev == MW_MP_MORE || ev == MW_MP_END) {
            *pass = from;
            return 0;
        }
    }
}

static void tail_free(void *arg)
{
    tail_t *t = arg;

    mw_guard_unref(t->g);
    free(t);
}

/* Puts the check of the rest on the request: SUSPECT_OK, or refused. */
static suspect_rc_t check_tail(guard_call_t *c, const char *boundary,
                               size_t blen, unsigned long long late)
{
    tail_t *t = suspect_malloc(sizeof(*t));
    mw_body_filter_t f;
    const char *why = NULL;
    int st;

    if (t == NULL) {
        return SUSPECT_E_NOMEM;
    }
    mw_mp_init(&t->p, boundary, blen, false);
    t->late = late;
    t->g = mw_guard_ref((mw_guard_t *)c->g);
    f.scan = tail_scan;
    f.free = tail_free;
    f.arg = t;
    st = mw_req_filter(c->req, &f, &why);
    if (st == 500) {
        return SUSPECT_E_NOMEM; /* the filter itself never says 500 */
    }
    return st == 0 ? SUSPECT_OK : refuse(c, st, why);
}

/* Reads the call's multipart body: see guard_internal.h. */
suspect_rc_t guard_multipart_read(guard_call_t *c, const char *type,
                                  size_t type_len, char **form,
                                  size_t *form_len)
{
    char boundary[MW_MP_BOUNDARY_MAX];
    size_t blen = 0, len = 0;
    const char *why = NULL, *head = NULL;
    unsigned long long done_to = 0;
    bool complete = false;
    form_t f = {NULL, 0, 0};
    suspect_rc_t rc;

    if (mw_mp_boundary(type, type_len, boundary, &blen, &why) != SUSPECT_OK) {
        return refuse(c, 415, why);
    }
    rc = mw_req_prefetch(c->req, c->g->form_max, &head, &len, &complete);
    if (rc == SUSPECT_OK) {
        rc = read_head(c, boundary, blen, head, len, complete, &f, &done_to);
    }
    if (rc == SUSPECT_OK && !complete) {
        rc = check_tail(c, boundary, blen, done_to);
    }
    if (rc != SUSPECT_OK) {
        free(f.buf);
        f.buf = NULL;
        f.len = 0;
    }
    *form = f.buf;
    *form_len = f.len;
    return rc;
}
