/*
 * test_guard_challenge.c - challenges for a shared address (challenge.c):
 * the token and the pass, made and checked by hand (forged, other
 * address, other action, expired, unsolved, key rotation), then through
 * the guard: the challenge is offered only to a browser refused by the
 * shared address alone; a solution earns a pass once (a replay is
 * refused); a pass is counted on its own with the route's limit; another
 * address's pass counts as that address.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

#include "guard/guard_internal.h"
#include "helpers/fakereq.h"
#include "guard_test.h"

#define KEY_A  "a-challenge-key-of-at-least-thirty-two-chars"
#define KEY_B  "another-challenge-key-of-thirty-two-or-more"
#define ADDR   "192.0.2.1"
#define NOW_S  (GT_NOW / 1000)
#define CH_MAX 128

/* A conf with a <Challenge> of key (and old_key, may be NULL). */
static suspect_conf_t challenge_conf(const suspect_conf_route_t *routes,
                                     size_t n, const char *key,
                                     const char *old_key)
{
    suspect_conf_t c = gt_conf(routes, n);

    c.challenge_key = key;
    c.challenge_old_key = old_key;
    c.challenge_path = "/.suspect/challenge";
    c.challenge_name = "suspect_pass";
    c.challenge_difficulty = 8;
    c.challenge_lifetime_s = 600;
    return c;
}

/* The first counter that solves token for addr and action under conf at
 * now_s (-1 when none in 1 << 16 tries or the token is refused). */
static long long solve(const suspect_conf_t *conf, const char *addr,
                       const char *action, const char *token, int64_t now_s)
{
    uint8_t nonce[GUARD_NONCE_LEN];

    for (uint64_t c = 0; c < (1u << 16); c++) {
        guard_token_rc_t rc =
            guard_challenge_check(conf, addr, strlen(addr), action, token,
                                  strlen(token), c, now_s, nonce);
        if (rc == GUARD_TOKEN_OK) {
            return (long long)c;
        }
        if (rc != GUARD_TOKEN_UNSOLVED) {
            return -1;
        }
    }
    return -1;
}

static guard_token_rc_t check(const suspect_conf_t *conf, const char *addr,
                              const char *action, const char *token,
                              long long counter, int64_t now_s)
{
    uint8_t nonce[GUARD_NONCE_LEN];

    return guard_challenge_check(conf, addr, strlen(addr), action, token,
                                 strlen(token), (uint64_t)counter, now_s,
                                 nonce);
}

static void test_token(void)
{
    suspect_conf_t a = challenge_conf(NULL, 0, KEY_A, NULL);
    suspect_conf_t rotated = challenge_conf(NULL, 0, KEY_B, KEY_A);
    suspect_conf_t dropped = challenge_conf(NULL, 0, KEY_B, NULL);
    char t[CH_MAX], bad[CH_MAX];
    long long c;

    CU_ASSERT_FATAL(guard_challenge_token(&a, ADDR, strlen(ADDR), "Two", NOW_S,
                                          t, sizeof(t)) > 0);
    c = solve(&a, ADDR, "Two", t, NOW_S);
    CU_ASSERT_FATAL(c >= 0);
    /* the work is checked: the counter before it does not do it */
    CU_ASSERT_EQUAL(check(&a, ADDR, "Two", t, c, NOW_S + 299), GUARD_TOKEN_OK);
    for (long long u = 0; u < c; u++) {
        if (check(&a, ADDR, "Two", t, u, NOW_S) != GUARD_TOKEN_UNSOLVED) {
            CU_FAIL("a counter before the first solution solves");
            break;
        }
    }
    /* bound to the address, the action and the time */
    CU_ASSERT_EQUAL(check(&a, "192.0.2.2", "Two", t, c, NOW_S),
                    GUARD_TOKEN_FORGED);
    CU_ASSERT_EQUAL(check(&a, ADDR, "One", t, c, NOW_S), GUARD_TOKEN_FORGED);
    CU_ASSERT_EQUAL(check(&a, ADDR, "Two", t, c, NOW_S + 301),
                    GUARD_TOKEN_EXPIRED);
    CU_ASSERT_EQUAL(check(&a, ADDR, "Two", t, c, NOW_S - 61),
                    GUARD_TOKEN_EXPIRED);
    /* forged: one character changed, cut, empty */
    snprintf(bad, sizeof(bad), "%s", t);
    bad[20] = bad[20] == 'A' ? 'B' : 'A';
    CU_ASSERT_EQUAL(check(&a, ADDR, "Two", bad, c, NOW_S), GUARD_TOKEN_FORGED);
    bad[strlen(bad) - 1] = '\0';
    CU_ASSERT_EQUAL(check(&a, ADDR, "Two", bad, c, NOW_S), GUARD_TOKEN_FORGED);
    CU_ASSERT_EQUAL(check(&a, ADDR, "Two", "", c, NOW_S), GUARD_TOKEN_FORGED);
    /* rotation: the old key still verifies; once dropped, no more */
    CU_ASSERT_EQUAL(check(&rotated, ADDR, "Two", t, c, NOW_S), GUARD_TOKEN_OK);
    CU_ASSERT_EQUAL(check(&dropped, ADDR, "Two", t, c, NOW_S),
                    GUARD_TOKEN_FORGED);
}

static void test_pass(void)
{
    suspect_conf_t a = challenge_conf(NULL, 0, KEY_A, NULL);
    suspect_conf_t rotated = challenge_conf(NULL, 0, KEY_B, KEY_A);
    suspect_conf_t dropped = challenge_conf(NULL, 0, KEY_B, NULL);
    uint8_t nonce[GUARD_NONCE_LEN], again[GUARD_NONCE_LEN];
    char p[CH_MAX], q[CH_MAX];
    size_t n = guard_pass_make(&a, ADDR, strlen(ADDR), NOW_S, p, sizeof(p));

    CU_ASSERT_FATAL(n > 0 && n == strlen(p));
    CU_ASSERT_PTR_NULL(strstr(p, ADDR));
    CU_ASSERT_TRUE(
        guard_pass_valid(&a, p, n, ADDR, strlen(ADDR), NOW_S + 599, nonce));
    CU_ASSERT_FALSE(
        guard_pass_valid(&a, p, n, ADDR, strlen(ADDR), NOW_S + 600, nonce));
    CU_ASSERT_FALSE(guard_pass_valid(&a, p, n, "192.0.2.2", 9, NOW_S, nonce));
    snprintf(q, sizeof(q), "%s", p);
    q[n / 2] = q[n / 2] == 'A' ? 'B' : 'A';
    CU_ASSERT_FALSE(
        guard_pass_valid(&a, q, n, ADDR, strlen(ADDR), NOW_S, nonce));
    CU_ASSERT_FALSE(
        guard_pass_valid(&a, p, n - 1, ADDR, strlen(ADDR), NOW_S, nonce));
    /* two passes, two nonces: each is counted on its own */
    CU_ASSERT_FATAL(
        guard_pass_make(&a, ADDR, strlen(ADDR), NOW_S, q, sizeof(q)) == n);
    CU_ASSERT_TRUE(
        guard_pass_valid(&a, q, n, ADDR, strlen(ADDR), NOW_S, again));
    CU_ASSERT_TRUE(
        guard_pass_valid(&a, p, n, ADDR, strlen(ADDR), NOW_S, nonce));
    CU_ASSERT_NOT_EQUAL(memcmp(nonce, again, sizeof(nonce)), 0);
    CU_ASSERT_TRUE(
        guard_pass_valid(&rotated, p, n, ADDR, strlen(ADDR), NOW_S, nonce));
    CU_ASSERT_FALSE(
        guard_pass_valid(&dropped, p, n, ADDR, strlen(ADDR), NOW_S, nonce));
}

/* ---- through the guard ----------------------------------------------------
 */

typedef struct ch_fixture {
    gt_fixture_t f;
    suspect_conf_identity_t ids[2];
    suspect_conf_route_t routes[2];
} ch_fixture_t;

/* Route /two (action Two: 2 per 120 s) counting the address, shared; and
 * /both (Two too) counting a member cookie beside it. */
static int ch_open(ch_fixture_t *x)
{
    suspect_conf_t c;

    x->ids[0] = gt_ident("ClientIp", "client-ip");
    x->ids[0].shared = true;
    x->ids[1] = gt_ident("Member", "cookie:member");
    x->routes[0] = gt_route("Two", "/two", &x->ids[0], 1);
    x->routes[1] = gt_route("Two", "/both", &x->ids[0], 2);
    c = challenge_conf(x->routes, 2, KEY_A, NULL);
    return gt_open(&x->f, &c);
}

typedef struct ch_result {
    mw_verdict_t v;
    bool due;
    bool pass;
    char out[8192];
} ch_result_t;

/* A GET of uri from addr with cookie (NULL: none), Accept text/html. */
static void ch_get(ch_fixture_t *x, const char *uri, const char *addr,
                   const char *cookie, ch_result_t *res)
{
    char u[256], a[64], ck[512];
    const char *vars[8] = {u,
                           a,
                           "REQUEST_METHOD=GET",
                           "HTTP_ACCEPT=text/html,application/xhtml+xml,*/*",
                           NULL,
                           NULL};
    mw_resolution_t r;
    fakereq_t req;

    snprintf(u, sizeof(u), "REQUEST_URI=%s", uri);
    snprintf(a, sizeof(a), "REMOTE_ADDR=%s", addr);
    if (cookie != NULL) {
        snprintf(ck, sizeof(ck), "HTTP_COOKIE=%s", cookie);
        vars[4] = ck;
    }
    fakereq_init(&req, vars, NULL, 0);
    CU_ASSERT_EQUAL(
        mw_guard_resolve(x->f.g, x->f.lim, &req.req, GT_NOW, &r, NULL),
        SUSPECT_OK);
    mw_guard_finish(x->f.store, &r, &res->v);
    res->pass = r.pass_trusted;
    res->due =
        res->v.kind == MW_VERDICT_DENY &&
        mw_guard_challenge_due(x->f.g, &r, &res->v, &req.req, x->f.store);
    res->out[0] = '\0';
    if (res->due) {
        CU_ASSERT_EQUAL(mw_guard_challenge_respond(x->f.g, &req.req, &res->v),
                        0);
        snprintf(res->out, sizeof(res->out), "%s",
                 req.out != NULL ? req.out : "");
    }
    fakereq_free(&req);
}

/* POSTs body to the challenge path from addr: the response in out. */
static void ch_answer(ch_fixture_t *x, const char *addr, const char *body,
                      char *out, size_t size)
{
    char a[64], len[64];
    const char *vars[] = {"REQUEST_URI=/.suspect/challenge", a,
                          "REQUEST_METHOD=POST", len, NULL};
    mw_challenge_report_t rep;
    fakereq_t req;

    snprintf(a, sizeof(a), "REMOTE_ADDR=%s", addr);
    snprintf(len, sizeof(len), "CONTENT_LENGTH=%zu", strlen(body));
    fakereq_init(&req, vars, body, strlen(body));
    CU_ASSERT_TRUE(mw_guard_challenge_path(x->f.g, &req.req));
    CU_ASSERT_EQUAL(
        mw_guard_challenge_answer(x->f.g, &req.req, x->f.store, GT_NOW, &rep),
        0);
    snprintf(out, size, "%s", req.out != NULL ? req.out : "");
    fakereq_free(&req);
}

/* The token of a challenge page (data-t="..."), into t (CH_MAX). */
static bool page_token(const char *page, char *t)
{
    const char *p = strstr(page, "data-t=\"");
    size_t n;

    if (p == NULL) {
        return false;
    }
    p += 8;
    n = strcspn(p, "\"");
    snprintf(t, CH_MAX, "%.*s", (int)n, p);
    return n > 0 && n < CH_MAX;
}

/* "suspect_pass=VALUE" of a Set-Cookie in response r, into c (CH_MAX). */
static bool pass_cookie(const char *r, char *c)
{
    const char *p = strstr(r, "Set-Cookie: suspect_pass=");

    if (p == NULL) {
        return false;
    }
    p += 12;
    snprintf(c, CH_MAX, "%.*s", (int)strcspn(p, ";"), p);
    return true;
}

static void test_through_guard(void)
{
    static ch_fixture_t x;
    static ch_result_t r;
    char t[CH_MAX], body[256], out[2048], cookie[CH_MAX], other[CH_MAX + 16];
    long long c;

    CU_ASSERT_FATAL(ch_open(&x) == 0);
    /* the address is locked by others */
    for (int i = 0; i < 2; i++) {
        ch_get(&x, "/two", ADDR, NULL, &r);
        CU_ASSERT_EQUAL(r.v.kind, MW_VERDICT_ALLOW);
    }
    ch_get(&x, "/two", ADDR, NULL, &r);
    CU_ASSERT_EQUAL_FATAL(r.v.kind, MW_VERDICT_DENY);
    CU_ASSERT_TRUE_FATAL(r.due);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "Status: 429"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(r.out, "Content-Security-Policy: default-src 'none'; "
                      "script-src 'sha256-"));
    CU_ASSERT_PTR_NULL(strstr(r.out, ADDR)); /* never echoed */
    CU_ASSERT_PTR_NULL(strstr(r.out, "http"));
    CU_ASSERT_FATAL(page_token(r.out, t));
    /* the page's token, solved */
    c = solve(&x.f.snap.conf, ADDR, "Two", t, NOW_S);
    CU_ASSERT_FATAL(c >= 0);
    snprintf(body, sizeof(body), "t=%s&a=Two&c=%lld&ms=5", t, c);
    /* from another address: refused */
    ch_answer(&x, "192.0.2.2", body, out, sizeof(out));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "Status: 403"));
    ch_answer(&x, ADDR, body, out, sizeof(out));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "Status: 200"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "HttpOnly; SameSite=Lax"));
    CU_ASSERT_FATAL(pass_cookie(out, cookie));
    /* replayed: refused, no second pass */
    ch_answer(&x, ADDR, body, out, sizeof(out));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "Status: 403"));
    CU_ASSERT_PTR_NULL(strstr(out, "Set-Cookie"));
    /* unsolved, malformed */
    snprintf(body, sizeof(body), "t=%s&a=Two&c=x", t);
    ch_answer(&x, ADDR, body, out, sizeof(out));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "Status: 400"));
    /* the pass gets in, counted on its own with the route's limit */
    for (int i = 0; i < 2; i++) {
        ch_get(&x, "/two", ADDR, cookie, &r);
        CU_ASSERT_EQUAL(r.v.kind, MW_VERDICT_ALLOW);
        CU_ASSERT_TRUE(r.pass);
    }
    ch_get(&x, "/two", ADDR, cookie, &r);
    CU_ASSERT_EQUAL(r.v.kind, MW_VERDICT_DENY);
    CU_ASSERT_FALSE(r.due); /* a pass over its limit is locked, no challenge */
    /* the address itself still counted 2, nothing more */
    CU_ASSERT_EQUAL(gt_count(&x.f, "Two", ADDR), 2);
    /* the pass from another address counts as that address */
    ch_get(&x, "/two", "192.0.2.2", cookie, &r);
    CU_ASSERT_EQUAL(r.v.kind, MW_VERDICT_ALLOW);
    CU_ASSERT_FALSE(r.pass);
    CU_ASSERT_EQUAL(gt_count(&x.f, "Two", "192.0.2.2"), 1);
    /* a forged pass counts as the address: locked, a challenge again */
    snprintf(other, sizeof(other), "%s", cookie);
    other[20] = other[20] == 'A' ? 'B' : 'A';
    ch_get(&x, "/two", ADDR, other, &r);
    CU_ASSERT_FALSE(r.pass);
    CU_ASSERT_TRUE(r.due);
    gt_close(&x.f);
}

/* Refused because of another identity too: the plain denial. */
static void test_not_only_shared(void)
{
    static ch_fixture_t x;
    static ch_result_t r;

    CU_ASSERT_FATAL(ch_open(&x) == 0);
    for (int i = 0; i < 2; i++) {
        ch_get(&x, "/both", ADDR, "member=m1", &r);
        CU_ASSERT_EQUAL(r.v.kind, MW_VERDICT_ALLOW);
    }
    /* both the member and the address are over */
    ch_get(&x, "/both", ADDR, "member=m1", &r);
    CU_ASSERT_EQUAL(r.v.kind, MW_VERDICT_DENY);
    CU_ASSERT_FALSE(r.due);
    /* another member behind the locked address: the address alone */
    ch_get(&x, "/both", ADDR, "member=m2", &r);
    CU_ASSERT_EQUAL(r.v.kind, MW_VERDICT_DENY);
    CU_ASSERT_TRUE(r.due);
    gt_close(&x.f);
}

int guard_register_challenges(CU_pSuite s)
{
    return CU_add_test(s, "challenge token", test_token) == NULL ||
                   CU_add_test(s, "challenge pass", test_pass) == NULL ||
                   CU_add_test(s, "challenge through the guard",
                               test_through_guard) == NULL ||
                   CU_add_test(s, "challenge only for the shared address",
                               test_not_only_shared) == NULL
               ? -1
               : 0;
}
