/*
 * fcgi_server.c - the worker pool of the FastCGI server.
 *
 * Each of opts.workers threads owns one connection state (fcgi_conn.c)
 * and loops: accept4(SOCK_CLOEXEC) on the shared listening socket (the
 * kernel hands each connection to one blocked thread), serve it to the
 * end, accept again.  Workers inherit the signal mask of the thread that
 * calls mw_server_start(): the daemon blocks every signal first and waits
 * for them in one thread, so no system call here sees EINTR from a
 * handler (EINTR is retried anyway).
 *
 * Kept connections: a worker waiting for the next request on an idle kept
 * connection also watches the listening socket while no worker is in
 * accept() (the atomic accepting count); when a connection waits there,
 * one such worker closes its idle connection and accepts instead (see
 * wait_fd() in fcgi_io.c).  Without this, as many idle kept connections
 * as workers (nginx keeps up to "keepalive N" per nginx worker) would
 * starve every new connection for idle_timeout_ms.
 *
 * Stop: the stopping flag is set, the stop eventfd becomes readable (it
 * wakes every worker waiting on an idle connection, which then closes it)
 * and the listening socket is shut down, so every blocked accept() fails
 * and its worker exits.  A request in flight is served to its end first;
 * then the joins return.
 *
 * Counters are atomics, read without a lock by mw_server_stats().
 */
#include "fcgi_server.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "alloc.h"
#include "fcgi_conn.h"

#define DEFAULT_WORKERS    16
#define DEFAULT_PARAMS_MAX (128 * 1024)
#define DEFAULT_IO_MS      30000
#define DEFAULT_IDLE_MS    5000
#define ACCEPT_BACKOFF_MS  50

struct mw_server {
    fc_shared_t shared;
    int listen_fd;
    pthread_t *threads;
    conn_t **conns;
    unsigned started; /* threads running */
    pthread_mutex_t lock;
    bool refusing; /* the listening socket is shut down */
    bool stopped;
};

/* The worker argument: the server and this worker's connection. */
typedef struct worker {
    mw_server_t *s;
    conn_t *c;
} worker_t;

/* Whether the listening socket is TCP. */
static bool is_tcp(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);

    return getsockname(fd, (struct sockaddr *)&ss, &len) == 0 &&
           (ss.ss_family == AF_INET || ss.ss_family == AF_INET6);
}

suspect_rc_t mw_server_new(const mw_server_opts_t *opts, mw_server_t **out,
                           suspect_err_t *err)
{
    mw_server_t *s;
    fc_shared_t *sh;

    *out = NULL;
    if (opts == NULL || opts->handler == NULL || opts->listen_fd < 0) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "fcgi server: no handler or listening socket");
    }
    s = suspect_calloc(1, sizeof(*s));
    if (s == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "fcgi server: out of memory");
    }
    sh = &s->shared;
    sh->workers = opts->workers > 0 ? opts->workers : DEFAULT_WORKERS;
    sh->params_max =
        opts->params_max > 0 ? opts->params_max : DEFAULT_PARAMS_MAX;
    /* A pair takes 2 bytes at least; real ones take far more.  This
     * keeps the pair array about as large as params_max. */
    sh->pairs_max = sh->params_max / sizeof(mw_param_t) + 64;
    sh->io_timeout_ms =
        opts->io_timeout_ms > 0 ? opts->io_timeout_ms : DEFAULT_IO_MS;
    sh->idle_timeout_ms =
        opts->idle_timeout_ms > 0 ? opts->idle_timeout_ms : DEFAULT_IDLE_MS;
    sh->handler = opts->handler;
    sh->arg = opts->arg;
    sh->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (sh->stop_fd < 0) {
        suspect_err_sys(err, SUSPECT_E_IO, NULL, "fcgi server: eventfd");
        free(s);
        return SUSPECT_E_IO;
    }
    s->listen_fd = opts->listen_fd;
    sh->listen_fd = opts->listen_fd;
    sh->tcp = is_tcp(opts->listen_fd);
    pthread_mutex_init(&s->lock, NULL);
    *out = s;
    return SUSPECT_OK;
}

/* Sleeps ms, or less when the server stops. */
static void backoff(mw_server_t *s)
{
    struct pollfd p = {s->shared.stop_fd, POLLIN, 0};

    poll(&p, 1, ACCEPT_BACKOFF_MS);
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    mw_server_t *s = w->s;
    conn_t *c = w->c;
    int one = 1;

    free(w);
    for (;;) {
        int fd;

        if (!c->claimed) {
            atomic_fetch_add(&s->shared.accepting, 1);
        }
        c->claimed = false;
        fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        atomic_fetch_sub(&s->shared.accepting, 1);
        if (fd < 0) {
            if (atomic_load(&s->shared.stopping)) {
                break;
            }
            if (errno != EINTR && errno != ECONNABORTED) {
                backoff(s); /* EMFILE and friends: do not spin */
            }
            continue;
        }
        atomic_fetch_add(&s->shared.connections, 1);
        if (s->shared.tcp) {
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        }
        mw_fc_serve(c, fd);
    }
    return NULL;
}

/* Creates worker i; 0 or an error code. */
static suspect_rc_t spawn(mw_server_t *s, unsigned i, suspect_err_t *err)
{
    worker_t *w = suspect_malloc(sizeof(*w));
    int r;

    s->conns[i] = mw_fc_conn_new(&s->shared);
    if (w == NULL || s->conns[i] == NULL) {
        free(w);
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "fcgi server: out of memory");
    }
    w->s = s;
    w->c = s->conns[i];
    r = pthread_create(&s->threads[i], NULL, worker_main, w);
    if (r != 0) {
        free(w);
        errno = r;
        return suspect_err_sys(err, SUSPECT_E_IO, NULL,
                               "fcgi server: starting a worker thread");
    }
    return SUSPECT_OK;
}

suspect_rc_t mw_server_start(mw_server_t *s, suspect_err_t *err)
{
    unsigned n = s->shared.workers;
    suspect_rc_t rc = SUSPECT_OK;

    pthread_mutex_lock(&s->lock);
    if (s->threads != NULL || s->stopped) {
        pthread_mutex_unlock(&s->lock);
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "fcgi server: already started");
    }
    s->threads = suspect_calloc(n, sizeof(*s->threads));
    s->conns = suspect_calloc(n, sizeof(*s->conns));
    if (s->threads == NULL || s->conns == NULL) {
        rc = suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                             "fcgi server: out of memory");
    }
    for (unsigned i = 0; rc == SUSPECT_OK && i < n; i++) {
        rc = spawn(s, i, err);
        if (rc == SUSPECT_OK) {
            s->started++;
        }
    }
    pthread_mutex_unlock(&s->lock);
    if (rc != SUSPECT_OK) {
        mw_server_stop(s);
    }
    return rc;
}

/* mw_server_refuse_new(), s->lock held. */
static void refuse_new(mw_server_t *s)
{
    uint64_t one = 1;

    if (s->refusing) {
        return;
    }
    s->refusing = true;
    atomic_store(&s->shared.stopping, true);
    while (write(s->shared.stop_fd, &one, sizeof(one)) < 0 && errno == EINTR) {
    }
    if (s->started > 0) {
        shutdown(s->listen_fd, SHUT_RDWR);
    }
}

void mw_server_refuse_new(mw_server_t *s)
{
    pthread_mutex_lock(&s->lock);
    refuse_new(s);
    pthread_mutex_unlock(&s->lock);
}

void mw_server_stop(mw_server_t *s)
{
    pthread_mutex_lock(&s->lock);
    if (s->stopped) {
        pthread_mutex_unlock(&s->lock);
        return;
    }
    s->stopped = true;
    refuse_new(s);
    for (unsigned i = 0; i < s->started; i++) {
        pthread_join(s->threads[i], NULL);
    }
    s->started = 0;
    pthread_mutex_unlock(&s->lock);
}

void mw_server_stats(mw_server_t *s, mw_server_stats_t *out)
{
    const fc_shared_t *sh = &s->shared;

    out->connections = atomic_load(&sh->connections);
    out->requests = atomic_load(&sh->requests);
    out->bad_records = atomic_load(&sh->bad_records);
    out->too_large = atomic_load(&sh->too_large);
    out->aborted = atomic_load(&sh->aborted);
    out->busy = atomic_load(&sh->busy);
}

void mw_server_free(mw_server_t *s)
{
    if (s == NULL) {
        return;
    }
    if (s->threads != NULL) {
        mw_server_stop(s);
    }
    for (unsigned i = 0; s->conns != NULL && i < s->shared.workers; i++) {
        mw_fc_conn_free(s->conns[i]);
    }
    free(s->conns);
    free(s->threads);
    close(s->shared.stop_fd);
    pthread_mutex_destroy(&s->lock);
    free(s);
}
