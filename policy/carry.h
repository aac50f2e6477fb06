/*
 * carry.h - what the failover wrapper decided on its local store while the
 * primary was failing, kept to be carried back to it (carry.c).  Private to
 * the library.  The primary takes it through the store interface
 * (suspect_store_ops_t.carry, on the Redis store) or, lacking that, lock by
 * lock with status and block.
 */
#ifndef SUSPECT_CARRY_H
#define SUSPECT_CARRY_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hitid.h"
#include "siphash.h"
#include "suspect_store_impl.h"

/* Bounds of one journal: identities, and hits over all of them. */
#define CARRY_MAX_IDENTS 1024
#define CARRY_MAX_HITS   4096

/* One identity: its lock and the hits admitted for it. */
typedef struct carry_ident {
    uint64_t h[2];         /* keyed SipHash of the lock key */
    char *key;             /* window key, ":locked", NUL; owned */
    size_t window_len;     /* the lock key is window_len + 7 bytes */
    int64_t lock_until_ms; /* 0 = no lock to carry */
    int64_t window_ms;     /* the rule's window, for the hits */
    uint32_t algorithm, limit_count, burst; /* a metered rule's; 0 = log */
    size_t nhits, hits_cap;                 /* hits in time order */
    suspect_carry_hit_t *hits;              /* owned */
} carry_ident_t;

/* The journal.  Not locked: its owner serialises the calls. */
typedef struct carry {
    suspect_siphash_key_t secret;
    hit_ids_t ids;
    carry_ident_t *idents; /* CARRY_MAX_IDENTS once used */
    size_t nidents;
    uint32_t *index;  /* open addressing: ident + 1, 0 = empty */
    size_t nhits;     /* over every identity */
    uint64_t dropped; /* locks and hits not kept: full or out of memory */
} carry_t;

/* An empty journal (allocates nothing yet).  SUSPECT_OK, or SUSPECT_E_IO
 * when no salt for its hit ids could be drawn; j is empty either way. */
suspect_rc_t carry_init(carry_t *j, const suspect_siphash_key_t *secret,
                        suspect_err_t *err);

/* Frees what j holds and empties it. */
void carry_free(carry_t *j);

/* Journals that key is locked until until_ms (the later of this and what
 * is journaled already).  False when it was dropped (j full). */
bool carry_lock(carry_t *j, const suspect_key_t *key, int64_t until_ms);

/* Journals a hit of rule (its cost, for a metered rule) on key at at_ms;
 * the identity's hits that weigh nothing any more at at_ms (older than
 * its window, or than suspect_meter_span_ms() for a meter) are
 * forgotten.  False when it was dropped (j full). */
bool carry_hit(carry_t *j, const suspect_key_t *key, const suspect_rule_t *rule,
               int64_t at_ms);

/* Forgets key's lock and/or hits (what: SUSPECT_RESET_*). */
void carry_forget(carry_t *j, const suspect_key_t *key, unsigned what);

/* True when j holds nothing to carry. */
bool carry_empty(const carry_t *j);

/* Moves j's content into *out (initialised here) and empties j. */
void carry_take(carry_t *j, carry_t *out);

/* Journals again, into j, the identities of src from the from-th on (what
 * a failed carry did not write); src is left as it was. */
void carry_put_back(carry_t *j, const carry_t *src, size_t from);

/* Journals what a decision d of the local store did: the hit on every key
 * when allowed, else the lock every key holds now in local (read with
 * suspect_store_status()).  Returns how many were dropped. */
size_t carry_record(carry_t *j, suspect_store_t *local,
                    const suspect_rule_t *rule, const suspect_key_t *keys,
                    size_t n, int64_t now_ms, const suspect_decision_t *d);

/*
 * Writes j's identities to primary, in order, until one write fails: with
 * the store's carry operation when it has one (locks and hits), else with
 * suspect_store_status() and suspect_store_block() (locks only, each
 * unless the primary holds a longer one; not atomic).  *done gets the
 * identities written, *locks and *hits are increased by what was.
 * Returns the first error.
 */
suspect_rc_t carry_send(const carry_t *j, suspect_store_t *primary,
                        int64_t now_ms, size_t *done, uint64_t *locks,
                        uint64_t *hits, suspect_err_t *err);

/* A journal shared by threads (the failover wrapper's), and who sends it. */
typedef struct carry_sync {
    pthread_mutex_t mu; /* journal */
    carry_t journal;
    int pending;             /* atomic: the journal may hold something */
    pthread_mutex_t send_mu; /* held by the thread sending it */
    uint64_t locks, hits;    /* atomics: written back */
    uint64_t dropped;        /* atomic: not journaled (full) */
} carry_sync_t;

suspect_rc_t carry_sync_init(carry_sync_t *s,
                             const suspect_siphash_key_t *secret,
                             suspect_err_t *err);
void carry_sync_destroy(carry_sync_t *s);

/* carry_record(), carry_lock() and carry_forget() under the lock; what was
 * dropped is counted in s->dropped. */
void carry_sync_record(carry_sync_t *s, suspect_store_t *local,
                       const suspect_rule_t *rule, const suspect_key_t *keys,
                       size_t n, int64_t now_ms, const suspect_decision_t *d);
void carry_sync_lock(carry_sync_t *s, const suspect_key_t *key,
                     int64_t until_ms);
void carry_sync_forget(carry_sync_t *s, const suspect_key_t *key,
                       unsigned what);

/*
 * When the journal holds anything, takes it and sends it to primary
 * (carry_send()); what was not sent is journaled again.  One thread sends
 * at a time: another caller waits for it when wait (until the deadline
 * the write-back shares with the decision after it, on a primary that has
 * one (suspect_store_ops_t.carry_begin): then SUSPECT_E_TIMEOUT), else
 * returns at once with *busy set.  What was written is counted in
 * s->locks and s->hits.  Returns SUSPECT_OK (also when there was nothing
 * to send) or the send's error; on SUSPECT_OK the caller's next primary
 * operation is the decision.
 */
suspect_rc_t carry_sync_flush(carry_sync_t *s, suspect_store_t *primary,
                              int64_t now_ms, bool wait, bool *busy,
                              suspect_err_t *err);

#endif
