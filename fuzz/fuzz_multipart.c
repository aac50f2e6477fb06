/*
 * fuzz_multipart.c - libFuzzer target for the multipart/form-data reader
 * (middleware/request/multipart.c, multipart_head.c) and the body filter
 * of middleware/request/request.c that checks a body on its way.
 *
 * Input: one byte choosing the piece size, a CONTENT_TYPE line (up to
 * '\n'), then the body.  When the type gives no boundary, "b" is used,
 * so every body is read.  Checks:
 *   - the reader with values, the whole body at once, is the reference:
 *     its events (names, values, files, the end or a refusal);
 *   - fed in pieces of the chosen size, keeping what it did not consume,
 *     it gives the same events; without values too (fields by name; a
 *     field whose content is refused may be named before the refusal);
 *   - it never consumes more than it was given, never asks for more at
 *     the end, and its pointers lie in the bytes it was given;
 *   - through a request with a filter that refuses a field named "u"
 *     (as the guard's refuses a counted field past formMax), read in the
 *     piece size: the application gets the body byte for byte when the
 *     reference neither refuses nor holds a "u", else a prefix of it
 *     without the "u" part's delimiter, and the refusal.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers/fakereq.h"
#include "request/multipart.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_multipart: check failed: %s\n", #cond);      \
            abort();                                                           \
        }                                                                      \
    } while (0)

#define EVENTS_MAX 64

/* One event, as compared across readings. */
typedef struct event {
    mw_mp_ev_t ev;
    const char *name; /* in the body (whole readings only) */
    size_t name_len;
    size_t value_len;
    unsigned long long start;
    unsigned long long name_at; /* body offset of the name */
} event_t;

typedef struct reading {
    size_t n;
    event_t e[EVENTS_MAX];
} reading_t;

/* Reads body[0..len) handing at most piece new bytes per call (0: all);
 * the events into r. */
static void read_body(const char *boundary, size_t blen, const char *body,
                      size_t len, size_t piece, bool values, reading_t *r)
{
    mw_mp_t p;
    size_t from = 0, have = piece == 0 ? len : 0;

    r->n = 0;
    mw_mp_init(&p, boundary, blen, values);
    while (r->n < EVENTS_MAX) {
        mw_mp_part_t part;
        size_t used = 0;
        bool at_end = have == len;
        mw_mp_ev_t ev =
            mw_mp_next(&p, body + from, have - from, at_end, &used, &part);

        CHECK(used <= have - from);
        if (ev == MW_MP_MORE) {
            CHECK(!at_end);
            from += used;
            have = have + piece < len ? have + piece : len;
            continue;
        }
        if (ev == MW_MP_FIELD || ev == MW_MP_FILE) {
            event_t *e = &r->e[r->n];

            CHECK(part.name == NULL ||
                  (part.name >= body + from &&
                   part.name + part.name_len <= body + have));
            CHECK(ev != MW_MP_FIELD || part.name != NULL);
            CHECK(!values || ev != MW_MP_FIELD ||
                  (part.value >= body + from &&
                   part.value + part.value_len <= body + have));
            CHECK(part.start < (unsigned long long)have);
            e->name = part.name;
            e->name_len = part.name_len;
            e->name_at = part.name != NULL ? (size_t)(part.name - body) : 0;
            e->value_len = values && ev == MW_MP_FIELD ? part.value_len : 0;
            e->start = part.start;
        }
        CHECK(ev != MW_MP_REFUSE || mw_mp_why(&p) != NULL);
        r->e[r->n++].ev = ev;
        from += used;
        if (ev == MW_MP_END || ev == MW_MP_REFUSE) {
            return;
        }
    }
}

static bool same_event(const event_t *a, const event_t *b, bool values)
{
    return a->ev == b->ev &&
           (a->ev != MW_MP_FIELD && a->ev != MW_MP_FILE
                ? true
                : a->start == b->start && a->name_len == b->name_len &&
                      a->name_at == b->name_at &&
                      (!values || a->value_len == b->value_len));
}

/* Whether names-mode r matches the reference ref (see the file
 * comment). */
static bool same_names(const reading_t *r, const reading_t *ref)
{
    size_t i = 0, j = 0;

    for (; i < r->n && j < ref->n; i++, j++) {
        if (!same_event(&r->e[i], &ref->e[j], false)) {
            break;
        }
    }
    if (i == r->n && j == ref->n) {
        return true;
    }
    /* A field named, then its content refused. */
    return ref->n > 0 && ref->e[ref->n - 1].ev == MW_MP_REFUSE &&
           j == ref->n - 1 && r->n > 0 && r->e[r->n - 1].ev == MW_MP_REFUSE &&
           i + 2 == r->n && r->e[i].ev == MW_MP_FIELD;
}

/* ---- the filter ------------------------------------------------------- */

typedef struct tail {
    mw_mp_t p;
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

        if ((ev == MW_MP_FIELD || ev == MW_MP_FILE) && part.name_len == 1 &&
            part.name[0] == 'u') {
            *why = "u";
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
    free(arg);
}

/* The body through a request with the filter, prefetching head bytes. */
static void through_filter(const char *boundary, size_t blen, const char *body,
                           size_t len, size_t piece, const reading_t *ref)
{
    static char clen[32];
    const char *vars[] = {clen, NULL};
    const char *pre = NULL, *why = NULL;
    size_t pre_len = 0, n = 0, u_start = len;
    bool complete = false, refused = false;
    char *got = malloc(len + 1);
    tail_t *t = malloc(sizeof(*t));
    mw_body_filter_t f;
    fakereq_t r;
    int st;

    CHECK(got != NULL && t != NULL);
    for (size_t i = 0; i < ref->n; i++) {
        const event_t *e = &ref->e[i];

        if ((e->ev == MW_MP_FIELD || e->ev == MW_MP_FILE) && e->name_len == 1 &&
            body[e->name_at] == 'u') {
            u_start = (size_t)e->start;
            refused = true;
            break;
        }
        refused |= e->ev == MW_MP_REFUSE;
    }
    snprintf(clen, sizeof(clen), "CONTENT_LENGTH=%zu", len);
    fakereq_init(&r, vars, body, len);
    r.chunk = piece;
    CHECK(mw_req_prefetch(&r.req, piece * 3 + 1, &pre, &pre_len, &complete) ==
          SUSPECT_OK);
    mw_mp_init(&t->p, boundary, blen, false);
    f.scan = tail_scan;
    f.free = tail_free;
    f.arg = t;
    st = mw_req_filter(&r.req, &f, &why);
    for (;;) {
        ssize_t k =
            st == 0 ? mw_req_read(&r.req, got + n, piece + 1, true) : -1;

        if (k <= 0) {
            CHECK(k == 0 || r.req.refused != 0);
            break;
        }
        n += (size_t)k;
        CHECK(n <= len);
    }
    CHECK(memcmp(got, body, n) == 0);
    CHECK(refused == (r.req.refused != 0));
    CHECK(refused || n == len);
    CHECK(n <= u_start);
    fakereq_free(&r);
    free(got);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;
    const char *nl;
    char boundary[MW_MP_BOUNDARY_MAX];
    size_t blen = 0, piece, len;
    const char *body, *why = NULL;
    reading_t whole, r;

    if (size < 2) {
        return 0;
    }
    piece = (size_t)(data[0] % 23) + 1;
    nl = memchr(p + 1, '\n', size - 1);
    if (nl == NULL) {
        return 0;
    }
    if (mw_mp_boundary(p + 1, (size_t)(nl - p - 1), boundary, &blen, &why) !=
        SUSPECT_OK) {
        CHECK(why != NULL);
        boundary[0] = 'b';
        blen = 1;
    }
    body = nl + 1;
    len = size - (size_t)(body - p);
    read_body(boundary, blen, body, len, 0, true, &whole);
    read_body(boundary, blen, body, len, piece, true, &r);
    CHECK(r.n == whole.n);
    for (size_t i = 0; i < r.n; i++) {
        CHECK(same_event(&r.e[i], &whole.e[i], true));
    }
    read_body(boundary, blen, body, len, piece, false, &r);
    CHECK(same_names(&r, &whole));
    if (whole.n < EVENTS_MAX) {
        through_filter(boundary, blen, body, len, piece, &whole);
    }
    return 0;
}
