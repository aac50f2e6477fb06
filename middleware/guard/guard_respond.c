/*
 * guard_respond.c - the guard's answers: the denial, the 400 (413, 500)
 * and the 503; the header line a shadow route's would-deny adds to the
 * application's response; and the log line of each (mw_guard_log_verdict).
 *
 * DENY is mw_deny_build() with the route's status, UNAVAILABLE is
 * mw_unavailable_build(); both get the conf's template and, when the conf
 * forces a format, a fixed Accept value in place of the client's.  They
 * are built into a stack buffer when there is no template, else into a
 * heap buffer of MW_DENY_BUF plus the template's size; a response that is
 * still bigger (placeholders expand) is built again at its exact size.
 * REJECT is a short plain-text response with the verdict's status: 400
 * (bad path, missing identity, ambiguous parameter, a multipart file
 * named as a counted field), 413 (a urlencoded body the route needs is
 * longer than formMax, or a counted multipart field lies past it), 415
 * (a multipart body parsers read differently) or 500 (the web server
 * sends no path).
 *
 * nginx auth_request: nginx turns any subrequest status but 2xx, 401 and
 * 403 into a 500.  So in auth-request mode, for a request in the FastCGI
 * RESPONDER role (how nginx's subrequest arrives), every answer here is
 * "Status: 403 Forbidden",
 * followed by the real outcome in headers nginx can read back with
 * auth_request_set $v $upstream_http_x_suspect_status (and so on) and turn
 * into the real response with error_page 403 = @named_location:
 *   X-Suspect-Status: 429             the status a client should get
 *                                     (the route's, 400 or 503);
 *   X-Suspect-Action: Login           the action (absent without route);
 *   X-Suspect-Retry-After-Ms: 120000  milliseconds to wait (DENY and
 *                                     UNAVAILABLE only);
 * then the usual lines of the response: Retry-After, RateLimit-Policy and
 * RateLimit (DENY), Cache-Control, Content-Type, Content-Length and the
 * body, which nginx discards for a subrequest.  docs/responses.md
 * ("nginx auth_request") shows the nginx side.  Every other request gets
 * the real status (the 429 or the route's, 400, 503): in forward and
 * authorizer mode, and in any mode in the FastCGI AUTHORIZER role, where
 * lighttpd and Apache pass a non-2xx answer to the client as it is.
 *
 * Nothing written here comes from the request except the choice of body
 * by Accept; the identity is never echoed.
 */
#include "guard_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "log/log.h"
#include "response/deny.h"
#include "response/error_page.h"

/* The 400 of the auth_request mapping, whose Status line write_response()
 * replaces; otherwise mw_error_respond() writes the same. */
static const char bad_request[] = "Status: 400 Bad Request\r\n"
                                  "Content-Type: text/plain; charset=utf-8\r\n"
                                  "Cache-Control: no-store\r\n"
                                  "\r\n"
                                  "400 Bad Request\n";

typedef suspect_rc_t (*build_fn)(const mw_deny_t *d, char *buf, size_t size,
                                 size_t *len);

/* A response being written: the built bytes, and a heap buffer to free. */
typedef struct response {
    char stack[MW_DENY_BUF];
    char *heap;
    const char *data;
    size_t len;
} response_t;

/* The inputs of mw_deny_build() for verdict v under conf. */
static void deny_inputs(const suspect_conf_t *conf, const mw_req_t *req,
                        const mw_verdict_t *v, mw_deny_t *d)
{
    memset(d, 0, sizeof(*d));
    d->rule = v->route != NULL ? &v->rule : NULL;
    d->decision = &v->decision;
    d->now_ms = v->now_ms;
    d->status = v->status;
    if (conf->format == SUSPECT_FORMAT_JSON) {
        d->accept = "application/problem+json";
        d->accept_len = strlen(d->accept);
    } else if (conf->format == SUSPECT_FORMAT_HTML) {
        d->accept = "text/html";
        d->accept_len = strlen(d->accept);
    } else {
        d->accept = mw_req_param(req, "HTTP_ACCEPT", &d->accept_len);
    }
    d->tmpl = conf->template_body;
    d->tmpl_len = conf->template_body != NULL ? conf->template_len : 0;
    d->tmpl_type = conf->template_type;
}

/* Builds with fn into r: SUSPECT_OK, SUSPECT_E_NOMEM, SUSPECT_E_INVAL. */
static suspect_rc_t build(build_fn fn, const mw_deny_t *d, response_t *r)
{
    char *buf = r->stack;
    size_t size = sizeof(r->stack);
    suspect_rc_t rc;

    r->heap = NULL;
    for (int attempt = 0; attempt < 2; attempt++) {
        if (attempt > 0 || d->tmpl != NULL) {
            size = attempt > 0 ? r->len + 1 : MW_DENY_BUF + d->tmpl_len;
            free(r->heap);
            buf = r->heap = suspect_malloc(size);
            if (buf == NULL) {
                return SUSPECT_E_NOMEM;
            }
        }
        rc = fn(d, buf, size, &r->len);
        if (rc != SUSPECT_E_FULL) {
            r->data = buf;
            return rc;
        }
    }
    return SUSPECT_E_NOMEM;
}

/* The auth_request header lines for v into buf; their length. */
static size_t auth_headers(const mw_verdict_t *v, char *buf, size_t size)
{
    int n =
        snprintf(buf, size, "Status: 403 Forbidden\r\nX-Suspect-Status: %d\r\n",
                 v->status);

    if (v->route != NULL) {
        n += snprintf(buf + n, size - (size_t)n, "X-Suspect-Action: %s\r\n",
                      v->route->action);
    }
    if (v->kind != MW_VERDICT_REJECT) {
        int64_t ms =
            v->kind == MW_VERDICT_DENY ? v->decision.retry_after_ms : 1000;
        n += snprintf(buf + n, size - (size_t)n,
                      "X-Suspect-Retry-After-Ms: %" PRId64 "\r\n",
                      ms > 0 ? ms : 0);
    }
    return (size_t)n;
}

/* True when req is answered with the auth_request mapping (the 403 and
 * X-Suspect-*): auth-request mode, and nginx's subrequest, which comes in
 * the RESPONDER role.  A FastCGI authorizer always gets the real status. */
static bool auth_mapped(const mw_guard_t *g, const mw_req_t *req)
{
    return g->conf->mode == SUSPECT_MODE_AUTH_REQUEST &&
           req->role == MW_ROLE_RESPONDER;
}

/* Writes data; under the auth_request mapping its Status line becomes the
 * 403 and the X-Suspect-* lines. */
static int write_response(const mw_guard_t *g, mw_req_t *req,
                          const mw_verdict_t *v, const char *data, size_t len)
{
    char head[SUSPECT_ACTION_MAX + 160];
    const char *eol;
    size_t n;
    int rc;

    if (!auth_mapped(g, req)) {
        return mw_req_write(req, data, len);
    }
    eol = memchr(data, '\n', len);
    if (eol == NULL) {
        return -EINVAL;
    }
    n = auth_headers(v, head, sizeof(head));
    rc = mw_req_write(req, head, n);
    if (rc == 0) {
        rc = mw_req_write(req, eol + 1, len - (size_t)(eol + 1 - data));
    }
    return rc;
}

/* Builds and writes a DENY or UNAVAILABLE response. */
static int respond_built(const mw_guard_t *g, mw_req_t *req,
                         const mw_verdict_t *v, build_fn fn)
{
    mw_deny_t d;
    response_t r;
    suspect_rc_t rc;
    int wrc;

    deny_inputs(g->conf, req, v, &d);
    rc = build(fn, &d, &r);
    if (rc == SUSPECT_E_INVAL && d.tmpl != NULL) {
        /* The template is unusable: the built-in page still answers. */
        free(r.heap);
        d.tmpl = NULL;
        d.tmpl_len = 0;
        rc = build(fn, &d, &r);
    }
    wrc = rc == SUSPECT_OK        ? write_response(g, req, v, r.data, r.len)
          : rc == SUSPECT_E_NOMEM ? -ENOMEM
                                  : -EINVAL;
    free(r.heap);
    return wrc;
}

size_t mw_guard_shadow_line(const mw_guard_t *g, const mw_verdict_t *v,
                            char *buf, size_t size)
{
    int n;

    if (!v->would_deny || v->route == NULL || g->conf->shadow_header == NULL) {
        return 0;
    }
    n = snprintf(buf, size, "%s: would-deny; action=%s; status=%d\r\n",
                 g->conf->shadow_header, v->route->action, v->status);
    return n > 0 && (size_t)n < size ? (size_t)n : 0;
}

/* Writes the response of a DENY, REJECT or UNAVAILABLE verdict. */
int mw_guard_respond(const mw_guard_t *g, mw_req_t *req, const mw_verdict_t *v)
{
    if (g == NULL || req == NULL || v == NULL) {
        return -EINVAL;
    }
    switch (v->kind) {
    case MW_VERDICT_DENY:
        if (v->route == NULL) {
            return -EINVAL;
        }
        return respond_built(g, req, v, mw_deny_build);
    case MW_VERDICT_UNAVAILABLE:
        return respond_built(g, req, v, mw_unavailable_build);
    case MW_VERDICT_REJECT:
        if (!auth_mapped(g, req)) {
            return mw_error_respond(req, v->status != 0 ? v->status : 400);
        }
        return write_response(g, req, v, bad_request, sizeof(bad_request) - 1);
    case MW_VERDICT_PASS:
    case MW_VERDICT_ALLOW:
        break;
    }
    return -EINVAL;
}

/* See guard.h. */
void mw_guard_log_verdict(const mw_guard_t *g, const mw_req_t *req,
                          const mw_verdict_t *v)
{
    mw_log_level_t level = v->would_deny      ? MW_LOG_NOTICE
                           : v->status >= 500 ? MW_LOG_WARNING
                                              : MW_LOG_INFO;
    const char *uri;
    int len;

    if ((!v->would_deny && v->kind != MW_VERDICT_DENY &&
         v->kind != MW_VERDICT_REJECT && v->kind != MW_VERDICT_UNAVAILABLE) ||
        !mw_log_enabled(level)) {
        return;
    }
    uri = mw_log_uri(mw_req_param(req, "REQUEST_URI", NULL), g->conf->full_uri,
                     &len);
    mw_log(level, "%s %.*s action=%s status=%d (%s)",
           v->would_deny                ? "would-deny"
           : v->kind == MW_VERDICT_DENY ? "deny"
                                        : "refuse",
           len, uri, v->route != NULL ? v->route->action : "-", v->status,
           v->why != NULL ? v->why : "");
}
