/*
 * challenge.c - a challenge for a shared address: a browser refused only
 * because of an identity marked shared (<Identity shared="yes">, the
 * client address) proves work instead of waiting, and earns a pass that
 * is counted apart from the address (docs/suspect-xml.md, "Challenges
 * for a shared address"; docs/SECURITY.md says what it costs whom).
 *
 * The challenge.  mw_guard_challenge_respond() answers the refusal with
 * the route's status (429), its Retry-After and the page of
 * response/challenge_page.c (self-contained, under a strict CSP whose
 * hashes are computed when the guard is built).  The page holds a token,
 * base64url (no padding) of
 *   version (1 byte, 1) | issued (8 bytes, seconds, big-endian) |
 *   difficulty (1 byte) | nonce (16 random bytes) | MAC (32 bytes)
 * with MAC = HMAC-SHA-256(key, "suspect-challenge" NUL the 26 bytes before
 * it, the address, NUL, the action): bound to the client address (as the
 * ClientIp identity reads it, IPv6 grouped by its prefix), the action and
 * the time, never holding either.  The page's script looks for the first
 * counter c, from 0, for which SHA-256(token ":" c in decimal) starts
 * with difficulty zero bits, and POSTs "t=TOKEN&a=ACTION&c=C" to
 * <Challenge path>.
 *
 * The answer.  mw_guard_challenge_answer() takes the POST: a token whose
 * MAC verifies under key or oldKey for this address and action, issued
 * at most CHALLENGE_TTL_S ago (and not in the future), with a counter
 * that does the work, used for the first time: one decision in the store
 * with a limit of 1 on the key "{Action}:\x01challenge:NONCE", which
 * every store keeps shared and atomic, so a token is spent once even
 * across daemons (an in-process table would let each daemon take it
 * once).  It is answered 200 with
 *   Set-Cookie: NAME=PASS; Path=/; Max-Age=LIFETIME; HttpOnly;
 *               SameSite=Lax[; Secure]
 * ("__Host-" before NAME on HTTPS), PASS being base64url of
 *   version (1) | expiry (8) | nonce (16 random bytes) | address tag (16)
 *   | MAC (32)
 * tag = HMAC-SHA-256(key, "suspect-pass-address" NUL address) cut to 16,
 * MAC = HMAC-SHA-256(key, "suspect-pass" NUL the 41 bytes before it).
 * Anything else is a 403 (400 for a malformed body, 405 for another
 * method, 503 when the store fails).
 *
 * The pass.  At resolve time (guard_pass_apply()), a request carrying a
 * pass (either name) whose MAC verifies under key or oldKey, not expired,
 * with the tag of this request's address under the same key, counts each
 * shared identity as the pass: one more part to its value, "\x01pass:"
 * and the nonce in hex, with the action's limit and lock, so the
 * address's own counter and lock do not apply to it and a pass over its
 * limit is locked alone.  A forged, expired or other address's pass
 * counts as the address, as without a pass.
 *
 * When.  mw_guard_challenge_due(): a DENY from the store (not a shadow
 * route's), with a <Challenge>, in the RESPONDER role of forward mode,
 * for a request without a valid pass, whose tripped key is a shared
 * identity's while every other key is under its limit and unlocked (read
 * with suspect_store_status(): refused only because of the address), and
 * whose Accept names text/html.  Anything else keeps the plain denial.
 */
#include "guard_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sodium.h>

#include "random.h"

#include "response/challenge_page.h"
#include "response/deny.h"
#include "suspect_failover.h"

#define TOKEN_VERSION   1
#define TOKEN_PAYLOAD   (1 + 8 + 1 + NONCE_LEN)
#define TOKEN_LEN       (TOKEN_PAYLOAD + crypto_auth_hmacsha256_BYTES)
#define TOKEN_B64       (((TOKEN_LEN * 4) + 2) / 3)
#define PASS_VERSION    1
#define PASS_PAYLOAD    (1 + 8 + NONCE_LEN + TAG_LEN)
#define PASS_LEN        (PASS_PAYLOAD + crypto_auth_hmacsha256_BYTES)
#define PASS_B64        (((PASS_LEN * 4) + 2) / 3)
#define NONCE_LEN       16
#define TAG_LEN         16
#define CHALLENGE_TTL_S 300 /* a page must be solved within it */
#define SKEW_S          60  /* daemons whose clocks differ this much */
#define BODY_MAX        512 /* the solution's body, at most */

static const char token_ctx[] = "suspect-challenge";
static const char pass_ctx[] = "suspect-pass";
static const char addr_ctx[] = "suspect-pass-address";

/* HMAC-SHA-256 under key of ctx (with its NUL), data[0..n), and the
 * strings a, b (each followed by a NUL; NULL: none) into out. */
static void mac_of(const char *key, const char *ctx, const uint8_t *data,
                   size_t n, const char *a, size_t alen, const char *b,
                   uint8_t out[crypto_auth_hmacsha256_BYTES])
{
    crypto_auth_hmacsha256_state st;
    static const uint8_t nul = 0;

    crypto_auth_hmacsha256_init(&st, (const uint8_t *)key, strlen(key));
    crypto_auth_hmacsha256_update(&st, (const uint8_t *)ctx, strlen(ctx) + 1);
    crypto_auth_hmacsha256_update(&st, data, n);
    if (a != NULL) {
        crypto_auth_hmacsha256_update(&st, (const uint8_t *)a, alen);
        crypto_auth_hmacsha256_update(&st, &nul, 1);
    }
    if (b != NULL) {
        crypto_auth_hmacsha256_update(&st, (const uint8_t *)b, strlen(b));
        crypto_auth_hmacsha256_update(&st, &nul, 1);
    }
    crypto_auth_hmacsha256_final(&st, out);
    sodium_memzero(&st, sizeof(st));
}

size_t guard_challenge_token(const suspect_conf_t *conf, const char *addr,
                             size_t addr_len, const char *action, int64_t now_s,
                             char *out, size_t size)
{
    uint8_t t[TOKEN_LEN];

    if (size < TOKEN_B64 + 1) {
        return 0;
    }
    t[0] = TOKEN_VERSION;
    guard_put_be64(t + 1, (uint64_t)now_s);
    t[9] = (uint8_t)conf->challenge_difficulty;
    if (suspect_random_bytes(t + 10, NONCE_LEN, NULL) != SUSPECT_OK) {
        return 0;
    }
    mac_of(conf->challenge_key, token_ctx, t, TOKEN_PAYLOAD, addr, addr_len,
           action, t + TOKEN_PAYLOAD);
    sodium_bin2base64(out, size, t, sizeof(t),
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    return TOKEN_B64;
}

/* Leading zero bits of h (32 bytes). */
static unsigned zero_bits(const uint8_t *h)
{
    unsigned n = 0;

    for (size_t i = 0; i < crypto_hash_sha256_BYTES; i++) {
        if (h[i] == 0) {
            n += 8;
            continue;
        }
        for (uint8_t b = h[i]; (b & 0x80) == 0; b <<= 1) {
            n++;
        }
        break;
    }
    return n;
}

guard_token_rc_t guard_challenge_check(const suspect_conf_t *conf,
                                       const char *addr, size_t addr_len,
                                       const char *action, const char *token,
                                       size_t token_len, uint64_t counter,
                                       int64_t now_s,
                                       uint8_t nonce[GUARD_NONCE_LEN])
{
    const char *keys[2] = {conf->challenge_key, conf->challenge_old_key};
    uint8_t t[TOKEN_LEN + 1], mac[crypto_auth_hmacsha256_BYTES];
    uint8_t h[crypto_hash_sha256_BYTES];
    crypto_hash_sha256_state st;
    char digits[24];
    size_t len = 0;
    int64_t issued;
    bool signed_ok = false;
    int nd;

    if (token_len != TOKEN_B64 ||
        sodium_base642bin(t, sizeof(t), token, token_len, NULL, &len, NULL,
                          sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
        len != TOKEN_LEN || t[0] != TOKEN_VERSION) {
        return GUARD_TOKEN_FORGED;
    }
    for (size_t k = 0; k < 2 && keys[k] != NULL && !signed_ok; k++) {
        mac_of(keys[k], token_ctx, t, TOKEN_PAYLOAD, addr, addr_len, action,
               mac);
        signed_ok = sodium_memcmp(mac, t + TOKEN_PAYLOAD, sizeof(mac)) == 0;
    }
    if (!signed_ok) {
        return GUARD_TOKEN_FORGED; /* or another address's, or action's */
    }
    issued = (int64_t)guard_get_be64(t + 1);
    if (issued > now_s + SKEW_S || now_s - issued > CHALLENGE_TTL_S) {
        return GUARD_TOKEN_EXPIRED;
    }
    nd = snprintf(digits, sizeof(digits), ":%" PRIu64, counter);
    crypto_hash_sha256_init(&st);
    crypto_hash_sha256_update(&st, (const uint8_t *)token, token_len);
    crypto_hash_sha256_update(&st, (const uint8_t *)digits, (size_t)nd);
    crypto_hash_sha256_final(&st, h);
    if (t[9] == 0 || zero_bits(h) < t[9]) {
        return GUARD_TOKEN_UNSOLVED;
    }
    memcpy(nonce, t + 10, NONCE_LEN);
    return GUARD_TOKEN_OK;
}

/* The tag of address addr under key. */
static void address_tag(const char *key, const char *addr, size_t len,
                        uint8_t tag[TAG_LEN])
{
    uint8_t full[crypto_auth_hmacsha256_BYTES];

    mac_of(key, addr_ctx, (const uint8_t *)addr, len, NULL, 0, NULL, full);
    memcpy(tag, full, TAG_LEN);
}

size_t guard_pass_make(const suspect_conf_t *conf, const char *addr,
                       size_t addr_len, int64_t now_s, char *out, size_t size)
{
    uint8_t p[PASS_LEN];

    if (size < PASS_B64 + 1) {
        return 0;
    }
    p[0] = PASS_VERSION;
    guard_put_be64(p + 1, (uint64_t)now_s + conf->challenge_lifetime_s);
    if (suspect_random_bytes(p + 9, NONCE_LEN, NULL) != SUSPECT_OK) {
        return 0;
    }
    address_tag(conf->challenge_key, addr, addr_len, p + 9 + NONCE_LEN);
    mac_of(conf->challenge_key, pass_ctx, p, PASS_PAYLOAD, NULL, 0, NULL,
           p + PASS_PAYLOAD);
    sodium_bin2base64(out, size, p, sizeof(p),
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    return PASS_B64;
}

bool guard_pass_valid(const suspect_conf_t *conf, const char *raw, size_t n,
                      const char *addr, size_t addr_len, int64_t now_s,
                      uint8_t nonce[GUARD_NONCE_LEN])
{
    const char *keys[2] = {conf->challenge_key, conf->challenge_old_key};
    uint8_t p[PASS_LEN + 1], mac[crypto_auth_hmacsha256_BYTES];
    uint8_t tag[TAG_LEN];
    size_t len = 0;

    if (n != PASS_B64 ||
        sodium_base642bin(p, sizeof(p), raw, n, NULL, &len, NULL,
                          sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
        len != PASS_LEN || p[0] != PASS_VERSION ||
        guard_get_be64(p + 1) <= (uint64_t)now_s) {
        return false;
    }
    for (size_t k = 0; k < 2 && keys[k] != NULL; k++) {
        mac_of(keys[k], pass_ctx, p, PASS_PAYLOAD, NULL, 0, NULL, mac);
        if (sodium_memcmp(mac, p + PASS_PAYLOAD, sizeof(mac)) != 0) {
            continue;
        }
        address_tag(keys[k], addr, addr_len, tag);
        if (sodium_memcmp(tag, p + 9 + NONCE_LEN, TAG_LEN) != 0) {
            return false; /* another address's pass */
        }
        memcpy(nonce, p + 9, NONCE_LEN);
        return true;
    }
    return false;
}

/* Whether the request of c carries a valid pass for its address; *nonce
 * its nonce when it does. */
static bool pass_of(guard_call_t *c, int64_t now_s, uint8_t nonce[NONCE_LEN])
{
    const suspect_conf_t *conf = c->g->conf;
    char vals[2][MW_OWN_COOKIE];
    size_t lens[2], n, addr_len, hlen = 0;
    const char *hdr = mw_req_param(c->req, "HTTP_COOKIE", &hlen);
    const char *addr;

    n = mw_cookie_find_own(hdr, hlen, conf->challenge_name, vals, lens);
    if (n == 0 || guard_call_client_ip(c, &addr, &addr_len) != SUSPECT_OK) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (guard_pass_valid(conf, vals[i], lens[i], addr, addr_len, now_s,
                             nonce)) {
            return true;
        }
    }
    return false;
}

void guard_pass_apply(guard_call_t *c, const guard_route_t *r,
                      suspect_identity_t *ids, const size_t *from, size_t n,
                      mw_resolution_t *res, char part[GUARD_PASS_PART])
{
    uint8_t nonce[NONCE_LEN];
    bool any = false;

    res->pass_trusted = false;
    for (size_t i = 0; i < n; i++) {
        any = any || r->ids[from[i]].conf->shared;
    }
    if (!any || c->g->conf->challenge_key == NULL ||
        !pass_of(c, res->verdict.now_ms / 1000, nonce)) {
        return;
    }
    memcpy(part,
           "\x01"
           "pass:",
           6);
    sodium_bin2hex(part + 6, GUARD_PASS_PART - 6, nonce, NONCE_LEN);
    for (size_t i = 0; i < n; i++) {
        if (r->ids[from[i]].conf->shared && ids[i].nparts < SUSPECT_MAX_PARTS) {
            ids[i].part[ids[i].nparts].ptr = part;
            ids[i].part[ids[i].nparts].len = 6 + 2 * NONCE_LEN;
            ids[i].nparts++;
            res->pass_trusted = true;
        }
    }
}

/* Whether Accept (NULL: none) names text/html. */
static bool wants_html(const char *accept)
{
    for (const char *p = accept; p != NULL && *p != '\0'; p++) {
        if (strncasecmp(p, "text/html", 9) == 0) {
            return true;
        }
    }
    return false;
}

bool mw_guard_challenge_due(const mw_guard_t *g, const mw_resolution_t *res,
                            const mw_verdict_t *v, const mw_req_t *req,
                            suspect_store_t *store)
{
    int t = v->decision.tripped;

    if (g->conf->challenge_key == NULL ||
        g->conf->mode != SUSPECT_MODE_FORWARD ||
        req->role != MW_ROLE_RESPONDER || v->kind != MW_VERDICT_DENY ||
        v->route == NULL || res->pass_trusted || t < 0 ||
        (size_t)t >= res->nkeys || !res->shared[t] ||
        !wants_html(mw_req_param(req, "HTTP_ACCEPT", NULL))) {
        return false;
    }
    for (size_t i = 0; i < res->nkeys; i++) {
        suspect_status_t s;

        if (res->shared[i]) {
            continue;
        }
        /* another identity over its limit or locked: a pass would not
         * let the request in, so no challenge is offered */
        if (suspect_store_status(store, &v->rule, &res->keys[i], v->now_ms, &s,
                                 NULL) != SUSPECT_OK ||
            s.locked_until_ms > v->now_ms || s.remaining == 0) {
            return false;
        }
    }
    return true;
}

int mw_guard_challenge_respond(const mw_guard_t *g, mw_req_t *req,
                               const mw_verdict_t *v)
{
    const suspect_conf_t *conf = g->conf;
    const char *method = mw_req_param(req, "REQUEST_METHOD", NULL);
    char token[TOKEN_B64 + 1];
    const char *addr;
    size_t addr_len, len = 0;
    mw_challenge_page_t p;
    guard_call_t c;
    char *out = NULL;
    int rc;

    guard_call_begin(&c, g, req);
    if (guard_call_client_ip(&c, &addr, &addr_len) != SUSPECT_OK ||
        guard_challenge_token(conf, addr, addr_len, v->route->action,
                              v->now_ms / 1000, token, sizeof(token)) == 0) {
        guard_call_end(&c);
        return mw_guard_respond(g, req, v);
    }
    guard_call_end(&c);
    memset(&p, 0, sizeof(p));
    p.status = v->status;
    p.retry_s = (v->decision.retry_after_ms + 999) / 1000;
    p.token = token;
    p.action = v->route->action;
    p.difficulty = conf->challenge_difficulty;
    p.path = conf->challenge_path;
    p.get = method != NULL && strcmp(method, "GET") == 0;
    p.csp = g->challenge_csp;
    if (mw_challenge_page_build(&p, &out, &len) != SUSPECT_OK) {
        return mw_guard_respond(g, req, v);
    }
    rc = mw_req_write(req, out, len);
    free(out);
    return rc;
}

bool mw_guard_challenge_path(const mw_guard_t *g, const mw_req_t *req)
{
    const char *uri = mw_req_param(req, "REQUEST_URI", NULL);
    char path[256];
    size_t len = 0;

    return g->conf->challenge_key != NULL &&
           g->conf->mode == SUSPECT_MODE_FORWARD &&
           req->role == MW_ROLE_RESPONDER && uri != NULL &&
           mw_path_normalize(uri, strlen(uri), path, sizeof(path), &len) ==
               SUSPECT_OK &&
           strcmp(path, g->conf->challenge_path) == 0;
}

/* A short plain-text answer of status (and extra header lines). */
static int answer(mw_req_t *req, int status, const char *extra,
                  const char *text)
{
    char buf[1024];
    int n = snprintf(buf, sizeof(buf),
                     "Status: %d %s\r\nContent-Type: text/plain; "
                     "charset=utf-8\r\nCache-Control: no-store\r\n%s"
                     "Content-Length: %zu\r\n\r\n%s\n",
                     status, mw_status_reason(status),
                     extra != NULL ? extra : "", strlen(text) + 1, text);

    if (n < 0 || (size_t)n >= sizeof(buf)) {
        return -EINVAL;
    }
    return mw_req_write(req, buf, (size_t)n);
}

/* The value of name in the urlencoded body (no decoding: every value the
 * page sends is base64url, a name or digits), or NULL. */
static const char *field(const char *body, size_t len, const char *name,
                         size_t *out)
{
    size_t nl = strlen(name);

    for (size_t i = 0; i < len;) {
        size_t end = i;

        while (end < len && body[end] != '&') {
            end++;
        }
        if (end - i > nl && body[i + nl] == '=' &&
            memcmp(body + i, name, nl) == 0) {
            *out = end - i - nl - 1;
            return body + i + nl + 1;
        }
        i = end + 1;
    }
    return NULL;
}

/* The digits at s[0..n) as a number; false when not digits or too long. */
static bool number(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;

    if (s == NULL || n == 0 || n > 15) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    *out = v;
    return true;
}

/* Whether the nonce is used for the first time: one decision with a
 * limit of 1 on its own key (*failed: the store could not say). */
static bool first_use(const mw_guard_t *g, suspect_store_t *store,
                      const char *action, const uint8_t nonce[NONCE_LEN],
                      int64_t now_ms, bool *failed)
{
    char value[12 + 2 * NONCE_LEN + 1];
    suspect_rule_t rule;
    suspect_identity_t id;
    suspect_key_t key;
    suspect_decision_t d;

    memcpy(value,
           "\x01"
           "challenge:",
           11);
    sodium_bin2hex(value + 11, sizeof(value) - 11, nonce, NONCE_LEN);
    memset(&rule, 0, sizeof(rule));
    rule.action = action;
    rule.limit_count = 1;
    rule.window_s = CHALLENGE_TTL_S + 2 * SKEW_S;
    memset(&id, 0, sizeof(id));
    id.type = "Challenge";
    id.nparts = 1;
    id.part[0].ptr = value;
    id.part[0].len = 11 + 2 * NONCE_LEN;
    *failed =
        suspect_key_build(&g->keyopts, action, &id, &key, NULL) != SUSPECT_OK ||
        suspect_store_decide(store, &rule, &key, 1, now_ms, &d, NULL) !=
            SUSPECT_OK ||
        d.degraded == SUSPECT_DEGRADED_CLOSED;
    return !*failed && d.allowed;
}

int mw_guard_challenge_answer(const mw_guard_t *g, mw_req_t *req,
                              suspect_store_t *store, int64_t now_ms,
                              mw_challenge_report_t *rep)
{
    const suspect_conf_t *conf = g->conf;
    const char *method = mw_req_param(req, "REQUEST_METHOD", NULL);
    const char *body = NULL, *t, *a, *cs, *ms, *addr;
    size_t len = 0, tl = 0, al = 0, cl = 0, msl = 0, addr_len;
    char action[SUSPECT_ACTION_MAX + 1], pass[PASS_B64 + 1], line[256];
    uint8_t nonce[NONCE_LEN];
    uint64_t counter, took;
    bool complete = false, failed = false;
    guard_token_rc_t trc;
    guard_call_t c;
    int rc;

    memset(rep, 0, sizeof(*rep));
    rep->solve_ms = -1;
    if (method == NULL || strcmp(method, "POST") != 0) {
        rep->why = "not a POST";
        return answer(req, 405, "Allow: POST\r\n", "405 Method Not Allowed");
    }
    if (mw_req_prefetch(req, BODY_MAX, &body, &len, &complete) != SUSPECT_OK ||
        !complete) {
        rep->why = "bad body";
        return answer(req, 400, NULL, "400 Bad Request");
    }
    t = field(body, len, "t", &tl);
    a = field(body, len, "a", &al);
    cs = field(body, len, "c", &cl);
    ms = field(body, len, "ms", &msl);
    if (t == NULL || a == NULL || !suspect_name_valid(a, al) ||
        al > SUSPECT_ACTION_MAX || !number(cs, cl, &counter)) {
        rep->why = "bad body";
        return answer(req, 400, NULL, "400 Bad Request");
    }
    if (number(ms, msl, &took)) {
        rep->solve_ms = (int64_t)took;
    }
    rep->tries = counter + 1;
    memcpy(action, a, al);
    action[al] = '\0';
    guard_call_begin(&c, g, req);
    if (guard_call_client_ip(&c, &addr, &addr_len) != SUSPECT_OK) {
        guard_call_end(&c);
        rep->why = "no client address";
        return answer(req, 403, NULL, "403 Forbidden");
    }
    trc = guard_challenge_check(conf, addr, addr_len, action, t, tl, counter,
                                now_ms / 1000, nonce);
    if (trc == GUARD_TOKEN_OK &&
        !first_use(g, store, action, nonce, now_ms, &failed)) {
        trc = failed ? GUARD_TOKEN_OK : GUARD_TOKEN_REPLAYED;
    }
    if (trc == GUARD_TOKEN_OK && failed) {
        guard_call_end(&c);
        rep->why = "store failed";
        return answer(req, 503, NULL, "503 Service Unavailable");
    }
    if (trc != GUARD_TOKEN_OK) {
        guard_call_end(&c);
        rep->why = trc == GUARD_TOKEN_EXPIRED    ? "expired"
                   : trc == GUARD_TOKEN_UNSOLVED ? "not solved"
                   : trc == GUARD_TOKEN_REPLAYED
                       ? "replayed"
                       : "forged or another address's";
        return answer(req, 403, NULL, "403 Forbidden");
    }
    guard_pass_make(conf, addr, addr_len, now_ms / 1000, pass, sizeof(pass));
    guard_call_end(&c);
    rc = guard_is_https(req);
    snprintf(line, sizeof(line),
             "Set-Cookie: %s%s=%s; Path=/; Max-Age=%u; HttpOnly; "
             "SameSite=Lax%s\r\n",
             rc ? "__Host-" : "", conf->challenge_name, pass,
             conf->challenge_lifetime_s, rc ? "; Secure" : "");
    return answer(req, 200, line, "ok");
}
