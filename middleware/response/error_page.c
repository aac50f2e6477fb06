/*
 * error_page.c - the short response a forwarder's caller sends when the app
 * could not answer (403, 404, 413, 500, 502, 504...).
 *
 * The response is CGI output: a Status line, a plain-text type,
 * Cache-Control: no-store (an error of the moment must not be cached) and
 * a one-line body with the status and its reason.  It tells nothing about
 * the cause: details go to the daemon's log, not to the client.
 */
#include "error_page.h"

#include <errno.h>
#include <stdio.h>

#include "deny.h"

int mw_error_respond(mw_req_t *req, int status)
{
    char buf[256];
    const char *reason;
    int n;

    if (status < 100 || status > 599) {
        status = 500;
    }
    reason = mw_status_reason(status);
    n = snprintf(buf, sizeof(buf),
                 "Status: %d %s\r\n"
                 "Content-Type: text/plain; charset=utf-8\r\n"
                 "Cache-Control: no-store\r\n"
                 "\r\n"
                 "%d %s\n",
                 status, reason, status, reason);
    if (n < 0 || (size_t)n >= sizeof(buf)) {
        return -EINVAL; /* cannot happen: reasons are short */
    }
    return mw_req_write(req, buf, (size_t)n);
}

void mw_fwd_end(mw_req_t *req, const mw_fwd_result_t *res)
{
    req->watch = NULL; /* an error page is ours, not the app's */
    (void)mw_req_hold_end(req, res->status == 0 || req->output_started);
    if (res->status != 0 && !req->output_started) {
        mw_error_respond(req, res->status);
    }
}
