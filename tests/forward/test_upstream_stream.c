/*
 * test_upstream_stream.c - the FastCGI client moving a lot at once, against
 * a real php-cgi: 4 MiB of body and 4 MiB of response at the same time
 * (big.php writes before it reads, so a client that sends the whole body
 * first would deadlock), from memory and from a pipe fed by a thread (the
 * poll() path of the body); php-cgi children exiting after
 * PHP_FCGI_MAX_REQUESTS (every request still succeeds, retries counted);
 * a client that goes away mid-response; 8 threads x 50 requests.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "upstream_test.h"

#define BIG (4u << 20)

/* The body pattern big.php checks: byte i is i % 251. */
static char *test_pattern(size_t n)
{
    char *p = malloc(n);

    for (size_t i = 0; p != NULL && i < n; i++) {
        p[i] = (char)(i % 251);
    }
    return p;
}

/* Checks big.php's answer: n 'x', then the body length and OK. */
static void check_big(const fakereq_t *r, size_t n)
{
    char tail[64];
    const char *b;

    CU_ASSERT_PTR_NOT_NULL_FATAL(r->out);
    b = strstr(r->out, "\r\n\r\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    b += 4;
    snprintf(tail, sizeof(tail), "\n%zu OK", n);
    CU_ASSERT_EQUAL(r->out_len - (size_t)(b - r->out), n + strlen(tail));
    CU_ASSERT(strspn(b, "x") == n);
    CU_ASSERT_STRING_EQUAL(b + n, tail);
}

/* A body pipe fed by a thread: read_fd is real, reads without wait
 * return -EAGAIN. */
typedef struct pipereq {
    fakereq_t f;
    mw_req_ops_t ops;
    int rfd;
    int wfd;
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
        if (errno != EAGAIN || !wait) {
            return -errno;
        }
        poll(&pf, 1, 5000);
    }
}

static int pipe_read_fd(mw_req_t *req)
{
    return ((pipereq_t *)req)->rfd;
}

static void *pipe_writer(void *arg)
{
    pipereq_t *p = arg;
    size_t off = 0;

    while (off < p->len) {
        ssize_t k = write(p->wfd, p->data + off, p->len - off);

        if (k <= 0) {
            break;
        }
        off += (size_t)k;
    }
    close(p->wfd);
    return NULL;
}

/* 4 MiB each way at once: big.php writes its response before it reads
 * the body, so both must move together; from memory and from a pipe. */
static void test_big_both_ways(void)
{
    char *body = test_pattern(BIG);
    char q[32];
    up_php_t p;
    mw_upstream_t *u;
    pipereq_t pr;
    pthread_t th;
    int fds[2];
    up_vars_t v;
    mw_fwd_result_t res;

    CU_ASSERT_PTR_NOT_NULL_FATAL(body);
    CU_ASSERT_FATAL(up_php_start(&p, false, 0, 500) == 0);
    u = up_client(p.addr, 10000);
    snprintf(q, sizeof(q), "n=%u", BIG);
    fakereq_init(&pr.f, up_vars(&v, "PUT", "big.php", q, BIG, NULL), body, BIG);
    pr.f.chunk = 50000;
    CU_ASSERT_EQUAL(mw_upstream_forward(u, &pr.f.req, &res, NULL), SUSPECT_OK);
    CU_ASSERT_EQUAL(res.status, 0);
    check_big(&pr.f, BIG);
    fakereq_free(&pr.f);

    CU_ASSERT_FATAL(pipe2(fds, O_NONBLOCK | O_CLOEXEC) == 0);
    fcntl(fds[1], F_SETFL, 0);
    fakereq_init(&pr.f, up_vars(&v, "PUT", "big.php", q, BIG, NULL), NULL, 0);
    pr.ops = *pr.f.req.ops;
    pr.ops.read = pipe_read;
    pr.ops.read_fd = pipe_read_fd;
    pr.f.req.ops = &pr.ops;
    pr.rfd = fds[0];
    pr.wfd = fds[1];
    pr.data = body;
    pr.len = BIG;
    CU_ASSERT_FATAL(pthread_create(&th, NULL, pipe_writer, &pr) == 0);
    CU_ASSERT_EQUAL(mw_upstream_forward(u, &pr.f.req, &res, NULL), SUSPECT_OK);
    pthread_join(th, NULL);
    close(fds[0]);
    CU_ASSERT_EQUAL(res.status, 0);
    check_big(&pr.f, BIG);
    fakereq_free(&pr.f);
    mw_upstream_free(u);
    up_php_stop(&p);
    free(body);
}

/* php-cgi children exit after 5 requests (the master starts new ones),
 * closing their connection a few microseconds after the last answer:
 * every request still succeeds, POSTs (never on a kept connection) and
 * GETs (a kept connection found closed is dropped, or the GET sent again
 * on a new one), with no 502. */
static void test_max_requests_restart(void)
{
    static const char body[] = "a=restart&b=2";
    up_php_t p;
    mw_upstream_t *u;
    mw_upstream_stats_t st;
    fakereq_t r;
    up_vars_t v;
    mw_fwd_result_t res;
    int ok = 0;

    CU_ASSERT_FATAL(up_php_start(&p, false, 1, 5) == 0);
    u = up_client(p.addr, 5000);
    for (int i = 0; i < 40; i++) {
        char q[32];

        if (i % 2 == 0) {
            fakereq_init(&r,
                         up_vars(&v, "POST", "form.php", "",
                                 (long long)strlen(body),
                                 "application/x-www-form-urlencoded"),
                         body, strlen(body));
        } else {
            snprintf(q, sizeof(q), "t=r%d", i);
            fakereq_init(&r, up_vars(&v, "GET", "hello.php", q, -1, NULL), NULL,
                         0);
        }
        if (mw_upstream_forward(u, &r.req, &res, NULL) == SUSPECT_OK &&
            res.status == 0 && r.out != NULL &&
            strstr(r.out, i % 2 == 0 ? "CL=13;a=restart;b=2" : "hello GET r") !=
                NULL) {
            ok++;
        }
        fakereq_free(&r);
    }
    CU_ASSERT_EQUAL(ok, 40);
    mw_upstream_stats(u, &st);
    /* Children end at requests 5, 10, ...: a GET follows every other. */
    CU_ASSERT(st.retries + st.stale >= 3);
    CU_ASSERT(st.connects >= 20);
    CU_ASSERT_EQUAL(st.failures, 0);
    mw_upstream_free(u);
    up_php_stop(&p);
}

/* The client goes away mid-response: the connection is closed, not
 * pooled, and the next request gets a new one. */
static int write_fail(mw_req_t *req, const void *buf, size_t n)
{
    fakereq_t *f = (fakereq_t *)req;

    (void)buf;
    f->out_len += n;
    return f->out_len > 100000 ? -EPIPE : 0;
}

static void test_client_gone(void)
{
    char q[32];
    up_php_t p;
    mw_upstream_t *u;
    mw_upstream_stats_t st;
    fakereq_t r;
    mw_req_ops_t ops;
    up_vars_t v;
    mw_fwd_result_t res;

    CU_ASSERT_FATAL(up_php_start(&p, false, 2, 500) == 0);
    u = up_client(p.addr, 5000);
    snprintf(q, sizeof(q), "n=%u", BIG);
    fakereq_init(&r, up_vars(&v, "GET", "big.php", q, -1, NULL), NULL, 0);
    ops = *r.req.ops;
    ops.write = write_fail;
    r.req.ops = &ops;
    CU_ASSERT_EQUAL(mw_upstream_forward(u, &r.req, &res, NULL), SUSPECT_OK);
    CU_ASSERT_EQUAL(res.status, 0);
    fakereq_free(&r);
    CU_ASSERT_EQUAL(up_get(u, &r, "hello.php", "t=after"), 0);
    CU_ASSERT(r.out != NULL && strstr(r.out, "hello GET after") != NULL);
    fakereq_free(&r);
    mw_upstream_stats(u, &st);
    CU_ASSERT_EQUAL(st.connects, 2);
    CU_ASSERT_EQUAL(st.reused, 0);
    mw_upstream_free(u);
    up_php_stop(&p);
}

typedef struct worker {
    mw_upstream_t *u;
    int id;
    int ok;
} worker_t;

static void *worker_main(void *arg)
{
    worker_t *w = arg;

    for (int i = 0; i < 50; i++) {
        char q[64], want[80];
        fakereq_t r;

        snprintf(q, sizeof(q), "t=w%d-%d", w->id, i);
        snprintf(want, sizeof(want), "\r\n\r\nhello GET w%d-%d", w->id, i);
        if (up_get(w->u, &r, "hello.php", q) == 0 && r.out != NULL &&
            strstr(r.out, want) != NULL &&
            strlen(strstr(r.out, want)) == strlen(want)) {
            w->ok++;
        }
        fakereq_free(&r);
    }
    return NULL;
}

/* 8 threads x 50 requests at once, children restarting every 40. */
static void test_threads(void)
{
    up_php_t p;
    mw_upstream_t *u;
    mw_upstream_stats_t st;
    worker_t w[8];
    pthread_t th[8];
    int ok = 0;

    CU_ASSERT_FATAL(up_php_start(&p, false, 8, 40) == 0);
    u = up_client(p.addr, 5000);
    for (int i = 0; i < 8; i++) {
        w[i].u = u;
        w[i].id = i;
        w[i].ok = 0;
        CU_ASSERT_FATAL(pthread_create(&th[i], NULL, worker_main, &w[i]) == 0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(th[i], NULL);
        ok += w[i].ok;
    }
    CU_ASSERT_EQUAL(ok, 400);
    mw_upstream_stats(u, &st);
    CU_ASSERT_EQUAL(st.requests, 400);
    CU_ASSERT_EQUAL(st.failures, 0);
    CU_ASSERT(st.connects <= 8 + st.retries + st.stale);
    CU_ASSERT(st.reused >= 400 - st.connects);
    mw_upstream_free(u);
    up_php_stop(&p);
}

int upstream_stream_register(CU_pSuite s)
{
    if (!CU_add_test(s, "4 MiB both ways", test_big_both_ways) ||
        !CU_add_test(s, "max requests restart", test_max_requests_restart) ||
        !CU_add_test(s, "client gone", test_client_gone) ||
        !CU_add_test(s, "threads", test_threads)) {
        return -1;
    }
    return 0;
}
