/*
 * identity.c - the values of a route's identities, for one request.
 *
 * Each source is read through the call's state (guard_call.c): header and
 * env values are the request's own variables (no copy); cookie, query and
 * form values are found by the lookups of lookup.c and copied (and
 * decoded) into the call's arena; the client address is the call's.
 *
 * A query or form parameter given more than once with different values
 * is refused (SUSPECT_E_INVAL, a 400): the first is what is found here,
 * but PHP reads the last, so "member=A&member=B" would count A while the
 * app acts for B, and a client could vary one copy to dodge the count.
 * The same value repeated is harmless and accepted.
 *
 * A header: source whose header came more than once is refused the same
 * way in the two deciding modes: the web server passes the app the
 * copies as they came (nginx 1.22 as separate variables, of which PHP
 * keeps the last), while the value here is the copies joined, so a
 * client could put its victim last and vary the first.  In forward mode
 * the app gets the joined value that was counted, so it is accepted.
 *
 *
 * Every value is taken as the app ends up comparing it: cut at its first
 * NUL byte (a CGI program gets its variables through the environment, C
 * strings, and PHP cuts a FastCGI variable there too; a C program cuts a
 * decoded %00 there), then without leading and trailing white space
 * (HTTP field values have none, and apps trim() what they read).  Both
 * only make more values the same identity, never fewer: "victim%00x1",
 */
#include "guard_internal.h"

#include <string.h>

/* A query or form parameter of s: SUSPECT_OK, SUSPECT_E_NOTFOUND,
 * SUSPECT_E_INVAL when it is ambiguous, SUSPECT_E_NOMEM. */
static suspect_rc_t param_value(guard_call_t *c, guard_find_fn fn,
                                const char *s, size_t s_len,
                                const guard_source_t *src, const char **val,
                                size_t *len)
{
    suspect_rc_t rc =
        guard_call_find(c, fn, s, s_len, src->name, src->name_len, val, len);

    if (rc == SUSPECT_OK &&
        mw_param_ambiguous(s, s_len, 0, src->name, src->name_len)) {
        return SUSPECT_E_INVAL;
    }
    return rc;
}

/* A header or env variable: SUSPECT_OK, SUSPECT_E_NOTFOUND, or
 * SUSPECT_E_INVAL for a repeated header the app reads apart (see the file
 * comment). */
static suspect_rc_t variable_value(guard_call_t *c, const guard_source_t *s,
                                   const char **val, size_t *len)
{
    const mw_param_t *p = mw_req_param_find(c->req, s->name, s->name_len);

    if (p == NULL) {
        return SUSPECT_E_NOTFOUND;
    }
    if (p->repeated && s->kind == SUSPECT_SRC_HEADER &&
        guard_call_app_elsewhere(c)) {
        return SUSPECT_E_INVAL;
    }
    *val = p->value;
    *len = p->value_len;
    return SUSPECT_OK;
}

/* A cookie: SUSPECT_OK, SUSPECT_E_NOTFOUND, SUSPECT_E_INVAL when parsers
 * would read different cookies under its name, SUSPECT_E_NOMEM. */
static suspect_rc_t cookie_value(guard_call_t *c, const guard_source_t *s,
                                 const char **val, size_t *len)
{
    size_t hdr_len = 0;
    const char *hdr = guard_call_cookie(c, &hdr_len);
    suspect_rc_t rc = guard_call_find(c, mw_cookie_find, hdr, hdr_len, s->name,
                                      s->name_len, val, len);

    if (rc == SUSPECT_OK &&
        mw_cookie_ambiguous(hdr, hdr_len, s->name, s->name_len)) {
        return SUSPECT_E_INVAL;
    }
    return rc;
}

/* A form parameter of the call's body. */
static suspect_rc_t form_value(guard_call_t *c, const guard_source_t *s,
                               const char **val, size_t *len)
{
    const char *body = NULL;
    size_t body_len = 0;
    suspect_rc_t rc = guard_call_body(c, &body, &body_len);

    if (rc != SUSPECT_OK) {
        return rc;
    }
    return param_value(c, mw_form_find, body, body_len, s, val, len);
}

/* The value of one source: SUSPECT_OK, SUSPECT_E_NOTFOUND,
 * SUSPECT_E_INVAL (an ambiguous parameter), or an error. */
static suspect_rc_t source_value(guard_call_t *c, const guard_source_t *s,
                                 const char **val, size_t *len)
{
    const char *hdr;
    size_t hdr_len = 0;

    switch (s->kind) {
    case SUSPECT_SRC_HEADER:
    case SUSPECT_SRC_ENV:
        return variable_value(c, s, val, len);
    case SUSPECT_SRC_COOKIE:
        return cookie_value(c, s, val, len);
    case SUSPECT_SRC_QUERY:
        hdr = guard_call_query(c, &hdr_len);
        return param_value(c, mw_query_find, hdr, hdr_len, s, val, len);
    case SUSPECT_SRC_FORM:
        return form_value(c, s, val, len);
    case SUSPECT_SRC_CLIENT_IP:
        return guard_call_client_ip(c, val, len);
    }
    return SUSPECT_E_NOTFOUND;
}

/* True for the white space trimmed off values (PHP's trim() set). */
static bool is_space(char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

/* [*val, *len) as the app compares it: see the file comment. */
static void value_clean(const char **val, size_t *len)
{
    const char *p = *val;
    const char *nul, *e;

    if (*len == 0) {
        return;
    }
    nul = memchr(p, '\0', *len);
    e = nul != NULL ? nul : p + *len;

    while (p < e && is_space(*p)) {
        p++;
    }
    while (e > p && is_space(e[-1])) {
        e--;
    }
    *val = p;
    *len = (size_t)(e - p);
}

/* The values of identity gi: see guard_internal.h. */
suspect_rc_t guard_identity_resolve(guard_call_t *c, const guard_identity_t *gi,
                                    suspect_identity_t *id)
{
    id->type = gi->conf->type;
    id->nparts = gi->nsources;
    for (size_t i = 0; i < gi->nsources; i++) {
        const char *val = NULL;
        size_t len = 0;
        suspect_rc_t rc = source_value(c, &gi->src[i], &val, &len);

        if (rc != SUSPECT_OK) {
            return rc;
        }
        value_clean(&val, &len);
        if (len == 0) {
            return SUSPECT_E_NOTFOUND;
        }
        id->part[i].ptr = val;
        id->part[i].len = len;
    }
    return SUSPECT_OK;
}
