/*
 * rediscarry.h - what the failover wrapper decided on its local store while
 * the primary (Redis) was failing, kept to be carried back to it
 * (rediscarry.c: the journal; redisstore.c: redis_store_carry()).  Private
 * to the library.  An identity as journaled (redis_carry_ident_t) is
 * redisutil.h's, which both files use.
 */
#ifndef SUSPECT_REDISCARRY_H
#define SUSPECT_REDISCARRY_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "redisutil.h"
#include "siphash.h"
#include "suspect_store.h"

/* Bounds of one journal: identities, and hits over all of them. */
#define REDIS_CARRY_MAX_IDENTS 1024
#define REDIS_CARRY_MAX_HITS   4096

/* The journal.  Not locked: its owner serialises the calls. */
typedef struct redis_carry {
    suspect_siphash_key_t secret;
    redis_ids_t ids;
    redis_carry_ident_t *idents; /* REDIS_CARRY_MAX_IDENTS once used */
    size_t nidents;
    uint32_t *index;  /* open addressing: ident + 1, 0 = empty */
    size_t nhits;     /* over every identity */
    uint64_t dropped; /* locks and hits not kept: full or out of memory */
} redis_carry_t;

/* An empty journal (allocates nothing yet). */
void redis_carry_init(redis_carry_t *j, const suspect_siphash_key_t *secret);

/* Frees what j holds and empties it. */
void redis_carry_free(redis_carry_t *j);

/* Journals that key is locked until until_ms (the later of this and what
 * is journaled already).  False when it was dropped (j full). */
bool redis_carry_lock(redis_carry_t *j, const suspect_key_t *key,
                      int64_t until_ms);

/* Journals a hit on key at at_ms for a window of window_ms; the identity's
 * hits that left their window by at_ms are forgotten.  False when it was
 * dropped (j full). */
bool redis_carry_hit(redis_carry_t *j, const suspect_key_t *key, int64_t at_ms,
                     int64_t window_ms);

/* Forgets key's lock and/or hits (what: SUSPECT_RESET_*). */
void redis_carry_forget(redis_carry_t *j, const suspect_key_t *key,
                        unsigned what);

/* True when j holds nothing to carry. */
bool redis_carry_empty(const redis_carry_t *j);

/* Moves j's content into *out (initialised here) and empties j. */
void redis_carry_take(redis_carry_t *j, redis_carry_t *out);

/* Journals again, into j, the identities of src from the from-th on (what
 * a failed carry did not write); src is left as it was. */
void redis_carry_put_back(redis_carry_t *j, const redis_carry_t *src,
                          size_t from);

/* Journals what a decision d of the local store did: the hit on every key
 * when allowed, else the lock every key holds now in local (read with
 * suspect_store_status()).  Returns how many were dropped. */
size_t redis_carry_record(redis_carry_t *j, suspect_store_t *local,
                          const suspect_rule_t *rule, const suspect_key_t *keys,
                          size_t n, int64_t now_ms,
                          const suspect_decision_t *d);

/*
 * Writes j's identities to primary, in order, until one write fails: with
 * redis_store_carry() on a Redis store (locks and hits), else with
 * suspect_store_status() and suspect_store_block() (locks only, each
 * unless the primary holds a longer one; not atomic).  *done gets the
 * identities written, *locks and *hits are increased by what was.
 * Returns the first error.
 */
suspect_rc_t redis_carry_send(const redis_carry_t *j, suspect_store_t *primary,
                              int64_t now_ms, size_t *done, uint64_t *locks,
                              uint64_t *hits, suspect_err_t *err);

/* A journal shared by threads (the failover wrapper's), and who sends it. */
typedef struct redis_carry_sync {
    pthread_mutex_t mu; /* journal */
    redis_carry_t journal;
    int pending;             /* atomic: the journal may hold something */
    pthread_mutex_t send_mu; /* held by the thread sending it */
    uint64_t locks, hits;    /* atomics: written back */
    uint64_t dropped;        /* atomic: not journaled (full) */
} redis_carry_sync_t;

void redis_carry_sync_init(redis_carry_sync_t *s,
                           const suspect_siphash_key_t *secret);
void redis_carry_sync_destroy(redis_carry_sync_t *s);

/* redis_carry_record(), redis_carry_lock() and redis_carry_forget() under
 * the lock; what was dropped is counted in s->dropped. */
void redis_carry_sync_record(redis_carry_sync_t *s, suspect_store_t *local,
                             const suspect_rule_t *rule,
                             const suspect_key_t *keys, size_t n,
                             int64_t now_ms, const suspect_decision_t *d);
void redis_carry_sync_lock(redis_carry_sync_t *s, const suspect_key_t *key,
                           int64_t until_ms);
void redis_carry_sync_forget(redis_carry_sync_t *s, const suspect_key_t *key,
                             unsigned what);

/*
 * When the journal holds anything, takes it and sends it to primary
 * (redis_carry_send()); what was not sent is journaled again.  One thread
 * sends at a time: another caller waits for it when wait (on a Redis
 * primary, until the deadline the write-back shares with the decision
 * after it: then SUSPECT_E_TIMEOUT), else returns at once with *busy set.
 * What was written is counted in s->locks and s->hits.  Returns
 * SUSPECT_OK (also when there was nothing to send) or the send's error;
 * on SUSPECT_OK the caller's next primary operation is the decision.
 */
suspect_rc_t redis_carry_sync_flush(redis_carry_sync_t *s,
                                    suspect_store_t *primary, int64_t now_ms,
                                    bool wait, bool *busy, suspect_err_t *err);

#endif
