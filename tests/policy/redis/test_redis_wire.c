/*
 * test_redis_wire.c - the Redis store's errors and its reading of the wire
 * (part of the "redis" suite, tests/policy/redis/redis_parts.h).
 *
 * Checked: clear errors for a refused connection, a wrong password, a
 * wrong db, a peer that is not Redis, one that never answers (timeout) and
 * one that never accepts (connect timeout); and decisions, status and a
 * script reload through a proxy that hands every answer of the real
 * redis-server over in 5-byte pieces, so that no answer arrives whole in
 * one read: the store's one-read decoding must then leave it to hiredis.
 */
#include <CUnit/CUnit.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "redis_parts.h"
#include "suspect_redis.h"
#include "helpers/backlog.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"

#define SEC 1000LL

static test_redis_t *srv;

/* The error of one decision on url (timeout_ms both ways). */
static suspect_rc_t decide_error(const char *url, unsigned timeout_ms,
                                 suspect_err_t *err)
{
    suspect_store_t *store = test_redis_store(url, timeout_ms, 0, NULL);
    suspect_rule_t rule = {"Err", 1, 60, 0, 0, 0, 0, 0, 0, 0, 0};
    suspect_key_t key = test_key("Err", "x");
    suspect_decision_t d;
    suspect_rc_t rc;

    suspect_err_clear(err);
    if (store == NULL) {
        return SUSPECT_E_INVAL;
    }
    rc = suspect_store_decide(store, &rule, &key, 1, wall_ms(), &d, err);
    if (rc != SUSPECT_OK) {
        CU_ASSERT_FALSE(d.allowed);
    }
    suspect_store_free(store);
    return rc;
}

static void test_connection_refused(void)
{
    char url[128], want[128];
    suspect_err_t err;
    int port = test_free_port();

    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", port);
    CU_ASSERT_EQUAL(decide_error(url, 1000, &err), SUSPECT_E_STORE);
    snprintf(want, sizeof(want), "redis 127.0.0.1:%d: connection refused",
             port);
    CU_ASSERT_STRING_EQUAL(err.text, want);
}

static void test_wrong_password(void)
{
    test_redis_t pw;
    char url[700];
    suspect_err_t err;

    CU_ASSERT_EQUAL_FATAL(test_redis_start(&pw, false, "s3cret"), 0);
    snprintf(url, sizeof(url), "unix://%s?password=wrong", pw.sock);
    CU_ASSERT_EQUAL(decide_error(url, 2000, &err), SUSPECT_E_STORE);
    CU_ASSERT_EQUAL(strncmp(err.text, "redis: WRONGPASS", 16), 0);
    snprintf(url, sizeof(url), "unix://%s", pw.sock);
    CU_ASSERT_EQUAL(decide_error(url, 2000, &err), SUSPECT_E_STORE);
    CU_ASSERT_EQUAL(strncmp(err.text, "redis: NOAUTH", 13), 0);
    CU_ASSERT_EQUAL(decide_error(pw.url, 2000, &err), SUSPECT_OK);
    test_redis_stop(&pw);
}

static void test_wrong_db(void)
{
    char url[700];
    suspect_err_t err;

    snprintf(url, sizeof(url), "unix://%s?db=999", srv->sock);
    CU_ASSERT_EQUAL(decide_error(url, 2000, &err), SUSPECT_E_STORE);
    CU_ASSERT_STRING_EQUAL(err.text, "redis: ERR DB index is out of range");
}

/* A loopback listener that answers each connection with garbage (or with
 * nothing, when silent) and closes it after a while. */
typedef struct fake {
    int fd, port;
    bool silent;
    pthread_t tid;
} fake_t;

static void *fake_run(void *p)
{
    fake_t *f = p;
    int c;

    while ((c = accept(f->fd, NULL, NULL)) >= 0) {
        if (!f->silent) {
            static const char junk[] = "HTTP/1.0 400 Bad Request\r\n\r\n";
            ssize_t w = send(c, junk, sizeof(junk) - 1, MSG_NOSIGNAL);
            (void)w;
        }
        usleep(f->silent ? 500000 : 50000);
        close(c);
    }
    return NULL;
}

static int fake_start(fake_t *f, bool silent)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);

    f->silent = silent;
    f->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (f->fd < 0 || bind(f->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        listen(f->fd, 8) != 0 ||
        getsockname(f->fd, (struct sockaddr *)&sa, &len) != 0) {
        return -1;
    }
    f->port = ntohs(sa.sin_port);
    return pthread_create(&f->tid, NULL, fake_run, f);
}

static void fake_stop(fake_t *f)
{
    shutdown(f->fd, SHUT_RDWR);
    close(f->fd);
    pthread_join(f->tid, NULL);
}

static void test_not_redis(void)
{
    fake_t f;
    char url[64];
    suspect_err_t err;

    CU_ASSERT_EQUAL_FATAL(fake_start(&f, false), 0);
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", f.port);
    CU_ASSERT_EQUAL(decide_error(url, 2000, &err), SUSPECT_E_STORE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, ": not a Redis server ("));
    CU_ASSERT_EQUAL(strncmp(err.text, "redis 127.0.0.1:", 16), 0);
    fake_stop(&f);
}

/* Whether text says what, then a number of ms in 1..most: the time an
 * operation had left of its deadline (less than the whole timeout when
 * the thread lost the CPU before it started to wait). */
static bool said_within(const char *text, const char *what, long most)
{
    const char *w = strstr(text, what);
    long ms = w != NULL ? strtol(w + strlen(what), NULL, 10) : -1;

    if (ms <= 0 || ms > most) {
        fprintf(stderr, "redis-wire: the error said: %s\n", text);
        return false;
    }
    return true;
}

static void test_timeout(void)
{
    fake_t f;
    char url[64];
    suspect_err_t err;
    int64_t t0;

    CU_ASSERT_EQUAL_FATAL(fake_start(&f, true), 0);
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", f.port);
    t0 = mono_ms();
    CU_ASSERT_EQUAL(decide_error(url, 100, &err), SUSPECT_E_TIMEOUT);
    CU_ASSERT_TRUE(mono_ms() - t0 < test_scale_ms(2000));
    /* within the time the connect left of the 100 ms */
    CU_ASSERT_TRUE(said_within(err.text, "no answer within ", 100));
    fake_stop(&f);
}

/* A listener whose accept queue is full and never drained: further SYNs
 * are dropped on loopback, so connecting times out. */
static void test_connect_timeout(void)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), fill[4];
    char url[64];
    suspect_err_t err;
    int64_t t0;

    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CU_ASSERT_FATAL(lfd >= 0);
    CU_ASSERT_FATAL(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
    CU_ASSERT_FATAL(listen(lfd, 0) == 0);
    CU_ASSERT_FATAL(getsockname(lfd, (struct sockaddr *)&sa, &len) == 0);
    for (int i = 0; i < 4; i++) {
        fill[i] =
            socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        (void)connect(fill[i], (struct sockaddr *)&sa, sizeof(sa));
    }
    /* the queue is full once a handshake completed: only then is the
     * store's SYN dropped */
    for (int64_t end = mono_ms() + test_scale_ms(2000);
         !test_tcp_backlog_full(lfd) && mono_ms() < end;) {
        usleep(1000);
    }
    CU_ASSERT_TRUE(test_tcp_backlog_full(lfd));
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", ntohs(sa.sin_port));
    t0 = mono_ms();
    CU_ASSERT_EQUAL(decide_error(url, 200, &err), SUSPECT_E_TIMEOUT);
    CU_ASSERT_TRUE(mono_ms() - t0 < test_scale_ms(3000));
    CU_ASSERT_TRUE(said_within(err.text, "cannot connect within ", 200));
    for (int i = 0; i < 4; i++) {
        close(fill[i]);
    }
    close(lfd);
}

/* ---- answers split over reads -------------------------------------------
 */

/* A loopback TCP proxy to the real server's unix socket that forwards
 * requests as they come and answers in 5-byte pieces, 300 us apart.  One
 * client at a time. */
typedef struct proxy {
    int lfd, port;
    pthread_t tid;
} proxy_t;

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        /* MSG_NOSIGNAL: a client that gave up must not kill the runner. */
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0) {
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Forwards between client c and server s until either closes. */
static void shuttle(int c, int s)
{
    struct pollfd p[2] = {{c, POLLIN, 0}, {s, POLLIN, 0}};
    char buf[4096];
    ssize_t n;

    while (poll(p, 2, 10000) > 0) {
        if (p[0].revents != 0) {
            n = read(c, buf, sizeof(buf));
            if (n <= 0 || write_all(s, buf, (size_t)n) != 0) {
                return;
            }
        }
        if (p[1].revents != 0) {
            n = read(s, buf, sizeof(buf));
            if (n <= 0) {
                return;
            }
            for (ssize_t off = 0; off < n; off += 5) {
                if (write_all(c, buf + off,
                              n - off < 5 ? (size_t)(n - off) : 5) != 0) {
                    return;
                }
                usleep(300);
            }
        }
    }
}

static void *proxy_run(void *arg)
{
    proxy_t *px = arg;
    struct sockaddr_un sa;
    int c, s, one = 1;

    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    if (strlen(srv->sock) >= sizeof(sa.sun_path)) {
        return NULL;
    }
    memcpy(sa.sun_path, srv->sock, strlen(srv->sock) + 1);
    while ((c = accept(px->lfd, NULL, NULL)) >= 0) {
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s >= 0 && connect(s, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
            shuttle(c, s);
        }
        if (s >= 0) {
            close(s);
        }
        close(c);
    }
    return NULL;
}

static int proxy_start(proxy_t *px)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);

    px->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (px->lfd < 0 || bind(px->lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        listen(px->lfd, 8) != 0 ||
        getsockname(px->lfd, (struct sockaddr *)&sa, &len) != 0) {
        return -1;
    }
    px->port = ntohs(sa.sin_port);
    return pthread_create(&px->tid, NULL, proxy_run, px);
}

static void proxy_stop(proxy_t *px)
{
    shutdown(px->lfd, SHUT_RDWR);
    close(px->lfd);
    pthread_join(px->tid, NULL);
}

static suspect_decision_t decide_n(suspect_store_t *s, const suspect_rule_t *r,
                                   const suspect_key_t *keys, size_t n,
                                   int64_t at)
{
    suspect_decision_t d;
    suspect_err_t err;

    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(suspect_store_decide(s, r, keys, n, at, &d, &err),
                    SUSPECT_OK);
    if (err.code != 0) {
        fprintf(stderr, "split answers: %s\n", err.text);
    }
    return d;
}

static void test_split_answers(void)
{
    suspect_rule_t r = {"Split", 2, 60, 600, 0, 0, 0, 0, 0, 0, 0};
    suspect_key_t keys[8];
    suspect_redis_stats_t st;
    suspect_status_t ps;
    suspect_decision_t d;
    suspect_store_t *s;
    proxy_t px;
    char url[64], id[16];
    int64_t t = wall_ms();

    for (int i = 0; i < 8; i++) {
        snprintf(id, sizeof(id), "id%d", i);
        keys[i] = test_key("Split", id);
    }
    freeReplyObject(test_redis_cmd(srv, "FLUSHALL"));
    CU_ASSERT_EQUAL_FATAL(proxy_start(&px), 0);
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d", px.port);
    s = test_redis_store(url, 2000, 0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);

    d = decide_n(s, &r, keys, 1, t);
    CU_ASSERT_TRUE(d.allowed);
    CU_ASSERT_EQUAL(d.remaining, 1);
    CU_ASSERT_TRUE(decide_n(s, &r, keys, 1, t + 1).allowed);
    d = decide_n(s, &r, keys, 1, t + 2);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(d.restriction_end_ms, t + 2 + 600 * SEC);
    CU_ASSERT_EQUAL(suspect_store_status(s, &r, keys, t + 3, &ps, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(ps.in_window, 2);
    CU_ASSERT_EQUAL(ps.locked_until_ms, t + 2 + 600 * SEC);
    /* The longest answer: 8 identities (34 integers). */
    d = decide_n(s, &r, keys + 1, 7, t + 4);
    CU_ASSERT_TRUE(d.allowed);
    CU_ASSERT_EQUAL(d.remaining, 1);
    d = decide_n(s, &r, keys, 8, t + 5);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_EQUAL(d.tripped, 0);
    /* NOSCRIPT arrives in pieces too: reloaded, answered. */
    freeReplyObject(test_redis_cmd(srv, "SCRIPT FLUSH"));
    CU_ASSERT_TRUE(decide_n(s, &r, keys + 1, 7, t + 6).allowed);
    CU_ASSERT_EQUAL(test_redis_int(srv, "ZCARD Split:id7"), 2);
    suspect_redis_stats(s, &st);
    CU_ASSERT_EQUAL(st.errors, 0);
    CU_ASSERT_EQUAL(st.reloads, 1);
    suspect_store_free(s);
    proxy_stop(&px);
}

/* ---- registration --------------------------------------------------------
 */

int redis_wire_register(CU_pSuite s, test_redis_t *server)
{
    static const struct {
        const char *name;
        CU_TestFunc fn;
    } tests[] = {
        {"connection refused", test_connection_refused},
        {"wrong password", test_wrong_password},
        {"wrong db", test_wrong_db},
        {"not a Redis server", test_not_redis},
        {"timeout", test_timeout},
        {"connect timeout", test_connect_timeout},
        {"answers split over reads", test_split_answers},
    };

    srv = server;
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return 0;
}
