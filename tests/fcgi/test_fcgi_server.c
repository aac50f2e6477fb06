/*
 * test_fcgi_server.c - suite "fcgi-server": the FastCGI server side
 * (middleware/fcgi/fcgi_server.c, fcgi_conn.c, fcgi_io.c) driven by a raw
 * FastCGI client that plays the web server over a real unix socket.
 *
 * This file holds the requests that should work: variables (1- and 4-byte
 * lengths, NUL-terminated values, repeated names merged into one), PARAMS
 * split over many records and a request sent one byte per send(), 1 MiB
 * both ways at once, output before input, kept connections and their idle
 * timeout, the authorizer role with no STDIN at all, reads without wait,
 * prefetch, and stopping with a request in flight or with idle workers.
 * Protocol abuse is in test_fcgi_hostile.c, the listening socket in
 * test_listen.c.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "helpers/fcgiclient.h"
#include "suites.h"
#include "helpers/vgwrap.h"

#define MIB (1024 * 1024)

/* Sends req on a new connection and reads the response of id 1. */
static int one_request(tsrv_t *t, const fcbuf_t *req, fcc_response_t *resp)
{
    int fd = fcc_connect(t->path), r;

    CU_ASSERT_TRUE_FATAL(fd >= 0);
    r = fcc_exchange(fd, req, 1, resp, 5000);
    close(fd);
    return r;
}

/* Whether the response body (after the CGI header) equals want. */
static bool body_is(const fcc_response_t *resp, const char *want, size_t n)
{
    const char *head = "Status: 200 OK\r\nContent-Type: text/plain\r\n\r\n";
    size_t h = strlen(head);

    return resp->out.len == h + n && memcmp(resp->out.p, head, h) == 0 &&
           memcmp(resp->out.p + h, want, n) == 0;
}

static void test_simple_request(void)
{
    char longname[201], longvalue[301];
    char longvar[520];
    const char *head = "role=1\nMODE=params\nREQUEST_METHOD=GET\nEMPTY=\n";
    const char *vars[] = {"MODE=params", "REQUEST_METHOD=GET",
                          "EMPTY=", longvar, NULL};
    fcbuf_t req = {0}, want = {0};
    fcc_response_t resp = {0};
    tsrv_t t;
    mw_server_stats_t st;

    memset(longname, 'N', 200);
    longname[200] = '\0';
    memset(longvalue, 'v', 300);
    longvalue[300] = '\0';
    snprintf(longvar, sizeof(longvar), "%s=%s", longname, longvalue);
    tsrv_start(&t, 2, 0, 0);
    fcbuf_begin(&req, 1, FCGI_RESPONDER, 0);
    fcbuf_params(&req, 1, vars, 65535);
    fcbuf_stream(&req, FCGI_STDIN, 1, NULL, 0);
    CU_ASSERT_EQUAL(one_request(&t, &req, &resp), 0);
    CU_ASSERT_TRUE(resp.stdout_ended);
    CU_ASSERT_TRUE(resp.ended);
    CU_ASSERT_EQUAL(resp.app_status, 0);
    CU_ASSERT_EQUAL(resp.proto_status, FCGI_REQUEST_COMPLETE);
    fcbuf_add(&want, head, strlen(head));
    fcbuf_add(&want, longvar, strlen(longvar));
    fcbuf_add(&want, "\n", 1);
    CU_ASSERT_TRUE(body_is(&resp, (const char *)want.p, want.len));
    mw_server_stats(t.s, &st);
    CU_ASSERT_EQUAL(st.connections, 1);
    CU_ASSERT_EQUAL(st.requests, 1);
    CU_ASSERT_EQUAL(st.bad_records, 0);
    CU_ASSERT_TRUE(tsrv_wait_stat(&t, offsetof(mw_server_stats_t, busy), 0));
    fcbuf_free(&req);
    fcbuf_free(&want);
    fcbuf_free(&resp.out);
    tsrv_stop(&t);
}

/* Repeated names become one variable at the first copy's place: headers
 * joined as HTTP lists (cookies with "; "), anything else (MODE too, which
 * the app reads) keeps its last value.  Twice on one kept connection, in
 * 7-byte PARAMS records, so the reused buffers are checked as well. */
static void test_repeated_names_merged(void)
{
    const char *vars[] = {"MODE=echo",
                          "HTTP_X_MEMBER=decoy",
                          "QUERY_STRING=a=1",
                          "HTTP_COOKIE=member=decoy",
                          "HTTP_X_FORWARDED_FOR=198.51.100.7",
                          "HTTP_X_MEMBER=victim",
                          "QUERY_STRING=a=2",
                          "HTTP_COOKIE=member=victim",
                          "HTTP_X_MEMBER=",
                          "MODE=params",
                          "HTTP_X_FORWARDED_FOR=192.0.2.1",
                          "HTTP_COOKIE=s=1",
                          "HTTP_X_MEMBER=m3",
                          NULL};
    const char *want = "role=1\nMODE=params\n"
                       "HTTP_X_MEMBER=decoy, victim, , m3\n"
                       "QUERY_STRING=a=2\n"
                       "HTTP_COOKIE=member=decoy; member=victim; s=1\n"
                       "HTTP_X_FORWARDED_FOR=198.51.100.7, 192.0.2.1\n";
    const char *plain[] = {"MODE=params", "HTTP_X_MEMBER=alone", NULL};
    const char *want_plain = "role=1\nMODE=params\nHTTP_X_MEMBER=alone\n";
    fcbuf_t req = {0};
    tsrv_t t;
    int fd;

    tsrv_start(&t, 1, 0, 0);
    fd = fcc_connect(t.path);
    CU_ASSERT_TRUE_FATAL(fd >= 0);
    for (int i = 0; i < 3; i++) {
        fcc_response_t resp = {0};

        req.len = 0;
        fcbuf_begin(&req, 1, FCGI_RESPONDER, FCGI_KEEP_CONN);
        fcbuf_params(&req, 1, i == 1 ? plain : vars, 7);
        fcbuf_stream(&req, FCGI_STDIN, 1, NULL, 0);
        CU_ASSERT_EQUAL(fcc_exchange(fd, &req, 1, &resp, 5000), 0);
        CU_ASSERT_TRUE(i == 1 ? body_is(&resp, want_plain, strlen(want_plain))
                              : body_is(&resp, want, strlen(want)));
        fcbuf_free(&resp.out);
    }
    close(fd);
    fcbuf_free(&req);
    tsrv_stop(&t);
}

static void test_split_records_and_tiny_sends(void)
{
    const char *vars[] = {"MODE=echo", "SCRIPT_NAME=/a/b/c.cgi",
                          "QUERY_STRING=x=1&y=2", NULL};
    fcbuf_t req = {0};
    fcc_response_t resp = {0};
    tsrv_t t;
    int fd;

    tsrv_start(&t, 2, 0, 0);
    fcbuf_begin(&req, 1, FCGI_RESPONDER, 0);
    fcbuf_params(&req, 1, vars, 3); /* 3-byte PARAMS records, padded */
    fcbuf_record(&req, FCGI_STDIN, 1, "hel", 3, 5);
    fcbuf_record(&req, FCGI_STDIN, 1, "lo", 2, 0);
    fcbuf_record(&req, FCGI_STDIN, 1, NULL, 0, 0);
    fd = fcc_connect(t.path);
    CU_ASSERT_TRUE_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(fcc_send(fd, req.p, req.len, 1), 0);
    CU_ASSERT_EQUAL(fcc_read_response(fd, 1, &resp, 5000), 0);
    CU_ASSERT_TRUE(body_is(&resp, "hello", 5));
    CU_ASSERT_TRUE(fcc_wait_closed(fd, 2000)); /* not kept */
    close(fd);
    fcbuf_free(&req);
    fcbuf_free(&resp.out);
    tsrv_stop(&t);
}

static void test_megabyte_both_ways(void)
{
    const char *vars[] = {"MODE=echo", NULL};
    uint8_t *body = malloc(MIB);
    fcbuf_t req = {0};
    fcc_response_t resp = {0};
    tsrv_t t;

    for (size_t i = 0; i < MIB; i++) {
        body[i] = fcc_pattern(i);
    }
    tsrv_start(&t, 2, 0, 0);
    fcbuf_begin(&req, 1, FCGI_RESPONDER, 0);
    fcbuf_params(&req, 1, vars, 65535);
    fcbuf_stream(&req, FCGI_STDIN, 1, body, MIB);
    CU_ASSERT_EQUAL(one_request(&t, &req, &resp), 0);
    CU_ASSERT_TRUE(body_is(&resp, (const char *)body, MIB));
    CU_ASSERT_EQUAL(tapp_last_read(), 0);
    fcbuf_free(&req);
    fcbuf_free(&resp.out);
    free(body);
    tsrv_stop(&t);
}

static void test_write_before_read(void)
{
    const char *vars[] = {"MODE=writefirst", "SIZE=1048576", NULL};
    uint8_t *body = calloc(1, MIB / 2);
    fcbuf_t req = {0};
    fcc_response_t resp = {0};
    const char *tail = "\nbody=524288\n";
    size_t h = strlen("Status: 200 OK\r\nContent-Type: text/plain\r\n\r\n");
    bool same = true;
    tsrv_t t;

    tsrv_start(&t, 2, 0, 0);
    fcbuf_begin(&req, 1, FCGI_RESPONDER, 0);
    fcbuf_params(&req, 1, vars, 65535);
    fcbuf_stream(&req, FCGI_STDIN, 1, body, MIB / 2);
    CU_ASSERT_EQUAL(one_request(&t, &req, &resp), 0);
    CU_ASSERT_EQUAL_FATAL(resp.out.len, h + MIB + strlen(tail));
    for (size_t i = 0; i < MIB; i++) {
        same = same && resp.out.p[h + i] == fcc_pattern(i);
    }
    CU_ASSERT_TRUE(same);
    CU_ASSERT_EQUAL(memcmp(resp.out.p + h + MIB, tail, strlen(tail)), 0);
    fcbuf_free(&req);
    fcbuf_free(&resp.out);
    free(body);
    tsrv_stop(&t);
}

static void test_keep_conn(void)
{
    static const char *const modes[] = {
        "MODE=echo", "MODE=big",     "MODE=echo",    "MODE=params",
        "MODE=echo", "MODE=readone", "MODE=readone", "MODE=echo"};
    tsrv_t t;
    mw_server_stats_t st;
    int fd;

    tsrv_start(&t, 2, 0, 0);
    fd = fcc_connect(t.path);
    CU_ASSERT_TRUE_FATAL(fd >= 0);
    for (int i = 0; i < 8; i++) {
        const char *vars[] = {modes[i], "SIZE=100000", NULL};
        fcbuf_t req = {0};
        fcc_response_t resp = {0};
        char body[32];
        int n = snprintf(body, sizeof(body), "request %d", i);

        fcbuf_begin(&req, 1, FCGI_RESPONDER, FCGI_KEEP_CONN);
        fcbuf_params(&req, 1, vars, 65535);
        fcbuf_stream(&req, FCGI_STDIN, 1, body, (size_t)n);
        CU_ASSERT_EQUAL(fcc_exchange(fd, &req, 1, &resp, 5000), 0);
        CU_ASSERT_TRUE(resp.ended);
        if (strcmp(modes[i], "MODE=echo") == 0) {
            CU_ASSERT_TRUE(body_is(&resp, body, (size_t)n));
        } else if (strcmp(modes[i], "MODE=readone") == 0) {
            /* the unread rest of the record is skipped, not parsed */
            CU_ASSERT_TRUE(body_is(&resp, "r", 1));
        }
        fcbuf_free(&req);
        fcbuf_free(&resp.out);
    }
    mw_server_stats(t.s, &st);
    CU_ASSERT_EQUAL(st.connections, 1);
    CU_ASSERT_EQUAL(st.requests, 8);
    CU_ASSERT_EQUAL(st.bad_records, 0);
    close(fd);
    tsrv_stop(&t);
}

static void test_idle_timeout(void)
{
    const char *vars[] = {"MODE=params", NULL};
    fcbuf_t req = {0};
    fcc_response_t resp = {0};
    long long t0, waited;
    tsrv_t t;
    int fd, fresh;

    tsrv_start(&t, 2, 0, 300);
    fd = fcc_connect(t.path);
    fresh = fcc_connect(t.path); /* never sends anything */
    CU_ASSERT_TRUE_FATAL(fd >= 0 && fresh >= 0);
    fcbuf_begin(&req, 1, FCGI_RESPONDER, FCGI_KEEP_CONN);
    fcbuf_params(&req, 1, vars, 65535);
    fcbuf_stream(&req, FCGI_STDIN, 1, NULL, 0);
    /* From before the request: the idle time starts when the server has
     * answered, before this thread sees the answer, so a clock started
     * after it could miss a preempted moment of the 300 ms. */
    t0 = mono_ms();
    CU_ASSERT_EQUAL(fcc_exchange(fd, &req, 1, &resp, 5000), 0);
    CU_ASSERT_TRUE(fcc_wait_closed(fd, 3000));
    waited = mono_ms() - t0;
    CU_ASSERT_TRUE(waited >= 250 && waited < test_scale_ms(2000));
    CU_ASSERT_TRUE(fcc_wait_closed(fresh, 3000));
    close(fd);
    close(fresh);
    fcbuf_free(&req);
    fcbuf_free(&resp.out);
    tsrv_stop(&t);
}

/* Idle kept connections hold no worker: with two workers and ten idle
 * kept connections, a new one is served at once, and so is each kept one
 * when it sends its next request. */
static void test_kept_connections_hold_no_worker(void)
{
    const char *vars[] = {"MODE=params", NULL};
    fcbuf_t req = {0};
    fcc_response_t resp = {0};
    long long t0;
    tsrv_t t;
    int kept[10], fd;

    tsrv_start(&t, 2, 0, 10000);
    fcbuf_begin(&req, 1, FCGI_RESPONDER, FCGI_KEEP_CONN);
    fcbuf_params(&req, 1, vars, 65535);
    fcbuf_stream(&req, FCGI_STDIN, 1, NULL, 0);
    for (int i = 0; i < 10; i++) {
        kept[i] = fcc_connect(t.path);
        CU_ASSERT_TRUE_FATAL(kept[i] >= 0);
        CU_ASSERT_EQUAL(fcc_exchange(kept[i], &req, 1, &resp, 3000), 0);
        fcbuf_free(&resp.out);
        memset(&resp, 0, sizeof(resp));
    }
    t0 = mono_ms();
    fd = fcc_connect(t.path);
    CU_ASSERT_TRUE_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(fcc_exchange(fd, &req, 1, &resp, 3000), 0);
    fcbuf_free(&resp.out);
    memset(&resp, 0, sizeof(resp));
    for (int i = 9; i >= 0; i--) {
        CU_ASSERT_EQUAL(fcc_exchange(kept[i], &req, 1, &resp, 3000), 0);
        CU_ASSERT_TRUE(resp.ended);
        fcbuf_free(&resp.out);
        memset(&resp, 0, sizeof(resp));
    }
    CU_ASSERT_TRUE(mono_ms() - t0 < test_scale_ms(1000));
    close(fd);
    for (int i = 0; i < 10; i++) {
        close(kept[i]);
    }
    fcbuf_free(&req);
    tsrv_stop(&t);
}

static void test_authorizer_without_stdin(void)
{
    const char *vars[] = {"MODE=result", "REMOTE_USER=bob", NULL};
    fcbuf_t req = {0};
    fcc_response_t resp = {0};
    tsrv_t t;
    int fd;

    tsrv_start(&t, 2, 0, 0);
    fcbuf_begin(&req, 1, FCGI_AUTHORIZER, 0);
    fcbuf_params(&req, 1, vars, 65535); /* and no STDIN, like Apache */
    fd = fcc_connect(t.path);
    CU_ASSERT_TRUE_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(fcc_send(fd, req.p, req.len, 0), 0);
    CU_ASSERT_EQUAL(fcc_read_response(fd, 1, &resp, 3000), 0);
    CU_ASSERT_TRUE(body_is(&resp, "late", 4));
    CU_ASSERT_EQUAL(tapp_last_read(), 0);
    close(fd);
    fcbuf_free(&req);
    fcbuf_free(&resp.out);
    tsrv_stop(&t);
}

static void test_read_without_wait(void)
{
    const char *vars[] = {"MODE=nowait", NULL};
    fcbuf_t req = {0}, body = {0};
    fcc_response_t resp = {0};
    tsrv_t t;
    int fd;

    tsrv_start(&t, 2, 0, 0);
    fcbuf_begin(&req, 1, FCGI_RESPONDER, 0);
    fcbuf_params(&req, 1, vars, 65535);
    fcbuf_record(&body, FCGI_STDIN, 1, "abc", 3, 3);
    fcbuf_record(&body, FCGI_STDIN, 1, "def", 3, 0);
    fcbuf_record(&body, FCGI_STDIN, 1, NULL, 0, 0);
    fd = fcc_connect(t.path);
    CU_ASSERT_TRUE_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(fcc_send(fd, req.p, req.len, 0), 0);
    CU_ASSERT_TRUE(tapp_wait_started(1, 3000));
    CU_ASSERT_EQUAL(tapp_first_read(), -EAGAIN);
    CU_ASSERT_EQUAL(fcc_send(fd, body.p, body.len, 5), 0);
    CU_ASSERT_EQUAL(fcc_read_response(fd, 1, &resp, 3000), 0);
    CU_ASSERT_TRUE(body_is(&resp, "abcdef", 6));
    CU_ASSERT_EQUAL(tapp_last_read(), 0);
    close(fd);
    fcbuf_free(&req);
    fcbuf_free(&body);
    fcbuf_free(&resp.out);
    tsrv_stop(&t);
}

static void test_prefetch(void)
{
    const char *vars[] = {"MODE=prefetch", "CONTENT_LENGTH=26", NULL};
    const char *abc = "abcdefghijklmnopqrstuvwxyz";
    const char *want =
        "pre=abcdefghij complete=0 rest=abcdefghijklmnopqrstuvwxyz";
    fcbuf_t req = {0};
    fcc_response_t resp = {0};
    tsrv_t t;

    tsrv_start(&t, 2, 0, 0);
    fcbuf_begin(&req, 1, FCGI_RESPONDER, 0);
    fcbuf_params(&req, 1, vars, 65535);
    fcbuf_stream(&req, FCGI_STDIN, 1, abc, 26);
    CU_ASSERT_EQUAL(one_request(&t, &req, &resp), 0);
    CU_ASSERT_TRUE(body_is(&resp, want, strlen(want)));
    fcbuf_free(&req);
    fcbuf_free(&resp.out);
    tsrv_stop(&t);
}

static void test_tcp(void)
{
    const char *vars[] = {"MODE=params", NULL};
    static char big[5000];
    const char *large[] = {big, NULL};
    uint8_t *body = calloc(1, MIB);
    fcbuf_t req = {0}, refused = {0};
    fcc_response_t resp = {0};
    tsrv_t t;
    int fd;

    tsrv_start_on(&t, "tcp:127.0.0.1:0", 2, 4096, 0);
    fd = tsrv_connect(&t);
    CU_ASSERT_TRUE_FATAL(fd >= 0);
    for (int i = 0; i < 3; i++) {
        req.len = 0;
        fcbuf_begin(&req, 1, FCGI_RESPONDER, FCGI_KEEP_CONN);
        fcbuf_params(&req, 1, vars, 65535);
        fcbuf_stream(&req, FCGI_STDIN, 1, NULL, 0);
        CU_ASSERT_EQUAL(fcc_exchange(fd, &req, 1, &resp, 3000), 0);
        CU_ASSERT_TRUE(body_is(&resp, "role=1\nMODE=params\n", 19));
        fcbuf_free(&resp.out);
        memset(&resp, 0, sizeof(resp));
    }
    close(fd);
    /* not kept, the body (1 MiB) unread: the response arrives whole and
     * the close does not reset it */
    fd = tsrv_connect(&t);
    CU_ASSERT_TRUE_FATAL(fd >= 0);
    req.len = 0;
    fcbuf_begin(&req, 1, FCGI_RESPONDER, 0);
    fcbuf_params(&req, 1, vars, 65535);
    fcbuf_stream(&req, FCGI_STDIN, 1, body, MIB);
    CU_ASSERT_EQUAL(fcc_exchange(fd, &req, 1, &resp, 3000), 0);
    CU_ASSERT_TRUE(body_is(&resp, "role=1\nMODE=params\n", 19));
    fcbuf_free(&resp.out);
    memset(&resp, 0, sizeof(resp));
    close(fd);
    /* 431 over TCP */
    memcpy(big, "X=", 2);
    memset(big + 2, 'x', sizeof(big) - 3);
    fcbuf_begin(&refused, 1, FCGI_RESPONDER, 0);
    fcbuf_params(&refused, 1, large, 1000);
    fcbuf_stream(&refused, FCGI_STDIN, 1, body, MIB);
    fd = tsrv_connect(&t);
    CU_ASSERT_TRUE_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(fcc_exchange(fd, &refused, 1, &resp, 3000), 0);
    CU_ASSERT_TRUE(resp.ended && resp.out.len > 12 &&
                   memcmp(resp.out.p, "Status: 431 ", 12) == 0);
    close(fd);
    fcbuf_free(&resp.out);
    fcbuf_free(&req);
    fcbuf_free(&refused);
    free(body);
    tsrv_stop(&t);
}

static void test_unread_body_no_reset(void)
{
    const char *vars[] = {"MODE=params", NULL};
    uint8_t *body = calloc(1, 2 * MIB);
    fcbuf_t req = {0};
    fcc_response_t resp = {0};
    tsrv_t t;
    int fd;

    /* Like nginx: the whole body is sent before the response is read, and
     * a failed send would be a 502.  The app answers without reading it;
     * the server must drain it rather than close into a reset. */
    tsrv_start(&t, 2, 0, 0);
    fcbuf_begin(&req, 1, FCGI_RESPONDER, 0);
    fcbuf_params(&req, 1, vars, 65535);
    fcbuf_stream(&req, FCGI_STDIN, 1, body, 2 * MIB);
    fd = fcc_connect(t.path);
    CU_ASSERT_TRUE_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(fcc_send(fd, req.p, req.len, 0), 0);
    CU_ASSERT_EQUAL(fcc_read_response(fd, 1, &resp, 3000), 0);
    CU_ASSERT_TRUE(body_is(&resp, "role=1\nMODE=params\n", 19));
    CU_ASSERT_TRUE(fcc_wait_closed(fd, 3000));
    close(fd);
    fcbuf_free(&req);
    fcbuf_free(&resp.out);
    free(body);
    tsrv_stop(&t);
}

static void *stop_thread(void *arg)
{
    mw_server_stop(arg);
    return NULL;
}

static void test_stop_with_request_in_flight(void)
{
    const char *vars[] = {"MODE=hold", NULL};
    fcbuf_t req = {0};
    fcc_response_t resp = {0};
    pthread_t th;
    tsrv_t t;
    int fd, late;

    tsrv_start(&t, 2, 0, 0);
    fcbuf_begin(&req, 1, FCGI_RESPONDER, 0);
    fcbuf_params(&req, 1, vars, 65535);
    fcbuf_stream(&req, FCGI_STDIN, 1, NULL, 0);
    fd = fcc_connect(t.path);
    CU_ASSERT_TRUE_FATAL(fd >= 0);
    CU_ASSERT_EQUAL(fcc_send(fd, req.p, req.len, 0), 0);
    CU_ASSERT_TRUE_FATAL(tapp_wait_started(1, 3000));
    CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, stop_thread, t.s), 0);
    /* stop() is waiting for the held request: the socket accepts no more */
    late = -1;
    for (long long end = mono_ms() + test_scale_ms(3000);
         (late = fcc_connect(t.path)) >= 0 && mono_ms() < end;) {
        close(late);
        usleep(1000);
    }
    CU_ASSERT_TRUE(late < 0);
    if (late >= 0) {
        close(late);
    }
    CU_ASSERT_TRUE(tsrv_wait_stat(&t, offsetof(mw_server_stats_t, busy), 1));
    tapp_release();
    CU_ASSERT_EQUAL(fcc_read_response(fd, 1, &resp, 3000), 0);
    CU_ASSERT_TRUE(body_is(&resp, "held\n", 5));
    close(fd); /* like a web server: the worker lingers until then */
    pthread_join(th, NULL);
    CU_ASSERT_TRUE(tsrv_wait_stat(&t, offsetof(mw_server_stats_t, busy), 0));
    fcbuf_free(&req);
    fcbuf_free(&resp.out);
    tsrv_stop(&t);
}

static void test_stop_idle_workers(void)
{
    const char *vars[] = {"MODE=params", NULL};
    fcbuf_t req = {0};
    fcc_response_t resp = {0};
    long long t0;
    tsrv_t t;
    int kept;

    tsrv_start(&t, 8, 0, 10000);
    kept = fcc_connect(t.path);
    CU_ASSERT_TRUE_FATAL(kept >= 0);
    fcbuf_begin(&req, 1, FCGI_RESPONDER, FCGI_KEEP_CONN);
    fcbuf_params(&req, 1, vars, 65535);
    fcbuf_stream(&req, FCGI_STDIN, 1, NULL, 0);
    CU_ASSERT_EQUAL(fcc_exchange(kept, &req, 1, &resp, 3000), 0);
    t0 = mono_ms();
    mw_server_stop(t.s);
    CU_ASSERT_TRUE(mono_ms() - t0 < test_scale_ms(500));
    CU_ASSERT_TRUE(fcc_wait_closed(kept, 1000));
    close(kept);
    fcbuf_free(&req);
    fcbuf_free(&resp.out);
    tsrv_stop(&t);
}

static void test_many_clients(void)
{
    const char *vars[] = {"MODE=echo", NULL};
    fcbuf_t req = {0};
    tsrv_t t;
    mw_server_stats_t st;
    int fds[12];

    tsrv_start(&t, 3, 0, 0);
    fcbuf_begin(&req, 1, FCGI_RESPONDER, 0);
    fcbuf_params(&req, 1, vars, 65535);
    fcbuf_stream(&req, FCGI_STDIN, 1, "x", 1);
    for (int i = 0; i < 12; i++) {
        fds[i] = fcc_connect(t.path);
        CU_ASSERT_TRUE_FATAL(fds[i] >= 0);
        CU_ASSERT_EQUAL(fcc_send(fds[i], req.p, req.len, 0), 0);
    }
    for (int i = 0; i < 12; i++) {
        fcc_response_t resp = {0};

        CU_ASSERT_EQUAL(fcc_read_response(fds[i], 1, &resp, 5000), 0);
        CU_ASSERT_TRUE(body_is(&resp, "x", 1));
        fcbuf_free(&resp.out);
        close(fds[i]);
    }
    mw_server_stats(t.s, &st);
    CU_ASSERT_EQUAL(st.requests, 12);
    fcbuf_free(&req);
    tsrv_stop(&t);
}

int register_fcgi_server_suite(void)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        {"simple request", test_simple_request},
        {"repeated names merged", test_repeated_names_merged},
        {"split records, 1-byte sends", test_split_records_and_tiny_sends},
        {"1 MiB both ways", test_megabyte_both_ways},
        {"write before read", test_write_before_read},
        {"keep-conn", test_keep_conn},
        {"idle timeout", test_idle_timeout},
        {"idle kept connections hold no worker",
         test_kept_connections_hold_no_worker},
        {"authorizer without STDIN", test_authorizer_without_stdin},
        {"read without wait", test_read_without_wait},
        {"prefetch", test_prefetch},
        {"many clients, few workers", test_many_clients},
        {"TCP: kept, unread body, 431", test_tcp},
        {"unread body: no reset", test_unread_body_no_reset},
        {"stop with a request in flight", test_stop_with_request_in_flight},
        {"stop with idle workers", test_stop_idle_workers},
    };
    CU_pSuite s = CU_add_suite("fcgi-server", NULL, NULL);

    if (s == NULL) {
        return -1;
    }
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return add_fcgi_hostile_tests(s) == 0 && add_listen_tests(s) == 0 &&
                   add_fcgi_slow_tests(s) == 0 && add_fcgi_front_tests(s) == 0
               ? 0
               : -1;
}
