/*
 * lmdb_internal.h - what the files of the LMDB store share: the store's state,
 * a record as read from the map, a key as stored, and the functions each
 * file gives the others.
 *
 *   lmdbstore.c  the store: decisions, life cycle, listing;
 *   lmdb_admin.c the operator's status, reset, block and unblock;
 *   lmdb_env.c   the environment: open, fork, the rwlock, transactions,
 *                errors;
 *   lmdb_rec.c   records and stored keys: encoding, state, read and write;
 *   lmdb_scan.c  walks over every record: the purges, the eviction, the
 *                lock listing, and the back-off that says when to walk;
 *   lmdb_reserve.c reservations: expiring and settling them;
 *   lmdb_meter.c metered records (token bucket, sliding counter).
 *
 * Only these seven files include lmdb.h.  Internal failures are kept apart
 * from LMDB's codes (<= -30800) and errno values (> 0) until lm_fail()
 * turns them into a suspect_rc_t.
 */
#ifndef SUSPECT_LMDB_INTERNAL_H
#define SUSPECT_LMDB_INTERNAL_H

#include <lmdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "meter.h"
#include "sha256.h"
#include "suspect_lmdb.h"
#include "suspect_store_impl.h"

#define REC_MAGIC    0x31524c53u /* "SLR1" read little-endian */
#define METER_MAGIC  0x314d4c53u /* "SLM1": a metered record */
#define REC_HEADER   32
#define METER_BYTES  24 /* at i64, cur i64, prev i64 */
#define KEY_LIMIT    511
#define HASH_TAIL    (2 + 2 * SUSPECT_SHA256_LEN) /* "%#" + hex */
#define PURGE_STEP   8
#define DROP_BATCH   64 /* deletes per transaction of a full walk */
#define FORMAT_KEY   "format"
#define FORMAT_VALUE "suspect-lmdb-1"
#define CURSOR_KEY   "purge-cursor"

#define LM_NOMEM         (-1)
#define LM_CORRUPT       (-2)
#define LM_COUNTERS_FULL (-3) /* no room for a new record without a lock */

/* New records without a lock may fill the records' pages up to
 * COUNTER_SHARE_NUM / COUNTER_SHARE_DEN of the map; the rest is for what
 * the store holds (lmdbstore.c, "Bounds"). */
#define COUNTER_SHARE_NUM 3
#define COUNTER_SHARE_DEN 4

/* A full purge or an eviction that freed fewer records than this is not
 * run again within BACKOFF_MS (of the callers' clock): a full map must not
 * cost every request a walk over every record. */
#define BACKOFF_FREED 64
#define BACKOFF_MS    1000

typedef struct lmstore {
    suspect_store_t base;
    pthread_rwlock_t rw; /* shared by operations; exclusive to remap */
    MDB_env *env;
    MDB_dbi recs, meta;
    pid_t pid;      /* the process that opened env */
    size_t key_max; /* longest stored key, K */
    char *path;
    suspect_lmdb_opts_t opts; /* opts.path points at path */
    unsigned char *scratch;   /* a record being built; write txns only */
    size_t scratch_cap;
    int64_t purge_idle_at; /* last fruitless full purge, 0 = none (atomic) */
    int64_t evict_idle_at; /* last fruitless eviction, 0 = none (atomic) */
} lmstore_t;

/* A reservation (a reservation), as a record's extension holds it. */
typedef struct lm_resv {
    uint64_t id;
    int64_t at_ms, end_ms;
} lm_resv_t;

#define EXT_HEADER 16 /* offences u32, nresv u32, offence_until i64 */
#define RESV_BYTES 24

/* A record as found in the map: its header and its hits in place, and
 * its extension (reservations, offences) when it has one. */
typedef struct rec_view {
    bool found;
    uint32_t count;
    uint32_t window_s;
    int64_t lock_until_ms;
    int64_t expires_ms;
    const unsigned char *hits;
    uint32_t offences;
    int64_t offence_until_ms;
    uint32_t nresv;
    const unsigned char *resv; /* nresv x RESV_BYTES, unaligned */
    bool metered;              /* a meter in place of hits (count 0) */
    uint32_t algorithm;        /* its SUSPECT_ALGO_* */
    suspect_meter_t meter;
} rec_view_t;

/* A key as stored: the window key, or its hashed form. */
typedef struct skey {
    char buf[KEY_LIMIT + 1];
    MDB_val val;
} skey_t;

/* What a record becomes: hits old[from..count) plus add_ts when add,
 * merged with extra[0..nextra) (sorted); its extension: offences and
 * reservations[0..nresv) (lm_rec_new() starts from the old record's). */
typedef struct rec_new {
    const rec_view_t *old;
    uint32_t from;
    bool add;
    int64_t add_ts;
    int64_t lock_until_ms;
    uint32_t window_s;
    const int64_t *extra;
    uint32_t nextra;
    uint32_t offences;
    int64_t offence_until_ms;
    const lm_resv_t *resv;
    uint32_t nresv;
    bool metered; /* written as a metered record: no hits, the meter */
    uint32_t algorithm;
    suspect_meter_t meter;
} rec_new_t;

/* ---- lmdb_env.c --------------------------------------------------------- */

/* Turns an LMDB, errno or LM_ code into a suspect_rc_t and a message. */
suspect_rc_t lm_fail(const lmstore_t *ls, suspect_err_t *err, int rc,
                     const char *what);

/* Opens a new environment on ls->path into ls->env and the dbis; does not
 * touch the environment ls held before. */
suspect_rc_t lm_env_open(lmstore_t *ls, suspect_err_t *err);

/* Gives up env, which belongs to the parent process: kept, never closed. */
void lm_abandon_env(MDB_env *env);

/* Starts an operation: holds the rwlock shared and makes sure the
 * environment belongs to this process, reopening it after a fork. */
suspect_rc_t lm_enter(lmstore_t *ls, suspect_err_t *err);

/* Ends an operation lm_enter() started. */
void lm_leave(lmstore_t *ls);

/* Begins a transaction, the caller holding the rwlock shared (see
 * lmdb_env.c for full reader tables and maps other processes enlarged). */
int lm_txn_begin(lmstore_t *ls, unsigned flags, MDB_txn **txn);

/* Commits txn when rc is 0, else aborts it; returns the outcome. */
int lm_txn_end(MDB_txn *txn, int rc);

/* Whether the records in txn use less than num/den of the map's pages;
 * 0 or an LMDB code. */
int lm_map_room(const lmstore_t *ls, MDB_txn *txn, unsigned num, unsigned den,
                bool *room);

/* ---- lmdb_rec.c --------------------------------------------------------- */

/* Fills r from a stored value; false when the value is not a record. */
bool lm_rec_parse(const MDB_val *v, rec_view_t *r);

/* The i-th hit of r, oldest first. */
int64_t lm_rec_hit(const rec_view_t *r, uint32_t i);

/* The i-th reservation of r. */
lm_resv_t lm_rec_resv(const rec_view_t *r, uint32_t i);

/* An array for r's reservations and one more (owned: free()); NULL when out of
 * memory. */
lm_resv_t *lm_resv_alloc(const rec_view_t *r);

/* A rec_new_t that writes r back as it is (its reservations in *reservations,
 * an array of at least r->nresv + 1 the caller owns, so one may be added). */
void lm_rec_new(rec_new_t *nr, const rec_view_t *r, lm_resv_t *resv);

/* Adds r's reservations and offences at now to st (hits counted by the caller):
 * live reservations as pending, ended ones as hits in the window. */
void lm_rec_ext_state(const rec_view_t *r, const suspect_rule_t *rule,
                      int64_t now_ms, suspect_window_state_t *st);

/* The state of r under rule at now; *first gets the oldest hit still in
 * the window. */
void lm_rec_state(const rec_view_t *r, const suspect_rule_t *rule,
                  int64_t now_ms, suspect_window_state_t *st, uint32_t *first);

/* The stored form of key's window key (see lmdb_rec.c). */
void lm_store_key(const lmstore_t *ls, const suspect_key_t *key, skey_t *sk);

/* Reads the record of sk into r (r->found false when there is none). */
int lm_rec_get(const lmstore_t *ls, MDB_txn *txn, skey_t *sk, rec_view_t *r);

/* Writes what nr describes under sk, or deletes the record when it would
 * hold no hit and no lock. */
int lm_rec_store(lmstore_t *ls, MDB_txn *txn, skey_t *sk, const rec_new_t *nr);

/* ---- lmdb_reserve.c -------------------------------------------------------
 */

/* Writes back r's reservations whose end has come as hits at their times, and
 * reads the record of sk again into *r (0 when there were none). */
int lm_resv_expire(lmstore_t *ls, MDB_txn *txn, skey_t *sk, int64_t now_ms,
                   rec_view_t *r);

/* suspect_store_settle() on the LMDB store. */
suspect_rc_t lm_op_settle(suspect_store_t *store, const suspect_rule_t *rule,
                          const suspect_key_t *keys, size_t n,
                          const suspect_ticket_t *ticket, bool failed,
                          int64_t now_ms, suspect_err_t *err);

/* ---- lmdb_scan.c -------------------------------------------------------- */

/* Step 4 of a decision: the incremental purge, in txn. */
int lm_purge_step(lmstore_t *ls, MDB_txn *txn, int64_t now_ms);

/* A full purge, in write transactions of DROP_BATCH deletes; counts what
 * it deleted. */
int lm_purge_all(lmstore_t *ls, int64_t now_ms, size_t *purged);

/* Evicts the least recently hit eighth of the counters (records with hits
 * and no live lock, reservation or offence), in batches as the purge, to make
 * room in a full map for locks and the identities still active; counts
 * what it deleted.  Locks are never evicted. */
int lm_evict_counters(lmstore_t *ls, int64_t now_ms, size_t *evicted);

/* Calls fn for each live lock in txn until fn returns nonzero. */
int lm_scan_locked(lmstore_t *ls, MDB_txn *txn, int64_t now_ms,
                   suspect_lmdb_locked_fn fn, void *ud);

/* Whether rc means the map is full (MDB_MAP_FULL, LM_COUNTERS_FULL). */
bool lm_is_full(int rc);

/* The full purge, unless one freed fewer than BACKOFF_FREED records within
 * BACKOFF_MS of now; whether it freed any record. */
bool lm_free_dead(lmstore_t *ls, int64_t now_ms);

/* lm_evict_counters() under the same back-off; whether it freed any. */
bool lm_free_counters(lmstore_t *ls, int64_t now_ms);

/* ---- lmdb_admin.c ------------------------------------------------------- */

/* suspect_store_status(), _reset(), _block() and _unblock() on the LMDB
 * store. */
suspect_rc_t lm_status(suspect_store_t *store, const suspect_rule_t *rule,
                       const suspect_key_t *key, int64_t now_ms,
                       suspect_status_t *out, suspect_err_t *err);
suspect_rc_t lm_reset(suspect_store_t *store, const suspect_key_t *key,
                      unsigned what, suspect_err_t *err);
suspect_rc_t lm_block(suspect_store_t *store, const suspect_key_t *key,
                      int64_t now_ms, int64_t until_ms, suspect_err_t *err);
suspect_rc_t lm_unblock(suspect_store_t *store, const suspect_rule_t *rule,
                        const suspect_key_t *key, int64_t now_ms,
                        suspect_unblock_t *out, suspect_err_t *err);

/* ---- lmdb_meter.c ------------------------------------------------------- */

/* The state of rule's meter in r at now, its lock and offences included
 * (a record of another algorithm, or of hits: an empty meter). */
void lm_meter_state(const rec_view_t *r, const suspect_rule_t *rule,
                    int64_t now_ms, suspect_window_state_t *st);

/* Makes nr (from lm_rec_new() on r) a metered record of rule: a record of
 * hits or of another algorithm starts afresh, its lock and offences
 * kept. */
void lm_meter_adopt(rec_new_t *nr, const rec_view_t *r,
                    const suspect_rule_t *rule);

/* Settles a metered reservation on sk (suspect_store.h, docs/policy.md). */
int lm_meter_settle(lmstore_t *ls, MDB_txn *txn, skey_t *sk,
                    const suspect_rule_t *rule, const suspect_ticket_t *ticket,
                    bool failed, int64_t now_ms);

/* Unblock of a metered action in txn: the lock goes, room for one
 * request is made. */
int lm_meter_unblock(lmstore_t *ls, MDB_txn *txn, skey_t *sk,
                     const suspect_rule_t *rule, int64_t now_ms,
                     suspect_unblock_t *out);

/* A status from the meter of r. */
void lm_meter_status(const rec_view_t *r, const suspect_rule_t *rule,
                     int64_t now_ms, suspect_status_t *out);

#endif
