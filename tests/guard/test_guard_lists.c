/*
 * test_guard_lists.c - allow and deny lists in decisions: a denied
 * address or value is refused before anything is counted (every request
 * for the global list, routed or not); an allowed value is left out of
 * the count, an allowed address leaves out the identities counting it,
 * and a request left without identity is never counted; a shadow route
 * lets a denied request through, marked; bad entries name their line; a
 * composite value names one combination of parts ('_' and '%' inside a
 * part escaped).
 */
#include <CUnit/CUnit.h>
#include <string.h>

#include "guard_test.h"

static suspect_conf_list_t list(const char *ip, const char *identity)
{
    suspect_conf_list_t l;

    memset(&l, 0, sizeof(l));
    l.ip = ip;
    l.identity = identity;
    l.line = 7;
    return l;
}

static void test_deny_and_allow(void)
{
    suspect_conf_identity_t ids[] = {gt_ident("MemberCode", "query:m"),
                                     gt_ident("ClientIp", "client-ip")};
    suspect_conf_route_t routes[] = {gt_route("Many", "/p", ids, 2)};
    suspect_conf_t conf = gt_conf(routes, 1);
    suspect_conf_list_t deny = list("203.0.113.0/24", "MemberCode=mallory");
    suspect_conf_list_t allow =
        list("10.0.0.0/8 2001:db8::/32", "MemberCode=monitor");
    const char *from_office[] = {"REQUEST_URI=/p", "QUERY_STRING=m=alice",
                                 "REMOTE_ADDR=10.1.2.3", NULL};
    const char *monitor_office[] = {"REQUEST_URI=/p", "QUERY_STRING=m=monitor",
                                    "REMOTE_ADDR=10.1.2.3", NULL};
    const char *bad_net[] = {"REQUEST_URI=/x", "REMOTE_ADDR=203.0.113.9", NULL};
    const char *mallory[] = {"REQUEST_URI=/p", "QUERY_STRING=m=mallory",
                             "REMOTE_ADDR=192.0.2.1", NULL};
    gt_fixture_t f;
    mw_verdict_t v;

    deny.status = 451;
    conf.deny = &deny;
    routes[0].allow = &allow;
    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    /* the office address is not counted; the member still is */
    v = gt_decide(&f, from_office, NULL);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "alice"), 1);
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "10.1.2.3"), 0);
    /* nothing left to count: never counted */
    for (int i = 0; i < 20; i++) {
        v = gt_decide(&f, monitor_office, NULL);
        CU_ASSERT_EQUAL(v.kind, MW_VERDICT_PASS);
        CU_ASSERT_STRING_EQUAL(v.why, "allow list");
    }
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "monitor"), 0);
    /* denied: any request from the network, routed or not */
    v = gt_decide(&f, bad_net, NULL);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_REJECT);
    CU_ASSERT_EQUAL(v.status, 451);
    CU_ASSERT_STRING_EQUAL(v.why, "deny list");
    /* denied by value, before counting */
    v = gt_decide(&f, mallory, NULL);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_REJECT);
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "mallory"), 0);
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "192.0.2.1"), 0);
    gt_close(&f);

    /* in shadow mode the denied request goes through, uncounted */
    routes[0].shadow = SUSPECT_SHADOW_ON;
    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    v = gt_decide(&f, mallory, NULL);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_PASS);
    CU_ASSERT_TRUE(v.would_deny);
    CU_ASSERT_EQUAL(v.status, 451);
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "mallory"), 0);
    gt_close(&f);
}

/* <Allow> on a composite identity: one entry, one pair of parts. */
static void test_composite_list(void)
{
    suspect_conf_identity_t id = gt_ident("Pair", "query:a query:b");
    suspect_conf_route_t route = gt_route("Many", "/app.cgi", &id, 1);
    suspect_conf_t conf = gt_conf(&route, 1);
    suspect_conf_list_t allow;
    const char *one[] = {"REQUEST_URI=/app.cgi", "QUERY_STRING=a=x_y&b=z",
                         NULL};
    const char *two[] = {"REQUEST_URI=/app.cgi", "QUERY_STRING=a=x&b=y_z",
                         NULL};
    const char *pct[] = {"REQUEST_URI=/app.cgi", "QUERY_STRING=a=x%25&b=w",
                         NULL};
    gt_fixture_t f;

    memset(&allow, 0, sizeof(allow));
    allow.identity = "Pair=x%5Fy_z Pair=x%25_w";
    allow.line = 3;
    route.allow = &allow;
    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    CU_ASSERT_STRING_EQUAL(gt_decide(&f, one, NULL).why, "allow list");
    CU_ASSERT_EQUAL(gt_decide(&f, two, NULL).kind, MW_VERDICT_ALLOW);
    CU_ASSERT_STRING_EQUAL(gt_decide(&f, pct, NULL).why, "allow list");
    gt_close(&f);

    /* The old join: "x_y_z" named both pairs; it names neither now. */
    allow.identity = "Pair=x_y_z";
    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    CU_ASSERT_EQUAL(gt_decide(&f, one, NULL).kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(gt_decide(&f, two, NULL).kind, MW_VERDICT_ALLOW);
    gt_close(&f);
}

static void test_bad_entries(void)
{
    suspect_conf_identity_t ids[] = {gt_ident("T", "client-ip")};
    suspect_conf_route_t routes[] = {gt_route("Many", "/p", ids, 1)};
    suspect_conf_t conf = gt_conf(routes, 1);
    suspect_conf_list_t bad_ip = list("10.0.0.1/8", NULL);
    suspect_conf_list_t bad_id = list(NULL, "=x");
    suspect_conf_list_t file = list(NULL, NULL);
    static const char text[] = "# office\n10.0.0.0/8\n\nLoginId=bob smith\n"
                               "10.0.0.300\n";
    mw_guard_t *g = NULL;
    suspect_err_t err;

    conf.allow = &bad_ip;
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(mw_guard_new(&conf, &g, &err), SUSPECT_E_CONFIG);
    CU_ASSERT_EQUAL(err.line, 7);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "Allow: "));
    conf.allow = &bad_id;
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(mw_guard_new(&conf, &g, &err), SUSPECT_E_CONFIG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "is not Type=value"));
    file.file = "/etc/suspect/allow.txt";
    file.file_text = text;
    file.file_len = sizeof(text) - 1;
    conf.allow = NULL;
    routes[0].deny = &file;
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(mw_guard_new(&conf, &g, &err), SUSPECT_E_CONFIG);
    CU_ASSERT_STRING_EQUAL(err.file, "/etc/suspect/allow.txt");
    CU_ASSERT_EQUAL(err.line, 5);
    CU_ASSERT_PTR_NULL(g);
}

int guard_register_lists(CU_pSuite s)
{
    return CU_add_test(s, "lists: deny and allow", test_deny_and_allow) ==
                       NULL ||
                   CU_add_test(s, "lists: bad entries", test_bad_entries) ==
                       NULL ||
                   CU_add_test(s, "lists: composite parts joined unambiguously",
                               test_composite_list) == NULL
               ? -1
               : 0;
}
