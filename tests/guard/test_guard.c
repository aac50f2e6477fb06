/*
 * test_guard.c - suite "guard": middleware/guard/guard.c and its parts (path,
 * route, identity, decide, respond) on in-memory requests (fakereq.h)
 * against a real memory store and limits parsed from inline XML.
 *
 * Configurations are built in C, field by field, inside the loader's
 * snapshot layout (conf_internal.h) so that the guard's reference on them
 * works; the test keeps its own reference, so they are never freed.
 * Counts are checked in the store itself (suspect_store_status() on the
 * key a value must produce), so a test proves which key was counted, not
 * only that something was.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "helpers/fakereq.h"
#include "guard/guard.h"
#include "guard_test.h"
#include "suites.h"
#include "suspect_failover.h"
#include "suspect_store_impl.h"
#include "helpers/util.h"

/* ---- fixture ------------------------------------------------------------ */

static const char limits_xml[] =
    "<ArrayOfSuspectUsageSettingEntity>\n"
    "<SuspectUsageSettingEntity Action=\"One\" LimitCount=\"1\" "
    "LimitDuration=\"60\"/>\n"
    "<SuspectUsageSettingEntity Action=\"Two\" LimitCount=\"2\" "
    "LimitDuration=\"120\"/>\n"
    "<SuspectUsageSettingEntity Action=\"SecureForgotAccount\" "
    "LimitCount=\"3\" LimitDuration=\"1800\" BlockDuration=\"1800\"/>\n"
    "<SuspectUsageSettingEntity Action=\"Many\" LimitCount=\"1000\" "
    "LimitDuration=\"60\"/>\n"
    "<SuspectUsageSettingEntity Action=\"" GT_LONG_ACTION "\" LimitCount=\"1\" "
    "LimitDuration=\"60\"/>\n"
    "<SuspectUsageSettingEntity Action=\"OtpSend\" LimitCount=\"5\" "
    "LimitDuration=\"60\" Algorithm=\"TokenBucket\" Burst=\"6\"/>\n"
    "</ArrayOfSuspectUsageSettingEntity>\n";

const char *gt_name(const char *s, size_t n)
{
    static char names[128][64];
    static size_t used;

    for (size_t i = 0; i < used; i++) {
        if (strncmp(names[i], s, n) == 0 && names[i][n] == '\0') {
            return names[i];
        }
    }
    if (used == sizeof(names) / sizeof(names[0]) || n >= sizeof(names[0])) {
        fprintf(stderr, "gt_name: too many or too long names\n");
        abort();
    }
    memcpy(names[used], s, n);
    names[used][n] = '\0';
    return names[used++];
}

/* An identity from "TYPE" and "kind:name kind:name ...": parts
 * separated by blanks, a part's alternatives by '|'. */
suspect_conf_identity_t gt_ident(const char *type, const char *from)
{
    static const struct {
        const char *prefix;
        suspect_src_kind_t kind;
    } kinds[] = {{"header:", SUSPECT_SRC_HEADER},
                 {"cookie:", SUSPECT_SRC_COOKIE},
                 {"query:", SUSPECT_SRC_QUERY},
                 {"form:", SUSPECT_SRC_FORM},
                 {"env:", SUSPECT_SRC_ENV},
                 {"client-ip", SUSPECT_SRC_CLIENT_IP},
                 {"auth-user:", SUSPECT_SRC_AUTH_USER},
                 {"xmlrpc:", SUSPECT_SRC_XMLRPC},
                 {"json:", SUSPECT_SRC_JSON}};
    suspect_conf_identity_t id;
    const char *p = from;

    memset(&id, 0, sizeof(id));
    id.type = type;
    id.line = 20;
    while (*p != '\0' && id.nsources < SUSPECT_CONF_MAX_SOURCES &&
           id.nparts < SUSPECT_MAX_PARTS) {
        size_t n = strcspn(p, " |");

        for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
            size_t pl = strlen(kinds[k].prefix);
            if (n >= pl && strncmp(p, kinds[k].prefix, pl) == 0) {
                suspect_conf_source_t *s = &id.source[id.nsources++];
                s->part = (unsigned)id.nparts;
                s->kind = kinds[k].kind;
                if (s->kind != SUSPECT_SRC_CLIENT_IP) {
                    s->name = gt_name(p + pl, n - pl);
                }
            }
        }
        p += n;
        if (*p != '|') {
            id.nparts++;
        }
        p += *p == ' ' || *p == '|';
    }
    return id;
}

/* A route of action on path for identities ids[0..n). */
suspect_conf_route_t gt_route(const char *action, const char *path,
                              suspect_conf_identity_t *ids, size_t n)
{
    suspect_conf_route_t r;

    memset(&r, 0, sizeof(r));
    r.action = action;
    r.path = path;
    r.identities = ids;
    r.nidentities = n;
    r.param_in = SUSPECT_PARAM_QUERY;
    r.line = 10;
    return r;
}

/* A configuration with routes[0..n) and every other field at its
 * default. */
suspect_conf_t gt_conf(const suspect_conf_route_t *routes, size_t n)
{
    suspect_conf_t c;

    memset(&c, 0, sizeof(c));
    c.file = "suspect.xml";
    c.limits_path = "/etc/suspect/limits.xml";
    c.form_max = 64 << 10;
    c.client_ip_line = 7;
    c.response_line = 8;
    c.routes = routes;
    c.nroutes = n;
    return c;
}

/* Opens f on conf (copied into f's snapshot). */
int gt_open(gt_fixture_t *f, const suspect_conf_t *conf)
{
    suspect_err_t err;

    memset(f, 0, sizeof(*f));
    suspect_err_clear(&err);
    f->snap.conf = *conf;
    f->snap.refs = 1;
    if (mw_guard_new(&f->snap.conf, &f->g, &err) != SUSPECT_OK ||
        suspect_limits_parse(limits_xml, sizeof(limits_xml) - 1, "limits.xml",
                             NULL, &f->lim, &err) != SUSPECT_OK ||
        suspect_memstore_new(NULL, &f->store, &err) != SUSPECT_OK) {
        fprintf(stderr, "gt_open: %s\n", err.text);
        return -1;
    }
    return 0;
}

void gt_close(gt_fixture_t *f)
{
    mw_guard_unref(f->g);
    suspect_limits_unref(f->lim);
    suspect_store_free(f->store);
    CU_ASSERT_EQUAL(f->snap.refs, 1);
}

/* Decides a request of vars (and body) at now_ms. */
mw_verdict_t gt_decide_at(gt_fixture_t *f, const char *const *vars,
                          const char *body, int64_t now_ms)
{
    fakereq_t r;
    mw_verdict_t v;
    suspect_rc_t rc;

    fakereq_init(&r, vars, body, body != NULL ? strlen(body) : 0);
    rc = mw_guard_decide(f->g, f->lim, f->store, &r.req, now_ms, &v, NULL);
    CU_ASSERT_EQUAL(rc, SUSPECT_OK);
    fakereq_free(&r);
    return v;
}

mw_verdict_t gt_decide(gt_fixture_t *f, const char *const *vars,
                       const char *body)
{
    return gt_decide_at(f, vars, body, GT_NOW);
}

mw_verdict_t gt_post(gt_fixture_t *f, const char *uri, const char *qs,
                     const char *body, const char *extra)
{
    char u[512], q[512], len[64];
    const char *vars[8];
    size_t n = 0;

    snprintf(u, sizeof(u), "REQUEST_URI=%s", uri);
    vars[n++] = u;
    vars[n++] = "REQUEST_METHOD=POST";
    if (qs != NULL) {
        snprintf(q, sizeof(q), "QUERY_STRING=%s", qs);
        vars[n++] = q;
    }
    if (body != NULL) {
        snprintf(len, sizeof(len), "CONTENT_LENGTH=%zu", strlen(body));
        vars[n++] = len;
        vars[n++] = "CONTENT_TYPE=application/x-www-form-urlencoded";
    }
    if (extra != NULL) {
        vars[n++] = extra;
    }
    vars[n] = NULL;
    return gt_decide(f, vars, body);
}

/* Hits counted now for the key of action and value (type Id, seed keys). */
uint32_t gt_count(gt_fixture_t *f, const char *action, const char *value)
{
    suspect_key_t key = test_key(action, value);
    suspect_status_t st;

    memset(&st, 0, sizeof(st));
    if (suspect_store_status(f->store, suspect_limits_find(f->lim, action),
                             &key, GT_NOW + 1, &st, NULL) != SUSPECT_OK) {
        return 9999;
    }
    return st.in_window;
}

/* ---- paths -------------------------------------------------------------- */

static void test_path_table(void)
{
    static const struct {
        const char *raw;
        const char *want; /* NULL: SUSPECT_E_INVAL */
    } cases[] = {
        {"/login.cgi", "/login.cgi"},
        {"/%6Cogin.cgi", "/login.cgi"},
        {"/%6cogin.cgi", "/login.cgi"},
        {"//login.cgi", "/login.cgi"},
        {"///a//b///c", "/a/b/c"},
        {"/a/../login.cgi", "/login.cgi"},
        {"/a/b/../../login.cgi", "/login.cgi"},
        {"/./login.cgi", "/login.cgi"},
        {"/a/%2e%2e/login.cgi", "/login.cgi"},
        {"/a/.%2E/login.cgi", "/login.cgi"},
        {"/a%2f..%2flogin.cgi", "/login.cgi"},
        {"/%2e/login.cgi", "/login.cgi"},
        {"/login.cgi?x=/../../y", "/login.cgi"},
        {"/login.cgi#/../x", "/login.cgi"},
        {"/login.cgi%3Fx", "/login.cgi?x"},
        {"/dir/", "/dir/"},
        {"/dir/.", "/dir/"},
        {"/dir/..", "/"},
        {"/dir/sub/..", "/dir/"},
        {"/", "/"},
        {"/.", "/"},
        {"/...", "/..."},
        {"/.well-known/x", "/.well-known/x"},
        {"/a/b/", "/a/b/"},
        {"/a/..b/.c", "/a/..b/.c"},
        {"/%zz/%4", "/%zz/%4"},
        {"/...", "/..."},
        {"/.well-known/x", "/.well-known/x"},
        {"/a/b/", "/a/b/"},
        {"/%252e%252e/x", "/%2e%2e/x"},
        {"", NULL},
        {"login.cgi", NULL},
        {"%2Flogin.cgi", NULL},
        {"?x", NULL},
        {"/%00", NULL},
        {"/login.cgi%00.txt", NULL},
        {"/..", NULL},
        {"/../login.cgi", NULL},
        {"/%2e%2e", NULL},
        {"/%2E%2e/login.cgi", NULL},
        {"/a/../..", NULL},
        {"/a/%2e%2e%2f%2e%2e/x", NULL},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char buf[256];
        size_t len = 0;
        suspect_rc_t rc = mw_path_normalize(cases[i].raw, strlen(cases[i].raw),
                                            buf, sizeof(buf), &len);

        if (cases[i].want == NULL) {
            CU_ASSERT_EQUAL(rc, SUSPECT_E_INVAL);
            if (rc != SUSPECT_E_INVAL) {
                fprintf(stderr, "\n  %s: accepted as %s\n", cases[i].raw, buf);
            }
            continue;
        }
        CU_ASSERT_EQUAL(rc, SUSPECT_OK);
        CU_ASSERT(rc == SUSPECT_OK && len == strlen(cases[i].want) &&
                  strcmp(buf, cases[i].want) == 0);
        if (rc != SUSPECT_OK || strcmp(buf, cases[i].want) != 0) {
            fprintf(stderr, "\n  %s: got %s (rc %d)\n", cases[i].raw, buf, rc);
        }
    }
}

static void test_path_buffer(void)
{
    char buf[8];
    size_t len = 0;

    /* Fits exactly with its NUL; one byte more does not. */
    CU_ASSERT_EQUAL(mw_path_normalize("/abcdef", 7, buf, 8, &len), SUSPECT_OK);
    CU_ASSERT_EQUAL(len, 7);
    CU_ASSERT_EQUAL(mw_path_normalize("/abcdefg", 8, buf, 8, &len),
                    SUSPECT_E_FULL);
    /* The output never outgrows the input: len + 1 bytes are enough. */
    CU_ASSERT_EQUAL(mw_path_normalize("/a/../b", 7, buf, 8, &len), SUSPECT_OK);
    CU_ASSERT_STRING_EQUAL(buf, "/b");
    /* Only raw[0..len) is read. */
    CU_ASSERT_EQUAL(mw_path_normalize("/ab/..", 3, buf, 8, &len), SUSPECT_OK);
    CU_ASSERT_STRING_EQUAL(buf, "/ab");
    CU_ASSERT_EQUAL(mw_path_normalize(NULL, 0, buf, 8, &len), SUSPECT_E_INVAL);
    CU_ASSERT_EQUAL(mw_path_normalize("/", 1, NULL, 0, &len), SUSPECT_E_INVAL);
}

/* Encoded spellings of a protected path are counted as that path; paths
 * that cannot be used are a 400. */
static void test_path_bypass(void)
{
    suspect_conf_identity_t ids[] = {gt_ident("ClientIp", "client-ip")};
    suspect_conf_route_t routes[] = {gt_route("Many", "/login.cgi", ids, 1)};
    suspect_conf_t conf = gt_conf(routes, 1);
    static const char *const spellings[] = {
        "/login.cgi",      "/%6Cogin.cgi",        "//login.cgi",
        "/a/../login.cgi", "/./login.cgi",        "/x/%2e%2e/login.cgi",
        "/login.cgi?a=b",  "/a%2F..%2Flogin.cgi", "/login.cgi#x"};
    static const char *const bad[] = {"/%00", "/..", "/%2e%2e",
                                      "/a/../../login.cgi", "login.cgi"};
    char uri[128];
    const char *vars[] = {"REQUEST_METHOD=GET", uri, "REMOTE_ADDR=192.0.2.1",
                          NULL};
    gt_fixture_t f;

    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    for (size_t i = 0; i < sizeof(spellings) / sizeof(*spellings); i++) {
        mw_verdict_t v;

        snprintf(uri, sizeof(uri), "REQUEST_URI=%s", spellings[i]);
        v = gt_decide(&f, vars, NULL);
        CU_ASSERT_EQUAL(v.kind, MW_VERDICT_ALLOW);
    }
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "192.0.2.1"),
                    sizeof(spellings) / sizeof(*spellings));
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        mw_verdict_t v;

        snprintf(uri, sizeof(uri), "REQUEST_URI=%s", bad[i]);
        v = gt_decide(&f, vars, NULL);
        CU_ASSERT_EQUAL(v.kind, MW_VERDICT_REJECT);
        CU_ASSERT_EQUAL(v.status, 400);
        CU_ASSERT_PTR_NULL(v.route);
    }
    /* Without REQUEST_URI: SCRIPT_NAME + PATH_INFO, already decoded. */
    {
        const char *cgi[] = {"SCRIPT_NAME=/login.cgi",
                             "PATH_INFO=", "REMOTE_ADDR=192.0.2.1", NULL};
        const char *cgi2[] = {"SCRIPT_NAME=/x", "PATH_INFO=/../login.cgi",
                              "REMOTE_ADDR=192.0.2.1", NULL};
        const char *pct[] = {"SCRIPT_NAME=/%6Cogin.cgi",
                             "REMOTE_ADDR=192.0.2.1", NULL};
        const char *none[] = {"REMOTE_ADDR=192.0.2.1", NULL};

        CU_ASSERT_EQUAL(gt_decide(&f, cgi, NULL).kind, MW_VERDICT_ALLOW);
        CU_ASSERT_EQUAL(gt_decide(&f, cgi2, NULL).kind, MW_VERDICT_ALLOW);
        CU_ASSERT_EQUAL(gt_decide(&f, pct, NULL).kind, MW_VERDICT_PASS);
        CU_ASSERT_EQUAL(gt_decide(&f, none, NULL).kind, MW_VERDICT_REJECT);
    }
    gt_close(&f);
}

/* A path longer than the stack buffer is still normalised and matched. */
static void test_path_long(void)
{
    suspect_conf_identity_t ids[] = {gt_ident("ClientIp", "client-ip")};
    suspect_conf_route_t routes[] = {gt_route("Many", "/login.cgi", ids, 1)};
    suspect_conf_t conf = gt_conf(routes, 1);
    size_t seg = 9000;
    char *uri = malloc(seg + 64);
    const char *vars[] = {uri, "REMOTE_ADDR=192.0.2.1", NULL};
    gt_fixture_t f;

    CU_ASSERT_FATAL(uri != NULL);
    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        free(uri);
        return;
    }
    strcpy(uri, "REQUEST_URI=/");
    memset(uri + 13, 'a', seg);
    strcpy(uri + 13 + seg, "/../login.cgi");
    CU_ASSERT_EQUAL(gt_decide(&f, vars, NULL).kind, MW_VERDICT_ALLOW);
    strcpy(uri + 13 + seg, "/login.cgi");
    CU_ASSERT_EQUAL(gt_decide(&f, vars, NULL).kind, MW_VERDICT_PASS);
    gt_close(&f);
    free(uri);
}

/* ---- compiling ---------------------------------------------------------- */

/* mw_guard_new() on conf in a fresh snapshot: its code, and err. */
static suspect_rc_t compile_err(const suspect_conf_t *conf, suspect_err_t *err)
{
    static conf_snap_t snap;
    mw_guard_t *g = NULL;
    suspect_rc_t rc;

    memset(&snap, 0, sizeof(snap));
    snap.conf = *conf;
    snap.refs = 1;
    suspect_err_clear(err);
    rc = mw_guard_new(&snap.conf, &g, err);
    CU_ASSERT_EQUAL(rc == SUSPECT_OK, g != NULL);
    mw_guard_unref(g);
    CU_ASSERT_EQUAL(snap.refs, 1);
    return rc;
}

static void test_new_errors(void)
{
    suspect_conf_identity_t ids[] = {gt_ident("Id", "client-ip")};
    suspect_conf_identity_t bad_hdr[] = {gt_ident("Id", "header:X@Bad")};
    suspect_conf_identity_t bad_type[] = {gt_ident("1d", "client-ip")};
    suspect_conf_route_t routes[] = {gt_route("One", "/a", ids, 1)};
    suspect_conf_t conf = gt_conf(routes, 1);
    suspect_err_t err;
    char msg[512];

    CU_ASSERT_EQUAL(compile_err(&conf, &err), SUSPECT_OK);
    conf.trusted_proxies = "10.0.0.0/8, 10.0.0.1/8";
    CU_ASSERT_EQUAL(compile_err(&conf, &err), SUSPECT_E_CONFIG);
    suspect_err_format(&err, msg, sizeof(msg));
    CU_ASSERT_EQUAL(strncmp(msg, "suspect.xml:7: ClientIp: ", 25), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "10.0.0.1/8"));
    conf.trusted_proxies = "10.0.0.0/8 ::1";
    CU_ASSERT_EQUAL(compile_err(&conf, &err), SUSPECT_OK);
    conf.ipv4_prefix = 33;
    CU_ASSERT_EQUAL(compile_err(&conf, &err), SUSPECT_E_CONFIG);
    CU_ASSERT_EQUAL(err.line, 7);
    conf.ipv4_prefix = 24;
    conf.ipv6_prefix = 129;
    CU_ASSERT_EQUAL(compile_err(&conf, &err), SUSPECT_E_CONFIG);
    conf.ipv6_prefix = 0;
    /* "Forwarded, else X-Forwarded-For" is not a header: refused. */
    conf.fwd_header = SUSPECT_FWD_BOTH;
    CU_ASSERT_EQUAL(compile_err(&conf, &err), SUSPECT_E_CONFIG);
    CU_ASSERT_EQUAL(err.line, 7);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "x-forwarded-for or forwarded"));
    conf.fwd_header = SUSPECT_FWD_FORWARDED;
    CU_ASSERT_EQUAL(compile_err(&conf, &err), SUSPECT_OK);
    conf.fwd_header = SUSPECT_FWD_NONE;
    routes[0].path = "/a/../b";
    CU_ASSERT_EQUAL(compile_err(&conf, &err), SUSPECT_E_CONFIG);
    CU_ASSERT_EQUAL(err.line, 10);
    routes[0].path = "a";
    CU_ASSERT_EQUAL(compile_err(&conf, &err), SUSPECT_E_CONFIG);
    routes[0].path = "/a/";
    CU_ASSERT_EQUAL(compile_err(&conf, &err), SUSPECT_OK);
    routes[0].param_name = "";
    CU_ASSERT_EQUAL(compile_err(&conf, &err), SUSPECT_E_CONFIG);
    CU_ASSERT_EQUAL(err.line, 10);
    routes[0].param_name = NULL;
    routes[0].identities = bad_hdr;
    CU_ASSERT_EQUAL(compile_err(&conf, &err), SUSPECT_E_CONFIG);
    CU_ASSERT_EQUAL(err.line, 20);
    routes[0].identities = bad_type;
    CU_ASSERT_EQUAL(compile_err(&conf, &err), SUSPECT_E_CONFIG);
    routes[0].identities = ids;
    routes[0].action = "bad action";
    CU_ASSERT_EQUAL(compile_err(&conf, &err), SUSPECT_E_CONFIG);
    routes[0].action = "One";
    conf.template_body = "x";
    conf.template_len = 1;
    conf.template_type = "text/html\r\nSet-Cookie: a=b";
    CU_ASSERT_EQUAL(compile_err(&conf, &err), SUSPECT_E_CONFIG);
    CU_ASSERT_EQUAL(err.line, 8);
    conf.template_type = "text/plain";
    CU_ASSERT_EQUAL(compile_err(&conf, &err), SUSPECT_OK);
    CU_ASSERT_EQUAL(mw_guard_new(NULL, NULL, &err), SUSPECT_E_INVAL);
}

/* Every allocation of mw_guard_new() failing in turn: SUSPECT_E_NOMEM,
 * nothing leaked, the conf's references back where they were. */
static void test_new_nomem(void)
{
    suspect_conf_identity_t ids[] = {gt_ident("Id", "header:X-Member"),
                                     gt_ident("Ip", "client-ip")};
    suspect_conf_route_t routes[] = {gt_route("One", "/a", ids, 2),
                                     gt_route("Two", "/b", ids, 1)};
    suspect_conf_t conf = gt_conf(routes, 2);
    suspect_err_t err;
    int failures = 0;

    for (long n = 1; n < 20; n++) {
        suspect_rc_t rc;

        suspect_test_fail_alloc_after(n);
        rc = compile_err(&conf, &err);
        suspect_test_fail_alloc_after(-1);
        CU_ASSERT(rc == SUSPECT_OK || rc == SUSPECT_E_NOMEM);
        if (rc == SUSPECT_OK) {
            break;
        }
        failures++;
    }
    CU_ASSERT(failures >= 3);
}

static void test_refs(void)
{
    suspect_conf_identity_t ids[] = {gt_ident("Id", "client-ip")};
    suspect_conf_route_t routes[] = {gt_route("One", "/a", ids, 1)};
    suspect_conf_t conf = gt_conf(routes, 1);
    gt_fixture_t f;

    if (gt_open(&f, &conf) != 0) {
        CU_FAIL("fixture");
        return;
    }
    CU_ASSERT_EQUAL(f.snap.refs, 2);
    CU_ASSERT_PTR_EQUAL(mw_guard_conf(f.g), &f.snap.conf);
    CU_ASSERT_PTR_EQUAL(mw_guard_ref(f.g), f.g);
    mw_guard_unref(f.g);
    CU_ASSERT_EQUAL(f.snap.refs, 2);
    mw_guard_unref(NULL);
    CU_ASSERT_PTR_NULL(mw_guard_ref(NULL));
    CU_ASSERT_PTR_NULL(mw_guard_conf(NULL));
    gt_close(&f);
}

/* suspect.xml through the real loader: the guard compiles what the loader
 * built, and a bad proxy list is reported at its element's line. */
static void test_from_xml(void)
{
    static const char xml[] =
        "<Suspect>\n"
        "  <Server listen=\"unix:/tmp/s.sock\" mode=\"auth-request\"/>\n"
        "  <Limits path=\"limits.xml\"/>\n"
        "  <ClientIp trustedProxies=\"%s\" header=\"x-forwarded-for\"/>\n"
        "  <Route action=\"Two\" method=\"POST\" prefix=\"/app.cgi\"\n"
        "         param=\"op=bank\" paramIn=\"query\">\n"
        "    <Identity type=\"MemberCode\" from=\"cookie:member\"/>\n"
        "    <Identity type=\"ClientIp\" from=\"client-ip\"/>\n"
        "  </Route>\n"
        "</Suspect>\n";
    const char *vars[] = {"REQUEST_METHOD=POST",
                          "REQUEST_URI=/app.cgi/x?op=bank",
                          "SCRIPT_NAME=/app.cgi",
                          "PATH_INFO=/x",
                          "QUERY_STRING=op=bank",
                          "HTTP_COOKIE=member=M7",
                          "REMOTE_ADDR=10.1.2.3",
                          "HTTP_X_FORWARDED_FOR=198.51.100.9",
                          NULL};
    char buf[1024];
    const suspect_conf_t *conf = NULL;
    suspect_limits_t *lim = NULL;
    suspect_store_t *store = NULL;
    mw_guard_t *g = NULL;
    suspect_err_t err;
    char msg[512];
    int n;

    suspect_err_clear(&err);
    n = snprintf(buf, sizeof(buf), xml, "10.0.0.0/8");
    CU_ASSERT_EQUAL_FATAL(suspect_conf_parse(buf, (size_t)n, "suspect.xml",
                                             "/etc/suspect", &conf, &err),
                          SUSPECT_OK);
    CU_ASSERT_EQUAL_FATAL(mw_guard_new(conf, &g, &err), SUSPECT_OK);
    suspect_conf_unref(conf); /* the guard keeps it alive */
    CU_ASSERT_EQUAL_FATAL(suspect_limits_parse(limits_xml,
                                               sizeof(limits_xml) - 1,
                                               "limits.xml", NULL, &lim, &err),
                          SUSPECT_OK);
    CU_ASSERT_EQUAL_FATAL(suspect_memstore_new(NULL, &store, &err), SUSPECT_OK);
    for (int i = 0; i < 3; i++) {
        fakereq_t r;
        mw_verdict_t v;

        fakereq_init(&r, vars, NULL, 0);
        CU_ASSERT_EQUAL(
            mw_guard_decide(g, lim, store, &r.req, GT_NOW, &v, &err),
            SUSPECT_OK);
        CU_ASSERT_EQUAL(v.kind, i < 2 ? MW_VERDICT_ALLOW : MW_VERDICT_DENY);
        if (i == 2) {
            CU_ASSERT_EQUAL(mw_guard_respond(g, &r.req, &v), 0);
            CU_ASSERT_EQUAL(strncmp(r.out,
                                    "Status: 403 Forbidden\r\n"
                                    "X-Suspect-Status: 429\r\n",
                                    46),
                            0);
        }
        fakereq_free(&r);
    }
    {
        suspect_key_t k = test_key("Two", "198.51.100.9");
        suspect_status_t st;

        CU_ASSERT_EQUAL(suspect_store_status(store,
                                             suspect_limits_find(lim, "Two"),
                                             &k, GT_NOW, &st, NULL),
                        SUSPECT_OK);
        CU_ASSERT_EQUAL(st.in_window, 2);
    }
    mw_guard_unref(g);
    suspect_limits_unref(lim);
    suspect_store_free(store);

    n = snprintf(buf, sizeof(buf), xml, "10.0.0.0/8 300.1.2.3");
    CU_ASSERT_EQUAL_FATAL(suspect_conf_parse(buf, (size_t)n, "suspect.xml",
                                             "/etc/suspect", &conf, &err),
                          SUSPECT_OK);
    g = NULL;
    CU_ASSERT_EQUAL(mw_guard_new(conf, &g, &err), SUSPECT_E_CONFIG);
    CU_ASSERT_PTR_NULL(g);
    suspect_err_format(&err, msg, sizeof(msg));
    CU_ASSERT_EQUAL(strncmp(msg, "suspect.xml:4: ClientIp: ", 25), 0);
    suspect_conf_unref(conf);
}

/* ---- registration ------------------------------------------------------- */

int register_guard_suite(void)
{
    CU_pSuite s = CU_add_suite("guard", NULL, NULL);

    if (s == NULL ||
        CU_add_test(s, "path normalisation table", test_path_table) == NULL ||
        CU_add_test(s, "path buffer bounds", test_path_buffer) == NULL ||
        CU_add_test(s, "encoded path spellings", test_path_bypass) == NULL ||
        CU_add_test(s, "path longer than the stack", test_path_long) == NULL ||
        CU_add_test(s, "compile errors", test_new_errors) == NULL ||
        CU_add_test(s, "compile out of memory", test_new_nomem) == NULL ||
        CU_add_test(s, "references", test_refs) == NULL ||
        CU_add_test(s, "suspect.xml through the loader", test_from_xml) ==
            NULL) {
        return -1;
    }
    return guard_register_routes(s) != 0 || guard_register_identities(s) != 0 ||
                   guard_register_decisions(s) != 0 ||
                   guard_register_modes(s) != 0 ||
                   guard_register_bypass(s) != 0 ||
                   guard_register_lists(s) != 0 ||
                   guard_register_targets(s) != 0 ||
                   guard_register_readings(s) != 0 ||
                   guard_register_multipart(s) != 0 ||
                   guard_register_calls(s) != 0 ||
                   guard_register_cgipm(s) != 0 ||
                   guard_register_challenges(s) != 0 ||
                   guard_register_devices(s) != 0
               ? -1
               : 0;
}
