/*
 * test_libfcgi.c - the "libfcgi" suite: suspect-fcgi's own FastCGI codec
 * against libfcgi, the library the applications behind it are built with.
 *
 * The whole stack runs for real: nginx (examples/nginx/suspect-php.conf in
 * a site) -> suspect-fcgi (examples/suspect-php.xml, upstream mode) ->
 * libfcgi-echo (libfcgi_echo.c: four threads in FCGX_Accept_r loops,
 * built against Debian's libfcgi-dev), which echoes what it got.  Checked:
 * the CGI variables arrive as nginx and suspect-fcgi set them; a body over
 * 64 KiB (several STDIN records) reaches the application whole and comes
 * back whole (several STDOUT records); what the application writes to
 * its error stream reaches suspect-fcgi's log; a GET after a GET comes on
 * the connection kept for it (FCGI_KEEP_CONN, as libfcgi honours it) and
 * a POST on a fresh one; a denied request never reaches the application
 * (its own log of what it performed is compared with what was counted).
 *
 * The second half runs examples/libfcgi/protected-app, a libfcgi
 * application built on libsuspect-guard alone that decides in-process
 * with the same kind of files (examples/libfcgi/suspect.xml, the examples'
 * limits.xml) and answers the same 429s, behind nginx with the example's
 * snippet (examples/libfcgi/nginx.conf): with one accept loop, and with
 * four under a burst of wrong sign-ins, which must not get past the
 * limit.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clock.h"
#include "helpers/e2e.h"
#include "helpers/util.h"
#include "suites.h"

#define KIB 1024

/* A program of the build tree (SUSPECT_BUILDDIR/rel) into path. */
static const char *built(char path[TEST_PATH_MAX], const char *rel)
{
    const char *build = getenv("SUSPECT_BUILDDIR");

    snprintf(path, TEST_PATH_MAX, "%s/%s",
             build != NULL && build[0] != '\0' ? build : ".", rel);
    return path;
}

/* The stack: libfcgi-echo on php.sock, suspect-fcgi with suspect-php.xml
 * (no scriptFilename: nginx's SCRIPT_FILENAME goes on), nginx. */
static int start(void)
{
    const char *edits[] = {"scriptFilename=\"/srv/suspect/app/index.php\"", "",
                           NULL};
    char bin[TEST_PATH_MAX], log[TEST_PATH_MAX], index[TEST_PATH_MAX];
    const char *argv[] = {built(bin, "tests/libfcgi-echo"), e2e.php_sock,
                          e2e_path(log, "app.log"), NULL};

    /* nginx's try_files wants the script to exist; libfcgi-echo ignores
     * it. */
    if (test_write_file(e2e_path(index, "app/index.php"), "", 0) != 0 ||
        test_proc_start(&e2e.php, argv, NULL, NULL) != 0 ||
        test_wait_listen(0, e2e.php_sock, &e2e.php, 10000) != 0) {
        return -1;
    }
    if (e2e_prepare("suspect-php.xml", edits) != 0 ||
        e2e_start_suspect() != 0) {
        return -1;
    }
    return e2e_start_nginx("nginx/suspect-php.conf");
}

/* GET or POST (with the file at body, may be NULL) of path: r filled. */
static void request(test_http_t *r, const char *path, const char *body)
{
    char url[E2E_URL], data[TEST_PATH_MAX + 1];

    e2e_url(url, path);
    if (body == NULL) {
        e2e_http(r, (const char *[]){"-H", "X-Test: libfcgi", url, NULL});
        return;
    }
    snprintf(data, sizeof(data), "@%s", body);
    e2e_http(r, (const char *[]){"-H", "Content-Type: application/octet-stream",
                                 "--data-binary", data, url, NULL});
}

/* Whether the response lists line (a whole line), else says so. */
static bool has_line(const test_http_t *r, const char *line)
{
    size_t n = strlen(line);

    for (const char *p = r->body; (p = strstr(p, line)) != NULL; p += n) {
        if ((p == r->body || p[-1] == '\n') && p[n] == '\n') {
            return true;
        }
    }
    fprintf(stderr, "libfcgi: no line \"%s\" in:\n%.2000s\n", line, r->body);
    return false;
}

static void test_params(void)
{
    char want[TEST_PATH_MAX + 64];
    test_http_t r;

    CU_ASSERT_FATAL(start() == 0);
    request(&r, "/index.php?x=1&y=%20z", NULL);
    CU_ASSERT_EQUAL(r.status, 200);
    CU_ASSERT(has_line(&r, "REQUEST_METHOD=GET"));
    CU_ASSERT(has_line(&r, "REQUEST_URI=/index.php?x=1&y=%20z"));
    CU_ASSERT(has_line(&r, "QUERY_STRING=x=1&y=%20z"));
    CU_ASSERT(has_line(&r, "HTTP_X_TEST=libfcgi"));
    CU_ASSERT(has_line(&r, "REMOTE_ADDR=127.0.0.1"));
    CU_ASSERT(has_line(&r, "REDIRECT_STATUS=200"));
    snprintf(want, sizeof(want), "SCRIPT_FILENAME=%s/index.php", e2e.app);
    CU_ASSERT(has_line(&r, want));
    CU_ASSERT(has_line(&r, "body-length=0"));
    test_http_free(&r);
}

/* 200 KiB in, 200 KiB out: STDIN and STDOUT records split and joined. */
static void test_big_body(void)
{
    size_t n = 200 * KIB, len = 0;
    char *data = malloc(n), path[TEST_PATH_MAX], want[64];
    const char *echoed;
    test_http_t r;

    CU_ASSERT_FATAL(data != NULL);
    for (size_t i = 0; i < n; i++) {
        data[i] = (char)((i * 7 + i / 251) & 0xff);
    }
    CU_ASSERT_FATAL(test_write_file(e2e_path(path, "big.bin"), data, n) == 0);
    CU_ASSERT_FATAL(start() == 0);
    request(&r, "/index.php?op=upload", path);
    CU_ASSERT_EQUAL(r.status, 200);
    snprintf(want, sizeof(want), "CONTENT_LENGTH=%zu", n);
    CU_ASSERT(has_line(&r, want));
    snprintf(want, sizeof(want), "body-length=%zu", n);
    CU_ASSERT(has_line(&r, want));
    echoed = strstr(r.body, "--body--\n");
    if (echoed != NULL) {
        echoed += 9;
        len = r.body_len - (size_t)(echoed - r.body);
    }
    CU_ASSERT(echoed != NULL && len == n && memcmp(echoed, data, n) == 0);
    test_http_free(&r);
    free(data);
}

/* The application's error stream lands in suspect-fcgi's log. */
static void test_stderr(void)
{
    test_http_t r;

    CU_ASSERT_FATAL(start() == 0);
    request(&r, "/index.php?op=err", NULL);
    CU_ASSERT_EQUAL(r.status, 200);
    test_http_free(&r);
    CU_ASSERT_EQUAL(
        test_wait_file_text(
            e2e.log, "upstream stderr: libfcgi-echo: served /index.php?op=err",
            5000),
        0);
}

/* suspect-fcgi closes a pooled connection idle this long
 * (UP_IDLE_TIMEOUT_MS), a little less for the clocks' sake. */
#define POOL_IDLE_MS 900

/* GETs share a kept connection; a POST gets a fresh one.  A GET that comes
 * after the pool let its connection go (a slow machine between two curl
 * runs) may come on a new one; sooner, it must come on the kept one.
 * "Sooner" is judged when its answer is back (the request reached the
 * pool before that), not when curl is started. */
static void test_keep_alive(void)
{
    test_http_t r;
    char path[TEST_PATH_MAX];
    int64_t done;
    int checked = 0;

    CU_ASSERT_FATAL(start() == 0);
    request(&r, "/index.php?n=1", NULL);
    done = mono_ms();
    CU_ASSERT(has_line(&r, "kept=0"));
    test_http_free(&r);
    for (int i = 2; i <= 4; i++) {
        char uri[64];
        bool soon;

        snprintf(uri, sizeof(uri), "/index.php?n=%d", i);
        request(&r, uri, NULL);
        soon = mono_ms() - done < POOL_IDLE_MS;
        done = mono_ms();
        CU_ASSERT_EQUAL(r.status, 200);
        if (soon) {
            CU_ASSERT(has_line(&r, "kept=1"));
            checked++;
        }
        test_http_free(&r);
    }
    if (checked == 0) {
        fprintf(stderr, "libfcgi: every GET came after the pool's idle "
                        "timeout: kept connections not checked\n");
    }
    CU_ASSERT_FATAL(test_write_file(e2e_path(path, "small.bin"), "x", 1) == 0);
    request(&r, "/index.php?n=5", path);
    CU_ASSERT(has_line(&r, "kept=0"));
    test_http_free(&r);
}

/* Occurrences of line in the file at path. */
static int performed_in(const char *path, const char *line)
{
    char *text = test_read_file(path, NULL);
    int n = 0;

    for (const char *p = text; p != NULL && (p = strstr(p, line)) != NULL;
         p += strlen(line)) {
        n++;
    }
    free(text);
    return n;
}

/* Two bank updates reach the application, the third is the 429 and does
 * not: the application performed exactly what was counted. */
static void test_denied(void)
{
    char path[TEST_PATH_MAX];
    long long since;
    test_http_t r;

    CU_ASSERT_FATAL(start() == 0);
    since = mono_ms();
    for (int i = 0; i < 3; i++) {
        e2e_bank(&r, "/index.php?op=bank", NULL);
        if (i < 2) {
            CU_ASSERT_EQUAL(r.status, 200);
            CU_ASSERT(has_line(&r, "REQUEST_METHOD=POST"));
        } else {
            CU_ASSERT(e2e_is_denial(&r, "BankAccountUpdate", 2, 120,
                                    e2e_retry_floor(120, since), 120));
        }
        test_http_free(&r);
    }
    CU_ASSERT_EQUAL(
        performed_in(e2e_path(path, "app.log"), "POST /index.php?op=bank\n"),
        2);
}

/* ---- examples/libfcgi: deciding in-process ------------------------------ */

/* protected-app with threads accept loops on examples/libfcgi/suspect.xml
 * (its limits file beside it), listening where the example's nginx
 * snippet sends: DIR/fcgi.sock. */
static int start_protected(int threads)
{
    const char *edits[] = {"../limits.xml", "limits.xml", NULL};
    char bin[TEST_PATH_MAX], log[TEST_PATH_MAX], n[16];
    const char *argv[] = {built(bin, "examples/libfcgi/protected-app"),
                          e2e.conf, e2e.sock, n, NULL};
    int rc;

    snprintf(n, sizeof(n), "%d", threads);
    if (e2e_prepare("libfcgi/suspect.xml", edits) != 0) {
        return -1;
    }
    rc = test_proc_start(&e2e.fcgi, argv, NULL, e2e_path(log, "suspect.log"));
    if (rc != 0 || test_wait_listen(0, e2e.sock, &e2e.fcgi, 10000) != 0) {
        return -1;
    }
    return e2e_start_nginx("libfcgi/nginx.conf");
}

/* One POST of body to path; its status. */
static int post(const char *path, const char *body)
{
    char url[E2E_URL];
    const char *args[] = {"-d", body, e2e_url(url, path), NULL};

    return e2e_status(args);
}

static void test_protected_app(void)
{
    char url[E2E_URL];
    long long since;
    test_http_t r;

    CU_ASSERT_FATAL(start_protected(1) == 0);
    e2e_http(&r, (const char *[]){e2e_url(url, "/app"), NULL});
    CU_ASSERT(e2e_body_starts(&r, 200, "ok index"));
    test_http_free(&r);
    /* the same route, identities, limits and 429 as suspect-fcgi's */
    since = e2e_bank_scenario("/app?op=bank", NULL);
    e2e_bank(&r, "/app?op=bank", "Accept: application/problem+json");
    CU_ASSERT(e2e_is_denial(&r, "BankAccountUpdate", 2, 120,
                            e2e_retry_floor(120, since), 120));
    CU_ASSERT_STRING_EQUAL(test_http_header(&r, "Content-Type") ?: "",
                           "application/problem+json");
    test_http_free(&r);
    /* the application's own code ran for the two allowed updates only */
    CU_ASSERT_EQUAL(performed_in(e2e.log, "performed POST /app?op=bank\n"), 2);
    /* a sign-in without a user (or an empty one) would not be counted,
     * and the application checks the password anyway: refused, it never
     * runs */
    for (int i = 0; i < 8; i++) {
        CU_ASSERT_EQUAL(post("/app?op=signin",
                             i % 2 ? "password=right" : "user=&password=g"),
                        400);
    }
    CU_ASSERT_EQUAL(performed_in(e2e.log, "performed POST /app?op=signin\n"),
                    0);
    /* sign-ins count by the response: the right password never counts
     * (the form field was read by the guard and again by the app), three
     * wrong ones lock the user out, the right one too after that */
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL(post("/app?op=signin", "user=ann&password=right"), 200);
    }
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(post("/app?op=signin", "user=ann&password=guess"), 401);
    }
    CU_ASSERT_EQUAL(post("/app?op=signin", "user=ann&password=right"), 429);
    CU_ASSERT_EQUAL(performed_in(e2e.log, "performed POST /app?op=signin\n"),
                    7);
}

/* Four accept loops (libfcgi's threaded FCGX_Accept_r pattern), 40 wrong
 * sign-ins at once: the attempts held in flight keep the limit, so the
 * application checks exactly three and every other one is the 429. */
static void test_protected_threads(void)
{
    int ok, denied, other;

    CU_ASSERT_FATAL(start_protected(4) == 0);
    e2e_storm("/app?op=signin", "user=eve&password=guess", 40, &ok, &denied,
              &other);
    CU_ASSERT_EQUAL(ok, 0);
    CU_ASSERT_EQUAL(other, 3); /* the three 401s */
    CU_ASSERT_EQUAL(denied, 37);
    CU_ASSERT_EQUAL(performed_in(e2e.log, "performed POST /app?op=signin\n"),
                    3);
    CU_ASSERT_EQUAL(post("/app?op=signin", "user=eve&password=right"), 429);
}

int register_libfcgi_suite(void)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        {"upstream libfcgi: CGI variables", test_params},
        {"upstream libfcgi: 200 KiB body both ways", test_big_body},
        {"upstream libfcgi: error stream to the log", test_stderr},
        {"upstream libfcgi: kept connections", test_keep_alive},
        {"upstream libfcgi: a denied request never reaches it", test_denied},
        {"examples/libfcgi: deciding in-process", test_protected_app},
        {"examples/libfcgi: four threads, 40 at once", test_protected_threads},
    };
    CU_pSuite s = CU_add_suite_with_setup_and_teardown("libfcgi", NULL, NULL,
                                                       e2e_setup, e2e_teardown);

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
