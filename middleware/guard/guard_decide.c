/*
 * guard_decide.c - from a request to a verdict (mw_guard_decide).
 *
 * In this order:
 *  1. the normalised paths (path.c: REQUEST_URI's, SCRIPT_NAME +
 *     PATH_INFO, DOCUMENT_URI); an unusable one is a REJECT (400), none
 *     at all a REJECT (500: the web server sends no path);
 *  2. the first matching route (route.c), whichever path matched; none:
 *     PASS.  A parameter condition that needs a urlencoded body longer
 *     than form_max is a REJECT (413, "form body over formMax"): the
 *     route cannot be told from the body's head; a multipart body
 *     guard_multipart.c refuses is a REJECT with its status and why
 *     (415 a shape parsers read differently, 413 a counted field past
 *     form_max, 400 a file named as a counted field); a request that meets
 *     two routes' conditions on one parameter with different values is a
 *     REJECT (400, "ambiguous route"): the app's parser picks the action;
 *     a query string, urlencoded body or Cookie header holding "%uXXXX"
 *     (CGI.pm alone decodes it) that a condition reads is a REJECT (400,
 *     "%u escape in ..."), and so in step 4 for one an identity reads;
 *  3. the route's rule in the limits snapshot; none: REJECT (500, "action
 *     not in limits file"), which the loaders never let happen (a pair of
 *     files with such a route is refused), and no body is read for it;
 *  4. the identities' values (identity.c), each under every reading
 *     applications give it (a key each); a missing or empty one is
 *     handled as the route says: skip it (PASS when none is left), PASS,
 *     or REJECT (400); more readings than one decision takes is a REJECT
 *     (400); a query or form parameter repeated with different
 *     values is a REJECT (400, "ambiguous parameter") whatever the route
 *     says, since the app may read another copy than the one counted; a
 *     form source in an urlencoded body longer than form_max is a REJECT
 *     (413), since the copy the app reads may lie past the part read, and
 *     in a refused multipart body a REJECT as in step 2.  A route with
 *     xmlrpc: or json: sources reads its body of calls first
 *     (guard_calls.c; refused: a REJECT with its status and why) and
 *     reads the identities once per call: a REJECT of one call rejects
 *     the request, a PASS of one leaves that call uncounted;
 *  5. one key per identity; two identities with the same key (the same
 *     value from two sources) are decided once; the account identity of a
 *     route with device cookies, when the request carries a valid one for
 *     it, is keyed as that device (device.c); a shared identity, when
 *     the request carries a valid pass for its address, is keyed as that
 *     pass (challenge.c);
 *  6. one suspect_store_decide() for all keys (for a body of several
 *     calls, one per counted call, in turn: a denial of any denies the
 *     request, answered with the restriction that ends last), or for a
 *     route that counts by the response (<Failure>, <Success>) one
 *     suspect_store_reserve(): an allowed request then holds a reservation in
 *     flight, which the caller settles with mw_guard_settle() once the
 *     response is known.  Such a route refuses a request whose response
 *     it will not see (an authorizer's: REJECT 500).  A store error (a
 *     bare store) fails closed: UNAVAILABLE (503); a failover store
 *     reports its closed mode as SUSPECT_DEGRADED_CLOSED, also
 *     UNAVAILABLE.
 * A route in shadow mode (shadow="yes", or its <Action>'s) decides and
 * counts exactly as enforced, but a DENY or UNAVAILABLE becomes an ALLOW
 * marked would_deny: the caller lets it through and logs it.  A route's
 * failMode travels to the store in the rule (suspect_rule_t.fail_mode),
 * and so does the route's cost= (suspect_rule_t.cost).
 * mw_guard_resolve() is steps 1 to 5 (an mw_resolution_t: the verdict so
 * far and the keys); mw_guard_finish() is step 6; mw_guard_decide() is
 * the two, so a simulated request resolves exactly as a real one.
 *
 * Cost per request: a few variable lookups, one pass over the path, the
 * routes tried in order, the key builds and the store; no allocation
 * except the form prefetch and values or paths longer than the stack
 * buffers (GUARD_ARENA_STACK, GUARD_PATH_STACK, shared by the paths).  The
 * stack use is about 21 KiB (arena, paths, eight keys).
 *
 * Invariants: the call's memory (guard_call_t) is freed before returning;
 * a verdict points only into the guard's conf (route, rule.action) and
 * static strings (why), never into the request or the limits snapshot;
 * why never holds a value.
 */
#include "guard_internal.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "response/deny.h"
#include "suspect_failover.h"

/* Fills v as a verdict without a store decision. */
static void verdict(mw_verdict_t *v, mw_verdict_kind_t kind, int status,
                    const char *why)
{
    v->kind = kind;
    v->status = status;
    v->why = why;
}

/* Resolves the identities of r into ids (their readings); *n of them
 * are kept.  Sets v and returns SUSPECT_E_NOTFOUND when the route's
 * missing policy, an ambiguous parameter, too many readings or a body
 * over form_max ends the decision; SUSPECT_E_IO, SUSPECT_E_NOMEM from the
 * body. */
static suspect_rc_t resolve_all(guard_call_t *c, const guard_route_t *r,
                                suspect_identity_t *ids, size_t *from,
                                size_t *n, mw_verdict_t *v)
{
    *n = 0;
    for (size_t i = 0; i < r->nids; i++) {
        size_t k = 0;
        suspect_rc_t rc = guard_identity_resolve(
            c, &r->ids[i], &ids[*n], SUSPECT_MAX_IDENTITIES - *n, &k);

        if (rc == SUSPECT_OK) {
            for (size_t j = 0; j < k; j++) {
                from[*n + j] = i;
            }
            *n += k;
            continue;
        }
        if (rc == SUSPECT_E_INVAL) {
            verdict(v, MW_VERDICT_REJECT, 400, "ambiguous parameter");
            return SUSPECT_E_NOTFOUND;
        }
        if (rc == SUSPECT_E_RANGE) {
            verdict(v, MW_VERDICT_REJECT, 400,
                    "identity has too many readings");
            return SUSPECT_E_NOTFOUND;
        }
        if (rc == SUSPECT_E_FULL || rc == SUSPECT_E_PARSE) {
            verdict(v, MW_VERDICT_REJECT, c->refuse_status, c->refuse_why);
            return SUSPECT_E_NOTFOUND;
        }
        if (rc != SUSPECT_E_NOTFOUND) {
            return rc;
        }
        if (r->conf->missing == SUSPECT_MISSING_REJECT) {
            verdict(v, MW_VERDICT_REJECT, 400, "identity missing: rejected");
            return SUSPECT_E_NOTFOUND;
        }
        if (r->conf->missing == SUSPECT_MISSING_ALLOW) {
            verdict(v, MW_VERDICT_PASS, 0, "identity missing: allowed");
            return SUSPECT_E_NOTFOUND;
        }
    }
    if (*n == 0) {
        verdict(v, MW_VERDICT_PASS, 0, "no identity");
        return SUSPECT_E_NOTFOUND;
    }
    return SUSPECT_OK;
}

/* Whether list l holds the request's client address. */
static bool address_listed(guard_call_t *c, const guard_list_t *l)
{
    const mw_addr_t *a;

    return l != NULL && guard_call_client_addr(c, &a) == SUSPECT_OK &&
           guard_list_addr(l, a);
}

/* A refusal by deny list l: before anything is counted; a route in shadow
 * mode lets it through uncounted, marked would_deny. */
static void deny_listed(mw_verdict_t *v, const guard_list_t *l)
{
    if (v->shadow) {
        verdict(v, MW_VERDICT_PASS, guard_list_status(l), "deny list");
        v->would_deny = true;
        return;
    }
    verdict(v, MW_VERDICT_REJECT, guard_list_status(l), "deny list");
}

/* Whether identity gi counts the client address (a client-ip source). */
static bool counts_address(const guard_identity_t *gi)
{
    for (size_t k = 0; k < gi->nsources; k++) {
        if (gi->src[k].kind == SUSPECT_SRC_CLIENT_IP) {
            return true;
        }
    }
    return false;
}

/*
 * The allow and deny lists on the route's resolved identities: a value on
 * a deny list (the route's, or the one for every request) refuses the
 * request; a value on an allow list, or an identity counting the client
 * address when the address is on one, is left out.  SUSPECT_E_NOTFOUND
 * with v set when the request is refused, or when no identity is left
 * (PASS: never counted).
 */
static suspect_rc_t apply_lists(guard_call_t *c, const guard_route_t *r,
                                suspect_identity_t *ids, size_t *from,
                                size_t *n, mw_verdict_t *v)
{
    const mw_guard_t *g = c->g;
    int addr_allowed = -1; /* not looked at yet */
    size_t kept = 0;

    if (r->allow == NULL && r->deny == NULL && g->allow == NULL &&
        g->deny == NULL) {
        return SUSPECT_OK;
    }
    for (size_t i = 0; i < *n; i++) {
        const guard_list_t *d = guard_list_identity(r->deny, &ids[i]) ? r->deny
                                : guard_list_identity(g->deny, &ids[i])
                                    ? g->deny
                                    : NULL;
        bool allowed;

        if (d != NULL) {
            deny_listed(v, d);
            return SUSPECT_E_NOTFOUND;
        }
        allowed = guard_list_identity(r->allow, &ids[i]) ||
                  guard_list_identity(g->allow, &ids[i]);
        if (!allowed && counts_address(&r->ids[from[i]])) {
            if (addr_allowed < 0) {
                addr_allowed =
                    address_listed(c, r->allow) || address_listed(c, g->allow);
            }
            allowed = addr_allowed != 0;
        }
        if (!allowed) {
            from[kept] = from[i];
            ids[kept++] = ids[i];
        }
    }
    *n = kept;
    if (kept == 0) {
        verdict(v, MW_VERDICT_PASS, 0, "allow list");
        return SUSPECT_E_NOTFOUND;
    }
    return SUSPECT_OK;
}

/* Builds the keys of ids[0..n) into keys[0..*nkeys), the same key only
 * once; shared[] and types[] (when not NULL) say each key's identity. */
static suspect_rc_t build_keys(const mw_guard_t *g, const char *action,
                               const suspect_identity_t *ids, size_t n,
                               const guard_route_t *r, const size_t *from,
                               suspect_key_t *keys, size_t *nkeys, bool *shared,
                               const char **types, suspect_err_t *err)
{
    *nkeys = 0;
    for (size_t i = 0; i < n; i++) {
        suspect_key_t *k = &keys[*nkeys];
        bool dup = false;
        suspect_rc_t rc =
            suspect_key_build(&g->keyopts, action, &ids[i], k, err);
        if (rc != SUSPECT_OK) {
            return rc;
        }
        for (size_t j = 0; j < *nkeys && !dup; j++) {
            dup = keys[j].window_len == k->window_len &&
                  memcmp(keys[j].buf, k->buf, k->window_len) == 0;
        }
        if (!dup && shared != NULL) {
            shared[*nkeys] = r->ids[from[i]].conf->shared;
            types[*nkeys] = ids[i].type;
        }
        *nkeys += dup ? 0 : 1;
    }
    return SUSPECT_OK;
}

/* Appends the keys of one more counted call, keys[0..n), to res (room
 * doubled as it fills: each key copied about twice in all). */
static suspect_rc_t keep_more(mw_resolution_t *res, const suspect_key_t *keys,
                              size_t n)
{
    size_t *counts;

    if (res->more_used + n > res->more_cap) {
        size_t cap = res->more_cap * 2 > res->more_used + n
                         ? res->more_cap * 2
                         : res->more_used + n + SUSPECT_MAX_IDENTITIES;
        suspect_key_t *all =
            suspect_realloc(res->more_keys, cap * sizeof(*all));

        if (all == NULL) {
            return SUSPECT_E_NOMEM;
        }
        res->more_keys = all;
        res->more_cap = cap;
    }
    counts =
        suspect_realloc(res->more_nkeys, (res->nmore + 1) * sizeof(*counts));
    if (counts == NULL) {
        return SUSPECT_E_NOMEM;
    }
    res->more_nkeys = counts;
    memcpy(res->more_keys + res->more_used, keys, n * sizeof(*keys));
    res->more_used += n;
    counts[res->nmore++] = n;
    return SUSPECT_OK;
}

void mw_resolution_release(mw_resolution_t *res)
{
    if (res == NULL) {
        return;
    }
    free(res->more_keys);
    free(res->more_nkeys);
    mw_resolution_init(res);
}

/* The store's decision on keys (with ttl_ms > 0 its reservation), as a
 * verdict. */
static void store_verdict(suspect_store_t *store, const suspect_key_t *keys,
                          size_t nkeys, int64_t ttl_ms, mw_verdict_t *v)
{
    suspect_rc_t rc =
        ttl_ms > 0
            ? suspect_store_reserve(store, &v->rule, keys, nkeys, v->now_ms,
                                    ttl_ms, &v->decision, &v->ticket, NULL)
            : suspect_store_decide(store, &v->rule, keys, nkeys, v->now_ms,
                                   &v->decision, NULL);

    if (rc != SUSPECT_OK) {
        v->store_full = rc == SUSPECT_E_FULL;
        verdict(v, MW_VERDICT_UNAVAILABLE, 503,
                rc == SUSPECT_E_FULL ? "store full" : "store failed");
    } else if (v->decision.degraded == SUSPECT_DEGRADED_CLOSED) {
        verdict(v, MW_VERDICT_UNAVAILABLE, 503, "store unavailable");
    } else if (v->decision.allowed) {
        verdict(v, MW_VERDICT_ALLOW, 0,
                v->decision.degraded != SUSPECT_DEGRADED_NONE
                    ? "allowed (store degraded)"
                    : "allowed");
    } else {
        verdict(v, MW_VERDICT_DENY,
                v->route->status != 0 ? v->route->status : MW_DENY_STATUS,
                v->decision.locked ? "locked"
                : v->decision.busy ? "attempts in flight"
                                   : "over the limit");
    }
}

/* How long a reservation of a route that counts by the response lives: the
 * forwarding timeout, and 10 s for the response's last bytes and the
 * settlement; past it the reservation is a hit. */
static int64_t reserve_ttl_ms(const suspect_conf_t *conf)
{
    unsigned t =
        conf->has_upstream ? conf->upstream_timeout_ms : conf->cgi_timeout_ms;

    return (int64_t)(t != 0 ? t : 30000) + 10000;
}

/* Steps 4 and 5 for call c->cur of the request (the only one of a
 * request that carries no body of calls): its keys into res, the first
 * counted call's in res->keys (first: none counted yet), the others'
 * kept after them; *kept whether it is counted.  v says when it is not
 * (PASS: that call is not counted; REJECT: the whole request). */
static suspect_rc_t resolve_call(guard_call_t *c, const guard_route_t *r,
                                 const char *action, mw_resolution_t *res,
                                 bool first, bool *kept, suspect_err_t *err)
{
    suspect_identity_t ids[SUSPECT_MAX_IDENTITIES];
    size_t from[SUSPECT_MAX_IDENTITIES];
    suspect_key_t keys[SUSPECT_MAX_IDENTITIES];
    char device_part[GUARD_DEVICE_PART];
    char pass_part[GUARD_PASS_PART];
    mw_verdict_t *v = &res->verdict;
    size_t n = 0, nkeys = 0;
    suspect_rc_t rc = guard_calls_known(c, r);

    *kept = false;
    if (rc == SUSPECT_E_PARSE) {
        verdict(v, MW_VERDICT_REJECT, c->refuse_status, c->refuse_why);
        return SUSPECT_OK;
    }
    if (rc == SUSPECT_E_NOTFOUND) {
        verdict(v, MW_VERDICT_PASS, 0, "method passed uncounted");
        return SUSPECT_OK;
    }
    rc = resolve_all(c, r, ids, from, &n, v);
    if (rc == SUSPECT_OK) {
        rc = apply_lists(c, r, ids, from, &n, v);
    }
    if (rc == SUSPECT_E_NOTFOUND) {
        return SUSPECT_OK;
    }
    if (rc == SUSPECT_OK) {
        if (first) {
            guard_device_apply(c, r, ids, from, n, res, device_part);
        }
        guard_pass_apply(c, r, ids, from, n, res, pass_part);
    }
    if (rc == SUSPECT_OK && first) {
        rc = build_keys(c->g, action, ids, n, r, from, res->keys, &res->nkeys,
                        res->shared, res->types, err);
    } else if (rc == SUSPECT_OK) {
        rc = build_keys(c->g, action, ids, n, r, from, keys, &nkeys, NULL, NULL,
                        err);
        rc = rc == SUSPECT_OK ? keep_more(res, keys, nkeys) : rc;
    }
    *kept = rc == SUSPECT_OK;
    return rc;
}

/* Each call of the request in turn (one when it carries no body of
 * calls): a REJECT of one rejects the request; PASS of every one passes
 * it; else the counted calls' keys are in res. */
static suspect_rc_t resolve_calls(guard_call_t *c, const guard_route_t *r,
                                  const char *action, mw_resolution_t *res,
                                  suspect_err_t *err)
{
    mw_verdict_t *v = &res->verdict, before = *v;
    size_t n = c->ncalls > 1 ? c->ncalls : 1, counted = 0;

    for (size_t i = 0; i < n; i++) {
        bool kept = false;
        suspect_rc_t rc;

        c->cur = i;
        rc = resolve_call(c, r, action, res, counted == 0, &kept, err);
        if (rc != SUSPECT_OK || v->kind == MW_VERDICT_REJECT) {
            res->nkeys = 0;
            mw_resolution_release(res);
            return rc;
        }
        counted += kept ? 1 : 0;
    }
    if (counted > 0) {
        /* the calls passed uncounted do not make the request pass */
        v->kind = before.kind;
        v->status = before.status;
        v->why = before.why;
        v->would_deny = before.would_deny;
    }
    return SUSPECT_OK;
}

/* Steps 3 to 5 of the file comment, for the route r. */
static suspect_rc_t resolve_route(guard_call_t *c, const guard_route_t *r,
                                  const suspect_limits_t *lim,
                                  mw_resolution_t *res, suspect_err_t *err)
{
    const suspect_rule_t *rule = suspect_limits_find(lim, r->conf->action);
    mw_verdict_t *v = &res->verdict;
    suspect_rc_t rc;

    if (rule == NULL) {
        /* The loaders refuse such a pair (conf_actions.c); a caller that
         * passed one anyway gets a refusal, never an uncounted pass. */
        verdict(v, MW_VERDICT_REJECT, 500, "action not in limits file");
        return SUSPECT_OK;
    }
    /* The same name, but owned by the conf: the verdict then lives as
     * long as the guard, whatever happens to the limits snapshot. */
    v->rule = *rule;
    v->rule.action = r->conf->action;
    v->rule.fail_mode = (uint32_t)r->conf->fail_mode;
    /* cost=: checked against the action when the pair loaded */
    v->rule.cost = r->conf->cost;
    v->shadow = r->conf->shadow == SUSPECT_SHADOW_ON;
    if (r->conf->count != SUSPECT_COUNT_ALL) {
        if (guard_call_app_elsewhere(c)) {
            verdict(v, MW_VERDICT_REJECT, 500,
                    "route counts by the response, which an authorizer "
                    "never sees");
            return SUSPECT_OK;
        }
        res->reserve_ttl_ms = reserve_ttl_ms(c->g->conf);
    }
    if (address_listed(c, r->deny)) {
        deny_listed(v, r->deny);
        return SUSPECT_OK;
    }
    rc = guard_calls_read(c, r);
    if (rc == SUSPECT_E_PARSE) {
        verdict(v, MW_VERDICT_REJECT, c->refuse_status, c->refuse_why);
        return SUSPECT_OK;
    }
    if (rc != SUSPECT_OK) {
        return rc;
    }
    v->calls = (unsigned)c->ncalls;
    if (c->ncalls > 1) {
        /* each call is an attempt, whatever one response says */
        res->reserve_ttl_ms = 0;
    }
    return resolve_calls(c, r, rule->action, res, err);
}

/* Body-reading errors as the contract names them. */
static suspect_rc_t call_error(suspect_rc_t rc, suspect_err_t *err)
{
    if (rc == SUSPECT_E_NOMEM) {
        return suspect_err_set(err, rc, NULL, 0, "guard: out of memory");
    }
    if (rc == SUSPECT_E_IO) {
        return suspect_err_set(err, rc, NULL, 0,
                               "guard: reading the request body failed");
    }
    return rc;
}

/* Step 1 as a verdict: rc from guard_paths_build() (not SUSPECT_OK). */
static suspect_rc_t path_verdict(suspect_rc_t rc, mw_verdict_t *v,
                                 suspect_err_t *err)
{
    if (rc == SUSPECT_E_INVAL) {
        verdict(v, MW_VERDICT_REJECT, 400, "bad path");
    } else if (rc == SUSPECT_E_NOTFOUND) {
        /* A web server that sends none is misconfigured (nginx without
         * `include fastcgi_params`): no route could ever match, so refuse
         * rather than let everything through. */
        verdict(v, MW_VERDICT_REJECT, 500,
                "no REQUEST_URI or SCRIPT_NAME from the web server");
    }
    return rc == SUSPECT_E_NOMEM ? call_error(rc, err) : SUSPECT_OK;
}

/* Steps 2 to 5 of the file comment, on the paths of the call's request. */
static suspect_rc_t resolve_paths(guard_call_t *c, const guard_paths_t *paths,
                                  const suspect_limits_t *lim,
                                  mw_resolution_t *out, suspect_err_t *err)
{
    const guard_route_t *r = NULL;
    size_t method_len = 0;
    const char *method = mw_req_param(c->req, "REQUEST_METHOD", &method_len);
    suspect_rc_t rc = guard_route_find(c, method, method_len, paths, &r);

    if (rc == SUSPECT_E_FULL || rc == SUSPECT_E_PARSE) {
        verdict(&out->verdict, MW_VERDICT_REJECT, c->refuse_status,
                c->refuse_why);
        return SUSPECT_OK;
    }
    if (rc == SUSPECT_E_INVAL) {
        verdict(&out->verdict, MW_VERDICT_REJECT, 400, "ambiguous route");
        return SUSPECT_OK;
    }
    if (rc == SUSPECT_OK && r != NULL && r->conf->refuse) {
        verdict(&out->verdict, MW_VERDICT_REJECT,
                r->conf->status != 0 ? r->conf->status : 403,
                "refused by route");
        out->verdict.route = r->conf;
        return SUSPECT_OK;
    }
    if (rc == SUSPECT_OK && r != NULL) {
        out->verdict.route = r->conf;
        rc = resolve_route(c, r, lim, out, err);
    }
    return rc;
}

/* Steps 1 to 5 of the file comment: see guard.h. */
suspect_rc_t mw_guard_resolve(const mw_guard_t *g, const suspect_limits_t *lim,
                              mw_req_t *req, int64_t now_ms,
                              mw_resolution_t *out, suspect_err_t *err)
{
    guard_paths_t paths;
    mw_verdict_t *v;
    guard_call_t c;
    suspect_rc_t rc;

    if (g == NULL || req == NULL || out == NULL) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "guard: no guard or request");
    }
    v = &out->verdict;
    memset(v, 0, sizeof(*v));
    out->nkeys = 0;
    mw_resolution_init(out);
    out->reserve_ttl_ms = 0;
    out->device = false;
    out->device_trusted = false;
    out->pass_trusted = false;
    v->now_ms = now_ms;
    v->why = "no route";
    rc = guard_paths_build(g, req, &paths);
    if (rc != SUSPECT_OK) {
        guard_paths_free(&paths);
        return path_verdict(rc, v, err);
    }
    if (paths.unknown != NULL) {
        /* what runs cannot be told (target.c): refuse, never guess */
        verdict(v, MW_VERDICT_REJECT, 500, paths.unknown);
        guard_paths_free(&paths);
        return SUSPECT_OK;
    }
    guard_call_begin(&c, g, req);
    if (address_listed(&c, g->deny)) {
        /* every request, routed or not, before anything is counted */
        verdict(v, MW_VERDICT_REJECT, guard_list_status(g->deny), "deny list");
        guard_paths_free(&paths);
        guard_call_end(&c);
        return SUSPECT_OK;
    }
    rc = resolve_paths(&c, &paths, lim, out, err);
    guard_paths_free(&paths);
    guard_call_end(&c);
    return call_error(rc, err);
}

/* The rank of a verdict among a request's calls: the worst answers. */
static int call_rank(const mw_verdict_t *v)
{
    return v->kind == MW_VERDICT_UNAVAILABLE ? 2
           : v->kind == MW_VERDICT_DENY      ? 1
                                             : 0;
}

/* Whether a is the answer over b: the worse kind, or of two denials the
 * one whose restriction ends last. */
static bool answers_over(const mw_verdict_t *a, const mw_verdict_t *b)
{
    if (call_rank(a) != call_rank(b)) {
        return call_rank(a) > call_rank(b);
    }
    return a->kind == MW_VERDICT_DENY &&
           a->decision.restriction_end_ms > b->decision.restriction_end_ms;
}

/* Step 6 of the file comment: see guard.h.  Each counted call of a body
 * of calls is decided in turn, as one attempt. */
void mw_guard_finish(suspect_store_t *store, const mw_resolution_t *res,
                     mw_verdict_t *out)
{
    const suspect_key_t *k = res->more_keys;

    *out = res->verdict;
    store_verdict(store, res->keys, res->nkeys, res->reserve_ttl_ms, out);
    for (size_t i = 0; i < res->nmore; i++) {
        mw_verdict_t one = res->verdict;

        store_verdict(store, k, res->more_nkeys[i], 0, &one);
        k += res->more_nkeys[i];
        if (answers_over(&one, out)) {
            *out = one;
        }
    }
    if (out->shadow &&
        (out->kind == MW_VERDICT_DENY || out->kind == MW_VERDICT_UNAVAILABLE)) {
        /* decided and counted as enforced (a denial records nothing), but
         * let through */
        out->would_deny = true;
        out->kind = MW_VERDICT_ALLOW;
    }
}

/* Settles a verdict's reservation: see guard.h. */
suspect_rc_t mw_guard_settle(suspect_store_t *store, const mw_resolution_t *res,
                             const mw_verdict_t *v, bool failed, int64_t now_ms,
                             suspect_err_t *err)
{
    if (v->ticket.id == 0) {
        return SUSPECT_OK;
    }
    return suspect_store_settle(store, &v->rule, res->keys, res->nkeys,
                                &v->ticket, failed, now_ms, err);
}

/* Decides req at now_ms: see the file comment and guard.h. */
suspect_rc_t mw_guard_decide(const mw_guard_t *g, const suspect_limits_t *lim,
                             suspect_store_t *store, mw_req_t *req,
                             int64_t now_ms, mw_verdict_t *out,
                             suspect_err_t *err)
{
    mw_resolution_t res;
    suspect_rc_t rc;

    if (g == NULL || req == NULL || out == NULL) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "guard: no guard or request");
    }
    rc = mw_guard_resolve(g, lim, req, now_ms, &res, err);
    *out = res.verdict;
    if (rc == SUSPECT_OK && res.nkeys > 0) {
        mw_guard_finish(store, &res, out);
    }
    mw_resolution_release(&res);
    return rc;
}
