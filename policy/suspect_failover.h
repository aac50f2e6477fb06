/*
 * suspect_failover.h - fail modes, a circuit breaker and a lock cache in
 * front of a remote store (Redis).
 *
 * suspect_failover_new() wraps a primary store and a local (memory) store
 * into one store.  While the primary answers, its decisions are returned as
 * they are.  When it fails (any error but a caller's SUSPECT_E_INVAL), the
 * action's fail mode decides, and the decision says so in its degraded
 * field:
 *   open   - allow (SUSPECT_DEGRADED_OPEN);
 *   closed - deny, because the store is unavailable: the daemon answers 503,
 *            not 429 (SUSPECT_DEGRADED_CLOSED);
 *   local  - decide on the local store, exact for this process only
 *            (SUSPECT_DEGRADED_LOCAL).  The default.
 * A fail-mode decision is returned with SUSPECT_OK: the wrapper absorbed
 * the error.  Operator calls (status, reset, block) are not decisions: they
 * return the primary's error; reset and block are applied to the local
 * store too.
 *
 * Carrying back: what mode local decided (the locks the local store holds
 * for the identities it denied, the hits it admitted, blocks the primary
 * refused) is journaled, bounded (1024 identities, 4096 hits), and written
 * to the primary when it answers again, before the primary decides for this
 * process: on Redis each lock unless Redis holds a longer one, and each hit
 * still in its window with its own time (lua/carry.lua); on another primary
 * the locks only.  An unblock (reset) meanwhile drops the identity from the
 * journal.  See docs/redis.md.
 *
 * Circuit breaker: after `failures` consecutive primary failures (3), the
 * primary is not called for an interval (100 ms, doubling on each failed
 * probe up to 5 s); then a single call is let through as a probe while the
 * others keep using the fail mode; a successful probe closes the breaker
 * and resets the interval.  Transitions are counted and reported to an
 * optional callback (the library never logs).
 *
 * Lock cache: when a decision from the primary is denied by a lock, the
 * wrapper remembers that identity's lock end, and denies it until then
 * without a round trip (as the seed's .NET code short-cuts on EXISTS).
 * It is bounded (direct-mapped, 4096 cells, keyed by a secret SipHash of the
 * lock key) and uses the caller's now_ms.  reset (unblock) and
 * suspect_failover_bump_generation() (after a config reload) clear it, and
 * an entry is only trusted for lock_cache_ttl_ms (1 s) of real time, so an
 * unblock done elsewhere (suspectctl, another host) reaches this process
 * within that time.
 */
#ifndef SUSPECT_FAILOVER_H
#define SUSPECT_FAILOVER_H

#include <stdint.h>

#include "suspect_store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* suspect_decision_t.degraded */
#define SUSPECT_DEGRADED_NONE   0 /* the primary (or the lock cache) decided */
#define SUSPECT_DEGRADED_OPEN   1 /* store unavailable: allowed */
#define SUSPECT_DEGRADED_CLOSED 2 /* store unavailable: denied (503) */
#define SUSPECT_DEGRADED_LOCAL  3 /* store unavailable: the local store */

typedef enum suspect_failmode {
    SUSPECT_FAIL_LOCAL = 0, /* default */
    SUSPECT_FAIL_OPEN = 1,
    SUSPECT_FAIL_CLOSED = 2
} suspect_failmode_t;

/* Breaker states, for the callback and the stats. */
typedef enum suspect_breaker {
    SUSPECT_BREAKER_CLOSED = 0,   /* calling the primary */
    SUSPECT_BREAKER_OPEN = 1,     /* skipping it until the interval ends */
    SUSPECT_BREAKER_HALF_OPEN = 2 /* one probe in flight */
} suspect_breaker_t;

/* Called on each breaker transition, from the thread whose call caused it;
 * why is the primary's error (NULL when closing).  Also called with from
 * == to (no transition), at most every 10 s, when the primary answers a
 * call with SUSPECT_E_FULL (why says so): a full store is up, so the
 * breaker does not count it, and that call alone takes the fail mode.
 * Must be quick and must not call back into the store. */
typedef void (*suspect_breaker_cb)(void *arg, suspect_breaker_t from,
                                   suspect_breaker_t to,
                                   const suspect_err_t *why);

typedef struct suspect_failmode_override {
    const char *action;
    suspect_failmode_t mode;
} suspect_failmode_override_t;

typedef struct suspect_failover_opts {
    suspect_failmode_t mode; /* for actions without an override */
    const suspect_failmode_override_t *overrides; /* copied */
    size_t noverrides;
    unsigned failures;        /* consecutive failures that open; 0 = 3 */
    unsigned min_open_ms;     /* first interval; 0 = 100 */
    unsigned max_open_ms;     /* interval cap; 0 = 5000 */
    unsigned closed_retry_ms; /* retry_after of a closed-mode denial;
                                 0 = 1000 */
    suspect_breaker_cb on_breaker;
    void *cb_arg;
    unsigned lock_cache_ttl_ms;  /* how long a cached lock is trusted
                                    before the primary is asked again;
                                    0 = 1000 */
    int64_t (*mono_clock)(void); /* the monotonic milliseconds the breaker's
                                    intervals and the cache's trust are
                                    measured on; NULL = CLOCK_MONOTONIC
                                    (a fake clock for tests) */
} suspect_failover_opts_t;

typedef struct suspect_failover_stats {
    uint64_t primary_ok;     /* decisions the primary made */
    uint64_t primary_errors; /* primary calls that failed */
    uint64_t skipped;        /* calls not sent: breaker open */
    uint64_t failed_open;    /* decisions by fail mode open */
    uint64_t failed_closed;  /* ...closed */
    uint64_t failed_local;   /* ...local */
    uint64_t opens;          /* breaker transitions to open */
    uint64_t probes;         /* ...to half-open */
    uint64_t closes;         /* ...back to closed */
    uint64_t cache_hits;     /* denials served by the lock cache */
    suspect_breaker_t state; /* now */
    uint64_t carried_locks;  /* local locks written back to the primary */
    uint64_t carried_hits;   /* local hits added back to the primary */
    uint64_t carry_dropped;  /* local locks and hits not kept for it
                                (the journal was full) */
    uint64_t primary_full;   /* calls the primary answered full
                                (SUSPECT_E_FULL), by the fail mode */
} suspect_failover_stats_t;

/*
 * Wraps primary and local (both taken: freed with the wrapper, also when
 * this fails) into *out.  opts may be NULL for the defaults.
 * SUSPECT_E_INVAL when an override names an invalid action or a mode is
 * unknown, SUSPECT_E_NOMEM.
 */
suspect_rc_t suspect_failover_new(suspect_store_t *primary,
                                  suspect_store_t *local,
                                  const suspect_failover_opts_t *opts,
                                  suspect_store_t **out, suspect_err_t *err);

/* Fills *out with the wrapper's counters (zeros if store is not one). */
void suspect_failover_stats(suspect_store_t *store,
                            suspect_failover_stats_t *out);

/* Forgets every cached lock (call it after a config reload). */
void suspect_failover_bump_generation(suspect_store_t *store);

/* The fail mode that applies to action. */
suspect_failmode_t suspect_failover_mode(suspect_store_t *store,
                                         const char *action);

#ifdef __cplusplus
}
#endif

#endif
