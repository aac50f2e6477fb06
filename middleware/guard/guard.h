/*
 * guard.h - from a request to a decision: route, identities, store.
 *
 * A guard is suspect.xml compiled for requests: the routes with their
 * identity sources, the trusted proxies parsed, the response settings.  It
 * is immutable and reference counted like the snapshots it is built from,
 * so a reload builds a new guard and swaps it in while requests in flight
 * finish on the old one.  The limits snapshot and the store are passed per
 * call, because the limits file reloads on its own.
 *
 * Per request (mw_guard_decide):
 *  1. the paths: REQUEST_URI's path, percent-decoded and normalised ("//",
 *     "/./", "/../" resolved; an encoded NUL or a path escaping the root is
 *     refused) so "/%6Cogin.cgi" and "/a/../login.cgi" match "/login.cgi";
 *     and, normalised alike, SCRIPT_NAME + PATH_INFO and DOCUMENT_URI (the
 *     script the web server runs, after index or rewrites);
 *  2. the first route whose method (GET also takes HEAD), one of the paths
 *     (an exact path also takes path + "/" + PATH_INFO) and parameter
 *     condition (any occurrence; names as PHP files them) match; a form
 *     condition prefetches up to form_max bytes of the body, in forward
 *     mode only, and a longer body is a 413;
 *  3. each identity's value from its sources (header, cookie, query, form,
 *     env, client-ip behind trusted proxies); a missing or empty value is
 *     handled as the route says (skip, allow, reject); a query or form
 *     parameter repeated with different values is a 400, a form source in
 *     a body over form_max a 413;
 *  4. the keys, and one suspect_store_decide() for all identities.
 * Nothing here writes to the client; mw_guard_respond() does.
 */
#ifndef MW_GUARD_H
#define MW_GUARD_H

#include <stdint.h>

#include "request/request.h"
#include "compiled/compiled.h"
#include "conf/suspect_conf.h"
#include "suspect_error.h"
#include "limits/suspect_limits.h"
#include "suspect_store.h"

typedef struct mw_guard mw_guard_t;

/*
 * Compiles conf into a guard (conf gets a reference, held by the guard).
 * Fails with SUSPECT_E_CONFIG and "file:line: message" when the trusted
 * proxy list is bad or the template cannot be used.
 */
suspect_rc_t mw_guard_new(const suspect_conf_t *conf, mw_guard_t **out,
                          suspect_err_t *err);

mw_guard_t *mw_guard_ref(mw_guard_t *g);
void mw_guard_unref(mw_guard_t *g); /* NULL is a no-op */

const suspect_conf_t *mw_guard_conf(const mw_guard_t *g);

typedef enum mw_verdict_kind {
    MW_VERDICT_PASS = 0,   /* no route, or no identity: not counted */
    MW_VERDICT_ALLOW,      /* counted and allowed */
    MW_VERDICT_DENY,       /* over the limit or locked: the 429 */
    MW_VERDICT_REJECT,     /* bad request: missing identity (reject),
                              ambiguous parameter, unusable path: 400;
                              form body over form_max: 413; no path from
                              the web server, an action missing from the
                              limits file: 500 */
    MW_VERDICT_UNAVAILABLE /* the store failed in closed mode: 503 */
} mw_verdict_kind_t;

typedef struct mw_verdict {
    mw_verdict_kind_t kind;
    const suspect_conf_route_t *route; /* NULL for PASS without a route */
    suspect_rule_t rule;               /* a copy; valid with a route */
    suspect_decision_t decision;       /* ALLOW, DENY */
    int64_t now_ms;
    int status;      /* HTTP status for DENY/REJECT/UNAVAILABLE */
    const char *why; /* short reason for the log (never a value) */
    /* ALLOW of a route that counts by the response: the reservation
     * to settle once the response is known (id 0: none held) */
    suspect_ticket_t ticket;
    bool shadow;     /* the route is in shadow mode */
    bool would_deny; /* ALLOW in shadow mode of what enforced would be a
                        DENY or UNAVAILABLE (status and why say which) */
    bool store_full; /* UNAVAILABLE because the store had no room for the
                        identity (SUSPECT_E_FULL: the memory store full of
                        live locks), not because it failed */
} mw_verdict_t;

/*
 * What a request resolves to before the store is asked (steps 1 to 4 of
 * mw_guard_decide, without the store): the route, the rule and the keys.
 * nkeys == 0: verdict is final (PASS or REJECT) and needs no store; else
 * verdict has route, rule and now_ms set and the store would decide on
 * keys[0..nkeys) (identities with the same key appear once; types[i] is
 * the type of the first identity whose key is keys[i], the conf's string).
 */
/* The longest account (its parts' bytes and lengths) a device cookie
 * binds: a longer one is counted as the account. */
#define MW_DEVICE_ACCT_MAX 192

typedef struct mw_resolution {
    mw_verdict_t verdict;
    /* > 0: the route counts by the response, so the store makes a reservation
     * that lives this long (the forwarding timeout and 10 s) */
    int64_t reserve_ttl_ms;
    size_t nkeys;
    const char *types[SUSPECT_MAX_IDENTITIES];
    suspect_key_t keys[SUSPECT_MAX_IDENTITIES];
    /* The route binds device cookies to its account identity, whose value
     * was read one way: device_acct holds it as device.c MACs it;
     * device_trusted: the request carried a valid cookie for it, and its
     * account is counted as that device. */
    bool device;
    bool device_trusted;
    size_t device_acct_len;
    uint8_t device_acct[MW_DEVICE_ACCT_MAX];
    /* shared[i]: keys[i] is a shared identity's (<Identity shared="yes">);
     * pass_trusted: the request carried a valid pass for its address, and
     * its shared identities are counted as that pass (challenge.c) */
    bool shared[SUSPECT_MAX_IDENTITIES];
    bool pass_trusted;
} mw_resolution_t;

/*
 * Resolves req at now_ms as mw_guard_decide() does, without touching a
 * store: nothing is counted.  Fails as mw_guard_decide().  Used to
 * simulate a request (suspectctl simulate).
 */
suspect_rc_t mw_guard_resolve(const mw_guard_t *g, const suspect_limits_t *lim,
                              mw_req_t *req, int64_t now_ms,
                              mw_resolution_t *out, suspect_err_t *err);

/*
 * Step 6 alone (in shadow mode, a DENY or UNAVAILABLE becomes an ALLOW
 * with would_deny set, status and why kept): the store's decision on a
 * resolution with keys
 * (res->nkeys > 0), as a verdict in *out.  A store error is a verdict
 * (UNAVAILABLE), as in mw_guard_decide().  Lets a caller that pays for
 * opening its store (suspect-cgi) open it only when a request needs it.
 */
void mw_guard_finish(suspect_store_t *store, const mw_resolution_t *res,
                     mw_verdict_t *out);

/*
 * Settles the reservation of an ALLOW verdict v that holds one (v->ticket.id !=
 * 0), made by mw_guard_finish() on res: a hit when failed (the response
 * said the attempt failed, or did not say), else dropped.  A no-op for a
 * verdict without a reservation.  The store's error is returned (the
 * reservation then becomes a hit at its end).
 */
suspect_rc_t mw_guard_settle(suspect_store_t *store, const mw_resolution_t *res,
                             const mw_verdict_t *v, bool failed, int64_t now_ms,
                             suspect_err_t *err);

/*
 * An allowed attempt that holds a reservation (v->ticket.id != 0), from its
 * forward to its settlement (guard_watch.c).  mw_guard_watch_start()
 * before the response is relayed: req's output is watched (and on a route
 * that binds device cookies its head held, so that a success gets one);
 * s, res, v and req must live until mw_guard_watch_settle(), called once
 * the response ended (complete: the application answered it all), which
 * stops watching, lets go what is held and settles the reservation in store by
 * what the response said (a hit unless it said it succeeded), logging a
 * settlement the store refused.
 */
typedef struct mw_settling {
    const mw_guard_t *g;
    const mw_resolution_t *res;
    const mw_verdict_t *v;
    const mw_req_t *req;
    struct mw_watch *w; /* NULL: none (out of memory): the attempt counts */
} mw_settling_t;

void mw_guard_watch_start(mw_settling_t *s, const mw_guard_t *g,
                          const mw_resolution_t *res, const mw_verdict_t *v,
                          mw_req_t *req);
void mw_guard_watch_settle(mw_settling_t *s, mw_req_t *req,
                           suspect_store_t *store, bool complete);

/*
 * The header line (CRLF-ended) that gives the browser a device cookie for
 * the account res resolved (res->device), made at now_ms for req (its
 * scheme names the cookie), into buf; its length, or 0 when res binds no
 * account or buf is too small.  For a response that said the attempt
 * succeeded.
 */
size_t mw_guard_device_cookie(const mw_guard_t *g, const mw_resolution_t *res,
                              const mw_req_t *req, int64_t now_ms, char *buf,
                              size_t size);

/*
 * Challenges for a shared address (challenge.c).  mw_guard_challenge_due():
 * whether the DENY verdict v, made by mw_guard_finish() on res for req,
 * is answered with a challenge page: the route's <Challenge>, forward
 * mode's RESPONDER role, no valid pass, the tripped key a shared
 * identity's while every other key is under its limit (asked of store),
 * and an Accept naming text/html.  mw_guard_challenge_respond() writes
 * that page (the plain denial when it cannot be made); 0 or -errno.
 */
bool mw_guard_challenge_due(const mw_guard_t *g, const mw_resolution_t *res,
                            const mw_verdict_t *v, const mw_req_t *req,
                            suspect_store_t *store);
int mw_guard_challenge_respond(const mw_guard_t *g, mw_req_t *req,
                               const mw_verdict_t *v);

/* Whether req targets <Challenge path> (forward mode's RESPONDER role):
 * suspect-fcgi answers it with mw_guard_challenge_answer(), never the
 * application. */
bool mw_guard_challenge_path(const mw_guard_t *g, const mw_req_t *req);

/* What became of a solution, for the log. */
typedef struct mw_challenge_report {
    const char *why;  /* why it was refused; NULL: the pass was given */
    int64_t solve_ms; /* the solving time the page reported, -1: none */
    uint64_t tries;   /* the counter that solved it, plus one */
} mw_challenge_report_t;

/*
 * Answers a solution POSTed to the challenge path at now_ms: 200 with the
 * pass cookie when the token is ours, for this address, open, solved and
 * used for the first time (store keeps the used ones); else 400 (a
 * malformed body), 403 (forged, another address's, expired, unsolved or
 * replayed), 405 (not a POST) or 503 (the store failed); *rep says which.
 * 0 or -errno from the write.
 */
int mw_guard_challenge_answer(const mw_guard_t *g, mw_req_t *req,
                              suspect_store_t *store, int64_t now_ms,
                              mw_challenge_report_t *rep);

/*
 * Decides req at now_ms: mw_guard_resolve(), then mw_guard_finish() when
 * there are keys.  Returns SUSPECT_OK with *out filled (a store
 * failure is a verdict: the failover store has applied the fail mode
 * already), or SUSPECT_E_IO when reading the body for a form source
 * failed, SUSPECT_E_NOMEM.
 */
suspect_rc_t mw_guard_decide(const mw_guard_t *g, const suspect_limits_t *lim,
                             suspect_store_t *store, mw_req_t *req,
                             int64_t now_ms, mw_verdict_t *out,
                             suspect_err_t *err);

/*
 * Writes the response for a DENY, REJECT or UNAVAILABLE verdict to req:
 * the denial (mw_deny_build, with the route's status and the configured
 * format or template), the REJECT's status (400, 413, 500), or the 503.
 * In auth-request mode, for a request in the RESPONDER role (nginx's
 * subrequest), the status is 403
 * and X-Suspect-* headers carry what nginx maps back (see
 * docs/responses.md, "nginx auth_request"); a request in the AUTHORIZER
 * role, and every request in the other modes, gets the real status.
 * 0 or -errno from the write.
 */
int mw_guard_respond(const mw_guard_t *g, mw_req_t *req, const mw_verdict_t *v);

/*
 * g's allow and deny lists packed for suspect-cgi's compiled configuration
 * into s->packed (COMPILED_PACK_INDEX() order, an index without a list
 * left empty; s must hold none yet, and gets them to own), so that a request
 * takes them as they are instead of parsing and sorting them.  g must
 * have been compiled from s->conf.  SUSPECT_E_NOMEM (s unchanged).
 */
suspect_rc_t mw_guard_pack_lists(const mw_guard_t *g, compiled_t *s,
                                 suspect_err_t *err);

/*
 * One log line for a verdict a program answers or lets through marked: a
 * denial or refusal ("deny", "refuse"; a 5xx at warning, else info) or a
 * shadow route's would-deny (at notice: the lines an operator rolling a
 * limit out watches).  The path (the query too only with <Log
 * requestUri="full">), the action, the status and why; never a value.
 * Nothing for any other verdict.  suspect-fcgi and suspect-cgi both call
 * it, so their logs read alike.
 */
void mw_guard_log_verdict(const mw_guard_t *g, const mw_req_t *req,
                          const mw_verdict_t *v);

/*
 * The client's address as g sees it (REMOTE_ADDR, or behind g's trusted
 * proxies the address their header names), whole (not grouped by
 * prefix), into buf (size bytes, MW_ADDR_TEXT_MAX is enough); false when
 * there is none.  For logs: the decision does not call it.
 */
bool mw_guard_client(const mw_guard_t *g, const mw_req_t *req, char *buf,
                     size_t size);

/*
 * The header line of <Response shadowHeader> for an ALLOW that a route in
 * shadow mode would have refused (v->would_deny), into buf (size bytes):
 * "X-Suspect-Shadow: would-deny; action=Login; status=429\r\n", the
 * line's length; 0 (nothing written) when the verdict is no would-deny,
 * the header is not configured, or buf is too small.  Room enough:
 * SUSPECT_ACTION_MAX + 128 bytes.
 */
size_t mw_guard_shadow_line(const mw_guard_t *g, const mw_verdict_t *v,
                            char *buf, size_t size);

/* The normalised path of a request target (exposed for tests): decodes
 * raw[0..len) up to '?' (or a '#') into buf (size bytes, NUL-terminated).
 * SUSPECT_E_INVAL for a path that is not absolute, holds an encoded NUL,
 * or climbs above the root; SUSPECT_E_FULL when it does not fit. */
suspect_rc_t mw_path_normalize(const char *raw, size_t len, char *buf,
                               size_t size, size_t *out_len);

#endif
