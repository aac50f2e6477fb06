/*
 * guard_watch.c - an allowed attempt of a route that counts by the
 * response, from the forward to the settlement (guard.h): the response
 * watched as it is relayed, its head held on a route that binds device
 * cookies (so that a success gets one, device.c), then what it said
 * settles the reservation the decision made.  suspect-fcgi (the daemon's
 * forwarders) and suspect-cgi (the program run as its child) both go
 * through here, so they judge and settle alike.
 *
 * An attempt counts unless its response was whole and said it
 * succeeded: cut, unread (no memory for the watcher), undecided or
 * failed, the reservation becomes a hit.  A settlement the store refuses is
 * logged; the reservation then becomes a hit when it ends.
 */
#include "guard_internal.h"

#include <stdlib.h>

#include "alloc.h"
#include "clock.h"
#include "log/log.h"
#include "response/outcome.h"

/* The device cookie of an attempt whose response head says it succeeded
 * (an mw_hold_fn): the routes that bind one judge by the head alone. */
static size_t device_lines(void *arg, char *buf, size_t size)
{
    const mw_settling_t *s = arg;

    if (mw_watch_outcome(s->w, true, NULL) != MW_OUTCOME_SUCCEEDED) {
        return 0;
    }
    return mw_guard_device_cookie(s->g, s->res, s->req, wall_ms(), buf, size);
}

void mw_guard_watch_start(mw_settling_t *s, const mw_guard_t *g,
                          const mw_resolution_t *res, const mw_verdict_t *v,
                          mw_req_t *req)
{
    s->g = g;
    s->res = res;
    s->v = v;
    s->req = req;
    s->w = suspect_malloc(sizeof(*s->w));
    req->plain_body = mw_outcome_reads_body(v->route);
    if (s->w != NULL &&
        !mw_watch_init(
            s->w, v->route,
            req->plain_body ? mw_req_param(req, "REQUEST_METHOD", NULL) : NULL,
            mw_req_param(req, "HTTP_HOST", NULL),
            mw_req_param(req, "REQUEST_URI", NULL))) {
        free(s->w);
        s->w = NULL;
    }
    if (s->w != NULL) {
        req->watch = mw_watch_feed;
        req->watch_arg = s->w;
        if (res->device) {
            (void)mw_req_hold(req, device_lines, s); /* none: no cookie */
        }
    }
}

void mw_guard_watch_settle(mw_settling_t *s, mw_req_t *req,
                           suspect_store_t *store, bool complete)
{
    const char *action = s->v->route->action, *why = NULL;
    mw_outcome_t o = MW_OUTCOME_UNKNOWN;
    suspect_err_t err;

    req->watch = NULL;
    req->watch_arg = NULL;
    (void)mw_req_hold_end(req, true);
    if (s->w != NULL) {
        o = mw_watch_outcome(s->w, complete, &why);
        mw_watch_free(s->w);
        free(s->w);
        s->w = NULL;
    }
    suspect_err_clear(&err);
    if (mw_guard_settle(store, s->res, s->v,
                        !complete || o != MW_OUTCOME_SUCCEEDED, wall_ms(),
                        &err) != SUSPECT_OK) {
        char msg[600];

        suspect_err_format(&err, msg, sizeof(msg));
        mw_log(MW_LOG_WARNING,
               "settle %s: %s; the attempt counts when its reservation ends",
               action, msg);
    }
    if (complete && why != NULL) {
        mw_log(MW_LOG_NOTICE, "settle %s: response not judged (%s): counted",
               action, why);
    } else if (mw_log_enabled(MW_LOG_DEBUG)) {
        mw_log(MW_LOG_DEBUG, "settle %s: response %s%s", action,
               mw_outcome_name(o), complete ? "" : " (cut: counted)");
    }
}
