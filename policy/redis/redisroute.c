/*
 * redisroute.c - a Redis store's connections, and where its requests go
 * (redisroute.h).
 *
 * Threads: each thread that uses the store gets a redis_thread_t through a
 * pthread key (freed when the thread exits, or with the store): one
 * connection for a single server or a Sentinel's master, one per node for
 * a Cluster (made on first use, kept by node id).  The pool keeps every
 * thread's on a list, under mu, to free them and to sum their counters.
 *
 * Time: each store operation starts with redis_op_begin(), which sets the
 * thread's deadline op_ms ahead (the longer of the connect and command
 * timeouts: with suspect-fcgi both are timeoutMs).  Everything the
 * operation does in Redis runs against it: the wait for another thread
 * reading the slot map or asking the sentinels, the sentinels asked, the
 * connect and its handshake (AUTH, SELECT, ROLE, SCRIPT LOAD), each
 * command, the redirections and the waits before a retry.  So an
 * operation spends at most op_ms in Redis (to the millisecond), then
 * fails with what it met, and the caller's fail mode answers.
 *
 * Sentinel: the thread's connection is made for a master generation
 * (redissentinel.c) and made again when the generation changes.  A call
 * that fails in a way that says the master may have moved (the connection
 * refused, closed or timed out, READONLY, MASTERDOWN, a replica by ROLE)
 * tells the sentinel lookup, which asks the sentinels again; when the
 * request cannot have run (it was never sent, or the server refused it
 * before running it: READONLY, MASTERDOWN, a replica) and the sentinels
 * now name another master, it is sent there once more.  A timeout is never
 * sent again: the script may have run.
 *
 * Cluster: the slot map (rediscluster.c) is read from one node with
 * CLUSTER SHARDS (Redis 7.0 and later) when the store has
 * none (every thread waits for it), and again, by one thread at a time and
 * at most every REDIS_REFRESH_MS, after a MOVED, a CLUSTERDOWN or a node
 * that failed (a failover moves its slots).  A request goes to the master
 * of its slot; MOVED sets that slot at once and sends it there, ASK sends
 * ASKING and the request to the node named, once (the map is unchanged);
 * TRYAGAIN (keys split by a resharding), CLUSTERDOWN (a slot without a
 * master), LOADING and a slot without a known master are waited out, 1 ms
 * doubling to 20 ms, while the operation's deadline allows (an ASK's node
 * is asked again after TRYAGAIN).  At most REDIS_MAX_REDIRECTS redirections in
 * a row (without a wait between them): a loop of MOVED is an error.  Nothing
 * here retries a request that may have run, except what redisconn.c does for a
 * connection the server had closed before it was used.
 */
#include "redisroute.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "clock.h"

#define WAIT_MAX_MS 20

/* ---- threads -------------------------------------------------------------
 */

/* Unlinks and frees t; the caller holds p->mu. */
static void thread_free_locked(redis_thread_t *t)
{
    redis_pool_t *p = t->pool;

    redis_stats_add(&p->dead, &t->stats);
    if (t->prev != NULL) {
        t->prev->next = t->next;
    } else {
        p->threads = t->next;
    }
    if (t->next != NULL) {
        t->next->prev = t->prev;
    }
    redis_conn_close(&t->one);
    for (size_t i = 0; i < t->nnode; i++) {
        if (t->node[i] != NULL) {
            redis_conn_close(t->node[i]);
            free(t->node[i]);
        }
    }
    free(t->node);
    free(t);
}

/* pthread key destructor: the owning thread exits. */
static void thread_exit(void *arg)
{
    redis_thread_t *t = arg;
    redis_pool_t *p = t->pool;

    pthread_mutex_lock(&p->mu);
    thread_free_locked(t);
    pthread_mutex_unlock(&p->mu);
}

redis_thread_t *redis_thread_get(redis_pool_t *p, suspect_err_t *err)
{
    redis_thread_t *t = pthread_getspecific(p->tls);

    if (t != NULL) {
        return t;
    }
    t = suspect_calloc(1, sizeof(*t));
    if (t == NULL) {
        suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0, "redis: out of memory");
        return NULL;
    }
    t->pool = p;
    if (hit_ids_init(&t->ids, err) != SUSPECT_OK) {
        free(t);
        return NULL;
    }
    redis_conn_init(&t->one, &p->conf, &p->addr.hosts[0], &t->stats);
    pthread_mutex_lock(&p->mu);
    t->next = p->threads;
    if (p->threads != NULL) {
        p->threads->prev = t;
    }
    p->threads = t;
    pthread_mutex_unlock(&p->mu);
    if (pthread_setspecific(p->tls, t) != 0) {
        pthread_mutex_lock(&p->mu);
        thread_free_locked(t);
        pthread_mutex_unlock(&p->mu);
        suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0, "redis: out of memory");
        return NULL;
    }
    return t;
}

redis_thread_t *redis_op_begin(redis_pool_t *p, suspect_err_t *err)
{
    redis_thread_t *t = redis_thread_get(p, err);

    if (t != NULL && !t->held) {
        redis_op_next(t);
    }
    if (t != NULL) {
        t->held = false;
    }
    return t;
}

void redis_op_next(redis_thread_t *t)
{
    t->deadline = redis_deadline_in(t->pool->op_ms);
}

/* The thread's connection to Cluster node id; NULL when out of memory. */
static redis_conn_t *node_conn(redis_thread_t *t, int id, suspect_err_t *err)
{
    redis_pool_t *p = t->pool;

    if ((size_t)id >= t->nnode) {
        size_t n = redis_cluster_nnodes(p->cluster);
        redis_conn_t **grown = suspect_realloc(t->node, n * sizeof(*grown));
        if (grown == NULL) {
            goto oom;
        }
        memset(grown + t->nnode, 0, (n - t->nnode) * sizeof(*grown));
        t->node = grown;
        t->nnode = n;
    }
    if (t->node[id] == NULL) {
        t->node[id] = suspect_malloc(sizeof(redis_conn_t));
        if (t->node[id] == NULL) {
            goto oom;
        }
        redis_conn_init(t->node[id], &p->conf,
                        redis_cluster_node(p->cluster, id), &t->stats);
    }
    return t->node[id];
oom:
    suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0, "redis: out of memory");
    return NULL;
}

/* ---- Sentinel ------------------------------------------------------------
 */

/* Points t->one at the master the sentinels name; *gen its generation. */
static suspect_rc_t sentinel_target(redis_thread_t *t, uint64_t *gen,
                                    suspect_err_t *err)
{
    redis_pool_t *p = t->pool;
    redis_endpoint_t ep;
    suspect_rc_t rc = redis_sentinel_master(p->sentinel, t->one_gen,
                                            t->deadline, gen, &ep, err);

    if (rc == SUSPECT_OK && *gen != t->one_gen) {
        redis_conn_close(&t->one);
        redis_conn_init(&t->one, &p->conf, &ep, &t->stats);
        t->one_gen = *gen;
    }
    return rc;
}

static suspect_rc_t sentinel_call(redis_thread_t *t, redis_request_t *rq,
                                  redisReply **out, suspect_err_t *err)
{
    redis_pool_t *p = t->pool;
    suspect_err_t first;
    uint64_t gen, now_gen;
    redis_errkind_t kind;
    suspect_rc_t rc = sentinel_target(t, &gen, err);
    bool unrun;

    if (rc != SUSPECT_OK) {
        return rc;
    }
    suspect_err_clear(&first);
    rc = redis_call(&t->one, rq, t->deadline, out, &first);
    if (rc == SUSPECT_OK) {
        return rc;
    }
    kind = redis_error_kind(rq->error);
    unrun = t->one.not_master || t->one.unsent || kind == REDIS_ERRK_READONLY ||
            kind == REDIS_ERRK_MASTERDOWN;
    /* Out of time before sending says nothing of the master. */
    if ((unrun || kind == REDIS_ERRK_NONE) && !t->one.late) {
        /* The master may have moved: ask the sentinels again. */
        redis_sentinel_failed(p->sentinel, gen);
    }
    /* Once more only where it cannot count twice, and only on a master
     * other than the one that just failed. */
    if (unrun && sentinel_target(t, &now_gen, NULL) == SUSPECT_OK &&
        now_gen != gen) {
        REDIS_STAT_ADD(&t->stats, retries, 1);
        return redis_call(&t->one, rq, t->deadline, out, err);
    }
    return suspect_err_set(err, rc, NULL, 0, "%s", first.text);
}

/* ---- Cluster -------------------------------------------------------------
 */

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {0, (long)ms * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* Reads the slot map from one node after another (the one that answered
 * last first) until one answers or t's deadline passes; the caller holds
 * refresh_mu. */
static suspect_rc_t refresh(redis_thread_t *t, suspect_err_t *err)
{
    redis_pool_t *p = t->pool;
    size_t n = redis_cluster_nnodes(p->cluster);
    suspect_rc_t rc = SUSPECT_E_STORE;

    __atomic_add_fetch(&p->refreshes, 1, __ATOMIC_RELAXED);
    for (size_t k = 0; k < n && rc != SUSPECT_OK; k++) {
        int id = (int)((p->refresh_from + k) % n);
        redis_request_t rq = {.script = SCRIPT_NONE};
        redisReply *r = NULL;
        redis_conn_t *c;

        if (k > 0 && redis_left_ms(t->deadline, 1) == 0) {
            break;
        }
        c = node_conn(t, id, err);
        if (c == NULL) {
            return SUSPECT_E_NOMEM;
        }
        redis_rq_str(&rq, "CLUSTER");
        redis_rq_str(&rq, "SHARDS");
        rc = redis_call(c, &rq, t->deadline, &r, err);
        if (rc == SUSPECT_OK) {
            rc = redis_cluster_apply(p->cluster, r, id, err);
        }
        freeReplyObject(r);
        if (rc == SUSPECT_OK) {
            p->refresh_from = (size_t)id;
        }
    }
    return rc;
}

/* A slot map to route with: waits (until t's deadline) for the first
 * one; reads it again when wanted and due, unless another thread does. */
static suspect_rc_t ensure_map(redis_thread_t *t, suspect_err_t *err)
{
    redis_pool_t *p = t->pool;
    int64_t now = mono_ms();
    suspect_rc_t rc = SUSPECT_OK;

    if (!redis_cluster_mapped(p->cluster)) {
        if (!redis_lock_by(&p->refresh_mu, t->deadline)) {
            return suspect_err_set(err, SUSPECT_E_TIMEOUT, NULL, 0,
                                   "redis %s: no slot map yet (another "
                                   "request is reading it)",
                                   p->addr.name);
        }
        if (!redis_cluster_mapped(p->cluster)) {
            rc = refresh(t, err);
            __atomic_store_n(&p->next_refresh_ms, now + REDIS_REFRESH_MS,
                             __ATOMIC_RELAXED);
        }
        pthread_mutex_unlock(&p->refresh_mu);
        return rc;
    }
    if (__atomic_load_n(&p->refresh_wanted, __ATOMIC_RELAXED) &&
        now >= __atomic_load_n(&p->next_refresh_ms, __ATOMIC_RELAXED) &&
        pthread_mutex_trylock(&p->refresh_mu) == 0) {
        if (__atomic_exchange_n(&p->refresh_wanted, 0, __ATOMIC_RELAXED)) {
            suspect_err_t ignored;
            (void)refresh(t, &ignored);
            __atomic_store_n(&p->next_refresh_ms, now + REDIS_REFRESH_MS,
                             __ATOMIC_RELAXED);
        }
        pthread_mutex_unlock(&p->refresh_mu);
    }
    return SUSPECT_OK;
}

static void want_refresh(redis_pool_t *p)
{
    __atomic_store_n(&p->refresh_wanted, 1, __ATOMIC_RELAXED);
}

/* The first master of the map (for a request without keys), -1. */
static int any_master(const redis_cluster_t *c)
{
    int id = -1;
    return redis_cluster_masters(c, &id, 1) == 1 ? id : -1;
}

/* Follows the redirection in rq->error: the node named, into *to (the
 * slot moved to it when moved).  False when it cannot be read. */
static bool follow(redis_pool_t *p, const redis_request_t *rq, bool moved,
                   int *to)
{
    const char *host;
    size_t len;
    int slot, port;

    if (!redis_redirect_parse(rq->error, &slot, &host, &len, &port) ||
        (*to = redis_cluster_node_add(p->cluster, host, len, port)) < 0) {
        return false;
    }
    if (moved) {
        redis_cluster_set_slot(p->cluster, slot, *to);
        want_refresh(p);
    }
    return true;
}

static suspect_rc_t cluster_call(redis_thread_t *t, int slot,
                                 redis_request_t *rq, redisReply **out,
                                 suspect_err_t *err)
{
    redis_pool_t *p = t->pool;
    int ask = -1, redirects = 0;
    unsigned wait = 1;
    suspect_err_t e;
    suspect_rc_t rc;

    for (;;) {
        redis_errkind_t kind = REDIS_ERRK_CLUSTERDOWN;
        int id;

        suspect_err_clear(&e);
        rc = ensure_map(t, &e);
        if (rc != SUSPECT_OK) {
            break;
        }
        id = ask >= 0    ? ask
             : slot >= 0 ? redis_cluster_slot_node(p->cluster, slot)
                         : any_master(p->cluster);
        if (id < 0) {
            want_refresh(p);
            rc = suspect_err_set(&e, SUSPECT_E_STORE, NULL, 0,
                                 "redis %s: slot %d has no master",
                                 p->addr.name, slot);
        } else {
            redis_conn_t *c = node_conn(t, id, &e);
            if (c == NULL) {
                rc = SUSPECT_E_NOMEM;
                break;
            }
            rq->asking = ask >= 0;
            rc = redis_call(c, rq, t->deadline, out, &e);
            rq->asking = false;
            if (rc == SUSPECT_OK) {
                return rc;
            }
            kind = redis_error_kind(rq->error);
        }
        if (kind == REDIS_ERRK_MOVED || kind == REDIS_ERRK_ASK) {
            int to;
            if (++redirects > REDIS_MAX_REDIRECTS ||
                !follow(p, rq, kind == REDIS_ERRK_MOVED, &to)) {
                break;
            }
            ask = kind == REDIS_ERRK_ASK ? to : -1;
            REDIS_STAT_ADD(&t->stats, redirects, 1);
            continue;
        }
        /* The importing node of an ASK answers TRYAGAIN while the keys are
         * split between the two: ask it again after the wait. */
        ask = kind == REDIS_ERRK_TRYAGAIN ? ask : -1;
        if (kind == REDIS_ERRK_NONE || kind == REDIS_ERRK_CLUSTERDOWN) {
            /* A node that fails, or a slot without a master: a failover
             * may have moved the slot. */
            want_refresh(p);
        }
        if ((kind != REDIS_ERRK_TRYAGAIN && kind != REDIS_ERRK_CLUSTERDOWN &&
             kind != REDIS_ERRK_LOADING) ||
            redis_left_ms(t->deadline, WAIT_MAX_MS + 1) <= wait) {
            break;
        }
        sleep_ms(wait);
        wait = wait * 2 < WAIT_MAX_MS ? wait * 2 : WAIT_MAX_MS;
        redirects = 0;
        REDIS_STAT_ADD(&t->stats, retries, 1);
    }
    return suspect_err_set(err, rc, NULL, 0, "%s", e.text);
}

/* ---- routing -------------------------------------------------------------
 */

suspect_rc_t redis_route_call(redis_thread_t *t, int slot, redis_request_t *rq,
                              redisReply **out, suspect_err_t *err)
{
    redis_pool_t *p = t->pool;
    suspect_rc_t rc;

    *out = NULL;
    switch (p->addr.kind) {
    case REDIS_CLUSTER:
        rc = cluster_call(t, slot, rq, out, err);
        break;
    case REDIS_SENTINEL:
        rc = sentinel_call(t, rq, out, err);
        redis_sentinel_idle(p->sentinel, t->deadline);
        break;
    default:
        rc = redis_call(&t->one, rq, t->deadline, out, err);
        break;
    }
    if (rc != SUSPECT_OK) {
        REDIS_STAT_ADD(&t->stats, errors, 1);
    }
    return rc;
}

suspect_rc_t redis_route_masters(redis_thread_t *t, int *ids, size_t max,
                                 size_t *n, suspect_err_t *err)
{
    redis_pool_t *p = t->pool;
    suspect_rc_t rc;

    *n = 0;
    if (p->addr.kind != REDIS_CLUSTER) {
        ids[0] = 0;
        *n = max > 0;
        return SUSPECT_OK;
    }
    rc = ensure_map(t, err);
    if (rc != SUSPECT_OK) {
        return rc;
    }
    *n = redis_cluster_masters(p->cluster, ids, max);
    if (*n == 0) {
        return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                               "redis %s: no slot has a master", p->addr.name);
    }
    return SUSPECT_OK;
}

suspect_rc_t redis_route_call_master(redis_thread_t *t, int id,
                                     redis_request_t *rq, redisReply **out,
                                     suspect_err_t *err)
{
    redis_conn_t *c;
    suspect_rc_t rc;

    *out = NULL;
    if (t->pool->addr.kind != REDIS_CLUSTER) {
        return redis_route_call(t, -1, rq, out, err);
    }
    c = node_conn(t, id, err);
    if (c == NULL) {
        return SUSPECT_E_NOMEM;
    }
    rc = redis_call(c, rq, t->deadline, out, err);
    if (rc != SUSPECT_OK) {
        REDIS_STAT_ADD(&t->stats, errors, 1);
        if (redis_error_kind(rq->error) == REDIS_ERRK_NONE) {
            want_refresh(t->pool);
        }
    }
    return rc;
}

/* ---- the pool ------------------------------------------------------------
 */

/* The kind-specific parts of p. */
static suspect_rc_t pool_kind_init(redis_pool_t *p, suspect_err_t *err)
{
    if (p->addr.kind == REDIS_SENTINEL) {
        p->conf.need_master = true;
        return redis_sentinel_new(&p->addr, &p->conf, &p->sentinel, err);
    }
    if (p->addr.kind == REDIS_CLUSTER) {
        return redis_cluster_new(&p->addr, &p->cluster, err);
    }
    return SUSPECT_OK;
}

suspect_rc_t redis_pool_init(redis_pool_t *p, const char *url,
                             unsigned connect_ms, unsigned command_ms,
                             suspect_err_t *err)
{
    suspect_rc_t rc = redis_addr_parse(url, &p->addr, err);

    if (rc != SUSPECT_OK) {
        return rc;
    }
    p->conf.command_tv = redis_ms_tv(command_ms);
    p->conf.connect_timeout_ms = connect_ms;
    p->conf.command_timeout_ms = command_ms;
    p->op_ms = connect_ms > command_ms ? connect_ms : command_ms;
    p->conf.user = p->addr.user;
    p->conf.password = p->addr.password;
    p->conf.db = p->addr.db;
    p->conf.scripts = true;
    rc = pool_kind_init(p, err);
    if (rc != SUSPECT_OK) {
        return rc;
    }
    if (pthread_key_create(&p->tls, thread_exit) != 0) {
        redis_sentinel_free(p->sentinel);
        redis_cluster_free(p->cluster);
        return suspect_err_set(err, SUSPECT_E_FULL, NULL, 0,
                               "redis: no thread-specific key left");
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_mutex_init(&p->refresh_mu, NULL);
    return SUSPECT_OK;
}

void redis_pool_destroy(redis_pool_t *p)
{
    pthread_key_delete(p->tls);
    pthread_mutex_lock(&p->mu);
    while (p->threads != NULL) {
        thread_free_locked(p->threads);
    }
    pthread_mutex_unlock(&p->mu);
    pthread_mutex_destroy(&p->mu);
    pthread_mutex_destroy(&p->refresh_mu);
    redis_sentinel_free(p->sentinel);
    redis_cluster_free(p->cluster);
}

void redis_pool_stats(redis_pool_t *p, suspect_redis_stats_t *out)
{
    memset(out, 0, sizeof(*out));
    pthread_mutex_lock(&p->mu);
    redis_stats_add(out, &p->dead);
    for (redis_thread_t *t = p->threads; t != NULL; t = t->next) {
        redis_stats_add(out, &t->stats);
    }
    pthread_mutex_unlock(&p->mu);
    out->lookups += __atomic_load_n(&p->refreshes, __ATOMIC_RELAXED);
    if (p->sentinel != NULL) {
        uint64_t switches, asks;
        redis_sentinel_counts(p->sentinel, &switches, &asks);
        out->switches += switches;
        out->lookups += asks;
    }
}
