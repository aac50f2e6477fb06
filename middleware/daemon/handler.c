/*
 * handler.c - what suspect-fcgi does with each request: decide it with the
 * current guard and limits, then answer the denial (429, 503, 4xx), answer
 * an allowed request itself (an authorizer's or nginx auth_request's 200),
 * or forward it to the application (upstream FastCGI or CGI).
 *
 * Each request takes its own references to the guard and to the limits
 * snapshot (mw_runtime_acquire()) and drops them when it ends, so a reload
 * while it runs changes nothing under it.  A request whose decision fails
 * is refused with an error page (503 when out of memory, else 400); a
 * forwarding error is logged and answered with the status the forwarder
 * chose, unless the application's output had already started.
 *
 * A route that counts by the response (<Failure>, <Success>) holds a
 * reservation in flight from the decision on (mw_guard_finish()); the response
 * is watched as it is relayed (outcome.h) and the reservation settled when the
 * forwarder returns: dropped only when the application's whole response
 * said the attempt succeeded; a failure, a response that never came or
 * was cut, a client gone before the end all count.
 *
 * A request for <Challenge path> is a solution of a challenge page,
 * answered here (challenge.c); a denial that the shared address alone
 * caused, for a browser, is answered with that page.
 *
 * Which requests the FastCGI server's front thread may answer itself
 * (mw_handler_answers_in_front()): those that cannot block anywhere on
 * this path.  The memory store never waits (a shard's mutex held for a
 * table operation); LMDB may wait for another process's write
 * transaction and for the disk, Redis for the network, so with either
 * every request goes to a worker, and a dead Redis never stalls the
 * thread that accepts and reads.  Forwarding waits for the application,
 * so only the roles and modes that forward nothing qualify: an
 * authorizer's request (it has no body), and any request in the two
 * deciding modes (which read no body): the front answers them as soon as
 * their variables are in.  Both are restart-only settings, read once.
 *
 * Each request is counted in the metrics (in flight, the store's and the
 * application's time, forwarding errors) and its decision recorded
 * (record.c: the outcome by action, and the decision log).
 */
#include "handler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "forward/cgi.h"
#include "forward/upstream.h"
#include "log/log.h"
#include "alloc.h"
#include "response/error_page.h"
#include "response/outcome.h"
#include "record.h"
#include "runtime.h"

/* The answer to an allowed request that is not forwarded: an authorizer's
 * or nginx auth_request's 200 (with the shadow header of a would-deny,
 * req->prelude). */
static void allow_respond(mw_req_t *req)
{
    static const char ok[] = "Status: 200 OK\r\nContent-Length: 0\r\n\r\n";

    mw_req_write(req, ok, sizeof(ok) - 1);
}

/* The line of a body refused on its way to the application (the
 * multipart fields past formMax), as mw_guard_log_verdict() writes a refusal.
 */
static void log_refused(const mw_req_t *req, const char *action)
{
    const char *uri;
    int len;

    if (!mw_log_enabled(MW_LOG_INFO)) {
        return;
    }
    uri = mw_log_uri(mw_req_param(req, "REQUEST_URI", NULL), 0, &len);
    mw_log(MW_LOG_INFO, "refuse %.*s action=%s status=%d (%s)", len, uri,
           action != NULL ? action : "-", req->refused,
           req->refused_why != NULL ? req->refused_why : "");
}

/* Forwards req (counted for action, NULL: none), timed for the metrics;
 * true when the application's whole response was relayed. */
static bool forward(mw_runtime_t *rt, const suspect_conf_t *c, mw_req_t *req,
                    const char *action)
{
    mw_upstream_t *upstream = mw_runtime_upstream(rt);
    int64_t t0 = mono_ns();
    mw_fwd_result_t res;
    suspect_err_t err;
    suspect_rc_t rc;

    memset(&res, 0, sizeof(res));
    suspect_err_clear(&err);
    if (upstream != NULL) {
        rc = mw_upstream_forward(upstream, req, &res, &err);
    } else {
        mw_cgi_opts_t o;

        memset(&o, 0, sizeof(o));
        o.root = c->cgi_root;
        o.program = c->cgi_program;
        o.timeout_ms = c->cgi_timeout_ms;
        o.pass_env = c->cgi_pass_env;
        rc = mw_cgi_run(&o, req, &res, &err);
    }
    mw_metrics_forward(mw_runtime_metrics(rt),
                       upstream != NULL ? MW_TARGET_FASTCGI : MW_TARGET_CGI,
                       mono_ns() - t0,
                       rc != SUSPECT_OK || res.status >= 500 || req->cut);
    if (rc != SUSPECT_OK) {
        char msg[600];

        suspect_err_format(&err, msg, sizeof(msg));
        mw_log(MW_LOG_ERROR, "forward: %s", msg);
    }
    if (req->refused != 0) {
        log_refused(req, action);
    }
    mw_fwd_end(req, &res);
    return rc == SUSPECT_OK && res.complete;
}

/* Forwards a request that holds a reservation, watching the response,
 * and settles the reservation by what it said (guard_watch.c). */
static void forward_settled(mw_runtime_t *rt, const mw_guard_t *g,
                            const suspect_conf_t *c, mw_req_t *req,
                            const mw_resolution_t *res, const mw_verdict_t *v)
{
    mw_settling_t s;
    bool complete;

    mw_guard_watch_start(&s, g, res, v, req);
    complete = forward(rt, c, req, v->route->action);
    mw_guard_watch_settle(&s, req, mw_runtime_store(rt), complete);
}

/* Decides req (mw_guard_resolve(), then the store when there are keys),
 * timed, and records the outcome.  SUSPECT_OK with *res and *v, or the
 * guard's failure. */
static suspect_rc_t decide(mw_runtime_t *rt, const mw_guard_t *g,
                           const suspect_limits_t *l, mw_req_t *req,
                           mw_resolution_t *res, mw_verdict_t *v,
                           suspect_err_t *err)
{
    mw_metrics_t *m = mw_runtime_metrics(rt);
    mw_record_t r;
    int64_t t0 = mono_ns(), t1;
    suspect_rc_t rc = mw_guard_resolve(g, l, req, wall_ms(), res, err);

    if (rc != SUSPECT_OK) {
        return rc;
    }
    *v = res->verdict;
    if (res->nkeys > 0) {
        t1 = mono_ns();
        mw_guard_finish(mw_runtime_store(rt), res, v);
        mw_metrics_store_time(m, mono_ns() - t1);
    }
    r.conf = mw_guard_conf(g);
    r.guard = g;
    r.req = req;
    r.res = res;
    r.verdict = v;
    r.store_name = mw_metrics_store_name(m);
    r.latency_ns = mono_ns() - t0;
    mw_record(m, mw_runtime_dlog(rt), mw_runtime_hash_key(rt), &r);
    return SUSPECT_OK;
}

/* A solution posted to <Challenge path>: answered here, never forwarded;
 * one log line says what became of it. */
static void challenge_answer(mw_runtime_t *rt, const mw_guard_t *g,
                             mw_req_t *req)
{
    mw_challenge_report_t rep;

    mw_guard_challenge_answer(g, req, mw_runtime_store(rt), wall_ms(), &rep);
    mw_metrics_challenge(mw_runtime_metrics(rt), rep.why != NULL
                                                     ? MW_CHALLENGE_REFUSED
                                                     : MW_CHALLENGE_SOLVED);
    if (rep.why != NULL) {
        mw_log(MW_LOG_INFO, "challenge refused (%s)", rep.why);
    } else {
        mw_log(MW_LOG_INFO,
               "challenge solved: pass given (%llu hashes, %lld ms as the "
               "page says)",
               (unsigned long long)rep.tries, (long long)rep.solve_ms);
    }
}

bool mw_handler_answers_in_front(int role, void *arg)
{
    const suspect_conf_t *c = mw_runtime_conf(arg);

    return c->store == SUSPECT_STORE_MEMORY &&
           (role == MW_ROLE_AUTHORIZER || c->mode != SUSPECT_MODE_FORWARD);
}

void mw_handler_request(mw_req_t *req, void *arg)
{
    mw_runtime_t *rt = arg;
    mw_metrics_t *m = mw_runtime_metrics(rt);
    mw_guard_t *g;
    suspect_limits_t *l;
    const suspect_conf_t *c;
    mw_resolution_t res; /* its keys settle a reservation after the forward */
    mw_verdict_t v;
    suspect_err_t err;

    mw_resolution_init(&res);
    mw_metrics_in_flight(m, 1);
    mw_runtime_acquire(rt, &g, &l);
    c = mw_guard_conf(g);
    suspect_err_clear(&err);
    if (mw_guard_challenge_path(g, req)) {
        challenge_answer(rt, g, req);
    } else if (decide(rt, g, l, req, &res, &v, &err) != SUSPECT_OK) {
        char msg[600];

        suspect_err_format(&err, msg, sizeof(msg));
        mw_log(MW_LOG_WARNING, "request refused: %s", msg);
        mw_error_respond(req, err.code == SUSPECT_E_NOMEM ? 503 : 400);
    } else if (v.kind == MW_VERDICT_DENY || v.kind == MW_VERDICT_REJECT ||
               v.kind == MW_VERDICT_UNAVAILABLE) {
        mw_guard_log_verdict(g, req, &v);
        if (v.kind == MW_VERDICT_DENY &&
            mw_guard_challenge_due(g, &res, &v, req, mw_runtime_store(rt))) {
            mw_metrics_challenge(m, MW_CHALLENGE_SERVED);
            mw_guard_challenge_respond(g, req, &v);
        } else {
            mw_guard_respond(g, req, &v);
        }
    } else if (v.would_deny) {
        char line[SUSPECT_ACTION_MAX + 128];

        mw_guard_log_verdict(g, req, &v);
        req->prelude_len = mw_guard_shadow_line(g, &v, line, sizeof(line));
        req->prelude = req->prelude_len > 0 ? line : NULL;
        if (req->role == MW_ROLE_AUTHORIZER ||
            c->mode != SUSPECT_MODE_FORWARD) {
            allow_respond(req);
        } else {
            /* nothing was held: nothing counts */
            (void)forward(rt, c, req, v.route->action);
        }
        req->prelude = NULL;
    } else if (req->role == MW_ROLE_AUTHORIZER ||
               c->mode != SUSPECT_MODE_FORWARD) {
        allow_respond(req);
    } else if (v.ticket.id != 0) {
        forward_settled(rt, g, c, req, &res, &v);
    } else {
        (void)forward(rt, c, req, v.route != NULL ? v.route->action : NULL);
    }
    mw_resolution_release(&res);
    suspect_limits_unref(l);
    mw_guard_unref(g);
    mw_metrics_in_flight(m, -1);
}
