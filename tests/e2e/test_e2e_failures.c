/*
 * test_e2e_failures.c - counting only the attempts that failed, through
 * a real web server and a real application: nginx -> suspect-fcgi ->
 * php-cgi running examples/app/login.php (examples/suspect-login.xml),
 * and nginx -> suspect-fcgi running examples/app/login.cgi.
 *
 * The applications log every attempt they check (attempts.log), so each
 * test compares what the application performed with what Suspect let
 * through: 100 wrong guesses sent at once reach it at most LimitCount
 * times (reservations hold the limit), the right password never
 * counts, a wrong code answered "200 Invalid code" counts, and a lock
 * follows the failures.  A rule that reads the body is not walked around
 * by answers it cannot read (HEAD, gzip from PHP's ob_gzhandler or a CGI
 * program): they count, and a right password asking for gzip is answered
 * plain and does not.
 *
 * Length.  About 780 lines: every test drives the same two applications
 * through the same helpers (attempts(), post()), each a few dozen lines
 * of one attack and its count; split, the helpers would be shared through
 * a header for no reader's gain.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "clock.h"
#include "helpers/e2e.h"
#include "helpers/procs.h"
#include "helpers/redisserver.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"

#define GUESSES 100

/* Lines of DIR/app/attempts.log that start with prefix. */
static int attempts(const char *prefix)
{
    char path[TEST_PATH_MAX];
    char *text, *p;
    int n = 0;

    snprintf(path, sizeof(path), "%s/attempts.log", e2e.app);
    text = test_read_file(path, NULL);
    for (p = text; p != NULL && *p != '\0';) {
        char *eol = strchr(p, '\n');

        n += strncmp(p, prefix, strlen(prefix)) == 0;
        p = eol != NULL ? eol + 1 : p + strlen(p);
    }
    free(text);
    return n;
}

/* One POST of body to path; its status. */
static int post(const char *path, const char *body)
{
    char url[E2E_URL];
    const char *args[] = {"-d", body, e2e_url(url, path), NULL};

    return e2e_status(args);
}

/* PHP: 100 wrong passwords at once, at most LimitCount (3) reach the
 * application, the others are refused; the next one is locked out; the
 * right password of another account never counts.  edits: the store. */
static void php_wrong_guesses_at_once(const char *const *edits)
{
    int ok, denied, other;

    CU_ASSERT_FATAL(e2e_start_login(edits) == 0);
    e2e_storm("/login.php?op=login", "user=eve&password=guess", GUESSES, &ok,
              &denied, &other);
    CU_ASSERT_EQUAL(attempts("login fail eve"), 3);
    CU_ASSERT_EQUAL(ok + denied + other, GUESSES);
    CU_ASSERT_EQUAL(denied, GUESSES - 3);
    CU_ASSERT_EQUAL(other, 3); /* the three 401s */
    CU_ASSERT_EQUAL(post("/login.php?op=login", "user=eve&password=x"), 429);
    CU_ASSERT_EQUAL(attempts("login fail eve"), 3);
    /* alice signs in ten times: never counted, never locked */
    for (int i = 0; i < 10; i++) {
        CU_ASSERT_EQUAL(
            post("/login.php?op=login", "user=alice&password=correct+horse"),
            200);
    }
    CU_ASSERT_EQUAL(attempts("login ok alice"), 10);
    /* two wrong ones of hers count, and the right one still passes */
    CU_ASSERT_EQUAL(post("/login.php?op=login", "user=alice&password=no"), 401);
    CU_ASSERT_EQUAL(post("/login.php?op=login", "user=alice&password=no"), 401);
    CU_ASSERT_EQUAL(
        post("/login.php?op=login", "user=alice&password=correct+horse"), 200);
}

static void test_php_wrong_guesses_at_once(void)
{
    php_wrong_guesses_at_once(NULL);
}

/* The same on the LMDB store (one host, many processes). */
static void test_php_wrong_guesses_lmdb(void)
{
    char store[TEST_PATH_MAX + 64];
    const char *edits[] = {"<Store type=\"memory\"/>", store, NULL};

    snprintf(store, sizeof(store),
             "<Store type=\"lmdb\" path=\"%s/suspect.mdb\" "
             "noSync=\"true\"/>",
             e2e.dir);
    php_wrong_guesses_at_once(edits);
}

/* PHP: the one-time code answers a wrong code with the form again (200,
 * "Invalid code"): <Success status="302"> counts it; the right code is a
 * redirect and does not count, even after two wrong ones. */
static void test_php_otp_counts_the_200_failure(void)
{
    CU_ASSERT_FATAL(e2e_start_login(NULL) == 0);
    CU_ASSERT_EQUAL(post("/login.php?op=otp", "user=alice&code=1"), 200);
    CU_ASSERT_EQUAL(post("/login.php?op=otp", "user=alice&code=2"), 200);
    CU_ASSERT_EQUAL(post("/login.php?op=otp", "user=alice&code=424242"), 302);
    CU_ASSERT_EQUAL(post("/login.php?op=otp", "user=alice&code=424242"), 302);
    CU_ASSERT_EQUAL(post("/login.php?op=otp", "user=alice&code=3"), 200);
    /* three failures: the fourth attempt, even the right code, is locked */
    CU_ASSERT_EQUAL(post("/login.php?op=otp", "user=alice&code=424242"), 429);
    CU_ASSERT_EQUAL(attempts("otp fail alice"), 3);
    CU_ASSERT_EQUAL(attempts("otp ok alice"), 2);
}

/* The same judged by the body's text instead of the status:
 * <Failure status="200" body="Invalid code">; other accounts' right codes
 * in between do not count. */
static void test_php_body_text(void)
{
    const char *edits[] = {
        "<Success status=\"302\" location=\"/account\"/>",
        "<Failure status=\"200\" body=\"Invalid code\" within=\"512\"/>", NULL};

    CU_ASSERT_FATAL(e2e_start_login(edits) == 0);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(post("/login.php?op=otp", "user=bob&code=1"), 200);
        CU_ASSERT_EQUAL(post("/login.php?op=otp", "user=alice&code=424242"),
                        302);
    }
    CU_ASSERT_EQUAL(post("/login.php?op=otp", "user=bob&code=1"), 429);
    CU_ASSERT_EQUAL(post("/login.php?op=otp", "user=alice&code=424242"), 302);
    CU_ASSERT_EQUAL(attempts("otp fail bob"), 3);
}

/* PHP: a sign-in whose failure redirects back with what the client sent
 * in the Location, or to an address the client names: no spelling of
 * "/account" in a failure's Location is read as the success, so alice's
 * password is checked 3 times whatever the attacker posts; her right
 * password before the attack never counted. */
static void test_php_location_spelled_by_client(void)
{
    static const char *const tails[] = {
        "&return=http%3A%2F%2Fx%2Faccount",
        "&return=%2Faccount",
        "&return=%2F..%2Faccount",
        "&error_url=https%3A%2F%2Fevil.example%2Faccount",
        "&error_url=%2F%2Fevil.example%2Faccount",
        "&error_url=%2F%5Cevil.example%2Faccount",
        "&error_url=https%3A%2F%2F127.0.0.1%40evil.example%2Faccount",
        "&error_url=javascript%3A%2Faccount",
    };
    char body[256];
    int denied = 0;

    CU_ASSERT_FATAL(e2e_start_login(NULL) == 0);
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL(
            post("/login.php?op=signin", "user=alice&password=correct+horse"),
            303);
    }
    for (int i = 0; i < 20; i++) {
        snprintf(body, sizeof(body), "user=alice&password=guess%d%s", i,
                 tails[i % (sizeof(tails) / sizeof(tails[0]))]);
        denied += post("/login.php?op=signin", body) == 429;
    }
    CU_ASSERT_EQUAL(attempts("signin fail alice"), 3);
    CU_ASSERT_EQUAL(denied, 17);
    CU_ASSERT_EQUAL(attempts("signin ok alice"), 4);
}

/* PHP: a sign-in that reads $_REQUEST as PHP builds it without a
 * php.ini, where a cookie wins over the body: each guess names alice in a
 * cookie and a decoy in the body.  request:u counts both, so alice's
 * password is checked 3 times (the limit); the body alone (form:u|query:u,
 * what a route for $_REQUEST read before) let all 20 through. */
static void test_php_cookie_in_request(void)
{
    char body[64], url[E2E_URL];
    int denied = 0;

    CU_ASSERT_FATAL(e2e_start_login(NULL) == 0);
    e2e_url(url, "/login.php?op=legacy");
    for (int i = 0; i < 20; i++) {
        const char *args[] = {"-b", "u=alice", "-d", body, url, NULL};

        snprintf(body, sizeof(body), "u=decoy%d&p=guess%d", i, i);
        denied += e2e_status(args) == 429;
    }
    CU_ASSERT_EQUAL(attempts("legacy fail alice"), 3);
    CU_ASSERT_EQUAL(denied, 17);
    /* the query as well: alice is locked whatever carries her name */
    CU_ASSERT_EQUAL(post("/login.php?op=legacy&u=alice", "p=correct+horse"),
                    429);
}

/* PHP: one script, two actions by $_REQUEST['action'] (WordPress's
 * wp-login.php): a reset route for action=lostpassword, paramIn="request",
 * and the login for the rest.  Each guess alternates a plain login with
 * one disguised as a reset ("?action=lostpassword" and a cookie
 * "action=login", which wins in $_REQUEST): the disguised ones are
 * refused, so alice's password is checked 3 times (the limit), where a
 * reset route reading the query and body alone let its own 3 through as
 * well (6). */
static void test_php_two_actions_one_script(void)
{
    char src[TEST_PATH_MAX], app[TEST_PATH_MAX], body[64], url[E2E_URL];
    const char *edits[] = {
        "</Suspect>",
        "  <Route action=\"SecureForgotAccount\" path=\"/wp-login.php\"\n"
        "         param=\"action=lostpassword\" paramIn=\"request\">\n"
        "    <Identity type=\"ClientIp\" from=\"client-ip\"/>\n"
        "  </Route>\n"
        "  <Route action=\"Login\" path=\"/wp-login.php\" "
        "when=\"request:log\">\n"
        "    <Identity type=\"LoginId\" from=\"request:log\"/>\n"
        "    <Failure status=\"401\"/>\n"
        "  </Route>\n</Suspect>",
        NULL};
    int refused = 0;

    CU_ASSERT_FATAL(e2e_start_login(edits) == 0);
    snprintf(app, sizeof(app), "%s/wp-login.php", e2e.app);
    CU_ASSERT_FATAL(test_copy_file(e2e_src(src, "examples/app/wp-login.php"),
                                   app, 0644) == 0);
    e2e_url(url, "/wp-login.php?action=lostpassword");
    for (int i = 0; i < 20; i++) {
        const char *args[] = {"-b", "action=login", "-d", body, url, NULL};

        snprintf(body, sizeof(body), "log=alice&pwd=guess%d", i);
        if (i % 2 == 0) {
            post("/wp-login.php", body);
        } else {
            refused += e2e_status(args) == 400;
        }
    }
    CU_ASSERT_EQUAL(attempts("wplogin fail alice"), 3);
    CU_ASSERT_EQUAL(refused, 10);
    /* a reset as a browser sends it still works */
    CU_ASSERT_EQUAL(post("/wp-login.php?action=lostpassword", "user_login=bob"),
                    200);
    CU_ASSERT_EQUAL(attempts("reset ok bob"), 1);
}

/* A shape closed in front of the application: a refusing route (no
 * identity, an action the limits file need not know) answers 403 and the
 * application never runs; the other routes of the script still work. */
static void test_php_refusing_route(void)
{
    char src[TEST_PATH_MAX], app[TEST_PATH_MAX];
    const char *edits[] = {
        "</Suspect>",
        "  <Route action=\"NoRegister\" path=\"/wp-login.php\"\n"
        "         param=\"action=register\" paramIn=\"request\"\n"
        "         refuse=\"yes\"/>\n"
        "  <Route action=\"Login\" path=\"/wp-login.php\" "
        "when=\"request:log\">\n"
        "    <Identity type=\"LoginId\" from=\"request:log\"/>\n"
        "    <Failure status=\"401\"/>\n"
        "  </Route>\n</Suspect>",
        NULL};

    CU_ASSERT_FATAL(e2e_start_login(edits) == 0);
    snprintf(app, sizeof(app), "%s/wp-login.php", e2e.app);
    CU_ASSERT_FATAL(test_copy_file(e2e_src(src, "examples/app/wp-login.php"),
                                   app, 0644) == 0);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(
            post("/wp-login.php?action=register", "log=alice&pwd=x"), 403);
    }
    CU_ASSERT_EQUAL(attempts("wplogin"), 0);
    CU_ASSERT_EQUAL(post("/wp-login.php", "log=alice&pwd=correct+horse"), 200);
    CU_ASSERT_EQUAL(attempts("wplogin ok alice"), 1);
}

/* CGI: login.cgi answers 303 to /welcome or 401; counted unless it says
 * it succeeded; 100 at once reach it at most 3 times. */
static void test_cgi_wrong_guesses_at_once(void)
{
    char src[TEST_PATH_MAX], app[TEST_PATH_MAX];
    const char *edits[] = {
        "</Suspect>",
        "  <Route action=\"Login\" method=\"POST\" path=\"/login.cgi\">\n"
        "    <Identity type=\"LoginId\" from=\"form:user\"/>\n"
        "    <Success status=\"303\" location=\"/welcome\"/>\n"
        "  </Route>\n</Suspect>",
        NULL};
    int ok, denied, other;

    snprintf(app, sizeof(app), "%s/login.cgi", e2e.app);
    CU_ASSERT_FATAL(e2e_start_cgi(edits) == 0);
    CU_ASSERT_FATAL(
        test_copy_file(e2e_src(src, "examples/app/login.cgi"), app, 0755) == 0);
    e2e_storm("/login.cgi", "user=eve&password=guess", GUESSES, &ok, &denied,
              &other);
    CU_ASSERT_EQUAL(attempts("login fail eve"), 3);
    CU_ASSERT_EQUAL(denied, GUESSES - 3);
    CU_ASSERT_EQUAL(other, 3);
    for (int i = 0; i < 6; i++) {
        CU_ASSERT_EQUAL(post("/login.cgi", "user=alice&password=correct+horse"),
                        303);
    }
    CU_ASSERT_EQUAL(attempts("login ok alice"), 6);
}

/* Shadow mode: six wrong passwords all reach the application; the three
 * that enforcement would refuse are logged as would-deny and marked by
 * the shadow header; then one attribute, reloaded, enforces the limit,
 * and the lock made in shadow holds at once. */
static void test_shadow_then_enforce(void)
{
    const char *shadow[] = {
        "<Response format=\"auto\"/>",
        "<Response format=\"auto\" shadowHeader=\"X-Suspect-Shadow\"/>\n"
        "  <Action name=\"Login\" shadow=\"yes\"/>",
        NULL};
    const char *enforce[] = {
        "<Response format=\"auto\"/>",
        "<Response format=\"auto\" shadowHeader=\"X-Suspect-Shadow\"/>\n"
        "  <Action name=\"Login\" shadow=\"no\"/>",
        NULL};
    char url[E2E_URL];
    const char *args[] = {"-d", "user=eve&password=x", url, NULL};
    test_http_t r;
    int deadline, status = 0;

    CU_ASSERT_FATAL(e2e_start_login(shadow) == 0);
    e2e_url(url, "/login.php?op=login");
    for (int i = 0; i < 6; i++) {
        CU_ASSERT_EQUAL_FATAL(e2e_http(&r, args), 0);
        CU_ASSERT_EQUAL(r.status, 401);
        if (i < 3) {
            CU_ASSERT_PTR_NULL(test_http_header(&r, "X-Suspect-Shadow"));
        } else {
            const char *h = test_http_header(&r, "X-Suspect-Shadow");

            CU_ASSERT_PTR_NOT_NULL(h);
            CU_ASSERT(h != NULL &&
                      strcmp(h, "would-deny; action=Login; status=429") == 0);
        }
        test_http_free(&r);
    }
    CU_ASSERT_EQUAL(attempts("login fail eve"), 6);
    CU_ASSERT_EQUAL(
        test_count_text(e2e.log,
                        "would-deny /login.php action=Login status=429"),
        3);
    CU_ASSERT_EQUAL_FATAL(
        e2e_write_example("suspect-login.xml", "suspect.xml", enforce), 0);
    CU_ASSERT_EQUAL(
        test_wait_file_text(e2e.log, "reloaded", test_scale_ms(5000)), 0);
    for (deadline = 0; deadline < 50 && status != 429; deadline++) {
        status = post("/login.php?op=login", "user=eve&password=x");
    }
    CU_ASSERT_EQUAL(status, 429);
    CU_ASSERT_EQUAL(attempts("login fail eve"), 6 + deadline - 1);
}

/* A page that checks user and password from the query, compresses its
 * answer when the client accepts gzip (PHP's ob_gzhandler), and says a
 * failure only in the body: 200 "Invalid password". */
static const char gz_php[] =
    "<?php\n"
    "ob_start('ob_gzhandler');\n"
    "$user = (string)($_GET['user'] ?? '');\n"
    "$ok = $user === 'alice' && ($_GET['password'] ?? '') === 'right';\n"
    "file_put_contents(__DIR__ . '/attempts.log', sprintf(\"gz %s %s\\n\",\n"
    "    $ok ? 'ok' : 'fail', preg_replace('/[^a-z]/', '?', $user)),\n"
    "    FILE_APPEND | LOCK_EX);\n"
    "header('Content-Type: text/html; charset=utf-8');\n"
    "echo $ok ? \"<p>Welcome</p>\\n\" : \"<p>Invalid password</p>\\n\";\n";

/* The same as a CGI program; "zip=always" in the query compresses even
 * when the client did not ask (an application that always does). */
static const char gz_cgi[] =
    "#!/bin/sh\n"
    "q=\"&$QUERY_STRING&\"\n"
    "user=$(printf '%s' \"$q\" | sed -n 's/.*&user=\\([a-z]*\\)&.*/\\1/p')\n"
    "case \"$q\" in\n"
    "*'&user=alice&password=right&'*) ok=ok; text='<p>Welcome</p>' ;;\n"
    "*) ok=fail; text='<p>Invalid password</p>' ;;\n"
    "esac\n"
    "echo \"gz $ok $user\" >> \"${SCRIPT_FILENAME%/*}/attempts.log\"\n"
    "printf 'Content-Type: text/html\\r\\n'\n"
    "case \"$HTTP_ACCEPT_ENCODING $q\" in\n"
    "*gzip*|*zip=always*) printf 'Content-Encoding: gzip\\r\\n\\r\\n'\n"
    "  [ \"$REQUEST_METHOD\" = HEAD ] || echo \"$text\" | gzip -c ;;\n"
    "*) printf '\\r\\n'; [ \"$REQUEST_METHOD\" = HEAD ] || echo \"$text\" ;;\n"
    "esac\n";

/* One GET of path?query with the extra curl arguments a, b (NULL:
 * none); its status.  *encoded (when not NULL) gets whether the answer
 * came compressed. */
static int gz_get(const char *path, const char *query, const char *a,
                  const char *b, bool *encoded)
{
    char url[E2E_URL], target[256];
    const char *args[4] = {NULL};
    size_t k = 0;
    test_http_t r;
    int status;

    if (a != NULL) {
        args[k++] = a;
    }
    if (b != NULL) {
        args[k++] = b;
    }
    args[k] = url;
    snprintf(target, sizeof(target), "%s?%s", path, query);
    e2e_url(url, target);
    status = e2e_http(&r, args) == 0 ? r.status : 0;
    if (encoded != NULL) {
        *encoded = test_http_header(&r, "Content-Encoding") != NULL;
    }
    test_http_free(&r);
    return status;
}

/* A rule that reads the body cannot be walked around by answers it
 * cannot read: 8 HEAD requests (no body: the text is never seen) and 8
 * GETs asking for gzip reach the application 3 times each (LimitCount);
 * a right password asking for gzip gets a plain answer (Accept-Encoding
 * is not passed on for such a route) and never counts.  path: the page. */
static void body_rule_blind(const char *path)
{
    bool encoded = true;

    for (int i = 0; i < 8; i++) {
        (void)gz_get(path, "user=eve&password=x", "-I", NULL, NULL);
        (void)gz_get(path, "user=mallory&password=x", "-H",
                     "Accept-Encoding: gzip", NULL);
    }
    CU_ASSERT_EQUAL(attempts("gz fail eve"), 3);
    CU_ASSERT_EQUAL(attempts("gz fail mallory"), 3);
    for (int i = 0; i < 6; i++) {
        CU_ASSERT_EQUAL(gz_get(path, "user=alice&password=right", "-H",
                               "Accept-Encoding: gzip, br", &encoded),
                        200);
        CU_ASSERT(!encoded);
    }
    CU_ASSERT_EQUAL(attempts("gz ok alice"), 6);
    /* two wrong ones of hers count, the right one still passes */
    CU_ASSERT_EQUAL(gz_get(path, "user=alice&password=x", NULL, NULL, NULL),
                    200);
    CU_ASSERT_EQUAL(gz_get(path, "user=alice&password=x", NULL, NULL, NULL),
                    200);
    CU_ASSERT_EQUAL(gz_get(path, "user=alice&password=right", NULL, NULL, NULL),
                    200);
}

/* The route of the page: a GET (so HEAD too) counted when the body says
 * "Invalid password". */
#define GZ_ROUTE(path)                                                         \
    "  <Route action=\"Login\" method=\"GET\" path=\"" path "\">\n"            \
    "    <Identity type=\"LoginId\" from=\"query:user\"/>\n"                   \
    "    <Failure status=\"200\" body=\"Invalid password\"/>\n"                \
    "  </Route>\n</Suspect>"

/* PHP (upstream FastCGI): HEAD and ob_gzhandler. */
static void test_php_body_rule_blind(void)
{
    const char *edits[] = {"</Suspect>", GZ_ROUTE("/gz.php"), NULL};

    CU_ASSERT_FATAL(e2e_start_login(edits) == 0);
    CU_ASSERT_FATAL(e2e_write_cgi("gz.php", gz_php) == 0);
    body_rule_blind("/gz.php");
}

/* A CGI program: HEAD and gzip, and one that compresses unasked: its
 * answers cannot be read, so they count (logged). */
static void test_cgi_body_rule_blind(void)
{
    const char *edits[] = {"</Suspect>", GZ_ROUTE("/gz.cgi"), NULL};

    CU_ASSERT_FATAL(e2e_start_cgi(edits) == 0);
    CU_ASSERT_FATAL(e2e_write_cgi("gz.cgi", gz_cgi) == 0);
    body_rule_blind("/gz.cgi");
    for (int i = 0; i < 8; i++) {
        (void)gz_get("/gz.cgi", "user=trent&password=x&zip=always", NULL, NULL,
                     NULL);
    }
    CU_ASSERT_EQUAL(attempts("gz fail trent"), 3);
    CU_ASSERT(test_count_text(e2e.log,
                              "response not judged (the body is encoded") >= 3);
}

/* One request to app.cgi?op=..., with a cookie and a body (NULL: GET). */
static int app(const char *query, const char *cookie, const char *body)
{
    char url[E2E_URL], path[128];

    snprintf(path, sizeof(path), "/app.cgi?%s", query);
    e2e_url(url, path);
    if (body == NULL) {
        return e2e_status((const char *[]){"-b", cookie, url, NULL});
    }
    return e2e_status((const char *[]){"-b", cookie, "-d", body, url, NULL});
}

/* A fail mode per action with Redis stopped: the promotion lookup fails
 * open, the bank account update closed (503), messages local (counted in
 * the process), as <Action> says over <Store failMode="local">. */
static void test_fail_mode_per_action(void)
{
    test_redis_t rs;
    char store[TEST_PATH_MAX + 128];
    const char *edits[] = {
        "<Store type=\"memory\"/>", store, "</Suspect>",
        "  <Action name=\"PromoQuery\" failMode=\"open\"/>\n"
        "  <Action name=\"BankAccountUpdate\" failMode=\"closed\"/>\n"
        "</Suspect>",
        NULL};

    memset(&rs, 0, sizeof(rs));
    CU_ASSERT_FATAL(test_redis_start(&rs, false, NULL) == 0);
    snprintf(store, sizeof(store),
             "<Store type=\"redis\" url=\"%s\" timeoutMs=\"200\" "
             "failMode=\"local\"/>",
             rs.url);
    if (e2e_start_cgi(edits) != 0) {
        test_redis_stop(&rs);
        CU_FAIL_FATAL("stack");
    }
    CU_ASSERT_EQUAL(app("op=bank", "member=m1", "account=1"), 200);
    test_redis_kill9(&rs);
    /* open: 12 lookups where 10 per minute are allowed, all answered */
    for (int i = 0; i < 12; i++) {
        CU_ASSERT_EQUAL(app("op=promo&member=m1&code=SPRING24", "x=1", NULL),
                        200);
    }
    /* closed: refused while the store is away */
    CU_ASSERT_EQUAL(app("op=bank", "member=m2", "account=1"), 503);
    /* local (the store's): counted here, 5 per 30 min */
    for (int i = 0; i < 5; i++) {
        CU_ASSERT_EQUAL(app("op=compose", "SESSIONID=s1", "to=a&message=b"),
                        200);
    }
    CU_ASSERT_EQUAL(app("op=compose", "SESSIONID=s1", "to=a&message=b"), 429);
    e2e_stop();
    test_redis_stop(&rs);
}

/* Writes DIR/name atomically (a temp file renamed over it). */
static int write_list(const char *name, const char *text)
{
    char path[TEST_PATH_MAX], tmp[TEST_PATH_MAX + 8];

    e2e_path(path, name);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    return test_write_file(tmp, text, strlen(text)) == 0 &&
                   rename(tmp, path) == 0
               ? 0
               : -1;
}

/* Allow and deny lists through the PHP login: a denied login is refused
 * before the application runs, an allowed one is never counted; an edit
 * of the list file is picked up, a bad one keeps the running lists. */
static void test_lists_and_reload(void)
{
    const char *edits[] = {"<Response format=\"auto\"/>",
                           "<Response format=\"auto\"/>\n"
                           "  <Deny file=\"deny.txt\"/>\n"
                           "  <Allow identity=\"LoginId=monitor\"/>",
                           NULL};
    int status = 0;

    CU_ASSERT_FATAL(
        write_list("deny.txt", "# bad accounts\nLoginId=mallory\n") == 0);
    CU_ASSERT_FATAL(e2e_start_login(edits) == 0);
    CU_ASSERT_EQUAL(post("/login.php?op=login", "user=mallory&password=x"),
                    403);
    CU_ASSERT_EQUAL(attempts("login fail mallory"), 0);
    for (int i = 0; i < 6; i++) {
        CU_ASSERT_EQUAL(post("/login.php?op=login", "user=monitor&password=x"),
                        401);
    }
    CU_ASSERT_EQUAL(attempts("login fail monitor"), 6);
    CU_ASSERT_EQUAL(post("/login.php?op=login", "user=eve&password=x"), 401);

    /* eve added to the file: refused once the file is reloaded */
    CU_ASSERT_FATAL(write_list("deny.txt", "LoginId=mallory\nLoginId=eve\n") ==
                    0);
    for (long long end = mono_ms() + test_scale_ms(5000);
         status != 403 && mono_ms() < end;) {
        status = post("/login.php?op=login", "user=eve&password=y");
        if (status != 403) {
            usleep(100000);
        }
    }
    CU_ASSERT_EQUAL(status, 403);

    /* a bad line: the running lists stay, and the log says why */
    CU_ASSERT_FATAL(write_list("deny.txt", "LoginId=mallory\n10.0.0.300\n") ==
                    0);
    CU_ASSERT_EQUAL(
        test_wait_file_text(e2e.log, "deny.txt:2:", test_scale_ms(5000)), 0);
    CU_ASSERT_EQUAL(post("/login.php?op=login", "user=eve&password=y"), 403);
}

/* The same on Redis (many hosts), through the failover wrapper. */
static void test_php_wrong_guesses_redis(void)
{
    char store[TEST_PATH_MAX + 64];
    const char *edits[] = {"<Store type=\"memory\"/>", store, NULL};
    test_redis_t rs;

    memset(&rs, 0, sizeof(rs));
    CU_ASSERT_FATAL(test_redis_start(&rs, false, NULL) == 0);
    /* exactness, not the timeout: a deadline no loaded machine misses
     * (the default 50 ms would let the fail mode answer some) */
    snprintf(store, sizeof(store),
             "<Store type=\"redis\" url=\"%s\" timeoutMs=\"%u\"/>", rs.url,
             test_scale_ms(5000));
    php_wrong_guesses_at_once(edits);
    e2e_stop();
    test_redis_stop(&rs);
}

/* The retryAfterMs of a problem+json denial of a wrong password, or -1
 * when the answer is not a 429 (its status in *status). */
static long wrong_password(int *status)
{
    char url[E2E_URL];
    const char *args[] = {"-H", "Accept: application/problem+json",
                          "-d", "user=carol&password=x",
                          url,  NULL};
    test_http_t r;
    const char *p;
    long ms = -1;

    e2e_url(url, "/login.php?op=login");
    *status = e2e_http(&r, args) == 0 ? r.status : 0;
    p = r.body != NULL ? strstr(r.body, "\"retryAfterMs\":") : NULL;
    if (*status == 429 && p != NULL) {
        ms = strtol(p + strlen("\"retryAfterMs\":"), NULL, 10);
    }
    test_http_free(&r);
    return ms;
}

/* Repeat offenders through the whole stack: one failure a second, locked
 * 1 s, then 2 s, then 4 s (BlockFactor 2; seconds times
 * SUSPECT_TEST_SCALE): each lock's countdown is exactly its length, and
 * each starts when the previous one ended. */
static void test_escalation_through_the_stack(void)
{
    /* The unit of every duration: 1 s, times SUSPECT_TEST_SCALE, since the
     * failure that counts and the next attempt must come within one
     * window (two requests through nginx and PHP, which a slow machine
     * may not make within 1 s). */
    unsigned s = test_scale_ms(1000) / 1000;
    char limits[512];

    snprintf(limits, sizeof(limits),
             "<ArrayOfSuspectUsageSettingEntity>\n"
             "<SuspectUsageSettingEntity Action=\"Login\" LimitCount=\"1\" "
             "LimitDuration=\"%u\" BlockDuration=\"%u\" BlockFactor=\"2\" "
             "MaxBlockDuration=\"%u\" OffenceDuration=\"%u\"/>\n"
             "<SuspectUsageSettingEntity Action=\"OtpVerify\" "
             "LimitCount=\"3\" LimitDuration=\"600\"/>\n"
             "</ArrayOfSuspectUsageSettingEntity>\n",
             s, s, 8 * s, 60 * s);
    CU_ASSERT_FATAL(e2e_start_login(NULL) == 0);
    CU_ASSERT_FATAL(e2e_write_limits(limits) == 0);
    CU_ASSERT_FATAL(test_wait_file_text(e2e.log, "limits reloaded",
                                        test_scale_ms(5000)) == 0);
    e2e_check_escalation(wrong_password, 401, s);
    CU_ASSERT_EQUAL(attempts("login fail carol"), 3);
}

/* An attacker must not gain by killing his own requests, nor by an
 * application that crashes: with <Success status="303">, a CGI program
 * that dies before answering (502), and one the client gives up on
 * before it answers (it would have said success), both count; the
 * attempt after three of them meets the lock, not attempts in flight. */
static void test_no_answer_counts(void)
{
    const char *edits[] = {
        "</Suspect>",
        "  <Route action=\"Login\" method=\"POST\" prefix=\"/try/\">\n"
        "    <Identity type=\"LoginId\" from=\"form:user\"/>\n"
        "    <Success status=\"303\"/>\n"
        "  </Route>\n</Suspect>",
        NULL};
    char url[E2E_URL], dir[TEST_PATH_MAX];
    test_http_t r;
    const char *retry;

    CU_ASSERT_FATAL(e2e_start_cgi(edits) == 0);
    CU_ASSERT_FATAL(mkdir(e2e_path(dir, "app/try"), 0755) == 0);
    CU_ASSERT_FATAL(e2e_write_cgi("try/crash.cgi", "#!/bin/sh\n"
                                                   "echo ran >> @DIR@/ran\n"
                                                   "kill -9 $$\n") == 0);
    CU_ASSERT_FATAL(e2e_write_cgi("try/slow.cgi",
                                  "#!/bin/sh\n"
                                  "echo ran >> @DIR@/ran\n"
                                  "sleep 3\n"
                                  "printf 'Status: 303 See Other\\r\\n"
                                  "Location: /welcome\\r\\n\\r\\n'\n") == 0);
    CU_ASSERT_EQUAL(post("/try/crash.cgi", "user=dave&password=x"), 502);
    CU_ASSERT_EQUAL(post("/try/crash.cgi", "user=dave&password=x"), 502);
    /* the client gives up after 0.3 s: nothing comes back */
    e2e_url(url, "/try/slow.cgi");
    CU_ASSERT_EQUAL(
        e2e_status((const char *[]){"--max-time", "0.3", "-d",
                                    "user=dave&password=x", url, NULL}),
        0);
    /* Once the daemon has seen the client go, the attempt is a hit.  Until
     * then its slot is in flight and the next attempt is only busy (a 429
     * of a second, nothing recorded): asked again until it is not. */
    e2e_url(url, "/try/crash.cgi");
    for (long long end = mono_ms() + test_scale_ms(5000);;) {
        CU_ASSERT_EQUAL_FATAL(
            e2e_http(&r,
                     (const char *[]){"-d", "user=dave&password=x", url, NULL}),
            0);
        retry = test_http_header(&r, "Retry-After");
        if (r.status != 429 || retry == NULL || atol(retry) > 2 ||
            mono_ms() >= end) {
            break;
        }
        test_http_free(&r);
        usleep(50000);
    }
    CU_ASSERT_EQUAL(r.status, 429);
    CU_ASSERT(retry != NULL && atol(retry) > 60); /* locked, not busy */
    test_http_free(&r);
}

int e2e_add_failure_tests(CU_pSuite s)
{
    return CU_add_test(s, "failures: 100 wrong passwords at once (php)",
                       test_php_wrong_guesses_at_once) == NULL ||
                   CU_add_test(s, "failures: 100 at once (php, lmdb)",
                               test_php_wrong_guesses_lmdb) == NULL ||
                   CU_add_test(s, "failures: 100 at once (php, redis)",
                               test_php_wrong_guesses_redis) == NULL ||
                   CU_add_test(s, "failures: three locks, longer each time",
                               test_escalation_through_the_stack) == NULL ||
                   CU_add_test(s,
                               "failures: a Location the client spells (php)",
                               test_php_location_spelled_by_client) == NULL ||
                   CU_add_test(s, "failures: two actions in one script (php)",
                               test_php_two_actions_one_script) == NULL ||
                   CU_add_test(s, "failures: a refusing route (php)",
                               test_php_refusing_route) == NULL ||
                   CU_add_test(s, "failures: a cookie in $_REQUEST (php)",
                               test_php_cookie_in_request) == NULL ||
                   CU_add_test(s, "failures: OTP 200 Invalid code (php)",
                               test_php_otp_counts_the_200_failure) == NULL ||
                   CU_add_test(s, "failures: body text (php)",
                               test_php_body_text) == NULL ||
                   CU_add_test(s, "failures: HEAD and gzip counted (php)",
                               test_php_body_rule_blind) == NULL ||
                   CU_add_test(s, "failures: HEAD and gzip counted (cgi)",
                               test_cgi_body_rule_blind) == NULL ||
                   CU_add_test(s, "failures: 100 wrong passwords at once (cgi)",
                               test_cgi_wrong_guesses_at_once) == NULL ||
                   CU_add_test(s, "failures: no answer counts (cgi)",
                               test_no_answer_counts) == NULL ||
                   CU_add_test(s, "shadow, then enforced by a reload",
                               test_shadow_then_enforce) == NULL ||
                   CU_add_test(s, "fail mode per action, Redis stopped",
                               test_fail_mode_per_action) == NULL ||
                   CU_add_test(s, "allow and deny lists, reloaded",
                               test_lists_and_reload) == NULL
               ? -1
               : 0;
}
