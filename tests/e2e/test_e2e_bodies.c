/*
 * test_e2e_bodies.c - logins inside XML-RPC and JSON bodies, through a
 * real web server and a real application: nginx -> suspect-fcgi ->
 * php-cgi running examples/app/xmlrpc.php (passwords checked per call the
 * way WordPress's xmlrpc.php does, system.multicall included) and
 * examples/app/jsonrpc.php (JSON-RPC, batches included), with
 * examples/suspect-login.xml (Login: 3 attempts in 600 s, then locked).
 *
 * The applications log every password they check (attempts.log), and
 * each test compares that with the limit: twenty guesses at alice's
 * password in one multicall, in multicalls of two, in single calls, over
 * mixed methods and in a JSON batch reach the application at most three
 * times all together.  Methods that check no password pass; a method the
 * route has no reading for, a body sent as a form, a nested multicall, a
 * JSON object with two usernames are refused.  The owner's correct login
 * after the attack behaves as the form's does: her browser's device
 * cookie gets her in, a request without it is locked out.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers/e2e.h"
#include "helpers/procs.h"
#include "helpers/redisserver.h"
#include "helpers/vgwrap.h"
#include "helpers/util.h"

#define GUESSES 20
#define LIMIT   3 /* Login in examples/limits.xml */
#define BODY    32768

#define MC_HEAD                                                                \
    "<?xml version=\"1.0\"?><methodCall><methodName>system.multicall"          \
    "</methodName><params><param><value><array><data>"
#define MC_TAIL "</data></array></value></param></params></methodCall>"

/* Lines of the application's attempts.log that are line. */
static int performed(const char *line)
{
    char path[TEST_PATH_MAX];

    snprintf(path, sizeof(path), "%s/attempts.log", e2e.app);
    return test_count_lines(path, line);
}

/* The password checks of any account the application logged for
 * alice, both endpoints. */
static int alice_checks(void)
{
    return performed("xmlrpc fail alice") + performed("xmlrpc ok alice") +
           performed("jsonrpc fail alice") + performed("jsonrpc ok alice");
}

/* One POST of body to path as type; its status. */
static int post(const char *path, const char *type, const char *body)
{
    char url[E2E_URL], header[128];
    const char *args[] = {
        "-H", header, "--data-binary", body, e2e_url(url, path), NULL};

    snprintf(header, sizeof(header), "Content-Type: %s", type);
    return e2e_status(args);
}

static int xmlrpc(const char *body)
{
    return post("/xmlrpc.php", "text/xml", body);
}

/* The params of method m for user and password, where WordPress takes
 * them, as XML-RPC <value>s. */
static void params_of(const char *m, const char *user, const char *pw,
                      char *out, size_t size)
{
    static const struct {
        const char *method;
        int place;
    } table[] = {{"wp.getUsersBlogs", 1},   {"wp.getProfile", 2},
                 {"metaWeblog.getPost", 2}, {"blogger.getUsersBlogs", 2},
                 {"blogger.deletePost", 3}, {"mt.getCategoryList", 2}};
    int place = 1;
    size_t o = 0;

    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
        place = strcmp(table[i].method, m) == 0 ? table[i].place : place;
    }
    out[0] = '\0';
    for (int i = 1; i < place; i++) {
        o += (size_t)snprintf(out + o, size - o,
                              "<value><string>1</string></value>");
    }
    snprintf(out + o, size - o,
             "<value><string>%s</string></value>"
             "<value><string>%s</string></value>",
             user, pw);
}

/* A plain call of m. */
static void call_body(const char *m, const char *user, const char *pw,
                      char *out, size_t size)
{
    char p[512], params[1024];
    size_t o = 0;

    params_of(m, user, pw, p, sizeof(p));
    /* each <value> in its <param> */
    for (const char *v = p; (v = strstr(v, "<value>")) != NULL;) {
        const char *end = strstr(v, "</value>") + 8;
        o += (size_t)snprintf(params + o, sizeof(params) - o,
                              "<param>%.*s</param>", (int)(end - v), v);
        v = end;
    }
    snprintf(out, size,
             "<?xml version=\"1.0\"?><methodCall><methodName>%s</methodName>"
             "<params>%s</params></methodCall>",
             m, params);
}

/* Appends a multicall's call of m to out (at *o). */
static void mc_call(const char *m, const char *user, const char *pw, char *out,
                    size_t *o)
{
    char p[512];

    params_of(m, user, pw, p, sizeof(p));
    *o += (size_t)snprintf(
        out + *o, BODY - *o,
        "<value><struct><member><name>methodName</name><value><string>%s"
        "</string></value></member><member><name>params</name><value>"
        "<array><data>%s</data></array></value></member></struct></value>",
        m, p);
}

/* A multicall of n guesses at alice's password from guess `from` on. */
static void multicall(int from, int n, char *out)
{
    size_t o = (size_t)snprintf(out, BODY, "%s", MC_HEAD);
    char pw[32];

    for (int i = 0; i < n; i++) {
        snprintf(pw, sizeof(pw), "guess%d", from + i);
        mc_call("wp.getUsersBlogs", "alice", pw, out, &o);
    }
    snprintf(out + o, BODY - o, "%s", MC_TAIL);
}

/* Twenty guesses in one multicall: one request, twenty attempts, over
 * the limit: refused whole, no password checked.  Then in multicalls of
 * two: the first passes (two checks), the second crosses the limit. */
static void test_multicall(void)
{
    char body[BODY], with[256], url[E2E_URL], dlog[TEST_PATH_MAX];
    const char *edits[] = {"</Suspect>", with, NULL};
    int mport = test_free_port();
    test_http_t r;

    snprintf(with, sizeof(with),
             "  <Metrics listen=\"tcp:127.0.0.1:%d\"/>\n"
             "  <Log decisions=\"all\" path=\"decisions.log\"/>\n</Suspect>",
             mport);
    CU_ASSERT_FATAL(e2e_start_login(edits) == 0);
    multicall(0, GUESSES, body);
    CU_ASSERT_EQUAL(xmlrpc(body), 429);
    CU_ASSERT_EQUAL(alice_checks(), 0);
    /* the decision log and the metrics say how many calls it carried */
    e2e_path(dlog, "decisions.log");
    CU_ASSERT_EQUAL(
        test_wait_file_text(dlog, "\"calls\":20", test_scale_ms(5000)), 0);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", mport);
    CU_ASSERT_FATAL(e2e_http(&r, (const char *[]){url, NULL}) == 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.body, "suspect_calls_total 20\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.body, "suspect_call_bodies_total 1\n"));
    test_http_free(&r);
    e2e_stop();

    CU_ASSERT_FATAL(e2e_start_login(NULL) == 0);
    for (int i = 0; i < GUESSES; i += 2) {
        multicall(i, 2, body);
        CU_ASSERT_EQUAL(xmlrpc(body), i == 0 ? 200 : 429);
    }
    CU_ASSERT_EQUAL(alice_checks(), 2);
    CU_ASSERT(alice_checks() <= LIMIT);
    /* each call for its own account: bob's two go through */
    {
        size_t o = (size_t)snprintf(body, BODY, "%s", MC_HEAD);

        mc_call("wp.getUsersBlogs", "bob", "x", body, &o);
        mc_call("wp.getUsersBlogs", "bob", "y", body, &o);
        snprintf(body + o, BODY - o, "%s", MC_TAIL);
    }
    CU_ASSERT_EQUAL(xmlrpc(body), 200);
    CU_ASSERT_EQUAL(performed("xmlrpc fail bob"), 2);
}

/* Twenty single calls, over every method of WordPress's table in turn;
 * methods that check no password pass, and are not counted. */
static void test_single_and_mixed(void)
{
    static const char *const methods[] = {
        "wp.getUsersBlogs",      "wp.getProfile",      "metaWeblog.getPost",
        "blogger.getUsersBlogs", "blogger.deletePost", "mt.getCategoryList"};
    static const char ping[] =
        "<?xml version=\"1.0\"?><methodCall><methodName>pingback.ping"
        "</methodName><params><param><value><string>http://a/</string>"
        "</value></param></params></methodCall>";
    char body[BODY], pw[32];
    int passed = 0;

    CU_ASSERT_FATAL(e2e_start_login(NULL) == 0);
    for (int i = 0; i < GUESSES; i++) {
        snprintf(pw, sizeof(pw), "guess%d", i);
        call_body(methods[i % 6], "alice", pw, body, sizeof(body));
        passed += xmlrpc(body) == 200;
        CU_ASSERT_EQUAL(xmlrpc(ping), 200);
    }
    CU_ASSERT_EQUAL(passed, LIMIT);
    CU_ASSERT_EQUAL(alice_checks(), LIMIT);
    /* the multicall of mixed methods is refused too, whole */
    {
        size_t o = (size_t)snprintf(body, BODY, "%s", MC_HEAD);

        for (int i = 0; i < 6; i++) {
            mc_call(methods[i], "alice", "more", body, &o);
        }
        snprintf(body + o, BODY - o, "%s", MC_TAIL);
    }
    CU_ASSERT_EQUAL(xmlrpc(body), 429);
    CU_ASSERT_EQUAL(alice_checks(), LIMIT);
}

/* What the route cannot read the way the application does: refused
 * before the application runs. */
static void test_refused(void)
{
    char body[BODY];
    size_t o;

    CU_ASSERT_FATAL(e2e_start_login(NULL) == 0);
    /* a method the table does not name */
    call_body("wp.x", "alice", "g", body, sizeof(body));
    memcpy(strstr(body, "wp.x"), "zz.x", 4);
    CU_ASSERT_EQUAL(xmlrpc(body), 400);
    /* an XML-RPC body sent as a form: xmlrpc.php reads it anyway */
    call_body("wp.getUsersBlogs", "alice", "g", body, sizeof(body));
    CU_ASSERT_EQUAL(
        post("/xmlrpc.php", "application/x-www-form-urlencoded", body), 415);
    /* a multicall inside a multicall */
    o = (size_t)snprintf(body, BODY, "%s", MC_HEAD);
    o += (size_t)snprintf(body + o, BODY - o,
                          "<value><struct><member><name>methodName</name>"
                          "<value>system.multicall</value></member></struct>"
                          "</value>");
    snprintf(body + o, BODY - o, "%s", MC_TAIL);
    CU_ASSERT_EQUAL(xmlrpc(body), 400);
    /* more calls than maxCalls (100) */
    o = (size_t)snprintf(body, BODY, "%s", MC_HEAD);
    for (int i = 0; i < 101; i++) {
        o += (size_t)snprintf(body + o, BODY - o,
                              "<value><struct><member><name>methodName</name>"
                              "<value>demo.sayHello</value></member></struct>"
                              "</value>");
    }
    snprintf(body + o, BODY - o, "%s", MC_TAIL);
    CU_ASSERT_EQUAL(xmlrpc(body), 400);
    /* JSON: two usernames, a username of another type, not JSON */
    CU_ASSERT_EQUAL(post("/jsonrpc.php", "application/json",
                         "{\"method\":\"login\",\"params\":{\"username\":"
                         "\"bob\",\"password\":\"g\",\"username\":\"alice\"}}"),
                    400);
    CU_ASSERT_EQUAL(post("/jsonrpc.php", "application/json",
                         "{\"method\":\"login\",\"params\":{\"username\":"
                         "[\"alice\"],\"password\":\"g\"}}"),
                    400);
    CU_ASSERT_EQUAL(post("/jsonrpc.php", "text/plain",
                         "{\"method\":\"login\",\"params\":{\"username\":"
                         "\"alice\",\"password\":\"g\"}}"),
                    415);
    CU_ASSERT_EQUAL(alice_checks(), 0);
    CU_ASSERT_EQUAL(performed("jsonrpc fail bob"), 0);
}

/* A JSON-RPC batch of twenty guesses: refused whole, and alice locked;
 * batches of two reach the application at most three times. */
static void test_json_batch(void)
{
    char body[BODY];
    size_t o;

    CU_ASSERT_FATAL(e2e_start_login(NULL) == 0);
    o = (size_t)snprintf(body, BODY, "[");
    for (int i = 0; i < GUESSES; i++) {
        o += (size_t)snprintf(body + o, BODY - o,
                              "%s{\"jsonrpc\":\"2.0\",\"method\":\"login\","
                              "\"params\":{\"username\":\"alice\","
                              "\"password\":\"guess%d\"},\"id\":%d}",
                              i > 0 ? "," : "", i, i);
    }
    snprintf(body + o, BODY - o, "]");
    CU_ASSERT_EQUAL(post("/jsonrpc.php", "application/json", body), 429);
    CU_ASSERT_EQUAL(alice_checks(), 0);
    /* its first three calls were counted, the fourth locked alice */
    CU_ASSERT_EQUAL(post("/jsonrpc.php", "application/json",
                         "{\"method\":\"login\",\"params\":{\"username\":"
                         "\"alice\",\"password\":\"correct horse\"}}"),
                    429);
    e2e_stop();

    CU_ASSERT_FATAL(e2e_start_login(NULL) == 0);
    for (int i = 0; i < GUESSES; i += 2) {
        snprintf(body, BODY,
                 "[{\"method\":\"login\",\"params\":{\"username\":\"alice\","
                 "\"password\":\"g%d\"}},{\"method\":\"login\",\"params\":"
                 "{\"username\":\"alice\",\"password\":\"g%d\"}}]",
                 i, i + 1);
        (void)post("/jsonrpc.php", "application/json", body);
    }
    CU_ASSERT(alice_checks() <= LIMIT);
    CU_ASSERT_EQUAL(alice_checks(), 2);
}

/* The owner after the attack: her browser's device cookie (from a form
 * sign-in) still gets her in through the form; her correct password over
 * XML-RPC, with no device, is locked out as any request without one. */
static void test_owner_after_attack(void)
{
    char url[E2E_URL], body[BODY], set[256] = "", cookie[300];
    const char *sign_in[] = {"-d", "user=alice&password=correct+horse", url,
                             NULL};
    const char *with[] = {
        "-H", cookie, "-d", "user=alice&password=correct+horse", url, NULL};
    test_http_t r;
    const char *sc;

    CU_ASSERT_FATAL(e2e_start_login(NULL) == 0);
    e2e_url(url, "/login.php?op=login");
    CU_ASSERT_FATAL(e2e_http(&r, sign_in) == 0);
    CU_ASSERT_EQUAL(r.status, 200);
    sc = test_http_header(&r, "set-cookie");
    if (sc != NULL) {
        snprintf(set, sizeof(set), "%.*s", (int)strcspn(sc, ";"), sc);
    }
    test_http_free(&r);
    CU_ASSERT_FATAL(strncmp(set, "suspect_device=", 15) == 0);
    snprintf(cookie, sizeof(cookie), "Cookie: %s", set);
    multicall(0, GUESSES, body);
    CU_ASSERT_EQUAL(xmlrpc(body), 429);
    for (int i = 0; i < GUESSES; i += 2) {
        multicall(i, 2, body);
        (void)xmlrpc(body);
    }
    CU_ASSERT(alice_checks() <= LIMIT);
    call_body("wp.getUsersBlogs", "alice", "correct horse", body, sizeof(body));
    CU_ASSERT_EQUAL(xmlrpc(body), 429);
    CU_ASSERT_EQUAL(e2e_status(sign_in), 429);
    CU_ASSERT_EQUAL(e2e_status(with), 200);
    CU_ASSERT_EQUAL(performed("login ok alice"), 2);
}

int e2e_add_body_tests(CU_pSuite s)
{
    return CU_add_test(s, "bodies: XML-RPC multicall", test_multicall) ==
                       NULL ||
                   CU_add_test(s, "bodies: XML-RPC single and mixed calls",
                               test_single_and_mixed) == NULL ||
                   CU_add_test(s, "bodies: refused bodies", test_refused) ==
                       NULL ||
                   CU_add_test(s, "bodies: JSON batch", test_json_batch) ==
                       NULL ||
                   CU_add_test(s, "bodies: the owner after the attack",
                               test_owner_after_attack) == NULL
               ? -1
               : 0;
}
