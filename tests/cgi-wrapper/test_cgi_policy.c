/*
 * test_cgi_policy.c - suite "suspect-cgi policy": allow and deny lists,
 * shadow mode, repeat offenders and the per-action fail mode through a
 * real lighttpd running suspect-cgi as the #! interpreter of its CGI
 * programs (cgirun_start_lighttpd()), deciding on LMDB or Redis.
 *
 * The program behind it, DIR/app/app.cgi, appends one line per request
 * it performed to DIR/performed.log ("performed /login.cgi alice"), so
 * every test compares what the application performed with what was
 * counted: the store is read directly (LMDB in process, Redis with its
 * own client) after the requests.  Lists are decided both ways: compiled
 * from their text by a request that compiles (right after an edit), and
 * taken packed from the saved compiled configuration (settled()).  The document
 * root DIR/www holds one
 * #! wrapper per URL, each naming suspect-cgi, DIR/suspect.xml and the
 * program.  suspect-cgi's log lines reach lighttpd's error log
 * (DIR/lighttpd.log, where the test helpers send lighttpd's stderr).
 */
#include <CUnit/CUnit.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgirun.h"
#include "clock.h"
#include "cgi-wrapper/wrap_compiled.h"
#include "helpers/e2e.h"
#include "helpers/redisserver.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"
#include "suites.h"
#include "suspect_lmdb.h"
#include "suspect_store.h"

static const char app_script[] =
    "#!/bin/sh\n"
    "echo \"performed $SCRIPT_NAME $HTTP_X_USER\" >> \"@DIR@/performed.log\"\n"
    "printf 'Content-Type: text/plain\\r\\n\\r\\nok\\n'\n";

/* Login: two attempts a minute, then locked for a minute. */
static const char limits_xml[] =
    "<ArrayOfSuspectUsageSettingEntity>\n"
    "  <SuspectUsageSettingEntity Action=\"Login\" LimitCount=\"2\""
    " LimitDuration=\"60\" BlockDuration=\"60\" />\n"
    "  <SuspectUsageSettingEntity Action=\"Page\" LimitCount=\"100\""
    " LimitDuration=\"60\" />\n"
    "  <SuspectUsageSettingEntity Action=\"Search\" LimitCount=\"100\""
    " LimitDuration=\"60\" />\n"
    "</ArrayOfSuspectUsageSettingEntity>\n";

/* @STORE@ the store, @TOP@ elements of <Suspect>, @LOGIN@ children and
 * @LATTR@ attributes of the Login route. */
static const char conf_text[] =
    "<Suspect>\n"
    "  <Limits path=\"limits.xml\"/>\n"
    "  @STORE@\n"
    "  <Cgi root=\"@DIR@/app\"/>\n"
    "  <Response format=\"json\"/>\n"
    "  @TOP@\n"
    "  <Route action=\"Login\" path=\"/login.cgi\" @LATTR@>\n"
    "    <Identity type=\"User\" from=\"header:X-User\"/>\n"
    "    <Identity type=\"ClientIp\" from=\"client-ip\"/>\n"
    "    @LOGIN@\n"
    "  </Route>\n"
    "  <Route action=\"Page\" path=\"/page.cgi\">\n"
    "    <Identity type=\"User\" from=\"header:X-User\"/>\n"
    "  </Route>\n"
    "  <Route action=\"Search\" path=\"/search.cgi\">\n"
    "    <Identity type=\"User\" from=\"header:X-User\"/>\n"
    "  </Route>\n"
    "</Suspect>\n";

static char lmdb_store[TEST_PATH_MAX + 64];

/* ---- fixture ------------------------------------------------------------ */

/* Writes DIR/name with text, "@DIR@" replaced; 0 or -1. */
static int write_text(const char *name, const char *text)
{
    const char *pairs[] = {"@DIR@", e2e.dir, NULL};
    char path[TEST_PATH_MAX];
    char *t = test_subst(text, pairs);
    int rc =
        t != NULL ? test_write_file(e2e_path(path, name), t, strlen(t)) : -1;

    free(t);
    return rc;
}

/* suspect.xml with the pieces of conf_text (NULL: none; store NULL: the
 * LMDB store DIR/suspect.lmdb). */
static int write_conf(const char *store, const char *top, const char *lattr,
                      const char *login)
{
    const char *pairs[] = {"@STORE@", store != NULL ? store : lmdb_store,
                           "@TOP@",   top != NULL ? top : "",
                           "@LATTR@", lattr != NULL ? lattr : "",
                           "@LOGIN@", login != NULL ? login : "",
                           NULL};
    char *t = test_subst(conf_text, pairs);
    int rc = t != NULL ? write_text("suspect.xml", t) : -1;

    free(t);
    return rc;
}

/* The wrappers www/{login,page,search}.cgi, the program, the limits. */
static int write_site(void)
{
    static const char *const names[] = {"login", "page", "search"};
    char path[TEST_PATH_MAX], line[3 * TEST_PATH_MAX];

    if (e2e_write_cgi("app.cgi", app_script) != 0 ||
        test_write_file(e2e.limits, limits_xml, strlen(limits_xml)) != 0 ||
        mkdir(e2e_path(path, "www"), 0755) != 0) {
        return -1;
    }
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        snprintf(line, sizeof(line), "#!%s -c %s %s/app.cgi\n", cgirun_bin(),
                 e2e.conf, e2e.app);
        snprintf(path, sizeof(path), "%s/www/%s.cgi", e2e.dir, names[i]);
        if (strlen(line) > 254 || test_write_file(path, line, strlen(line)) ||
            chmod(path, 0755) != 0) {
            return -1;
        }
    }
    return 0;
}

static void setup(void)
{
    e2e_setup();
    if (e2e.dir != NULL) {
        snprintf(lmdb_store, sizeof(lmdb_store),
                 "<Store type=\"lmdb\" path=\"%s/suspect.lmdb\""
                 " noSync=\"true\"/>",
                 e2e.dir);
    }
}

static void teardown(void)
{
    e2e_teardown();
}

static int suite_init(void)
{
    if (cgirun_init() != 0) {
        fprintf(stderr, "suspect-cgi policy: %s is not built\n", cgirun_bin());
        return -1;
    }
    return 0;
}

/* Writes the site and starts lighttpd; fatal on failure. */
#define START()                                                                \
    CU_ASSERT_FATAL(write_site() == 0 && cgirun_start_lighttpd() == 0)

/* ---- requests and what they did ----------------------------------------- */

/* GET path as user (X-User), asking for JSON; the response in r. */
static void get(test_http_t *r, const char *path, const char *user)
{
    char url[E2E_URL], hdr[128];

    snprintf(hdr, sizeof(hdr), "X-User: %s", user);
    CU_ASSERT(e2e_http(r, (const char *[]){"-H", hdr, "-H",
                                           "Accept: application/json",
                                           e2e_url(url, path), NULL}) == 0);
}

/* The status of get(). */
static int status(const char *path, const char *user)
{
    test_http_t r;
    int st;

    get(&r, path, user);
    st = r.status;
    test_http_free(&r);
    return st;
}

/* Lines of DIR/performed.log saying path was performed for user. */
static int performed(const char *path, const char *user)
{
    char want[256], at[TEST_PATH_MAX];
    char *text = test_read_file(e2e_path(at, "performed.log"), NULL);
    int n = 0;

    snprintf(want, sizeof(want), "performed %s %s\n", path, user);
    for (char *p = text; p != NULL && (p = strstr(p, want)) != NULL;
         p += strlen(want)) {
        n += p == text || p[-1] == '\n';
    }
    free(text);
    return n;
}

/* What the LMDB store holds for action and identity value (the seed's
 * key "Action:value"): hits in the window, and the lock's end (0: none).
 * Fatal when the store cannot be read. */
static suspect_status_t lmdb_status(const char *action, const char *value)
{
    suspect_rule_t rule = {
        .action = action, .limit_count = 2, .window_s = 60, .block_s = 60};
    suspect_lmdb_opts_t o;
    suspect_store_t *s = NULL;
    suspect_status_t st;
    suspect_key_t key = test_key(action, value);
    char path[TEST_PATH_MAX];

    memset(&o, 0, sizeof(o));
    memset(&st, 0, sizeof(st));
    o.path = e2e_path(path, "suspect.lmdb");
    CU_ASSERT_FATAL(suspect_lmdb_new(&o, &s, NULL) == SUSPECT_OK);
    CU_ASSERT(suspect_store_status(s, &rule, &key, wall_ms(), &st, NULL) ==
              SUSPECT_OK);
    suspect_store_free(s);
    return st;
}

/* Occurrences of text in lighttpd's error log (suspect-cgi's stderr). */
static int logged(const char *text)
{
    char at[TEST_PATH_MAX];

    return test_count_text(e2e_path(at, "lighttpd.log"), text);
}

/* Requests until the compiled configuration is saved for the sources as
 * they are now (their identities 100 ms old), so that a later bad edit
 * keeps exactly them; whether it was. */
static bool settled(void)
{
    char abs[TEST_PATH_MAX], snap[TEST_PATH_MAX + 64];
    long long end = mono_ms() + test_scale_ms(5000);
    bool fresh = false;

    CU_ASSERT_FATAL(cgi_snap_path(e2e.dir, e2e.conf, abs, sizeof(abs), snap,
                                  sizeof(snap)) == 0);
    while (!fresh && mono_ms() < end) {
        compiled_t s;

        CU_ASSERT(status("/page.cgi", "settle") == 200);
        fresh = compiled_read(snap, &s, NULL) == SUSPECT_OK &&
                compiled_fresh(&s, abs);
        compiled_clear(&s);
    }
    return fresh;
}

/* Whether the saved compiled configuration holds the global deny list
 * packed, as later requests take it (no text to parse). */
static bool deny_packed(void)
{
    char abs[TEST_PATH_MAX], snap[TEST_PATH_MAX + 64];
    compiled_t s;
    bool packed;

    CU_ASSERT_FATAL(cgi_snap_path(e2e.dir, e2e.conf, abs, sizeof(abs), snap,
                                  sizeof(snap)) == 0);
    packed = compiled_read(snap, &s, NULL) == SUSPECT_OK &&
             s.conf->deny != NULL && s.conf->deny->packed != NULL &&
             s.conf->deny->file_text == NULL;
    compiled_clear(&s);
    return packed;
}

/* ---- tests -------------------------------------------------------------- */

/* An allowed address and value are never counted; a denied value (a
 * route's list, and the global list file) is refused before anything is
 * counted, with the list's status. */
static void test_lists(void)
{
    test_http_t r;

    CU_ASSERT_FATAL(write_text("deny.txt", "# known bad\nUser=eve\n") == 0);
    CU_ASSERT_FATAL(write_conf(NULL,
                               "<Allow ip=\"127.0.0.1/32\" "
                               "identity=\"User=monitor\"/>\n"
                               "  <Deny file=\"deny.txt\" status=\"451\"/>",
                               NULL, "<Deny identity=\"User=mallory\"/>") == 0);
    START();
    /* decided from here on with the lists as compiled and saved */
    CU_ASSERT_FATAL(settled());
    CU_ASSERT(deny_packed());
    /* the monitor: value and address allowed, nothing left to count */
    for (int i = 0; i < 5; i++) {
        CU_ASSERT_EQUAL(status("/login.cgi", "monitor"), 200);
    }
    CU_ASSERT_EQUAL(performed("/login.cgi", "monitor"), 5);
    CU_ASSERT_EQUAL(lmdb_status("Login", "monitor").in_window, 0);
    /* alice: her value counts (the address, allowed, does not) */
    CU_ASSERT_EQUAL(status("/login.cgi", "alice"), 200);
    CU_ASSERT_EQUAL(status("/login.cgi", "alice"), 200);
    get(&r, "/login.cgi", "alice");
    CU_ASSERT(e2e_is_denial(&r, "Login", 2, 60, 59, 60));
    test_http_free(&r);
    CU_ASSERT_EQUAL(performed("/login.cgi", "alice"), 2);
    CU_ASSERT_EQUAL(lmdb_status("Login", "alice").in_window, 2);
    CU_ASSERT_EQUAL(lmdb_status("Login", "127.0.0.1").in_window, 0);
    /* denied: refused before counting, never performed */
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(status("/login.cgi", "mallory"), 403);
        CU_ASSERT_EQUAL(status("/login.cgi", "eve"), 451);
    }
    CU_ASSERT_EQUAL(status("/page.cgi", "eve"), 451);
    CU_ASSERT_EQUAL(performed("/login.cgi", "mallory"), 0);
    CU_ASSERT_EQUAL(performed("/login.cgi", "eve"), 0);
    CU_ASSERT_EQUAL(performed("/page.cgi", "eve"), 0);
    CU_ASSERT_EQUAL(lmdb_status("Login", "mallory").in_window, 0);
    CU_ASSERT_EQUAL(lmdb_status("Login", "mallory").locked_until_ms, 0);
    CU_ASSERT_EQUAL(lmdb_status("Login", "eve").in_window, 0);
    /* the monitor's page requests are counted: a route without lists
     * counts its own identities, the global allow list aside */
    CU_ASSERT_EQUAL(status("/page.cgi", "monitor"), 200);
}

/* A list file edited while requests come: the next request decides with
 * it; a bad edit keeps the lists that were in force and says why once;
 * fixed, it applies. */
static void test_list_file_edited(void)
{
    CU_ASSERT_FATAL(write_text("deny.txt", "User=mallory\n") == 0);
    CU_ASSERT_FATAL(write_conf(NULL,
                               "<Allow ip=\"127.0.0.1\"/>\n"
                               "  <Deny file=\"deny.txt\"/>",
                               NULL, NULL) == 0);
    START();
    CU_ASSERT_EQUAL(status("/login.cgi", "eve"), 200);
    CU_ASSERT_EQUAL(status("/login.cgi", "mallory"), 403);
    /* eve added: the very next request knows */
    CU_ASSERT_FATAL(write_text("deny.txt", "User=mallory\nUser=eve\n") == 0);
    CU_ASSERT_EQUAL(status("/login.cgi", "eve"), 403);
    CU_ASSERT_FATAL(settled());
    /* a bad line: the lists in force stay, the error is said once */
    CU_ASSERT_FATAL(
        write_text("deny.txt", "User=mallory\n10.0.0.300\nUser=eve\n") == 0);
    for (int i = 0; i < 3; i++) {
        char bob[16];

        snprintf(bob, sizeof(bob), "bob%d", i);
        CU_ASSERT_EQUAL(status("/login.cgi", "eve"), 403);
        CU_ASSERT_EQUAL(status("/login.cgi", bob), 200);
    }
    CU_ASSERT_EQUAL(logged("deny.txt:2: Deny: "), 1);
    CU_ASSERT_EQUAL(logged("keeping the last good configuration"), 1);
    /* fixed, without eve */
    CU_ASSERT_FATAL(write_text("deny.txt", "User=mallory\n") == 0);
    CU_ASSERT_EQUAL(status("/login.cgi", "eve"), 200);
    CU_ASSERT_EQUAL(performed("/login.cgi", "eve"), 2);
    CU_ASSERT_EQUAL(performed("/login.cgi", "mallory"), 0);
    CU_ASSERT_EQUAL(lmdb_status("Login", "eve").in_window, 2);
}

/* A route in shadow mode: decided and counted as enforced, every request
 * performed, each would-deny logged; the deny list lets through too,
 * uncounted.  Enforced by editing the one attribute: the lock made in
 * shadow applies at once. */
static void test_shadow(void)
{
    CU_ASSERT_FATAL(write_conf(NULL, NULL, "shadow=\"yes\"",
                               "<Deny identity=\"User=mallory\"/>") == 0);
    START();
    for (int i = 0; i < 5; i++) {
        CU_ASSERT_EQUAL(status("/login.cgi", "alice"), 200);
    }
    CU_ASSERT_EQUAL(status("/login.cgi", "mallory"), 200);
    CU_ASSERT_EQUAL(performed("/login.cgi", "alice"), 5);
    CU_ASSERT_EQUAL(performed("/login.cgi", "mallory"), 1);
    CU_ASSERT_EQUAL(lmdb_status("Login", "alice").in_window, 2);
    CU_ASSERT(lmdb_status("Login", "alice").locked_until_ms > wall_ms());
    CU_ASSERT_EQUAL(lmdb_status("Login", "mallory").in_window, 0);
    CU_ASSERT_EQUAL(logged("would-deny /login.cgi action=Login status=429"), 3);
    CU_ASSERT_EQUAL(logged("would-deny /login.cgi action=Login status=403 "
                           "(deny list)"),
                    1);
    /* enforced */
    CU_ASSERT_FATAL(write_conf(NULL, NULL, "shadow=\"no\"",
                               "<Deny identity=\"User=mallory\"/>") == 0);
    CU_ASSERT_EQUAL(status("/login.cgi", "alice"), 429);
    CU_ASSERT_EQUAL(status("/login.cgi", "mallory"), 403);
    CU_ASSERT_EQUAL(performed("/login.cgi", "alice"), 5);
    CU_ASSERT_EQUAL(performed("/login.cgi", "mallory"), 1);
}

/* The retryAfterMs of a denial of alice's login, or -1 when the answer is
 * not a 429 (its status in *st). */
static long login_retry_ms(int *st)
{
    test_http_t r;
    const char *p;
    long ms = -1;

    get(&r, "/login.cgi", "alice");
    *st = r.status;
    p = r.body != NULL ? strstr(r.body, "\"retryAfterMs\":") : NULL;
    if (r.status == 429 && p != NULL) {
        ms = strtol(p + strlen("\"retryAfterMs\":"), NULL, 10);
    }
    test_http_free(&r);
    return ms;
}

/* Repeat offenders, each request a new suspect-cgi process: one attempt
 * a second allowed, locked 1 s, then 2 s, then 4 s (BlockFactor 2;
 * seconds times SUSPECT_TEST_SCALE): each lock's countdown is exactly its
 * length; only the allowed attempts were performed, and the store holds
 * three offences. */
static void test_escalation(void)
{
    /* The unit of every duration: 1 s, times SUSPECT_TEST_SCALE, since the
     * attempt that counts and the next one must come within one window
     * (two CGI runs through the web server, which a slow machine may not
     * make within 1 s). */
    unsigned s = test_scale_ms(1000) / 1000;
    char limits[640];

    snprintf(limits, sizeof(limits),
             "<ArrayOfSuspectUsageSettingEntity>\n"
             "<SuspectUsageSettingEntity Action=\"Login\" LimitCount=\"1\" "
             "LimitDuration=\"%u\" BlockDuration=\"%u\" BlockFactor=\"2\" "
             "MaxBlockDuration=\"%u\" OffenceDuration=\"%u\"/>\n"
             "<SuspectUsageSettingEntity Action=\"Page\" LimitCount=\"9\" "
             "LimitDuration=\"1\"/>\n"
             "<SuspectUsageSettingEntity Action=\"Search\" LimitCount=\"9\" "
             "LimitDuration=\"1\"/>\n"
             "</ArrayOfSuspectUsageSettingEntity>\n",
             s, s, 8 * s, 60 * s);

    CU_ASSERT_FATAL(write_conf(NULL, "<Allow ip=\"127.0.0.1\"/>", NULL, NULL) ==
                    0);
    START();
    CU_ASSERT_FATAL(test_write_file(e2e.limits, limits, strlen(limits)) == 0);
    e2e_check_escalation(login_retry_ms, 200, s);
    CU_ASSERT_EQUAL(performed("/login.cgi", "alice"), 3);
}

/* The fail mode per action with Redis stopped: Login (failMode closed on
 * its <Action>) is refused with a 503 and never performed, Page (open)
 * and Search (the store's, local) are performed; with Redis up, all three
 * are counted there, and nothing is counted while it is down. */
static void test_fail_mode_redis_stopped(void)
{
    static const char *const paths[] = {"/login.cgi", "/page.cgi",
                                        "/search.cgi"};
    static const char *const actions[] = {"Login", "Page", "Search"};
    char store[TEST_PATH_MAX + 128];
    test_redis_t rs;
    long long t0;

    memset(&rs, 0, sizeof(rs));
    CU_ASSERT_FATAL(test_redis_start(&rs, false, NULL) == 0);
    snprintf(store, sizeof(store),
             "<Store type=\"redis\" url=\"%s\" timeoutMs=\"200\""
             " failMode=\"local\"/>",
             rs.url);
    CU_ASSERT_FATAL(
        write_conf(store,
                   "<Allow ip=\"127.0.0.1\"/>\n"
                   "  <Action name=\"Login\" failMode=\"closed\"/>\n"
                   "  <Action name=\"Page\" failMode=\"open\"/>",
                   NULL, NULL) == 0);
    START();
    for (size_t i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(status(paths[i], "carol"), 200);
        CU_ASSERT_EQUAL(test_redis_int(&rs, "ZCARD %s:carol", actions[i]), 1);
    }
    test_redis_stop(&rs);
    t0 = mono_ms();
    CU_ASSERT_EQUAL(status("/login.cgi", "carol"), 503);
    CU_ASSERT_EQUAL(status("/page.cgi", "carol"), 200);
    CU_ASSERT_EQUAL(status("/search.cgi", "carol"), 200);
    /* a dead Redis costs each request its timeouts, never more */
    CU_ASSERT(mono_ms() - t0 < test_scale_ms(3 * 2 * 200 + 3000));
    CU_ASSERT_EQUAL(performed("/login.cgi", "carol"), 1);
    CU_ASSERT_EQUAL(performed("/page.cgi", "carol"), 2);
    CU_ASSERT_EQUAL(performed("/search.cgi", "carol"), 2);
}

int register_suspect_cgi_policy_suite(void)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        {"allow never counted, deny refused before counting", test_lists},
        {"list file edited live, a bad edit keeps the lists",
         test_list_file_edited},
        {"shadow route: performed, counted, logged", test_shadow},
        {"repeat offenders: three locks, exact ends", test_escalation},
        {"fail mode per action, Redis stopped", test_fail_mode_redis_stopped},
    };
    CU_pSuite s = CU_add_suite_with_setup_and_teardown(
        "suspect-cgi policy", suite_init, NULL, setup, teardown);

    if (s == NULL) {
        return -1;
    }
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return 0;
}
