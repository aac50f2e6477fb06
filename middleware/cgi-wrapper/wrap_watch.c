/*
 * wrap_watch.c - suspect-cgi on a route that counts by the response
 * (<Failure>, <Success>): the program runs as suspect-cgi's child rather
 * in its place, so that its answer can be read as it is relayed and the
 * attempt counted only when it failed, as suspect-fcgi counts it; a
 * sign-in that succeeds on a route that binds device cookies gets one.
 *
 * The program is run as suspect-fcgi runs a CGI program (forward/cgi.c):
 * the body (what the decision read of it first) on its stdin, its stdout
 * relayed to suspect-cgi's, both at once; stderr lines to the log; the
 * whole process group killed at <Cgi timeout>.  Its environment is then
 * the CGI/1.1 variables, the request's headers and <Cgi passEnv>, not
 * the whole environment the web server gave suspect-cgi (the exec path
 * passes that on unchanged).  The store stays open until the reservation is
 * settled.  Cost: a fork and the relay over the exec; BENCHMARKS.md.
 */
#include "wrap.h"

#include <string.h>

#include "forward/cgi.h"
#include "log/log.h"
#include "response/error_page.h"
#include "suspect_failover.h"

void cgi_run_watched(cgi_req_t *r, const mw_resolution_t *res,
                     const mw_verdict_t *v)
{
    const suspect_conf_t *c = r->setup.conf;
    mw_cgi_opts_t o = {NULL, r->script, c->cgi_timeout_ms, c->cgi_pass_env};
    mw_fwd_result_t fres;
    mw_settling_t s;
    suspect_err_t err;
    suspect_rc_t rc;

    memset(&fres, 0, sizeof(fres));
    suspect_err_clear(&err);
    mw_guard_watch_start(&s, r->setup.guard, res, v, r->req);
    rc = mw_cgi_run(&o, r->req, &fres, &err);
    if (rc != SUSPECT_OK) {
        char msg[600];

        suspect_err_format(&err, msg, sizeof(msg));
        mw_log(MW_LOG_ERROR, "program %s: %s", r->script, msg);
    }
    mw_fwd_end(r->req, &fres);
    mw_guard_watch_settle(&s, r->req, r->setup.store,
                          rc == SUSPECT_OK && fres.complete);
    (void)mw_req_flush(r->req);
}
