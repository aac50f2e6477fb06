/*
 * test_guard_route.c - suite "guard", routing: methods (HEAD with GET),
 * exact paths (with PATH_INFO) and prefixes, the first match winning,
 * parameter conditions in the query and in a urlencoded body (any
 * occurrence of a repeated parameter), and the body replayed untouched to
 * the app.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

#include "helpers/fakereq.h"
#include "guard_test.h"

/* The action of the route req matches, or "-" for none. */
static const char *routed(gt_fixture_t *f, const char *method, const char *uri)
{
    char m[64], u[256], q[256];
    const char *vars[] = {m, u, q, "REMOTE_ADDR=192.0.2.1", NULL};
    const char *qs = strchr(uri, '?');
    mw_verdict_t v;

    snprintf(m, sizeof(m), "REQUEST_METHOD=%s", method);
    snprintf(u, sizeof(u), "REQUEST_URI=%s", uri);
    snprintf(q, sizeof(q), "QUERY_STRING=%s", qs != NULL ? qs + 1 : "");
    v = gt_decide(f, vars, NULL);
    return v.route != NULL ? v.route->action : "-";
}

static void test_methods(void)
{
    suspect_conf_identity_t ids[] = {gt_ident("ClientIp", "client-ip")};
    suspect_conf_route_t routes[] = {gt_route("One", "/a", ids, 1),
                                     gt_route("Two", "/a", ids, 1)};
    suspect_conf_t conf = gt_conf(routes, 2);
    const char *novars[] = {"REQUEST_URI=/a", "REMOTE_ADDR=192.0.2.1", NULL};
    gt_fixture_t f;

    routes[0].nmethods = 2;
    routes[0].methods[0] = "POST";
    routes[0].methods[1] = "PUT";
    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    CU_ASSERT_STRING_EQUAL(routed(&f, "POST", "/a"), "One");
    CU_ASSERT_STRING_EQUAL(routed(&f, "PUT", "/a"), "One");
    /* HEAD is not GET's only when the route lists GET. */
    CU_ASSERT_STRING_EQUAL(routed(&f, "HEAD", "/a"), "Two");
    /* Other methods fall through to the route that takes any method;
     * methods are case-sensitive. */
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/a"), "Two");
    CU_ASSERT_STRING_EQUAL(routed(&f, "post", "/a"), "Two");
    CU_ASSERT_STRING_EQUAL(routed(&f, "POSTX", "/a"), "Two");
    CU_ASSERT_STRING_EQUAL(routed(&f, "POS", "/a"), "Two");
    /* No REQUEST_METHOD: only routes without methods. */
    CU_ASSERT_STRING_EQUAL(gt_decide(&f, novars, NULL).route->action, "Two");
    gt_close(&f);
}

/* Web servers run the same script for HEAD as for GET: a GET route takes
 * HEAD too, and counts it. */
static void test_head_with_get(void)
{
    suspect_conf_identity_t ids[] = {gt_ident("ClientIp", "client-ip")};
    suspect_conf_route_t routes[] = {gt_route("One", "/a", ids, 1),
                                     gt_route("Two", "/b", ids, 1),
                                     gt_route("Many", "/c", ids, 1)};
    suspect_conf_t conf = gt_conf(routes, 3);
    const char *head[] = {"REQUEST_METHOD=HEAD", "REQUEST_URI=/a",
                          "REMOTE_ADDR=192.0.2.1", NULL};
    const char *get[] = {"REQUEST_METHOD=GET", "REQUEST_URI=/a",
                         "REMOTE_ADDR=192.0.2.1", NULL};
    gt_fixture_t f;

    routes[0].nmethods = 1;
    routes[0].methods[0] = "GET";
    routes[1].nmethods = 2;
    routes[1].methods[0] = "POST";
    routes[1].methods[1] = "GET";
    routes[2].nmethods = 1;
    routes[2].methods[0] = "POST";
    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    CU_ASSERT_STRING_EQUAL(routed(&f, "HEAD", "/a"), "One");
    CU_ASSERT_STRING_EQUAL(routed(&f, "HEAD", "/b"), "Two");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/b"), "Two");
    /* Only HEAD, exactly, and only with GET listed. */
    CU_ASSERT_STRING_EQUAL(routed(&f, "HEAD", "/c"), "-");
    CU_ASSERT_STRING_EQUAL(routed(&f, "head", "/a"), "-");
    CU_ASSERT_STRING_EQUAL(routed(&f, "HEADX", "/a"), "-");
    CU_ASSERT_STRING_EQUAL(routed(&f, "HEA", "/a"), "-");
    CU_ASSERT_STRING_EQUAL(routed(&f, "OPTIONS", "/a"), "-");
    gt_close(&f);
    /* HEAD and GET count on the same key: One allows 1 per minute. */
    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    CU_ASSERT_EQUAL(gt_decide(&f, head, NULL).kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(gt_decide(&f, get, NULL).kind, MW_VERDICT_DENY);
    CU_ASSERT_EQUAL(gt_count(&f, "One", "192.0.2.1"), 1);
    gt_close(&f);
}

static void test_exact_and_prefix(void)
{
    suspect_conf_identity_t ids[] = {gt_ident("ClientIp", "client-ip")};
    suspect_conf_route_t routes[] = {
        gt_route("One", "/login.cgi", ids, 1), gt_route("Two", "/api/", ids, 1),
        gt_route("Many", "/app.cgi", ids, 1),  gt_route("Dir", "/dir/", ids, 1),
        gt_route("Root", "/", ids, 1),
    };
    suspect_conf_t conf = gt_conf(routes, 5);
    gt_fixture_t f;

    routes[1].prefix = true;
    routes[2].prefix = true;
    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    /* Exact: the same path, and the same script with a PATH_INFO (the web
     * server runs /login.cgi for /login.cgi/x). */
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/login.cgi"), "One");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/login.cgi?x=1"), "One");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/login.cgi/"), "One");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/login.cgi/x"), "One");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/login.cgi/x/y.html?a"), "One");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/login.cgi%2Fx"), "One");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "//login.cgi//x"), "One");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/login.cgi/../x"), "-");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/login.cgi/x/../.."), "Root");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/login.cgi2"), "-");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/login.cgi.bak"), "-");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/login.cgi%00/x"), "-");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/login.cg"), "-");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/LOGIN.cgi"), "-");
    /* A prefix ending in '/': anything under it. */
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/api/"), "Two");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/api/users/7"), "Two");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "//api//users"), "Two");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/api"), "-");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/apix/"), "-");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/api/../x"), "-");
    /* A prefix without '/': itself, and itself followed by '/'. */
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/app.cgi"), "Many");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/app.cgi/"), "Many");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/app.cgi/extra/path"), "Many");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/app.cgi2"), "-");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/app.cg"), "-");
    /* An exact path ending in '/' (a directory index) and the root: only
     * themselves, since a normalised path never holds "//". */
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/dir/"), "Dir");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/dir//"), "Dir");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/dir/x"), "-");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/dir"), "-");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/"), "Root");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/x"), "-");
    gt_close(&f);
}

/* Without REQUEST_URI, the path is SCRIPT_NAME + PATH_INFO, as the web
 * server split it: an exact route still covers the script's PATH_INFO. */
static void test_exact_path_info(void)
{
    suspect_conf_identity_t ids[] = {gt_ident("ClientIp", "client-ip")};
    suspect_conf_route_t routes[] = {gt_route("Many", "/app.cgi", ids, 1)};
    suspect_conf_t conf = gt_conf(routes, 1);
    const char *split[] = {"SCRIPT_NAME=/app.cgi", "PATH_INFO=/x/y",
                           "REMOTE_ADDR=192.0.2.1", NULL};
    const char *joined[] = {"REQUEST_URI=/app.cgi/anything?x=1",
                            "SCRIPT_NAME=/app.cgi", "PATH_INFO=/anything",
                            "REMOTE_ADDR=192.0.2.1", NULL};
    const char *other[] = {"SCRIPT_NAME=/app.cgix", "PATH_INFO=/y",
                           "REMOTE_ADDR=192.0.2.1", NULL};
    gt_fixture_t f;

    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    CU_ASSERT_EQUAL(gt_decide(&f, split, NULL).kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(gt_decide(&f, joined, NULL).kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(gt_decide(&f, other, NULL).kind, MW_VERDICT_PASS);
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "192.0.2.1"), 2);
    gt_close(&f);
}

/* Neither REQUEST_URI nor SCRIPT_NAME: the web server is misconfigured
 * (nginx without fastcgi_params) and nothing could match: refused. */
static void test_no_path(void)
{
    suspect_conf_identity_t ids[] = {gt_ident("ClientIp", "client-ip")};
    suspect_conf_route_t routes[] = {gt_route("Many", "/", ids, 1)};
    suspect_conf_t conf = gt_conf(routes, 1);
    const char *vars[] = {"REQUEST_METHOD=GET", "REMOTE_ADDR=192.0.2.1", NULL};
    gt_fixture_t f;
    mw_verdict_t v;

    routes[0].prefix = true;
    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    v = gt_decide(&f, vars, NULL);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_REJECT);
    CU_ASSERT_EQUAL(v.status, 500);
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "192.0.2.1"), 0);
    gt_close(&f);
}

static void test_first_match_and_root(void)
{
    suspect_conf_identity_t ids[] = {gt_ident("ClientIp", "client-ip")};
    suspect_conf_route_t routes[] = {gt_route("One", "/api/login", ids, 1),
                                     gt_route("Two", "/", ids, 1)};
    suspect_conf_t conf = gt_conf(routes, 2);
    gt_fixture_t f;

    routes[1].prefix = true;
    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/api/login"), "One");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/"), "Two");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/anything/else"), "Two");
    gt_close(&f);
}

static void test_query_condition(void)
{
    suspect_conf_identity_t ids[] = {gt_ident("ClientIp", "client-ip")};
    suspect_conf_route_t routes[] = {gt_route("One", "/app.cgi", ids, 1),
                                     gt_route("Two", "/app.cgi", ids, 1)};
    suspect_conf_t conf = gt_conf(routes, 2);
    gt_fixture_t f;

    routes[0].param_name = "op";
    routes[0].param_value = "login";
    routes[1].param_name = "debug";
    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/app.cgi?op=login"), "One");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/app.cgi?a=1&op=login"), "One");
    /* Decoded name and value. */
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/app.cgi?%6Fp=%6Cogin"), "One");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/app.cgi?op=logi"), "-");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/app.cgi?op=loginx"), "-");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/app.cgi?op=LOGIN"), "-");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/app.cgi?xop=login"), "-");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/app.cgi"), "-");
    /* Without a value, the name only has to be there, even empty. */
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/app.cgi?debug"), "Two");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/app.cgi?debug="), "Two");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/app.cgi?debug=1&op=x"), "Two");
    /* Repeated: any occurrence meets the condition (PHP reads the last). */
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/app.cgi?op=view&op=login"),
                           "One");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/app.cgi?op=login&op=view"),
                           "One");
    CU_ASSERT_STRING_EQUAL(
        routed(&f, "GET", "/app.cgi?op=a&x=1&op=b&op=%6cogin&op=c"), "One");
    CU_ASSERT_STRING_EQUAL(routed(&f, "GET", "/app.cgi?op=view&op=logi"), "-");
    gt_close(&f);
}

/* The variables of a post(): r borrows them, so they live beside it. */
typedef struct post_vars {
    char u[256], q[256], t[128], l[64];
    const char *vars[8];
} post_vars_t;

/* A request with a urlencoded body; returns the verdict and leaves the
 * request open in r (the caller frees it) on the variables in pv (the
 * caller's, kept as long as r). */
static mw_verdict_t post(gt_fixture_t *f, fakereq_t *r, post_vars_t *pv,
                         const char *uri, const char *type, const char *body,
                         size_t chunk)
{
    const char *qs = strchr(uri, '?');
    mw_verdict_t v;

    snprintf(pv->u, sizeof(pv->u), "REQUEST_URI=%s", uri);
    snprintf(pv->q, sizeof(pv->q), "QUERY_STRING=%s", qs != NULL ? qs + 1 : "");
    snprintf(pv->t, sizeof(pv->t), "CONTENT_TYPE=%s", type);
    snprintf(pv->l, sizeof(pv->l), "CONTENT_LENGTH=%zu", strlen(body));
    pv->vars[0] = "REQUEST_METHOD=POST";
    pv->vars[1] = pv->u;
    pv->vars[2] = pv->t;
    pv->vars[3] = pv->l;
    pv->vars[4] = "REMOTE_ADDR=192.0.2.1";
    pv->vars[5] = pv->q;
    pv->vars[6] = NULL;
    fakereq_init(r, pv->vars, body, strlen(body));
    r->chunk = chunk;
    CU_ASSERT_EQUAL(
        mw_guard_decide(f->g, f->lim, f->store, &r->req, GT_NOW, &v, NULL),
        SUSPECT_OK);
    return v;
}

/* Everything the app would read from the request's body. */
static size_t read_all(fakereq_t *r, char *buf, size_t size)
{
    size_t n = 0;
    ssize_t k;

    while (n < size &&
           (k = mw_req_read(&r->req, buf + n, size - n, true)) > 0) {
        n += (size_t)k;
    }
    return n;
}

static void test_form_condition(void)
{
    suspect_conf_identity_t ids[] = {gt_ident("ClientIp", "client-ip")};
    suspect_conf_route_t routes[] = {gt_route("One", "/app.cgi", ids, 1)};
    suspect_conf_t conf = gt_conf(routes, 1);
    const char *body = "name=x&op=login&pad=1234567890";
    const char *form = "application/x-www-form-urlencoded";
    gt_fixture_t f;
    fakereq_t r;
    post_vars_t pv;
    char buf[256];
    mw_verdict_t v;

    routes[0].param_name = "op";
    routes[0].param_value = "login";
    routes[0].param_in = SUSPECT_PARAM_FORM;
    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    /* Matched in the body, read in small chunks; the app still reads the
     * whole body, byte for byte. */
    v = post(&f, &r, &pv, "/app.cgi", form, body, 3);
    CU_ASSERT_PTR_NOT_NULL(v.route);
    CU_ASSERT_EQUAL(read_all(&r, buf, sizeof(buf)), strlen(body));
    CU_ASSERT(memcmp(buf, body, strlen(body)) == 0);
    fakereq_free(&r);
    /* With a charset parameter and odd case. */
    v = post(&f, &r, &pv, "/app.cgi",
             "Application/X-WWW-Form-Urlencoded; charset=UTF-8", body, 0);
    CU_ASSERT_PTR_NOT_NULL(v.route);
    fakereq_free(&r);
    /* Not in the query when the condition says form. */
    v = post(&f, &r, &pv, "/app.cgi?op=login", form, "a=1", 0);
    CU_ASSERT_PTR_NULL(v.route);
    fakereq_free(&r);
    /* A multipart body is read as one: this one holds no part, so no
     * field; the app still reads it whole. */
    v = post(&f, &r, &pv, "/app.cgi", "multipart/form-data; boundary=x", body,
             0);
    CU_ASSERT_PTR_NULL(v.route);
    CU_ASSERT_EQUAL(read_all(&r, buf, sizeof(buf)), strlen(body));
    CU_ASSERT(memcmp(buf, body, strlen(body)) == 0);
    fakereq_free(&r);
    /* Perl's CGI.pm reads any type starting with the form's as a form. */
    v = post(&f, &r, &pv, "/app.cgi", "application/x-www-form-urlencodedx",
             body, 0);
    CU_ASSERT_PTR_NOT_NULL(v.route);
    fakereq_free(&r);
    v = post(&f, &r, &pv, "/app.cgi", "text/plain", body, 0);
    CU_ASSERT_PTR_NULL(v.route);
    CU_ASSERT_EQUAL(r.reads, 0);
    fakereq_free(&r);
    /* Repeated in the body: any occurrence. */
    v = post(&f, &r, &pv, "/app.cgi", form, "op=view&a=1&op=login&op=x", 0);
    CU_ASSERT_PTR_NOT_NULL(v.route);
    fakereq_free(&r);
    gt_close(&f);
}

static void test_any_condition(void)
{
    suspect_conf_identity_t ids[] = {gt_ident("ClientIp", "client-ip")};
    suspect_conf_route_t routes[] = {gt_route("One", "/app.cgi", ids, 1)};
    suspect_conf_t conf = gt_conf(routes, 1);
    const char *form = "application/x-www-form-urlencoded";
    gt_fixture_t f;
    fakereq_t r;
    post_vars_t pv;
    mw_verdict_t v;

    routes[0].param_name = "op";
    routes[0].param_value = "login";
    routes[0].param_in = SUSPECT_PARAM_ANY;
    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    /* In the query: the body is not read. */
    v = post(&f, &r, &pv, "/app.cgi?op=login", form, "op=other", 0);
    CU_ASSERT_PTR_NOT_NULL(v.route);
    CU_ASSERT_EQUAL(r.reads, 0);
    fakereq_free(&r);
    /* Not (or not so) in the query, but in the body (as PHP's $_REQUEST
     * lets the body win). */
    v = post(&f, &r, &pv, "/app.cgi?op=other", form, "op=login", 0);
    CU_ASSERT_PTR_NOT_NULL(v.route);
    fakereq_free(&r);
    v = post(&f, &r, &pv, "/app.cgi?op=other", form, "op=other", 0);
    CU_ASSERT_PTR_NULL(v.route);
    fakereq_free(&r);
    gt_close(&f);
}

/* A body that fits form_max is searched whole; a longer one not at all:
 * its head could hide the copy the app reads, so the answer is a 413,
 * and either way the app could still read every byte. */
static void test_form_bound(void)
{
    suspect_conf_identity_t ids[] = {gt_ident("LoginId", "form:member")};
    suspect_conf_route_t routes[] = {gt_route("Many", "/app.cgi", ids, 1)};
    suspect_conf_t conf = gt_conf(routes, 1);
    const char *form = "application/x-www-form-urlencoded";
    const char *fits = "member=bob&pad=12345"; /* exactly 20 bytes */
    const char *body = "a=1&member=bob&pad=xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";
    gt_fixture_t f;
    fakereq_t r;
    post_vars_t pv;
    char buf[256];
    mw_verdict_t v;

    conf.form_max = 20;
    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    v = post(&f, &r, &pv, "/app.cgi", form, fits, 0);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "bob"), 1);
    fakereq_free(&r);
    v = post(&f, &r, &pv, "/app.cgi", form, body, 0);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_REJECT);
    CU_ASSERT_EQUAL(v.status, 413);
    CU_ASSERT_STRING_EQUAL(v.why, "form body over formMax");
    CU_ASSERT_PTR_NOT_NULL(v.route);
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "bob"), 1);
    CU_ASSERT_EQUAL(read_all(&r, buf, sizeof(buf)), strlen(body));
    CU_ASSERT(memcmp(buf, body, strlen(body)) == 0);
    fakereq_free(&r);
    gt_close(&f);
}

/* PHP reads multipart forms into $_POST too, and so does the guard
 * (test_guard_multipart.c has the rest); routes that need no body do not
 * read one. */
static void test_multipart_read(void)
{
    suspect_conf_identity_t ids[] = {gt_ident("LoginId", "form:member")};
    suspect_conf_identity_t ip[] = {gt_ident("ClientIp", "client-ip")};
    suspect_conf_route_t routes[] = {gt_route("Many", "/app.cgi", ids, 1),
                                     gt_route("Many", "/upload", ip, 1)};
    suspect_conf_t conf = gt_conf(routes, 2);
    const char *mp = "multipart/form-data; boundary=x";
    const char *body = "--x\r\nContent-Disposition: form-data; "
                       "name=\"member\"\r\n\r\nbob\r\n--x--\r\n";
    const char *bad = "--x\r\nContent-Disposition: form-data; "
                      "name='member'\r\n\r\nbob\r\n--x--\r\n";
    gt_fixture_t f;
    fakereq_t r;
    post_vars_t pv;
    mw_verdict_t v;

    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    v = post(&f, &r, &pv, "/app.cgi", mp, body, 0);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "bob"), 1);
    fakereq_free(&r);
    /* A shape parsers read differently: 415, with the reason. */
    v = post(&f, &r, &pv, "/app.cgi", mp, bad, 0);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_REJECT);
    CU_ASSERT_EQUAL(v.status, 415);
    CU_ASSERT_PTR_NOT_NULL(v.why);
    CU_ASSERT_EQUAL(mw_guard_respond(f.g, &r.req, &v), 0);
    CU_ASSERT(r.out != NULL &&
              strstr(r.out, "Status: 415 Unsupported Media Type") != NULL);
    fakereq_free(&r);
    v = post(&f, &r, &pv, "/upload", mp, bad, 0);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(r.reads, 0);
    fakereq_free(&r);
    gt_close(&f);
}

/* An authorizer's request has no body to read (Apache sends no STDIN). */
static void test_authorizer_no_body(void)
{
    suspect_conf_identity_t ids[] = {gt_ident("LoginId", "form:member")};
    suspect_conf_route_t routes[] = {gt_route("Many", "/app.cgi", ids, 1)};
    suspect_conf_t conf = gt_conf(routes, 1);
    const char *vars[] = {"REQUEST_URI=/app.cgi",
                          "CONTENT_TYPE=application/x-www-form-urlencoded",
                          NULL};
    gt_fixture_t f;
    fakereq_t r;
    mw_verdict_t v;

    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    fakereq_init(&r, vars, "member=bob", 10);
    r.req.role = MW_ROLE_AUTHORIZER;
    CU_ASSERT_EQUAL(
        mw_guard_decide(f.g, f.lim, f.store, &r.req, GT_NOW, &v, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_PASS);
    CU_ASSERT_EQUAL(r.reads, 0);
    fakereq_free(&r);
    gt_close(&f);
}

/* A failing body read is an error of the call, not a verdict. */
static void test_body_error(void)
{
    suspect_conf_identity_t ids[] = {gt_ident("LoginId", "form:member")};
    suspect_conf_route_t routes[] = {gt_route("Many", "/app.cgi", ids, 1)};
    suspect_conf_t conf = gt_conf(routes, 1);
    const char *vars[] = {"REQUEST_URI=/app.cgi",
                          "CONTENT_TYPE=application/x-www-form-urlencoded",
                          NULL};
    gt_fixture_t f;
    fakereq_t r;
    mw_verdict_t v;
    suspect_err_t err;

    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    suspect_err_clear(&err);
    fakereq_init(&r, vars, "member=bob", 10);
    r.read_error = EIO;
    CU_ASSERT_EQUAL(
        mw_guard_decide(f.g, f.lim, f.store, &r.req, GT_NOW, &v, &err),
        SUSPECT_E_IO);
    CU_ASSERT_EQUAL(err.code, SUSPECT_E_IO);
    fakereq_free(&r);
    gt_close(&f);
}

int guard_register_routes(CU_pSuite s)
{
    return CU_add_test(s, "methods", test_methods) == NULL ||
                   CU_add_test(s, "HEAD with GET", test_head_with_get) ==
                       NULL ||
                   CU_add_test(s, "exact and prefix paths",
                               test_exact_and_prefix) == NULL ||
                   CU_add_test(s, "exact path with PATH_INFO",
                               test_exact_path_info) == NULL ||
                   CU_add_test(s, "no path refused", test_no_path) == NULL ||
                   CU_add_test(s, "first match wins, root prefix",
                               test_first_match_and_root) == NULL ||
                   CU_add_test(s, "query condition", test_query_condition) ==
                       NULL ||
                   CU_add_test(s, "form condition and body replay",
                               test_form_condition) == NULL ||
                   CU_add_test(s, "condition in query or form",
                               test_any_condition) == NULL ||
                   CU_add_test(s, "form bound", test_form_bound) == NULL ||
                   CU_add_test(s, "multipart read", test_multipart_read) ==
                       NULL ||
                   CU_add_test(s, "authorizer reads no body",
                               test_authorizer_no_body) == NULL ||
                   CU_add_test(s, "body read error", test_body_error) == NULL
               ? -1
               : 0;
}
