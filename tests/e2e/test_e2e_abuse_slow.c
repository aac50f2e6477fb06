/*
 * test_e2e_abuse_slow.c - the "abuse" suite: slow and idle peers of the
 * daemon's socket, while a browser uses the site.
 *
 * The shipped CGI shape (nginx -> suspect-fcgi -> app.cgi, 8 workers),
 * with requestTimeout lowered to 3 s (times SUSPECT_TEST_SCALE) so the
 * test sees the deadline act.  Straight on suspect-fcgi's socket, the
 * attacker opens
 *   - 10,000 connections that send nothing (as many as the test's own
 *     descriptor limit allows, said on stderr);
 *   - then 8 connections that trickle a PARAMS record, a byte every
 *     200 ms, and 8 that send whole PARAMS and then trickle a body;
 * and meanwhile a client asks nginx for 150 promotion lookups, one after
 * the other, each timed from connect to the end of the response (the
 * median and the maximum are printed).  Every one must be answered 200
 * by the application.  The first one must be answered while the daemon
 * still holds every connection trickling its PARAMS: had they taken the
 * 8 workers, it would have waited until requestTimeout cut one (an order
 * of events, not a speed a loaded machine may miss).  Then the trickling
 * connections must have been closed by the daemon (at the request
 * deadline, or, for a body the program left unread, at the end of the
 * lingering close that follows its response), and the site must still
 * answer.
 *
 * The same attack on the nginx auth_request shape (memory store), where
 * the front thread decides and answers each subrequest itself: every
 * lookup answered by the application, and every subrequest answered by
 * the front (suspect_fastcgi_requests_in_front_total), while it holds
 * the trickling and idle connections.
 */
#include <CUnit/CUnit.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"
#include "helpers/backlog.h"
#include "helpers/e2e.h"
#include "helpers/redisserver.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"
#include "test_e2e_abuse.h"
#include "test_e2e_faults.h"

#define TRICKLERS 8
#define IDLE_WANT 10000
#define REQUESTS  150

/* The attacker's connections and the thread that trickles. */
typedef struct slow {
    int trickle[2 * TRICKLERS]; /* PARAMS, then bodies */
    char rest[2 * TRICKLERS][2048];
    size_t rest_len[2 * TRICKLERS], sent[2 * TRICKLERS];
    int *idle;
    int nidle;
    pthread_t th;
    atomic_bool stop;
} slow_t;

/* Sends all of p; 0 or -1 (the daemon may have closed). */
static int send_raw(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t r = send(fd, p, n, MSG_NOSIGNAL);

        if (r <= 0) {
            return -1;
        }
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

/* Whether the daemon closes fd within ms (what it still sends is read
 * and dropped). */
static bool wait_closed(int fd, unsigned ms)
{
    static char sink[65536];
    bool eof = false;

    e2e_read_until_eof(fd, sink, sizeof(sink), ms, &eof);
    return eof;
}

/* A connection to the daemon's socket that never blocks: a daemon that
 * stopped accepting lets its backlog fill, and then this fails (-1)
 * instead of waiting. */
static int connect_nowait(void)
{
    struct sockaddr_un un;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

    if (fd < 0) {
        return -1;
    }
    memset(&un, 0, sizeof(un));
    un.sun_family = AF_UNIX;
    if (strlen(e2e.sock) >= sizeof(un.sun_path)) {
        close(fd);
        return -1;
    }
    memcpy(un.sun_path, e2e.sock, strlen(e2e.sock) + 1);
    if (connect(fd, (struct sockaddr *)&un, sizeof(un)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void *trickle_main(void *arg)
{
    slow_t *s = arg;

    while (!atomic_load(&s->stop)) {
        for (int i = 0; i < 2 * TRICKLERS; i++) {
            if (s->trickle[i] >= 0 && s->sent[i] < s->rest_len[i] &&
                send_raw(s->trickle[i], s->rest[i] + s->sent[i], 1) == 0) {
                s->sent[i]++;
            }
        }
        usleep(200000);
    }
    return NULL;
}

/* The FastCGI bytes of a whole request header (BEGIN + PARAMS) into buf,
 * and whether the PARAMS end it (else the caller trickles them). */
static size_t request_bytes(char *buf, size_t cap, bool body)
{
    char params[1024];
    size_t plen = 0, len = 0;
    const char *vars[] = {"REQUEST_METHOD",
                          body ? "POST" : "GET",
                          "REQUEST_URI",
                          "/app.cgi?op=promo",
                          "QUERY_STRING",
                          "op=promo&member=slow&code=c",
                          "SCRIPT_NAME",
                          "/app.cgi",
                          "CONTENT_LENGTH",
                          body ? "1000" : "0",
                          "REMOTE_ADDR",
                          "192.0.2.66",
                          NULL};
    unsigned char begin[16] = {1, 1, 0, 1, 0, 8, 0, 0, 0, 1, 0};

    for (size_t i = 0; vars[i] != NULL; i += 2) {
        e2e_fcgi_pair(params, sizeof(params), &plen, vars[i], vars[i + 1]);
    }
    memcpy(buf, begin, 16);
    len = 16;
    buf[len++] = 1;
    buf[len++] = 4; /* PARAMS */
    buf[len++] = 0;
    buf[len++] = 1;
    buf[len++] = (char)(plen >> 8);
    buf[len++] = (char)plen;
    buf[len++] = 0;
    buf[len++] = 0;
    memcpy(buf + len, params, plen);
    len += plen;
    memcpy(buf + len, "\1\4\0\1\0\0\0\0", 8); /* the empty PARAMS */
    len += 8;
    if (body) {
        memcpy(buf + len, "\1\5\0\1\3\350\0\0", 8); /* STDIN of 1000 */
        len += 8;
    }
    (void)cap;
    return len;
}

/* Opens the attack: the idle connections, then the trickling ones; 0
 * or -1. */
static int attack_start(slow_t *s)
{
    struct rlimit rl;
    char head[2048];
    int connected = 0;
    long long deadline;
    size_t n;

    memset(s, 0, sizeof(*s));
    for (int i = 0; i < 2 * TRICKLERS; i++) {
        s->trickle[i] = -1;
    }
    /* As many idle connections as this process may open, up to 10,000. */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    s->nidle = IDLE_WANT;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
        rl.rlim_cur < (rlim_t)IDLE_WANT + 512) {
        s->nidle = (int)rl.rlim_cur - 512;
    }
    s->idle = calloc((size_t)s->nidle, sizeof(int));
    /* A full backlog is waited for, 5 s in all: a daemon that accepts
     * gets every connection, one that does not cannot stall the test. */
    deadline = mono_ms() + test_scale_ms(5000);
    for (int i = 0; s->idle != NULL && i < s->nidle; i++) {
        while ((s->idle[i] = connect_nowait()) < 0 && mono_ms() < deadline) {
            usleep(1000);
        }
        connected += s->idle[i] >= 0;
    }
    /* The last of them may still wait in the kernel's listen backlog:
     * the daemon takes them in before the trickling connections come
     * (while the backlog is full, a web server's connect fails at once:
     * see docs/SECURITY.md). */
    if (!test_unix_backlog_drained(e2e.sock, 5000)) {
        fprintf(stderr, " [the daemon left %d idle connections unaccepted]",
                test_unix_backlog(e2e.sock));
        return -1;
    }
    /* Then the trickling connections, the clock of their request deadline
     * starting right before the client's requests. */
    for (int i = 0; i < 2 * TRICKLERS; i++) {
        bool body = i >= TRICKLERS;

        s->trickle[i] = e2e_fcgi_connect();
        n = request_bytes(head, sizeof(head), body);
        if (s->trickle[i] < 0) {
            return -1;
        }
        if (body) {
            /* whole PARAMS now, the body a byte at a time */
            if (send_raw(s->trickle[i], head, n) != 0) {
                return -1;
            }
            memset(s->rest[i], 'b', 1000);
            s->rest_len[i] = 1000;
        } else {
            /* BEGIN_REQUEST now, the PARAMS a byte at a time */
            if (send_raw(s->trickle[i], head, 16) != 0) {
                return -1;
            }
            memcpy(s->rest[i], head + 16, n - 16);
            s->rest_len[i] = n - 16;
        }
    }
    /* And the daemon holds them all before the client's first request:
     * a trickling connection still in the backlog could not take a
     * worker, and "held at the first answer" would prove nothing. */
    if (!test_unix_backlog_drained(e2e.sock, 5000)) {
        return -1;
    }
    fprintf(stderr,
            " [%d trickling PARAMS, %d trickling bodies, %d of %d idle "
            "connected]",
            TRICKLERS, TRICKLERS, connected, s->nidle);
    return pthread_create(&s->th, NULL, trickle_main, s) == 0 ? 0 : -1;
}

static void attack_stop(slow_t *s)
{
    atomic_store(&s->stop, true);
    pthread_join(s->th, NULL);
    for (int i = 0; i < 2 * TRICKLERS; i++) {
        if (s->trickle[i] >= 0) {
            close(s->trickle[i]);
        }
    }
    for (int i = 0; s->idle != NULL && i < s->nidle; i++) {
        if (s->idle[i] >= 0) {
            close(s->idle[i]);
        }
    }
    free(s->idle);
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;

    return x < y ? -1 : x > y;
}

/* How many of the connections trickling their PARAMS the daemon has not
 * closed yet (it sends them nothing before it closes them; a trickling
 * body may be answered before it is read). */
static int trickling_held(const slow_t *s)
{
    struct pollfd p[TRICKLERS];
    int held = 0;

    for (int i = 0; i < TRICKLERS; i++) {
        p[i].fd = s->trickle[i];
        p[i].events = POLLIN;
        p[i].revents = 0;
    }
    if (poll(p, TRICKLERS, 0) < 0) {
        return -1;
    }
    for (int i = 0; i < TRICKLERS; i++) {
        held += p[i].revents == 0;
    }
    return held;
}

/* The attack on the CGI shape (auth false) or the auth_request shape,
 * whose <Metrics> listen on port. */
static void slow_clients(bool auth, int port)
{
    char server[64], store[128];
    const char *edits[] = {"workers=\"8\"", server, "<Store type=\"memory\"/>",
                           store, NULL};
    const char *page = auth ? "/index.php" : "/app.cgi";
    long long ms[REQUESTS], t0;
    char path[128];
    int ok = 0, closed = 0, n = 0, held = -1;
    slow_t s;

    snprintf(server, sizeof(server), "workers=\"8\" requestTimeout=\"%u\"",
             test_scale_ms(3000) / 1000);
    snprintf(
        store, sizeof(store),
        "<Store type=\"memory\"/>\n  <Metrics listen=\"tcp:127.0.0.1:%d\"/>",
        port);
    CU_ASSERT_FATAL((auth ? flt_start_auth(edits) : e2e_start_cgi(edits)) == 0);
    CU_ASSERT_FATAL(attack_start(&s) == 0);
    t0 = mono_ms();
    /* A request slower than 3 s has failed; after 5 failures, stop. */
    for (; n < REQUESTS && n - ok < 5; n++) {
        flt_resp_t r;

        snprintf(path, sizeof(path), "%s?op=promo&member=m%d&code=c", page, n);
        flt_http(&r, "GET", path, NULL, 3000);
        /* the body is chunked: the app's answer follows a length */
        if (r.status == 200 && r.complete && strstr(r.body, "ok promo")) {
            ok++;
        } else {
            fprintf(stderr, "\n  %s: %d after %lld ms", path, r.status, r.ms);
        }
        ms[n] = r.ms;
        if (n == 0) {
            held = trickling_held(&s);
        }
    }
    qsort(ms, (size_t)n, sizeof(ms[0]), cmp_ll);
    fprintf(stderr,
            " [%d of %d answered; latency median %lld ms, max %lld ms; "
            "%d of %d trickling PARAMS held at the first answer]",
            ok, n, ms[n / 2], ms[n - 1], held, TRICKLERS);
    CU_ASSERT_EQUAL(ok, REQUESTS);
    CU_ASSERT_EQUAL(held, TRICKLERS);
    /* The trickling connections end at the request deadline (3 s from
     * their BEGIN_REQUEST, whatever they still send). */
    for (int i = 0; i < 2 * TRICKLERS; i++) {
        long long left = t0 + test_scale_ms(10000) - mono_ms();

        closed += wait_closed(s.trickle[i], left > 0 ? (unsigned)left : 0);
    }
    CU_ASSERT_EQUAL(closed, 2 * TRICKLERS);
    attack_stop(&s);
    snprintf(path, sizeof(path), "%s?op=promo&member=after&code=c", page);
    CU_ASSERT_EQUAL(flt_get(path), 200);
    if (auth) {
        double front =
            flt_metric(port, "\nsuspect_fastcgi_requests_in_front_total ");

        fprintf(stderr, " [%.0f subrequests answered by the front]", front);
        CU_ASSERT_TRUE(front >= REQUESTS + 1);
    }
}

static void test_slow_clients(void)
{
    slow_clients(false, test_free_port());
}

static void test_slow_clients_front(void)
{
    slow_clients(true, test_free_port());
}

int abuse_add_slow_tests(CU_pSuite s)
{
    return CU_add_test(s, "slow and idle peers: the site still answers",
                       test_slow_clients) == NULL ||
                   CU_add_test(s,
                               "slow and idle peers: the front's own answers",
                               test_slow_clients_front) == NULL
               ? -1
               : 0;
}
