/*
 * fcgiapp.c - the server under test and the small app it runs (see
 * fcgiclient.h): a real mw_server on a unix socket in a temp dir, and a
 * handler whose behaviour each request picks with its MODE variable.  The
 * handlers report to the tests through a mutex-protected record.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "fcgiclient.h"
#include "fcgi/listen.h"
#include "util.h"
#include "vgwrap.h"

#define HEAD "Status: 200 OK\r\nContent-Type: text/plain\r\n\r\n"

static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int started;
    bool go;
    long last_read;
    long first_read;
} app = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, false, 0, 0};

uint8_t fcc_pattern(size_t i)
{
    return (uint8_t)('a' + (i * 7 + i / 251) % 26);
}

void tapp_reset(void)
{
    pthread_mutex_lock(&app.lock);
    app.started = 0;
    app.go = false;
    app.last_read = 0;
    app.first_read = 0;
    pthread_mutex_unlock(&app.lock);
}

static void report_started(void)
{
    pthread_mutex_lock(&app.lock);
    app.started++;
    pthread_cond_broadcast(&app.cond);
    pthread_mutex_unlock(&app.lock);
}

bool tapp_wait_started(int n, int timeout_ms)
{
    struct timespec ts;
    bool ok;

    timeout_ms = (int)test_scale_ms((unsigned)timeout_ms);
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += timeout_ms / 1000;
    ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&app.lock);
    while (app.started < n &&
           pthread_cond_timedwait(&app.cond, &app.lock, &ts) == 0) {
    }
    ok = app.started >= n;
    pthread_mutex_unlock(&app.lock);
    return ok;
}

void tapp_release(void)
{
    pthread_mutex_lock(&app.lock);
    app.go = true;
    pthread_cond_broadcast(&app.cond);
    pthread_mutex_unlock(&app.lock);
}

static void set_read(long *where, long v)
{
    pthread_mutex_lock(&app.lock);
    *where = v;
    pthread_mutex_unlock(&app.lock);
}

long tapp_last_read(void)
{
    long v;

    pthread_mutex_lock(&app.lock);
    v = app.last_read;
    pthread_mutex_unlock(&app.lock);
    return v;
}

long tapp_first_read(void)
{
    long v;

    pthread_mutex_lock(&app.lock);
    v = app.first_read;
    pthread_mutex_unlock(&app.lock);
    return v;
}

static void out(mw_req_t *req, const char *s)
{
    mw_req_write(req, s, strlen(s));
}

/* Prints the role and every variable; "BAD-NUL" when a value is not
 * NUL-terminated at its length. */
static void app_params(mw_req_t *req)
{
    char line[64];

    snprintf(line, sizeof(line), "role=%d\n", req->role);
    out(req, line);
    for (size_t i = 0; i < req->nparams; i++) {
        const mw_param_t *p = &req->params[i];

        mw_req_write(req, p->name, p->name_len);
        out(req, "=");
        mw_req_write(req, p->value, p->value_len);
        out(req, strlen(p->value) == p->value_len ? "\n" : "BAD-NUL\n");
    }
}

/* Reads the whole body, echoing it when echo; returns its length. */
static size_t app_drain(mw_req_t *req, bool echo)
{
    char buf[16384];
    size_t total = 0;
    ssize_t r;

    while ((r = mw_req_read(req, buf, sizeof(buf), true)) > 0) {
        total += (size_t)r;
        if (echo && mw_req_write(req, buf, (size_t)r) != 0) {
            break;
        }
    }
    set_read(&app.last_read, (long)r);
    return total;
}

/* Writes size bytes of the pattern in uneven pieces. */
static void app_big(mw_req_t *req, size_t size)
{
    static const size_t pieces[] = {1, 100, 4000, 70000, 65535, 200000, 7};
    uint8_t *buf = malloc(size + 1);
    size_t off = 0;

    for (size_t i = 0; i < size; i++) {
        buf[i] = fcc_pattern(i);
    }
    for (size_t k = 0; off < size; k++) {
        size_t n = pieces[k % 7] < size - off ? pieces[k % 7] : size - off;

        if (mw_req_write(req, buf + off, n) != 0) {
            break;
        }
        off += n;
    }
    free(buf);
}

static void app_hold(mw_req_t *req)
{
    report_started();
    pthread_mutex_lock(&app.lock);
    while (!app.go) {
        pthread_cond_wait(&app.cond, &app.lock);
    }
    pthread_mutex_unlock(&app.lock);
    out(req, "held\n");
}

/* Reads without waiting: the first read finds nothing (the test sends
 * the body only after "started"). */
static void app_nowait(mw_req_t *req)
{
    char buf[256];
    size_t total = 0;
    ssize_t r = mw_req_read(req, buf, sizeof(buf), false);

    set_read(&app.first_read, (long)r);
    report_started();
    for (;;) {
        int fd = mw_req_read_fd(req);

        if (fd >= 0) {
            struct pollfd p = {fd, POLLIN, 0};

            if (poll(&p, 1, 3000) <= 0) {
                r = -ETIMEDOUT;
                break;
            }
        }
        r = mw_req_read(req, buf + total, sizeof(buf) - 1 - total, false);
        if (r <= 0 && r != -EAGAIN) {
            break;
        }
        total += r > 0 ? (size_t)r : 0;
    }
    set_read(&app.last_read, (long)r);
    mw_req_write(req, buf, total);
}

static void app_prefetch(mw_req_t *req)
{
    const char *body;
    size_t len;
    bool complete;
    char line[128];

    if (mw_req_prefetch(req, 10, &body, &len, &complete) != SUSPECT_OK) {
        out(req, "prefetch failed\n");
        return;
    }
    snprintf(line, sizeof(line), "pre=%.*s complete=%d rest=", (int)len, body,
             complete);
    out(req, line);
    app_drain(req, true);
}

void fcgi_test_handler(mw_req_t *req, void *arg)
{
    const char *mode = mw_req_param(req, "MODE", NULL);
    const char *size_s = mw_req_param(req, "SIZE", NULL);
    size_t size = size_s != NULL ? strtoul(size_s, NULL, 10) : 0;
    char line[64];

    (void)arg;
    out(req, HEAD);
    if (mode == NULL || strcmp(mode, "params") == 0) {
        app_params(req);
    } else if (strcmp(mode, "echo") == 0) {
        app_drain(req, true);
    } else if (strcmp(mode, "big") == 0) {
        app_big(req, size);
    } else if (strcmp(mode, "writefirst") == 0) {
        app_big(req, size);
        snprintf(line, sizeof(line), "\nbody=%zu\n", app_drain(req, false));
        out(req, line);
    } else if (strcmp(mode, "hold") == 0) {
        app_hold(req);
    } else if (strcmp(mode, "nowait") == 0) {
        app_nowait(req);
    } else if (strcmp(mode, "prefetch") == 0) {
        app_prefetch(req);
    } else if (strcmp(mode, "readone") == 0) {
        mw_req_read(req, line, 1, true);
        mw_req_write(req, line, 1);
    } else if (strcmp(mode, "result") == 0) {
        report_started();
        app_drain(req, false);
        mw_req_write(req, "late", 4);
    }
}

int tsrv_start_on(tsrv_t *t, const char *spec, unsigned workers,
                  size_t params_max, unsigned idle_ms)
{
    mw_server_opts_t o;

    memset(&o, 0, sizeof(o));
    o.workers = workers;
    o.params_max = params_max;
    o.idle_timeout_ms = idle_ms;
    return tsrv_start_opts(t, spec, &o);
}

int tsrv_start_opts(tsrv_t *t, const char *spec, const mw_server_opts_t *opts)
{
    mw_server_opts_t o = *opts;
    suspect_err_t err;
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);

    memset(t, 0, sizeof(*t));
    t->lfd = -1;
    suspect_err_clear(&err);
    tapp_reset();
    t->dir = test_mkdtemp();
    CU_ASSERT_PTR_NOT_NULL_FATAL(t->dir);
    snprintf(t->path, sizeof(t->path), "%s/fcgi.sock", t->dir);
    snprintf(t->spec, sizeof(t->spec), "unix:%s", t->path);
    if (spec != NULL) {
        snprintf(t->spec, sizeof(t->spec), "%s", spec);
    }
    CU_ASSERT_EQUAL_FATAL(mw_listen_open(t->spec, 64, 0600, &t->lfd, &err),
                          SUSPECT_OK);
    snprintf(t->addr, sizeof(t->addr), "%s", t->spec);
    if (spec != NULL &&
        getsockname(t->lfd, (struct sockaddr *)&sa, &len) == 0 &&
        sa.sin_family == AF_INET) {
        snprintf(t->addr, sizeof(t->addr), "tcp:127.0.0.1:%d",
                 ntohs(sa.sin_port));
    }
    o.listen_fd = t->lfd;
    if (o.io_timeout_ms == 0) {
        o.io_timeout_ms = 3000;
    }
    o.handler = fcgi_test_handler;
    CU_ASSERT_EQUAL_FATAL(mw_server_new(&o, &t->s, &err), SUSPECT_OK);
    CU_ASSERT_EQUAL_FATAL(mw_server_start(t->s, &err), SUSPECT_OK);
    return 0;
}

int tsrv_start(tsrv_t *t, unsigned workers, size_t params_max, unsigned idle_ms)
{
    return tsrv_start_on(t, NULL, workers, params_max, idle_ms);
}

int tsrv_connect(tsrv_t *t)
{
    int fd = -1;

    return mw_connect(t->addr, 1000, &fd, NULL) == SUSPECT_OK ? fd : -1;
}

void tsrv_stop(tsrv_t *t)
{
    if (t->s != NULL) {
        mw_server_stop(t->s);
        mw_server_free(t->s);
        t->s = NULL;
    }
    if (t->lfd >= 0) {
        close(t->lfd);
        t->lfd = -1;
    }
    mw_listen_cleanup(t->spec);
    if (t->dir != NULL) {
        test_rmtree(t->dir);
        free(t->dir);
        t->dir = NULL;
    }
}

bool tsrv_wait_stat(tsrv_t *t, size_t off, uint64_t want)
{
    long long deadline = mono_ms() + test_scale_ms(3000);
    mw_server_stats_t st;

    do {
        uint64_t v;

        mw_server_stats(t->s, &st);
        if (off == offsetof(mw_server_stats_t, busy)) {
            v = st.busy;
        } else if (off == offsetof(mw_server_stats_t, open)) {
            v = st.open;
        } else {
            memcpy(&v, (const char *)&st + off, sizeof(v));
        }
        if (v == want) {
            return true;
        }
        usleep(1000);
    } while (mono_ms() < deadline);
    return false;
}
