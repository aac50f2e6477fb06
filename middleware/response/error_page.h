/*
 * error_page.h - what the two forwarders (cgi.c: run a CGI program;
 * upstream.c: pass the request to a FastCGI server) report back.
 *
 * A forwarder streams the app's response to the request as it comes.  When
 * it fails before writing anything, it says which status the client should
 * get, and the caller answers with mw_error_respond(); after output has
 * started, a failure can only cut the response short.
 */
#ifndef MW_ERROR_PAGE_H
#define MW_ERROR_PAGE_H

#include <stdbool.h>

#include "request/request.h"

typedef struct mw_fwd_result {
    int status;      /* 0 = a response was relayed, else 403, 404, 413,
                        500, 502 or 504 for the caller to answer */
    bool timed_out;  /* the app ran past its timeout */
    int exit_status; /* CGI: the wait status; -1 when unknown */
    /* The app's response reached its end and all of it was relayed (a
     * route that counts by the response trusts nothing less). */
    bool complete;
} mw_fwd_result_t;

/* Writes a short plain error response with status (no body details). */
int mw_error_respond(mw_req_t *req, int status);

/* The end of a forward that res reports: the response no longer
 * watched, a held header block let go as it came (mw_req_hold()), or
 * dropped when nothing went out and res->status says an error page takes
 * its place, which is then written. */
void mw_fwd_end(mw_req_t *req, const mw_fwd_result_t *res);

#endif
