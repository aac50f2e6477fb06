/*
 * test_guard_identity.c - suite "guard", identities: every source kind,
 * composite identities, the client address behind trusted proxies and
 * IPv6 grouping, missing values (skip, allow, reject), repeated query and
 * form parameters (the same value: fine; different values: 400), duplicate
 * keys, values longer than the stack buffers, and the prefetched body.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "helpers/fakereq.h"
#include "guard_test.h"
#include "helpers/util.h"

/* One route "Many" on /app.cgi with the single identity from. */
static int open_one(gt_fixture_t *f, suspect_conf_identity_t *id,
                    suspect_conf_route_t *route, const char *from)
{
    suspect_conf_t conf;

    *id = gt_ident("Id", from);
    *route = gt_route("Many", "/app.cgi", id, 1);
    conf = gt_conf(route, 1);
    conf.trusted_proxies = "10.0.0.0/8, ::1";
    conf.fwd_header = SUSPECT_FWD_XFF;
    return gt_open(f, &conf);
}

static void test_each_source(void)
{
    static const struct {
        const char *from;
        const char *var; /* the request variable that carries the value */
        const char *value;
    } cases[] = {
        {"header:X-Member-Code", "HTTP_X_MEMBER_CODE=M-100", "M-100"},
        {"header:content-type", "CONTENT_TYPE=text/x-member", "text/x-member"},
        {"cookie:member", "HTTP_COOKIE=a=1; member=\"M 200\"; b=2", "M 200"},
        {"query:member", "QUERY_STRING=x=1&member=M%2B300&member=M%2b300",
         "M+300"},
        {"env:REMOTE_USER", "REMOTE_USER=alice", "alice"},
        {"client-ip", "REMOTE_ADDR=192.0.2.44", "192.0.2.44"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        suspect_conf_identity_t id;
        suspect_conf_route_t route;
        const char *vars[] = {"REQUEST_URI=/app.cgi", cases[i].var, NULL};
        gt_fixture_t f;

        if (open_one(&f, &id, &route, cases[i].from) != 0) {
            CU_FAIL("fixture");
            continue;
        }
        CU_ASSERT_EQUAL(gt_decide(&f, vars, NULL).kind, MW_VERDICT_ALLOW);
        CU_ASSERT_EQUAL(gt_count(&f, "Many", cases[i].value), 1);
        if (gt_count(&f, "Many", cases[i].value) != 1) {
            fprintf(stderr, "\n  %s: not counted as %s\n", cases[i].from,
                    cases[i].value);
        }
        gt_close(&f);
    }
}

static void test_form_source(void)
{
    suspect_conf_identity_t id;
    suspect_conf_route_t route;
    const char *vars[] = {"REQUEST_URI=/app.cgi",
                          "CONTENT_TYPE=application/x-www-form-urlencoded",
                          "CONTENT_LENGTH=27", NULL};
    const char *body = "op=login&member=b%C3%B6b+1";
    gt_fixture_t f;

    if (open_one(&f, &id, &route, "form:member") != 0) {
        CU_FAIL("fixture");
        return;
    }
    CU_ASSERT_EQUAL(gt_decide(&f, vars, body).kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(gt_count(&f, "Many",
                             "b\xc3\xb6"
                             "b 1"),
                    1);
    gt_close(&f);
}

static void test_composite(void)
{
    suspect_conf_identity_t ids[] = {
        gt_ident("MemberPromo", "query:member query:code")};
    suspect_conf_route_t routes[] = {gt_route("Many", "/promo", ids, 1)};
    suspect_conf_t conf = gt_conf(routes, 1);
    const char *both[] = {"REQUEST_URI=/promo",
                          "QUERY_STRING=member=M1&code=X_9", NULL};
    const char *one[] = {"REQUEST_URI=/promo", "QUERY_STRING=member=M1", NULL};
    const char *empty[] = {"REQUEST_URI=/promo",
                           "QUERY_STRING=member=M1&code=", NULL};
    suspect_identity_t want;
    suspect_key_t key;
    suspect_status_t st;
    gt_fixture_t f;

    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    CU_ASSERT_EQUAL(gt_decide(&f, both, NULL).kind, MW_VERDICT_ALLOW);
    memset(&want, 0, sizeof(want));
    want.type = "MemberPromo";
    want.nparts = 2;
    want.part[0].ptr = "M1";
    want.part[0].len = 2;
    want.part[1].ptr = "X_9";
    want.part[1].len = 3;
    CU_ASSERT_EQUAL_FATAL(suspect_key_build(NULL, "Many", &want, &key, NULL),
                          SUSPECT_OK);
    CU_ASSERT_EQUAL(suspect_store_status(f.store,
                                         suspect_limits_find(f.lim, "Many"),
                                         &key, GT_NOW, &st, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(st.in_window, 1);
    /* Every part must be there and not empty. */
    CU_ASSERT_EQUAL(gt_decide(&f, one, NULL).kind, MW_VERDICT_PASS);
    CU_ASSERT_EQUAL(gt_decide(&f, empty, NULL).kind, MW_VERDICT_PASS);
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "M1"), 0);
    gt_close(&f);
}

/* The key the client address of vars was counted as ("" when none). */
static void check_ip(gt_fixture_t *f, const char *const *vars, const char *want)
{
    mw_verdict_t v = gt_decide(f, vars, NULL);

    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(gt_count(f, "Many", want), 1);
    if (gt_count(f, "Many", want) != 1) {
        fprintf(stderr, "\n  %s not counted as %s\n", vars[1], want);
    }
    suspect_store_free(f->store);
    CU_ASSERT_EQUAL(suspect_memstore_new(NULL, &f->store, NULL), SUSPECT_OK);
}

static void test_client_ip_proxies(void)
{
    suspect_conf_identity_t id;
    suspect_conf_route_t route;
    const char *trusted[] = {
        "REQUEST_URI=/app.cgi", "REMOTE_ADDR=10.0.0.1",
        "HTTP_X_FORWARDED_FOR=1.1.1.1, 198.51.100.7, 10.0.0.2", NULL};
    const char *spoofed[] = {"REQUEST_URI=/app.cgi", "REMOTE_ADDR=203.0.113.9",
                             "HTTP_X_FORWARDED_FOR=1.2.3.4", NULL};
    const char *fwd_only[] = {"REQUEST_URI=/app.cgi", "REMOTE_ADDR=10.0.0.1",
                              "HTTP_FORWARDED=for=198.51.100.8", NULL};
    const char *mapped[] = {"REQUEST_URI=/app.cgi",
                            "REMOTE_ADDR=::ffff:192.0.2.9", NULL};
    const char *local6[] = {"REQUEST_URI=/app.cgi", "REMOTE_ADDR=::1",
                            "HTTP_X_FORWARDED_FOR=2001:db8:5:6::1", NULL};
    const char *bad[] = {"REQUEST_URI=/app.cgi", "REMOTE_ADDR=unix:", NULL};
    gt_fixture_t f;

    if (open_one(&f, &id, &route, "client-ip") != 0) {
        CU_FAIL("fixture");
        return;
    }
    check_ip(&f, trusted, "198.51.100.7");
    check_ip(&f, spoofed, "203.0.113.9");
    /* Only X-Forwarded-For is enabled: Forwarded is ignored. */
    check_ip(&f, fwd_only, "10.0.0.1");
    check_ip(&f, mapped, "192.0.2.9");
    check_ip(&f, local6, "2001:db8:5:6::/64");
    /* Not an address: no identity. */
    CU_ASSERT_EQUAL(gt_decide(&f, bad, NULL).kind, MW_VERDICT_PASS);
    gt_close(&f);
}

/* Only the header the operator names is read: with a proxy that writes
 * one of them, the other is whatever the client wrote. */
static void test_client_ip_forwarded(void)
{
    suspect_conf_identity_t ids[] = {gt_ident("ClientIp", "client-ip")};
    suspect_conf_route_t routes[] = {gt_route("Many", "/app.cgi", ids, 1)};
    suspect_conf_t conf = gt_conf(routes, 1);
    const char *both[] = {"REQUEST_URI=/app.cgi", "REMOTE_ADDR=10.0.0.1",
                          "HTTP_FORWARDED=for=\"[2001:db8::1]:443\"",
                          "HTTP_X_FORWARDED_FOR=198.51.100.7", NULL};
    const char *xff[] = {"REQUEST_URI=/app.cgi", "REMOTE_ADDR=10.0.0.1",
                         "HTTP_X_FORWARDED_FOR=198.51.100.7", NULL};
    gt_fixture_t f;

    conf.trusted_proxies = "10.0.0.0/8";
    conf.fwd_header = SUSPECT_FWD_FORWARDED;
    conf.ipv6_prefix = 48;
    conf.ipv4_prefix = 24;
    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    check_ip(&f, both, "2001:db8::/48");
    check_ip(&f, xff, "10.0.0.0/24");
    gt_close(&f);
    /* The proxy writes X-Forwarded-For only: a client's Forwarded is
     * ignored, however it is formed. */
    conf.fwd_header = SUSPECT_FWD_XFF;
    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    check_ip(&f, both, "198.51.100.0/24");
    gt_close(&f);
}

static void test_ipv6_grouping(void)
{
    suspect_conf_identity_t id;
    suspect_conf_route_t route;
    const char *a[] = {"REQUEST_URI=/app.cgi", "REMOTE_ADDR=2001:db8:1:2::5",
                       NULL};
    const char *b[] = {"REQUEST_URI=/app.cgi",
                       "REMOTE_ADDR=2001:db8:1:2:ffff:1:2:3", NULL};
    const char *c[] = {"REQUEST_URI=/app.cgi", "REMOTE_ADDR=2001:db8:1:3::5",
                       NULL};
    gt_fixture_t f;

    if (open_one(&f, &id, &route, "client-ip") != 0) {
        CU_FAIL("fixture");
        return;
    }
    gt_decide(&f, a, NULL);
    gt_decide(&f, b, NULL);
    gt_decide(&f, c, NULL);
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "2001:db8:1:2::/64"), 2);
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "2001:db8:1:3::/64"), 1);
    gt_close(&f);
}

/* A route counting MemberCode (cookie) and ClientIp, missing = m. */
static void missing_case(suspect_missing_t m, mw_verdict_kind_t kind,
                         uint32_t ip_count, const char *why)
{
    suspect_conf_identity_t ids[] = {gt_ident("MemberCode", "cookie:member"),
                                     gt_ident("ClientIp", "client-ip")};
    suspect_conf_route_t routes[] = {gt_route("Many", "/app.cgi", ids, 2)};
    suspect_conf_t conf = gt_conf(routes, 1);
    const char *nocookie[] = {"REQUEST_URI=/app.cgi", "REMOTE_ADDR=192.0.2.1",
                              NULL};
    const char *empty[] = {"REQUEST_URI=/app.cgi",
                           "HTTP_COOKIE=member=", "REMOTE_ADDR=192.0.2.1",
                           NULL};
    mw_verdict_t v;
    gt_fixture_t f;

    routes[0].missing = m;
    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    v = gt_decide(&f, nocookie, NULL);
    CU_ASSERT_EQUAL(v.kind, kind);
    CU_ASSERT_STRING_EQUAL(v.why, why);
    CU_ASSERT_PTR_EQUAL(v.route, f.snap.conf.routes);
    CU_ASSERT_EQUAL(v.status, kind == MW_VERDICT_REJECT ? 400 : 0);
    v = gt_decide(&f, empty, NULL);
    CU_ASSERT_EQUAL(v.kind, kind);
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "192.0.2.1"), ip_count);
    gt_close(&f);
}

static void test_missing(void)
{
    missing_case(SUSPECT_MISSING_SKIP, MW_VERDICT_ALLOW, 2, "allowed");
    missing_case(SUSPECT_MISSING_ALLOW, MW_VERDICT_PASS, 0,
                 "identity missing: allowed");
    missing_case(SUSPECT_MISSING_REJECT, MW_VERDICT_REJECT, 0,
                 "identity missing: rejected");
}

static void test_missing_all_skipped(void)
{
    suspect_conf_identity_t id;
    suspect_conf_route_t route;
    const char *vars[] = {"REQUEST_URI=/app.cgi", "HTTP_COOKIE=other=1", NULL};
    mw_verdict_t v;
    gt_fixture_t f;

    if (open_one(&f, &id, &route, "cookie:member") != 0) {
        CU_FAIL("fixture");
        return;
    }
    v = gt_decide(&f, vars, NULL);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_PASS);
    CU_ASSERT_STRING_EQUAL(v.why, "no identity");
    gt_close(&f);
}

/* The verdict on a request to /app.cgi with query qs and form body (NULL:
 * none) under the route of f; a REJECT's response must be a plain 400. */
static mw_verdict_t ambiguous_case(gt_fixture_t *f, const char *qs,
                                   const char *body)
{
    char q[256];
    const char *vars[] = {"REQUEST_METHOD=POST",
                          "REQUEST_URI=/app.cgi",
                          q,
                          "CONTENT_TYPE=application/x-www-form-urlencoded",
                          "REMOTE_ADDR=192.0.2.1",
                          NULL};
    fakereq_t r;
    mw_verdict_t v;

    snprintf(q, sizeof(q), "QUERY_STRING=%s", qs);
    fakereq_init(&r, vars, body, body != NULL ? strlen(body) : 0);
    CU_ASSERT_EQUAL(
        mw_guard_decide(f->g, f->lim, f->store, &r.req, GT_NOW, &v, NULL),
        SUSPECT_OK);
    if (v.kind == MW_VERDICT_REJECT) {
        CU_ASSERT_EQUAL(mw_guard_respond(f->g, &r.req, &v), 0);
        CU_ASSERT_PTR_NOT_NULL(r.out);
        CU_ASSERT(r.out != NULL &&
                  strncmp(r.out, "Status: 400 Bad Request\r\n", 25) == 0);
    }
    fakereq_free(&r);
    return v;
}

/* A query or form identity given twice with different values is refused:
 * the app may read the other copy (PHP reads the last), so counting the
 * first would let a client vary one copy to dodge its count. */
static void test_ambiguous_parameter(void)
{
    static const struct {
        const char *qs, *body;
        mw_verdict_kind_t kind;
    } cases[] = {
        {"member=A&member=B", NULL, MW_VERDICT_REJECT},
        {"member=&member=B", NULL, MW_VERDICT_REJECT},
        {"member&member=B", NULL, MW_VERDICT_REJECT},
        {"member=A&x=1&member=A%20", NULL, MW_VERDICT_REJECT},
        {"code=1", "member=A&member=B", MW_VERDICT_REJECT},
        {"member=A&code=1&code=2", NULL, MW_VERDICT_REJECT},
        /* The same value again, however spelt: one identity. */
        {"member=A&member=A&code=1", NULL, MW_VERDICT_ALLOW},
        {"member=A&member=%41&x=1&x=2&code=1", NULL, MW_VERDICT_ALLOW},
        {"code=1", "member=A&member=A", MW_VERDICT_ALLOW},
        {"", NULL, MW_VERDICT_PASS},
    };
    suspect_conf_identity_t ids[] = {
        gt_ident("Form", "form:member"), gt_ident("Member", "query:member"),
        gt_ident("Promo", "query:member query:code")};
    suspect_conf_route_t routes[] = {gt_route("Many", "/app.cgi", ids, 1)};
    suspect_conf_t conf = gt_conf(routes, 1);
    gt_fixture_t f;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        bool form = cases[i].body != NULL;
        mw_verdict_t v;

        /* The form identity alone, or the two query ones on a route that
         * even lets requests without an identity through. */
        routes[0].identities = form ? ids : ids + 1;
        routes[0].nidentities = form ? 1 : 2;
        routes[0].missing = form ? SUSPECT_MISSING_SKIP : SUSPECT_MISSING_ALLOW;
        if (gt_open(&f, &conf) != 0) {
            CU_FAIL("fixture");
            return;
        }
        v = ambiguous_case(&f, cases[i].qs, cases[i].body);
        CU_ASSERT_EQUAL(v.kind, cases[i].kind);
        if (v.kind != cases[i].kind) {
            fprintf(stderr, "\n  case %zu (%s | %s): verdict %d (%s)\n", i,
                    cases[i].qs, cases[i].body ? cases[i].body : "-", v.kind,
                    v.why);
        }
        if (cases[i].kind == MW_VERDICT_REJECT) {
            CU_ASSERT_EQUAL(v.status, 400);
            CU_ASSERT_STRING_EQUAL(v.why, "ambiguous parameter");
            CU_ASSERT_PTR_EQUAL(v.route, f.snap.conf.routes);
            CU_ASSERT_EQUAL(gt_count(&f, "Many", "A"), 0);
            CU_ASSERT_EQUAL(gt_count(&f, "Many", "B"), 0);
        }
        if (cases[i].kind == MW_VERDICT_ALLOW) {
            CU_ASSERT_EQUAL(gt_count(&f, "Many", "A"), 1);
        }
        gt_close(&f);
    }
}

/* A repeated parameter that no identity reads, and repeated cookies,
 * which PHP reads first-wins like the lookup, change nothing. */
static void test_repeats_elsewhere(void)
{
    suspect_conf_identity_t ids[] = {gt_ident("Member", "cookie:member")};
    suspect_conf_route_t routes[] = {gt_route("Many", "/app.cgi", ids, 1)};
    suspect_conf_t conf = gt_conf(routes, 1);
    const char *vars[] = {"REQUEST_URI=/app.cgi?member=X&member=Y",
                          "QUERY_STRING=member=X&member=Y",
                          "HTTP_COOKIE=member=A; member=B", NULL};
    gt_fixture_t f;

    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    CU_ASSERT_EQUAL(gt_decide(&f, vars, NULL).kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "A"), 1);
    gt_close(&f);
}

/* The same value from two sources is one key, decided once. */
static void test_duplicate_keys(void)
{
    suspect_conf_identity_t ids[] = {gt_ident("Id", "cookie:member"),
                                     gt_ident("Id", "query:member"),
                                     gt_ident("Id", "query:other")};
    suspect_conf_route_t routes[] = {gt_route("Two", "/app.cgi", ids, 3)};
    suspect_conf_t conf = gt_conf(routes, 1);
    const char *vars[] = {"REQUEST_URI=/app.cgi",
                          "QUERY_STRING=member=alice&other=alice",
                          "HTTP_COOKIE=member=alice", NULL};
    gt_fixture_t f;

    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    CU_ASSERT_EQUAL(gt_decide(&f, vars, NULL).kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(gt_count(&f, "Two", "alice"), 1);
    CU_ASSERT_EQUAL(gt_decide(&f, vars, NULL).kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(gt_decide(&f, vars, NULL).kind, MW_VERDICT_DENY);
    CU_ASSERT_EQUAL(gt_count(&f, "Two", "alice"), 2);
    gt_close(&f);
}

/* Values longer than the stack arena are keyed whole: two that differ
 * only in their last byte are two identities. */
static void test_long_values(void)
{
    suspect_conf_identity_t ids[] = {gt_ident("Id", "cookie:member"),
                                     gt_ident("Q", "query:q")};
    suspect_conf_route_t routes[] = {gt_route("One", "/app.cgi", ids, 2)};
    suspect_conf_t conf = gt_conf(routes, 1);
    size_t n = 20000;
    char *cookie = malloc(n + 32);
    const char *vars[] = {"REQUEST_URI=/app.cgi", "QUERY_STRING=q=1", cookie,
                          NULL};
    const char *qvars[] = {"REQUEST_URI=/app.cgi", "QUERY_STRING=q=2", cookie,
                           NULL};
    const char *q3vars[] = {"REQUEST_URI=/app.cgi", "QUERY_STRING=q=3", cookie,
                            NULL};
    gt_fixture_t f;

    CU_ASSERT_FATAL(cookie != NULL);
    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        free(cookie);
        return;
    }
    strcpy(cookie, "HTTP_COOKIE=member=");
    memset(cookie + 19, 'm', n);
    cookie[19 + n] = '\0';
    CU_ASSERT_EQUAL(gt_decide(&f, vars, NULL).kind, MW_VERDICT_ALLOW);
    cookie[19 + n - 1] = 'x';
    CU_ASSERT_EQUAL(gt_decide(&f, qvars, NULL).kind, MW_VERDICT_ALLOW);
    cookie[19 + n - 1] = 'm';
    CU_ASSERT_EQUAL(gt_decide(&f, q3vars, NULL).kind, MW_VERDICT_DENY);
    /* Out of memory while copying a long value: an error, not a verdict. */
    {
        fakereq_t r;
        mw_verdict_t v;

        fakereq_init(&r, vars, NULL, 0);
        suspect_test_fail_alloc_after(1);
        CU_ASSERT_EQUAL(
            mw_guard_decide(f.g, f.lim, f.store, &r.req, GT_NOW, &v, NULL),
            SUSPECT_E_NOMEM);
        suspect_test_fail_alloc_after(-1);
        fakereq_free(&r);
    }
    gt_close(&f);
    free(cookie);
}

/* A body longer than CONTENT_LENGTH, read in pieces, is the same body on
 * every prefetch: the spare byte read past CONTENT_LENGTH is never part of
 * it (found by fuzz/fuzz_guard: a second call saw "accta", the first
 * "acct", so resolving and deciding one request chose different routes). */
static void test_prefetch_stable(void)
{
    const char *vars[] = {"REQUEST_METHOD=POST", "CONTENT_LENGTH=4", NULL};
    const char *b1, *b2;
    size_t l1 = 0, l2 = 0;
    bool c1 = false, c2 = false;
    fakereq_t r;

    fakereq_init(&r, vars, "acctapi=1", 9);
    r.chunk = 3;
    CU_ASSERT_EQUAL(mw_req_prefetch(&r.req, 1024, &b1, &l1, &c1), SUSPECT_OK);
    CU_ASSERT_EQUAL(mw_req_prefetch(&r.req, 1024, &b2, &l2, &c2), SUSPECT_OK);
    CU_ASSERT(l1 == 4 && l2 == 4 && c1 && c2 && b1 == b2);
    CU_ASSERT(b1 != NULL && memcmp(b1, "acct", 4) == 0);
    fakereq_free(&r);
}

int guard_register_identities(CU_pSuite s)
{
    return CU_add_test(s, "every identity source", test_each_source) == NULL ||
                   CU_add_test(s, "form source", test_form_source) == NULL ||
                   CU_add_test(s, "composite identity", test_composite) ==
                       NULL ||
                   CU_add_test(s, "client-ip behind proxies",
                               test_client_ip_proxies) == NULL ||
                   CU_add_test(s, "client-ip with Forwarded and prefixes",
                               test_client_ip_forwarded) == NULL ||
                   CU_add_test(s, "IPv6 /64 grouping", test_ipv6_grouping) ==
                       NULL ||
                   CU_add_test(s, "missing: skip, allow, reject",
                               test_missing) == NULL ||
                   CU_add_test(s, "missing: nothing left",
                               test_missing_all_skipped) == NULL ||
                   CU_add_test(s, "ambiguous parameter",
                               test_ambiguous_parameter) == NULL ||
                   CU_add_test(s, "repeats no identity reads",
                               test_repeats_elsewhere) == NULL ||
                   CU_add_test(s, "duplicate identity keys",
                               test_duplicate_keys) == NULL ||
                   CU_add_test(s, "long values", test_long_values) == NULL ||
                   CU_add_test(s, "prefetch stable past CONTENT_LENGTH",
                               test_prefetch_stable) == NULL
               ? -1
               : 0;
}
