/*
 * lmdbstore.c - the LMDB store: exact across the processes of one host,
 * persistent, bounded.  The only file of libsuspect that includes lmdb.h.
 *
 * What.  The store of suspect-cgi (a process per request) and of hosts
 * running several suspect-fcgi processes (Apache mod_fcgid, spawn-fcgi -F).
 * Every process opens the same file; LMDB lets one write transaction run at
 * a time across all of them (a robust process-shared mutex in the lock
 * file), so doing the whole decision in one write transaction makes it
 * exact.  Committed state is in the file: it survives restarts.
 *
 * File.  One database file at opts->path (MDB_NOSUBDIR) and its lock file
 * at path "-lock", created with opts->mode (0600: other users can neither
 * read identities nor forge hits).  Two named databases:
 *   "records"  window key -> record (one entry per identity);
 *   "meta"     "format" -> "suspect-lmdb-1" (refuses other files), and
 *              "purge-cursor" -> the last key the incremental purge saw.
 * The environment uses MDB_NOTLS, so read transactions (status, listing)
 * may run on any thread, and mdb_reader_check() clears reader slots of dead
 * processes on open and whenever the reader table is full.
 *
 * Keys.  The window key bytes (the lock is kept inside the same record, so
 * one key per identity).  LMDB keys hold at most K = 511 bytes; keys built
 * with a long prefix, the typed format and a large value cap can be longer.
 * A key shorter than K is stored as it is; a longer one becomes exactly K
 * bytes: its first K - 66 bytes, "%#" and the 64 hex digits of the SHA-256
 * of the whole key.  Stored lengths keep the two kinds apart (raw < K,
 * hashed == K), and the digest keeps long keys apart.
 *
 * Record (native byte order; an LMDB file is not portable across CPUs
 * anyway):
 *   magic u32 "SLR1" | count u32 | window_s u32 | reserved u32 |
 *   lock_until_ms i64 | expires_ms i64 | hits[count] i64, ascending
 * window_s is the window of the last decision on the record; expires_ms is
 * max(newest hit + window, lock_until): after it the record means nothing.
 * Values are read with memcpy (LMDB gives no alignment).
 *
 * A decision (one write transaction):
 *   1. read every identity's record, compute its suspect_window_state_t;
 *   2. suspect_policy_evaluate();
 *   3. for each identity, read the record again (a put may have moved the
 *      others) and write the trimmed hits, the hit when allowed and the new
 *      lock; a record left with no hit and no live lock is deleted, an
 *      unchanged one is not written;
 *   4. the incremental purge: look at PURGE_STEP records after the saved
 *      cursor (wrapping at the end), delete the expired ones, save the
 *      cursor; with every decision doing this, dead records go away at a
 *      steady rate without a sweeper process;
 *   5. commit.
 * Any error aborts the transaction: the file never holds half a decision.
 *
 * Bounds.  The map size is the bound (no entry count: the map is what
 * runs out).  When a write meets MDB_MAP_FULL, the transaction is aborted,
 * a full purge deletes every expired record in its own transaction, and the
 * decision is run once more; if the map is still full the call fails with
 * SUSPECT_E_FULL, "lmdb <path>: store full (map size N bytes)", and the
 * caller's fail mode applies.  Live identities are never evicted: dropping
 * a live lock or window would let an attacker who fills the map reset its
 * own limits.
 *
 * Processes and threads.  An environment must not be used across fork():
 * each store remembers the pid that opened its environment, and a call from
 * another pid opens the file again (the inherited handle is abandoned, not
 * closed, because closing it would release the parent's reader slots).
 * Threads share a store: a rwlock is held shared by every operation and
 * exclusively only to reopen or to adopt a map another process enlarged
 * (MDB_MAP_RESIZED), the two moments the mapping may move.  The scratch
 * buffer where records are built is only touched inside a write
 * transaction, which LMDB already serialises.
 *
 * Ownership.  The store owns its environment, path copy and scratch; keys
 * and rules are borrowed for the call; values LMDB returns are valid only
 * inside their transaction and are never kept.
 */
#include "suspect_lmdb.h"
#include "suspect_store_impl.h"

#include <errno.h>
#include <lmdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "alloc.h"
#include "sha256.h"

#define REC_MAGIC    0x31524c53u /* "SLR1" read little-endian */
#define REC_HEADER   32
#define KEY_LIMIT    511
#define HASH_TAIL    (2 + 2 * SUSPECT_SHA256_LEN) /* "%#" + hex */
#define PURGE_STEP   8
#define FORMAT_KEY   "format"
#define FORMAT_VALUE "suspect-lmdb-1"
#define CURSOR_KEY   "purge-cursor"

/* Internal failures, kept apart from LMDB's codes (<= -30800) and errno
 * values (> 0) until lm_fail() turns them into a suspect_rc_t. */
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

static const suspect_store_ops_t lmdb_ops;
static const char hexdigits[] = "0123456789abcdef";

/* Environments inherited across fork() and abandoned: never closed, kept
 * here so that they stay reachable (a child that reopens is no leak);
 * volatile, or the compiler drops stores it never sees read. */
#define ABANDONED_MAX 16
static pthread_mutex_t abandoned_mu = PTHREAD_MUTEX_INITIALIZER;
static MDB_env *volatile abandoned[ABANDONED_MAX];
static size_t abandoned_n;

/* ---- records --------------------------------------------------------------
 */

static int64_t get_i64(const unsigned char *p)
{
    int64_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof(v));
    return v;
}

static void put_i64(unsigned char *p, int64_t v)
{
    memcpy(p, &v, sizeof(v));
}

static void put_u32(unsigned char *p, uint32_t v)
{
    memcpy(p, &v, sizeof(v));
}

/* Fills r from a stored value; false when the value is not a record. */
static bool rec_parse(const MDB_val *v, rec_view_t *r)
{
    const unsigned char *p = v->mv_data;

    memset(r, 0, sizeof(*r));
    if (v->mv_size < REC_HEADER || get_u32(p) != REC_MAGIC) {
        return false;
    }
    r->count = get_u32(p + 4);
    if (v->mv_size != REC_HEADER + (size_t)r->count * 8) {
        return false;
    }
    r->found = true;
    r->window_s = get_u32(p + 8);
    r->lock_until_ms = get_i64(p + 16);
    r->expires_ms = get_i64(p + 24);
    r->hits = p + REC_HEADER;
    return true;
}

static int64_t rec_hit(const rec_view_t *r, uint32_t i)
{
    return get_i64(r->hits + (size_t)i * 8);
}

/* Index of the first hit after cutoff (count when none): hits at or before
 * the cutoff have left the window. */
static uint32_t rec_first_after(const rec_view_t *r, int64_t cutoff)
{
    uint32_t lo = 0, hi = r->count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (rec_hit(r, mid) <= cutoff) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

/* The state of r under rule at now; *first gets the oldest hit still in
 * the window. */
static void rec_state(const rec_view_t *r, const suspect_rule_t *rule,
                      int64_t now_ms, suspect_window_state_t *st,
                      uint32_t *first)
{
    int64_t window_ms = (int64_t)rule->window_s * 1000;

    memset(st, 0, sizeof(*st));
    *first = 0;
    if (!r->found) {
        return;
    }
    *first = rec_first_after(r, now_ms - window_ms);
    st->lock_until_ms = r->lock_until_ms;
    st->in_window = r->count - *first;
    if (st->in_window >= rule->limit_count) {
        uint32_t k = *first + (st->in_window - rule->limit_count);
        st->free_at_ms = rec_hit(r, k) + window_ms;
    }
}

/* What a record becomes: hits old[from..count) plus add_ts when add. */
typedef struct rec_new {
    const rec_view_t *old;
    uint32_t from;
    bool add;
    int64_t add_ts;
    int64_t lock_until_ms;
    uint32_t window_s;
} rec_new_t;

static uint32_t rec_new_count(const rec_new_t *nr)
{
    uint32_t kept = nr->old->found ? nr->old->count - nr->from : 0;
    return kept + (nr->add ? 1 : 0);
}

/* Makes the scratch buffer hold at least size bytes; false on ENOMEM. */
static bool scratch_reserve(lmstore_t *ls, size_t size)
{
    unsigned char *p;

    if (size <= ls->scratch_cap) {
        return true;
    }
    p = suspect_realloc(ls->scratch, size);
    if (p == NULL) {
        return false;
    }
    ls->scratch = p;
    ls->scratch_cap = size;
    return true;
}

/* Builds the record nr describes in the scratch buffer; *v points at it. */
static int rec_build(lmstore_t *ls, const rec_new_t *nr, MDB_val *v)
{
    uint32_t count = rec_new_count(nr);
    uint32_t kept = count - (nr->add ? 1 : 0);
    size_t size = REC_HEADER + (size_t)count * 8;
    int64_t expires = nr->lock_until_ms;
    unsigned char *p;

    if (!scratch_reserve(ls, size)) {
        return LM_NOMEM;
    }
    p = ls->scratch;
    memset(p, 0, REC_HEADER);
    if (kept > 0) {
        memcpy(p + REC_HEADER, nr->old->hits + (size_t)nr->from * 8,
               (size_t)kept * 8);
    }
    if (nr->add) {
        put_i64(p + REC_HEADER + (size_t)kept * 8, nr->add_ts);
    }
    if (count > 0) {
        int64_t newest = get_i64(p + REC_HEADER + (size_t)(count - 1) * 8);
        int64_t end = newest + (int64_t)nr->window_s * 1000;
        expires = end > expires ? end : expires;
    }
    put_u32(p, REC_MAGIC);
    put_u32(p + 4, count);
    put_u32(p + 8, nr->window_s);
    put_i64(p + 16, nr->lock_until_ms);
    put_i64(p + 24, expires);
    v->mv_data = p;
    v->mv_size = size;
    return 0;
}

/* ---- keys and errors ------------------------------------------------------
 */

/* The stored form of key's window key (see the top of the file). */
static void store_key(const lmstore_t *ls, const suspect_key_t *key, skey_t *sk)
{
    uint8_t d[SUSPECT_SHA256_LEN];
    size_t head;

    if (key->window_len < ls->key_max) {
        sk->val.mv_data = (void *)key->buf;
        sk->val.mv_size = key->window_len;
        return;
    }
    head = ls->key_max - HASH_TAIL;
    suspect_sha256(key->buf, key->window_len, d);
    memcpy(sk->buf, key->buf, head);
    sk->buf[head] = '%';
    sk->buf[head + 1] = '#';
    for (size_t i = 0; i < SUSPECT_SHA256_LEN; i++) {
        sk->buf[head + 2 + 2 * i] = hexdigits[d[i] >> 4];
        sk->buf[head + 3 + 2 * i] = hexdigits[d[i] & 15];
    }
    sk->val.mv_data = sk->buf;
    sk->val.mv_size = ls->key_max;
}

/* The map size in effect (another process may have made it larger). */
static size_t map_size(const lmstore_t *ls)
{
    MDB_envinfo info;
    if (ls->env == NULL || mdb_env_info(ls->env, &info) != 0) {
        return ls->opts.map_size;
    }
    return info.me_mapsize;
}

/* Turns an LMDB, errno or LM_ code into a suspect_rc_t and a message. */
static suspect_rc_t lm_fail(const lmstore_t *ls, suspect_err_t *err, int rc,
                            const char *what)
{
    if (rc == MDB_MAP_FULL) {
        return suspect_err_set(err, SUSPECT_E_FULL, NULL, 0,
                               "lmdb %s: store full (map size %zu bytes)",
                               ls->path, map_size(ls));
    }
    if (rc == LM_NOMEM) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "lmdb %s: out of memory", ls->path);
    }
    if (rc == LM_CORRUPT) {
        return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                               "lmdb %s: %s: damaged record", ls->path, what);
    }
    if (rc > 0) {
        errno = rc;
        return suspect_err_sys(err, SUSPECT_E_IO, NULL, "lmdb %s: %s", ls->path,
                               what); /* appends strerror(rc) */
    }
    return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0, "lmdb %s: %s: %s",
                           ls->path, what, mdb_strerror(rc));
}

/* ---- the environment -------------------------------------------------------
 */

/* Checks the format mark; LM_CORRUPT when the file is someone else's. */
static int check_format(MDB_txn *txn, MDB_dbi meta)
{
    MDB_val k = {sizeof(FORMAT_KEY) - 1, (void *)FORMAT_KEY}, v;
    int rc = mdb_get(txn, meta, &k, &v);

    if (rc != 0) {
        return rc;
    }
    if (v.mv_size != sizeof(FORMAT_VALUE) - 1 ||
        memcmp(v.mv_data, FORMAT_VALUE, v.mv_size) != 0) {
        return LM_CORRUPT;
    }
    return 0;
}

/* Opens the two databases in txn (creating them with MDB_CREATE). */
static int open_dbis(MDB_txn *txn, unsigned flags, MDB_dbi *recs, MDB_dbi *meta)
{
    int rc = mdb_dbi_open(txn, "records", flags, recs);
    if (rc == 0) {
        rc = mdb_dbi_open(txn, "meta", flags, meta);
    }
    return rc;
}

/* Creates the databases and the format mark in a write transaction. */
static int create_dbis(MDB_env *env, MDB_dbi *recs, MDB_dbi *meta)
{
    MDB_txn *txn;
    MDB_val k = {sizeof(FORMAT_KEY) - 1, (void *)FORMAT_KEY};
    MDB_val v = {sizeof(FORMAT_VALUE) - 1, (void *)FORMAT_VALUE};
    int rc = mdb_txn_begin(env, NULL, 0, &txn);

    if (rc != 0) {
        return rc;
    }
    rc = open_dbis(txn, MDB_CREATE, recs, meta);
    if (rc == 0) {
        rc = check_format(txn, *meta);
        if (rc == MDB_NOTFOUND) {
            rc = mdb_put(txn, *meta, &k, &v, 0);
        }
    }
    if (rc == 0) {
        return mdb_txn_commit(txn);
    }
    mdb_txn_abort(txn);
    return rc;
}

/* Opens the databases: read-only when they exist (the usual case, so a
 * CGI process does not queue for the writer lock at start), else creates
 * them. */
static int attach_dbis(MDB_env *env, MDB_dbi *recs, MDB_dbi *meta)
{
    MDB_txn *txn;
    int rc = mdb_txn_begin(env, NULL, MDB_RDONLY, &txn);

    if (rc != 0) {
        return rc;
    }
    rc = open_dbis(txn, 0, recs, meta);
    if (rc == 0) {
        rc = check_format(txn, *meta);
    }
    if (rc == 0) {
        return mdb_txn_commit(txn);
    }
    mdb_txn_abort(txn);
    return rc == MDB_NOTFOUND ? create_dbis(env, recs, meta) : rc;
}

/* Explains why the file at ls->path could not be used. */
static suspect_rc_t open_fail(const lmstore_t *ls, suspect_err_t *err, int rc)
{
    if (rc == MDB_INVALID) {
        return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                               "lmdb %s: not an LMDB database", ls->path);
    }
    if (rc == MDB_VERSION_MISMATCH) {
        return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                               "lmdb %s: made by an incompatible LMDB version",
                               ls->path);
    }
    if (rc == LM_CORRUPT || rc == MDB_INCOMPATIBLE) {
        return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                               "lmdb %s: an LMDB database, but not a Suspect "
                               "store",
                               ls->path);
    }
    return lm_fail(ls, err, rc, "cannot open");
}

/* Gives up env, which belongs to the parent process. */
static void abandon_env(MDB_env *env)
{
    pthread_mutex_lock(&abandoned_mu);
    if (env != NULL && abandoned_n < ABANDONED_MAX) {
        abandoned[abandoned_n++] = env;
    }
    pthread_mutex_unlock(&abandoned_mu);
}

/* Opens a new environment on ls->path into ls->env and the dbis; does not
 * touch the environment ls held before. */
static suspect_rc_t env_open(lmstore_t *ls, suspect_err_t *err)
{
    unsigned flags = MDB_NOSUBDIR | MDB_NOTLS;
    MDB_env *env;
    MDB_dbi recs, meta;
    int dead, rc = mdb_env_create(&env);

    if (rc != 0) {
        return lm_fail(ls, err, rc, "cannot create environment");
    }
    flags |= ls->opts.no_sync ? MDB_NOSYNC : 0;
    rc = mdb_env_set_mapsize(env, ls->opts.map_size);
    if (rc == 0) {
        rc = mdb_env_set_maxdbs(env, 2);
    }
    if (rc == 0) {
        rc = mdb_env_set_maxreaders(env, ls->opts.max_readers);
    }
    if (rc == 0) {
        rc = mdb_env_open(env, ls->path, flags, (mdb_mode_t)ls->opts.mode);
    }
    if (rc == 0) {
        mdb_reader_check(env, &dead);
        rc = attach_dbis(env, &recs, &meta);
    }
    if (rc != 0) {
        mdb_env_close(env);
        return open_fail(ls, err, rc);
    }
    ls->env = env;
    ls->recs = recs;
    ls->meta = meta;
    ls->pid = getpid();
    ls->key_max = (size_t)mdb_env_get_maxkeysize(env);
    ls->key_max = ls->key_max < KEY_LIMIT ? ls->key_max : KEY_LIMIT;
    return SUSPECT_OK;
}

/*
 * Starts an operation: holds the rwlock shared and makes sure the
 * environment belongs to this process, reopening it after a fork.
 */
static suspect_rc_t lm_enter(lmstore_t *ls, suspect_err_t *err)
{
    suspect_rc_t rc = SUSPECT_OK;

    pthread_rwlock_rdlock(&ls->rw);
    if (ls->pid == getpid()) {
        return SUSPECT_OK;
    }
    pthread_rwlock_unlock(&ls->rw);
    pthread_rwlock_wrlock(&ls->rw);
    if (ls->pid != getpid()) {
        MDB_env *inherited = ls->env;
        rc = env_open(ls, err);
        if (rc == SUSPECT_OK) {
            abandon_env(inherited);
        }
    }
    pthread_rwlock_unlock(&ls->rw);
    return rc != SUSPECT_OK ? rc : lm_enter(ls, err);
}

static void lm_leave(lmstore_t *ls)
{
    pthread_rwlock_unlock(&ls->rw);
}

/*
 * Begins a transaction, the caller holding the rwlock shared.  Clears dead
 * readers when the reader table is full, and adopts a map another process
 * enlarged (which needs the rwlock exclusive: it moves the mapping).
 */
static int txn_begin(lmstore_t *ls, unsigned flags, MDB_txn **txn)
{
    int dead, rc = mdb_txn_begin(ls->env, NULL, flags, txn);

    if (rc == MDB_READERS_FULL) {
        mdb_reader_check(ls->env, &dead);
        rc = mdb_txn_begin(ls->env, NULL, flags, txn);
    } else if (rc == MDB_MAP_RESIZED) {
        pthread_rwlock_unlock(&ls->rw);
        pthread_rwlock_wrlock(&ls->rw);
        rc = mdb_env_set_mapsize(ls->env, 0);
        pthread_rwlock_unlock(&ls->rw);
        pthread_rwlock_rdlock(&ls->rw);
        if (rc == 0) {
            rc = mdb_txn_begin(ls->env, NULL, flags, txn);
        }
    }
    return rc;
}

/* Commits txn when rc is 0, else aborts it; returns the outcome. */
static int txn_end(MDB_txn *txn, int rc)
{
    if (rc == 0) {
        return mdb_txn_commit(txn);
    }
    mdb_txn_abort(txn);
    return rc;
}

/* Reads the record of sk into r (r->found false when there is none). */
static int rec_get(const lmstore_t *ls, MDB_txn *txn, skey_t *sk, rec_view_t *r)
{
    MDB_val v;
    int rc = mdb_get(txn, ls->recs, &sk->val, &v);

    memset(r, 0, sizeof(*r));
    if (rc == MDB_NOTFOUND) {
        return 0;
    }
    if (rc != 0) {
        return rc;
    }
    return rec_parse(&v, r) ? 0 : LM_CORRUPT;
}

/* Writes what nr describes under sk, or deletes the record when it would
 * hold no hit and no lock. */
static int rec_store(lmstore_t *ls, MDB_txn *txn, skey_t *sk,
                     const rec_new_t *nr)
{
    MDB_val v;
    int rc;

    if (rec_new_count(nr) == 0 && nr->lock_until_ms == 0) {
        return nr->old->found ? mdb_del(txn, ls->recs, &sk->val, NULL) : 0;
    }
    rc = rec_build(ls, nr, &v);
    return rc != 0 ? rc : mdb_put(txn, ls->recs, &sk->val, &v, 0);
}

/* ---- purging ---------------------------------------------------------------
 */

/* True when the stored value v means nothing at now (or is not a record,
 * which the purge removes too rather than trip on it forever). */
static bool value_expired(const MDB_val *v, int64_t now_ms)
{
    rec_view_t r;
    return !rec_parse(v, &r) || r.expires_ms <= now_ms;
}

/* Positions c after the saved purge cursor (at the first record when there
 * is none or it was the last); copies the cursor key into buf. */
static int purge_seek(lmstore_t *ls, MDB_txn *txn, MDB_cursor *c, MDB_val *k,
                      MDB_val *v)
{
    MDB_val ck = {sizeof(CURSOR_KEY) - 1, (void *)CURSOR_KEY}, saved;
    char buf[KEY_LIMIT];
    int rc = mdb_get(txn, ls->meta, &ck, &saved);

    if (rc == MDB_NOTFOUND || (rc == 0 && saved.mv_size == 0) ||
        (rc == 0 && saved.mv_size > sizeof(buf))) {
        return mdb_cursor_get(c, k, v, MDB_FIRST);
    }
    if (rc != 0) {
        return rc;
    }
    memcpy(buf, saved.mv_data, saved.mv_size);
    k->mv_data = buf;
    k->mv_size = saved.mv_size;
    rc = mdb_cursor_get(c, k, v, MDB_SET_RANGE);
    if (rc == 0 && k->mv_size == saved.mv_size &&
        memcmp(k->mv_data, buf, saved.mv_size) == 0) {
        rc = mdb_cursor_get(c, k, v, MDB_NEXT);
    }
    return rc;
}

/*
 * Step 4 of a decision: looks at up to PURGE_STEP records after the saved
 * cursor, deletes the expired ones and saves where it stopped ("" after
 * the last record, so the next pass starts over).
 */
static int purge_step(lmstore_t *ls, MDB_txn *txn, int64_t now_ms)
{
    MDB_val ck = {sizeof(CURSOR_KEY) - 1, (void *)CURSOR_KEY}, k, v,
            last = {0, NULL};
    char buf[KEY_LIMIT];
    MDB_cursor *c;
    int rc = mdb_cursor_open(txn, ls->recs, &c);

    if (rc != 0) {
        return rc;
    }
    rc = purge_seek(ls, txn, c, &k, &v);
    for (int seen = 0; rc == 0 && seen < PURGE_STEP; seen++) {
        memcpy(buf, k.mv_data, k.mv_size);
        last.mv_data = buf;
        last.mv_size = k.mv_size;
        if (value_expired(&v, now_ms)) {
            rc = mdb_cursor_del(c, 0);
        }
        if (rc == 0) {
            rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
        }
    }
    mdb_cursor_close(c);
    if (rc == MDB_NOTFOUND) {
        last.mv_size = 0;
        rc = 0;
    }
    return rc != 0 ? rc : mdb_put(txn, ls->meta, &ck, &last, 0);
}

/* Deletes every expired record in txn; counts them in *purged. */
static int purge_all_in(lmstore_t *ls, MDB_txn *txn, int64_t now_ms,
                        size_t *purged)
{
    MDB_val k, v;
    MDB_cursor *c;
    int rc = mdb_cursor_open(txn, ls->recs, &c);

    if (rc != 0) {
        return rc;
    }
    rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
    while (rc == 0) {
        if (value_expired(&v, now_ms)) {
            rc = mdb_cursor_del(c, 0);
            *purged += rc == 0;
        }
        if (rc == 0) {
            rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
        }
    }
    mdb_cursor_close(c);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

/* A full purge in its own write transaction. */
static int purge_all(lmstore_t *ls, int64_t now_ms, size_t *purged)
{
    MDB_txn *txn;
    int rc = txn_begin(ls, 0, &txn);

    *purged = 0;
    if (rc != 0) {
        return rc;
    }
    return txn_end(txn, purge_all_in(ls, txn, now_ms, purged));
}

/* ---- decisions -------------------------------------------------------------
 */

typedef struct decision_ctx {
    lmstore_t *ls;
    const suspect_rule_t *rule;
    size_t n;
    int64_t now_ms;
    skey_t sk[SUSPECT_MAX_IDENTITIES];
} decision_ctx_t;

/* Step 1: every identity's state. */
static int ctx_read(decision_ctx_t *ctx, MDB_txn *txn,
                    suspect_window_state_t *st)
{
    for (size_t i = 0; i < ctx->n; i++) {
        rec_view_t r;
        uint32_t first;
        int rc = rec_get(ctx->ls, txn, &ctx->sk[i], &r);
        if (rc != 0) {
            return rc;
        }
        rec_state(&r, ctx->rule, ctx->now_ms, &st[i], &first);
    }
    return 0;
}

/* Step 3 for identity i: the record again, then the plan's writes. */
static int ctx_apply_one(decision_ctx_t *ctx, MDB_txn *txn,
                         const suspect_plan_t *plan, size_t i)
{
    suspect_window_state_t st;
    rec_view_t r;
    rec_new_t nr;
    int rc = rec_get(ctx->ls, txn, &ctx->sk[i], &r);

    if (rc != 0) {
        return rc;
    }
    rec_state(&r, ctx->rule, ctx->now_ms, &st, &nr.from);
    nr.old = &r;
    nr.add = plan->record;
    nr.add_ts = ctx->now_ms;
    if (plan->record && st.in_window > 0) {
        /* A clock stepped back: keep the hits sorted. */
        int64_t newest = rec_hit(&r, r.count - 1);
        nr.add_ts = newest > nr.add_ts ? newest : nr.add_ts;
    }
    nr.lock_until_ms = plan->lock_until_ms[i];
    if (nr.lock_until_ms == 0 && r.lock_until_ms > ctx->now_ms) {
        nr.lock_until_ms = r.lock_until_ms;
    }
    nr.window_s = ctx->rule->window_s;
    if (r.found && !nr.add && nr.from == 0 &&
        nr.lock_until_ms == r.lock_until_ms && nr.window_s == r.window_s) {
        return 0; /* unchanged: a denial under a live lock, say */
    }
    return rec_store(ctx->ls, txn, &ctx->sk[i], &nr);
}

/* One attempt at the whole decision, in one write transaction. */
static int decide_once(decision_ctx_t *ctx, suspect_decision_t *out)
{
    suspect_window_state_t st[SUSPECT_MAX_IDENTITIES];
    suspect_plan_t plan;
    MDB_txn *txn;
    int rc = txn_begin(ctx->ls, 0, &txn);

    if (rc != 0) {
        return rc;
    }
    rc = ctx_read(ctx, txn, st);
    if (rc == 0) {
        suspect_policy_evaluate(ctx->rule, st, ctx->n, ctx->now_ms, &plan, out);
        for (size_t i = 0; rc == 0 && i < ctx->n; i++) {
            rc = ctx_apply_one(ctx, txn, &plan, i);
        }
    }
    if (rc == 0) {
        rc = purge_step(ctx->ls, txn, ctx->now_ms);
    }
    return txn_end(txn, rc);
}

static suspect_rc_t lm_decide(suspect_store_t *store,
                              const suspect_rule_t *rule,
                              const suspect_key_t *keys, size_t n,
                              int64_t now_ms, suspect_decision_t *out,
                              suspect_err_t *err)
{
    lmstore_t *ls = (lmstore_t *)store;
    decision_ctx_t ctx;
    size_t purged;
    suspect_rc_t src = lm_enter(ls, err);
    int rc;

    if (src != SUSPECT_OK) {
        return src;
    }
    ctx.ls = ls;
    ctx.rule = rule;
    ctx.n = n;
    ctx.now_ms = now_ms;
    for (size_t i = 0; i < n; i++) {
        store_key(ls, &keys[i], &ctx.sk[i]);
    }
    rc = decide_once(&ctx, out);
    if (rc == MDB_MAP_FULL) {
        /* Make room from the dead, then try once more (see the top). */
        rc = purge_all(ls, now_ms, &purged);
        rc = rc == 0 ? decide_once(&ctx, out) : rc;
    }
    src = rc == 0 ? SUSPECT_OK : lm_fail(ls, err, rc, "decide");
    lm_leave(ls);
    return src;
}

/* ---- operator operations ---------------------------------------------------
 */

static suspect_rc_t lm_status(suspect_store_t *store,
                              const suspect_rule_t *rule,
                              const suspect_key_t *key, int64_t now_ms,
                              suspect_status_t *out, suspect_err_t *err)
{
    lmstore_t *ls = (lmstore_t *)store;
    suspect_window_state_t st;
    rec_view_t r;
    uint32_t first;
    skey_t sk;
    MDB_txn *txn;
    suspect_rc_t src = lm_enter(ls, err);
    int rc;

    if (src != SUSPECT_OK) {
        return src;
    }
    memset(&st, 0, sizeof(st));
    store_key(ls, key, &sk);
    rc = txn_begin(ls, MDB_RDONLY, &txn);
    if (rc == 0) {
        rc = rec_get(ls, txn, &sk, &r);
        if (rc == 0) {
            rec_state(&r, rule, now_ms, &st, &first);
        }
        mdb_txn_abort(txn);
    }
    if (rc == 0) {
        out->in_window = st.in_window;
        out->remaining = st.in_window < rule->limit_count
                             ? rule->limit_count - st.in_window
                             : 0;
        out->locked_until_ms = st.lock_until_ms > now_ms ? st.lock_until_ms : 0;
        out->free_at_ms = st.free_at_ms;
    }
    src = rc == 0 ? SUSPECT_OK : lm_fail(ls, err, rc, "status");
    lm_leave(ls);
    return src;
}

/* Reset (until_ms == 0, what != 0) or block (until_ms > 0) in txn. */
static int change_in(lmstore_t *ls, MDB_txn *txn, skey_t *sk, unsigned what,
                     int64_t until_ms)
{
    rec_view_t r;
    rec_new_t nr;
    int rc = rec_get(ls, txn, sk, &r);

    if (rc != 0 || (!r.found && until_ms == 0)) {
        return rc;
    }
    nr.old = &r;
    nr.from = (what & SUSPECT_RESET_WINDOW) ? r.count : 0;
    nr.add = false;
    nr.add_ts = 0;
    nr.lock_until_ms = (what & SUSPECT_RESET_LOCK) ? 0 : r.lock_until_ms;
    nr.lock_until_ms = until_ms > 0 ? until_ms : nr.lock_until_ms;
    nr.window_s = r.window_s;
    return rec_store(ls, txn, sk, &nr);
}

/* The body of reset and block: one write transaction on one key. */
static suspect_rc_t change(lmstore_t *ls, const suspect_key_t *key,
                           unsigned what, int64_t until_ms, suspect_err_t *err)
{
    skey_t sk;
    MDB_txn *txn;
    suspect_rc_t src = lm_enter(ls, err);
    int rc;

    if (src != SUSPECT_OK) {
        return src;
    }
    store_key(ls, key, &sk);
    rc = txn_begin(ls, 0, &txn);
    if (rc == 0) {
        rc = txn_end(txn, change_in(ls, txn, &sk, what, until_ms));
    }
    src = rc == 0 ? SUSPECT_OK
                  : lm_fail(ls, err, rc, until_ms > 0 ? "block" : "reset");
    lm_leave(ls);
    return src;
}

static suspect_rc_t lm_reset(suspect_store_t *store, const suspect_key_t *key,
                             unsigned what, suspect_err_t *err)
{
    return change((lmstore_t *)store, key, what, 0, err);
}

static suspect_rc_t lm_block(suspect_store_t *store, const suspect_key_t *key,
                             int64_t now_ms, int64_t until_ms,
                             suspect_err_t *err)
{
    (void)now_ms;
    return change((lmstore_t *)store, key, 0, until_ms, err);
}

/* ---- life cycle ------------------------------------------------------------
 */

/* Frees ls; closes its environment only in the process that opened it. */
static void lmstore_destroy(lmstore_t *ls)
{
    if (ls->env != NULL && ls->pid == getpid()) {
        mdb_env_close(ls->env);
    } else {
        abandon_env(ls->env);
    }
    pthread_rwlock_destroy(&ls->rw);
    free(ls->scratch);
    free(ls->path);
    free(ls);
}

static void lm_free(suspect_store_t *store)
{
    lmstore_destroy((lmstore_t *)store);
}

static const suspect_store_ops_t lmdb_ops = {
    "lmdb", lm_decide, lm_status, lm_reset, lm_block, lm_free,
};

suspect_rc_t suspect_lmdb_new(const suspect_lmdb_opts_t *opts,
                              suspect_store_t **out, suspect_err_t *err)
{
    lmstore_t *ls;
    suspect_rc_t rc;

    *out = NULL;
    if (opts == NULL || opts->path == NULL || opts->path[0] == '\0') {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "lmdb: the store needs a path");
    }
    ls = suspect_calloc(1, sizeof(*ls));
    if (ls == NULL || (ls->path = suspect_strdup(opts->path)) == NULL) {
        free(ls);
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "lmdb: out of memory");
    }
    ls->base.ops = &lmdb_ops;
    ls->opts = *opts;
    ls->opts.path = ls->path;
    if (ls->opts.map_size == 0) {
        ls->opts.map_size = SUSPECT_LMDB_MAP_SIZE_DEFAULT;
    }
    if (ls->opts.mode == 0) {
        ls->opts.mode = SUSPECT_LMDB_MODE_DEFAULT;
    }
    if (ls->opts.max_readers == 0) {
        ls->opts.max_readers = 126;
    }
    pthread_rwlock_init(&ls->rw, NULL);
    rc = env_open(ls, err);
    if (rc != SUSPECT_OK) {
        lmstore_destroy(ls);
        return rc;
    }
    *out = &ls->base;
    return SUSPECT_OK;
}

/* The LMDB store behind store, or NULL with an error. */
static lmstore_t *as_lmdb(suspect_store_t *store, suspect_err_t *err)
{
    if (store == NULL || store->ops != &lmdb_ops) {
        suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                        "lmdb: not an LMDB store");
        return NULL;
    }
    return (lmstore_t *)store;
}

/* ---- operator listing and maintenance --------------------------------------
 */

/* Calls fn for each live lock in txn until fn returns nonzero. */
static int foreach_in(lmstore_t *ls, MDB_txn *txn, int64_t now_ms,
                      suspect_lmdb_locked_fn fn, void *ud)
{
    char buf[KEY_LIMIT + 1];
    MDB_val k, v;
    MDB_cursor *c;
    rec_view_t r;
    int rc = mdb_cursor_open(txn, ls->recs, &c);

    if (rc != 0) {
        return rc;
    }
    rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
    while (rc == 0) {
        if (rec_parse(&v, &r) && r.lock_until_ms > now_ms &&
            k.mv_size <= KEY_LIMIT) {
            memcpy(buf, k.mv_data, k.mv_size);
            buf[k.mv_size] = '\0';
            if (fn(ud, buf, k.mv_size, r.lock_until_ms) != 0) {
                break;
            }
        }
        rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(c);
    return rc == MDB_NOTFOUND ? 0 : rc;
}

suspect_rc_t suspect_lmdb_foreach_locked(suspect_store_t *store, int64_t now_ms,
                                         suspect_lmdb_locked_fn fn, void *ud,
                                         suspect_err_t *err)
{
    lmstore_t *ls = as_lmdb(store, err);
    MDB_txn *txn;
    suspect_rc_t src;
    int rc;

    if (ls == NULL || fn == NULL) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "lmdb: listing needs a store and a callback");
    }
    src = lm_enter(ls, err);
    if (src != SUSPECT_OK) {
        return src;
    }
    rc = txn_begin(ls, MDB_RDONLY, &txn);
    if (rc == 0) {
        rc = foreach_in(ls, txn, now_ms, fn, ud);
        mdb_txn_abort(txn);
    }
    src = rc == 0 ? SUSPECT_OK : lm_fail(ls, err, rc, "list locks");
    lm_leave(ls);
    return src;
}

suspect_rc_t suspect_lmdb_purge(suspect_store_t *store, int64_t now_ms,
                                size_t *purged, suspect_err_t *err)
{
    lmstore_t *ls = as_lmdb(store, err);
    size_t count = 0;
    suspect_rc_t src;
    int rc;

    if (ls == NULL) {
        return SUSPECT_E_INVAL;
    }
    src = lm_enter(ls, err);
    if (src != SUSPECT_OK) {
        return src;
    }
    rc = purge_all(ls, now_ms, &count);
    if (purged != NULL) {
        *purged = rc == 0 ? count : 0;
    }
    src = rc == 0 ? SUSPECT_OK : lm_fail(ls, err, rc, "purge");
    lm_leave(ls);
    return src;
}

suspect_rc_t suspect_lmdb_entries(suspect_store_t *store, size_t *out,
                                  suspect_err_t *err)
{
    lmstore_t *ls = as_lmdb(store, err);
    MDB_txn *txn;
    MDB_stat st;
    suspect_rc_t src;
    int rc;

    *out = 0;
    if (ls == NULL) {
        return SUSPECT_E_INVAL;
    }
    src = lm_enter(ls, err);
    if (src != SUSPECT_OK) {
        return src;
    }
    rc = txn_begin(ls, MDB_RDONLY, &txn);
    if (rc == 0) {
        rc = mdb_stat(txn, ls->recs, &st);
        mdb_txn_abort(txn);
    }
    if (rc == 0) {
        *out = st.ms_entries;
    }
    src = rc == 0 ? SUSPECT_OK : lm_fail(ls, err, rc, "count entries");
    lm_leave(ls);
    return src;
}
