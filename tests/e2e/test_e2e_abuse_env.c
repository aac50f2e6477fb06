/*
 * test_e2e_abuse_env.c - the "abuse" suite: the socket as a way in.
 *
 * Whoever reaches suspect-fcgi's socket writes the FastCGI parameters,
 * and in the CGI shape (examples/suspect.xml, the Perl app.cgi) those
 * used to become the program's environment: PERL5OPT loaded a module of
 * the attacker's, PERL5DB ran a debugger of his, LD_PRELOAD reached the
 * loader.  Here each of them, and a dozen more that interpreters and the
 * loader read, is sent straight in FastCGI with an ordinary request of
 * the app; the module and the debugger would create a file.  The app must
 * run as usual (the request is served), the file must not exist, and the
 * program's environment (dumped by a second program) must hold only
 * CGI/1.1 variables, request headers (HTTP_PROXY not among them), the
 * daemon's PATH and what <Cgi passEnv> names.
 *
 * In the PHP shape (examples/suspect-php.xml) the same parameters become
 * the upstream's: php-fpm reads PHP_VALUE and PHP_ADMIN_VALUE as php.ini
 * lines, so auto_prepend_file runs a file of the sender's choice before
 * the application, in every request of that worker.  They are sent both
 * ways, by a site whose nginx sets them (fastcgi_param, as a misconfigured
 * or a compromised site would) and straight into the socket, to php-cgi
 * (whose $_SERVER, dumped by env.php, must not hold them) and to php-fpm
 * (where the prepended and appended files would run and leave a trace);
 * then with <Upstream passParams="PHP_VALUE">, where PHP_VALUE must reach
 * php-fpm and run (the operator's choice), PHP_ADMIN_VALUE still not.
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

/* A module and a debugger that leave a trace. */
static const char pwn_pm[] = "package Pwn;\n"
                             "open(my $f, '>', '@DIR@/pwned-module');\n"
                             "1;\n";
static const char pwn_db[] = "open(my $f, '>', '@DIR@/pwned-debugger');\n"
                             "sub DB::DB {}\n"
                             "1;\n";

/* Prints its environment, sorted, as the body. */
static const char env_cgi[] = "#!/bin/sh\n"
                              "printf 'Content-Type: text/plain\\r\\n\\r\\n'\n"
                              "env | LC_ALL=C sort\n";

/* Writes text with "@DIR@" replaced to DIR/name. */
static int write_dir_file(const char *name, const char *text)
{
    const char *pairs[] = {"@DIR@", e2e.dir, NULL};
    char path[TEST_PATH_MAX];
    char *t = test_subst(text, pairs);
    int rc;

    if (t == NULL) {
        return -1;
    }
    snprintf(path, sizeof(path), "%s/%s", e2e.dir, name);
    rc = test_write_file(path, t, strlen(t));
    free(t);
    return rc;
}

/* Whether DIR/name exists. */
static bool exists(const char *name)
{
    char path[TEST_PATH_MAX];
    struct stat st;

    snprintf(path, sizeof(path), "%s/%s", e2e.dir, name);
    return stat(path, &st) == 0;
}

/* One responder request for script (under DIR/app) with the hostile
 * variables added: the response text in out; its status. */
static int hostile(const char *script, const char *qs, char *out, size_t size)
{
    char inc[TEST_PATH_MAX + 16], db[TEST_PATH_MAX + 32], pre[TEST_PATH_MAX];
    char uri[128], sname[64], file[TEST_PATH_MAX];
    static char params[16384];
    const char *vars[] = {"REQUEST_METHOD",
                          "GET",
                          "REQUEST_URI",
                          uri,
                          "QUERY_STRING",
                          qs,
                          "SCRIPT_NAME",
                          sname,
                          "SCRIPT_FILENAME",
                          file,
                          "DOCUMENT_ROOT",
                          e2e.app,
                          "REMOTE_ADDR",
                          "192.0.2.7",
                          "SERVER_PROTOCOL",
                          "HTTP/1.1",
                          "HTTP_X_REQUESTED_WITH",
                          "tests",
                          "HTTP_PROXY",
                          "http://evil:1/",
                          "HTTP_x-bad",
                          "1",
                          "PERL5OPT",
                          inc,
                          "PERL5DB",
                          db,
                          "PERL5LIB",
                          e2e.dir,
                          "PERLLIB",
                          e2e.dir,
                          "LD_PRELOAD",
                          pre,
                          "LD_LIBRARY_PATH",
                          e2e.dir,
                          "LD_AUDIT",
                          pre,
                          "BASH_ENV",
                          pre,
                          "ENV",
                          pre,
                          "PYTHONSTARTUP",
                          pre,
                          "PYTHONPATH",
                          e2e.dir,
                          "RUBYOPT",
                          "-rpwn",
                          "NODE_OPTIONS",
                          "--require pwn",
                          "PHPRC",
                          e2e.dir,
                          "IFS",
                          "x",
                          "PATH",
                          e2e.dir,
                          "SSL_CLIENT_S_DN",
                          "CN=tests",
                          "GEOIP_COUNTRY",
                          "NZ",
                          "GEOIPX",
                          "no",
                          NULL};
    size_t len = 0;
    int fd;

    snprintf(inc, sizeof(inc), "-d -I%s -MPwn", e2e.dir);
    snprintf(db, sizeof(db), "BEGIN { require '%s/pwn-db.pl' }", e2e.dir);
    snprintf(pre, sizeof(pre), "%s/pwn.so", e2e.dir);
    snprintf(uri, sizeof(uri), "/%s?%s", script, qs);
    snprintf(sname, sizeof(sname), "/%s", script);
    snprintf(file, sizeof(file), "%s/%s", e2e.app, script);
    for (size_t i = 0; vars[i] != NULL; i += 2) {
        if (e2e_fcgi_pair(params, sizeof(params), &len, vars[i], vars[i + 1]) !=
            0) {
            return -1;
        }
    }
    fd = e2e_fcgi_connect();
    if (fd < 0) {
        return -1;
    }
    if (e2e_fcgi_exchange(fd, 1, false, params, len, "", 0, out, size, 10000) !=
        0) {
        close(fd);
        return -1;
    }
    close(fd);
    return e2e_cgi_status(out);
}

/* Whether the environment dump in text has the line "NAME=..." (want) or
 * not; says which when it is wrong. */
static bool has_var(const char *text, const char *name, bool want)
{
    char line[160];
    const char *body = strstr(text, "\r\n\r\n");
    bool got;

    snprintf(line, sizeof(line), "\n%s=", name);
    got = body != NULL && strstr(body + 2, line) != NULL;
    if (got != want) {
        fprintf(stderr, "\n  %s: %s in the CGI environment\n", name,
                got ? "present" : "missing");
    }
    return got == want;
}

static void test_cgi_env(void)
{
    static const char *const gone[] = {
        "HTTP_PROXY", "HTTP_x-bad", "PERL5OPT",     "PERL5DB",
        "PERL5LIB",   "PERLLIB",    "LD_PRELOAD",   "LD_LIBRARY_PATH",
        "LD_AUDIT",   "BASH_ENV",   "ENV",          "PYTHONSTARTUP",
        "PYTHONPATH", "RUBYOPT",    "NODE_OPTIONS", "PHPRC",
        "IFS",        "GEOIPX",
    };
    static const char *const kept[] = {
        "REQUEST_METHOD",        "REQUEST_URI",     "QUERY_STRING",
        "SCRIPT_NAME",           "SCRIPT_FILENAME", "DOCUMENT_ROOT",
        "REMOTE_ADDR",           "SERVER_PROTOCOL", "GATEWAY_INTERFACE",
        "HTTP_X_REQUESTED_WITH", "SSL_CLIENT_S_DN", "GEOIP_COUNTRY",
    };
    const char *edits[] = {"timeout=\"30\"",
                           "timeout=\"30\" passEnv=\"SSL_CLIENT_S_DN GEOIP_*\"",
                           NULL};
    static char out[65536];
    char path[TEST_PATH_MAX + 8];

    CU_ASSERT_FATAL(write_dir_file("Pwn.pm", pwn_pm) == 0);
    CU_ASSERT_FATAL(write_dir_file("pwn-db.pl", pwn_db) == 0);
    CU_ASSERT_FATAL(e2e_write_cgi("env.cgi", env_cgi) == 0);
    CU_ASSERT_FATAL(e2e_start_cgi(edits) == 0);

    /* The Perl app serves the request, and neither trace appears. */
    CU_ASSERT_EQUAL(
        hostile("app.cgi", "op=promo&member=m&code=c", out, sizeof(out)), 200);
    CU_ASSERT(strstr(out, "ok promo") != NULL);
    CU_ASSERT_FALSE(exists("pwned-module"));
    CU_ASSERT_FALSE(exists("pwned-debugger"));

    /* What a program's environment holds. */
    CU_ASSERT_EQUAL(hostile("env.cgi", "a=1", out, sizeof(out)), 200);
    for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++) {
        CU_ASSERT(has_var(out, gone[i], false));
    }
    for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
        CU_ASSERT(has_var(out, kept[i], true));
    }
    snprintf(path, sizeof(path), "\nPATH=%s\n", e2e.dir);
    CU_ASSERT(strstr(out, path) == NULL);
    CU_ASSERT(strstr(out, "\nPATH=/usr/local/bin:/usr/bin:/bin\n") != NULL);
}

/* What a php.ini line may run: each leaves a trace. */
static const char prepend_php[] =
    "<?php file_put_contents('@DIR@/pwned-php', \"prepend\\n\", "
    "FILE_APPEND);\n";
static const char append_php[] =
    "<?php file_put_contents('@DIR@/pwned-php', \"append\\n\", "
    "FILE_APPEND);\n";

/* Prints the variables PHP got, one NAME=value a line. */
static const char env_php[] = "<?php foreach ($_SERVER as $k => $v) {\n"
                              "    if (is_string($v)) { echo \"$k=$v\\n\"; }\n"
                              "}\n";

/* The PHP shape, on php-fpm (fpm) or php-cgi, its nginx snippet setting
 * PHP_VALUE and PHP_ADMIN_VALUE; <Upstream> without scriptFilename (so
 * env.php runs) and with passParams="pass" unless pass is NULL. */
static int start_php(bool fpm, const char *pass)
{
    char pin[TEST_PATH_MAX + 32], attr[64], inis[3 * TEST_PATH_MAX];
    char src[TEST_PATH_MAX], app[TEST_PATH_MAX + 16];
    const char *conf_edits[] = {pin, attr, NULL};
    const char *nginx_edits[] = {"    client_max_body_size 8m;", inis, NULL};

    snprintf(pin, sizeof(pin), "scriptFilename=\"%s/index.php\"", e2e.app);
    snprintf(attr, sizeof(attr), "%s%s%s", pass != NULL ? "passParams=\"" : "",
             pass != NULL ? pass : "", pass != NULL ? "\"" : "");
    snprintf(inis, sizeof(inis),
             "    fastcgi_param PHP_VALUE "
             "\"auto_prepend_file=%s/prepend.php\";\n"
             "    fastcgi_param PHP_ADMIN_VALUE "
             "\"auto_append_file=%s/append.php\";\n"
             "    client_max_body_size 8m;",
             e2e.dir, e2e.dir);
    snprintf(app, sizeof(app), "%s/index.php", e2e.app);
    if (e2e_prepare("suspect-php.xml", conf_edits) != 0 ||
        test_copy_file(e2e_src(src, "examples/app/index.php"), app, 0644) !=
            0 ||
        write_dir_file("prepend.php", prepend_php) != 0 ||
        write_dir_file("append.php", append_php) != 0 ||
        write_dir_file("app/env.php", env_php) != 0 ||
        (fpm ? test_fpm_start(&e2e.php, e2e.dir, e2e.php_sock)
             : test_php_start(&e2e.php, e2e.dir, e2e.php_sock, NULL)) != 0 ||
        e2e_start_suspect() != 0) {
        return -1;
    }
    return e2e_start_nginx_edits("nginx/suspect-php.conf", nginx_edits);
}

/* script (under DIR/app) straight into suspect-fcgi's socket with
 * PHP_VALUE and PHP_ADMIN_VALUE among its parameters: the response text
 * in out; its status, or -1. */
static int php_raw(const char *script, char *out, size_t size)
{
    char uri[64], file[TEST_PATH_MAX], pre[TEST_PATH_MAX + 32];
    char app[TEST_PATH_MAX + 32];
    char params[8192];
    const char *vars[] = {"REQUEST_METHOD",
                          "GET",
                          "REQUEST_URI",
                          uri + 1,
                          "QUERY_STRING",
                          "",
                          "SCRIPT_NAME",
                          uri + 1,
                          "SCRIPT_FILENAME",
                          file,
                          "DOCUMENT_ROOT",
                          e2e.app,
                          "REMOTE_ADDR",
                          "192.0.2.8",
                          "SERVER_PROTOCOL",
                          "HTTP/1.1",
                          "PHP_VALUE",
                          pre,
                          "PHP_ADMIN_VALUE",
                          app,
                          NULL};
    size_t len = 0;
    int fd, rc;

    snprintf(uri, sizeof(uri), "//%s", script);
    snprintf(file, sizeof(file), "%s/%s", e2e.app, script);
    snprintf(pre, sizeof(pre), "auto_prepend_file=%s/prepend.php", e2e.dir);
    snprintf(app, sizeof(app), "auto_append_file=%s/append.php", e2e.dir);
    for (size_t i = 0; vars[i] != NULL; i += 2) {
        if (e2e_fcgi_pair(params, sizeof(params), &len, vars[i], vars[i + 1]) !=
            0) {
            return -1;
        }
    }
    fd = e2e_fcgi_connect();
    if (fd < 0) {
        return -1;
    }
    rc = e2e_fcgi_exchange(fd, 1, false, params, len, "", 0, out, size, 10000);
    close(fd);
    return rc == 0 ? e2e_cgi_status(out) : -1;
}

/* GET path through nginx: the status; the body in out (cut to size). */
static int php_http(const char *path, char *out, size_t size)
{
    char url[E2E_URL];
    test_http_t r;
    int status;

    e2e_http(&r, (const char *[]){e2e_url(url, path), NULL});
    status = r.status;
    snprintf(out, size, "%s", r.body != NULL ? r.body : "");
    test_http_free(&r);
    return status;
}

/* Whether the text of a response (any head before its body included)
 * has the line "NAME=..." (want) or not; says which when it is wrong. */
static bool php_has(const char *text, const char *name, bool want)
{
    char line[160];
    bool got;

    snprintf(line, sizeof(line), "\n%s=", name);
    got = strstr(text, line) != NULL;
    if (got != want) {
        fprintf(stderr, "\n  %s: %s in PHP's $_SERVER\n", name,
                got ? "present" : "missing");
    }
    return got == want;
}

/* Whether DIR/pwned-php holds exactly text; says what it holds if not. */
static bool trace_is(const char *text)
{
    char path[TEST_PATH_MAX];
    char *got = test_read_file(e2e_path(path, "pwned-php"), NULL);
    bool same = got != NULL && strcmp(got, text) == 0;

    if (!same) {
        fprintf(stderr, "\n  pwned-php: %s\n", got != NULL ? got : "(none)");
    }
    free(got);
    return same;
}

/* The times the daemon's log says it left a php.ini variable out. */
static int ini_warnings(void)
{
    char *text = test_read_file(e2e.log, NULL);
    int n = 0;

    for (const char *p = text; p != NULL;) {
        p = strstr(p, "PHP_VALUE / PHP_ADMIN_VALUE of a request not sent");
        n += p != NULL;
        p = p != NULL ? p + 1 : NULL;
    }
    free(text);
    return n;
}

static void test_php_ini(void)
{
    static char out[65536];

    /* php-cgi: neither reaches $_SERVER, by nginx or by the socket. */
    CU_ASSERT_FATAL(start_php(false, NULL) == 0);
    CU_ASSERT_EQUAL(php_http("/env.php", out, sizeof(out)), 200);
    CU_ASSERT(php_has(out, "SCRIPT_FILENAME", true));
    CU_ASSERT(php_has(out, "PHP_VALUE", false));
    CU_ASSERT(php_has(out, "PHP_ADMIN_VALUE", false));
    CU_ASSERT_EQUAL(php_raw("env.php", out, sizeof(out)), 200);
    CU_ASSERT(php_has(out, "REMOTE_ADDR", true));
    CU_ASSERT(php_has(out, "PHP_VALUE", false));
    CU_ASSERT(php_has(out, "PHP_ADMIN_VALUE", false));
    CU_ASSERT_EQUAL(ini_warnings(), 1);
    e2e_stop();

    /* php-fpm: the application runs, the files named do not. */
    CU_ASSERT_FATAL(start_php(true, NULL) == 0);
    CU_ASSERT_EQUAL(php_http("/index.php", out, sizeof(out)), 200);
    CU_ASSERT(strncmp(out, "ok index", 8) == 0);
    CU_ASSERT_EQUAL(php_raw("index.php", out, sizeof(out)), 200);
    CU_ASSERT(strstr(out, "ok index") != NULL);
    CU_ASSERT_FALSE(exists("pwned-php"));
    e2e_stop();

    /* Named in passParams, PHP_VALUE goes on and php-fpm runs it;
     * PHP_ADMIN_VALUE, not named, still does not. */
    CU_ASSERT_FATAL(start_php(true, "PHP_VALUE") == 0);
    CU_ASSERT_EQUAL(php_http("/index.php", out, sizeof(out)), 200);
    CU_ASSERT(strncmp(out, "ok index", 8) == 0);
    CU_ASSERT(trace_is("prepend\n"));
    CU_ASSERT_EQUAL(php_http("/env.php", out, sizeof(out)), 200);
    CU_ASSERT(php_has(out, "PHP_VALUE", true));
    CU_ASSERT(php_has(out, "PHP_ADMIN_VALUE", false));
}

int abuse_add_env_tests(CU_pSuite s)
{
    return CU_add_test(s, "CGI environment: only CGI/1.1, headers, passEnv",
                       test_cgi_env) == NULL ||
                   CU_add_test(s,
                               "PHP: PHP_VALUE only when passParams names it",
                               test_php_ini) == NULL
               ? -1
               : 0;
}
