/*
 * test_cgi.c - suite "cgi": the CGI spawner (middleware/forward/cgi.c,
 * cgi_spawn.c) and mw_error_respond() (error_page.c), with real /bin/sh
 * scripts written into a temp dir and in-memory requests (fakereq.h).
 *
 * Here: headers passed through; the environment (CGI/1.1 variables,
 * SCRIPT_FILENAME, httpoxy, bad names, cwd, CONTENT_LENGTH made to match
 * stdin, nothing but CGI/1.1 variables, headers and passEnv); 2 MiB echoed
 * through cat in small chunks; a script that writes 1 MiB before reading its
 * stdin and one that never reads it (no deadlock); a body read from a pollable
 * descriptor fed slowly by a thread; 502 for no output, a malformed or missing
 * header block or a program that cannot be executed; stderr lines in the log;
 * 403/404 refusals (../, symlink escape, sibling prefix, missing, not
 * executable, a directory) with no process started; the fixed program mode;
 * body read errors; 413; out-of-memory; the error response.  Timeouts, zombies,
 * threads and killing are in test_cgi_proc.c.
 *
 * Length.  One suite's cases, each a short script and a request, sharing
 * the script-writing helpers at the top; what runs processes for long
 * (timeouts, zombies, threads, kills) is already apart in test_cgi_proc.c.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "clock.h"
#include "log/log.h"
#include "cgi_test.h"
#include "suites.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"

/* ---- helpers (cgi_test.h) ------------------------------------------------ */

char *cgit_tmp;
char cgit_root[4096];
char cgit_marker[4096];

/* Whether valgrind runs us. */
bool cgit_under_valgrind(void)
{
    const char *p = getenv("LD_PRELOAD");

    return p != NULL && strstr(p, "vgpreload") != NULL;
}

const char *cgit_script_in(char path[CGIT_PATH_MAX], const char *dir,
                           const char *name, const char *body, mode_t mode)
{
    char text[8192];

    CU_ASSERT_FATAL(snprintf(path, CGIT_PATH_MAX, "%s/%s", dir, name) <
                    CGIT_PATH_MAX);
    FMT(text, "#!/bin/sh\n%s", body);
    CU_ASSERT_FATAL(test_write_file(path, text, strlen(text)) == 0);
    CU_ASSERT_FATAL(chmod(path, mode) == 0);
    return path;
}

const char *cgit_script(char path[CGIT_PATH_MAX], const char *name,
                        const char *body)
{
    return cgit_script_in(path, cgit_root, name, body, 0755);
}

/* Runs path with vars and body under the root. */
suspect_rc_t cgit_run_vars(const char *path, const char *const *vars,
                           const char *body, size_t len, unsigned timeout,
                           fakereq_t *r, mw_fwd_result_t *res)
{
    char sf[4200];
    const char *all[FAKEREQ_MAX_PARAMS + 1];
    mw_cgi_opts_t o = {cgit_root, NULL, timeout, NULL};
    size_t n = 0;

    FMT(sf, "SCRIPT_FILENAME=%s", path);
    all[n++] = sf;
    for (; vars != NULL && vars[n - 1] != NULL; n++) {
        all[n] = vars[n - 1];
    }
    all[n] = NULL;
    fakereq_init(r, all, body, len);
    return mw_cgi_run(&o, &r->req, res, NULL);
}

/* Runs path with nothing else. */
suspect_rc_t cgit_run(const char *path, fakereq_t *r, mw_fwd_result_t *res)
{
    return cgit_run_vars(path, NULL, NULL, 0, 5000, r, res);
}

/* The body of CGI output, or "". */
const char *cgit_body_of(const fakereq_t *r)
{
    const char *b = r->out != NULL ? strstr(r->out, "\r\n\r\n") : NULL;

    return b != NULL ? b + 4 : "";
}

/* Whether the marker exists (then removes it). */
bool cgit_ran(void)
{
    bool yes = access(cgit_marker, F_OK) == 0;

    unlink(cgit_marker);
    return yes;
}

/* n pseudo-random bytes (malloc'ed). */
char *cgit_make_body(size_t n)
{
    char *b = malloc(n);
    unsigned x = 12345;

    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        b[i] = (char)(x >> 16);
    }
    return b;
}

static void test_hello(void)
{
    char spath[CGIT_PATH_MAX];
    fakereq_t r;
    mw_fwd_result_t res;
    const char *p = cgit_script(spath, "hello.cgi",
                                "printf 'Status: 201 Created\\r\\n"
                                "X-Test: yes\\r\\n"
                                "Content-Type: text/plain\\r\\n"
                                "\\r\\nhello\\n'\n");

    CU_ASSERT_EQUAL(cgit_run(p, &r, &res), SUSPECT_OK);
    CU_ASSERT_EQUAL(res.status, 0);
    CU_ASSERT_FALSE(res.timed_out);
    CU_ASSERT_TRUE(WIFEXITED(res.exit_status) &&
                   WEXITSTATUS(res.exit_status) == 0);
    CU_ASSERT_STRING_EQUAL(r.out, "Status: 201 Created\r\nX-Test: yes\r\n"
                                  "Content-Type: text/plain\r\n\r\nhello\n");
    fakereq_free(&r);

    /* bare LF line ends, a folded line, a blank line in the body */
    p = cgit_script(spath, "lf.cgi",
                    "printf 'X-Long: a\\n\\tb\\nLocation: /x\\n\\n"
                    "one\\n\\ntwo'\n");
    CU_ASSERT_EQUAL(cgit_run(p, &r, &res), SUSPECT_OK);
    CU_ASSERT_EQUAL(res.status, 0);
    CU_ASSERT_STRING_EQUAL(r.out, "X-Long: a\n\tb\nLocation: /x\n\none\n\ntwo");
    fakereq_free(&r);
}

static void test_env(void)
{
    char spath[CGIT_PATH_MAX];
    static const char *const vars[] = {"REQUEST_METHOD=POST",
                                       "QUERY_STRING=a=1&b=2",
                                       "HTTP_PROXY=evil:1",
                                       "HTTP_X_SPACE=two  words",
                                       "=empty",
                                       NULL};
    static const char *const empty_cl[] = {"CONTENT_LENGTH=", NULL};
    char want[4200], sub[4200];
    fakereq_t r;
    mw_fwd_result_t res;
    const char *p;

    FMT(sub, "%s/sub", cgit_root);
    mkdir(sub, 0755);
    p = cgit_script_in(spath, sub, "env.cgi",
                       HDR "env\necho \"CWD=$(pwd)\"\n"
                           "echo \"STDIN=$(cat)\"\n",
                       0755);
    CU_ASSERT_EQUAL(cgit_run_vars(p, vars, "abc", 3, 5000, &r, &res),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(res.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "\nGATEWAY_INTERFACE=CGI/1.1\n"));
    FMT(want, "\nSCRIPT_FILENAME=%s\n", p);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, want));
    FMT(want, "\nCWD=%s\n", sub);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, want));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "\nREQUEST_METHOD=POST\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "\nQUERY_STRING=a=1&b=2\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "\nHTTP_X_SPACE=two  words\n"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(r.out, "\nPATH=/usr/local/bin:/usr/bin:/bin"));
    CU_ASSERT_PTR_NULL(strstr(r.out, "HTTP_PROXY"));
    CU_ASSERT_PTR_NULL(strstr(r.out, "empty"));
    /* no CONTENT_LENGTH in the request: the body is measured */
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "\nCONTENT_LENGTH=3\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "\nSTDIN=abc\n"));
    fakereq_free(&r);

    /* an empty CONTENT_LENGTH and no body: no CONTENT_LENGTH at all */
    CU_ASSERT_EQUAL(cgit_run_vars(p, empty_cl, NULL, 0, 5000, &r, &res),
                    SUSPECT_OK);
    CU_ASSERT_PTR_NULL(strstr(r.out, "CONTENT_LENGTH"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "\nSTDIN=\n"));
    fakereq_free(&r);
}

/* A name holding '=' (or NUL) never reaches the environment. */
static void test_env_bad_names(void)
{
    char spath[CGIT_PATH_MAX];
    const char *p = cgit_script(spath, "env2.cgi", HDR "env\n");
    char sf[4200];
    mw_cgi_opts_t o = {cgit_root, NULL, 5000, NULL};
    fakereq_t r;
    mw_fwd_result_t res;
    char nul_name[] = "NXUL=v";
    const char *vars[] = {sf, "X=Y=z", nul_name, "CONTENT_LENGTH=2", NULL};

    FMT(sf, "SCRIPT_FILENAME=%s", p);
    fakereq_init(&r, vars, "hi++", 4);
    nul_name[1] = '\0';
    r.params[1].name_len = 3; /* "X=Y" */
    r.params[1].value = "z";
    r.params[1].value_len = 1;
    r.params[2].name_len = 4; /* "N\0UL" */
    CU_ASSERT_EQUAL(mw_cgi_run(&o, &r.req, &res, NULL), SUSPECT_OK);
    CU_ASSERT_PTR_NULL(strstr(r.out, "\nX="));
    CU_ASSERT_PTR_NULL(strstr(r.out, "\nN="));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "\nCONTENT_LENGTH=2\n"));
    /* only CONTENT_LENGTH bytes were taken from the body */
    CU_ASSERT_EQUAL(r.body_off, 2);
    fakereq_free(&r);
}

/* Only CGI/1.1 variables, request headers (HTTP_PROXY and malformed
 * names not) and what passEnv names reach the program: nothing the
 * loader or an interpreter reads. */
static void test_env_allowed(void)
{
    char spath[CGIT_PATH_MAX];
    const char *p = cgit_script(spath, "env3.cgi", HDR "env\n");
    char sf[4200];
    mw_cgi_opts_t o = {cgit_root, NULL, 5000, "SSL_CLIENT_S_DN GEOIP_*"};
    static const char *const gone[] = {
        "LD_PRELOAD",    "LD_LIBRARY_PATH", "PERL5OPT",
        "PERL5DB",       "BASH_ENV",        "ENV",
        "PYTHONPATH",    "HTTP_PROXY",      "HTTP_x-y",
        "HTTP_",         "GEOIPX",          "SSL_CLIENT",
        "PATH=/tmp/evil"};
    static const char *const kept[] = {"AUTH_TYPE=Basic",
                                       "CONTENT_TYPE=text/plain",
                                       "PATH_INFO=/x",
                                       "PATH_TRANSLATED=/srv/x",
                                       "REMOTE_HOST=h",
                                       "REMOTE_IDENT=i",
                                       "REMOTE_USER=u",
                                       "SERVER_SOFTWARE=nginx",
                                       "REQUEST_URI=/env3.cgi/x?a",
                                       "DOCUMENT_URI=/env3.cgi/x",
                                       "HTTPS=on",
                                       "REDIRECT_STATUS=200",
                                       "HTTP_X_FORWARDED_FOR=192.0.2.1",
                                       "HTTP_COOKIE=a=b",
                                       "SSL_CLIENT_S_DN=CN=x",
                                       "GEOIP_COUNTRY=NZ",
                                       "GATEWAY_INTERFACE=CGI/1.1",
                                       "PATH=/usr/local/bin:/usr/bin:/bin"};
    const char *vars[] = {sf,
                          "LD_PRELOAD=/tmp/evil.so",
                          "LD_LIBRARY_PATH=/tmp",
                          "PERL5OPT=-MEvil",
                          "PERL5DB=BEGIN{}",
                          "BASH_ENV=/tmp/evil",
                          "ENV=/tmp/evil",
                          "PYTHONPATH=/tmp",
                          "HTTP_PROXY=http://evil:1/",
                          "HTTP_x-y=1",
                          "HTTP_=1",
                          "GEOIPX=1",
                          "SSL_CLIENT=1",
                          "PATH=/tmp/evil",
                          "AUTH_TYPE=Basic",
                          "CONTENT_TYPE=text/plain",
                          "PATH_INFO=/x",
                          "PATH_TRANSLATED=/srv/x",
                          "REMOTE_HOST=h",
                          "REMOTE_IDENT=i",
                          "REMOTE_USER=u",
                          "SERVER_SOFTWARE=nginx",
                          "REQUEST_URI=/env3.cgi/x?a",
                          "DOCUMENT_URI=/env3.cgi/x",
                          "HTTPS=on",
                          "REDIRECT_STATUS=200",
                          "HTTP_X_FORWARDED_FOR=192.0.2.1",
                          "HTTP_COOKIE=a=b",
                          "SSL_CLIENT_S_DN=CN=x",
                          "GEOIP_COUNTRY=NZ",
                          NULL};
    char want[128];
    fakereq_t r;
    mw_fwd_result_t res;

    FMT(sf, "SCRIPT_FILENAME=%s", p);
    fakereq_init(&r, vars, NULL, 0);
    CU_ASSERT_EQUAL(mw_cgi_run(&o, &r.req, &res, NULL), SUSPECT_OK);
    for (size_t i = 0; i < sizeof(gone) / sizeof(gone[0]); i++) {
        FMT(want, "\n%s%s", gone[i], strchr(gone[i], '=') ? "\n" : "=");
        if (strstr(r.out, want) != NULL) {
            fprintf(stderr, "\n  %s reached the program\n", gone[i]);
            CU_FAIL("a variable that must not reach the program");
        }
    }
    for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
        FMT(want, "\n%s\n", kept[i]);
        if (strstr(r.out, want) == NULL) {
            fprintf(stderr, "\n  %s did not reach the program\n", kept[i]);
            CU_FAIL("a CGI variable, header or passEnv variable missing");
        }
    }
    fakereq_free(&r);
}

static void test_echo_2mib(void)
{
    char spath[CGIT_PATH_MAX];
    size_t n = 2u << 20;
    char *body = cgit_make_body(n);
    const char *p = cgit_script(spath, "cat.cgi", HDR "exec cat\n");
    char sf[4200];
    const char *v[] = {sf, "CONTENT_LENGTH=2097152", NULL};
    mw_cgi_opts_t o = {cgit_root, NULL, 10000, NULL};
    fakereq_t r;
    mw_fwd_result_t res;
    const char *b;

    /* the body is read in 7001-byte chunks */
    FMT(sf, "SCRIPT_FILENAME=%s", p);
    fakereq_init(&r, v, body, n);
    r.chunk = 7001;
    CU_ASSERT_EQUAL(mw_cgi_run(&o, &r.req, &res, NULL), SUSPECT_OK);
    CU_ASSERT_EQUAL(res.status, 0);
    b = cgit_body_of(&r);
    CU_ASSERT_EQUAL(r.out_len - (size_t)(b - r.out), n);
    CU_ASSERT_TRUE(memcmp(b, body, n) == 0);
    CU_ASSERT_TRUE(r.reads > 100);
    fakereq_free(&r);
    free(body);
}

static void test_write_before_read(void)
{
    char spath[CGIT_PATH_MAX];
    size_t n = 1u << 20;
    char *body = cgit_make_body(n);
    const char *p = cgit_script(spath, "first.cgi",
                                HDR "head -c 1048576 /dev/zero\n"
                                    "wc -c\n");
    static const char *const vars[] = {"CONTENT_LENGTH=1048576", NULL};
    fakereq_t r;
    mw_fwd_result_t res;

    CU_ASSERT_EQUAL(cgit_run_vars(p, vars, body, n, 10000, &r, &res),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(res.status, 0);
    CU_ASSERT_FALSE(res.timed_out);
    CU_ASSERT_EQUAL(strlen(cgit_body_of(&r)), 0); /* NUL bytes first */
    CU_ASSERT_TRUE(r.out_len > n);
    CU_ASSERT_STRING_EQUAL(r.out + r.out_len - 8, "1048576\n");
    fakereq_free(&r);
    free(body);
}

static void test_never_reads(void)
{
    char spath[CGIT_PATH_MAX];
    size_t n = 4u << 20;
    char *body = cgit_make_body(n);
    const char *p = cgit_script(spath, "deaf.cgi", HDR "echo ignored\n");
    static const char *const vars[] = {"CONTENT_LENGTH=4194304", NULL};
    fakereq_t r;
    mw_fwd_result_t res;
    int64_t t0 = mono_ms();

    CU_ASSERT_EQUAL(cgit_run_vars(p, vars, body, n, 5000, &r, &res),
                    SUSPECT_OK);
    CU_ASSERT_TRUE(mono_ms() - t0 < test_scale_ms(3000));
    CU_ASSERT_EQUAL(res.status, 0);
    CU_ASSERT_FALSE(res.timed_out);
    CU_ASSERT_STRING_EQUAL(cgit_body_of(&r), "ignored\n");
    CU_ASSERT_TRUE(r.body_off > 0); /* fed (and dropped) while it ran */
    fakereq_free(&r);
    free(body);
}

/* Room for what run_logged() collects. */
#define LOG_MAX 65536

/* Runs path with fd 2 sent to a pipe; what was logged, in log (the
 * caller's). */
static const char *run_logged(char log[LOG_MAX], const char *path, fakereq_t *r,
                              mw_fwd_result_t *res)
{
    int p[2], saved = dup(STDERR_FILENO);
    ssize_t n;

    CU_ASSERT_FATAL(saved >= 0 && pipe(p) == 0);
    dup2(p[1], STDERR_FILENO);
    close(p[1]);
    mw_log_init("suspect", MW_LOG_WARNING);
    CU_ASSERT_EQUAL(cgit_run(path, r, res), SUSPECT_OK);
    mw_log_init("suspect", MW_LOG_ERROR);
    dup2(saved, STDERR_FILENO);
    close(saved);
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    n = read(p[0], log, LOG_MAX - 1);
    close(p[0]);
    log[n > 0 ? n : 0] = '\0';
    return log;
}

static void test_bad_gateway(void)
{
    char logbuf[LOG_MAX];
    char spath[CGIT_PATH_MAX];
    static const struct {
        const char *name, *body;
        int exit;
    } cases[] = {
        {"silent.cgi", "exit 3\n", 3},
        {"nohdr.cgi", "echo hello\n", -1},
        {"long.cgi", "head -c 10000 /dev/zero | tr '\\0' x\n", -1},
        {"nl.cgi", "printf 'Status: 200\\r\\nX: y\\r\\n'\n", 0},
        {"text.cgi", "printf 'hello\\n\\nbody\\n'\n", -1},
        {"text2.cgi", "printf 'X: y\\r\\nno colon\\r\\n\\r\\nbody'\n", -1},
    };
    char path[4200];
    const char *log;
    fakereq_t r;
    mw_fwd_result_t res;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const char *p = cgit_script(spath, cases[i].name, cases[i].body);

        CU_ASSERT_EQUAL(cgit_run(p, &r, &res), SUSPECT_OK);
        CU_ASSERT_EQUAL(res.status, 502);
        CU_ASSERT_EQUAL(r.out_len, 0);
        CU_ASSERT_FALSE(res.timed_out);
        if (cases[i].exit >= 0) {
            CU_ASSERT_TRUE(WIFEXITED(res.exit_status) &&
                           WEXITSTATUS(res.exit_status) == cases[i].exit);
        }
        fakereq_free(&r);
    }
    /* an interpreter that does not exist: execve fails, 127 */
    FMT(path, "%s/noint.cgi", cgit_root);
    CU_ASSERT_FATAL(test_write_file(path, "#!/nonexistent/sh\n", 18) == 0);
    chmod(path, 0755);
    log = run_logged(logbuf, path, &r, &res);
    CU_ASSERT_EQUAL(res.status, 502);
    if (!cgit_under_valgrind()) { /* valgrind kills a child whose exec fails */
        CU_ASSERT_PTR_NOT_NULL(strstr(log, "cannot execute: No such file"));
        CU_ASSERT_TRUE(WIFEXITED(res.exit_status) &&
                       WEXITSTATUS(res.exit_status) == 127);
    }
    fakereq_free(&r);
}

static void test_stderr_logged(void)
{
    char logbuf[LOG_MAX];
    char spath[CGIT_PATH_MAX];
    const char *p = cgit_script(spath, "err.cgi",
                                "echo 'oops one' >&2\necho two >&2\n"
                                "head -c 3000 /dev/zero | tr '\\0' y >&2\n"
                                "echo >&2\nprintf last >&2\n" HDR "echo ok\n");
    char want[4200];
    fakereq_t r;
    mw_fwd_result_t res;
    const char *log = run_logged(logbuf, p, &r, &res);

    CU_ASSERT_EQUAL(res.status, 0);
    CU_ASSERT_STRING_EQUAL(cgit_body_of(&r), "ok\n");
    FMT(want, "warning: cgi %s: oops one\n", p);
    CU_ASSERT_PTR_NOT_NULL(strstr(log, want));
    FMT(want, "cgi %s: two\n", p);
    CU_ASSERT_PTR_NOT_NULL(strstr(log, want));
    CU_ASSERT_PTR_NOT_NULL(strstr(log, "yyyy [cut]\n"));
    CU_ASSERT_PTR_NULL(
        strstr(log, "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"
                    "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"
                    "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"
                    "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"
                    "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"
                    "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"
                    "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"
                    "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"
                    "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"
                    "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"
                    "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"
                    "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"));
    FMT(want, "cgi %s: last\n", p);
    CU_ASSERT_PTR_NOT_NULL(strstr(log, want));
    fakereq_free(&r);
}

/* Expects status for path under opts, and that the script did not run. */
static void refused(const mw_cgi_opts_t *o, const char *path, int status)
{
    char sf[4200];
    const char *vars[] = {sf, NULL};
    fakereq_t r;
    mw_fwd_result_t res;

    FMT(sf, "SCRIPT_FILENAME=%s", path);
    fakereq_init(&r, vars, NULL, 0);
    CU_ASSERT_EQUAL(mw_cgi_run(o, &r.req, &res, NULL), SUSPECT_OK);
    CU_ASSERT_EQUAL(res.status, status);
    CU_ASSERT_EQUAL(res.exit_status, -1);
    CU_ASSERT_EQUAL(r.out_len, 0);
    CU_ASSERT_FALSE(cgit_ran());
    fakereq_free(&r);
}

static void test_refusals(void)
{
    char spath[CGIT_PATH_MAX];
    mw_cgi_opts_t o = {cgit_root, NULL, 5000, NULL};
    char body[4400], path[4200], link[4200], dir[4200];
    char dr[4200];
    const char *vars[] = {dr, "SCRIPT_NAME=/mark.cgi", NULL};
    fakereq_t r;
    mw_fwd_result_t res;
    const char *out;

    FMT(body, "touch %s\n" HDR, cgit_marker);
    out = cgit_script_in(spath, cgit_tmp, "outside.cgi", body, 0755);
    FMT(link, "%s/link.cgi", cgit_root);
    CU_ASSERT_FATAL(symlink(out, link) == 0 || errno == EEXIST);
    FMT(path, "%s/../outside.cgi", cgit_root);
    refused(&o, path, 403);
    refused(&o, link, 403);
    FMT(dir, "%sx", cgit_root); /* a sibling sharing a prefix */
    mkdir(dir, 0755);
    cgit_script_in(spath, dir, "a.cgi", body, 0755);
    FMT(path, "%s/../rootx/a.cgi", cgit_root);
    refused(&o, path, 403);
    FMT(path, "%s/nope.cgi", cgit_root);
    refused(&o, path, 404);
    refused(&o, cgit_script_in(spath, cgit_root, "noexec.cgi", body, 0644),
            403);
    refused(&o, cgit_root, 403);
    FMT(path, "%s/sub", cgit_root);
    mkdir(path, 0755);
    refused(&o, path, 403);
    o.root = NULL;
    refused(&o, link, 500);

    /* DOCUMENT_ROOT + SCRIPT_NAME, inside: runs (the cgit_marker works) */
    o.root = cgit_root;
    cgit_script_in(spath, cgit_root, "mark.cgi", body, 0755);
    FMT(dr, "DOCUMENT_ROOT=%s", cgit_root);
    fakereq_init(&r, vars, NULL, 0);
    CU_ASSERT_EQUAL(mw_cgi_run(&o, &r.req, &res, NULL), SUSPECT_OK);
    CU_ASSERT_EQUAL(res.status, 0);
    CU_ASSERT_TRUE(cgit_ran());
    fakereq_free(&r);
    fakereq_init(&r, vars + 1, NULL, 0); /* nothing names a script */
    CU_ASSERT_EQUAL(mw_cgi_run(&o, &r.req, &res, NULL), SUSPECT_OK);
    CU_ASSERT_EQUAL(res.status, 404);
    fakereq_free(&r);
}

static void test_program_mode(void)
{
    char spath[CGIT_PATH_MAX];
    const char *prog = cgit_script_in(spath, cgit_tmp, "prog.cgi",
                                      HDR "echo \"$SCRIPT_FILENAME\"\n", 0755);
    char want[4200], noexec[4200];
    mw_cgi_opts_t o = {NULL, want, 5000, NULL};
    static const char *const vars[] = {"SCRIPT_FILENAME=/etc/passwd", NULL};
    fakereq_t r;
    mw_fwd_result_t res;

    FMT(want, "%s", prog);
    fakereq_init(&r, vars, NULL, 0);
    CU_ASSERT_EQUAL(mw_cgi_run(&o, &r.req, &res, NULL), SUSPECT_OK);
    CU_ASSERT_EQUAL(res.status, 0);
    CU_ASSERT_EQUAL(strncmp(cgit_body_of(&r), want, strlen(want)), 0);
    CU_ASSERT_EQUAL(cgit_body_of(&r)[strlen(want)], '\n');
    fakereq_free(&r);
    FMT(noexec, "%s/missing.cgi", cgit_tmp);
    o.program = noexec;
    refused(&o, "/ignored", 404);
    o.program =
        cgit_script_in(spath, cgit_tmp, "prog-noexec.cgi", "echo\n", 0644);
    refused(&o, "/ignored", 403);
}

/* Counts our children (all, and zombies) from /proc. */
static void test_body_errors(void)
{
    char spath[CGIT_PATH_MAX];
    char body[4400];
    char sf[4200];
    const char *with_len[] = {sf, "CONTENT_LENGTH=10", NULL};
    const char *without[] = {sf, NULL};
    mw_cgi_opts_t o = {cgit_root, NULL, 5000, NULL};
    fakereq_t r;
    mw_fwd_result_t res;
    int64_t t0;

    FMT(body, "touch %s\ncat >/dev/null\n" HDR, cgit_marker);
    FMT(sf, "SCRIPT_FILENAME=%s", cgit_script(spath, "eat.cgi", body));
    /* the length is known: the program starts, then dies with the body */
    fakereq_init(&r, with_len, "0123456789", 10);
    r.read_error = EIO;
    t0 = mono_ms();
    CU_ASSERT_EQUAL(mw_cgi_run(&o, &r.req, &res, NULL), SUSPECT_OK);
    CU_ASSERT_TRUE(mono_ms() - t0 < test_scale_ms(3000));
    CU_ASSERT_EQUAL(res.status, 400);
    CU_ASSERT_TRUE(WIFSIGNALED(res.exit_status));
    CU_ASSERT_EQUAL(r.out_len, 0);
    fakereq_free(&r);
    cgit_ran();
    /* no length: the body is read first, and no program starts */
    fakereq_init(&r, without, "0123456789", 10);
    r.read_error = EIO;
    CU_ASSERT_EQUAL(mw_cgi_run(&o, &r.req, &res, NULL), SUSPECT_OK);
    CU_ASSERT_EQUAL(res.status, 400);
    CU_ASSERT_EQUAL(res.exit_status, -1);
    CU_ASSERT_FALSE(cgit_ran());
    fakereq_free(&r);
}

/* A request whose body comes from a non-blocking pipe that can be
 * polled, fed slowly by a thread. */
typedef struct pipereq {
    fakereq_t f;
    mw_req_ops_t ops;
    int rfd, wfd;
    const char *data;
    size_t len;
} pipereq_t;

static ssize_t pipe_read(mw_req_t *req, void *buf, size_t n, bool wait)
{
    pipereq_t *p = (pipereq_t *)req;

    for (;;) {
        ssize_t k = read(p->rfd, buf, n);
        struct pollfd pf = {p->rfd, POLLIN, 0};

        if (k >= 0) {
            return k;
        }
        if (errno != EAGAIN && errno != EINTR) {
            return -errno;
        }
        if (errno == EAGAIN && !wait) {
            return -EAGAIN;
        }
        poll(&pf, 1, -1);
    }
}

static int pipe_read_fd(mw_req_t *req)
{
    return ((pipereq_t *)req)->rfd;
}

static void *pipe_feeder(void *arg)
{
    pipereq_t *p = arg;
    size_t off = 0, step = 8192;

    while (off < p->len) {
        size_t n = p->len - off < step ? p->len - off : step;
        ssize_t k = write(p->wfd, p->data + off, n);

        if (k <= 0) {
            break;
        }
        off += (size_t)k;
        usleep(1000);
    }
    close(p->wfd);
    return NULL;
}

/* Runs cat.cgi with a body of n bytes fed through a pipe. */
static void pipe_echo(const char *clen, size_t n)
{
    char spath[CGIT_PATH_MAX];
    char sf[4200];
    const char *vars[] = {sf, clen, NULL};
    char *body = cgit_make_body(n);
    mw_cgi_opts_t o = {cgit_root, NULL, 10000, NULL};
    mw_fwd_result_t res;
    pipereq_t p;
    pthread_t t;
    int fds[2];
    const char *b;

    FMT(sf, "SCRIPT_FILENAME=%s",
        cgit_script(spath, "cat.cgi", HDR "exec cat\n"));
    CU_ASSERT_FATAL(pipe(fds) == 0);
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    fakereq_init(&p.f, vars, NULL, 0);
    p.ops = *p.f.req.ops;
    p.ops.read = pipe_read;
    p.ops.read_fd = pipe_read_fd;
    p.f.req.ops = &p.ops;
    p.rfd = fds[0];
    p.wfd = fds[1];
    p.data = body;
    p.len = n;
    CU_ASSERT_FATAL(pthread_create(&t, NULL, pipe_feeder, &p) == 0);
    CU_ASSERT_EQUAL(mw_cgi_run(&o, &p.f.req, &res, NULL), SUSPECT_OK);
    pthread_join(t, NULL);
    close(fds[0]);
    CU_ASSERT_EQUAL(res.status, 0);
    b = cgit_body_of(&p.f);
    CU_ASSERT_EQUAL(p.f.out_len - (size_t)(b - p.f.out), n);
    CU_ASSERT_TRUE(p.f.out_len >= n && memcmp(b, body, n) == 0);
    fakereq_free(&p.f);
    free(body);
}

static void test_polled_body(void)
{
    pipe_echo("CONTENT_LENGTH=262144", 262144);
    pipe_echo("HTTP_X=no length", 100000);
}

static void test_body_too_large(void)
{
    char spath[CGIT_PATH_MAX];
    size_t n = (16u << 20) + 1;
    char *big = calloc(1, n);
    char body[4400];
    char sf[4200];
    const char *vars[] = {sf, NULL};
    mw_cgi_opts_t o = {cgit_root, NULL, 5000, NULL};
    fakereq_t r;
    mw_fwd_result_t res;

    FMT(body, "touch %s\n" HDR, cgit_marker);
    FMT(sf, "SCRIPT_FILENAME=%s", cgit_script(spath, "big.cgi", body));
    fakereq_init(&r, vars, big, n);
    CU_ASSERT_EQUAL(mw_cgi_run(&o, &r.req, &res, NULL), SUSPECT_OK);
    CU_ASSERT_EQUAL(res.status, 413);
    CU_ASSERT_FALSE(cgit_ran());
    fakereq_free(&r);
    /* exactly the limit is fine */
    fakereq_init(&r, vars, big, n - 1);
    CU_ASSERT_EQUAL(mw_cgi_run(&o, &r.req, &res, NULL), SUSPECT_OK);
    CU_ASSERT_EQUAL(res.status, 0);
    CU_ASSERT_TRUE(cgit_ran());
    fakereq_free(&r);
    free(big);
}

static void test_out_of_memory(void)
{
    char spath[CGIT_PATH_MAX];
    const char *p = cgit_script(spath, "oom.cgi", HDR "echo hi\n");

    for (long n = 1; n <= 2; n++) {
        fakereq_t r;
        mw_fwd_result_t res;
        suspect_rc_t rc;

        suspect_test_fail_alloc_after(n);
        rc = cgit_run(p, &r, &res);
        suspect_test_fail_alloc_after(-1);
        CU_ASSERT_EQUAL(rc, SUSPECT_E_NOMEM);
        CU_ASSERT_EQUAL(res.status, 500);
        CU_ASSERT_EQUAL(r.out_len, 0);
        fakereq_free(&r);
    }
}

static void test_error_respond(void)
{
    fakereq_t r;

    fakereq_init(&r, NULL, NULL, 0);
    CU_ASSERT_EQUAL(mw_error_respond(&r.req, 404), 0);
    CU_ASSERT_STRING_EQUAL(r.out, "Status: 404 Not Found\r\n"
                                  "Content-Type: text/plain; charset=utf-8\r\n"
                                  "Cache-Control: no-store\r\n"
                                  "\r\n"
                                  "404 Not Found\n");
    CU_ASSERT_TRUE(r.req.output_started);
    fakereq_free(&r);
    fakereq_init(&r, NULL, NULL, 0);
    CU_ASSERT_EQUAL(mw_error_respond(&r.req, 42), 0);
    CU_ASSERT_EQUAL(strncmp(r.out, "Status: 500 Internal Server Error\r\n", 35),
                    0);
    fakereq_free(&r);
    fakereq_init(&r, NULL, NULL, 0);
    CU_ASSERT_EQUAL(mw_error_respond(&r.req, 504), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "\r\n\r\n504 Gateway Timeout\n"));
    fakereq_free(&r);
}

static int suite_init(void)
{
    cgit_tmp = test_mkdtemp();
    if (cgit_tmp == NULL) {
        return -1;
    }
    if (strlen(cgit_tmp) > 1000) {
        return -1;
    }
    snprintf(cgit_root, sizeof(cgit_root), "%.1000s/root", cgit_tmp);
    snprintf(cgit_marker, sizeof(cgit_marker), "%.1000s/marker", cgit_tmp);
    /* expected warnings (timeouts, 502s) stay out of the test output */
    mw_log_init("suspect", MW_LOG_ERROR);
    return mkdir(cgit_root, 0755);
}

static int suite_clean(void)
{
    mw_log_init("suspect", MW_LOG_NOTICE);
    if (cgit_tmp != NULL) {
        test_rmtree(cgit_tmp);
        free(cgit_tmp);
        cgit_tmp = NULL;
    }
    return 0;
}

int register_cgi_suite(void)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        {"hello: status and headers pass", test_hello},
        {"environment", test_env},
        {"environment: bad names, CONTENT_LENGTH", test_env_bad_names},
        {"environment: CGI/1.1, headers, passEnv only", test_env_allowed},
        {"2 MiB echoed in chunks", test_echo_2mib},
        {"1 MiB written before stdin is read", test_write_before_read},
        {"stdin never read", test_never_reads},
        {"502: no output, no header block", test_bad_gateway},
        {"stderr goes to the log", test_stderr_logged},
        {"403/404 with no process", test_refusals},
        {"fixed program", test_program_mode},
        {"body read errors", test_body_errors},
        {"body from a polled descriptor", test_polled_body},
        {"413 for a large body of unknown length", test_body_too_large},
        {"out of memory", test_out_of_memory},
        {"error response", test_error_respond},
    };
    CU_pSuite s = CU_add_suite("cgi", suite_init, suite_clean);

    if (s == NULL) {
        return -1;
    }
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return cgit_add_proc_tests(s);
}
