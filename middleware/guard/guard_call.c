/*
 * guard_call.c - the state of one decision (guard_call_t): the memory its
 * values live in, the request variables, body and client address it looks
 * up at most once, whichever route and identity ask first.
 *
 * Values found by the lookups of lookup.c are copied (and decoded) into
 * the call's arena: GUARD_ARENA_STACK bytes on the stack, and for a value
 * that does not fit there one heap block of its exact size (the lookups
 * report the full length), so a long value is keyed whole, never cut (the
 * key builder caps and hashes it).  The client address is resolved once
 * per call and kept as text.
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
 * so counting from it would be a guess.  A multipart body (any type
 * starting with "multipart/", in any case: CGI.pm reads one that starts
 * with "multipart/form-data", Python's cgi module any multipart type) is
 * read by guard_multipart.c, its fields the same urlencoded text.
 *
 * Invariant: everything a call allocates is listed in its arena and freed
 * by guard_call_end(); nothing outlives the call.
 */
#include "guard_internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"
#include "request/jsonbody.h"
#include "request/xmlrpc.h"

/* Starts a call: the arena's stack part is left uninitialised. */
void guard_call_begin(guard_call_t *c, const mw_guard_t *g, mw_req_t *req)
{
    c->g = g;
    c->req = req;
    c->body_state = 0;
    c->body = NULL;
    c->body_len = 0;
    c->refuse_status = 0;
    c->refuse_why = NULL;
    c->ip_state = 0;
    c->ip_len = 0;
    c->query.done = false;
    c->cookie.done = false;
    c->arena.used = 0;
    c->arena.nheap = 0;
    c->xmlrpc = NULL;
    c->json = NULL;
    c->ncalls = 0;
    c->cur = 0;
}

/* Frees the call's heap blocks. */
void guard_call_end(guard_call_t *c)
{
    for (size_t i = 0; i < c->arena.nheap; i++) {
        free(c->arena.heap[i]);
    }
    c->arena.nheap = 0;
    if (c->xmlrpc != NULL) {
        mw_xmlrpc_free(c->xmlrpc);
    }
    mw_json_free(c->json);
    c->xmlrpc = NULL;
    c->json = NULL;
}

/* The value of variable name, looked up once per call through v:
 * SUSPECT_OK, or SUSPECT_E_PARSE (refused, why) when it holds "%uXXXX". */
static suspect_rc_t call_var(guard_call_t *c, guard_var_t *v, const char *name,
                             const char *why, const char **value, size_t *len)
{
    if (!v->done) {
        v->len = 0;
        v->value = mw_req_param(c->req, name, &v->len);
        v->u_escape = mw_has_u_escape(v->value, v->len);
        v->done = true;
    }
    *value = v->value;
    *len = v->len;
    if (v->u_escape) {
        c->refuse_status = 400;
        c->refuse_why = why;
        return SUSPECT_E_PARSE;
    }
    return SUSPECT_OK;
}

/* QUERY_STRING, looked up once per call. */
suspect_rc_t guard_call_query(guard_call_t *c, const char **qs, size_t *len)
{
    return call_var(c, &c->query, "QUERY_STRING", "%u escape in query string",
                    qs, len);
}

/* HTTP_COOKIE, looked up once per call. */
suspect_rc_t guard_call_cookie(guard_call_t *c, const char **hdr, size_t *len)
{
    return call_var(c, &c->cookie, "HTTP_COOKIE", "%u escape in cookie", hdr,
                    len);
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

/* Call memory: see guard_internal.h. */
char *guard_call_alloc(guard_call_t *c, size_t n)
{
    guard_arena_t *a = &c->arena;
    char *p;

    if (n <= sizeof(a->stack) - a->used) {
        p = a->stack + a->used;
        a->used += n;
        return p;
    }
    return arena_heap(a, n > 0 ? n : 1);
}

/* Takes the heap block p into the call: see guard_internal.h. */
suspect_rc_t guard_call_adopt(guard_call_t *c, char *p)
{
    guard_arena_t *a = &c->arena;

    if (a->nheap == GUARD_ARENA_HEAP) {
        free(p);
        return SUSPECT_E_NOMEM;
    }
    a->heap[a->nheap++] = p;
    return SUSPECT_OK;
}

/* True when the web server, not suspect-fcgi, hands the request to the
 * app: the authorizer role and the two deciding modes. */
bool guard_call_app_elsewhere(const guard_call_t *c)
{
    return c->req->role == MW_ROLE_AUTHORIZER ||
           c->g->conf->mode != SUSPECT_MODE_FORWARD;
}

bool guard_call_copies_apart(const guard_call_t *c)
{
    return c->req->copies_apart || guard_call_app_elsewhere(c);
}

/* CONTENT_TYPE past its leading blanks: see guard_internal.h. */
const char *guard_call_media_type(const guard_call_t *c, size_t *len)
{
    const char *v = mw_req_param(c->req, "CONTENT_TYPE", len);

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

/* Where the body stands before it is read: 0 an urlencoded form to
 * some parser, 1 a multipart one, -1 nothing to read.  See the file
 * comment. */
static int body_kind(const guard_call_t *c, const char **type, size_t *len)
{
    if (guard_call_app_elsewhere(c)) {
        return -1;
    }
    *type = guard_call_media_type(c, len);
    if (*type == NULL ||
        media_type_starts(*type, *len, "application/x-www-form-urlencoded")) {
        return 0;
    }
    return media_type_starts(*type, *len, "multipart/") ? 1 : -1;
}

/* Reads the body: body_state 1 (read), -1 (none) or -2 (refused). */
static suspect_rc_t body_read(guard_call_t *c)
{
    const char *type = NULL;
    size_t len = 0;
    bool complete = false;
    char *form = NULL;
    suspect_rc_t rc;

    switch (body_kind(c, &type, &len)) {
    case 1:
        rc = guard_multipart_read(c, type, len, &form, &c->body_len);
        if (rc == SUSPECT_OK && form != NULL) {
            rc = guard_call_adopt(c, form); /* frees it when it fails */
        }
        c->body = rc == SUSPECT_OK && form != NULL ? form : "";
        break;
    case 0:
        rc = mw_req_prefetch(c->req, c->g->form_max, &c->body, &c->body_len,
                             &complete);
        if (rc == SUSPECT_OK && !complete) {
            c->refuse_status = 413;
            c->refuse_why = "form body over formMax";
            rc = SUSPECT_E_FULL;
        } else if (rc == SUSPECT_OK && mw_has_u_escape(c->body, c->body_len)) {
            c->refuse_status = 400;
            c->refuse_why = "%u escape in form body";
            rc = SUSPECT_E_PARSE;
        }
        break;
    default:
        c->body_state = -1;
        return SUSPECT_OK;
    }
    if (rc == SUSPECT_E_FULL || rc == SUSPECT_E_PARSE) {
        c->body_state = -2;
        return SUSPECT_OK;
    }
    c->body_state = rc == SUSPECT_OK ? 1 : 0;
    return rc;
}

suspect_rc_t guard_call_body(guard_call_t *c, const char **body, size_t *len)
{
    if (c->body_state == 0) {
        suspect_rc_t rc = body_read(c);

        if (rc != SUSPECT_OK) {
            return rc;
        }
    }
    switch (c->body_state) {
    case -2:
        return c->refuse_status == 413 ? SUSPECT_E_FULL : SUSPECT_E_PARSE;
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

/* The client's address of req under g's trusted proxies; false when
 * there is none (no REMOTE_ADDR, or not an address). */
static bool client_addr(const mw_guard_t *g, const mw_req_t *req,
                        mw_addr_t *addr)
{
    const suspect_conf_t *conf = g->conf;
    mw_client_src_t src;

    memset(&src, 0, sizeof(src));
    src.trust = g->trust.n > 0 ? &g->trust : NULL;
    src.remote = mw_req_param(req, "REMOTE_ADDR", &src.remote_len);
    if (src.remote == NULL) {
        return false;
    }
    /* One header, the one the proxy writes: with two, a client could
     * write the other (conf and guard refuse any other value). */
    if (conf->fwd_header == SUSPECT_FWD_XFF) {
        src.xff = mw_req_param(req, "HTTP_X_FORWARDED_FOR", &src.xff_len);
    } else if (conf->fwd_header == SUSPECT_FWD_FORWARDED) {
        src.forwarded = mw_req_param(req, "HTTP_FORWARDED", &src.forwarded_len);
    }
    return mw_client_addr(&src, addr) == SUSPECT_OK;
}

bool mw_guard_client(const mw_guard_t *g, const mw_req_t *req, char *buf,
                     size_t size)
{
    char text[MW_ADDR_TEXT_MAX];
    mw_addr_t addr;
    size_t len;

    if (!client_addr(g, req, &addr) ||
        mw_addr_identity(&addr, 32, 128, text, &len) != SUSPECT_OK ||
        len >= size) {
        return false;
    }
    memcpy(buf, text, len + 1);
    return true;
}

/* The client address as identity text, resolved once per call. */
suspect_rc_t guard_call_client_ip(guard_call_t *c, const char **val,
                                  size_t *len)
{
    const mw_addr_t *a;

    if (guard_call_client_addr(c, &a) != SUSPECT_OK) {
        return SUSPECT_E_NOTFOUND;
    }
    *val = c->ip;
    *len = c->ip_len;
    return SUSPECT_OK;
}

/* The client address, resolved once per call. */
suspect_rc_t guard_call_client_addr(guard_call_t *c, const mw_addr_t **out)
{
    if (c->ip_state == 0) {
        const suspect_conf_t *conf = c->g->conf;
        mw_addr_t addr;

        c->ip_state = -1;
        if (!client_addr(c->g, c->req, &addr) ||
            mw_addr_identity(&addr, conf->ipv4_prefix, conf->ipv6_prefix, c->ip,
                             &c->ip_len) != SUSPECT_OK) {
            return SUSPECT_E_NOTFOUND;
        }
        c->addr = addr;
        c->ip_state = 1;
    }
    if (c->ip_state < 0) {
        return SUSPECT_E_NOTFOUND;
    }
    *out = &c->addr;
    return SUSPECT_OK;
}
