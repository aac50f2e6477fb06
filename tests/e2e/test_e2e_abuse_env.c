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

int abuse_add_env_tests(CU_pSuite s)
{
    return CU_add_test(s, "CGI environment: only CGI/1.1, headers, passEnv",
                       test_cgi_env) == NULL
               ? -1
               : 0;
}
