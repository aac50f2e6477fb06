/*
 * upstream.h - the FastCGI client: forward an allowed request to php-cgi,
 * php-fpm or any FastCGI responder.
 *
 * A GET or HEAD takes a pooled connection (FCGI_KEEP_CONN) when there is
 * one; any other method, and every request with max_idle 0, connects
 * (with max_idle 0 the upstream closes each connection after its request).
 * A forward sends BEGIN_REQUEST, the request's variables as PARAMS (those
 * fwd_params.c lets through: CGI/1.1, headers, what the operator names;
 * SCRIPT_FILENAME overridden when configured, REDIRECT_STATUS=200 and a
 * CONTENT_LENGTH that matches the body sent), an empty PARAMS, the body as
 * STDIN records and an empty STDIN, while reading the upstream's records
 * in the same poll() loop (so a large body cannot deadlock against a large
 * response).  STDOUT is relayed to the request, STDERR goes to the log,
 * END_REQUEST ends it.  A body without CONTENT_LENGTH is buffered (up to
 * max_body, else 413) so one can be sent.
 *
 * Ends: a client that goes away while the app is still working (the web
 * server hangs up the request's connection or sends ABORT_REQUEST) and
 * the daemon's stop (mw_upstream_shutdown()) end the request at once,
 * not after the timeout; its upstream connection is closed, never pooled
 * (the app may still be writing into it).
 *
 * Restarts: php-cgi exits after PHP_FCGI_MAX_REQUESTS.  A pooled
 * connection the upstream closed while idle is noticed before it is used
 * and dropped.  One that fails before any response byte (the upstream
 * closed it just after the check) is dropped and the GET or HEAD sent once
 * more on a fresh connection (the body replayed from the buffer; bodies
 * larger than the replay buffer are not retried).  Other methods never
 * meet a closing connection, and are never sent twice: an upstream that
 * read a POST and closed without answering (a php-fpm child killed by
 * request_terminate_timeout) is a 502.
 */
#ifndef MW_UPSTREAM_H
#define MW_UPSTREAM_H

#include <stddef.h>
#include <stdint.h>

#include "response/error_page.h"
#include "suspect_error.h"

typedef struct mw_upstream_opts {
    const char *address;         /* unix:/path, tcp:host:port (copied) */
    const char *script_filename; /* SCRIPT_FILENAME to send, NULL = keep */
    const char *pass_params;     /* variables beyond CGI/1.1 and HTTP_*
                                    sent on (copied): blank-separated
                                    names, a trailing '*' a prefix; NULL =
                                    none (fwd_params.h) */
    unsigned connect_timeout_ms; /* 0 = 1000 */
    unsigned timeout_ms;         /* any read or write; 0 = 30000 */
    unsigned max_idle;           /* pooled idle connections, exact: 0 =
                                    none, a new connection per request */
    size_t max_body;             /* buffered body cap; 0 = 8 MiB */
} mw_upstream_opts_t;

typedef struct mw_upstream mw_upstream_t;

typedef struct mw_upstream_stats {
    uint64_t requests;
    uint64_t connects;
    uint64_t reused;    /* requests on a pooled connection */
    uint64_t stale;     /* pooled connections found closed, dropped */
    uint64_t retries;   /* resent after a pooled connection failed */
    uint64_t failures;  /* answered 502/504 */
    uint64_t abandoned; /* the client went away first */
} mw_upstream_stats_t;

suspect_rc_t mw_upstream_new(const mw_upstream_opts_t *opts,
                             mw_upstream_t **out, suspect_err_t *err);

/* Forwards req; as mw_cgi_run().  Thread-safe.  SUSPECT_OK when a
 * response was relayed, the client went away (a failed write, or the web
 * server hung up or aborted the request while the app was working: the
 * upstream connection is closed, never pooled), or a body without
 * CONTENT_LENGTH was over max_body (res->status 413); SUSPECT_E_IO or
 * SUSPECT_E_TIMEOUT when the upstream failed or the daemon stops
 * (res->status 502 or 504 while nothing was written yet, else 0 and
 * req->cut set; err says why); SUSPECT_E_NOMEM (500). */
suspect_rc_t mw_upstream_forward(mw_upstream_t *u, mw_req_t *req,
                                 mw_fwd_result_t *res, suspect_err_t *err);

void mw_upstream_stats(mw_upstream_t *u, mw_upstream_stats_t *out);

/* For the daemon's stop, once its grace period is over: every request
 * forwarded by any client, in flight or later, ends at once (504 while
 * nothing was written yet, else a cut response) and its connection is
 * closed, so no worker waits for a hung app up to the timeout.
 * Irreversible; async-signal-safe. */
void mw_upstream_shutdown(void);

/* Closes pooled connections and frees.  NULL is a no-op. */
void mw_upstream_free(mw_upstream_t *u);

#endif
