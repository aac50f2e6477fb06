/*
 * fcgi_server.c - the FastCGI server: the front thread (fcgi_front.c),
 * which accepts every connection and holds it while a request arrives,
 * and a fixed pool of workers, which take whole requests from it, run
 * the handler and give the connection back.  The front serves itself the
 * requests the handler answers without blocking (mw_front_fn).
 *
 * Workers inherit the signal mask of the thread that calls
 * mw_server_start(): the daemon blocks every signal first and waits for
 * them in one thread, so no system call here sees EINTR from a handler
 * (EINTR is retried anyway).  Each worker owns a scratch (the STDOUT
 * record, the decoded pairs) that it lends to the connection it serves.
 *
 * Stop: the listening socket is shut down (a connection made from now on
 * is refused) and the front told; requests in flight are served to their
 * end, idle connections close, and once no connection is left the front
 * ends, the workers' next take returns NULL, and the joins return.
 *
 * Counters are atomics, read without a lock by mw_server_stats().
 */
#include "fcgi_server.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "alloc.h"
#include "fcgi_conn.h"
#include "fcgi_front.h"

#define DEFAULT_WORKERS    16
#define DEFAULT_PARAMS_MAX (128 * 1024)
#define DEFAULT_IO_MS      30000
#define DEFAULT_IDLE_MS    5000
#define DEFAULT_REQUEST_MS 60000
#define DEFAULT_BUFFER_MAX (64u << 20)
/* Descriptors kept for what the workers open (CGI pipes, upstream and
 * store connections) when the connection cap comes from the limit. */
#define FDS_PER_WORKER 8
#define FDS_SPARE      64
#define CONNS_MAX      65536

struct mw_server {
    fc_shared_t shared;
    int listen_fd;
    fc_front_t *front;
    pthread_t *threads;
    unsigned started; /* worker threads running */
    pthread_mutex_t lock;
    bool refusing; /* the listening socket is shut down */
    bool stopped;
};

/* Whether the listening socket is TCP. */
static bool is_tcp(int fd)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);

    return getsockname(fd, (struct sockaddr *)&ss, &len) == 0 &&
           (ss.ss_family == AF_INET || ss.ss_family == AF_INET6);
}

/* The connection cap when none is given: what the descriptor limit
 * leaves once the workers' own are kept. */
static size_t default_max_conns(unsigned workers)
{
    struct rlimit rl;
    size_t keep = (size_t)workers * FDS_PER_WORKER + FDS_SPARE;
    size_t n = 1024;

    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
        n = (size_t)rl.rlim_cur;
    } else if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        n = CONNS_MAX;
    }
    n = n > keep + 2 * (size_t)workers ? n - keep : 2 * (size_t)workers;
    return n < CONNS_MAX ? n : CONNS_MAX;
}

/* The shared settings of opts, defaults filled in. */
static void settle(fc_shared_t *sh, const mw_server_opts_t *opts)
{
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
    sh->request_timeout_ms = opts->request_timeout_ms > 0
                                 ? opts->request_timeout_ms
                                 : DEFAULT_REQUEST_MS;
    sh->max_conns = opts->max_connections > 0 ? opts->max_connections
                                              : default_max_conns(sh->workers);
    if (sh->max_conns < 2 * (size_t)sh->workers) {
        sh->max_conns = 2 * (size_t)sh->workers;
    }
    sh->buffer_max = DEFAULT_BUFFER_MAX;
    sh->streaming_max = sh->workers > 1 ? sh->workers / 2 : 1;
    sh->handler = opts->handler;
    sh->answers_in_front = opts->answers_in_front;
    sh->arg = opts->arg;
}

suspect_rc_t mw_server_new(const mw_server_opts_t *opts, mw_server_t **out,
                           suspect_err_t *err)
{
    mw_server_t *s;

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
    settle(&s->shared, opts);
    s->listen_fd = opts->listen_fd;
    s->shared.tcp = is_tcp(opts->listen_fd);
    s->front = mw_fc_front_new(&s->shared, opts->listen_fd);
    if (s->front == NULL) {
        suspect_err_sys(err, SUSPECT_E_IO, NULL,
                        "fcgi server: the front (epoll, eventfd)");
        free(s);
        return SUSPECT_E_IO;
    }
    pthread_mutex_init(&s->lock, NULL);
    *out = s;
    return SUSPECT_OK;
}

static void *worker_main(void *arg)
{
    mw_server_t *s = arg;
    fc_scratch_t scratch;
    conn_t *c;

    memset(&scratch, 0, sizeof(scratch));
    scratch.out = suspect_malloc(FCGI_HEADER_LEN + FCGI_MAX_CONTENT);
    while (scratch.out != NULL && (c = mw_fc_front_take(s->front)) != NULL) {
        int next;

        mw_fc_lend(c, &scratch);
        atomic_fetch_add(&s->shared.busy, 1);
        /* a response the front could not send at once, or a request */
        next = c->unsent != NULL ? mw_fc_send_unsent(c) : mw_fc_run(c);
        atomic_fetch_sub(&s->shared.busy, 1);
        mw_fc_take_back(c, &scratch);
        mw_fc_front_give_back(s->front, c, next);
    }
    mw_fc_scratch_free(&scratch);
    return NULL;
}

suspect_rc_t mw_server_start(mw_server_t *s, suspect_err_t *err)
{
    unsigned n = s->shared.workers;
    suspect_rc_t rc = SUSPECT_OK;
    int r;

    pthread_mutex_lock(&s->lock);
    if (s->threads != NULL || s->stopped) {
        pthread_mutex_unlock(&s->lock);
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "fcgi server: already started");
    }
    s->threads = suspect_calloc(n, sizeof(*s->threads));
    if (s->threads == NULL) {
        rc = suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                             "fcgi server: out of memory");
    } else if ((r = mw_fc_front_start(s->front)) != 0) {
        errno = r;
        rc = suspect_err_sys(err, SUSPECT_E_IO, NULL,
                             "fcgi server: starting the front thread");
    }
    for (unsigned i = 0; rc == SUSPECT_OK && i < n; i++) {
        r = pthread_create(&s->threads[i], NULL, worker_main, s);
        if (r != 0) {
            errno = r;
            rc = suspect_err_sys(err, SUSPECT_E_IO, NULL,
                                 "fcgi server: starting a worker thread");
        } else {
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
    if (s->refusing) {
        return;
    }
    s->refusing = true;
    atomic_store(&s->shared.stopping, true);
    if (s->threads != NULL) {
        shutdown(s->listen_fd, SHUT_RDWR);
    }
    mw_fc_front_refuse(s->front);
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
    mw_fc_front_join(s->front);
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
    out->in_front = atomic_load(&sh->in_front);
    out->bad_records = atomic_load(&sh->bad_records);
    out->too_large = atomic_load(&sh->too_large);
    out->aborted = atomic_load(&sh->aborted);
    out->timed_out = atomic_load(&sh->timed_out);
    out->evicted = atomic_load(&sh->evicted);
    out->busy = atomic_load(&sh->busy);
    out->open = atomic_load(&sh->open);
}

void mw_server_free(mw_server_t *s)
{
    if (s == NULL) {
        return;
    }
    mw_server_stop(s);
    mw_fc_front_free(s->front);
    free(s->threads);
    pthread_mutex_destroy(&s->lock);
    free(s);
}
