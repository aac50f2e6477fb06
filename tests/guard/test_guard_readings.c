/*
 * test_guard_readings.c - suite "guard", identities read as applications
 * read them: a declared normaliser (case, accents, controls), the
 * default reading (PHP's trim(), a NUL read whole and cut), a value the
 * reading would empty (counted as it came, never missing), a part read
 * from alternative sources ($_REQUEST), the user of an Authorization
 * header (Basic, and scheme-blind), route conditions (when), and more
 * readings than a decision takes (400).
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guard_test.h"
#include "helpers/util.h"
#include "setup/check.h"

/* One route "Many" on /login.php counting the identity User from from
 * (normalize: norm, NULL for the default), with when conditions
 * when[0..nwhen) (kinds and names). */
typedef struct one {
    suspect_conf_identity_t id;
    suspect_conf_route_t route;
    gt_fixture_t f;
} one_t;

static int open_user(one_t *o, const char *from, const char *norm,
                     const suspect_conf_source_t *when, size_t nwhen)
{
    suspect_conf_t conf;

    o->id = gt_ident("Id", from);
    o->id.normalize = norm;
    o->route = gt_route("Many", "/login.php", &o->id, 1);
    for (size_t i = 0; i < nwhen; i++) {
        o->route.when[i] = when[i];
    }
    o->route.nwhen = nwhen;
    conf = gt_conf(&o->route, 1);
    return gt_open(&o->f, &conf);
}

/* The verdict on POST /login.php with query qs (NULL: none), a form body
 * (NULL: none) and one more variable extra (NULL: none). */
static mw_verdict_t post(one_t *o, const char *qs, const char *body,
                         const char *extra)
{
    return gt_post(&o->f, "/login.php", qs, body, extra);
}

/* Every spelling DokuWiki makes "alice" is one counter. */
static void test_normalize_spellings(void)
{
    static const char *bodies[] = {
        "u=alice",    "u=Alice",     "u=ALICE",    "u=%C3%A1lice",
        "u=alice_",   "u=alice.",    "u=%3Aalice", "u=al%01ice",
        "u=%00alice", "u=+alice%0A", "u[]=Alice",  "u=%C3%81LICE",
    };
    size_t n = sizeof(bodies) / sizeof(bodies[0]);
    one_t o;

    if (open_user(&o, "form:u|query:u",
                  "strip-controls casefold unaccent alnum", NULL, 0) != 0) {
        CU_FAIL("fixture");
        return;
    }
    for (size_t i = 0; i < n; i++) {
        CU_ASSERT_EQUAL(post(&o, NULL, bodies[i], NULL).kind, MW_VERDICT_ALLOW);
    }
    CU_ASSERT_EQUAL(gt_count(&o.f, "Many", "alice"), n);
    gt_close(&o.f);
}

/* A spelling the normaliser refuses (a character outside only:, an
 * entity it does not know) refuses the request, counting nothing; the
 * account's own spellings are counted as one. */
static void test_normalize_refused(void)
{
    static const char *refused[] = {
        "u=alice%C2%B2",               /* ² */
        "u=%C2%AAalice",               /* ª */
        "u=al%CE%B9ce",                /* Greek iota */
        "u=%26ZeroWidthSpace%3Balice", /* not in HTML 4 */
        "u=alice&x=1&u=alice%C2%B3",   /* ambiguous anyway */
    };
    static const char *counted[] = {
        "u=User%3Aalice",
        "u=a%26lrm%3Blice",
        "u=a%C5%82ice%E2%84%A2",
        "u=ALICE",
    };
    one_t o;

    if (open_user(&o, "form:u",
                  "html-entities strip-controls casefold unaccent alnum:: "
                  "strip-prefix:user: only:a-z0-9",
                  NULL, 0) != 0) {
        CU_FAIL("fixture");
        return;
    }
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        mw_verdict_t v = post(&o, NULL, refused[i], NULL);
        CU_ASSERT_EQUAL(v.kind, MW_VERDICT_REJECT);
        CU_ASSERT_EQUAL(v.status, 400);
        if (i < 4) {
            CU_ASSERT_STRING_EQUAL(v.why, "identity refused by its normalize");
        }
    }
    CU_ASSERT_EQUAL(gt_count(&o.f, "Many", "alice"), 0);
    for (size_t i = 0; i < sizeof(counted) / sizeof(counted[0]); i++) {
        CU_ASSERT_EQUAL(post(&o, NULL, counted[i], NULL).kind,
                        MW_VERDICT_ALLOW);
    }
    CU_ASSERT_EQUAL(gt_count(&o.f, "Many", "alice"), 4);
    gt_close(&o.f);
}

/* Without a normaliser: PHP's trim(), and a NUL both kept and cut; a
 * value the reading empties is counted as it came. */
static void test_default_readings(void)
{
    one_t o;

    if (open_user(&o, "form:u", NULL, NULL, 0) != 0) {
        CU_FAIL("fixture");
        return;
    }
    /* trim() reads "%00alice" as alice: counted, not missing. */
    CU_ASSERT_EQUAL(post(&o, NULL, "u=%00alice", NULL).kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(gt_count(&o.f, "Many", "alice"), 1);
    /* "bob%00x": PHP reads it whole, C cut: both counted. */
    CU_ASSERT_EQUAL(post(&o, NULL, "u=bob%00x", NULL).kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(gt_count(&o.f, "Many", "bob"), 1);
    /* Blanks only: counted as they came, not missing. */
    CU_ASSERT_EQUAL(post(&o, NULL, "u=+++", NULL).kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(gt_count(&o.f, "Many", "   "), 1);
    CU_ASSERT_EQUAL(post(&o, NULL, "u=+%09", NULL).kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(post(&o, NULL, "u=", NULL).kind, MW_VERDICT_PASS);
    CU_ASSERT_EQUAL(post(&o, NULL, "x=1", NULL).kind, MW_VERDICT_PASS);
    /* Case is kept when no normaliser says otherwise. */
    CU_ASSERT_EQUAL(post(&o, NULL, "u=+Alice", NULL).kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(gt_count(&o.f, "Many", "Alice"), 1);
    gt_close(&o.f);
}

/* form:u|query:u: each present value counts; the route's limit (Many is
 * 100 per window) applies to each. */
static void test_alternatives(void)
{
    one_t o;

    if (open_user(&o, "form:u|query:u", NULL, NULL, 0) != 0) {
        CU_FAIL("fixture");
        return;
    }
    CU_ASSERT_EQUAL(post(&o, "u=alice", NULL, NULL).kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(post(&o, NULL, "u=alice", NULL).kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(post(&o, "u=alice", "u=bob", NULL).kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(post(&o, "u=carol", "u=carol", NULL).kind,
                    MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(gt_count(&o.f, "Many", "alice"), 3);
    CU_ASSERT_EQUAL(gt_count(&o.f, "Many", "bob"), 1);
    CU_ASSERT_EQUAL(gt_count(&o.f, "Many", "carol"), 1);
    /* An empty u in the body does not hide the query's. */
    CU_ASSERT_EQUAL(post(&o, "u=dave", "u=", NULL).kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(gt_count(&o.f, "Many", "dave"), 1);
    gt_close(&o.f);
}

/* The user of an Authorization header, two readings. */
static void test_auth_user(void)
{
    static const struct {
        const char *from;
        const char *hdr;
        const char *user; /* NULL: none (PASS) */
    } cases[] = {
        {"auth-user:basic", "Basic YWxpY2U6eA==", "alice"},
        {"auth-user:basic", "bASIC YWxpY2U6eA==", "alice"},
        {"auth-user:basic", "Bearer YWxpY2U6eA==", NULL},
        {"auth-user:basic", "Basic YWxpY2U=", NULL}, /* no ':' */
        {"auth-user:any", "Bearer YWxpY2U6eA==", "alice"},
        {"auth-user:any", "XXXXXXYWxpY2U6eA", "alice"},
        {"auth-user:any", "Basic YW=xp!Y2U6eA", "alice"},
        {"auth-user:any", "Basic Ym9i", "bob"}, /* no ':': all of it */
        {"auth-user:any", "Basic", NULL},
        {"auth-user:any", "Basic Og==", NULL}, /* ":": an empty user */
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char var[128];
        one_t o;
        mw_verdict_t v;

        if (open_user(&o, cases[i].from, "login", NULL, 0) != 0) {
            CU_FAIL("fixture");
            continue;
        }
        snprintf(var, sizeof(var), "HTTP_AUTHORIZATION=%s", cases[i].hdr);
        v = post(&o, NULL, NULL, var);
        CU_ASSERT_EQUAL(v.kind, cases[i].user != NULL ? MW_VERDICT_ALLOW
                                                      : MW_VERDICT_PASS);
        if (cases[i].user != NULL) {
            CU_ASSERT_EQUAL(gt_count(&o.f, "Many", cases[i].user), 1);
        }
        gt_close(&o.f);
    }
}

/* when: the route takes only requests that carry u (query or body) or
 * an Authorization header. */
static void test_when(void)
{
    suspect_conf_source_t when[] = {
        {SUSPECT_SRC_QUERY, "u", 0},
        {SUSPECT_SRC_FORM, "u", 0},
        {SUSPECT_SRC_HEADER, "Authorization", 0},
    };
    one_t o;
    mw_verdict_t v;

    if (open_user(&o, "form:u|query:u|auth-user:any", "login", when, 3) != 0) {
        CU_FAIL("fixture");
        return;
    }
    v = post(&o, "id=start", "x=1", NULL);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_PASS);
    CU_ASSERT_PTR_NULL(v.route);
    CU_ASSERT_EQUAL(post(&o, "u=Alice", NULL, NULL).kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(post(&o, NULL, "p=x&u[x]=alice", NULL).kind,
                    MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(post(&o, NULL, "u=",
                         "HTTP_AUTHORIZATION=Bearer "
                         "YWxpY2U6eA==")
                        .kind,
                    MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(gt_count(&o.f, "Many", "alice"), 3);
    /* u present, empty, nothing else: the route, no identity. */
    v = post(&o, "u=", NULL, NULL);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_PASS);
    CU_ASSERT_PTR_NOT_NULL(v.route);
    gt_close(&o.f);
}

/* More readings than one decision takes: 400, nothing counted. */
static void test_too_many_readings(void)
{
    one_t o;
    mw_verdict_t v;

    if (open_user(&o, "form:a|query:a form:b|query:b form:c|query:c", NULL,
                  NULL, 0) != 0) {
        CU_FAIL("fixture");
        return;
    }
    /* 2 x 2 x 2 = 8: the most one decision takes. */
    v = post(&o, "a=1&b=1&c=1", "a=2&b=2&c=2", NULL);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_ALLOW);
    /* 2 x 2 x 3 (c with a NUL: whole and cut) = 12. */
    v = post(&o, "a=1&b=1&c=1", "a=2&b=2&c=2%003", NULL);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_REJECT);
    CU_ASSERT_EQUAL(v.status, 400);
    gt_close(&o.f);
}

/* A normalize text the normaliser refuses fails the guard, file:line. */
static void test_bad_normalize(void)
{
    suspect_conf_identity_t id = gt_ident("Id", "form:u");
    suspect_conf_route_t route = gt_route("Many", "/login.php", &id, 1);
    suspect_conf_t conf = gt_conf(&route, 1);
    mw_guard_t *g = NULL;
    suspect_err_t err;

    id.normalize = "trim lowwer";
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(mw_guard_new(&conf, &g, &err), SUSPECT_E_CONFIG);
    CU_ASSERT_PTR_NULL(g);
    CU_ASSERT_STRING_EQUAL(err.text, "Identity: normalize step 'lowwer' is "
                                     "unknown");
    CU_ASSERT_EQUAL(err.line, 20);
}

/* --check prints every condition: two routes that differ in paramIn
 * or when print apart; alternatives and the normaliser show. */
static void test_check_prints(void)
{
    static const char xml[] =
        "<Suspect><Limits path='limits.xml'/><Cgi root='/srv'/>"
        "<Route action='Many' path='/a' param='do=login' paramIn='query'>"
        "<Identity type='U' from='form:u'/></Route>"
        "<Route action='Many' path='/a' param='do=login' paramIn='any'>"
        "<Identity type='U' from='form:u'/></Route>"
        "<Route action='Many' prefix='/' when='param:u header:Authorization'>"
        "<Identity type='U' from='form:u|query:u|auth-user:any client-ip' "
        "normalize='login unaccent'/></Route>"
        "<Route action='Many' prefix='/b' when='request:u'>"
        "<Identity type='U' from='request:u'/></Route></Suspect>";
    static const char lim[] =
        "<ArrayOfSuspectUsageSettingEntity><SuspectUsageSettingEntity "
        "Action='Many' LimitCount='5' LimitDuration='60'/>"
        "</ArrayOfSuspectUsageSettingEntity>";
    char path[TEST_PATH_MAX], out_path[TEST_PATH_MAX];
    char *dir = test_mkdtemp();
    char *text;
    FILE *out, *errs;

    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    snprintf(path, sizeof(path), "%s/limits.xml", dir);
    CU_ASSERT_EQUAL(test_write_file(path, lim, strlen(lim)), 0);
    snprintf(path, sizeof(path), "%s/suspect.xml", dir);
    CU_ASSERT_EQUAL(test_write_file(path, xml, strlen(xml)), 0);
    snprintf(out_path, sizeof(out_path), "%s/out", dir);
    out = fopen(out_path, "w");
    errs = fopen("/dev/null", "w");
    CU_ASSERT_FATAL(out != NULL && errs != NULL);
    CU_ASSERT_EQUAL(mw_check(path, out, errs), 0);
    fclose(out);
    fclose(errs);
    text = test_read_file(out_path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "ANY /a [do=login in query] -> Many"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(text, "ANY /a [do=login in query|form] -> Many"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(text, "ANY /* when query:u|form:u|header:Authorization"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "U = form:u|query:u|auth-user:any + "
                                        "client-ip (normalize: login "
                                        "unaccent)"));
    /* request:NAME is what PHP may put in $_REQUEST: query, body, cookie */
    CU_ASSERT_PTR_NOT_NULL(
        strstr(text, "ANY /b* when query:u|form:u|cookie:u"));
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "U = query:u|form:u|cookie:u"));
    free(text);
    test_rmtree(dir);
    free(dir);
}

int guard_register_readings(CU_pSuite s)
{
    if (CU_add_test(s, "readings: normalize spellings",
                    test_normalize_spellings) == NULL ||
        CU_add_test(s, "readings: normalize refuses", test_normalize_refused) ==
            NULL ||
        CU_add_test(s, "readings: default, NUL, never missing",
                    test_default_readings) == NULL ||
        CU_add_test(s, "readings: alternative sources", test_alternatives) ==
            NULL ||
        CU_add_test(s, "readings: Authorization user", test_auth_user) ==
            NULL ||
        CU_add_test(s, "readings: when conditions", test_when) == NULL ||
        CU_add_test(s, "readings: too many", test_too_many_readings) == NULL ||
        CU_add_test(s, "readings: bad normalize", test_bad_normalize) == NULL ||
        CU_add_test(s, "readings: --check prints conditions",
                    test_check_prints) == NULL) {
        return -1;
    }
    return 0;
}
