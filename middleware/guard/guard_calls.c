/*
 * guard_calls.c - a body of calls as the guard reads it: an XML-RPC
 * request (a system.multicall's calls each) or a JSON one (a batch's
 * elements each), so each call counts as one attempt for its own account.
 *
 * A route whose identities have an xmlrpc: or json: source reads the
 * body whole, up to form_max (mw_req_prefetch(): the bytes are kept and
 * forwarded to the application unchanged), and refuses, before anything
 * is counted:
 *  - a body longer than form_max (413): the calls past it are not seen;
 *  - a non-empty body whose Content-Type is not the route's (415:
 *    text/xml or application/xml for XML-RPC, application/json for JSON):
 *    xmlrpc.php reads php://input whatever the type, so a body sent as a
 *    form would otherwise pass unread;
 *  - a body the reader refuses (400: request/xmlrpc.h, request/jsonbody.h),
 *    more calls than the route's maxCalls (400);
 *  - a call to an XML-RPC method no source of the route reads (400),
 *    unless passMethods names it: it is then passed uncounted;
 *  - a value of a type the application reads another way (400);
 *  - in the deciding modes (auth-request, authorizer), any request: the
 *    body is the application's, never read here (500).
 * An empty body carries no call: the sources have no value (the route's
 * missing= decides).  suspect-cgi links no XML parser: its guard refuses
 * xmlrpc: sources when it is built (guard.c), and should one reach a
 * request, the request is refused (500).
 */
#include "guard_internal.h"

#include <string.h>
#include <strings.h>

#include "request/jsonbody.h"
#include "request/xmlrpc.h"

/* Refuses the request: status, why. */
static suspect_rc_t refuse(guard_call_t *c, int status, const char *why)
{
    c->refuse_status = status;
    c->refuse_why = why;
    return SUSPECT_E_PARSE;
}

/* Whether the media type v[0..len) is type, with or without
 * parameters. */
static bool media_is(const char *v, size_t len, const char *type)
{
    size_t n = strlen(type);

    return v != NULL && len >= n && strncasecmp(v, type, n) == 0 &&
           (len == n || v[n] == ';' || v[n] == ' ' || v[n] == '\t');
}

/* Whether the request's Content-Type is what a route of kind reads. */
static bool type_fits(const guard_call_t *c, int kind)
{
    size_t len = 0;
    const char *v = guard_call_media_type(c, &len);

    if (kind == GUARD_CALLS_XMLRPC) {
        return media_is(v, len, "text/xml") ||
               media_is(v, len, "application/xml");
    }
    return media_is(v, len, "application/json");
}

/* Parses body[0..len) as kind: c->ncalls, or refused. */
static suspect_rc_t parse(guard_call_t *c, int kind, size_t max,
                          const char *body, size_t len)
{
    const char *why = NULL;
    suspect_rc_t rc;

    if (kind == GUARD_CALLS_XMLRPC) {
        if (mw_xmlrpc_read == NULL) {
            return refuse(c, 500, "XML-RPC needs an XML parser");
        }
        rc = mw_xmlrpc_read(body, len, max, &c->xmlrpc, &why);
        c->ncalls = rc == SUSPECT_OK ? mw_xmlrpc_ncalls(c->xmlrpc) : 0;
    } else {
        rc = mw_json_read(body, len, max, &c->json, &why);
        c->ncalls = rc == SUSPECT_OK ? mw_json_ncalls(c->json) : 0;
    }
    if (rc == SUSPECT_E_PARSE || rc == SUSPECT_E_RANGE) {
        return refuse(c, 400, why);
    }
    return rc;
}

suspect_rc_t guard_calls_read(guard_call_t *c, const guard_route_t *r)
{
    size_t max = r->conf->max_calls != 0 ? r->conf->max_calls
                                         : SUSPECT_CONF_MAX_CALLS_DEFAULT;
    const char *body = NULL;
    size_t len = 0;
    bool complete = false;
    suspect_rc_t rc;

    c->ncalls = 0;
    c->cur = 0;
    if (r->calls == GUARD_CALLS_NONE) {
        return SUSPECT_OK;
    }
    if (guard_call_app_elsewhere(c)) {
        return refuse(c, 500,
                      "XML-RPC and JSON sources read the body: forward mode "
                      "only");
    }
    rc = mw_req_prefetch(c->req, c->g->form_max, &body, &len, &complete);
    if (rc != SUSPECT_OK) {
        return rc;
    }
    if (!complete) {
        return refuse(c, 413, "body of calls over formMax");
    }
    if (len == 0) {
        return SUSPECT_OK;
    }
    if (!type_fits(c, r->calls)) {
        return refuse(c, 415,
                      r->calls == GUARD_CALLS_XMLRPC
                          ? "XML-RPC body not sent as text/xml"
                          : "JSON body not sent as application/json");
    }
    return parse(c, r->calls, max, body, len);
}

/* Whether source s reads method m[0..n): its match length + 1, or 0. */
static size_t method_match(const guard_source_t *s, const char *m, size_t n)
{
    if (s->kind != SUSPECT_SRC_XMLRPC) {
        return 0;
    }
    if (s->prefix) {
        return n >= s->name_len && memcmp(m, s->name, s->name_len) == 0
                   ? s->name_len + 1
                   : 0;
    }
    /* an exact name wins over any prefix */
    return n == s->name_len && memcmp(m, s->name, n) == 0 ? (size_t)-1 : 0;
}

int guard_calls_best(const guard_call_t *c, const guard_identity_t *gi,
                     unsigned p)
{
    size_t n = 0, best = 0;
    const char *m;
    int at = -1;

    if (c->xmlrpc == NULL) {
        return -1;
    }
    m = mw_xmlrpc_method(c->xmlrpc, c->cur, &n);
    for (size_t k = 0; k < gi->nsources; k++) {
        size_t score =
            gi->src[k].part == p ? method_match(&gi->src[k], m, n) : 0;
        if (score > best) {
            best = score;
            at = (int)k;
        }
    }
    return at;
}

/* Whether list (space-separated names) holds m[0..n). */
static bool listed(const char *list, const char *m, size_t n)
{
    const char *p = list;

    while (p != NULL && *p != '\0') {
        size_t len = strcspn(p, " \t\r\n");

        if (len == n && memcmp(p, m, n) == 0) {
            return true;
        }
        p += len;
        p += strspn(p, " \t\r\n");
    }
    return false;
}

suspect_rc_t guard_calls_known(guard_call_t *c, const guard_route_t *r)
{
    size_t n = 0;
    const char *m;

    if (c->xmlrpc == NULL) {
        return SUSPECT_OK;
    }
    m = mw_xmlrpc_method(c->xmlrpc, c->cur, &n);
    for (size_t j = 0; j < r->nids; j++) {
        for (size_t k = 0; k < r->ids[j].nsources; k++) {
            if (method_match(&r->ids[j].src[k], m, n) > 0) {
                return SUSPECT_OK;
            }
        }
    }
    if (listed(r->conf->pass_methods, m, n)) {
        return SUSPECT_E_NOTFOUND;
    }
    return refuse(c, 400, "XML-RPC method the route has no reading for");
}

suspect_rc_t guard_calls_value(guard_call_t *c, const guard_source_t *s,
                               const char **v, size_t *len)
{
    suspect_rc_t rc = SUSPECT_E_NOTFOUND;

    if (s->kind == SUSPECT_SRC_XMLRPC && c->xmlrpc != NULL) {
        rc = mw_xmlrpc_param(c->xmlrpc, c->cur, s->pos, v, len);
    } else if (s->kind == SUSPECT_SRC_JSON && c->json != NULL) {
        char buf[MW_JSON_INT_TEXT];

        rc = mw_json_value(c->json, c->cur, s->name, s->name_len, buf, v, len);
        if (rc == SUSPECT_OK && *v == buf) {
            char *copy = guard_call_alloc(c, *len);

            if (copy == NULL) {
                return SUSPECT_E_NOMEM;
            }
            memcpy(copy, buf, *len);
            *v = copy;
        }
    }
    if (rc == SUSPECT_E_INVAL) {
        return refuse(c, 400,
                      "identity of a type the application reads "
                      "another way");
    }
    return rc;
}
