/*
 * record.c - what suspect-fcgi counts and logs about each decision: the
 * outcome of a request that met a route, added to the metrics and, as
 * <Log decisions> asks, written to the decision log.
 *
 * Outcomes (metrics.h): a verdict and the decision's degraded mode map to
 * one of allowed, denied_limit, denied_locked, fail_open, fail_closed,
 * fail_local_allowed, fail_local_denied, skipped (no identity, or the
 * action is not in the limits file: not counted), rejected (a bad
 * request for the route), denied_list (a value or address on a deny
 * list, refused before any count) and would_deny (a shadow route let
 * through what it would refuse; logged with the denials, with status 0:
 * it went on).
 * A request that met no route is none of these and is not recorded.
 *
 * A request counted as a trusted device (a device cookie for its
 * account) is counted in suspect_device_decisions_total and logged with
 * "device": true; its nonce is never logged.  One whose shared address
 * was counted as a pass (a solved challenge) likewise, in
 * suspect_pass_decisions_total and with "pass": true.
 *
 * The decision log's identity is the one that tripped (a denial), else
 * the request's first: its type, and the keyed hash of its value as the
 * key holds it (the part after "prefix Action:" and, in the typed format,
 * "Type:"), so one customer hashes the same across actions.  The hash key
 * is <Log identityKey>'s, else one drawn when the daemon started.
 *
 * Cost: the metrics are two relaxed atomic adds after a hash lookup of
 * the action; the decision log, when a line is due, one line built on the
 * stack and copied into the log's buffer, which a thread of its own
 * writes out (logfile.c).  bench/bench-metrics measures both alone,
 * bench/bench-fcgi on the request path.
 */
#include "record.h"

#include <string.h>

#include "log/log.h"
#include "request/lookup.h"
#include "suspect_failover.h"

/* The outcome of v. */
static mw_decision_outcome_t outcome_of(const mw_verdict_t *v)
{
    if (v->would_deny) { /* an ALLOW, or a PASS of a deny list */
        return MW_OUT_WOULD_DENY;
    }
    switch (v->kind) {
    case MW_VERDICT_ALLOW:
        return v->decision.degraded == SUSPECT_DEGRADED_OPEN ? MW_OUT_FAIL_OPEN
               : v->decision.degraded == SUSPECT_DEGRADED_LOCAL
                   ? MW_OUT_FAIL_LOCAL_ALLOWED
                   : MW_OUT_ALLOWED;
    case MW_VERDICT_DENY:
        return v->decision.degraded == SUSPECT_DEGRADED_LOCAL
                   ? MW_OUT_FAIL_LOCAL_DENIED
               : v->decision.locked ? MW_OUT_DENIED_LOCKED
                                    : MW_OUT_DENIED_LIMIT;
    case MW_VERDICT_UNAVAILABLE:
        return MW_OUT_FAIL_CLOSED;
    case MW_VERDICT_REJECT: /* the guard's reason for a listed value */
        return v->why != NULL && strcmp(v->why, "deny list") == 0
                   ? MW_OUT_DENIED_LIST
                   : MW_OUT_REJECTED;
    default:
        return MW_OUT_SKIPPED;
    }
}

/* Whether level writes a line for outcome o. */
static bool logged(suspect_conf_decisions_t level, mw_decision_outcome_t o)
{
    if (level == SUSPECT_DECISIONS_ALL) {
        return true;
    }
    return level == SUSPECT_DECISIONS_DENIALS &&
           (o == MW_OUT_DENIED_LIMIT || o == MW_OUT_DENIED_LOCKED ||
            o == MW_OUT_FAIL_CLOSED || o == MW_OUT_FAIL_LOCAL_DENIED ||
            o == MW_OUT_REJECTED || o == MW_OUT_WOULD_DENY ||
            o == MW_OUT_DENIED_LIST);
}

/* The value part of key k of action under conf c's key format. */
static const char *key_value(const suspect_conf_t *c, const char *action,
                             const char *type, const suspect_key_t *k,
                             size_t *len)
{
    size_t skip = (c->key_prefix != NULL ? strlen(c->key_prefix) : 0) +
                  strlen(action) + 1;

    if (c->key_format == SUSPECT_KEYS_TYPED && type != NULL) {
        skip += strlen(type) + 1;
    }
    if (skip > k->window_len) {
        skip = k->window_len;
    }
    *len = k->window_len - skip;
    return k->buf + skip;
}

/* Writes the decision log's line for a request that met a route. */
static void write_line(mw_dlog_t *dlog, const suspect_siphash_key_t *hkey,
                       const mw_record_t *r, mw_decision_outcome_t o)
{
    const mw_verdict_t *v = r->verdict;
    const suspect_conf_t *c = r->conf;
    mw_dlog_entry_t e;
    char hash[MW_DLOG_HASH_LEN], client[MW_ADDR_TEXT_MAX];
    const char *uri = mw_req_param(r->req, "REQUEST_URI", NULL);
    suspect_siphash_key_t own;
    int i = (v->kind == MW_VERDICT_DENY || v->would_deny) &&
                    v->decision.tripped >= 0
                ? v->decision.tripped
                : 0;

    memset(&e, 0, sizeof(e));
    e.time_ms = v->now_ms;
    e.action = v->route->action;
    /* the rule of a verdict that got as far as one (0 = the sliding log) */
    e.algorithm = suspect_algorithm_name(v->rule.algorithm);
    e.route_file = c->file;
    e.route_line = v->route->line;
    e.outcome = mw_decision_outcome_name(o);
    e.reason = v->why;
    e.status = v->would_deny ? 0 : v->status; /* it went on */
    if (r->res->nkeys > (size_t)i) {
        size_t len;
        const char *val = key_value(c, v->route->action, r->res->types[i],
                                    &r->res->keys[i], &len);

        if (c->identity_key != NULL) {
            mw_dlog_key(c->identity_key, &own);
            hkey = &own;
        }
        mw_dlog_hash(hkey, r->res->types[i], val, len, hash);
        e.identity_type = r->res->types[i];
        e.identity_hash = hash;
        e.device = r->res->device_trusted;
        e.pass = r->res->pass_trusted;
    }
    if (mw_guard_client(r->guard, r->req, client, sizeof(client))) {
        e.client = client;
    }
    e.method = mw_req_param(r->req, "REQUEST_METHOD", NULL);
    if (uri != NULL) {
        int n;

        e.path = mw_log_uri(uri, c->full_uri, &n);
        e.path_len = (size_t)n;
    }
    e.restriction_end_ms = v->decision.restriction_end_ms;
    e.calls = v->calls;
    e.store = r->store_name;
    e.latency_us = r->latency_ns / 1000;
    mw_dlog_write(dlog, &e);
}

void mw_record(mw_metrics_t *m, mw_dlog_t *dlog,
               const suspect_siphash_key_t *hkey, const mw_record_t *r)
{
    const mw_verdict_t *v = r->verdict;
    mw_decision_outcome_t o;

    if (v->route == NULL) {
        return;
    }
    o = outcome_of(v);
    mw_metrics_decision(m, mw_metrics_action(m, v->route->action), o,
                        v->kind == MW_VERDICT_DENY ||
                                v->kind == MW_VERDICT_ALLOW
                            ? v->decision.locks_created
                            : 0);
    if (v->store_full) {
        mw_metrics_store_full(m);
    }
    if (r->res->device_trusted &&
        (v->kind == MW_VERDICT_ALLOW || v->kind == MW_VERDICT_DENY)) {
        mw_metrics_device(m, v->kind == MW_VERDICT_ALLOW);
    }
    if (v->calls > 0) {
        mw_metrics_calls(m, v->calls);
    }
    if (r->res->pass_trusted &&
        (v->kind == MW_VERDICT_ALLOW || v->kind == MW_VERDICT_DENY)) {
        mw_metrics_pass(m, v->kind == MW_VERDICT_ALLOW);
    }
    if (dlog != NULL && logged(r->conf->decisions, o)) {
        write_line(dlog, hkey, r, o);
    }
}
