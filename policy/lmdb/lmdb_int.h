/*
 * lmdb_int.h - what the files of the LMDB store share: the store's state,
 * a record as read from the map, a key as stored, and the functions each
 * file gives the others.
 *
 *   lmdbstore.c  the store: decisions, operator operations, life cycle;
 *   lmdb_env.c   the environment: open, fork, the rwlock, transactions,
 *                errors;
 *   lmdb_rec.c   records and stored keys: encoding, state, read and write;
 *   lmdb_scan.c  walks over every record: the purges, the lock listing.
 *
 * Only these four files include lmdb.h.  Internal failures are kept apart
 * from LMDB's codes (<= -30800) and errno values (> 0) until lm_fail()
 * turns them into a suspect_rc_t.
 */
#ifndef SUSPECT_LMDB_INT_H
#define SUSPECT_LMDB_INT_H

#include <lmdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "sha256.h"
#include "suspect_lmdb.h"
#include "suspect_store_impl.h"

#define REC_MAGIC    0x31524c53u /* "SLR1" read little-endian */
#define REC_HEADER   32
#define KEY_LIMIT    511
#define HASH_TAIL    (2 + 2 * SUSPECT_SHA256_LEN) /* "%#" + hex */
#define PURGE_STEP   8
#define FORMAT_KEY   "format"
#define FORMAT_VALUE "suspect-lmdb-1"
#define CURSOR_KEY   "purge-cursor"

#define LM_NOMEM   (-1)
#define LM_CORRUPT (-2)

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
} lmstore_t;

/* A record as found in the map: its header and its hits in place. */
typedef struct rec_view {
    bool found;
    uint32_t count;
    uint32_t window_s;
    int64_t lock_until_ms;
    int64_t expires_ms;
    const unsigned char *hits;
} rec_view_t;

/* A key as stored: the window key, or its hashed form. */
typedef struct skey {
    char buf[KEY_LIMIT + 1];
    MDB_val val;
} skey_t;

/* What a record becomes: hits old[from..count) plus add_ts when add. */
typedef struct rec_new {
    const rec_view_t *old;
    uint32_t from;
    bool add;
    int64_t add_ts;
    int64_t lock_until_ms;
    uint32_t window_s;
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

/* ---- lmdb_rec.c --------------------------------------------------------- */

/* Fills r from a stored value; false when the value is not a record. */
bool lm_rec_parse(const MDB_val *v, rec_view_t *r);

/* The i-th hit of r, oldest first. */
int64_t lm_rec_hit(const rec_view_t *r, uint32_t i);

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

/* ---- lmdb_scan.c -------------------------------------------------------- */

/* Step 4 of a decision: the incremental purge, in txn. */
int lm_purge_step(lmstore_t *ls, MDB_txn *txn, int64_t now_ms);

/* A full purge in its own write transaction; counts what it deleted. */
int lm_purge_all(lmstore_t *ls, int64_t now_ms, size_t *purged);

/* Calls fn for each live lock in txn until fn returns nonzero. */
int lm_scan_locked(lmstore_t *ls, MDB_txn *txn, int64_t now_ms,
                   suspect_lmdb_locked_fn fn, void *ud);

#endif
