/*
 * test_upstream_fake.c - the FastCGI client against a small FastCGI
 * server run by the test (a thread on a unix socket in a temp dir), for
 * what php-cgi never does on purpose: closing a kept connection before
 * answering (a POST the upstream read whole is never sent twice, a GET or
 * HEAD is, once; a request the upstream did not read whole is sent again
 * once, replaying a buffered body or a streamed one within the window;
 * never a second retry), closing a kept connection after answering (found
 * before use), maxIdle 0 (no pooling), STDOUT in
 * tiny records with padding and management records between them, an
 * END_REQUEST for another request id, bytes that are not FastCGI, an
 * answer before the body was read, and exactly what we send: the
 * BEGIN_REQUEST flags, the PARAMS edits (SCRIPT_FILENAME, REDIRECT_STATUS,
 * CONTENT_LENGTH), which variables go on (CGI/1.1, headers, passParams;
 * never HTTP_PROXY), PARAMS records that each parse on their
 * own, a variable larger than a record, and the empty STDIN; idle pooled
 * connections closed after their timeout.
 *
 * The server is upstream_fakesrv.c.
 */
#include <CUnit/CUnit.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "forward/upstream.h"
#include "helpers/fakereq.h"
#include "upstream_test.h"
#include "helpers/vgwrap.h"

static mw_upstream_t *fake_client_pass(const fake_t *f, const char *script,
                                       const char *pass)
{
    mw_upstream_opts_t o;
    mw_upstream_t *u = NULL;

    memset(&o, 0, sizeof(o));
    o.address = f->addr;
    o.script_filename = script;
    o.pass_params = pass;
    o.timeout_ms = 3000;
    o.max_idle = 16;
    CU_ASSERT_EQUAL_FATAL(mw_upstream_new(&o, &u, NULL), SUSPECT_OK);
    return u;
}

static mw_upstream_t *fake_client(const fake_t *f, const char *script)
{
    return fake_client_pass(f, script, NULL);
}

/* Forwards a request with vars and body; the output stays in r. */
static int forward(mw_upstream_t *u, fakereq_t *r, const char *const *vars,
                   const char *body, size_t len)
{
    mw_fwd_result_t res;

    fakereq_init(r, vars, body, len);
    if (mw_upstream_forward(u, &r->req, &res, NULL) != SUSPECT_OK &&
        res.status == 0) {
        return -1;
    }
    return res.status;
}

static bool has(const fakereq_t *r, const char *s)
{
    return r->out != NULL && strstr(r->out, s) != NULL;
}

/* What the prelude carries: flags, role, edited variables, records. */
static void test_fake_params(void)
{
    static const char *const v1[] = {"SCRIPT_FILENAME=/from/request.php",
                                     "HTTP_PROXY=http://evil:1/",
                                     "REQUEST_METHOD=POST", NULL};
    static const char *const v2[] = {"REDIRECT_STATUS=302",
                                     "CONTENT_LENGTH=", NULL};
    fake_t f;
    mw_upstream_t *u;
    fakereq_t r;

    CU_ASSERT_FATAL(fake_start(&f, F_ECHO) == 0);
    u = fake_client(&f, "/conf/app.php");
    CU_ASSERT_EQUAL(forward(u, &r, v1, "hello", 5), 0);
    CU_ASSERT(has(&r, "\nSCRIPT_FILENAME=/conf/app.php\n"));
    CU_ASSERT(!has(&r, "request.php"));
    CU_ASSERT(!has(&r, "HTTP_PROXY"));
    CU_ASSERT(has(&r, "\nREDIRECT_STATUS=200\n"));
    CU_ASSERT(has(&r, "\nCONTENT_LENGTH=5\n"));
    CU_ASSERT(has(&r, "\nstdin=5\nrecords=1\nstandalone=1\nkeep=1\nrole=1\n"
                      "ids=1\n"));
    fakereq_free(&r);
    /* A REDIRECT_STATUS of the request stays; nginx's empty
     * CONTENT_LENGTH of a GET becomes 0, with an empty STDIN. */
    CU_ASSERT_EQUAL(forward(u, &r, v2, NULL, 0), 0);
    CU_ASSERT(has(&r, "\r\n\r\nREDIRECT_STATUS=302\n"
                      "SCRIPT_FILENAME=/conf/app.php\nCONTENT_LENGTH=0\n"
                      "stdin=0\n"));
    CU_ASSERT(!has(&r, "=200"));
    fakereq_free(&r);
    mw_upstream_free(u);
    fake_stop(&f);
}

/* Whether the echo in r holds the variable "name=" at a line's start. */
static bool has_var(const fakereq_t *r, const char *name)
{
    char line[80];

    snprintf(line, sizeof(line), "\n%s=", name);
    return has(r, line);
}

/* Only CGI/1.1 variables, headers and what passParams names go on:
 * PHP_VALUE would be php.ini (php-fpm), the rest what the application
 * trusts; HTTP_PROXY never, PHP_VALUE and PHP_ADMIN_VALUE only by their
 * full name. */
static void test_fake_params_filtered(void)
{
    static const char *const vars[] = {"REQUEST_METHOD=GET",
                                       "SCRIPT_FILENAME=/srv/app/index.php",
                                       "DOCUMENT_ROOT=/srv/app",
                                       "REQUEST_URI=/index.php?a=1",
                                       "QUERY_STRING=a=1",
                                       "PATH_INFO=/x",
                                       "PATH_TRANSLATED=/srv/app/x",
                                       "HTTPS=on",
                                       "REMOTE_ADDR=192.0.2.1",
                                       "HTTP_HOST=example",
                                       "HTTP_PROXY=http://evil:1/",
                                       "HTTP_x-bad=1",
                                       "PHP_VALUE=auto_prepend_file=/tmp/x",
                                       "PHP_ADMIN_VALUE=allow_url_include=On",
                                       "PHP_AUTH_USER=admin",
                                       "APP_DEBUG=1",
                                       "LD_PRELOAD=/tmp/x.so",
                                       "PATH=/tmp",
                                       "ORIG_SCRIPT_FILENAME=/tmp/x.php",
                                       NULL};
    static const char *const kept[] = {
        "REQUEST_METHOD",  "SCRIPT_FILENAME", "DOCUMENT_ROOT",
        "REQUEST_URI",     "QUERY_STRING",    "PATH_INFO",
        "PATH_TRANSLATED", "HTTPS",           "REMOTE_ADDR",
        "HTTP_HOST",       "REDIRECT_STATUS", "CONTENT_LENGTH"};
    static const char *const dropped[] = {
        "HTTP_PROXY",      "HTTP_x-bad",    "PHP_VALUE",
        "PHP_ADMIN_VALUE", "PHP_AUTH_USER", "APP_DEBUG",
        "LD_PRELOAD",      "PATH",          "ORIG_SCRIPT_FILENAME"};
    fake_t f;
    mw_upstream_t *u;
    fakereq_t r;

    CU_ASSERT_FATAL(fake_start(&f, F_ECHO) == 0);
    u = fake_client(&f, NULL);
    CU_ASSERT_EQUAL(forward(u, &r, vars, NULL, 0), 0);
    for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
        CU_ASSERT(has_var(&r, kept[i]));
    }
    for (size_t i = 0; i < sizeof(dropped) / sizeof(dropped[0]); i++) {
        CU_ASSERT(!has_var(&r, dropped[i]));
    }
    CU_ASSERT(!has(&r, "auto_prepend_file"));
    fakereq_free(&r);
    mw_upstream_free(u);

    /* Named: PHP_VALUE in full, APP_* as a prefix; PHP_* does not take
     * PHP_ADMIN_VALUE with it, and HTTP_PROXY stays out. */
    u = fake_client_pass(&f, NULL, "PHP_VALUE APP_* PHP_* HTTP_PROXY");
    CU_ASSERT_EQUAL(forward(u, &r, vars, NULL, 0), 0);
    CU_ASSERT(has(&r, "\nPHP_VALUE=auto_prepend_file=/tmp/x\n"));
    CU_ASSERT(has(&r, "\nAPP_DEBUG=1\n"));
    CU_ASSERT(has(&r, "\nPHP_AUTH_USER=admin\n"));
    CU_ASSERT(!has_var(&r, "PHP_ADMIN_VALUE"));
    CU_ASSERT(!has_var(&r, "HTTP_PROXY"));
    CU_ASSERT(!has_var(&r, "LD_PRELOAD"));
    fakereq_free(&r);
    mw_upstream_free(u);
    fake_stop(&f);
}

/* 40 variables of 2000 bytes need several PARAMS records, each parsing
 * on its own; a 70000-byte one is split across records. */
static void test_fake_params_records(void)
{
    static char vals[41][2100];
    static char huge[70100];
    const char *vars[44];
    char want[64];
    fake_t f;
    mw_upstream_t *u;
    fakereq_t r;
    int n = 0;

    for (int i = 0; i < 40; i++) {
        int k = snprintf(vals[i], sizeof(vals[i]), "HTTP_X_V%02d=", i);

        memset(vals[i] + k, 'a' + i % 26, 2000);
        vals[i][k + 2000] = '\0';
        vars[n++] = vals[i];
    }
    vars[n] = NULL;
    CU_ASSERT_FATAL(fake_start(&f, F_ECHO) == 0);
    u = fake_client(&f, NULL);
    CU_ASSERT_EQUAL(forward(u, &r, vars, NULL, 0), 0);
    CU_ASSERT(has(&r, "\nstandalone=1\n"));
    CU_ASSERT(has(&r, "\nrecords=2\n"));
    CU_ASSERT(has(&r, "HTTP_X_V00=<2000 a>\n"));
    CU_ASSERT(has(&r, "HTTP_X_V39=<2000 n>\nREDIRECT_STATUS=200\n"));
    fakereq_free(&r);
    snprintf(huge, sizeof(huge), "HTTP_COOKIE=");
    memset(huge + 12, 'c', 70000);
    huge[12 + 70000] = '\0';
    vars[0] = "HTTP_HOST=example";
    vars[1] = huge;
    vars[2] = "HTTP_ACCEPT=*/*";
    vars[3] = NULL;
    CU_ASSERT_EQUAL(forward(u, &r, vars, NULL, 0), 0);
    snprintf(want, sizeof(want), "\nHTTP_COOKIE=<70000 c>\nHTTP_ACCEPT=*/*\n");
    CU_ASSERT(has(&r, want));
    CU_ASSERT(has(&r, "\nrecords=2\nstandalone=0\n"));
    fakereq_free(&r);
    mw_upstream_free(u);
    fake_stop(&f);
}

/* Forwards a request and checks that it failed with 502 before any
 * output, err saying the connection closed. */
static void expect_502(mw_upstream_t *u, const char *const *vars,
                       const char *body, size_t len)
{
    fakereq_t r;
    mw_fwd_result_t res;
    suspect_err_t err;

    suspect_err_clear(&err);
    fakereq_init(&r, vars, body, len);
    CU_ASSERT_EQUAL(mw_upstream_forward(u, &r.req, &res, &err), SUSPECT_E_IO);
    CU_ASSERT_EQUAL(res.status, 502);
    CU_ASSERT_EQUAL(r.out_len, 0);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(err.text, "connection closed before END_REQUEST"));
    fakereq_free(&r);
}

/* A kept connection closed before the answer: a GET is sent again once
 * (a streamed body replayed from the window, a buffered one from memory);
 * a streamed body past the window is not; a new connection failing the
 * same way is not retried either. */
static void test_fake_retry_get(void)
{
    static const char *const get[] = {"REQUEST_METHOD=GET",
                                      "CONTENT_LENGTH=10000", NULL};
    static const char *const chunked[] = {"REQUEST_METHOD=GET", NULL};
    static const char *const large[] = {"REQUEST_METHOD=GET",
                                        "CONTENT_LENGTH=100000", NULL};
    static const char *const head[] = {"REQUEST_METHOD=HEAD", NULL};
    char *body = malloc(100000);
    fake_t f;
    mw_upstream_t *u;
    mw_upstream_stats_t st;
    fakereq_t r;

    memset(body, 'b', 100000);
    CU_ASSERT_FATAL(fake_start(&f, F_CLOSE_KEPT) == 0);
    u = fake_client(&f, NULL);
    CU_ASSERT_EQUAL(forward(u, &r, get, body, 10000), 0);
    fakereq_free(&r);
    CU_ASSERT_EQUAL(forward(u, &r, get, body, 10000), 0);
    CU_ASSERT(has(&r, "\nstdin=10000\n"));
    fakereq_free(&r);
    mw_upstream_stats(u, &st);
    CU_ASSERT_EQUAL(st.retries, 1);
    CU_ASSERT_EQUAL(st.connects, 2);
    CU_ASSERT_EQUAL(st.reused, 1);
    CU_ASSERT_EQUAL(atomic_load(&f.requests), 3);
    /* A buffered body of any size is replayed from memory; HEAD too. */
    CU_ASSERT_EQUAL(forward(u, &r, chunked, body, 100000), 0);
    CU_ASSERT(has(&r, "\nCONTENT_LENGTH=100000\n"));
    CU_ASSERT(has(&r, "\nstdin=100000\n"));
    fakereq_free(&r);
    CU_ASSERT_EQUAL(forward(u, &r, head, NULL, 0), 0);
    CU_ASSERT(has(&r, "\nREQUEST_METHOD=HEAD\n"));
    fakereq_free(&r);
    /* Past the window: no retry. */
    CU_ASSERT_EQUAL(forward(u, &r, large, body, 100000), 502);
    fakereq_free(&r);
    mw_upstream_stats(u, &st);
    CU_ASSERT_EQUAL(st.retries, 3);
    CU_ASSERT_EQUAL(st.failures, 1);
    /* Every connection fails: one retry, then 502. */
    CU_ASSERT_EQUAL(forward(u, &r, get, body, 10000), 0);
    fakereq_free(&r);
    atomic_store(&f.mode, F_CLOSE_ALL);
    expect_502(u, get, body, 10000);
    mw_upstream_stats(u, &st);
    CU_ASSERT_EQUAL(st.retries, 4);
    CU_ASSERT_EQUAL(st.failures, 2);
    CU_ASSERT_EQUAL(st.connects, 6);
    mw_upstream_free(u);
    fake_stop(&f);
    CU_ASSERT_EQUAL(atomic_load(&f.accepted), 6);
    free(body);
}

/* A POST (any method but GET and HEAD) never takes a kept connection: it
 * could meet one the upstream is closing, and it must not be sent twice.
 * An upstream that reads it whole and closes without an answer (a php-fpm
 * child killed by request_terminate_timeout) gets it once: 502. */
static void test_fake_post_not_twice(void)
{
    static const char *const post[] = {"REQUEST_METHOD=POST",
                                       "CONTENT_LENGTH=10000", NULL};
    static const char *const chunked[] = {"REQUEST_METHOD=PUT", NULL};
    static const char *const get[] = {"REQUEST_METHOD=GET", NULL};
    char *body = malloc(10000);
    fake_t f;
    mw_upstream_t *u;
    mw_upstream_stats_t st;
    fakereq_t r;

    memset(body, 'b', 10000);
    CU_ASSERT_FATAL(fake_start(&f, F_CLOSE_KEPT) == 0);
    u = fake_client(&f, NULL);
    /* The kept connection of the GET would close at its second request:
     * the POST goes on a new one (the kept one is closed first). */
    CU_ASSERT_EQUAL(forward(u, &r, get, NULL, 0), 0);
    fakereq_free(&r);
    CU_ASSERT_EQUAL(forward(u, &r, post, body, 10000), 0);
    CU_ASSERT(has(&r, "\nREQUEST_METHOD=POST\n"));
    CU_ASSERT(has(&r, "\nstdin=10000\nrecords=1\nstandalone=1\nkeep=1\n"));
    fakereq_free(&r);
    mw_upstream_stats(u, &st);
    CU_ASSERT_EQUAL(st.connects, 2);
    CU_ASSERT_EQUAL(st.reused, 0);
    CU_ASSERT_EQUAL(st.retries, 0);
    CU_ASSERT_EQUAL(atomic_load(&f.requests), 2);
    /* Read whole, then closed: 502, and the upstream saw it once. */
    atomic_store(&f.mode, F_CLOSE_ALL);
    expect_502(u, post, body, 10000);
    CU_ASSERT_EQUAL(atomic_load(&f.requests), 3);
    expect_502(u, chunked, body, 5000);
    CU_ASSERT_EQUAL(atomic_load(&f.requests), 4);
    mw_upstream_stats(u, &st);
    CU_ASSERT_EQUAL(st.retries, 0);
    CU_ASSERT_EQUAL(st.failures, 2);
    CU_ASSERT_EQUAL(st.connects, 4);
    mw_upstream_free(u);
    fake_stop(&f);
    CU_ASSERT_EQUAL(atomic_load(&f.accepted), 4);
    free(body);
}

/* The upstream closes a kept connection after answering (php-cgi at
 * PHP_FCGI_MAX_REQUESTS): once the close happened, the pooled connection
 * is found closed before use and the request goes on a new one, without
 * a failed attempt. */
static void test_fake_stale_dropped(void)
{
    static const char *const get[] = {"REQUEST_METHOD=GET", "CONTENT_LENGTH=5",
                                      NULL};
    fake_t f;
    mw_upstream_t *u;
    mw_upstream_stats_t st;
    fakereq_t r;
    long long end;

    CU_ASSERT_FATAL(fake_start(&f, F_ANSWER_CLOSE) == 0);
    u = fake_client(&f, NULL);
    for (int i = 1; i <= 3; i++) {
        CU_ASSERT_EQUAL(forward(u, &r, get, "a=b&c", 5), 0);
        CU_ASSERT(has(&r, "\nstdin=5\nrecords=1\nstandalone=1\nkeep=1\n"));
        fakereq_free(&r);
        end = mono_ms() + test_scale_ms(3000);
        while (atomic_load(&f.closed) < i && mono_ms() < end) {
            usleep(1000);
        }
        CU_ASSERT_EQUAL(atomic_load(&f.closed), i);
    }
    mw_upstream_stats(u, &st);
    CU_ASSERT_EQUAL(st.stale, 2);
    CU_ASSERT_EQUAL(st.reused, 0);
    CU_ASSERT_EQUAL(st.retries, 0);
    CU_ASSERT_EQUAL(st.failures, 0);
    CU_ASSERT_EQUAL(st.connects, 3);
    CU_ASSERT_EQUAL(atomic_load(&f.requests), 3);
    mw_upstream_free(u);
    fake_stop(&f);
}

/* maxIdle 0: no FCGI_KEEP_CONN, nothing pooled, a connection per
 * request, each closed by the upstream. */
static void test_fake_max_idle_zero(void)
{
    static const char *const get[] = {"REQUEST_METHOD=GET", NULL};
    mw_upstream_opts_t o;
    fake_t f;
    mw_upstream_t *u = NULL;
    mw_upstream_stats_t st;
    fakereq_t r;

    CU_ASSERT_FATAL(fake_start(&f, F_ECHO) == 0);
    memset(&o, 0, sizeof(o));
    o.address = f.addr;
    o.max_idle = 0;
    CU_ASSERT_EQUAL_FATAL(mw_upstream_new(&o, &u, NULL), SUSPECT_OK);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(forward(u, &r, get, NULL, 0), 0);
        CU_ASSERT(has(&r, "\nkeep=0\n"));
        fakereq_free(&r);
    }
    mw_upstream_stats(u, &st);
    CU_ASSERT_EQUAL(st.connects, 3);
    CU_ASSERT_EQUAL(st.reused, 0);
    CU_ASSERT_EQUAL(st.failures, 0);
    mw_upstream_free(u);
    fake_stop(&f);
    CU_ASSERT_EQUAL(atomic_load(&f.accepted), 3);
    CU_ASSERT_EQUAL(atomic_load(&f.closed), 3);
}

/* Tiny records, padding, a management record and STDERR between them;
 * the connection stays usable. */
static void test_fake_small_records(void)
{
    static const char *const get[] = {"REQUEST_METHOD=GET", NULL};
    char want[3100];
    fake_t f;
    mw_upstream_t *u;
    mw_upstream_stats_t st;
    fakereq_t r;
    mw_fwd_result_t res;
    int n = snprintf(want, sizeof(want), "Status: 200 OK\r\n\r\n");

    for (int i = 0; i < 3000; i++) {
        want[n++] = (char)('a' + i % 26);
    }
    want[n] = '\0';
    CU_ASSERT_FATAL(fake_start(&f, F_SMALL) == 0);
    u = fake_client(&f, NULL);
    for (int i = 0; i < 2; i++) {
        int saved = up_capture_start();
        char *log;

        fakereq_init(&r, get, NULL, 0);
        CU_ASSERT_EQUAL(mw_upstream_forward(u, &r.req, &res, NULL), SUSPECT_OK);
        log = up_capture_end(saved);
        CU_ASSERT(log != NULL &&
                  strstr(log, "upstream stderr: fake warn\n") != NULL);
        free(log);
        CU_ASSERT_EQUAL(res.status, 0);
        CU_ASSERT_EQUAL(res.exit_status, 7);
        CU_ASSERT_PTR_NOT_NULL_FATAL(r.out);
        CU_ASSERT_STRING_EQUAL(r.out, want);
        fakereq_free(&r);
    }
    mw_upstream_stats(u, &st);
    CU_ASSERT_EQUAL(st.connects, 1);
    CU_ASSERT_EQUAL(st.reused, 1);
    mw_upstream_free(u);
    fake_stop(&f);
}

/* Protocol errors: END_REQUEST for id 2, bytes that are not FastCGI.
 * 502, and the connection is not kept. */
static void test_fake_protocol_errors(void)
{
    static const char *const get[] = {"REQUEST_METHOD=GET", NULL};
    fake_t f;
    mw_upstream_t *u;
    mw_upstream_stats_t st;
    fakereq_t r;
    suspect_err_t err;
    mw_fwd_result_t res;

    CU_ASSERT_FATAL(fake_start(&f, F_WRONG_ID) == 0);
    u = fake_client(&f, NULL);
    suspect_err_clear(&err);
    fakereq_init(&r, get, NULL, 0);
    CU_ASSERT_EQUAL(mw_upstream_forward(u, &r.req, &res, &err), SUSPECT_E_IO);
    CU_ASSERT_EQUAL(res.status, 502);
    CU_ASSERT_EQUAL(r.out_len, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "another request id"));
    fakereq_free(&r);
    atomic_store(&f.mode, F_GARBAGE);
    CU_ASSERT_EQUAL(forward(u, &r, get, NULL, 0), 502);
    CU_ASSERT_EQUAL(r.out_len, 0);
    fakereq_free(&r);
    mw_upstream_stats(u, &st);
    CU_ASSERT_EQUAL(st.connects, 2);
    CU_ASSERT_EQUAL(st.reused, 0);
    CU_ASSERT_EQUAL(st.retries, 0);
    mw_upstream_free(u);
    fake_stop(&f);
}

/* An answer before the body was read: relayed, the connection closed
 * (our STDIN is not all sent). */
static void test_fake_end_early(void)
{
    static const char *const post[] = {"REQUEST_METHOD=POST",
                                       "CONTENT_LENGTH=1048576", NULL};
    char *body = calloc(1, 1 << 20);
    fake_t f;
    mw_upstream_t *u;
    mw_upstream_stats_t st;
    fakereq_t r;

    CU_ASSERT_FATAL(fake_start(&f, F_END_EARLY) == 0);
    u = fake_client(&f, NULL);
    for (int i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(forward(u, &r, post, body, 1 << 20), 0);
        CU_ASSERT(has(&r, "\nCONTENT_LENGTH=1048576\n"));
        fakereq_free(&r);
    }
    mw_upstream_stats(u, &st);
    CU_ASSERT_EQUAL(st.connects, 2);
    CU_ASSERT_EQUAL(st.reused, 0);
    mw_upstream_free(u);
    fake_stop(&f);
    free(body);
}

/* An idle pooled connection is closed after UP_IDLE_TIMEOUT_MS (1 s),
 * which releases the upstream's worker; the next request connects. */
static void test_fake_idle_close(void)
{
    static const char *const get[] = {"REQUEST_METHOD=GET", NULL};
    fake_t f;
    mw_upstream_t *u;
    mw_upstream_stats_t st;
    fakereq_t r;
    long long t0, waited;

    CU_ASSERT_FATAL(fake_start(&f, F_ECHO) == 0);
    u = fake_client(&f, NULL);
    /* From before the request: the connection goes idle inside
     * forward(), so a clock started after it returns could miss a
     * preempted moment of the second. */
    t0 = mono_ms();
    CU_ASSERT_EQUAL(forward(u, &r, get, NULL, 0), 0);
    fakereq_free(&r);
    while (atomic_load(&f.closed) == 0 &&
           mono_ms() - t0 < test_scale_ms(5000)) {
        usleep(10000);
    }
    waited = mono_ms() - t0;
    CU_ASSERT_EQUAL(atomic_load(&f.closed), 1);
    CU_ASSERT(waited >= 900 && waited < test_scale_ms(2500));
    CU_ASSERT_EQUAL(forward(u, &r, get, NULL, 0), 0);
    fakereq_free(&r);
    mw_upstream_stats(u, &st);
    CU_ASSERT_EQUAL(st.connects, 2);
    CU_ASSERT_EQUAL(st.reused, 0);
    mw_upstream_free(u);
    fake_stop(&f);
}

int upstream_fake_register(CU_pSuite s)
{
    if (!CU_add_test(s, "fake: params", test_fake_params) ||
        !CU_add_test(s, "fake: params filtered", test_fake_params_filtered) ||
        !CU_add_test(s, "fake: params records", test_fake_params_records) ||
        !CU_add_test(s, "fake: retry GET once", test_fake_retry_get) ||
        !CU_add_test(s, "fake: POST not run twice", test_fake_post_not_twice) ||
        !CU_add_test(s, "fake: stale dropped", test_fake_stale_dropped) ||
        !CU_add_test(s, "fake: maxIdle 0", test_fake_max_idle_zero) ||
        !CU_add_test(s, "fake: small records", test_fake_small_records) ||
        !CU_add_test(s, "fake: protocol errors", test_fake_protocol_errors) ||
        !CU_add_test(s, "fake: end early", test_fake_end_early) ||
        !CU_add_test(s, "fake: idle close", test_fake_idle_close)) {
        return -1;
    }
    return 0;
}
