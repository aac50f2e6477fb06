/*
 * test_fcgi_front.c - suite "fcgi-server": requests the front thread
 * answers itself (mw_server_opts_t.answers_in_front), without a worker.
 *
 *   - authorizer requests are answered while every worker is held by a
 *     request that waits, on new connections and on a kept one, and are
 *     counted in_front; a responder's request still goes to a worker and
 *     is answered once one is free;
 *   - 40 requests found in one round of events: the front answers its
 *     share (32), the workers the rest;
 *   - a handler that reads no body is answered once the PARAMS are in,
 *     its body still coming (skipped, as after any request);
 *   - a peer that does not read its response: the front keeps what it
 *     could not send and a worker sends it, whole, while other peers are
 *     answered; the connection then serves its next request; a response
 *     over the front's cap closes the connection instead;
 *   - a connection the front closes while a child process shares its
 *     socket (a CGI program before its execve()) leaves the epoll set.
 * The slow peers' tests with the front answering are in test_fcgi_slow.c.
 * Nothing here is timed: each test waits for conditions with scaled
 * deadlines (a held worker, a counter).
 */
#include <CUnit/CUnit.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "helpers/fcgiclient.h"
#include "helpers/vgwrap.h"

/* The front answers authorizers (what suspect-fcgi's handler says for
 * them on the memory store). */
static bool authorizers(int role, void *arg)
{
    (void)arg;
    return role == MW_ROLE_AUTHORIZER;
}

/* The front answers every request (a handler that never blocks and
 * reads no body: MODE=params). */
static bool everything(int role, void *arg)
{
    (void)role;
    (void)arg;
    return true;
}

static void start(tsrv_t *s, unsigned workers, mw_front_fn front)
{
    mw_server_opts_t o;

    memset(&o, 0, sizeof(o));
    o.workers = workers;
    o.io_timeout_ms = test_scale_ms(10000); /* a worker's send waits */
    o.answers_in_front = front;
    tsrv_start_opts(s, NULL, &o);
}

/* The request of role with the NULL-terminated vars, body as its STDIN
 * (a responder's), FCGI_KEEP_CONN when keep. */
static void request(fcbuf_t *b, uint16_t role, bool keep,
                    const char *const *vars, const char *body)
{
    fcbuf_begin(b, 1, role, keep ? FCGI_KEEP_CONN : 0);
    fcbuf_params(b, 1, vars, 65535);
    if (role == FCGI_RESPONDER) {
        fcbuf_stream(b, FCGI_STDIN, 1, body, body != NULL ? strlen(body) : 0);
    }
}

/* Whether resp is whole and its output holds text. */
static bool answered(const fcc_response_t *resp, const char *text)
{
    return resp->ended && resp->out.len > 0 &&
           memmem(resp->out.p, resp->out.len, text, strlen(text)) != NULL;
}

/* Sends req on fd and reads its answer: whether it holds text. */
static bool ask(int fd, const fcbuf_t *req, const char *text)
{
    fcc_response_t resp = {0};
    bool ok = fd >= 0 && fcc_exchange(fd, req, 1, &resp, 5000) == 0 &&
              answered(&resp, text);

    fcbuf_free(&resp.out);
    return ok;
}

/* n authorizer requests, a new connection each: how many were answered. */
static int authorize_n(tsrv_t *s, int n)
{
    const char *vars[] = {"MODE=params", NULL};
    fcbuf_t req = {0};
    int ok = 0;

    request(&req, FCGI_AUTHORIZER, false, vars, NULL);
    for (int i = 0; i < n; i++) {
        int fd = fcc_connect(s->path);

        ok += ask(fd, &req, "role=2");
        if (fd >= 0) {
            close(fd);
        }
    }
    fcbuf_free(&req);
    return ok;
}

static uint64_t stat_in_front(tsrv_t *s)
{
    mw_server_stats_t st;

    mw_server_stats(s->s, &st);
    return st.in_front;
}

/* Both workers wait in a handler; authorizers are answered meanwhile. */
static void test_answered_while_workers_held(void)
{
    const char *hold[] = {"MODE=hold", NULL};
    const char *params[] = {"MODE=params", NULL};
    fcbuf_t held = {0}, authz = {0}, resp_req = {0};
    fcc_response_t resp = {0};
    mw_server_stats_t st;
    int fds[2], kept, late, ok = 0;
    tsrv_t s;

    start(&s, 2, authorizers);
    request(&held, FCGI_RESPONDER, false, hold, NULL);
    for (int i = 0; i < 2; i++) {
        fds[i] = fcc_connect(s.path);
        CU_ASSERT_EQUAL(fcc_send(fds[i], held.p, held.len, 0), 0);
    }
    CU_ASSERT_TRUE_FATAL(tapp_wait_started(2, 5000));
    CU_ASSERT_EQUAL(authorize_n(&s, 10), 10);
    /* ten more on one kept connection */
    request(&authz, FCGI_AUTHORIZER, true, params, NULL);
    kept = fcc_connect(s.path);
    for (int i = 0; i < 10; i++) {
        ok += ask(kept, &authz, "role=2");
    }
    CU_ASSERT_EQUAL(ok, 10);
    mw_server_stats(s.s, &st);
    CU_ASSERT_EQUAL(st.in_front, 20);
    CU_ASSERT_EQUAL(st.busy, 2);
    /* a responder's request waits for a worker */
    request(&resp_req, FCGI_RESPONDER, false, params, NULL);
    late = fcc_connect(s.path);
    CU_ASSERT_EQUAL(fcc_send(late, resp_req.p, resp_req.len, 0), 0);
    tapp_release();
    CU_ASSERT_EQUAL(fcc_read_response(late, 1, &resp, 5000), 0);
    CU_ASSERT_TRUE(answered(&resp, "role=1"));
    for (int i = 0; i < 2; i++) {
        fcc_response_t h = {0};

        CU_ASSERT_EQUAL(fcc_read_response(fds[i], 1, &h, 5000), 0);
        CU_ASSERT_TRUE(answered(&h, "held"));
        fcbuf_free(&h.out);
        close(fds[i]);
    }
    mw_server_stats(s.s, &st);
    CU_ASSERT_EQUAL(st.in_front, 20);
    CU_ASSERT_EQUAL(st.requests, 23);
    fcbuf_free(&resp.out);
    fcbuf_free(&held);
    fcbuf_free(&authz);
    fcbuf_free(&resp_req);
    close(kept);
    close(late);
    tsrv_stop(&s);
}

/* A predicate that holds the front in its first call until released:
 * what arrives meanwhile is there at once when it goes on. */
typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool armed, held, open;
} gate_t;

static bool gated_authorizers(int role, void *arg)
{
    gate_t *g = arg;

    pthread_mutex_lock(&g->mu);
    if (g->armed) {
        g->armed = false;
        g->held = true;
        pthread_cond_broadcast(&g->cv);
        while (!g->open) {
            pthread_cond_wait(&g->cv, &g->mu);
        }
    }
    pthread_mutex_unlock(&g->mu);
    return role == MW_ROLE_AUTHORIZER;
}

/* Waits (scaled deadline) until the front is held; whether it is. */
static bool gate_wait_held(gate_t *g)
{
    long long end = mono_ms() + test_scale_ms(5000);
    bool held;

    for (;;) {
        pthread_mutex_lock(&g->mu);
        held = g->held;
        pthread_mutex_unlock(&g->mu);
        if (held || mono_ms() >= end) {
            return held;
        }
        usleep(1000);
    }
}

static void gate_open(gate_t *g)
{
    pthread_mutex_lock(&g->mu);
    g->open = true;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* 40 kept connections, idle in the front; the front held in a first
 * request while each of them sends one: released, it finds the 40 in one
 * round of events, answers 32 itself and gives the workers the other 8. */
static void test_round_share(void)
{
    enum { MORE = 40 };
    const char *params[] = {"MODE=params", NULL};
    gate_t g = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false,
                false, false};
    mw_server_opts_t o;
    fcbuf_t req = {0};
    mw_server_stats_t st;
    int first, fds[MORE], ok = 0;
    tsrv_t s;

    memset(&o, 0, sizeof(o));
    o.workers = 2;
    o.idle_timeout_ms = test_scale_ms(30000);
    o.answers_in_front = gated_authorizers;
    o.arg = &g;
    tsrv_start_opts(&s, NULL, &o);
    request(&req, FCGI_AUTHORIZER, true, params, NULL);
    for (int i = 0; i < MORE; i++) {
        fds[i] = fcc_connect(s.path);
    }
    CU_ASSERT_TRUE(
        tsrv_wait_stat(&s, offsetof(mw_server_stats_t, connections), MORE));
    pthread_mutex_lock(&g.mu);
    g.armed = true;
    pthread_mutex_unlock(&g.mu);
    first = fcc_connect(s.path);
    CU_ASSERT_EQUAL(fcc_send(first, req.p, req.len, 0), 0);
    CU_ASSERT_TRUE_FATAL(gate_wait_held(&g));
    for (int i = 0; i < MORE; i++) {
        CU_ASSERT_EQUAL(fcc_send(fds[i], req.p, req.len, 0), 0);
    }
    gate_open(&g);
    for (int i = 0; i < MORE; i++) {
        fcc_response_t resp = {0};

        ok += fcc_read_response(fds[i], 1, &resp, 5000) == 0 &&
              answered(&resp, "role=2");
        fcbuf_free(&resp.out);
        close(fds[i]);
    }
    CU_ASSERT_EQUAL(ok, MORE);
    mw_server_stats(s.s, &st);
    CU_ASSERT_EQUAL(st.requests, MORE + 1);
    CU_ASSERT_EQUAL(st.in_front, 1 + 32);
    close(first);
    fcbuf_free(&req);
    tsrv_stop(&s);
}

/* A handler that reads no body is answered by the front once the
 * PARAMS are in, its body still on its way; the rest of the body is
 * skipped and the kept connection serves its next request. */
static void test_body_still_coming(void)
{
    const char *params[] = {"MODE=params", "HTTP_X=first", NULL};
    const char *second[] = {"MODE=params", "HTTP_X=second", NULL};
    static const char part[] = "part of a body";
    fcbuf_t head = {0}, rest = {0};
    fcc_response_t resp = {0};
    int fd;
    tsrv_t s;

    start(&s, 2, everything);
    fcbuf_begin(&head, 1, FCGI_RESPONDER, FCGI_KEEP_CONN);
    fcbuf_params(&head, 1, params, 65535);
    fcbuf_record(&head, FCGI_STDIN, 1, part, sizeof(part) - 1, 0);
    fd = fcc_connect(s.path);
    CU_ASSERT_EQUAL(fcc_send(fd, head.p, head.len, 0), 0);
    CU_ASSERT_EQUAL(fcc_read_response(fd, 1, &resp, 5000), 0);
    CU_ASSERT_TRUE(answered(&resp, "HTTP_X=first"));
    CU_ASSERT_EQUAL(stat_in_front(&s), 1);
    /* the rest of the body, then the next request */
    fcbuf_record(&rest, FCGI_STDIN, 1, part, sizeof(part) - 1, 0);
    fcbuf_record(&rest, FCGI_STDIN, 1, NULL, 0, 0);
    CU_ASSERT_EQUAL(fcc_send(fd, rest.p, rest.len, 0), 0);
    fcbuf_free(&rest);
    request(&rest, FCGI_RESPONDER, true, second, "");
    CU_ASSERT_TRUE(ask(fd, &rest, "HTTP_X=second"));
    CU_ASSERT_EQUAL(stat_in_front(&s), 2);
    close(fd);
    fcbuf_free(&resp.out);
    fcbuf_free(&head);
    fcbuf_free(&rest);
    tsrv_stop(&s);
}

/* Whether out holds the "big" pattern of size bytes after the header. */
static bool big_whole(const fcbuf_t *out, size_t size)
{
    static const char head[] = "\r\n\r\n";
    const uint8_t *p = memmem(out->p, out->len, head, 4);
    size_t off;

    if (p == NULL) {
        return false;
    }
    off = (size_t)(p - out->p) + 4;
    if (out->len - off != size) {
        return false;
    }
    for (size_t i = 0; i < size; i++) {
        if (out->p[off + i] != fcc_pattern(i)) {
            return false;
        }
    }
    return true;
}

/* Starts s with 2 workers, sends the authorizer request of params (a big
 * response) on a connection of its own, kept in *req, and waits until
 * the front has served it; returns the connection. */
static int big_in_front(tsrv_t *s, fcbuf_t *req, const char *params[])
{
    int fd;

    start(s, 2, authorizers);
    request(req, FCGI_AUTHORIZER, true, params, NULL);
    fd = fcc_connect(s->path);
    CU_ASSERT_EQUAL(fcc_send(fd, req->p, req->len, 0), 0);
    CU_ASSERT_TRUE(tsrv_wait_stat(s, offsetof(mw_server_stats_t, in_front), 1));
    return fd;
}

/* A peer that sends its request and reads nothing: the front keeps what
 * the socket would not take, a worker sends it, the front answers others
 * meanwhile; read at last, the response is whole, and the kept
 * connection serves its next request. */
static void test_unread_response_finished_by_worker(void)
{
    enum { SIZE = 600000 };
    const char *big[] = {"MODE=big", "SIZE=600000", NULL};
    const char *params[] = {"MODE=params", NULL};
    fcbuf_t req = {0}, next = {0};
    fcc_response_t resp = {0};
    int fd;
    tsrv_t s;

    fd = big_in_front(&s, &req, big);
    /* the worker sending it waits for this peer; the front does not */
    CU_ASSERT_TRUE(tsrv_wait_stat(&s, offsetof(mw_server_stats_t, busy), 1));
    CU_ASSERT_EQUAL(authorize_n(&s, 5), 5);
    CU_ASSERT_EQUAL(fcc_read_response(fd, 1, &resp, 5000), 0);
    CU_ASSERT_TRUE(big_whole(&resp.out, SIZE));
    request(&next, FCGI_AUTHORIZER, true, params, NULL);
    CU_ASSERT_TRUE(ask(fd, &next, "role=2"));
    CU_ASSERT_EQUAL(stat_in_front(&s), 7);
    close(fd);
    fcbuf_free(&resp.out);
    fcbuf_free(&req);
    fcbuf_free(&next);
    tsrv_stop(&s);
}

/* A connection the front closes while another process shares its socket,
 * as a CGI program does between a worker's vfork() and its execve():
 * the socket stays open there, and so would its place in the epoll set
 * (level-triggered, its end of file reported on every wait) after the
 * connection is freed, unless the front takes it out first.  Under the
 * sanitizers this was a use after free; the front must go on serving. */
static void test_closed_while_shared(void)
{
    const char *vars[] = {"MODE=params", NULL};
    fcbuf_t req = {0};
    int fd, hold[2];
    pid_t child;
    tsrv_t s;

    start(&s, 2, NULL);
    request(&req, FCGI_RESPONDER, true, vars, NULL);
    fd = fcc_connect(s.path);
    CU_ASSERT_TRUE(ask(fd, &req, "role=1")); /* now idle in the front */
    CU_ASSERT_EQUAL_FATAL(pipe(hold), 0);
    child = fork();
    if (child == 0) { /* keeps the server's copy until told to go */
        char b;

        close(fd);
        close(hold[1]);
        _exit(read(hold[0], &b, 1) < 0);
    }
    close(hold[0]);
    close(fd); /* the front reads its end of file and closes */
    CU_ASSERT_TRUE(tsrv_wait_stat(&s, offsetof(mw_server_stats_t, open), 0));
    for (int i = 0; i < 3; i++) {
        int again = fcc_connect(s.path);

        CU_ASSERT_TRUE(ask(again, &req, "role=1"));
        if (again >= 0) {
            close(again);
        }
    }
    close(hold[1]);
    waitpid(child, NULL, 0);
    fcbuf_free(&req);
    tsrv_stop(&s);
}

/* Over FC_UNSENT_MAX (1 MiB) of a response its peer does not read, the
 * front gives up: the connection closes without END_REQUEST. */
static void test_unread_response_over_cap(void)
{
    const char *big[] = {"MODE=big", "SIZE=3000000", NULL};
    fcbuf_t req = {0};
    fcc_response_t resp = {0};
    int fd;
    tsrv_t s;

    fd = big_in_front(&s, &req, big);
    CU_ASSERT_EQUAL(authorize_n(&s, 5), 5);
    CU_ASSERT_NOT_EQUAL(fcc_read_response(fd, 1, &resp, 5000), 0);
    CU_ASSERT_FALSE(resp.ended);
    close(fd);
    fcbuf_free(&resp.out);
    fcbuf_free(&req);
    tsrv_stop(&s);
}

int add_fcgi_front_tests(CU_pSuite s)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        {"in front: answered while every worker is held",
         test_answered_while_workers_held},
        {"in front: 32 a round, the rest to the workers", test_round_share},
        {"in front: answered with its body still coming",
         test_body_still_coming},
        {"in front: a response not read is finished by a worker",
         test_unread_response_finished_by_worker},
        {"in front: a response not read over the cap closes",
         test_unread_response_over_cap},
        {"front: a connection closed while another process shares it",
         test_closed_while_shared},
    };

    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return 0;
}
