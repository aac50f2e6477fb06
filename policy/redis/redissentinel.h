/*
 * redissentinel.h - which server is the master of a Redis Sentinel set-up
 * (redissentinel.c): asked of the sentinels, told again when they announce
 * a failover.  Private to the library.
 */
#ifndef SUSPECT_REDISSENTINEL_H
#define SUSPECT_REDISSENTINEL_H

#include <stdint.h>

#include "redisconn.h"

/* A round of the sentinels that found no master is begun again no sooner
 * than this (ms). */
#define REDIS_SENTINEL_ASK_MS 100
/* Announcements are read at most this often (ms), and the subscription
 * is made, after a request, this long (ms) after the first master is
 * known: a short-lived process (one CGI request) never opens it. */
#define REDIS_SENTINEL_POLL_MS  100
#define REDIS_SENTINEL_WATCH_MS 1000

typedef struct redis_sentinel redis_sentinel_t;

/* Sets up the master lookup of addr (a redis+sentinel:// URL, borrowed
 * for the lookup's life) with the timeouts of cf; nothing is connected
 * yet.  SUSPECT_E_NOMEM. */
suspect_rc_t redis_sentinel_new(const redis_addr_t *addr,
                                const redis_conf_t *cf, redis_sentinel_t **out,
                                suspect_err_t *err);
void redis_sentinel_free(redis_sentinel_t *s);

/*
 * The master to use now: *gen gets its generation (a number that changes
 * whenever the master does) and, when that is not have_gen, *ep its
 * address.  Asks the sentinels first, before the deadline d, when no
 * master is known yet (waiting, until d, for a thread that already asks)
 * or after redis_sentinel_failed() (unless another thread asks: then the
 * known master is returned), and reads the +switch-master announcements
 * the sentinels sent meanwhile.  Returns SUSPECT_OK, or the error of the
 * last lookup while no master is known.
 */
suspect_rc_t redis_sentinel_master(redis_sentinel_t *s, uint64_t have_gen,
                                   redis_deadline_t d, uint64_t *gen,
                                   redis_endpoint_t *ep, suspect_err_t *err);

/* After a request, while its deadline d allows: subscribes to the
 * sentinels' announcements when it is time (REDIS_SENTINEL_WATCH_MS after
 * the first master is known, then again after a subscription broke),
 * unless another thread does. */
void redis_sentinel_idle(redis_sentinel_t *s, redis_deadline_t d);

/* The master of generation gen failed in a way that says it may be the
 * master no longer (refused, closed, timed out, READONLY, MASTERDOWN, a
 * replica by ROLE): the sentinels are asked again at the next chance. */
void redis_sentinel_failed(redis_sentinel_t *s, uint64_t gen);

/* Counters: master changes seen, times the sentinels were asked. */
void redis_sentinel_counts(redis_sentinel_t *s, uint64_t *switches,
                           uint64_t *asks);

#endif
