/*
 * identity.c - the values of a route's identities, for one request.
 *
 * Each source is read through the call's state (guard_call.c): header and
 * env values are the request's own variables (no copy); cookie, query and
 * form values are found by the lookups of lookup.c and copied (and
 * decoded) into the call's arena; the user of an Authorization header is
 * decoded there (authz.c); the client address is the call's.
 *
 * A query or form parameter given more than once with different values
 * is refused (SUSPECT_E_INVAL, a 400): the first is what is found here,
 * but PHP reads the last, so "member=A&member=B" would count A while the
 * app acts for B, and a client could vary one copy to dodge the count.
 * The same value repeated is harmless and accepted.  Parameters are split
 * on '&' (PHP, Python) and on '&' and ';' (Perl's CGI.pm): the value is
 * counted under both splits ("member=victim;x=1" is "victim;x=1" and
 * "victim"; "x=1;member=victim" is found by the second alone), and a
 * parameter repeated with different values under either is refused.  A
 * cookie is read as mw_cookie_find() reads it and as CGI::Cookie does
 * (pairs split on ',' too, the first of '&'-separated values, '+' a
 * space: lookup.h), each value counted.  A query string, form body or
 * Cookie header holding a "%uXXXX" escape, which only CGI.pm decodes, is
 * refused when a source reads it (SUSPECT_E_PARSE, a 400: guard_call.c).
 *
 * A header: source whose header came more than once is refused the same
 * way in the two deciding modes: the web server passes the app the
 * copies as they came (nginx 1.22 as separate variables, of which PHP
 * keeps the last), while the value here is the copies joined, so a
 * client could put its victim last and vary the first.  In forward mode
 * the app gets the joined value that was counted, so it is accepted.  A
 * request I/O that leaves the copies apart (the in-process guard: the app
 * reads the web server's variables itself, either copy) refuses any
 * source read from a repeated variable: header, env, cookie or
 * Authorization.
 *
 * Readings.  A value is counted as the application reads it: through the
 * identity's normaliser (normalize="..." in suspect.xml), else without
 * the bytes PHP's trim() drops at its ends.  A value the normaliser
 * refuses (a spelling it cannot be sure to read as the application does)
 * refuses the request: 400, "identity refused by its normalize".  Where
 * applications differ, the value is counted under each reading, every one a key
 * of the same type: a value holding a NUL is read whole (PHP, Perl and Python
 * keep the NUL: "%00alice" is a 6-byte $_POST value that trim() makes "alice")
 * and cut at the NUL (what a C program or an environment variable sees);
 * a part read from several sources ("form:u|query:u", PHP's $_REQUEST)
 * takes the value of each that is present.  A reading never makes a value
 * missing: when the reading leaves nothing of a non-empty value, the
 * value is counted as it came; only an absent or empty value is missing.
 * Readings that come out the same are one.  A composite identity has one
 * value per combination of its parts' readings; more than the decision
 * takes (SUSPECT_MAX_IDENTITIES keys in all) is refused (SUSPECT_E_RANGE,
 * a 400), never cut short.
 */
#include "guard_internal.h"

#include <string.h>

#include "request/authz.h"

/* The values of one source, one per reading its parsers give it. */
#define SOURCE_VALUES 2

typedef struct source_vals {
    size_t n;
    const char *v[SOURCE_VALUES];
    size_t len[SOURCE_VALUES];
} source_vals_t;

/* Runs fn over s into out: SUSPECT_OK (a value added, or none found),
 * SUSPECT_E_NOMEM. */
static suspect_rc_t find_into(guard_call_t *c, guard_find_fn fn, const char *s,
                              size_t s_len, const guard_source_t *src,
                              source_vals_t *out)
{
    const char *val = NULL;
    size_t len = 0;
    suspect_rc_t rc =
        guard_call_find(c, fn, s, s_len, src->name, src->name_len, &val, &len);

    if (rc == SUSPECT_OK) {
        out->v[out->n] = val;
        out->len[out->n++] = len;
    }
    return rc == SUSPECT_E_NOTFOUND ? SUSPECT_OK : rc;
}

/* A query or form parameter of s, split on '&' and on '&' and ';' (see
 * the file comment): SUSPECT_OK, SUSPECT_E_NOTFOUND, SUSPECT_E_INVAL when
 * it is ambiguous either way, SUSPECT_E_NOMEM. */
static suspect_rc_t param_value(guard_call_t *c, const char *s, size_t s_len,
                                const guard_source_t *src, source_vals_t *out)
{
    /* Without a ';' the two splits are one: read once. */
    bool semi = s != NULL && memchr(s, ';', s_len) != NULL;
    suspect_rc_t rc;

    if (mw_param_ambiguous(s, s_len, 0, src->name, src->name_len) ||
        (semi && mw_param_ambiguous(s, s_len, MW_PARAM_SEMICOLON, src->name,
                                    src->name_len))) {
        return SUSPECT_E_INVAL;
    }
    rc = find_into(c, mw_query_find, s, s_len, src, out);
    if (rc == SUSPECT_OK && semi) {
        rc = find_into(c, mw_param_find_semicolon, s, s_len, src, out);
    }
    if (rc != SUSPECT_OK) {
        return rc;
    }
    return out->n > 0 ? SUSPECT_OK : SUSPECT_E_NOTFOUND;
}

/* A header or env variable: SUSPECT_OK, SUSPECT_E_NOTFOUND, or
 * SUSPECT_E_INVAL for a repeated header the app reads apart (see the file
 * comment). */
static suspect_rc_t variable_value(guard_call_t *c, const guard_source_t *s,
                                   source_vals_t *out)
{
    const mw_param_t *p = mw_req_param_find(c->req, s->name, s->name_len);

    if (p == NULL) {
        return SUSPECT_E_NOTFOUND;
    }
    if (p->repeated &&
        ((s->kind == SUSPECT_SRC_HEADER && guard_call_app_elsewhere(c)) ||
         c->req->copies_apart)) {
        return SUSPECT_E_INVAL;
    }
    out->v[0] = p->value;
    out->len[0] = p->value_len;
    out->n = 1;
    return SUSPECT_OK;
}

/* A cookie, as mw_cookie_find() and as CGI::Cookie (mw_cookie_find_cgi())
 * read it: SUSPECT_OK, SUSPECT_E_NOTFOUND, SUSPECT_E_INVAL when parsers
 * would read different cookies under its name, SUSPECT_E_PARSE (a
 * "%uXXXX" escape), SUSPECT_E_NOMEM. */
static suspect_rc_t cookie_value(guard_call_t *c, const guard_source_t *s,
                                 source_vals_t *out)
{
    size_t hdr_len = 0;
    const char *hdr = NULL;
    const mw_param_t *p;
    suspect_rc_t rc = guard_call_cookie(c, &hdr, &hdr_len);

    if (rc != SUSPECT_OK) {
        return rc;
    }
    if (c->req->copies_apart &&
        (p = mw_req_param_find(c->req, "HTTP_COOKIE", 11)) != NULL &&
        p->repeated) {
        return SUSPECT_E_INVAL;
    }
    if (mw_cookie_ambiguous(hdr, hdr_len, s->name, s->name_len)) {
        return SUSPECT_E_INVAL;
    }
    rc = find_into(c, mw_cookie_find, hdr, hdr_len, s, out);
    if (rc == SUSPECT_OK) {
        rc = find_into(c, mw_cookie_find_cgi, hdr, hdr_len, s, out);
    }
    if (rc != SUSPECT_OK) {
        return rc;
    }
    return out->n > 0 ? SUSPECT_OK : SUSPECT_E_NOTFOUND;
}

/* The user of the Authorization header: SUSPECT_OK, SUSPECT_E_NOTFOUND,
 * SUSPECT_E_INVAL for a repeated header the app reads apart,
 * SUSPECT_E_NOMEM. */
static suspect_rc_t auth_value(guard_call_t *c, const guard_source_t *s,
                               source_vals_t *out)
{
    const mw_param_t *p = mw_req_param_find(c->req, "HTTP_AUTHORIZATION", 18);
    char *buf;

    if (p == NULL) {
        return SUSPECT_E_NOTFOUND;
    }
    if (p->repeated && guard_call_copies_apart(c)) {
        return SUSPECT_E_INVAL;
    }
    buf = guard_call_alloc(c, p->value_len);
    if (buf == NULL) {
        return SUSPECT_E_NOMEM;
    }
    out->v[0] = buf;
    if (mw_authz_user(p->value, p->value_len, s->name_len == 3, buf,
                      p->value_len, &out->len[0]) != SUSPECT_OK) {
        return SUSPECT_E_NOTFOUND;
    }
    out->n = 1;
    return SUSPECT_OK;
}

/* The values of one source: SUSPECT_OK, SUSPECT_E_NOTFOUND,
 * SUSPECT_E_INVAL (an ambiguous parameter), SUSPECT_E_PARSE or
 * SUSPECT_E_FULL (a source refused: c->refuse_status), or an error. */
static suspect_rc_t source_values(guard_call_t *c, const guard_source_t *s,
                                  source_vals_t *out)
{
    const char *str = NULL;
    size_t len = 0;
    suspect_rc_t rc;

    out->n = 0;
    switch (s->kind) {
    case SUSPECT_SRC_HEADER:
    case SUSPECT_SRC_ENV:
        return variable_value(c, s, out);
    case SUSPECT_SRC_COOKIE:
        return cookie_value(c, s, out);
    case SUSPECT_SRC_QUERY:
        rc = guard_call_query(c, &str, &len);
        return rc == SUSPECT_OK ? param_value(c, str, len, s, out) : rc;
    case SUSPECT_SRC_FORM:
        rc = guard_call_body(c, &str, &len);
        return rc == SUSPECT_OK ? param_value(c, str, len, s, out) : rc;
    case SUSPECT_SRC_CLIENT_IP:
        rc = guard_call_client_ip(c, &out->v[0], &out->len[0]);
        out->n = rc == SUSPECT_OK ? 1 : 0;
        return rc;
    case SUSPECT_SRC_AUTH_USER:
        return auth_value(c, s, out);
    }
    return SUSPECT_E_NOTFOUND;
}

/* The readings of one part. */
typedef struct readings {
    size_t n;
    const char *v[GUARD_MAX_READINGS];
    size_t len[GUARD_MAX_READINGS];
} readings_t;

/* Adds v to r unless it is there: SUSPECT_OK or SUSPECT_E_RANGE. */
static suspect_rc_t readings_add(readings_t *r, const char *v, size_t len)
{
    for (size_t i = 0; i < r->n; i++) {
        if (r->len[i] == len && memcmp(r->v[i], v, len) == 0) {
            return SUSPECT_OK;
        }
    }
    if (r->n == GUARD_MAX_READINGS) {
        return SUSPECT_E_RANGE;
    }
    r->v[r->n] = v;
    r->len[r->n++] = len;
    return SUSPECT_OK;
}

/* Adds val[0..len) (not empty) to r as gi reads it: see the file
 * comment. */
static suspect_rc_t read_into(guard_call_t *c, const guard_identity_t *gi,
                              const char *val, size_t len, readings_t *r)
{
    const char *out = val;
    size_t out_len = len;

    if (gi->norm == NULL) {
        mw_norm_trim_default(&out, &out_len);
    } else {
        size_t size = len + 16;
        char *buf = guard_call_alloc(c, size);
        char *heap = NULL;
        suspect_rc_t rc;

        if (buf == NULL) {
            return SUSPECT_E_NOMEM;
        }
        rc =
            mw_norm_apply(gi->norm, val, len, buf, size, &out, &out_len, &heap);
        if (rc == SUSPECT_E_INVAL) {
            /* A spelling the normaliser refuses (only:, an unknown
             * entity): a refused source. */
            c->refuse_status = 400;
            c->refuse_why = "identity refused by its normalize";
            return SUSPECT_E_PARSE;
        }
        if (rc == SUSPECT_OK && heap != NULL) {
            rc = guard_call_adopt(c, heap);
        }
        if (rc != SUSPECT_OK) {
            return rc;
        }
    }
    if (out_len == 0) {
        out = val;
        out_len = len;
    }
    return readings_add(r, out, out_len);
}

/* Adds the readings of one value (whole, and cut at a NUL) to r; an
 * empty value adds none. */
static suspect_rc_t value_readings(guard_call_t *c, const guard_identity_t *gi,
                                   const char *val, size_t len, readings_t *r)
{
    const char *nul;
    suspect_rc_t rc;

    if (len == 0) {
        return SUSPECT_OK;
    }
    rc = read_into(c, gi, val, len, r);
    nul = rc == SUSPECT_OK ? memchr(val, '\0', len) : NULL;
    if (nul != NULL && nul > val) {
        rc = read_into(c, gi, val, (size_t)(nul - val), r);
    }
    return rc;
}

/* The readings of part p of gi into r: SUSPECT_E_NOTFOUND when none of
 * its sources has a non-empty value. */
static suspect_rc_t part_readings(guard_call_t *c, const guard_identity_t *gi,
                                  unsigned p, readings_t *r)
{
    r->n = 0;
    for (size_t i = 0; i < gi->nsources; i++) {
        source_vals_t sv;
        suspect_rc_t rc;

        if (gi->src[i].part != p) {
            continue;
        }
        rc = source_values(c, &gi->src[i], &sv);
        if (rc == SUSPECT_E_NOTFOUND) {
            continue;
        }
        for (size_t k = 0; rc == SUSPECT_OK && k < sv.n; k++) {
            rc = value_readings(c, gi, sv.v[k], sv.len[k], r);
        }
        if (rc != SUSPECT_OK) {
            return rc;
        }
    }
    return r->n > 0 ? SUSPECT_OK : SUSPECT_E_NOTFOUND;
}

/* The readings of identity gi: see guard_internal.h. */
suspect_rc_t guard_identity_resolve(guard_call_t *c, const guard_identity_t *gi,
                                    suspect_identity_t *ids, size_t cap,
                                    size_t *n)
{
    readings_t r[SUSPECT_MAX_PARTS];
    size_t total = 1;

    *n = 0;
    for (unsigned p = 0; p < gi->nparts; p++) {
        suspect_rc_t rc = part_readings(c, gi, p, &r[p]);

        if (rc != SUSPECT_OK) {
            return rc;
        }
        total *= r[p].n;
        if (total > cap) {
            return SUSPECT_E_RANGE;
        }
    }
    for (size_t k = 0; k < total; k++) {
        size_t rest = k;

        ids[k].type = gi->conf->type;
        ids[k].nparts = gi->nparts;
        for (unsigned p = 0; p < gi->nparts; p++) {
            ids[k].part[p].ptr = r[p].v[rest % r[p].n];
            ids[k].part[p].len = r[p].len[rest % r[p].n];
            rest /= r[p].n;
        }
    }
    *n = total;
    return SUSPECT_OK;
}
