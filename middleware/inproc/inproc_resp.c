/*
 * inproc_resp.c - the response of a request the application must not run
 * (suspect_guard_req_response()): the bytes suspect-fcgi would send, and
 * the same in parts.
 *
 * The bytes are written by the guard's own responder, the one
 * suspect-fcgi's handler calls (mw_guard_respond(): the denial with its
 * Retry-After, RateLimit headers and the body Accept asks for, or the
 * template; the 400/413/415/500; the 503), or for a request that could
 * not be decided its error page (mw_error_respond()), into the request's
 * output buffer instead of a socket (inproc_req.c's writer).  They are
 * CGI output, which is what a FastCGI or CGI application writes, and are
 * then split in place: the Status line gives the status and reason, the
 * lines up to the blank line are the headers, the rest is the body.
 */
#include "inproc_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "response/deny.h"
#include "response/error_page.h"

/* Splits r->out into r->response's parts.  SUSPECT_E_INVAL when the bytes
 * are not a CGI response with a Status line (never, from the writers
 * above). */
static suspect_rc_t split(suspect_guard_req_t *r)
{
    suspect_guard_response_t *p = &r->response;
    const char *s = r->out, *end = r->out + r->out_len, *eol, *blank;
    const char prefix[] = "Status: ";
    char *num_end;
    long status;

    if (r->out_len < sizeof(prefix) ||
        memcmp(s, prefix, sizeof(prefix) - 1) != 0 ||
        (eol = memchr(s, '\n', r->out_len)) == NULL) {
        return SUSPECT_E_INVAL;
    }
    status = strtol(s + sizeof(prefix) - 1, &num_end, 10);
    if (status < 100 || status > 599 || num_end > eol) {
        return SUSPECT_E_INVAL;
    }
    blank = memmem(eol - 1, (size_t)(end - (eol - 1)), "\r\n\r\n", 4);
    if (blank == NULL) {
        return SUSPECT_E_INVAL;
    }
    p->cgi = r->out;
    p->cgi_len = r->out_len;
    p->status = (int)status;
    snprintf(r->reason, sizeof(r->reason), "%s", mw_status_reason(p->status));
    p->reason = r->reason;
    p->headers = eol + 1;
    p->headers_len = (size_t)(blank + 2 - (eol + 1));
    p->body = blank + 4;
    p->body_len = (size_t)(end - (blank + 4));
    return SUSPECT_OK;
}

suspect_rc_t inproc_response_build(suspect_guard_req_t *r)
{
    int wrc;

    if (r->built) {
        return SUSPECT_OK;
    }
    if (r->verdict < SUSPECT_GUARD_DENY) {
        return SUSPECT_E_INVAL;
    }
    r->out_len = 0;
    wrc = r->error_status != 0 ? mw_error_respond(&r->req, r->error_status)
                               : mw_guard_respond(r->guard, &r->req, &r->v);
    if (wrc != 0) {
        return wrc == -ENOMEM ? SUSPECT_E_NOMEM : SUSPECT_E_INVAL;
    }
    if (split(r) != SUSPECT_OK) {
        return SUSPECT_E_INVAL;
    }
    r->built = true;
    return SUSPECT_OK;
}

suspect_rc_t suspect_guard_req_response(suspect_guard_req_t *r,
                                        suspect_guard_response_t *out,
                                        suspect_err_t *err)
{
    suspect_rc_t rc;

    if (r == NULL || out == NULL) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "suspect_guard_req_response: NULL argument");
    }
    rc = inproc_response_build(r);
    if (rc == SUSPECT_E_INVAL && r->verdict < SUSPECT_GUARD_DENY) {
        return suspect_err_set(err, rc, NULL, 0,
                               "no response: the request may run (the "
                               "application answers it)");
    }
    if (rc != SUSPECT_OK) {
        return suspect_err_set(err, rc, NULL, 0, "cannot build the response%s",
                               rc == SUSPECT_E_NOMEM ? ": out of memory" : "");
    }
    *out = r->response;
    return SUSPECT_OK;
}
