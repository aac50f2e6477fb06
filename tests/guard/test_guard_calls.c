/*
 * test_guard_calls.c - suite "guard", bodies of calls (guard_calls.c):
 * each call of an XML-RPC system.multicall or a JSON batch decided as one
 * attempt for its own account, on the fixture's memory store.
 *
 * Two (2 per 120 s): a multicall for alice and bob counts one each; one
 * for alice twice crosses her limit and is denied whole.  passMethods
 * passes its methods uncounted, any other unread method is refused.
 * SecureForgotAccount (3 per 1800 s, then locked): two denied calls
 * answer with the restriction that ends last.  JSON: an integer counted
 * as PHP prints it, a boolean refused; a body of another type, over
 * formMax, or that does not parse refused before anything is counted.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guard_test.h"

#define XR_FROM "xmlrpc:wp.getUsersBlogs:1|xmlrpc:wp.*:2"
#define MC_HEAD                                                                \
    "<methodCall><methodName>system.multicall</methodName><params><param>"     \
    "<value><array><data>"
#define MC_TAIL "</data></array></value></param></params></methodCall>"
#define MC_CALL(m, p)                                                          \
    "<value><struct><member><name>methodName</name><value>" m "</value>"       \
    "</member><member><name>params</name><value><array><data>" p               \
    "</data></array></value></member></struct></value>"
#define S(v)       "<value><string>" v "</string></value>"
#define USERS(u)   MC_CALL("wp.getUsersBlogs", S(u) S("pw"))
#define PROFILE(u) MC_CALL("wp.getProfile", S("1") S(u) S("pw"))

/* POST of body as type to uri at now_ms. */
static mw_verdict_t post_at(gt_fixture_t *f, const char *uri, const char *type,
                            const char *body, int64_t now_ms)
{
    char u[128], t[128], len[64];
    const char *vars[] = {"REQUEST_METHOD=POST", u, t, len, NULL};

    snprintf(u, sizeof(u), "REQUEST_URI=%s", uri);
    snprintf(t, sizeof(t), "CONTENT_TYPE=%s", type);
    snprintf(len, sizeof(len), "CONTENT_LENGTH=%zu", strlen(body));
    return gt_decide_at(f, vars, body, now_ms);
}

static mw_verdict_t xr(gt_fixture_t *f, const char *body)
{
    return post_at(f, "/xmlrpc.php", "text/xml", body, GT_NOW);
}

/* Opens f with an XML-RPC route of action and a JSON route of action. */
static int open_calls(gt_fixture_t *f, const char *action,
                      suspect_conf_identity_t ids[2],
                      suspect_conf_route_t routes[2])
{
    suspect_conf_t conf;

    ids[0] = gt_ident("User", XR_FROM);
    ids[1] = gt_ident("User", "json:/u");
    routes[0] = gt_route(action, "/xmlrpc.php", &ids[0], 1);
    routes[0].pass_methods = "pingback.ping demo.sayHello";
    routes[1] = gt_route(action, "/json.php", &ids[1], 1);
    conf = gt_conf(routes, 2);
    conf.mode = SUSPECT_MODE_FORWARD;
    return gt_open(f, &conf);
}

static void test_each_call_counts(void)
{
    suspect_conf_identity_t ids[2];
    suspect_conf_route_t routes[2];
    gt_fixture_t f;
    mw_verdict_t v;

    CU_ASSERT_FATAL(open_calls(&f, "Two", ids, routes) == 0);
    v = xr(&f, MC_HEAD USERS("alice") PROFILE("bob") MC_TAIL);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(v.calls, 2);
    CU_ASSERT_EQUAL(gt_count(&f, "Two", "alice"), 1);
    CU_ASSERT_EQUAL(gt_count(&f, "Two", "bob"), 1);
    /* alice twice: her second call is her third attempt */
    v = xr(&f, MC_HEAD USERS("alice") PROFILE("alice") MC_TAIL);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_DENY);
    CU_ASSERT_EQUAL(gt_count(&f, "Two", "alice"), 2);
    /* one plain call is one attempt, as a form's */
    v = xr(&f, "<methodCall><methodName>wp.getUsersBlogs</methodName>"
               "<params><param>" S("carol") "</param></params></methodCall>");
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(v.calls, 1);
    CU_ASSERT_EQUAL(gt_count(&f, "Two", "carol"), 1);
    gt_close(&f);
}

static void test_methods(void)
{
    suspect_conf_identity_t ids[2];
    suspect_conf_route_t routes[2];
    gt_fixture_t f;
    mw_verdict_t v;

    CU_ASSERT_FATAL(open_calls(&f, "Two", ids, routes) == 0);
    v = xr(&f, MC_HEAD MC_CALL("pingback.ping", S("http://a/")) MC_TAIL);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_PASS);
    v = xr(&f, MC_HEAD MC_CALL("pingback.ping", S("http://a/")) PROFILE("dave")
                   MC_TAIL);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(gt_count(&f, "Two", "dave"), 1);
    /* a method the route has no reading for, even beside a known one */
    v = xr(&f, MC_HEAD PROFILE("erin")
                   MC_CALL("mt.getCategoryList", S("1") S("erin")) MC_TAIL);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_REJECT);
    CU_ASSERT_EQUAL(v.status, 400);
    CU_ASSERT_EQUAL(gt_count(&f, "Two", "erin"), 0);
    /* a base64 username (IXR decodes it) */
    v = xr(&f,
           MC_HEAD MC_CALL("wp.getUsersBlogs",
                           "<value><base64>ZXJpbg==</base64></value>") MC_TAIL);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_REJECT);
    CU_ASSERT_EQUAL(v.status, 400);
    /* sent as a form, over formMax, not XML */
    v = post_at(&f, "/xmlrpc.php", "application/x-www-form-urlencoded",
                MC_HEAD PROFILE("erin") MC_TAIL, GT_NOW);
    CU_ASSERT_EQUAL(v.status, 415);
    {
        size_t n = (64u << 10) + 100;
        char *big = malloc(n + 1);

        CU_ASSERT_FATAL(big != NULL);
        memset(big, ' ', n);
        memcpy(big, "<methodCall>", 12);
        big[n] = '\0';
        v = xr(&f, big);
        CU_ASSERT_EQUAL(v.status, 413);
        free(big);
    }
    v = xr(&f, "<methodCall>");
    CU_ASSERT_EQUAL(v.status, 400);
    CU_ASSERT_EQUAL(gt_count(&f, "Two", "erin"), 0);
    gt_close(&f);
}

/* Two denied calls: the answer is the restriction that ends last. */
static void test_longest_restriction(void)
{
    suspect_conf_identity_t ids[2];
    suspect_conf_route_t routes[2];
    const char *action = "SecureForgotAccount";
    const int64_t later = GT_NOW + 60000;
    gt_fixture_t f;
    mw_verdict_t v;

    CU_ASSERT_FATAL(open_calls(&f, action, ids, routes) == 0);
    v = post_at(&f, "/xmlrpc.php", "text/xml",
                MC_HEAD USERS("dave") USERS("dave") USERS("dave") USERS("dave")
                    MC_TAIL,
                GT_NOW);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_DENY);
    CU_ASSERT_EQUAL(v.decision.restriction_end_ms, GT_NOW + 1800000);
    v = post_at(&f, "/xmlrpc.php", "text/xml",
                MC_HEAD USERS("dave") USERS("frank") USERS("frank")
                    USERS("frank") USERS("frank") MC_TAIL,
                later);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_DENY);
    CU_ASSERT_EQUAL(v.calls, 5);
    CU_ASSERT_EQUAL(v.decision.restriction_end_ms, later + 1800000);
    gt_close(&f);
}

static void test_json(void)
{
    suspect_conf_identity_t ids[2];
    suspect_conf_route_t routes[2];
    gt_fixture_t f;
    mw_verdict_t v;

    CU_ASSERT_FATAL(open_calls(&f, "Two", ids, routes) == 0);
    v = post_at(&f, "/json.php", "application/json",
                "[{\"u\":27},{\"u\":\"grace\"}]", GT_NOW);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(v.calls, 2);
    CU_ASSERT_EQUAL(gt_count(&f, "Two", "27"), 1);
    CU_ASSERT_EQUAL(gt_count(&f, "Two", "grace"), 1);
    /* "27" and 27 are one account to PHP */
    v = post_at(&f, "/json.php", "application/json; charset=utf-8",
                "[{\"u\":\"27\"},{\"u\":27}]", GT_NOW);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_DENY);
    v = post_at(&f, "/json.php", "application/json", "{\"u\":true}", GT_NOW);
    CU_ASSERT_EQUAL(v.status, 400);
    v = post_at(&f, "/json.php", "application/json",
                "{\"u\":\"heidi\",\"u\":\"grace\"}", GT_NOW);
    CU_ASSERT_EQUAL(v.status, 400);
    v = post_at(&f, "/json.php", "text/plain", "{\"u\":\"heidi\"}", GT_NOW);
    CU_ASSERT_EQUAL(v.status, 415);
    CU_ASSERT_EQUAL(gt_count(&f, "Two", "heidi"), 0);
    /* no username in a call: that call is not counted (missing skip) */
    v = post_at(&f, "/json.php", "application/json", "[{\"x\":1}]", GT_NOW);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_PASS);
    gt_close(&f);
}

int guard_register_calls(CU_pSuite s)
{
    return CU_add_test(s, "calls: each call counts", test_each_call_counts) ==
                       NULL ||
                   CU_add_test(s, "calls: methods", test_methods) == NULL ||
                   CU_add_test(s, "calls: the longest restriction answers",
                               test_longest_restriction) == NULL ||
                   CU_add_test(s, "calls: JSON", test_json) == NULL
               ? -1
               : 0;
}
