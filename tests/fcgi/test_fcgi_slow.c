/*
 * test_fcgi_slow.c - suite "fcgi-server": peers that send slowly, or not
 * at all, while a web server's requests must still be served at once.
 *
 * Each test holds the server's workers' worth of hostile connections (or
 * many more) and meanwhile sends whole requests the way a web server
 * does, timing each: every one must be answered, fast, while the hostile
 * ones wait, and the hostile ones must end when the server's bounds say
 * (the request deadline, the connection cap).
 *   - PARAMS trickled a byte at a time on more connections than workers;
 *   - a flood of connections that send nothing, far over the cap;
 *   - bodies trickled after whole PARAMS: at most half the workers read
 *     them, the other half serve whole requests.
 * The first two again with the front answering authorizers itself
 * (answers_in_front): the whole requests are then authorizers', all
 * answered by the front (counted in_front) while it holds the hostile
 * connections, which still end at their bounds.
 */
#include <CUnit/CUnit.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "helpers/fcgiclient.h"
#include "helpers/vgwrap.h"

#define HOSTILE 8

/* Hostile connections fed a byte at a time by a thread. */
typedef struct trickle {
    pthread_t th;
    int fd[HOSTILE];
    fcbuf_t rest[HOSTILE]; /* what each still has to send */
    unsigned every_ms;
    atomic_bool stop;
} trickle_t;

static void *trickle_main(void *arg)
{
    trickle_t *t = arg;
    size_t off[HOSTILE] = {0};

    while (!atomic_load(&t->stop)) {
        for (int i = 0; i < HOSTILE; i++) {
            if (t->fd[i] >= 0 && off[i] < t->rest[i].len &&
                fcc_send(t->fd[i], t->rest[i].p + off[i], 1, 0) == 0) {
                off[i]++;
            }
        }
        usleep(t->every_ms * 1000u);
    }
    return NULL;
}

/* Sends head whole on each of HOSTILE new connections, then trickles
 * rest one byte per every_ms on each. */
static void trickle_start(trickle_t *t, tsrv_t *s, const fcbuf_t *head,
                          const fcbuf_t *rest, unsigned every_ms)
{
    memset(t, 0, sizeof(*t));
    t->every_ms = every_ms;
    for (int i = 0; i < HOSTILE; i++) {
        t->fd[i] = fcc_connect(s->path);
        CU_ASSERT_TRUE(t->fd[i] >= 0);
        if (t->fd[i] >= 0 && head->len > 0) {
            CU_ASSERT_EQUAL(fcc_send(t->fd[i], head->p, head->len, 0), 0);
        }
        fcbuf_add(&t->rest[i], rest->p, rest->len);
    }
    CU_ASSERT_EQUAL(pthread_create(&t->th, NULL, trickle_main, t), 0);
}

/* Whether every hostile connection was closed by the server. */
static bool trickle_all_closed(trickle_t *t, int ms)
{
    bool all = true;

    for (int i = 0; i < HOSTILE; i++) {
        all &= t->fd[i] < 0 || fcc_wait_closed(t->fd[i], ms);
    }
    return all;
}

static void trickle_stop(trickle_t *t)
{
    atomic_store(&t->stop, true);
    pthread_join(t->th, NULL);
    for (int i = 0; i < HOSTILE; i++) {
        if (t->fd[i] >= 0) {
            close(t->fd[i]);
        }
        fcbuf_free(&t->rest[i]);
    }
}

/* n whole requests, one connection each, as a web server sends them
 * (a responder's with a body, or an authorizer's): how many were
 * answered in full, and the slowest in *max_ms. */
static int whole_requests(tsrv_t *s, int n, bool authz, long long *max_ms)
{
    const char *vars[] = {"MODE=echo", NULL};
    const char *avars[] = {"MODE=params", "HTTP_X=whole", NULL};
    fcbuf_t req = {0};
    int ok = 0;

    *max_ms = 0;
    fcbuf_begin(&req, 1, authz ? FCGI_AUTHORIZER : FCGI_RESPONDER, 0);
    fcbuf_params(&req, 1, authz ? avars : vars, 65535);
    if (!authz) {
        fcbuf_stream(&req, FCGI_STDIN, 1, "whole", 5);
    }
    for (int i = 0; i < n; i++) {
        fcc_response_t resp = {0};
        long long t0 = mono_ms();
        int fd = fcc_connect(s->path);
        size_t at = authz ? 6 : 5; /* "whole\n" or "whole" at the end */

        if (fd >= 0 && fcc_exchange(fd, &req, 1, &resp, 5000) == 0 &&
            resp.ended && resp.out.len >= at &&
            memcmp(resp.out.p + resp.out.len - at, "whole", 5) == 0) {
            ok++;
        }
        if (mono_ms() - t0 > *max_ms) {
            *max_ms = mono_ms() - t0;
        }
        if (fd >= 0) {
            close(fd);
        }
        fcbuf_free(&resp.out);
        usleep(20000);
    }
    fcbuf_free(&req);
    return ok;
}

/* The front answers authorizers (as suspect-fcgi's handler does on the
 * memory store). */
static bool authorizers(int role, void *arg)
{
    (void)arg;
    return role == MW_ROLE_AUTHORIZER;
}

/* More connections than workers trickle their PARAMS: none takes a
 * worker, and each is closed at the request deadline.  The PARAMS are
 * long enough to take twice the deadline at a byte per 50 ms, however
 * the deadline is scaled: none can arrive whole before it.  With front,
 * the front answers the whole requests (authorizers') itself. */
static void slow_params(bool front)
{
    const char *vars[] = {"MODE=echo", NULL, NULL};
    size_t pad_len;
    char *pad;
    mw_server_opts_t o;
    fcbuf_t head = {0}, rest = {0};
    mw_server_stats_t st;
    long long max_ms, t0;
    trickle_t tr;
    tsrv_t s;

    memset(&o, 0, sizeof(o));
    o.workers = 2;
    o.request_timeout_ms = test_scale_ms(1500);
    o.answers_in_front = front ? authorizers : NULL;
    pad_len = 2 * o.request_timeout_ms / 50;
    pad = malloc(pad_len + sizeof("HTTP_X_PAD="));
    CU_ASSERT_PTR_NOT_NULL_FATAL(pad);
    memcpy(pad, "HTTP_X_PAD=", 11);
    memset(pad + 11, 'p', pad_len);
    pad[11 + pad_len] = '\0';
    vars[1] = pad;
    tsrv_start_opts(&s, NULL, &o);
    fcbuf_begin(&head, 1, front ? FCGI_AUTHORIZER : FCGI_RESPONDER, 0);
    fcbuf_params(&rest, 1, vars, 65535);
    t0 = mono_ms();
    trickle_start(&tr, &s, &head, &rest, 50);
    CU_ASSERT_EQUAL(whole_requests(&s, 20, front, &max_ms), 20);
    fprintf(stderr, " [slowest of 20 while %d trickled PARAMS: %lld ms]",
            HOSTILE, max_ms);
    if (!front) {
        CU_ASSERT_TRUE(max_ms < test_scale_ms(500));
    }
    CU_ASSERT_TRUE(trickle_all_closed(&tr, test_scale_ms(3000)));
    CU_ASSERT_TRUE(mono_ms() - t0 >= (long long)o.request_timeout_ms - 100);
    mw_server_stats(s.s, &st);
    CU_ASSERT_EQUAL(st.timed_out, HOSTILE);
    CU_ASSERT_EQUAL(st.requests, 20);
    CU_ASSERT_EQUAL(st.in_front, front ? 20 : 0);
    trickle_stop(&tr);
    fcbuf_free(&head);
    fcbuf_free(&rest);
    free(pad);
    tsrv_stop(&s);
}

static void test_slow_params(void)
{
    slow_params(false);
}

static void test_slow_params_front(void)
{
    slow_params(true);
}

/* A thousand connections that send nothing, far over the cap of 64: the
 * oldest make room, whole requests are served at once (with front, by
 * the front itself). */
static void idle_flood(bool front)
{
    enum { FLOOD = 1000, CAP = 64 };
    static int fds[FLOOD];
    mw_server_opts_t o;
    mw_server_stats_t st;
    long long max_ms;
    int opened = 0;
    tsrv_t s;

    memset(&o, 0, sizeof(o));
    o.workers = 2;
    o.max_connections = CAP;
    o.idle_timeout_ms = 60000;
    o.answers_in_front = front ? authorizers : NULL;
    tsrv_start_opts(&s, NULL, &o);
    for (int i = 0; i < FLOOD; i++) {
        fds[i] = fcc_connect(s.path);
        opened += fds[i] >= 0;
    }
    CU_ASSERT_EQUAL(opened, FLOOD);
    CU_ASSERT_EQUAL(whole_requests(&s, 20, front, &max_ms), 20);
    fprintf(stderr, " [slowest of 20 after %d idle connections: %lld ms]",
            FLOOD, max_ms);
    if (!front) {
        CU_ASSERT_TRUE(max_ms < test_scale_ms(500));
    }
    mw_server_stats(s.s, &st);
    CU_ASSERT_EQUAL(st.in_front, front ? 20 : 0);
    CU_ASSERT_TRUE(st.open <= CAP);
    CU_ASSERT_TRUE(st.evicted >= FLOOD - CAP);
    for (int i = 0; i < FLOOD; i++) {
        if (fds[i] >= 0) {
            close(fds[i]);
        }
    }
    tsrv_stop(&s);
}

static void test_idle_flood(void)
{
    idle_flood(false);
}

static void test_idle_flood_front(void)
{
    idle_flood(true);
}

/* Bodies trickled after whole PARAMS on more connections than workers:
 * at most half the workers read them; whole requests get the others. */
static void test_slow_bodies(void)
{
    const char *vars[] = {"MODE=echo", NULL};
    static char body[1000];
    mw_server_opts_t o;
    fcbuf_t head = {0}, rest = {0};
    mw_server_stats_t st;
    long long max_ms;
    trickle_t tr;
    tsrv_t s;

    memset(&o, 0, sizeof(o));
    o.workers = 4;
    o.request_timeout_ms = test_scale_ms(2000);
    tsrv_start_opts(&s, NULL, &o);
    fcbuf_begin(&head, 1, FCGI_RESPONDER, 0);
    fcbuf_params(&head, 1, vars, 65535);
    memset(body, 'b', sizeof(body));
    fcbuf_stream(&rest, FCGI_STDIN, 1, body, sizeof(body));
    trickle_start(&tr, &s, &head, &rest, 50);
    CU_ASSERT_TRUE(tsrv_wait_stat(&s, offsetof(mw_server_stats_t, busy), 2));
    CU_ASSERT_EQUAL(whole_requests(&s, 20, false, &max_ms), 20);
    fprintf(stderr, " [slowest of 20 while %d trickled bodies: %lld ms]",
            HOSTILE, max_ms);
    CU_ASSERT_TRUE(max_ms < test_scale_ms(500));
    mw_server_stats(s.s, &st);
    CU_ASSERT_TRUE(st.busy <= 2);
    CU_ASSERT_TRUE(trickle_all_closed(&tr, test_scale_ms(4000)));
    mw_server_stats(s.s, &st);
    CU_ASSERT_EQUAL(st.timed_out, HOSTILE);
    trickle_stop(&tr);
    fcbuf_free(&head);
    fcbuf_free(&rest);
    tsrv_stop(&s);
}

int add_fcgi_slow_tests(CU_pSuite s)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        {"slow PARAMS hold no worker", test_slow_params},
        {"idle flood over the cap", test_idle_flood},
        {"slow bodies hold half the workers", test_slow_bodies},
        {"slow PARAMS while the front answers", test_slow_params_front},
        {"idle flood while the front answers", test_idle_flood_front},
    };

    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return 0;
}
