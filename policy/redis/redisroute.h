/*
 * redisroute.h - the connections of a Redis store and where each request
 * goes (redisroute.c): to the one server of a redis:// or unix:// URL, to
 * the master the sentinels name, or to the Cluster node that owns the
 * request's slot, following redirections.  Private to the library.
 */
#ifndef SUSPECT_REDISROUTE_H
#define SUSPECT_REDISROUTE_H

#include <pthread.h>
#include <stdint.h>

#include "hitid.h"
#include "rediscluster.h"
#include "redisconn.h"
#include "redissentinel.h"

typedef struct redis_pool redis_pool_t;

/* One thread's connections: one, or one per Cluster node. */
typedef struct redis_thread {
    redis_pool_t *pool;
    hit_ids_t ids;               /* hit ids drawn by this thread */
    suspect_redis_stats_t stats; /* atomics */
    redis_conn_t one;            /* the server, or the Sentinel's master */
    uint64_t one_gen;            /* the master generation `one` is for */
    redis_conn_t **node;         /* Cluster: by node id, NULL until used */
    size_t nnode;
    redis_deadline_t deadline; /* the operation's (redis_op_begin()) */
    bool held; /* the next redis_op_begin() keeps deadline (redisback.c) */
    struct redis_thread *prev, *next;
} redis_thread_t;

struct redis_pool {
    redis_addr_t addr;
    redis_conf_t conf; /* the data nodes' */
    unsigned op_ms;    /* an operation's time in Redis: the longer timeout */
    pthread_key_t tls;
    pthread_mutex_t mu;         /* threads, dead */
    redis_thread_t *threads;    /* every thread's connections */
    suspect_redis_stats_t dead; /* counters of threads gone */
    redis_sentinel_t *sentinel; /* REDIS_SENTINEL */
    redis_cluster_t *cluster;   /* REDIS_CLUSTER */
    pthread_mutex_t refresh_mu; /* one thread reads the slot map */
    int refresh_wanted;         /* atomic */
    int64_t next_refresh_ms;    /* atomic (monotonic) */
    size_t refresh_from;        /* the node that answered last */
    uint64_t refreshes;         /* atomic */
};

/* A slot map is read again at most this often (ms), unless none works. */
#define REDIS_REFRESH_MS 100
/* MOVED and ASK followed in a row for one request, at most. */
#define REDIS_MAX_REDIRECTS 5

/* Parses url and sets the pool up (nothing is connected yet).
 * SUSPECT_E_INVAL on a bad URL, SUSPECT_E_FULL without a pthread key,
 * SUSPECT_E_NOMEM. */
suspect_rc_t redis_pool_init(redis_pool_t *p, const char *url,
                             unsigned connect_ms, unsigned command_ms,
                             suspect_err_t *err);

/* Closes and frees every connection of p. */
void redis_pool_destroy(redis_pool_t *p);

/* Sums the counters of every connection, live or gone, and the pool's. */
void redis_pool_stats(redis_pool_t *p, suspect_redis_stats_t *out);

/* The calling thread's connections (created, not connected, on first
 * use); NULL when out of memory. */
redis_thread_t *redis_thread_get(redis_pool_t *p, suspect_err_t *err);

/* The same, for an operation that starts now: their deadline is set op_ms
 * from now (unless held: the operation then joins the one under way), and
 * every call below runs against it.  NULL when out of memory. */
redis_thread_t *redis_op_begin(redis_pool_t *p, suspect_err_t *err);

/* Starts the next operation on t (its deadline op_ms from now): for an
 * operator's walk (SCAN) made of many. */
void redis_op_next(redis_thread_t *t);

/*
 * Runs rq where it belongs, before t's deadline: on a Cluster, on the
 * master of slot (which every key of rq must hash to; -1 for a request
 * without keys: any master), following MOVED (the slot map is then read
 * again) and ASK, and waiting out TRYAGAIN, CLUSTERDOWN and LOADING while
 * the deadline allows; with Sentinel, on the master, asking the sentinels
 * again when it fails, and sending rq once more to a new master when rq
 * cannot have run on the old one.  *out as redis_call().
 */
suspect_rc_t redis_route_call(redis_thread_t *t, int slot, redis_request_t *rq,
                              redisReply **out, suspect_err_t *err);

/* The masters to walk (SCAN) into ids[0..max), *n of them: the
 * Cluster's (the map is read first if needed), else one (id 0).  Fails
 * when none is known. */
suspect_rc_t redis_route_masters(redis_thread_t *t, int *ids, size_t max,
                                 size_t *n, suspect_err_t *err);

/* Runs rq on master id of redis_route_masters(), without redirections. */
suspect_rc_t redis_route_call_master(redis_thread_t *t, int id,
                                     redis_request_t *rq, redisReply **out,
                                     suspect_err_t *err);

#endif
