/*
 * test_guard_modes.c - suite "guard", modes and FastCGI roles: which
 * answers get nginx auth_request's 403 mapping (auth-request mode and the
 * RESPONDER role only) and which the real status (everything else: a
 * FastCGI authorizer in any mode, authorizer and forward mode), for the
 * denial, the 400 and the 503; and the body, never read in the two
 * deciding modes.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

#include "helpers/fakereq.h"
#include "guard_test.h"

/* Room for an answer_as() response. */
#define ANSWER_MAX 16384

/* Writes the answer to a request of vars in role into out (the caller's)
 * and returns it; *v gets the verdict. */
static const char *answer_as(char out[ANSWER_MAX], gt_fixture_t *f,
                             const char *const *vars, int role, mw_verdict_t *v)
{
    fakereq_t r;

    out[0] = '\0';
    fakereq_init(&r, vars, NULL, 0);
    r.req.role = role;
    CU_ASSERT_EQUAL(
        mw_guard_decide(f->g, f->lim, f->store, &r.req, GT_NOW, v, NULL),
        SUSPECT_OK);
    if (v->kind != MW_VERDICT_PASS && v->kind != MW_VERDICT_ALLOW) {
        CU_ASSERT_EQUAL(mw_guard_respond(f->g, &r.req, v), 0);
        snprintf(out, ANSWER_MAX, "%s", r.out != NULL ? r.out : "");
    }
    fakereq_free(&r);
    return out;
}

/* Checks that answer r carries status (with reason), mapped to nginx's
 * 403 or not. */
static void check_status(const char *r, const char *status, bool mapped,
                         const char *what)
{
    char hv[GT_HEADER_MAX];
    char code[4];
    bool ok;

    snprintf(code, sizeof(code), "%s", status);
    if (mapped) {
        ok = strncmp(r, "Status: 403 Forbidden\r\n", 23) == 0 &&
             strcmp(gt_header(hv, r, "X-Suspect-Status"), code) == 0;
    } else {
        ok = strcmp(gt_header(hv, r, "Status"), status) == 0 &&
             strcmp(gt_header(hv, r, "X-Suspect-Status"), "<none>") == 0;
    }
    CU_ASSERT_TRUE(ok);
    if (!ok) {
        fprintf(stderr, "\n  %s: want %s%s, got:\n%.200s\n", what, status,
                mapped ? " (as 403)" : "", r);
    }
}

/* The denial, the 400 and the 503 of one mode for a request in role. */
static void mode_role_case(suspect_conf_mode_t mode, int role)
{
    char ans[ANSWER_MAX];
    char hv[GT_HEADER_MAX];
    static const char *const vars[] = {
        "REQUEST_METHOD=GET",        "REQUEST_URI=/bank.cgi",
        "SCRIPT_NAME=/bank.cgi",     "HTTP_COOKIE=member=M1",
        "REMOTE_ADDR=198.51.100.77", NULL};
    static const char *const bad[] = {"REQUEST_URI=/%2e%2e/bank.cgi",
                                      "SCRIPT_NAME=", NULL};
    suspect_conf_identity_t ids[] = {gt_ident("MemberCode", "cookie:member"),
                                     gt_ident("ClientIp", "client-ip")};
    suspect_conf_route_t routes[] = {gt_route("Two", "/bank.cgi", ids, 2)};
    suspect_conf_t conf = gt_conf(routes, 1);
    bool mapped =
        mode == SUSPECT_MODE_AUTH_REQUEST && role == MW_ROLE_RESPONDER;
    char what[64];
    gt_fixture_t f;
    mw_verdict_t v;
    const char *r;

    snprintf(what, sizeof(what), "mode %d, role %d", (int)mode, role);
    conf.mode = mode;
    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    answer_as(ans, &f, vars, role, &v);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_ALLOW);
    answer_as(ans, &f, vars, role, &v);
    r = answer_as(ans, &f, vars, role, &v);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_DENY);
    check_status(r, "429 Too Many Requests", mapped, what);
    CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "Retry-After"), "120");
    CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "X-Suspect-Action"),
                           mapped ? "Two" : "<none>");
    r = answer_as(ans, &f, bad, role, &v);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_REJECT);
    check_status(r, "400 Bad Request", mapped, what);
    suspect_store_free(f.store);
    f.store = gt_failing_store();
    r = answer_as(ans, &f, vars, role, &v);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_UNAVAILABLE);
    check_status(r, "503 Service Unavailable", mapped, what);
    CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "X-Suspect-Retry-After-Ms"),
                           mapped ? "1000" : "<none>");
    gt_close(&f);
}

/* Only nginx's subrequest (auth-request mode, RESPONDER role) gets the
 * 403 mapping; a FastCGI authorizer (lighttpd, Apache) passes a non-2xx
 * answer to the client as it is, so it gets the real status in every
 * mode, and so does every request in authorizer and forward mode. */
static void test_mode_role_answers(void)
{
    static const suspect_conf_mode_t modes[] = {SUSPECT_MODE_FORWARD,
                                                SUSPECT_MODE_AUTH_REQUEST,
                                                SUSPECT_MODE_AUTHORIZER};

    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        mode_role_case(modes[i], MW_ROLE_RESPONDER);
        mode_role_case(modes[i], MW_ROLE_AUTHORIZER);
    }
}

/* What form_post() found out. */
typedef struct form_result {
    mw_verdict_kind_t kind;
    const char *action; /* of the route matched, or "-" */
    const char *why;
    size_t reads; /* body reads */
} form_result_t;

/* A route with a form condition and a form identity, then one with only
 * the form identity, in mode, on a POST with a urlencoded body in role. */
static form_result_t form_post(suspect_conf_mode_t mode, int role)
{
    static const char *const vars[] = {
        "REQUEST_METHOD=POST",
        "REQUEST_URI=/app.cgi",
        "SCRIPT_NAME=/app.cgi",
        "CONTENT_TYPE=application/x-www-form-urlencoded",
        "CONTENT_LENGTH=19",
        NULL};
    const char *body = "op=login&member=bob";
    suspect_conf_identity_t ids[] = {gt_ident("LoginId", "form:member")};
    suspect_conf_route_t routes[] = {gt_route("Many", "/app.cgi", ids, 1),
                                     gt_route("One", "/app.cgi", ids, 1)};
    suspect_conf_t conf = gt_conf(routes, 2);
    form_result_t res = {MW_VERDICT_PASS, "?", "?", 9999};
    mw_verdict_t v;
    gt_fixture_t f;
    fakereq_t r;

    routes[0].param_name = "op";
    routes[0].param_value = "login";
    routes[0].param_in = SUSPECT_PARAM_ANY;
    conf.mode = mode;
    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return res;
    }
    fakereq_init(&r, vars, body, strlen(body));
    r.req.role = role;
    CU_ASSERT_EQUAL(
        mw_guard_decide(f.g, f.lim, f.store, &r.req, GT_NOW, &v, NULL),
        SUSPECT_OK);
    /* The route lives on this stack: keep only its (literal) action. */
    res.kind = v.kind;
    res.action = v.route != NULL ? v.route->action : "-";
    res.why = v.why;
    res.reads = r.reads;
    fakereq_free(&r);
    gt_close(&f);
    return res;
}

/* In the deciding modes the body is the app's (the web server keeps it):
 * neither a form condition nor a form identity reads it. */
static void test_deciding_modes_no_body(void)
{
    form_result_t res;

    res = form_post(SUSPECT_MODE_FORWARD, MW_ROLE_RESPONDER);
    CU_ASSERT_EQUAL(res.kind, MW_VERDICT_ALLOW);
    CU_ASSERT_STRING_EQUAL(res.action, "Many");
    CU_ASSERT(res.reads > 0);
    res = form_post(SUSPECT_MODE_AUTH_REQUEST, MW_ROLE_RESPONDER);
    CU_ASSERT_EQUAL(res.kind, MW_VERDICT_PASS);
    CU_ASSERT_STRING_EQUAL(res.action, "One");
    CU_ASSERT_STRING_EQUAL(res.why, "no identity");
    CU_ASSERT_EQUAL(res.reads, 0);
    res = form_post(SUSPECT_MODE_AUTHORIZER, MW_ROLE_RESPONDER);
    CU_ASSERT_EQUAL(res.kind, MW_VERDICT_PASS);
    CU_ASSERT_STRING_EQUAL(res.action, "One");
    CU_ASSERT_STRING_EQUAL(res.why, "no identity");
    CU_ASSERT_EQUAL(res.reads, 0);
    res = form_post(SUSPECT_MODE_FORWARD, MW_ROLE_AUTHORIZER);
    CU_ASSERT_EQUAL(res.kind, MW_VERDICT_PASS);
    CU_ASSERT_STRING_EQUAL(res.action, "One");
    CU_ASSERT_EQUAL(res.reads, 0);
}

/* suspect.xml with mode="authorizer", through the real loader: responder
 * requests get the 429 itself. */
static void test_authorizer_mode_xml(void)
{
    char ans[ANSWER_MAX];
    char hv[GT_HEADER_MAX];
    static const char xml[] =
        "<Suspect>\n"
        "  <Server listen=\"unix:/tmp/s.sock\" mode=\"authorizer\"/>\n"
        "  <Limits path=\"limits.xml\"/>\n"
        "  <Route action=\"One\" method=\"GET\" path=\"/app.cgi\">\n"
        "    <Identity type=\"MemberCode\" from=\"query:member\"/>\n"
        "  </Route>\n"
        "</Suspect>\n";
    static const char *const vars[] = {"REQUEST_METHOD=HEAD",
                                       "REQUEST_URI=/app.cgi/info?member=M1",
                                       "QUERY_STRING=member=M1", NULL};
    const suspect_conf_t *conf = NULL;
    gt_fixture_t f;
    mw_verdict_t v;
    const char *r;

    CU_ASSERT_EQUAL_FATAL(suspect_conf_parse(xml, sizeof(xml) - 1,
                                             "suspect.xml", "/etc/suspect",
                                             &conf, NULL),
                          SUSPECT_OK);
    CU_ASSERT_EQUAL(conf->mode, SUSPECT_MODE_AUTHORIZER);
    /* The fixture copies the struct: its strings stay conf's. */
    if (gt_open(&f, conf) != 0) {
        CU_FAIL("fixture");
        suspect_conf_unref(conf);
        return;
    }
    /* HEAD on the script's PATH_INFO is the GET route's request. */
    answer_as(ans, &f, vars, MW_ROLE_RESPONDER, &v);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_ALLOW);
    r = answer_as(ans, &f, vars, MW_ROLE_RESPONDER, &v);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_DENY);
    CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "Status"), "429 Too Many Requests");
    CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "X-Suspect-Status"), "<none>");
    gt_close(&f);
    suspect_conf_unref(conf);
}

int guard_register_modes(CU_pSuite s)
{
    return CU_add_test(s, "answers by mode and role", test_mode_role_answers) ==
                       NULL ||
                   CU_add_test(s, "deciding modes read no body",
                               test_deciding_modes_no_body) == NULL ||
                   CU_add_test(s, "authorizer mode from suspect.xml",
                               test_authorizer_mode_xml) == NULL
               ? -1
               : 0;
}
