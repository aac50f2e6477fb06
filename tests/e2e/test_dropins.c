/*
 * test_dropins.c - the "dropins" suite: each web server drop-in of
 * examples/ installed into Debian's own configuration, as its header
 * says, then checked by the server and used.
 *
 * For each drop-in: the package's configuration tree is copied into the
 * test's directory (helpers/debian.h: only the port, pid, logs, temp
 * dirs, document root and user are moved there), the drop-in is
 * installed the way its header tells an operator (nginx: a snippet in
 * snippets/ included from the default site's server block; lighttpd:
 * conf-available/ and lighty-enable-mod; Apache: a2enmod, a2enconf), the
 * server's own check must pass (nginx -t, lighttpd -tt, apache2 -t), and
 * then the server runs on that configuration in front of suspect-fcgi:
 * the application answers, and the third bank update of a member is the
 * 429 that only suspect-fcgi gives.  The configuration a drop-in must
 * coexist with is Debian's, not one written for the test: a drop-in that
 * sets what lighttpd.conf sets, or a server block that collides with the
 * default site, fails here.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "helpers/debian.h"
#include "helpers/e2e.h"
#include "helpers/redisserver.h"
#include "helpers/util.h"
#include "suites.h"

/* The application through the web server: its index at index, and the
 * bank scenario at index?op=bank. */
static void serve(const char *index)
{
    char url[E2E_URL], bank[128];
    test_http_t r;

    e2e_http(&r, (const char *[]){e2e_url(url, index), NULL});
    CU_ASSERT(e2e_body_starts(&r, 200, "ok index"));
    test_http_free(&r);
    snprintf(bank, sizeof(bank), "%s?op=bank", index);
    e2e_bank_scenario(bank, NULL);
}

/* examples/nginx/snippet behind suspect-fcgi on example_conf, in the
 * default site of Debian's nginx. */
static void nginx_dropin(const char *example_conf, const char *snippet,
                         const char *index)
{
    const char *name = strrchr(snippet, '/') + 1;
    bool php = strstr(index, ".php") != NULL;
    char file[TEST_PATH_MAX];

    CU_ASSERT_FATAL(e2e_start_backend(example_conf, NULL) == 0);
    CU_ASSERT_FATAL(e2e_write_example(snippet, name, NULL) == 0);
    CU_ASSERT_FATAL(
        deb_nginx_layout(e2e.dir, e2e.port, e2e.app,
                         php ? "index.php index.html" : "index.html") == 0);
    CU_ASSERT_FATAL(deb_nginx_snippet(e2e.dir, name, e2e_path(file, name)) ==
                    0);
    CU_ASSERT_EQUAL_FATAL(deb_nginx_check(e2e.dir), 0);
    CU_ASSERT_FATAL(deb_nginx_start(&e2e.web, e2e.dir, e2e.port) == 0);
    serve(index);
}

static void test_nginx_cgi(void)
{
    nginx_dropin("suspect.xml", "nginx/suspect-cgi.conf", "/app.cgi");
}

static void test_nginx_php(void)
{
    nginx_dropin("suspect-php.xml", "nginx/suspect-php.conf", "/index.php");
}

static void test_nginx_auth_request(void)
{
    nginx_dropin("suspect-auth-request.xml", "nginx/auth-request.conf",
                 "/index.php");
}

/* examples/lighttpd/authorizer.conf enabled with lighty-enable-mod in
 * Debian's lighttpd, the example app in the document root. */
static void test_lighttpd_authorizer(void)
{
    char file[TEST_PATH_MAX];

    CU_ASSERT_FATAL(e2e_start_backend("suspect-authorizer.xml", NULL) == 0);
    CU_ASSERT_FATAL(e2e_write_example("lighttpd/authorizer.conf",
                                      "authorizer.conf", NULL) == 0);
    CU_ASSERT_FATAL(deb_lighttpd_layout(e2e.dir, e2e.port, e2e.app) == 0);
    CU_ASSERT_FATAL(deb_lighttpd_enable(e2e.dir, "50-suspect.conf",
                                        e2e_path(file, "authorizer.conf")) ==
                    0);
    CU_ASSERT_EQUAL_FATAL(deb_lighttpd_check(e2e.dir), 0);
    CU_ASSERT_FATAL(deb_lighttpd_start(&e2e.web, e2e.dir, e2e.port) == 0);
    serve("/app.cgi");
}

/* examples/apache/authnz-fcgi.conf with a2enmod and a2enconf in Debian's
 * Apache, suspect-fcgi on a TCP port as mod_authnz_fcgi needs. */
static void test_apache_authnz(void)
{
    static const char *const mods[] = {"authnz_fcgi", "authz_user", "cgi",
                                       NULL};
    char listen[64], fcgi_addr[64], file[TEST_PATH_MAX];
    const char *extra[] = {"--listen", listen, NULL};
    const char *pairs[] = {"127.0.0.1:9010", fcgi_addr, NULL};
    int fcgi_port = test_free_port();
    char app[TEST_PATH_MAX], src[TEST_PATH_MAX];

    /* The CGI program runs as www-data: it must reach DIR/app. */
    CU_ASSERT_FATAL(fcgi_port > 0 && chmod(e2e.dir, 0755) == 0);
    snprintf(listen, sizeof(listen), "tcp:127.0.0.1:%d", fcgi_port);
    snprintf(fcgi_addr, sizeof(fcgi_addr), "127.0.0.1:%d", fcgi_port);
    e2e.port = test_free_port();
    CU_ASSERT_FATAL(e2e.port > 0);
    CU_ASSERT_FATAL(test_copy_file(e2e_src(src, "examples/limits.xml"),
                                   e2e.limits, 0644) == 0);
    CU_ASSERT_FATAL(
        e2e_write_example("suspect-authorizer.xml", "suspect.xml", NULL) == 0);
    snprintf(app, sizeof(app), "%s/app.cgi", e2e.app);
    CU_ASSERT_FATAL(
        test_copy_file(e2e_src(src, "examples/app/app.cgi"), app, 0755) == 0);
    CU_ASSERT_FATAL(test_suspect_start(&e2e.fcgi, e2e.dir, e2e.conf, NULL,
                                       fcgi_port, extra) == 0);
    CU_ASSERT_FATAL(e2e_write_example("apache/authnz-fcgi.conf",
                                      "authnz-fcgi.conf", pairs) == 0);
    CU_ASSERT_FATAL(deb_apache_layout(e2e.dir, e2e.port, e2e.app) == 0);
    CU_ASSERT_FATAL(deb_apache_enable(e2e.dir, mods, "suspect",
                                      e2e_path(file, "authnz-fcgi.conf")) == 0);
    CU_ASSERT_EQUAL_FATAL(deb_apache_check(e2e.dir), 0);
    CU_ASSERT_FATAL(deb_apache_start(&e2e.web, e2e.dir, e2e.port) == 0);
    serve("/app.cgi");
}

int register_dropins_suite(void)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        {"nginx: suspect-cgi.conf in the default site", test_nginx_cgi},
        {"nginx: suspect-php.conf in the default site", test_nginx_php},
        {"nginx: auth-request.conf in the default site",
         test_nginx_auth_request},
        {"lighttpd: authorizer.conf by lighty-enable-mod",
         test_lighttpd_authorizer},
        {"apache: authnz-fcgi.conf by a2enmod and a2enconf",
         test_apache_authnz},
    };
    CU_pSuite s = CU_add_suite_with_setup_and_teardown("dropins", NULL, NULL,
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
