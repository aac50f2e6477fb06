/*
 * upstream_pool.c - the idle connections of the FastCGI client.
 *
 * A stack (LIFO) under a mutex: a request takes the connection used most
 * recently, so under load a few warm connections serve everything and the
 * ones at the bottom stay idle.  Idle connections are closed after
 * UP_IDLE_TIMEOUT_MS by a reaper thread: php-cgi and php-fpm children
 * serve one connection at a time, so each kept connection pins a child
 * (PITFALLS.md); when our traffic stops, the children are released for
 * anyone else sharing the upstream, and connections the upstream closed
 * meanwhile (a child that exited) are dropped too.
 *
 * Invariant: idle[0..nidle) is ordered by idle_since_ms (the oldest at
 * the bottom), since connections only enter at the top; so the expired
 * ones are always a prefix.  The reaper never closes a descriptor while
 * holding the lock.
 *
 * Before a connection leaves the pool it is checked (a non-blocking
 * MSG_PEEK): one the upstream closed since it was pooled is dropped and
 * the next one taken, so a request is only ever sent on a connection
 * that was open a moment before.  A close racing with that check is still
 * possible; upstream.c decides whether such a failure may be retried.
 * max_idle 0 keeps no connection: every request connects.
 */
#include "upstream_internal.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "clock.h"

/* Connections the reaper closes per round (more: another round at once). */
#define REAP_BATCH 16

/* Prelude buffers larger than this are not kept with an idle
 * connection (a one-off request with huge headers). */
#define PRE_KEEP_MAX (256u << 10)

up_conn_t *up_conn_new(void)
{
    up_conn_t *c = suspect_malloc(sizeof(*c));

    if (c != NULL) {
        c->fd = -1;
        c->pooled = false;
        c->pre = NULL;
        c->pre_len = c->pre_cap = 0;
        c->idle_since_ms = 0;
    }
    return c;
}

void up_conn_free(up_conn_t *c)
{
    if (c == NULL) {
        return;
    }
    if (c->fd >= 0) {
        close(c->fd);
    }
    free(c->pre);
    free(c);
}

/* Removes the expired prefix of the stack (at most max) into out. */
static size_t take_expired(up_pool_t *p, long long now, up_conn_t **out,
                           size_t max)
{
    size_t k = 0;

    while (k < p->nidle && k < max &&
           now - p->idle[k]->idle_since_ms >= p->idle_timeout_ms) {
        out[k] = p->idle[k];
        k++;
    }
    if (k > 0) {
        memmove(p->idle, p->idle + k, (p->nidle - k) * sizeof(*p->idle));
        p->nidle -= (unsigned)k;
    }
    return k;
}

/* When the reaper should look next (CLOCK_MONOTONIC). */
static struct timespec next_wake(const up_pool_t *p, long long now)
{
    long long at = now + p->idle_timeout_ms;

    if (p->nidle > 0) {
        at = p->idle[0]->idle_since_ms + p->idle_timeout_ms;
    }
    return ns_timespec((int64_t)at * 1000000);
}

static void *reaper_main(void *arg)
{
    up_pool_t *p = arg;
    up_conn_t *batch[REAP_BATCH];

    pthread_mutex_lock(&p->lock);
    while (!p->stopping) {
        long long now = mono_ms();
        size_t k = take_expired(p, now, batch, REAP_BATCH);

        if (k > 0) {
            pthread_mutex_unlock(&p->lock);
            for (size_t i = 0; i < k; i++) {
                up_conn_free(batch[i]);
            }
            pthread_mutex_lock(&p->lock);
            continue;
        }
        {
            struct timespec ts = next_wake(p, now);

            pthread_cond_timedwait(&p->wake, &p->lock, &ts);
        }
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* Starts the reaper with every signal blocked: signals belong to the
 * daemon's own handling thread. */
static int start_reaper(up_pool_t *p)
{
    sigset_t all, old;
    int r;

    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    r = pthread_create(&p->reaper, NULL, reaper_main, p);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return r;
}

suspect_rc_t up_pool_init(up_pool_t *p, unsigned max_idle,
                          unsigned idle_timeout_ms)
{
    bool cond_ok;

    memset(p, 0, sizeof(*p));
    p->max_idle = max_idle;
    p->idle_timeout_ms = idle_timeout_ms;
    /* max_idle 0 pools nothing; one place keeps the allocation valid. */
    p->idle = suspect_calloc(max_idle > 0 ? max_idle : 1, sizeof(*p->idle));
    if (p->idle == NULL) {
        return SUSPECT_E_NOMEM;
    }
    if (pthread_mutex_init(&p->lock, NULL) != 0) {
        free(p->idle);
        return SUSPECT_E_NOMEM;
    }
    cond_ok = mono_cond_init(&p->wake) == 0;
    if (!cond_ok || start_reaper(p) != 0) {
        if (cond_ok) {
            pthread_cond_destroy(&p->wake);
        }
        pthread_mutex_destroy(&p->lock);
        free(p->idle);
        return SUSPECT_E_NOMEM;
    }
    return SUSPECT_OK;
}

void up_pool_destroy(up_pool_t *p)
{
    pthread_mutex_lock(&p->lock);
    p->stopping = true;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->lock);
    pthread_join(p->reaper, NULL);
    for (unsigned i = 0; i < p->nidle; i++) {
        up_conn_free(p->idle[i]);
    }
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
    free(p->idle);
}

/*
 * Whether the upstream may still read a request on c: a peek that would
 * block.  A peek that reads 0 means the upstream closed the connection
 * while it was idle (php-cgi after PHP_FCGI_MAX_REQUESTS, a php-fpm child
 * that was recycled or killed); bytes or an error mean it is not in a
 * state to start a request either.
 */
static bool conn_alive(const up_conn_t *c)
{
    uint8_t b;
    ssize_t n;

    do {
        n = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

up_conn_t *up_pool_take(up_pool_t *p, unsigned *stale)
{
    for (;;) {
        up_conn_t *c = NULL;

        pthread_mutex_lock(&p->lock);
        if (p->nidle > 0) {
            c = p->idle[--p->nidle];
        }
        pthread_mutex_unlock(&p->lock);
        if (c == NULL || conn_alive(c)) {
            return c;
        }
        up_conn_free(c);
        (*stale)++;
    }
}

void up_pool_give(up_pool_t *p, up_conn_t *c)
{
    if (c->pre_cap > PRE_KEEP_MAX) {
        free(c->pre);
        c->pre = NULL;
        c->pre_cap = 0;
    }
    c->idle_since_ms = mono_ms();
    pthread_mutex_lock(&p->lock);
    if (p->nidle < p->max_idle) {
        p->idle[p->nidle++] = c;
        c = NULL;
    }
    pthread_mutex_unlock(&p->lock);
    up_conn_free(c);
}
