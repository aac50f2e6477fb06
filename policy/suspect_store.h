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
    uint32_t in_window;      /* hits in the window */
    uint32_t remaining;      /* hits left before the window is full */
    int64_t locked_until_ms; /* lock end (epoch ms), 0 when not locked */
    int64_t free_at_ms;      /* when the window has room again, 0 if it has */
} suspect_status_t;

/* What suspect_store_reset() clears. */
enum {
    SUSPECT_RESET_LOCK = 1,   /* drop the lock, keep the hits */
    SUSPECT_RESET_WINDOW = 2, /* forget the hits */
    SUSPECT_RESET_ALL = 3
};

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
                           0 = 64 */
} suspect_memstore_opts_t;

/*
 * An in-process store, exact under threads, bounded: when full, an insert
 * first drops expired identities, then the least recently used one that is
 * not locked (a locked one only if the oldest entries are all locked).
 * opts may be NULL.  Returns an owned store in *out.
 */
suspect_rc_t suspect_memstore_new(const suspect_memstore_opts_t *opts,
                                  suspect_store_t **out, suspect_err_t *err);

/* Entries the memory store holds now (for tests and metrics). */
size_t suspect_memstore_size(suspect_store_t *store);

/* Bytes the memory store has allocated for entries now. */
size_t suspect_memstore_bytes(suspect_store_t *store);

#ifdef __cplusplus
}
#endif

#endif
