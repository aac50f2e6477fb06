/*
 * redissentinel.c - the master of a Redis Sentinel set-up
 * (redissentinel.h).
 *
 * Asking: SENTINEL get-master-addr-by-name NAME to each sentinel in turn,
 * starting with the one that answered last, until one names an address;
 * a sentinel that is down, refuses the login or does not know NAME is
 * skipped.  Each sentinel has a connection of its own, kept between asks,
 * with the store's timeouts and reconnect backoff and the sentinels' own
 * login (sentinelUser / sentinelPassword: they may be protected apart from
 * the data, or not at all).  One thread asks at a time: the first lookup
 * is waited for by every thread (there is nothing else to use), each until
 * its own deadline; later ones, after a request found the master failing,
 * are not (the others keep using the master they know, and fail over to
 * their fail mode if it is gone).
 *
 * A lookup runs within the deadline of the request that makes it: each
 * sentinel is given what is left (at most the store's timeouts), and when
 * the time is spent the round stops there.  A round is one pass over the
 * sentinels, from a cursor kept between lookups: a request that ran out
 * of time leaves the round open, and the next lookup (the next request,
 * at once) goes on from the next sentinel, so a black-holed sentinel costs
 * one request's time, not every request's.  A round that ends without a
 * master is not begun again for REDIS_SENTINEL_ASK_MS; meanwhile requests
 * fail at once with its error (and the failover wrapper's breaker keeps
 * all but its probes from coming here).  The address a sentinel
 * gives is not trusted blindly: the data connection checks ROLE and a
 * replica sends the caller back here.
 *
 * Announcements: a connection SUBSCRIBEd to +switch-master on one sentinel
 * (the next one when it fails).  No thread of its own: a request that
 * finds REDIS_SENTINEL_POLL_MS passed since the last look reads what
 * arrived before it goes to the master, without waiting (recv
 * MSG_DONTWAIT), and a +switch-master for NAME replaces the master at
 * once, even while the old one still answers (a partition).  Subscribing
 * is done after a request (redis_sentinel_idle()), from
 * REDIS_SENTINEL_WATCH_MS after the first master is known, so a process
 * that lives for one request never pays for it; each new subscription
 * asks the sentinels again at the next request, since a failover may have
 * been missed while there was none.
 *
 * Generations: each master change bumps gen (0 = none known yet); a
 * thread keeps the generation its connection was made for, and reconnects
 * when it differs.  gen and the flags are atomics; the address is copied
 * under mu.
 */
#include "redissentinel.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "clock.h"

/* After a subscription failed, the next try waits this long (ms). */
#define WATCH_RETRY_MS 1000

struct redis_sentinel {
    const redis_addr_t *addr;
    redis_conf_t cf;             /* the sentinels' login, the timeouts */
    suspect_redis_stats_t stats; /* of the sentinel connections */

    pthread_mutex_t mu; /* master, ask_rc, ask_err */
    redis_endpoint_t master;
    uint64_t gen; /* atomic; 0 = no master known */
    suspect_rc_t ask_rc;
    char ask_err[SUSPECT_ERR_TEXT_MAX];

    pthread_mutex_t ask_mu; /* one asker: ask[], next, round, next_ask_ms */
    redis_conn_t ask[REDIS_MAX_HOSTS];
    size_t next;  /* the sentinel to ask first */
    size_t round; /* sentinels left to ask in this round; 0 = none open */
    int64_t next_ask_ms;
    int stale; /* atomic: ask at the next chance */

    pthread_mutex_t watch_mu; /* sub, subscribed, sub_idx */
    redis_conn_t sub;
    bool subscribed;
    size_t sub_idx;
    int sub_active;        /* atomic: subscribed */
    int64_t next_poll_ms;  /* atomic (monotonic) */
    int64_t watch_from_ms; /* atomic; 0 = not yet */

    uint64_t switches, asks; /* atomics */
};

suspect_rc_t redis_sentinel_new(const redis_addr_t *addr,
                                const redis_conf_t *cf, redis_sentinel_t **out,
                                suspect_err_t *err)
{
    redis_sentinel_t *s = suspect_calloc(1, sizeof(*s));

    *out = NULL;
    if (s == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "redis: out of memory");
    }
    s->addr = addr;
    s->cf = *cf;
    s->cf.user = addr->sentinel_user;
    s->cf.password = addr->sentinel_password;
    s->cf.db = 0;
    s->cf.scripts = false;
    s->cf.need_master = false;
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->ask_mu, NULL);
    pthread_mutex_init(&s->watch_mu, NULL);
    for (size_t i = 0; i < addr->nhosts; i++) {
        redis_conn_init(&s->ask[i], &s->cf, &addr->hosts[i], &s->stats);
    }
    redis_conn_init(&s->sub, &s->cf, &addr->hosts[0], &s->stats);
    s->ask_rc = SUSPECT_E_STORE;
    snprintf(s->ask_err, sizeof(s->ask_err),
             "redis sentinel %.200s: no master known yet", addr->master);
    *out = s;
    return SUSPECT_OK;
}

void redis_sentinel_free(redis_sentinel_t *s)
{
    if (s == NULL) {
        return;
    }
    for (size_t i = 0; i < s->addr->nhosts; i++) {
        redis_conn_close(&s->ask[i]);
    }
    redis_conn_close(&s->sub);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->ask_mu);
    pthread_mutex_destroy(&s->watch_mu);
    free(s);
}

/* Makes ep the master (a new generation when it changed). */
static void publish(redis_sentinel_t *s, const redis_endpoint_t *ep)
{
    uint64_t gen;

    pthread_mutex_lock(&s->mu);
    gen = __atomic_load_n(&s->gen, __ATOMIC_RELAXED);
    if (gen == 0 || !redis_endpoint_same(&s->master, ep)) {
        s->master = *ep;
        if (gen != 0) {
            __atomic_add_fetch(&s->switches, 1, __ATOMIC_RELAXED);
        } else {
            __atomic_store_n(&s->watch_from_ms,
                             mono_ms() + REDIS_SENTINEL_WATCH_MS,
                             __ATOMIC_RELAXED);
        }
        __atomic_store_n(&s->gen, gen + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&s->mu);
}

/* The address in a get-master-addr-by-name answer r into *ep. */
static suspect_rc_t master_addr(const redis_sentinel_t *s, size_t i,
                                const redisReply *r, redis_endpoint_t *ep,
                                suspect_err_t *err)
{
    char *end = NULL;
    long port = 0;

    if (r->type == REDIS_REPLY_NIL) {
        return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                               "redis sentinel %s: does not know master %s",
                               s->addr->hosts[i].name, s->addr->master);
    }
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[0]->type == REDIS_REPLY_STRING &&
        r->element[1]->type == REDIS_REPLY_STRING) {
        port = strtol(r->element[1]->str, &end, 10);
    }
    if (end == NULL || *end != '\0' || port < 1 || port > 65535 ||
        !redis_endpoint_set(ep, r->element[0]->str, r->element[0]->len,
                            (int)port)) {
        return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                               "redis sentinel %s: odd answer to "
                               "get-master-addr-by-name",
                               s->addr->hosts[i].name);
    }
    return SUSPECT_OK;
}

/* Asks sentinel i for the master into *ep, before d. */
static suspect_rc_t ask_one(redis_sentinel_t *s, size_t i, redis_deadline_t d,
                            redis_endpoint_t *ep, suspect_err_t *err)
{
    redis_request_t rq = {.script = SCRIPT_NONE};
    redisReply *r = NULL;
    suspect_rc_t rc;

    redis_rq_str(&rq, "SENTINEL");
    redis_rq_str(&rq, "get-master-addr-by-name");
    redis_rq_str(&rq, s->addr->master);
    rc = redis_call(&s->ask[i], &rq, d, &r, err);
    if (rc == SUSPECT_OK) {
        rc = master_addr(s, i, r, ep, err);
    }
    freeReplyObject(r);
    return rc;
}

/* Records why the lookup found no master (under ask_mu). */
static void ask_failed(redis_sentinel_t *s, suspect_rc_t rc,
                       const suspect_err_t *e)
{
    pthread_mutex_lock(&s->mu);
    s->ask_rc = rc;
    snprintf(s->ask_err, sizeof(s->ask_err), "%s", e->text);
    pthread_mutex_unlock(&s->mu);
}

/* Asks the sentinels of the round, in turn, for the master, while d
 * allows (the caller holds ask_mu).  When the one asked names the master
 * already known (which just failed), the others are asked too: one of
 * them may know better (a sentinel cut off from the others still names the
 * old master). */
static void ask(redis_sentinel_t *s, redis_deadline_t d)
{
    size_t n = s->addr->nhosts;
    redis_endpoint_t known, ep;
    bool have, same_seen = false;
    suspect_err_t e;
    suspect_rc_t rc = SUSPECT_E_STORE;

    if (redis_left_ms(d, 1) == 0) {
        return; /* no time: the next request asks */
    }
    suspect_err_clear(&e);
    __atomic_store_n(&s->stale, 0, __ATOMIC_RELAXED);
    __atomic_add_fetch(&s->asks, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&s->mu);
    have = __atomic_load_n(&s->gen, __ATOMIC_RELAXED) != 0;
    known = s->master;
    pthread_mutex_unlock(&s->mu);
    s->round = s->round > 0 ? s->round : n;
    while (s->round > 0 && redis_left_ms(d, 1) > 0) {
        rc = ask_one(s, s->next, d, &ep, &e);
        if (rc == SUSPECT_OK && !(have && redis_endpoint_same(&ep, &known))) {
            s->round = 0;
            publish(s, &ep);
            return;
        }
        same_seen = same_seen || rc == SUSPECT_OK;
        s->next = (s->next + 1) % n;
        s->round--;
    }
    if (s->round > 0) {
        /* Out of time: the next request goes on with the round. */
        __atomic_store_n(&s->stale, 1, __ATOMIC_RELAXED);
    } else {
        s->next_ask_ms = mono_ms() + REDIS_SENTINEL_ASK_MS;
    }
    if (rc != SUSPECT_OK && !same_seen) {
        ask_failed(s, rc, &e);
    }
}

/* A pushed message r: a +switch-master for our master moves it. */
static void announcement(redis_sentinel_t *s, const redisReply *r)
{
    char name[REDIS_FIELD_MAX], ip[REDIS_FIELD_MAX];
    int port = 0;
    redis_endpoint_t ep;

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3 ||
        r->element[2]->type != REDIS_REPLY_STRING ||
        r->element[2]->len >= 3 * REDIS_FIELD_MAX) {
        return;
    }
    /* "<name> <old ip> <old port> <new ip> <new port>" */
    if (sscanf(r->element[2]->str, "%255s %*s %*d %255s %d", name, ip, &port) ==
            3 &&
        strcmp(name, s->addr->master) == 0 &&
        redis_endpoint_set(&ep, ip, strlen(ip), port)) {
        publish(s, &ep);
    }
}

/* Drops the subscription: the next one goes to the next sentinel, not
 * before WATCH_RETRY_MS (under watch_mu). */
static void unsubscribe(redis_sentinel_t *s, int64_t now)
{
    s->subscribed = false;
    __atomic_store_n(&s->sub_active, 0, __ATOMIC_RELEASE);
    s->sub_idx = (s->sub_idx + 1) % s->addr->nhosts;
    redis_conn_close(&s->sub);
    redis_conn_init(&s->sub, &s->cf, &s->addr->hosts[s->sub_idx], &s->stats);
    __atomic_store_n(&s->next_poll_ms, now + WATCH_RETRY_MS, __ATOMIC_RELAXED);
}

/* SUBSCRIBE +switch-master on the current sentinel, before d (under
 * watch_mu). */
static void subscribe(redis_sentinel_t *s, int64_t now, redis_deadline_t d)
{
    redis_request_t rq = {.script = SCRIPT_NONE};
    redisReply *r = NULL;
    suspect_err_t e;

    redis_rq_str(&rq, "SUBSCRIBE");
    redis_rq_str(&rq, "+switch-master");
    s->subscribed = redis_call(&s->sub, &rq, d, &r, &e) == SUSPECT_OK &&
                    r->type == REDIS_REPLY_ARRAY && r->elements == 3;
    freeReplyObject(r);
    if (s->subscribed) {
        /* A failover may have happened while nobody listened. */
        __atomic_store_n(&s->stale, 1, __ATOMIC_RELAXED);
        __atomic_store_n(&s->sub_active, 1, __ATOMIC_RELEASE);
    } else {
        unsubscribe(s, now);
    }
}

/* Reads the announcements that arrived (under watch_mu). */
static void read_announcements(redis_sentinel_t *s, int64_t now)
{
    redisReply *r = NULL;
    suspect_err_t e;

    while (s->subscribed) {
        if (redis_conn_poll(&s->sub, &r, &e) != SUSPECT_OK) {
            unsubscribe(s, now);
        } else if (r == NULL) {
            break;
        } else {
            announcement(s, r);
            freeReplyObject(r);
        }
    }
}

/* Takes watch_mu when it is time to look at the watch and no thread
 * does; true when taken. */
static bool watch_due(redis_sentinel_t *s, int64_t now)
{
    int64_t from = __atomic_load_n(&s->watch_from_ms, __ATOMIC_RELAXED);

    if (from == 0 || now < from ||
        now < __atomic_load_n(&s->next_poll_ms, __ATOMIC_RELAXED) ||
        pthread_mutex_trylock(&s->watch_mu) != 0) {
        return false;
    }
    __atomic_store_n(&s->next_poll_ms, now + REDIS_SENTINEL_POLL_MS,
                     __ATOMIC_RELAXED);
    return true;
}

void redis_sentinel_idle(redis_sentinel_t *s, redis_deadline_t d)
{
    int64_t now;

    if (__atomic_load_n(&s->sub_active, __ATOMIC_ACQUIRE) ||
        redis_left_ms(d, 1) == 0) {
        return;
    }
    now = mono_ms();
    if (watch_due(s, now)) {
        if (!s->subscribed) {
            subscribe(s, now, d);
        }
        pthread_mutex_unlock(&s->watch_mu);
    }
}

suspect_rc_t redis_sentinel_master(redis_sentinel_t *s, uint64_t have_gen,
                                   redis_deadline_t d, uint64_t *gen,
                                   redis_endpoint_t *ep, suspect_err_t *err)
{
    int64_t now = mono_ms();
    suspect_rc_t rc = SUSPECT_OK;

    if (__atomic_load_n(&s->sub_active, __ATOMIC_ACQUIRE) &&
        watch_due(s, now)) {
        read_announcements(s, now);
        pthread_mutex_unlock(&s->watch_mu);
    }
    if (__atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) == 0) {
        /* Nothing to use until the first answer: wait for the asker, until
         * d at most. */
        if (redis_lock_by(&s->ask_mu, d)) {
            if (__atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) == 0 &&
                now >= s->next_ask_ms) {
                ask(s, d);
            }
            pthread_mutex_unlock(&s->ask_mu);
        }
    } else if (__atomic_load_n(&s->stale, __ATOMIC_RELAXED) &&
               pthread_mutex_trylock(&s->ask_mu) == 0) {
        if (__atomic_load_n(&s->stale, __ATOMIC_RELAXED) &&
            now >= s->next_ask_ms) {
            ask(s, d);
        }
        pthread_mutex_unlock(&s->ask_mu);
    }
    *gen = __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE);
    if (*gen == 0 || *gen != have_gen) {
        pthread_mutex_lock(&s->mu);
        *gen = __atomic_load_n(&s->gen, __ATOMIC_ACQUIRE);
        if (*gen == 0) {
            rc = suspect_err_set(err, s->ask_rc, NULL, 0, "%s", s->ask_err);
        } else {
            *ep = s->master;
        }
        pthread_mutex_unlock(&s->mu);
    }
    return rc;
}

void redis_sentinel_failed(redis_sentinel_t *s, uint64_t gen)
{
    if (__atomic_load_n(&s->gen, __ATOMIC_ACQUIRE) == gen) {
        __atomic_store_n(&s->stale, 1, __ATOMIC_RELAXED);
    }
}

void redis_sentinel_counts(redis_sentinel_t *s, uint64_t *switches,
                           uint64_t *asks)
{
    *switches = __atomic_load_n(&s->switches, __ATOMIC_RELAXED);
    *asks = __atomic_load_n(&s->asks, __ATOMIC_RELAXED);
}
