/*
 * test_guard_decide.c - suite "guard", decisions and answers: the seed's
 * block-lock scenario, actions missing from the limits file, the denial
 * (429, Retry-After, never the identity), nginx auth_request mode, forced
 * formats and templates, failing stores (bare: 503; behind failover in
 * closed and open mode), a route's cost on a token bucket, and the
 * errors of mw_guard_new().
 *
 * Length.  Every test reads whole answers through answer() and
 * gt_header(), kept once here; the tests are short, there are many.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers/fakereq.h"
#include "guard_test.h"
#include "suspect_failover.h"
#include "suspect_store_impl.h"

/* ---- utilities ---------------------------------------------------------- */

/* Writes the response to a request of vars, decided at now_ms, into out
 * (the caller's, size bytes) and returns it; *v gets the verdict. */
static const char *answer(char *out, size_t size, gt_fixture_t *f,
                          const char *const *vars, int64_t now_ms,
                          mw_verdict_t *v)
{
    fakereq_t r;

    out[0] = '\0';
    fakereq_init(&r, vars, NULL, 0);
    CU_ASSERT_EQUAL(
        mw_guard_decide(f->g, f->lim, f->store, &r.req, now_ms, v, NULL),
        SUSPECT_OK);
    if (v->kind != MW_VERDICT_PASS && v->kind != MW_VERDICT_ALLOW) {
        CU_ASSERT_EQUAL(mw_guard_respond(f->g, &r.req, v), 0);
        CU_ASSERT_TRUE(r.req.output_started);
        snprintf(out, size, "%s", r.out != NULL ? r.out : "");
    } else {
        CU_ASSERT_EQUAL(mw_guard_respond(f->g, &r.req, v), -EINVAL);
        CU_ASSERT_FALSE(r.req.output_started);
    }
    fakereq_free(&r);
    return out;
}

const char *gt_header(char value[GT_HEADER_MAX], const char *r,
                      const char *name)
{
    const char *end = strstr(r, "\r\n\r\n");
    size_t n = strlen(name);

    for (const char *p = r; end != NULL && p < end;) {
        const char *eol = strstr(p, "\r\n");

        if (strncmp(p, name, n) == 0 && p[n] == ':' && p[n + 1] == ' ') {
            snprintf(value, GT_HEADER_MAX, "%.*s", (int)(eol - p - n - 2),
                     p + n + 2);
            return value;
        }
        p = eol + 2;
    }
    snprintf(value, GT_HEADER_MAX, "<none>");
    return value;
}

static const char *body_of(const char *r)
{
    const char *b = strstr(r, "\r\n\r\n");
    return b != NULL ? b + 4 : "";
}

/* A route "Two" on /bank.cgi counting cookie:member and client-ip. */
static int open_bank(gt_fixture_t *f, suspect_conf_identity_t *ids,
                     suspect_conf_route_t *route,
                     void (*tweak)(suspect_conf_t *c))
{
    suspect_conf_t conf;

    ids[0] = gt_ident("MemberCode", "cookie:member");
    ids[1] = gt_ident("ClientIp", "client-ip");
    *route = gt_route("Two", "/bank.cgi", ids, 2);
    conf = gt_conf(route, 1);
    if (tweak != NULL) {
        tweak(&conf);
    }
    return gt_open(f, &conf);
}

static const char *const bank_vars[] = {"REQUEST_METHOD=POST",
                                        "REQUEST_URI=/bank.cgi",
                                        "SCRIPT_NAME=/bank.cgi",
                                        "HTTP_COOKIE=member=SECRETMEMBER",
                                        "REMOTE_ADDR=198.51.100.77",
                                        "HTTP_ACCEPT=application/json",
                                        NULL};

/* ---- decisions ---------------------------------------------------------- */

/* The seed's SecureForgotAccount: 3 per 30 min, then locked 30 min. */
static void test_seed_scenario(void)
{
    suspect_conf_identity_t ids[] = {gt_ident("AccountId", "form:account")};
    suspect_conf_route_t routes[] = {
        gt_route("SecureForgotAccount", "/forgot.cgi", ids, 1)};
    suspect_conf_t conf = gt_conf(routes, 1);
    const char *vars[] = {"REQUEST_METHOD=POST", "REQUEST_URI=/forgot.cgi",
                          "CONTENT_TYPE=application/x-www-form-urlencoded",
                          NULL};
    gt_fixture_t f;
    mw_verdict_t v;

    routes[0].nmethods = 1;
    routes[0].methods[0] = "POST";
    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    for (int i = 0; i < 3; i++) {
        v = gt_decide_at(&f, vars, "account=acc-1", GT_NOW + i * 1000);
        CU_ASSERT_EQUAL(v.kind, MW_VERDICT_ALLOW);
        CU_ASSERT_EQUAL(v.decision.remaining, (uint32_t)(2 - i));
        CU_ASSERT_STRING_EQUAL(v.rule.action, "SecureForgotAccount");
    }
    v = gt_decide_at(&f, vars, "account=acc-1", GT_NOW + 5000);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_DENY);
    CU_ASSERT_EQUAL(v.status, 429);
    CU_ASSERT_TRUE(v.decision.locked);
    CU_ASSERT_EQUAL(v.decision.restriction_end_ms, GT_NOW + 5000 + 1800000);
    CU_ASSERT_EQUAL(v.decision.retry_after_ms, 1800000);
    CU_ASSERT_STRING_EQUAL(v.why, "locked");
    /* Another account is not affected; the lock holds, then ends. */
    v = gt_decide_at(&f, vars, "account=acc-2", GT_NOW + 6000);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_ALLOW);
    v = gt_decide_at(&f, vars, "account=acc-1", GT_NOW + 1000000);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_DENY);
    CU_ASSERT_EQUAL(v.decision.restriction_end_ms, GT_NOW + 5000 + 1800000);
    v = gt_decide_at(&f, vars, "account=acc-1", GT_NOW + 5000 + 1800000);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_ALLOW);
    gt_close(&f);
}

static void collect(void *arg, const char *msg)
{
    char *buf = arg;
    strcat(buf, msg);
    strcat(buf, "\n");
}

/* A route whose action the limits file lacks: the loaders refuse such a
 * pair (conf_actions.c), and a guard handed one anyway refuses the
 * request (500) rather than pass it uncounted. */
static void test_action_not_in_limits(void)
{
    suspect_conf_identity_t ids[] = {gt_ident("Id", "client-ip")};
    suspect_conf_route_t routes[] = {gt_route("Logn", "/login.cgi", ids, 1),
                                     gt_route("One", "/x", ids, 1),
                                     gt_route("Tow", "/y", ids, 1)};
    suspect_conf_t conf = gt_conf(routes, 3);
    const char *vars[] = {"REQUEST_URI=/login.cgi", "REMOTE_ADDR=192.0.2.1",
                          NULL};
    char msgs[1024] = "";
    suspect_err_t err;
    gt_fixture_t f;
    mw_verdict_t v;

    routes[1].line = 14;
    routes[2].line = 15;
    routes[0].missing = SUSPECT_MISSING_ALLOW;
    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    for (int i = 0; i < 3; i++) {
        v = gt_decide(&f, vars, NULL);
        CU_ASSERT_EQUAL(v.kind, MW_VERDICT_REJECT);
        CU_ASSERT_EQUAL(v.status, 500);
        CU_ASSERT_STRING_EQUAL(v.why, "action not in limits file");
        CU_ASSERT_PTR_EQUAL(v.route, f.snap.conf.routes);
    }
    CU_ASSERT_EQUAL(
        suspect_conf_missing_actions(&f.snap.conf, f.lim, collect, msgs), 2);
    CU_ASSERT_STRING_EQUAL(
        msgs, "suspect.xml:10: route action 'Logn' is not in limits.xml\n"
              "suspect.xml:15: route action 'Tow' is not in limits.xml (did "
              "you mean 'Two'?)\n");
    CU_ASSERT_EQUAL(
        suspect_conf_missing_actions(&f.snap.conf, f.lim, NULL, NULL), 2);
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(suspect_conf_check_actions(&f.snap.conf, f.lim, &err),
                    SUSPECT_E_CONFIG);
    CU_ASSERT_EQUAL(err.line, 10);
    CU_ASSERT_STRING_EQUAL(err.text,
                           "route action 'Logn' is not in limits.xml");
    /* No limits at all: every route is missing. */
    CU_ASSERT_EQUAL(
        suspect_conf_missing_actions(&f.snap.conf, NULL, NULL, NULL), 3);
    gt_close(&f);
}

/* Shadow mode: decided and counted as enforced (the lock is made and
 * holds), but never refused: a would-deny ALLOW with the status and why
 * of the denial.  A route's failMode reaches the store in the rule. */
static void test_shadow_route(void)
{
    suspect_conf_identity_t ids[] = {gt_ident("AccountId", "query:account")};
    suspect_conf_route_t routes[] = {
        gt_route("SecureForgotAccount", "/forgot.cgi", ids, 1)};
    suspect_conf_t conf = gt_conf(routes, 1);
    const char *vars[] = {"REQUEST_URI=/forgot.cgi",
                          "QUERY_STRING=account=acc-9", NULL};
    gt_fixture_t f;
    mw_verdict_t v;

    routes[0].shadow = SUSPECT_SHADOW_ON;
    routes[0].fail_mode = SUSPECT_RULE_FAIL_CLOSED;
    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    for (int i = 0; i < 3; i++) {
        v = gt_decide_at(&f, vars, NULL, GT_NOW + i);
        CU_ASSERT_EQUAL(v.kind, MW_VERDICT_ALLOW);
        CU_ASSERT_FALSE(v.would_deny);
        CU_ASSERT_EQUAL(v.rule.fail_mode, SUSPECT_RULE_FAIL_CLOSED);
    }
    for (int i = 0; i < 5; i++) {
        v = gt_decide_at(&f, vars, NULL, GT_NOW + 10 + i);
        CU_ASSERT_EQUAL(v.kind, MW_VERDICT_ALLOW);
        CU_ASSERT_TRUE(v.would_deny);
        CU_ASSERT_EQUAL(v.status, 429);
        CU_ASSERT_STRING_EQUAL(v.why, "locked");
        CU_ASSERT_EQUAL(v.decision.restriction_end_ms, GT_NOW + 10 + 1800000);
    }
    /* as enforced: denied hits were not recorded */
    CU_ASSERT_EQUAL(gt_count(&f, "SecureForgotAccount", "acc-9"), 3);
    gt_close(&f);
}

/* ---- answers ------------------------------------------------------------ */

static void test_deny_response(void)
{
    char ans[16384];
    char hv[GT_HEADER_MAX];
    suspect_conf_identity_t ids[2];
    suspect_conf_route_t route;
    gt_fixture_t f;
    mw_verdict_t v;
    const char *r;

    if (open_bank(&f, ids, &route, NULL) != 0) {
        CU_FAIL("fixture");
        return;
    }
    CU_ASSERT_STRING_EQUAL(answer(ans, sizeof(ans), &f, bank_vars, GT_NOW, &v),
                           "");
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_ALLOW);
    answer(ans, sizeof(ans), &f, bank_vars, GT_NOW + 1000, &v);
    r = answer(ans, sizeof(ans), &f, bank_vars, GT_NOW + 2000, &v);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_DENY);
    CU_ASSERT_STRING_EQUAL(v.why, "over the limit");
    CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "Status"), "429 Too Many Requests");
    CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "Retry-After"), "118");
    CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "RateLimit-Policy"),
                           "\"Two\";q=2;w=120");
    CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "Content-Type"),
                           "application/json");
    CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "X-Suspect-Status"), "<none>");
    CU_ASSERT_PTR_NOT_NULL(strstr(body_of(r), "\"retryAfterMs\":118000"));
    CU_ASSERT_PTR_NULL(strstr(r, "SECRETMEMBER"));
    CU_ASSERT_PTR_NULL(strstr(r, "198.51.100.77"));
    gt_close(&f);
}

static void test_route_status(void)
{
    char ans[16384];
    char hv[GT_HEADER_MAX];
    suspect_conf_identity_t ids[2];
    suspect_conf_route_t route;
    gt_fixture_t f;
    mw_verdict_t v;
    const char *r;

    ids[0] = gt_ident("MemberCode", "cookie:member");
    ids[1] = gt_ident("ClientIp", "client-ip");
    route = gt_route("Two", "/bank.cgi", ids, 2);
    route.status = 423;
    {
        suspect_conf_t conf = gt_conf(&route, 1);
        if (gt_open(&f, &conf) != 0) {
            CU_FAIL("fixture");
            return;
        }
    }
    answer(ans, sizeof(ans), &f, bank_vars, GT_NOW, &v);
    answer(ans, sizeof(ans), &f, bank_vars, GT_NOW, &v);
    r = answer(ans, sizeof(ans), &f, bank_vars, GT_NOW, &v);
    CU_ASSERT_EQUAL(v.status, 423);
    CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "Status"), "423 Locked");
    gt_close(&f);
}

static void auth_mode(suspect_conf_t *c)
{
    c->mode = SUSPECT_MODE_AUTH_REQUEST;
}

static void test_auth_request(void)
{
    char ans[16384];
    char hv[GT_HEADER_MAX];
    suspect_conf_identity_t ids[2];
    suspect_conf_route_t route;
    const char *bad[] = {"REQUEST_URI=/%2e%2e/bank.cgi", "SCRIPT_NAME=", NULL};
    gt_fixture_t f;
    mw_verdict_t v;
    const char *r;

    if (open_bank(&f, ids, &route, auth_mode) != 0) {
        CU_FAIL("fixture");
        return;
    }
    answer(ans, sizeof(ans), &f, bank_vars, GT_NOW, &v);
    answer(ans, sizeof(ans), &f, bank_vars, GT_NOW, &v);
    r = answer(ans, sizeof(ans), &f, bank_vars, GT_NOW + 500, &v);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_DENY);
    CU_ASSERT_EQUAL(strncmp(r, "Status: 403 Forbidden\r\n", 23), 0);
    CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "X-Suspect-Status"), "429");
    CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "X-Suspect-Action"), "Two");
    CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "X-Suspect-Retry-After-Ms"),
                           "119500");
    CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "Retry-After"), "120");
    CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "RateLimit-Policy"),
                           "\"Two\";q=2;w=120");
    CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "RateLimit"), "\"Two\";r=0;t=120");
    CU_ASSERT_PTR_NULL(strstr(r, "429 Too Many"));
    CU_ASSERT_PTR_NULL(strstr(r, "SECRETMEMBER"));
    /* A 400 is a 403 too, without a wait. */
    r = answer(ans, sizeof(ans), &f, bad, GT_NOW, &v);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_REJECT);
    CU_ASSERT_EQUAL(strncmp(r, "Status: 403 Forbidden\r\n", 23), 0);
    CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "X-Suspect-Status"), "400");
    CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "X-Suspect-Action"), "<none>");
    CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "X-Suspect-Retry-After-Ms"),
                           "<none>");
    gt_close(&f);
}

static void test_reject_response(void)
{
    char ans[16384];
    char hv[GT_HEADER_MAX];
    suspect_conf_identity_t ids[2];
    suspect_conf_route_t route;
    const char *bad[] = {"REQUEST_URI=/a/%00", NULL};
    gt_fixture_t f;
    mw_verdict_t v;
    const char *r;

    if (open_bank(&f, ids, &route, NULL) != 0) {
        CU_FAIL("fixture");
        return;
    }
    r = answer(ans, sizeof(ans), &f, bad, GT_NOW, &v);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_REJECT);
    CU_ASSERT_STRING_EQUAL(v.why, "bad path");
    CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "Status"), "400 Bad Request");
    CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "Cache-Control"), "no-store");
    gt_close(&f);
}

static void json_format(suspect_conf_t *c)
{
    c->format = SUSPECT_FORMAT_JSON;
}

static void html_template(suspect_conf_t *c)
{
    static const char tmpl[] = "<p>{action} {status} wait {retry_after}</p>";

    c->format = SUSPECT_FORMAT_HTML;
    c->template_body = tmpl;
    c->template_len = sizeof(tmpl) - 1;
    c->template_type = "text/html; charset=iso-8859-1";
}

static void test_formats(void)
{
    char ans[16384];
    char hv[GT_HEADER_MAX];
    suspect_conf_identity_t ids[2];
    suspect_conf_route_t route;
    const char *html_vars[] = {"REQUEST_URI=/bank.cgi", "HTTP_COOKIE=member=M",
                               "REMOTE_ADDR=192.0.2.1", "HTTP_ACCEPT=text/html",
                               NULL};
    gt_fixture_t f;
    mw_verdict_t v;
    const char *r;

    if (open_bank(&f, ids, &route, json_format) != 0) {
        CU_FAIL("fixture");
        return;
    }
    answer(ans, sizeof(ans), &f, html_vars, GT_NOW, &v);
    answer(ans, sizeof(ans), &f, html_vars, GT_NOW, &v);
    r = answer(ans, sizeof(ans), &f, html_vars, GT_NOW, &v);
    CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "Content-Type"),
                           "application/problem+json");
    CU_ASSERT_EQUAL(body_of(r)[0], '{');
    gt_close(&f);

    if (open_bank(&f, ids, &route, html_template) != 0) {
        CU_FAIL("fixture");
        return;
    }
    answer(ans, sizeof(ans), &f, bank_vars, GT_NOW, &v);
    answer(ans, sizeof(ans), &f, bank_vars, GT_NOW, &v);
    r = answer(ans, sizeof(ans), &f, bank_vars, GT_NOW, &v);
    CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "Content-Type"),
                           "text/html; charset=iso-8859-1");
    CU_ASSERT_STRING_EQUAL(body_of(r), "<p>Two 429 wait 120</p>");
    gt_close(&f);
}

/* A template whose placeholders expand past MW_DENY_BUF + its size. */
static void test_big_template(void)
{
    static char tmpl[60000];
    size_t ans_size = 600000;
    char *ans = malloc(ans_size);
    const char *action = GT_LONG_ACTION;
    suspect_conf_identity_t ids[2];
    suspect_conf_route_t route;
    gt_fixture_t f;
    mw_verdict_t v;
    const char *r;
    size_t n = 0;

    while (n + 8 < sizeof(tmpl)) {
        memcpy(tmpl + n, "{action}", 8);
        n += 8;
    }
    ids[0] = gt_ident("MemberCode", "cookie:member");
    ids[1] = gt_ident("ClientIp", "client-ip");
    route = gt_route(action, "/bank.cgi", ids, 2);
    {
        suspect_conf_t conf = gt_conf(&route, 1);
        conf.template_body = tmpl;
        conf.template_len = n;
        conf.format = SUSPECT_FORMAT_HTML;
        if (ans == NULL || gt_open(&f, &conf) != 0) {
            CU_FAIL("fixture");
            free(ans);
            return;
        }
    }
    answer(ans, ans_size, &f, bank_vars, GT_NOW, &v);
    r = answer(ans, ans_size, &f, bank_vars, GT_NOW, &v);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_DENY);
    CU_ASSERT_EQUAL(strlen(body_of(r)), n / 8 * strlen(action));
    gt_close(&f);
    free(ans);
}

/* A verdict needs the guard only: the limits snapshot it was decided on
 * may be gone (a reload) when the response is written. */
static void test_verdict_outlives_limits(void)
{
    char hv[GT_HEADER_MAX];
    static const char xml[] = "<ArrayOfSuspectUsageSettingEntity>"
                              "<SuspectUsageSettingEntity Action=\"Two\" "
                              "LimitCount=\"1\" LimitDuration=\"9\"/>"
                              "</ArrayOfSuspectUsageSettingEntity>";
    suspect_conf_identity_t ids[2];
    suspect_conf_route_t route;
    suspect_limits_t *lim = NULL;
    gt_fixture_t f;
    fakereq_t r;
    mw_verdict_t v;

    if (open_bank(&f, ids, &route, NULL) != 0) {
        CU_FAIL("fixture");
        return;
    }
    CU_ASSERT_EQUAL_FATAL(
        suspect_limits_parse(xml, sizeof(xml) - 1, "l.xml", NULL, &lim, NULL),
        SUSPECT_OK);
    for (int i = 0; i < 2; i++) {
        fakereq_init(&r, bank_vars, NULL, 0);
        CU_ASSERT_EQUAL(
            mw_guard_decide(f.g, lim, f.store, &r.req, GT_NOW, &v, NULL),
            SUSPECT_OK);
        if (i == 0) {
            fakereq_free(&r);
        }
    }
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_DENY);
    suspect_limits_unref(lim);
    CU_ASSERT_EQUAL(mw_guard_respond(f.g, &r.req, &v), 0);
    CU_ASSERT_STRING_EQUAL(gt_header(hv, r.out, "RateLimit-Policy"),
                           "\"Two\";q=1;w=9");
    fakereq_free(&r);
    gt_close(&f);
}

/* ---- failing stores ----------------------------------------------------- */

static suspect_rc_t fail_decide(suspect_store_t *s, const suspect_rule_t *rule,
                                const suspect_key_t *keys, size_t n,
                                int64_t now_ms, suspect_decision_t *out,
                                suspect_err_t *err)
{
    (void)s, (void)rule, (void)keys, (void)n, (void)now_ms, (void)out;
    return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0, "down");
}

static suspect_rc_t fail_status(suspect_store_t *s, const suspect_rule_t *rule,
                                const suspect_key_t *key, int64_t now_ms,
                                suspect_status_t *out, suspect_err_t *err)
{
    (void)s, (void)rule, (void)key, (void)now_ms, (void)out;
    return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0, "down");
}

static void fail_free(suspect_store_t *s)
{
    free(s);
}

static const suspect_store_ops_t fail_ops = {
    .name = "failing",
    .decide = fail_decide,
    .status = fail_status,
    .free = fail_free,
};

/* A store whose every call fails (SUSPECT_E_STORE). */
suspect_store_t *gt_failing_store(void)
{
    suspect_store_t *s = malloc(sizeof(*s));
    if (s != NULL) {
        s->ops = &fail_ops;
    }
    return s;
}

/* Replaces f's store by failing (bare, or behind failover in mode). */
static void use_failing(gt_fixture_t *f, int mode)
{
    suspect_store_free(f->store);
    f->store = gt_failing_store();
    if (mode >= 0) {
        suspect_failover_opts_t opts;
        suspect_store_t *local = NULL;

        memset(&opts, 0, sizeof(opts));
        opts.mode = (suspect_failmode_t)mode;
        CU_ASSERT_EQUAL(suspect_memstore_new(NULL, &local, NULL), SUSPECT_OK);
        CU_ASSERT_EQUAL(
            suspect_failover_new(f->store, local, &opts, &f->store, NULL),
            SUSPECT_OK);
    }
}

static void test_store_failure(void)
{
    char ans[16384];
    char hv[GT_HEADER_MAX];
    static const struct {
        int mode; /* -1: a bare store */
        mw_verdict_kind_t kind;
        const char *why;
    } cases[] = {
        {-1, MW_VERDICT_UNAVAILABLE, "store failed"},
        {SUSPECT_FAIL_CLOSED, MW_VERDICT_UNAVAILABLE, "store unavailable"},
        {SUSPECT_FAIL_OPEN, MW_VERDICT_ALLOW, "allowed (store degraded)"},
        {SUSPECT_FAIL_LOCAL, MW_VERDICT_ALLOW, "allowed (store degraded)"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        suspect_conf_identity_t ids[2];
        suspect_conf_route_t route;
        gt_fixture_t f;
        mw_verdict_t v;
        const char *r;

        if (open_bank(&f, ids, &route, i == 1 ? auth_mode : NULL) != 0) {
            CU_FAIL("fixture");
            return;
        }
        use_failing(&f, cases[i].mode);
        r = answer(ans, sizeof(ans), &f, bank_vars, GT_NOW, &v);
        CU_ASSERT_EQUAL(v.kind, cases[i].kind);
        CU_ASSERT_STRING_EQUAL(v.why, cases[i].why);
        if (i == 0) {
            CU_ASSERT_EQUAL(v.status, 503);
            CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "Status"),
                                   "503 Service Unavailable");
            CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "Retry-After"), "1");
            CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "RateLimit"), "<none>");
        }
        if (i == 1) {
            CU_ASSERT_EQUAL(v.decision.degraded, SUSPECT_DEGRADED_CLOSED);
            CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "Status"), "403 Forbidden");
            CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "X-Suspect-Status"), "503");
            CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "X-Suspect-Retry-After-Ms"),
                                   "1000");
        }
        gt_close(&f);
    }
}

/* A route's cost= takes that many tokens of its action's bucket, and the
 * denial says when they are back; a cost the action cannot take is
 * refused with the pair (conf_actions.c). */
static void test_route_cost(void)
{
    suspect_conf_identity_t ids[] = {gt_ident("Phone", "query:phone")};
    suspect_conf_route_t routes[] = {gt_route("OtpSend", "/otp", ids, 1)};
    suspect_conf_t conf = gt_conf(routes, 1);
    const char *vars[] = {"REQUEST_URI=/otp?phone=0912",
                          "QUERY_STRING=phone=0912", "REMOTE_ADDR=192.0.2.1",
                          NULL};
    char ans[16384];
    char hv[GT_HEADER_MAX];
    suspect_err_t err;
    gt_fixture_t f;
    mw_verdict_t v;
    const char *r;

    routes[0].cost = 3;
    routes[0].line = 12;
    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    CU_ASSERT_EQUAL(suspect_conf_check_actions(&f.snap.conf, f.lim, NULL),
                    SUSPECT_OK);
    /* 6 tokens: two requests of 3, then one token every 12 s */
    answer(ans, sizeof(ans), &f, vars, GT_NOW, &v);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(v.decision.remaining, 3);
    answer(ans, sizeof(ans), &f, vars, GT_NOW, &v);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_ALLOW);
    r = answer(ans, sizeof(ans), &f, vars, GT_NOW + 1000, &v);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_DENY);
    CU_ASSERT_EQUAL(v.decision.restriction_end_ms, GT_NOW + 36000);
    CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "Retry-After"), "35");
    CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "RateLimit-Policy"),
                           "\"OtpSend\";q=5;w=60;burst=6");
    CU_ASSERT_STRING_EQUAL(gt_header(hv, r, "RateLimit"),
                           "\"OtpSend\";r=0;t=35");
    answer(ans, sizeof(ans), &f, vars, GT_NOW + 35999, &v);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_DENY);
    answer(ans, sizeof(ans), &f, vars, GT_NOW + 36000, &v);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_ALLOW);
    /* more than the bucket holds, or a cost on a sliding log */
    routes[0].cost = 7;
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(suspect_conf_check_actions(&conf, f.lim, &err),
                    SUSPECT_E_CONFIG);
    CU_ASSERT_EQUAL(err.line, 12);
    CU_ASSERT_STRING_EQUAL(err.text, "route cost 7: action 'OtpSend' holds "
                                     "only 6 in limits.xml (its Burst)");
    routes[0].cost = 2;
    routes[0].action = "Two";
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(suspect_conf_check_actions(&conf, f.lim, &err),
                    SUSPECT_E_CONFIG);
    CU_ASSERT_STRING_EQUAL(
        err.text, "route cost 2: action 'Two' is a SlidingLog in limits.xml, "
                  "which counts one hit a request (give it "
                  "Algorithm=\"TokenBucket\" or \"SlidingCounter\")");
    CU_ASSERT_EQUAL(suspect_conf_missing_actions(&conf, f.lim, NULL, NULL), 1);
    gt_close(&f);
}

int guard_register_decisions(CU_pSuite s)
{
    return CU_add_test(s, "seed scenario (block-lock)", test_seed_scenario) ==
                       NULL ||
                   CU_add_test(s, "action not in limits",
                               test_action_not_in_limits) == NULL ||
                   CU_add_test(s, "shadow route", test_shadow_route) == NULL ||
                   CU_add_test(s, "deny response", test_deny_response) ==
                       NULL ||
                   CU_add_test(s, "route status", test_route_status) == NULL ||
                   CU_add_test(s, "auth-request mode", test_auth_request) ==
                       NULL ||
                   CU_add_test(s, "reject response", test_reject_response) ==
                       NULL ||
                   CU_add_test(s, "forced formats and template",
                               test_formats) == NULL ||
                   CU_add_test(s, "template bigger than the buffer",
                               test_big_template) == NULL ||
                   CU_add_test(s, "verdict outlives the limits",
                               test_verdict_outlives_limits) == NULL ||
                   CU_add_test(s, "failing stores", test_store_failure) ==
                       NULL ||
                   CU_add_test(s, "route cost", test_route_cost) == NULL
               ? -1
               : 0;
}
