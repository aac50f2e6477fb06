/*
 * identity.c - the values of a route's identities, for one request.
 *
 * Each source is read with the lookups of lookup.c: header and env values
 * are the request's own variables (no copy); cookie, query and form values
 * are copied (and decoded) into the call's arena: GUARD_ARENA_STACK bytes
 * on the stack, and for a value that does not fit there one heap block of
 * its exact size (the lookups report the full length), so a long value is
 * keyed whole, never cut (the key builder caps and hashes it).  The
 * client address is resolved once per call and kept as text.
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
 * The body is read at most once per call, and only for an
 * application/x-www-form-urlencoded request in forward mode that is not
 * an authorizer's: web servers send authorizers no body, and in the two
 * deciding modes (auth-request, authorizer) the web server keeps the body
 * for the app.  The body is read as a form whenever a common parser
 * would read it as one: PHP takes CONTENT_TYPE up to its first ';', ','
 * or blank, in any case ("application/x-www-form-urlencoded,x"); Perl's
 * CGI.pm takes any type that starts with
 * "application/x-www-form-urlencoded" ("...urlencodedx"), and a POST
 * without CONTENT_TYPE at all.  So: CONTENT_TYPE missing or blank, or
 * starting (past blanks, in any case) with that type.  Reading more than
 * the app does only finds more, the safe side.  A body longer than form_max is
 * not searched at all (SUSPECT_E_FULL, a 413): a prefix could hide a
 * later copy of a parameter (the one PHP reads) or the parameter itself,
 * so counting from it would be a guess.  A multipart/form-data body (any
 * type starting with it, as CGI.pm matches it), which PHP and CGI.pm also
 * read as a form, is not parsed here: a route that needs the body
 * refuses it (SUSPECT_E_PARSE, a 415) rather than let its form fields go
 * uncounted.
 *
 * Every value is taken as the app ends up comparing it: cut at its first
 * NUL byte (a CGI program gets its variables through the environment, C
 * strings, and PHP cuts a FastCGI variable there too; a C program cuts a
 * decoded %00 there), then without leading and trailing white space
 * (HTTP field values have none, and apps trim() what they read).  Both
 * only make more values the same identity, never fewer: "victim%00x1",
 * "victim " and "victim" all count against victim.
 *
 * Invariant: everything a call allocates is listed in its arena and freed
 * by guard_call_end(); nothing outlives the call.
 */
#include "guard_internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"

/* Starts a call: the arena's stack part is left uninitialised. */
void guard_call_begin(guard_call_t *c, const mw_guard_t *g, mw_req_t *req)
{
    c->g = g;
    c->req = req;
    c->body_state = 0;
    c->body = NULL;
    c->body_len = 0;
    c->ip_state = 0;
    c->ip_len = 0;
    c->query.done = false;
    c->cookie.done = false;
    c->arena.used = 0;
    c->arena.nheap = 0;
}

/* Frees the call's heap blocks. */
void guard_call_end(guard_call_t *c)
{
    for (size_t i = 0; i < c->arena.nheap; i++) {
        free(c->arena.heap[i]);
    }
    c->arena.nheap = 0;
}

/* The value of variable name, looked up once per call through v. */
static const char *call_var(guard_call_t *c, guard_var_t *v, const char *name,
                            size_t *len)
{
    if (!v->done) {
        v->len = 0;
        v->value = mw_req_param(c->req, name, &v->len);
        v->done = true;
    }
    *len = v->len;
    return v->value;
}

/* QUERY_STRING, looked up once per call. */
const char *guard_call_query(guard_call_t *c, size_t *len)
{
    return call_var(c, &c->query, "QUERY_STRING", len);
}

/* A heap block of n bytes owned by the arena, or NULL. */
static char *arena_heap(guard_arena_t *a, size_t n)
{
    char *p;

    if (a->nheap == GUARD_ARENA_HEAP) {
        return NULL;
    }
    p = suspect_malloc(n);
    if (p != NULL) {
        a->heap[a->nheap++] = p;
    }
    return p;
}

/* True when the web server, not suspect-fcgi, hands the request to the
 * app: the authorizer role and the two deciding modes. */
static bool app_served_elsewhere(const guard_call_t *c)
{
    return c->req->role == MW_ROLE_AUTHORIZER ||
           c->g->conf->mode != SUSPECT_MODE_FORWARD;
}

/* CONTENT_TYPE past its leading blanks, or NULL when missing or blank. */
static const char *media_type(const mw_req_t *req, size_t *len)
{
    const char *v = mw_req_param(req, "CONTENT_TYPE", len);

    while (v != NULL && *len > 0 && (*v == ' ' || *v == '\t')) {
        v++;
        (*len)--;
    }
    return v != NULL && *len > 0 ? v : NULL;
}

/* True when the media type starts with type, in any case. */
static bool media_type_starts(const char *v, size_t len, const char *type)
{
    size_t n = strlen(type);

    return v != NULL && len >= n && strncasecmp(v, type, n) == 0;
}

/* Where the body stands before it is read: 0 to read (a form to some
 * parser, in forward mode), -1 nothing to read, -3 a multipart form that
 * cannot be searched.  See the file comment. */
static int body_kind(const guard_call_t *c)
{
    size_t len = 0;
    const char *type;

    if (app_served_elsewhere(c)) {
        return -1;
    }
    type = media_type(c->req, &len);
    if (type == NULL ||
        media_type_starts(type, len, "application/x-www-form-urlencoded")) {
        return 0;
    }
    return media_type_starts(type, len, "multipart/form-data") ? -3 : -1;
}

suspect_rc_t guard_call_body(guard_call_t *c, const char **body, size_t *len)
{
    if (c->body_state == 0) {
        bool complete = false;
        suspect_rc_t rc;

        c->body_state = body_kind(c);
        if (c->body_state != 0) {
            return guard_call_body(c, body, len);
        }
        rc = mw_req_prefetch(c->req, c->g->form_max, &c->body, &c->body_len,
                             &complete);
        if (rc != SUSPECT_OK) {
            return rc;
        }
        c->body_state = complete ? 1 : -2;
    }
    switch (c->body_state) {
    case -2:
        return SUSPECT_E_FULL;
    case -3:
        return SUSPECT_E_PARSE;
    case 1:
        *body = c->body;
        *len = c->body_len;
        return SUSPECT_OK;
    default:
        return SUSPECT_E_NOTFOUND;
    }
}

/* Runs a lookup into the arena: see guard_internal.h. */
suspect_rc_t guard_call_find(guard_call_t *c, guard_find_fn fn, const char *s,
                             size_t s_len, const char *name, size_t name_len,
                             const char **val, size_t *len)
{
    guard_arena_t *a = &c->arena;
    char *buf = a->stack + a->used;
    size_t room = sizeof(a->stack) - a->used;
    suspect_rc_t rc = fn(s, s_len, name, name_len, buf, room, len);

    if (rc == SUSPECT_E_FULL) {
        buf = arena_heap(a, *len);
        if (buf == NULL) {
            return SUSPECT_E_NOMEM;
        }
        rc = fn(s, s_len, name, name_len, buf, *len, len);
    } else if (rc == SUSPECT_OK) {
        a->used += *len;
    }
    if (rc != SUSPECT_OK) {
        return rc == SUSPECT_E_FULL ? SUSPECT_E_NOMEM : SUSPECT_E_NOTFOUND;
    }
    *val = buf;
    return SUSPECT_OK;
}

/* The client address as identity text, resolved once per call. */
static suspect_rc_t client_ip(guard_call_t *c, const char **val, size_t *len)
{
    if (c->ip_state == 0) {
        const suspect_conf_t *conf = c->g->conf;
        mw_client_src_t src;
        mw_addr_t addr;

        c->ip_state = -1;
        memset(&src, 0, sizeof(src));
        src.trust = c->g->trust.n > 0 ? &c->g->trust : NULL;
        src.remote = mw_req_param(c->req, "REMOTE_ADDR", &src.remote_len);
        if (src.remote == NULL) {
            return SUSPECT_E_NOTFOUND;
        }
        /* One header, the one the proxy writes: with two, a client could
         * write the other (conf and guard refuse any other value). */
        if (conf->fwd_header == SUSPECT_FWD_XFF) {
            src.xff =
                mw_req_param(c->req, "HTTP_X_FORWARDED_FOR", &src.xff_len);
        } else if (conf->fwd_header == SUSPECT_FWD_FORWARDED) {
            src.forwarded =
                mw_req_param(c->req, "HTTP_FORWARDED", &src.forwarded_len);
        }
        if (mw_client_addr(&src, &addr) != SUSPECT_OK ||
            mw_addr_identity(&addr, conf->ipv4_prefix, conf->ipv6_prefix, c->ip,
                             &c->ip_len) != SUSPECT_OK) {
            return SUSPECT_E_NOTFOUND;
        }
        c->ip_state = 1;
    }
    if (c->ip_state < 0) {
        return SUSPECT_E_NOTFOUND;
    }
    *val = c->ip;
    *len = c->ip_len;
    return SUSPECT_OK;
}

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
        app_served_elsewhere(c)) {
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
    const char *hdr = call_var(c, &c->cookie, "HTTP_COOKIE", &hdr_len);
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
        return client_ip(c, val, len);
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
