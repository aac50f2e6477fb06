/*
 * suspect_store.h - where counts and locks live, behind one interface.
 *
 * A store keeps, for each window key, the timestamps of the hits in the
 * window, and for each lock key, when the lock ends.  suspect_store_decide()
 * runs the whole decision for a request (every identity's lock check, window
 * trim, count, lock creation and recording) as one atomic step, with the
 * semantics of suspect_policy_evaluate().  Return codes say whether the store
 * worked; the decision itself is the out-parameter.
 *
 * Backends: the memory store below (one process, many threads); others live
 * in their own headers.  A backend is a struct whose first member is a
 * suspect_store_t, with an ops table; suspect_store_impl.h describes it.
 *
 * A request whose response decides whether it counts (count only failed
 * logins) is reserved instead of decided: suspect_store_reserve() decides
 * as suspect_store_decide() does, but an allowed request holds a reservation in
 * flight on every identity instead of a hit; suspect_store_settle() turns
 * the reservation into a hit (at the moment it was taken) or drops it; a
 * reservation never settled becomes a hit when its time is up.  Reservations
 * count against the limit like hits but never lock (docs/policy.md).
 *
 * Operator operations (status, reset, block) act on one identity.
 */
#ifndef SUSPECT_STORE_H
#define SUSPECT_STORE_H

#include <stdint.h>

#include "suspect_error.h"
#include "suspect_policy.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct suspect_store suspect_store_t;

/* What the store holds for one identity of an action at now. */
typedef struct suspect_status {
    uint32_t in_window;       /* hits in the window */
    uint32_t remaining;       /* hits left before the window is full */
    int64_t locked_until_ms;  /* lock end (epoch ms), 0 when not locked */
    int64_t free_at_ms;       /* when the window has room again, 0 if it has */
    uint32_t pending;         /* reservations in flight */
    uint32_t offences;        /* offences remembered (escalating rules) */
    int64_t offence_until_ms; /* when they are forgotten, 0 = none */
    int64_t full_at_ms;       /* a token bucket or counter: when it holds
                                 nothing any more (0 = now); else 0 */
} suspect_status_t;

/* What suspect_store_reset() clears. */
enum {
    SUSPECT_RESET_LOCK = 1,     /* drop the lock, keep the hits */
    SUSPECT_RESET_WINDOW = 2,   /* forget the hits and reservations */
    SUSPECT_RESET_OFFENCES = 4, /* forget the offence count */
    SUSPECT_RESET_ALL = 7
};

/* A reservation, as suspect_store_reserve() took it on every identity
 * of the request; suspect_store_settle() needs it and the same keys. */
typedef struct suspect_ticket {
    uint64_t id;    /* 0: nothing was reserved (denied, or a fail mode
                       decided without the store) */
    int64_t at_ms;  /* when it was taken: the hit's time if it counts */
    int64_t end_ms; /* when it becomes a hit unless settled before */
    int where;      /* which store holds it (a wrapper's business) */
} suspect_ticket_t;

/* What suspect_store_unblock() did. */
typedef struct suspect_unblock {
    int64_t lock_until_ms; /* end of the live lock it dropped, 0 = none */
    uint32_t dropped;      /* hits it dropped from the window, oldest first */
    uint32_t kept;         /* hits left in the window */
} suspect_unblock_t;

/* Called by suspect_store_foreach_locked() for each live lock: the window
 * key (key[0..len), not NUL-terminated) and the lock's end.  Returns 0 to
 * go on, anything else to stop. */
typedef int (*suspect_locked_fn)(void *arg, const char *key, size_t len,
                                 int64_t until_ms);

/*
 * Decides a request of rule's action for the n identities whose keys are
 * keys[0..n-1] (1 <= n <= SUSPECT_MAX_IDENTITIES), at now_ms, and records it
 * when allowed.  Returns SUSPECT_OK with *out filled, or an error code (the
 * store failed; *out is then a denial the caller should not trust; apply the
 * fail mode).  Two keys in one call must differ.
 */
suspect_rc_t suspect_store_decide(suspect_store_t *store,
                                  const suspect_rule_t *rule,
                                  const suspect_key_t *keys, size_t n,
                                  int64_t now_ms, suspect_decision_t *out,
                                  suspect_err_t *err);

/*
 * As suspect_store_decide(), but an allowed request holds a reservation
 * on every identity until suspect_store_settle() or until ttl_ms (>= 1)
 * has passed; *ticket names it (ticket->id 0 when nothing was held).
 * SUSPECT_E_INVAL from a backend that cannot reserve
 * (suspect_store_can_reserve()).
 */
suspect_rc_t
suspect_store_reserve(suspect_store_t *store, const suspect_rule_t *rule,
                      const suspect_key_t *keys, size_t n, int64_t now_ms,
                      int64_t ttl_ms, suspect_decision_t *out,
                      suspect_ticket_t *ticket, suspect_err_t *err);

/*
 * Settles the reservation of ticket on keys[0..n) (the keys it was reserved
 * on): a hit at ticket->at_ms when failed (the attempt failed or its response
 * never came) or when its time is up, else dropped
 * (suspect_policy_settle_counts()).  A ticket with id 0, or a reservation the
 * store no longer holds (reset, or already a hit), is a no-op.  An error
 * leaves the reservation to become a hit at its end.
 */
suspect_rc_t suspect_store_settle(suspect_store_t *store,
                                  const suspect_rule_t *rule,
                                  const suspect_key_t *keys, size_t n,
                                  const suspect_ticket_t *ticket, bool failed,
                                  int64_t now_ms, suspect_err_t *err);

/* Features beyond the seed's semantics, for suspect_store_supports(). */
#define SUSPECT_STORE_CAN_RESERVE  1u /* reservations (reserve, settle) */
#define SUSPECT_STORE_CAN_ESCALATE 2u /* offence counts (BlockFactor) */
#define SUSPECT_STORE_CAN_METER                                                \
    4u /* token buckets and sliding counters                                   \
          (suspect_rule_t.algorithm) */

/* True when store gives every feature of what (SUSPECT_STORE_CAN_*): a
 * caller refuses a configuration that needs one it lacks rather than let
 * a limit weaken silently. */
bool suspect_store_supports(const suspect_store_t *store, unsigned what);

/* suspect_store_supports(store, SUSPECT_STORE_CAN_RESERVE). */
bool suspect_store_can_reserve(const suspect_store_t *store);

/* Reads one identity's state without changing it. */
suspect_rc_t suspect_store_status(suspect_store_t *store,
                                  const suspect_rule_t *rule,
                                  const suspect_key_t *key, int64_t now_ms,
                                  suspect_status_t *out, suspect_err_t *err);

/* Clears the lock and/or the hits of one identity (what: SUSPECT_RESET_*). */
suspect_rc_t suspect_store_reset(suspect_store_t *store,
                                 const suspect_key_t *key, unsigned what,
                                 suspect_err_t *err);

/*
 * Lets one identity in on its next request: drops its lock and, when its
 * window is full, the oldest hits in it, so that it holds limit_count - 1
 * (a lock-out action would otherwise lock it again at once).  The other
 * hits stay, so it is not a reset.  *out says what was dropped.
 * SUSPECT_E_INVAL for a store that cannot (a backend without the call).
 */
suspect_rc_t suspect_store_unblock(suspect_store_t *store,
                                   const suspect_rule_t *rule,
                                   const suspect_key_t *key, int64_t now_ms,
                                   suspect_unblock_t *out, suspect_err_t *err);

/*
 * Calls fn for every identity whose key starts with prefix (NULL or "" =
 * every one) and that is locked at now_ms.  Not a snapshot on every
 * backend (Redis scans); a key may come twice.  SUSPECT_E_INVAL for a
 * backend that cannot list its locks.
 */
suspect_rc_t suspect_store_foreach_locked(suspect_store_t *store,
                                          const char *prefix, int64_t now_ms,
                                          suspect_locked_fn fn, void *arg,
                                          suspect_err_t *err);

/* Locks one identity until until_ms, replacing any lock it has. */
suspect_rc_t suspect_store_block(suspect_store_t *store,
                                 const suspect_key_t *key, int64_t now_ms,
                                 int64_t until_ms, suspect_err_t *err);

/* The backend's name ("memory", ...). */
const char *suspect_store_name(const suspect_store_t *store);

/* Frees the store and everything it holds.  NULL is a no-op. */
void suspect_store_free(suspect_store_t *store);

/* ---- the memory store -----------------------------------------------------
 */

typedef struct suspect_memstore_opts {
    size_t max_entries; /* identities tracked at most; 0 = 200000 */
    unsigned shards;    /* lock stripes, rounded up to a power of two;
                           0 = 64; fewer when max_entries / 64 is
                           smaller */
} suspect_memstore_opts_t;

/*
 * An in-process store, exact under threads, bounded: when full, an insert
 * first drops expired identities, then the least recently used counter; a
 * live lock is never evicted (a store full of live locks fails a decision
 * on a new identity with SUSPECT_E_FULL).  opts may be NULL.  Returns an
 * owned store in *out.
 */
suspect_rc_t suspect_memstore_new(const suspect_memstore_opts_t *opts,
                                  suspect_store_t **out, suspect_err_t *err);

/* Entries and meters the memory store holds now (for tests and metrics;
 * an identity with a meter and a lock counts twice). */
size_t suspect_memstore_size(suspect_store_t *store);

/* Bytes the memory store has allocated for entries and meters now. */
size_t suspect_memstore_bytes(suspect_store_t *store);

#ifdef __cplusplus
}
#endif

#endif
