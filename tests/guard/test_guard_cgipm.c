/*
 * test_guard_cgipm.c - suite "guard", requests as Perl's CGI.pm reads
 * them next to PHP and Python: parameters split on ';' as well as '&'
 * (both readings counted, a parameter repeated under either refused),
 * "%uXXXX" escapes (which CGI.pm alone decodes) refused wherever a route
 * reads the source, cookies as CGI::Cookie reads them (',' separating
 * pairs, '&' separating values, '+' a space) counted.  Each request
 * here is a shape an attacker sent past the old reading.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

#include "guard_test.h"

/* Route "Many" on /app.cgi (op=login in the query when op) counting
 * Member from from. */
typedef struct pm {
    suspect_conf_identity_t id;
    suspect_conf_route_t route;
    gt_fixture_t f;
} pm_t;

static int pm_open(pm_t *p, const char *from, bool op)
{
    suspect_conf_t conf;

    p->id = gt_ident("Member", from);
    p->route = gt_route("Many", "/app.cgi", &p->id, 1);
    if (op) {
        p->route.param_name = "op";
        p->route.param_value = "login";
        p->route.param_in = SUSPECT_PARAM_QUERY;
    }
    conf = gt_conf(&p->route, 1);
    return gt_open(&p->f, &conf);
}

/* The verdict on POST /app.cgi with query qs, form body (NULL: none)
 * and Cookie header cookie (NULL: none). */
static mw_verdict_t pm_post(pm_t *p, const char *qs, const char *body,
                            const char *cookie)
{
    char ck[512];

    snprintf(ck, sizeof(ck), "HTTP_COOKIE=%s", cookie != NULL ? cookie : "");
    return gt_post(&p->f, "/app.cgi", qs, body, cookie != NULL ? ck : NULL);
}

/* ';' separates parameters for CGI.pm: the value it reads is counted. */
static void test_semicolon(void)
{
    pm_t p;
    mw_verdict_t v;

    if (pm_open(&p, "form:member", true) != 0) {
        CU_FAIL("fixture");
        return;
    }
    /* CGI.pm reads victim; PHP and Python "victim;x=1": both counted. */
    for (int i = 0; i < 3; i++) {
        char body[64];

        snprintf(body, sizeof(body), "member=victim;x=%d", i);
        CU_ASSERT_EQUAL(pm_post(&p, "op=login", body, NULL).kind,
                        MW_VERDICT_ALLOW);
    }
    CU_ASSERT_EQUAL(gt_count(&p.f, "Many", "victim"), 3);
    CU_ASSERT_EQUAL(gt_count(&p.f, "Many", "victim;x=0"), 1);
    /* Found by the ';' reading alone: counted, not missing. */
    CU_ASSERT_EQUAL(pm_post(&p, "op=login", "x=1;member=victim", NULL).kind,
                    MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(gt_count(&p.f, "Many", "victim"), 4);
    /* Repeated under the ';' reading with another value: CGI.pm reads
     * the first, so the copies are ambiguous, as with '&'. */
    v = pm_post(&p, "op=login", "member=decoy;member=victim", NULL);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_REJECT);
    CU_ASSERT_EQUAL(v.status, 400);
    CU_ASSERT_STRING_EQUAL(v.why, "ambiguous parameter");
    /* The same value repeated is not. */
    CU_ASSERT_EQUAL(pm_post(&p, "op=login", "member=ann;member=ann", NULL).kind,
                    MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(gt_count(&p.f, "Many", "ann"), 1);
    /* The route's own condition after a ';'. */
    CU_ASSERT_EQUAL(pm_post(&p, "x=1;op=login", "member=carol", NULL).kind,
                    MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(gt_count(&p.f, "Many", "carol"), 1);
    gt_close(&p.f);

    if (pm_open(&p, "query:member", false) != 0) {
        CU_FAIL("fixture");
        return;
    }
    CU_ASSERT_EQUAL(pm_post(&p, "a=1;member=dave", NULL, NULL).kind,
                    MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(gt_count(&p.f, "Many", "dave"), 1);
    gt_close(&p.f);
}

/* "%uXXXX" is refused wherever a route reads the source. */
static void test_u_escape(void)
{
    static const struct {
        const char *qs, *body, *cookie, *why;
    } cases[] = {
        {"op=%u006cogin", "member=victim", NULL, "%u escape in query string"},
        {"op=login", "%u006dember=victim", NULL, "%u escape in form body"},
        {"op=login", "member=vic%u0074im", NULL, "%u escape in form body"},
        {"op=login&x=%uD83D%uDE00", "member=victim", NULL,
         "%u escape in query string"},
    };
    pm_t p;

    if (pm_open(&p, "form:member", true) != 0) {
        CU_FAIL("fixture");
        return;
    }
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        mw_verdict_t v = pm_post(&p, cases[i].qs, cases[i].body, NULL);

        CU_ASSERT_EQUAL(v.kind, MW_VERDICT_REJECT);
        CU_ASSERT_EQUAL(v.status, 400);
        CU_ASSERT_PTR_NOT_NULL(v.why);
        if (v.why != NULL) {
            CU_ASSERT_STRING_EQUAL(v.why, cases[i].why);
        }
    }
    /* Not an escape: "%u" without four hex digits, and "%25u0041". */
    CU_ASSERT_EQUAL(pm_post(&p, "op=login", "member=a%u00g", NULL).kind,
                    MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(pm_post(&p, "op=login", "member=b%25u0041", NULL).kind,
                    MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(gt_count(&p.f, "Many", "b%u0041"), 1);
    /* A request no route reads is not refused. */
    {
        const char *vars[] = {"REQUEST_URI=/other", "REQUEST_METHOD=GET",
                              "QUERY_STRING=x=%u0041", NULL};

        CU_ASSERT_EQUAL(gt_decide(&p.f, vars, NULL).kind, MW_VERDICT_PASS);
    }
    gt_close(&p.f);

    if (pm_open(&p, "cookie:member", false) != 0) {
        CU_FAIL("fixture");
        return;
    }
    {
        mw_verdict_t v = pm_post(&p, "", NULL, "member=%u0076ictim");

        CU_ASSERT_EQUAL(v.kind, MW_VERDICT_REJECT);
        CU_ASSERT_EQUAL(v.status, 400);
    }
    gt_close(&p.f);
}

/* Cookies as CGI::Cookie reads them are counted. */
static void test_cgi_cookie(void)
{
    static const char *headers[] = {
        "member=m2&1",      "member=m2&2",
        "member=m2,x=3",    "x=4, member=m2",
        "x=5,member=m2&z",  "member=m2;x=6",
        "a=b ,member=m2&7", "member%3Dx=1,member=m2",
    };
    pm_t p;

    if (pm_open(&p, "cookie:member", false) != 0) {
        CU_FAIL("fixture");
        return;
    }
    for (size_t i = 0; i < sizeof(headers) / sizeof(headers[0]); i++) {
        CU_ASSERT_EQUAL(pm_post(&p, "", NULL, headers[i]).kind,
                        MW_VERDICT_ALLOW);
    }
    CU_ASSERT_EQUAL(gt_count(&p.f, "Many", "m2"), 8);
    /* '+' is a space for CGI::Cookie, kept by PHP: both counted. */
    CU_ASSERT_EQUAL(pm_post(&p, "", NULL, "member=m+3").kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(gt_count(&p.f, "Many", "m 3"), 1);
    CU_ASSERT_EQUAL(gt_count(&p.f, "Many", "m+3"), 1);
    gt_close(&p.f);
}

int guard_register_cgipm(CU_pSuite s)
{
    if (CU_add_test(s, "CGI.pm: ';' separates parameters", test_semicolon) ==
            NULL ||
        CU_add_test(s, "CGI.pm: %uXXXX refused", test_u_escape) == NULL ||
        CU_add_test(s, "CGI.pm: CGI::Cookie readings", test_cgi_cookie) ==
            NULL) {
        return -1;
    }
    return 0;
}
