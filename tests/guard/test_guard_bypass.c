/*
 * test_guard_bypass.c - suite "guard", the ways a request could reach the
 * app as one action, for one member, while being counted as another or
 * not at all: PHP's spelling of parameter names ("+op", "member[]"), ';'
 * in conditions, two routes met by copies of one parameter, the media type as
 * PHP reads it, percent-encoded cookies, bodies longer than form_max (a 413,
 * never a guess from the head), and the script the web server runs
 * (SCRIPT_NAME, DOCUMENT_URI) next to the path the client asked for.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers/fakereq.h"
#include "guard_test.h"

#define FORM "CONTENT_TYPE=application/x-www-form-urlencoded"

/* One route "Many" on path, for the identity from, with the condition
 * param (NULL: none) looked for in where. */
static int open_route(gt_fixture_t *f, suspect_conf_identity_t *id,
                      suspect_conf_route_t *route, const char *path,
                      const char *from, const char *param,
                      suspect_param_in_t where)
{
    suspect_conf_t conf;
    const char *eq = param != NULL ? strchr(param, '=') : NULL;

    *id = gt_ident("Id", from);
    *route = gt_route("Many", path, id, 1);
    if (param != NULL) {
        route->param_name =
            gt_name(param, eq != NULL ? (size_t)(eq - param) : strlen(param));
        route->param_value = eq != NULL ? eq + 1 : NULL;
        route->param_in = where;
    }
    conf = gt_conf(route, 1);
    conf.form_max = 64;
    return gt_open(f, &conf);
}

/* The verdict on a GET of uri (its query as QUERY_STRING) with one more
 * variable extra (NULL: none). */
static mw_verdict_t get(gt_fixture_t *f, const char *uri, const char *extra)
{
    char u[512], q[512];
    const char *qs = strchr(uri, '?');
    const char *vars[] = {"REQUEST_METHOD=GET",    u,     q,
                          "REMOTE_ADDR=192.0.2.1", extra, NULL};

    snprintf(u, sizeof(u), "REQUEST_URI=%s", uri);
    snprintf(q, sizeof(q), "QUERY_STRING=%s", qs != NULL ? qs + 1 : "");
    return gt_decide(f, vars, NULL);
}

/* ---- PHP's parameter names ----------------------------------------------- */

/* "?+op=forgot" is PHP's op=forgot: the route must see it too. */
static void test_php_names_route(void)
{
    static const char *const hits[] = {
        "/a?+op=forgot",        "/a?%20op=forgot",     "/a?op%00x=forgot",
        "/a?op[]=forgot",       "/a?op%5Bk%5D=forgot", "/a?x=1&++op=forgot",
        "/a?op=view&+op=forgot"};
    static const char *const misses[] = {"/a?op_=forgot", "/a?Op=forgot",
                                         "/a?[op]=forgot", "/a?op[=forgot",
                                         "/a?xop=forgot"};
    suspect_conf_identity_t id;
    suspect_conf_route_t route;
    gt_fixture_t f;

    if (open_route(&f, &id, &route, "/a", "client-ip", "op=forgot",
                   SUSPECT_PARAM_QUERY) != 0) {
        CU_FAIL("fixture");
        return;
    }
    for (size_t i = 0; i < sizeof(hits) / sizeof(hits[0]); i++) {
        mw_verdict_t v = get(&f, hits[i], NULL);
        CU_ASSERT_PTR_NOT_NULL(v.route);
        if (v.route == NULL) {
            fprintf(stderr, "\n  %s: no route\n", hits[i]);
        }
    }
    for (size_t i = 0; i < sizeof(misses) / sizeof(misses[0]); i++) {
        CU_ASSERT_PTR_NULL(get(&f, misses[i], NULL).route);
    }
    gt_close(&f);
}

/* "member=rN&+member=victim": PHP acts for victim, so the two copies are
 * one ambiguous parameter (400), in the query and in the body. */
static void test_php_names_identity(void)
{
    static const struct {
        const char *qs;
        mw_verdict_kind_t want;
    } cases[] = {
        {"member=rN&+member=victim", MW_VERDICT_REJECT},
        {"member=rN&member%5B%5D=victim", MW_VERDICT_REJECT},
        {"member=rN&member%00x=victim", MW_VERDICT_REJECT},
        {"+member=victim", MW_VERDICT_ALLOW},
        {"member=rN&+member=rN", MW_VERDICT_ALLOW},
        {"member=rN&member_=victim", MW_VERDICT_ALLOW},
    };
    suspect_conf_identity_t id;
    suspect_conf_route_t route;
    gt_fixture_t f;
    char uri[128];

    if (open_route(&f, &id, &route, "/a", "query:member", NULL, 0) != 0) {
        CU_FAIL("fixture");
        return;
    }
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        mw_verdict_t v;

        snprintf(uri, sizeof(uri), "/a?%s", cases[i].qs);
        v = get(&f, uri, NULL);
        CU_ASSERT_EQUAL(v.kind, cases[i].want);
        if (v.kind == MW_VERDICT_REJECT) {
            CU_ASSERT_EQUAL(v.status, 400);
            CU_ASSERT_STRING_EQUAL(v.why, "ambiguous parameter");
        }
    }
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "victim"), 1);
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "rN"), 2);
    gt_close(&f);

    if (open_route(&f, &id, &route, "/a", "form:member", NULL, 0) != 0) {
        CU_FAIL("fixture");
        return;
    }
    {
        const char *vars[] = {"REQUEST_URI=/a", FORM, NULL};
        mw_verdict_t v = gt_decide(&f, vars, "member=rN&+member=victim");

        CU_ASSERT_EQUAL(v.kind, MW_VERDICT_REJECT);
        CU_ASSERT_EQUAL(v.status, 400);
    }
    gt_close(&f);
}

/* ---- ';' in conditions ------------------------------------------------- */

/* CGI.pm splits on ';' too: a condition is met split either way, and
 * an identity is read split either way. */
static void test_semicolon_conditions(void)
{
    suspect_conf_identity_t id;
    suspect_conf_route_t route;
    gt_fixture_t f;
    mw_verdict_t v;

    if (open_route(&f, &id, &route, "/a", "query:member", "op=forgot",
                   SUSPECT_PARAM_QUERY) != 0) {
        CU_FAIL("fixture");
        return;
    }
    CU_ASSERT_PTR_NOT_NULL(get(&f, "/a?x=1;op=forgot", NULL).route);
    CU_ASSERT_PTR_NOT_NULL(get(&f, "/a?op=view;op=forgot&y", NULL).route);
    CU_ASSERT_PTR_NULL(get(&f, "/a?op=view%3Bop=forgot", NULL).route);
    /* Split on '&' alone one value "a;member=b", split on ';' too two
     * copies that differ, which CGI.pm reads as a or as both: refused. */
    v = get(&f, "/a?op=forgot&member=a;member=b", NULL);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_REJECT);
    CU_ASSERT_EQUAL(v.status, 400);
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "a;member=b"), 0);
    /* "a;x": "a;x" and "a", both counted. */
    v = get(&f, "/a?op=forgot&member=a;x", NULL);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "a;x"), 1);
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "a"), 1);
    gt_close(&f);

    /* A value holding ';' still matches split on '&' alone. */
    if (open_route(&f, &id, &route, "/a", "client-ip", "op=a;b",
                   SUSPECT_PARAM_QUERY) != 0) {
        CU_FAIL("fixture");
        return;
    }
    CU_ASSERT_PTR_NOT_NULL(get(&f, "/a?op=a;b", NULL).route);
    CU_ASSERT_PTR_NULL(get(&f, "/a?op=a", NULL).route);
    gt_close(&f);
}

/* ---- rival routes ------------------------------------------------------ */

/* "?op=login&op=promo": the login route matches first, PHP runs promo.
 * Two routes on one parameter that both match: a 400, not a guess. */
static void test_rival_routes(void)
{
    suspect_conf_identity_t ids[] = {gt_ident("ClientIp", "client-ip")};
    suspect_conf_route_t routes[] = {gt_route("One", "/app", ids, 1),
                                     gt_route("Two", "/app", ids, 1),
                                     gt_route("Many", "/app", ids, 1)};
    suspect_conf_t conf = gt_conf(routes, 3);
    static const struct {
        const char *uri;
        const char *want; /* the action, "-" none, "400" */
    } cases[] = {
        {"/app?op=login", "One"},           {"/app?op=promo", "Two"},
        {"/app?op=view&op=login", "One"},   {"/app?op=login&op=login", "One"},
        {"/app?op=login&op=promo", "400"},  {"/app?op=promo&op=login", "400"},
        {"/app?op=promo&+op=login", "400"}, {"/app?op=promo&x;op=login", "400"},
        {"/app?debug&op=promo", "Two"},     {"/app?op=view", "-"},
    };
    gt_fixture_t f;

    routes[0].param_name = routes[1].param_name = "op";
    routes[0].param_value = "login";
    routes[1].param_value = "promo";
    routes[2].param_name = "debug"; /* presence only: no rival */
    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        mw_verdict_t v = get(&f, cases[i].uri, NULL);
        const char *got = v.kind == MW_VERDICT_REJECT ? "400"
                          : v.route != NULL           ? v.route->action
                                                      : "-";

        CU_ASSERT_STRING_EQUAL(got, cases[i].want);
        if (strcmp(got, cases[i].want) != 0) {
            fprintf(stderr, "\n  %s: got %s\n", cases[i].uri, got);
        }
        if (v.kind == MW_VERDICT_REJECT) {
            CU_ASSERT_EQUAL(v.status, 400);
            CU_ASSERT_STRING_EQUAL(v.why, "ambiguous route");
        }
    }
    /* A rival for another method is not one: the app checks it too. */
    routes[1].nmethods = 1;
    routes[1].methods[0] = "POST";
    gt_close(&f);
    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    CU_ASSERT_STRING_EQUAL(
        get(&f, "/app?op=login&op=promo", NULL).route->action, "One");
    gt_close(&f);
}

/* ---- PHP's $_REQUEST ---------------------------------------------------- */

/* The action a POST of body to uri with Cookie header cookie (NULL: none)
 * is counted as, "-" for none, "400" for a refusal. */
static const char *request_action(gt_fixture_t *f, const char *uri,
                                  const char *body, const char *cookie)
{
    char u[256], q[256], l[64], c[256];
    const char *qs = strchr(uri, '?');
    const char *vars[] = {"REQUEST_METHOD=POST",
                          u,
                          q,
                          l,
                          "CONTENT_TYPE=application/x-www-form-urlencoded",
                          "REMOTE_ADDR=192.0.2.1",
                          cookie != NULL ? c : NULL,
                          NULL};
    fakereq_t r;
    mw_verdict_t v;

    snprintf(u, sizeof(u), "REQUEST_URI=%s", uri);
    snprintf(q, sizeof(q), "QUERY_STRING=%s", qs != NULL ? qs + 1 : "");
    snprintf(l, sizeof(l), "CONTENT_LENGTH=%zu", strlen(body));
    snprintf(c, sizeof(c), "HTTP_COOKIE=%s", cookie != NULL ? cookie : "");
    fakereq_init(&r, vars, body, strlen(body));
    CU_ASSERT_EQUAL(
        mw_guard_decide(f->g, f->lim, f->store, &r.req, GT_NOW, &v, NULL),
        SUSPECT_OK);
    fakereq_free(&r);
    if (v.kind == MW_VERDICT_REJECT) {
        CU_ASSERT_EQUAL(v.status, 400);
        return "400";
    }
    return v.route != NULL ? v.route->action : "-";
}

/* WordPress's wp-login.php runs $_REQUEST['action']: a reset route for
 * action=lostpassword (paramIn="request"), the login for the rest.  A
 * copy that disagrees, in the query, the body or a cookie, or a value
 * only in a cookie, could run the login under some php.ini while the
 * reset counted it: refused. */
static void test_request_copies(void)
{
    suspect_conf_identity_t ids[] = {gt_ident("ClientIp", "client-ip")};
    suspect_conf_route_t routes[] = {gt_route("One", "/wp-login.php", ids, 1),
                                     gt_route("Two", "/wp-login.php", ids, 1)};
    suspect_conf_t conf = gt_conf(routes, 2);
    static const struct {
        const char *uri, *body, *cookie;
        const char *want; /* One = reset, Two = login */
    } cases[] = {
        {"/wp-login.php?action=lostpassword", "user_login=alice", NULL, "One"},
        {"/wp-login.php", "action=lostpassword&user_login=a", NULL, "One"},
        {"/wp-login.php?action=lostpassword", "action=lostpassword",
         "action=lostpassword", "One"},
        {"/wp-login.php", "log=alice&pwd=x", NULL, "Two"},
        {"/wp-login.php?action=login", "log=alice&pwd=x", NULL, "Two"},
        {"/wp-login.php?action=lostpassword", "log=alice&pwd=x", "action=login",
         "400"},
        {"/wp-login.php?action=lostpassword", "action=login&log=a&pwd=x", NULL,
         "400"},
        {"/wp-login.php?action=lostpassword&action=login", "log=a", NULL,
         "400"},
        {"/wp-login.php?action=lostpassword;action=login", "log=a", NULL,
         "400"},
        {"/wp-login.php?+action=lostpassword", "action[]=login", NULL, "400"},
        {"/wp-login.php", "log=alice&pwd=x", "action=lostpassword", "400"},
        {"/wp-login.php?action=lostpassword", "log=a",
         "action=lostpassword; action=login", "One"},
        {"/wp-login.php?action=lostpassword", "log=a",
         "act%69on=login; action=lostpassword", "400"},
    };
    gt_fixture_t f;

    routes[0].param_name = "action";
    routes[0].param_value = "lostpassword";
    routes[0].param_in = SUSPECT_PARAM_REQUEST;
    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *got =
            request_action(&f, cases[i].uri, cases[i].body, cases[i].cookie);

        CU_ASSERT_STRING_EQUAL(got, cases[i].want);
        if (strcmp(got, cases[i].want) != 0) {
            fprintf(stderr, "\n  %s %s [%s]: got %s\n", cases[i].uri,
                    cases[i].body, cases[i].cookie ? cases[i].cookie : "", got);
        }
    }
    gt_close(&f);
}

/* ---- the media type ---------------------------------------------------- */

/* PHP's media type ends at ';', ',' or a space, in any case; CGI.pm
 * takes any type that starts with the form's, and a body without one. */
static void test_content_type(void)
{
    static const struct {
        const char *type;
        mw_verdict_kind_t kind;
    } cases[] = {
        {"application/x-www-form-urlencoded", MW_VERDICT_ALLOW},
        {"application/x-www-form-urlencoded,x", MW_VERDICT_ALLOW},
        {"application/x-www-form-urlencoded;charset=utf-8", MW_VERDICT_ALLOW},
        {"application/x-www-form-urlencoded x", MW_VERDICT_ALLOW},
        {"APPLICATION/X-WWW-FORM-URLENCODED,", MW_VERDICT_ALLOW},
        {" application/x-www-form-urlencoded", MW_VERDICT_ALLOW},
        /* Perl's CGI.pm: any type starting with the form's, and none. */
        {"application/x-www-form-urlencodedx", MW_VERDICT_ALLOW},
        {"application/x-www-form-urlencoded-x", MW_VERDICT_ALLOW},
        {"", MW_VERDICT_ALLOW},
        {"  ", MW_VERDICT_ALLOW},
        {"text/plain,application/x-www-form-urlencoded", MW_VERDICT_PASS},
        {"text/plain", MW_VERDICT_PASS},
        /* Multipart (CGI.pm: any type starting so; Python's cgi: any
         * multipart type): read as one, and this body holds no part. */
        {"multipart/form-data; boundary=x", MW_VERDICT_PASS},
        {"multipart/form-datax; boundary=x", MW_VERDICT_PASS},
        {"Multipart/Mixed; boundary=x", MW_VERDICT_PASS},
        {"multipart/form-data", MW_VERDICT_REJECT},
    };
    suspect_conf_identity_t id;
    suspect_conf_route_t route;
    gt_fixture_t f;
    char t[128];

    if (open_route(&f, &id, &route, "/a", "form:member", NULL, 0) != 0) {
        CU_FAIL("fixture");
        return;
    }
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *vars[] = {"REQUEST_URI=/a", t, NULL};
        mw_verdict_t v;

        snprintf(t, sizeof(t), "CONTENT_TYPE=%s", cases[i].type);
        v = gt_decide(&f, vars, "member=m1");
        CU_ASSERT_EQUAL(v.kind, cases[i].kind);
        if (v.kind != cases[i].kind) {
            fprintf(stderr, "\n  [%s]: verdict %d\n", cases[i].type, v.kind);
        }
    }
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "m1"), 10);
    gt_close(&f);
}

/* ---- cookies ----------------------------------------------------------- */

/* PHP decodes cookie values: "sid=%61bc" is session abc. */
static void test_cookie_decoded(void)
{
    suspect_conf_identity_t id;
    suspect_conf_route_t route;
    gt_fixture_t f;

    if (open_route(&f, &id, &route, "/a", "cookie:sid", NULL, 0) != 0) {
        CU_FAIL("fixture");
        return;
    }
    CU_ASSERT_EQUAL(get(&f, "/a", "HTTP_COOKIE=sid=abc").kind,
                    MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(get(&f, "/a", "HTTP_COOKIE=sid=%61bc").kind,
                    MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(get(&f, "/a", "HTTP_COOKIE=x=1; sid=%61%62%63").kind,
                    MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "abc"), 3);
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "%61bc"), 0);
    gt_close(&f);
}

/* ---- bodies over form_max ---------------------------------------------- */

/* A POST of body (urlencoded unless type says otherwise) to uri; the
 * verdict, the response written for it in out (size bytes). */
static mw_verdict_t post(gt_fixture_t *f, const char *uri, const char *type,
                         const char *body, size_t *reads, char *out,
                         size_t size)
{
    char u[256], q[256], t[128], l[64];
    const char *qs = strchr(uri, '?');
    const char *vars[] = {"REQUEST_METHOD=POST",   u,   q, t, l,
                          "REMOTE_ADDR=192.0.2.1", NULL};
    fakereq_t r;
    mw_verdict_t v;

    snprintf(u, sizeof(u), "REQUEST_URI=%s", uri);
    snprintf(q, sizeof(q), "QUERY_STRING=%s", qs != NULL ? qs + 1 : "");
    snprintf(t, sizeof(t), "CONTENT_TYPE=%s",
             type != NULL ? type : "application/x-www-form-urlencoded");
    snprintf(l, sizeof(l), "CONTENT_LENGTH=%zu", strlen(body));
    fakereq_init(&r, vars, body, strlen(body));
    CU_ASSERT_EQUAL(
        mw_guard_decide(f->g, f->lim, f->store, &r.req, GT_NOW, &v, NULL),
        SUSPECT_OK);
    if (v.kind == MW_VERDICT_REJECT) {
        CU_ASSERT_EQUAL(mw_guard_respond(f->g, &r.req, &v), 0);
    }
    snprintf(out, size, "%s", r.out != NULL ? r.out : "");
    *reads = r.reads;
    fakereq_free(&r);
    return v;
}

/* "member=rN&x=<long>&member=victim": the copy PHP reads lies past
 * form_max, so nothing may be counted from the head: a 413. */
static void test_form_over_max_identity(void)
{
    char big[256], out[512];
    suspect_conf_identity_t id;
    suspect_conf_route_t route;
    gt_fixture_t f;
    mw_verdict_t v;
    size_t reads = 0;

    if (open_route(&f, &id, &route, "/a", "form:member", NULL, 0) != 0) {
        CU_FAIL("fixture");
        return;
    }
    snprintf(big, sizeof(big), "member=rN&x=%0100d&member=victim", 0);
    v = post(&f, "/a", NULL, big, &reads, out, sizeof(out));
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_REJECT);
    CU_ASSERT_EQUAL(v.status, 413);
    CU_ASSERT_STRING_EQUAL(v.why, "form body over formMax");
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "Status: 413 Content Too Large\r\n"));
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "rN"), 0);
    /* The parameter past the bound: a 413 too, not "no identity". */
    snprintf(big, sizeof(big), "x=%0100d&member=v", 0);
    v = post(&f, "/a", NULL, big, &reads, out, sizeof(out));
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_REJECT);
    CU_ASSERT_EQUAL(v.status, 413);
    /* Exactly form_max bytes fit. */
    snprintf(big, sizeof(big), "member=v&x=%053d", 0);
    CU_ASSERT_EQUAL(strlen(big), 64);
    v = post(&f, "/a", NULL, big, &reads, out, sizeof(out));
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_ALLOW);
    /* Another media type is never read, however long. */
    snprintf(big, sizeof(big), "member=rN&x=%0100d", 0);
    v = post(&f, "/a", "text/plain", big, &reads, out, sizeof(out));
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_PASS);
    CU_ASSERT_EQUAL(reads, 0);
    gt_close(&f);
}

/* A condition that needs the long body cannot be decided: 413 without a
 * route; one the query meets reads no body, so a long one is fine. */
static void test_form_over_max_condition(void)
{
    char big[256], out[512];
    suspect_conf_identity_t id;
    suspect_conf_route_t route;
    gt_fixture_t f;
    mw_verdict_t v;
    size_t reads = 0;

    if (open_route(&f, &id, &route, "/a", "client-ip", "op=forgot",
                   SUSPECT_PARAM_ANY) != 0) {
        CU_FAIL("fixture");
        return;
    }
    snprintf(big, sizeof(big), "x=%0100d&op=forgot", 0);
    v = post(&f, "/a", NULL, big, &reads, out, sizeof(out));
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_REJECT);
    CU_ASSERT_EQUAL(v.status, 413);
    CU_ASSERT_PTR_NULL(v.route);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "413 Content Too Large"));
    v = post(&f, "/a?op=forgot", NULL, big, &reads, out, sizeof(out));
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(reads, 0);
    /* Another path never looks at the body. */
    v = post(&f, "/b", NULL, big, &reads, out, sizeof(out));
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_PASS);
    CU_ASSERT_EQUAL(reads, 0);
    gt_close(&f);
}

/* ---- the script that runs ---------------------------------------------- */

/* nginx "index index.php": "POST /?op=login" runs /index.php.  Any of
 * REQUEST_URI, SCRIPT_NAME + PATH_INFO and DOCUMENT_URI may match; the
 * request is counted once. */
static void test_script_paths(void)
{
    const char *index[] = {"REQUEST_URI=/?op=login", "QUERY_STRING=op=login",
                           "SCRIPT_NAME=/index.php", "DOCUMENT_URI=/index.php",
                           "REMOTE_ADDR=192.0.2.1",  NULL};
    const char *doc[] = {"REQUEST_URI=/x?op=login", "QUERY_STRING=op=login",
                         "SCRIPT_NAME=/x",          "DOCUMENT_URI=/index.php",
                         "REMOTE_ADDR=192.0.2.2",   NULL};
    const char *info[] = {"REQUEST_URI=/pretty/url?op=login",
                          "QUERY_STRING=op=login",
                          "SCRIPT_NAME=/index.php",
                          "PATH_INFO=/pretty/url",
                          "REMOTE_ADDR=192.0.2.3",
                          NULL};
    const char *enc[] = {"REQUEST_URI=/?op=login", "QUERY_STRING=op=login",
                         "SCRIPT_NAME=//./index.php", "REMOTE_ADDR=192.0.2.4",
                         NULL};
    const char *bad[] = {"REQUEST_URI=/?op=login", "QUERY_STRING=op=login",
                         "SCRIPT_NAME=/../index.php", "REMOTE_ADDR=192.0.2.5",
                         NULL};
    const char *other[] = {"REQUEST_URI=/?op=login", "QUERY_STRING=op=login",
                           "SCRIPT_NAME=/other.php", "DOCUMENT_URI=/other.php",
                           "REMOTE_ADDR=192.0.2.6",  NULL};
    suspect_conf_identity_t id;
    suspect_conf_route_t route;
    gt_fixture_t f;
    mw_verdict_t v;

    if (open_route(&f, &id, &route, "/index.php", "client-ip", "op=login",
                   SUSPECT_PARAM_QUERY) != 0) {
        CU_FAIL("fixture");
        return;
    }
    CU_ASSERT_EQUAL(gt_decide(&f, index, NULL).kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "192.0.2.1"), 1);
    CU_ASSERT_EQUAL(gt_decide(&f, doc, NULL).kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "192.0.2.2"), 1);
    CU_ASSERT_EQUAL(gt_decide(&f, info, NULL).kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(gt_decide(&f, enc, NULL).kind, MW_VERDICT_ALLOW);
    v = gt_decide(&f, bad, NULL);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_REJECT);
    CU_ASSERT_STRING_EQUAL(v.why, "bad path");
    CU_ASSERT_EQUAL(gt_decide(&f, other, NULL).kind, MW_VERDICT_PASS);
    gt_close(&f);
}

/* Two routes, one matching the path asked for, one the script run: the
 * first in file order wins, and the request counts once. */
static void test_script_paths_count_once(void)
{
    suspect_conf_identity_t ids[] = {gt_ident("ClientIp", "client-ip")};
    suspect_conf_route_t routes[] = {gt_route("One", "/index.php", ids, 1),
                                     gt_route("Two", "/", ids, 1)};
    suspect_conf_t conf = gt_conf(routes, 2);
    const char *vars[] = {"REQUEST_URI=/", "SCRIPT_NAME=/index.php",
                          "DOCUMENT_URI=/index.php", "REMOTE_ADDR=192.0.2.9",
                          NULL};
    gt_fixture_t f;
    mw_verdict_t v;

    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    v = gt_decide(&f, vars, NULL);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_ALLOW);
    CU_ASSERT_STRING_EQUAL(v.route != NULL ? v.route->action : "-", "One");
    CU_ASSERT_EQUAL(gt_count(&f, "One", "192.0.2.9"), 1);
    CU_ASSERT_EQUAL(gt_count(&f, "Two", "192.0.2.9"), 0);
    gt_close(&f);
}

/* Paths longer than the stack buffer, all three: built on the heap. */
static void test_script_paths_long(void)
{
    size_t n = 5000; /* over the guard's 4 KiB path buffer */
    char *uri = malloc(n + 32), *script = malloc(n + 32), *doc = malloc(n + 32);
    suspect_conf_identity_t id;
    suspect_conf_route_t route;
    gt_fixture_t f;

    CU_ASSERT_FATAL(uri != NULL && script != NULL && doc != NULL);
    strcpy(uri, "REQUEST_URI=/");
    memset(uri + 13, 'u', n);
    uri[13 + n] = '\0';
    strcpy(script, "SCRIPT_NAME=/");
    memset(script + 13, 's', n);
    script[13 + n] = '\0';
    strcpy(doc, "DOCUMENT_URI=/index.php/");
    memset(doc + 24, 'd', n);
    doc[24 + n] = '\0';
    if (open_route(&f, &id, &route, "/index.php", "client-ip", NULL, 0) == 0) {
        const char *vars[] = {uri, script, doc, "REMOTE_ADDR=192.0.2.1", NULL};

        CU_ASSERT_EQUAL(gt_decide(&f, vars, NULL).kind, MW_VERDICT_ALLOW);
        vars[2] = "DOCUMENT_URI=/other";
        CU_ASSERT_EQUAL(gt_decide(&f, vars, NULL).kind, MW_VERDICT_PASS);
        gt_close(&f);
    } else {
        CU_FAIL("fixture");
    }
    free(uri);
    free(script);
    free(doc);
}

int guard_register_bypass(CU_pSuite s)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        {"PHP names in conditions", test_php_names_route},
        {"PHP names in identities", test_php_names_identity},
        {"';' in conditions", test_semicolon_conditions},
        {"rival routes", test_rival_routes},
        {"paramIn=request: every copy agrees", test_request_copies},
        {"media type as PHP reads it", test_content_type},
        {"cookie values decoded", test_cookie_decoded},
        {"form over formMax: identity", test_form_over_max_identity},
        {"form over formMax: condition", test_form_over_max_condition},
        {"script paths", test_script_paths},
        {"script paths count once", test_script_paths_count_once},
        {"script paths longer than the stack", test_script_paths_long},
    };

    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return 0;
}
