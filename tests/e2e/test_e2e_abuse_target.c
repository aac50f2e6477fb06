/*
 * test_e2e_abuse_target.c - the "abuse" suite: requests that run a
 * protected operation under another name than its route's.
 *
 * The example applications append what they performed to performed.log
 * (examples/app/app.cgi, index.php); each test sends a password guess
 * (or a bank update) in every shape an attacker would try and compares
 * what the application performed with what the limit allows:
 *   - the directory index, through each web server that decides first
 *     (nginx auth_request, the lighttpd authorizer, Apache
 *     mod_authnz_fcgi), spelled "/", "//", "/./", "/%2e/" and through
 *     PATH_INFO where the server splits it;
 *   - other scripts when <Upstream scriptFilename> pins the one PHP runs
 *     (every *.php path runs it);
 *   - a symbolic link to the CGI program (an alias of it);
 *   - a URL nginx rewrites into the script, under auth_request.
 * The login action allows 2 a day, then locks for a day: whatever the
 * shapes, the application must have checked at most 2 passwords.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers/e2e.h"
#include "helpers/util.h"
#include "test_e2e_abuse.h"

/* Creates DIR/app/performed.log, writable by the app's user. */
static int performed_start(void)
{
    char path[TEST_PATH_MAX];

    snprintf(path, sizeof(path), "%s/performed.log", e2e.app);
    if (test_write_file(path, "", 0) != 0) {
        return -1;
    }
    return chmod(path, 0666);
}

static int guess(const char *target, const char *member)
{
    char url[E2E_URL], form[128];

    snprintf(form, sizeof(form), "member=%s&password=wrong", member);
    e2e_url(url, target);
    return e2e_status((const char *[]){"--path-as-is", "-d", form, url, NULL});
}

/* Sends a guess for member to each of targets; then the application
 * must have checked at most limit passwords of member (says which
 * targets ran it uncounted). */
static void guesses_counted(const char *const *targets, const char *member,
                            int limit)
{
    for (size_t i = 0; targets[i] != NULL; i++) {
        int before = abuse_performed("login", member),
            st = guess(targets[i], member);

        if (abuse_performed("login", member) > before) {
            fprintf(stderr, " [%s ran the login (%d)]", targets[i], st);
        }
    }
    if (abuse_performed("login", member) > limit) {
        fprintf(stderr, "\n  %s: %d passwords checked, the limit is %d\n",
                member, abuse_performed("login", member), limit);
    }
    CU_ASSERT(abuse_performed("login", member) <= limit);
    CU_ASSERT(abuse_performed("login", member) >= 1); /* it did run */
}

/* The directory index, nginx auth_request -> PHP. */
static void test_index_auth_request(void)
{
    static const char *const targets[] = {
        "/?op=login",   "//?op=login",         "/./?op=login", "/%2e/?op=login",
        "/?op=login&x", "/index.php?op=login", "/?op=login",   NULL};

    CU_ASSERT_FATAL(e2e_start_auth_request(NULL) == 0);
    CU_ASSERT_FATAL(performed_start() == 0);
    guesses_counted(targets, "victim", 2);
}

/* The directory index and PATH_INFO, lighttpd's authorizer -> CGI. */
static void test_index_lighttpd(void)
{
    static const char *const targets[] = {
        "/?op=login",          "//?op=login",
        "/./?op=login",        "/%2e/?op=login",
        "/app.cgi/x?op=login", "/app.cgi?op=login",
        "/?op=login",          NULL};

    CU_ASSERT_FATAL(e2e_start_authorizer(NULL) == 0);
    CU_ASSERT_FATAL(performed_start() == 0);
    guesses_counted(targets, "victim", 2);
}

/* The directory index and PATH_INFO, Apache mod_authnz_fcgi -> CGI. */
static void test_index_apache(void)
{
    static const char *const targets[] = {
        "/?op=login",          "//?op=login",
        "/./?op=login",        "/%2e/?op=login",
        "/app.cgi/x?op=login", "/app.cgi?op=login",
        "/?op=login",          NULL};

    CU_ASSERT_FATAL(e2e_start_apache(NULL) == 0);
    CU_ASSERT_FATAL(performed_start() == 0);
    guesses_counted(targets, "victim", 2);
}

/* <Upstream scriptFilename>: every *.php path runs index.php. */
static void test_other_scripts(void)
{
    static const char *const targets[] = {
        "/other.php?op=login", "/x.php?op=login", "/other.php?op=login",
        "/?op=login",          "/x.php?op=login", NULL};
    char path[TEST_PATH_MAX];

    CU_ASSERT_FATAL(e2e_start_php(NULL) == 0);
    CU_ASSERT_FATAL(performed_start() == 0);
    snprintf(path, sizeof(path), "%s/other.php", e2e.app);
    CU_ASSERT_FATAL(test_write_file(path, "<?php\n", 6) == 0);
    snprintf(path, sizeof(path), "%s/x.php", e2e.app);
    CU_ASSERT_FATAL(test_write_file(path, "<?php\n", 6) == 0);
    guesses_counted(targets, "victim", 2);
}

/* A symbolic link to the CGI program is the program. */
static void test_cgi_alias(void)
{
    static const char *const targets[] = {
        "/login.cgi?op=login", "/sub/app.cgi?op=login", "/login.cgi?op=login",
        "/app.cgi?op=login", NULL};
    char link[TEST_PATH_MAX], sub[TEST_PATH_MAX];

    CU_ASSERT_FATAL(e2e_start_cgi(NULL) == 0);
    CU_ASSERT_FATAL(performed_start() == 0);
    snprintf(link, sizeof(link), "%s/login.cgi", e2e.app);
    CU_ASSERT_FATAL(symlink("app.cgi", link) == 0);
    snprintf(sub, sizeof(sub), "%s/sub", e2e.app);
    CU_ASSERT_FATAL(mkdir(sub, 0755) == 0);
    snprintf(link, sizeof(link), "%s/sub/app.cgi", e2e.app);
    CU_ASSERT_FATAL(symlink("../app.cgi", link) == 0);
    guesses_counted(targets, "victim", 2);
}

/* nginx rewrites /signin into the script: auth_request decides on the
 * script and the query string the rewrite gives it. */
static void test_rewrite_auth_request(void)
{
    static const char *const targets[] = {"/signin", "/signin?x=1", "/signin",
                                          NULL};
    const char *edits[] = {
        "location ~ \\.php$ {",
        "location = /signin {\n    rewrite ^ /index.php?op=login last;\n}\n\n"
        "location ~ \\.php$ {",
        NULL};

    CU_ASSERT_FATAL(e2e_start_backend("suspect-auth-request.xml", NULL) == 0);
    CU_ASSERT_FATAL(e2e_start_nginx_edits("nginx/auth-request.conf", edits) ==
                    0);
    CU_ASSERT_FATAL(performed_start() == 0);
    guesses_counted(targets, "victim", 2);
}

int abuse_add_target_tests(CU_pSuite s)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        {"target: the directory index, nginx auth_request",
         test_index_auth_request},
        {"target: the directory index, lighttpd authorizer",
         test_index_lighttpd},
        {"target: the directory index, Apache authorizer", test_index_apache},
        {"target: other scripts, scriptFilename pinned", test_other_scripts},
        {"target: a link to the CGI program", test_cgi_alias},
        {"target: a rewritten URL, nginx auth_request",
         test_rewrite_auth_request},
    };

    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return 0;
}
