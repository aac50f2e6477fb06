/*
 * lmdb_scan.c - the LMDB store's walks over every record: the incremental
 * purge every decision runs, the full purge, the listing of live locks and
 * the entry count.
 *
 * Purging.  A record means nothing once its expires_ms has passed (its
 * newest hit has left the window and its lock has ended); a value that is
 * not a record is removed too rather than tripped on forever.  Each
 * decision looks at PURGE_STEP records after the cursor saved in "meta"
 * (wrapping at the end), deletes the expired ones and saves where it
 * stopped, so dead records go away at a steady rate without a sweeper
 * process.  The full purge deletes every expired record, DROP_BATCH at a
 * time in write transactions of their own (in a map that is nearly full,
 * one transaction touching every leaf would need a copy of each): what a
 * decision that met a full map runs before its one more try, and what
 * suspect_lmdb_purge() offers the operator.
 *
 * Evicting counters.  In a map that is full even after the full purge
 * (lmdbstore.c: new records without a lock stop at a share of the map, so
 * only the growth of records already there gets it that far), the
 * counters least recently hit go, an eighth of them at a time, so that
 * locks and the identities still active can be written: a counter whose
 * newest hit is at most the cutoff, the cutoff being the first eighth of a
 * sample of at most EVICT_SAMPLE counters taken at a fixed stride (in a
 * read transaction), deleted in batches as the purge does.  A record with
 * a live lock, a reservation or a live offence count is never
 * evicted.
 *
 * Listing hands the callback each live lock's stored key, copied and
 * NUL-terminated (a hashed long key is listed in its hashed form).  The
 * public operations around these walks (transactions, errors) are
 * lmdbstore.c's.
 *
 * When to walk.  A full purge or an eviction that freed fewer than
 * BACKOFF_FREED records is not run again within BACKOFF_MS of the
 * callers' clock (lm_free_dead(), lm_free_counters()): in a map full of
 * live records, every decision would otherwise walk the whole map.
 */
#include "lmdb_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* True when the stored value v means nothing at now (or is not a record,
 * which the purge removes too rather than trip on it forever). */
static bool value_expired(const MDB_val *v, int64_t now_ms)
{
    rec_view_t r;
    return !lm_rec_parse(v, &r) || r.expires_ms <= now_ms;
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
int lm_purge_step(lmstore_t *ls, MDB_txn *txn, int64_t now_ms)
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

/* What a batched walk deletes: whether the record v (parsed into r when
 * parsed) goes. */
typedef bool (*drop_fn)(const MDB_val *v, void *arg);

/* Deletes, at most DROP_BATCH at a time, each batch in a write
 * transaction of its own, the records drop says go, up to max; counts
 * them in *dropped (what committed).  Small transactions: in a map that is
 * nearly full, one that touched every leaf would need a copy of each; a
 * batch that meets MDB_MAP_FULL is tried again half as large. */
static int drop_batched(lmstore_t *ls, drop_fn drop, void *arg, size_t max,
                        size_t *dropped)
{
    char resume[KEY_LIMIT], next[KEY_LIMIT];
    size_t rlen = 0, nlen = 0, most = DROP_BATCH;
    bool done = false;
    int rc = 0;

    while (rc == 0 && !done && *dropped < max) {
        MDB_val k, v;
        MDB_cursor *c;
        MDB_txn *txn;
        size_t batch = 0;
        bool end = false;

        rc = lm_txn_begin(ls, 0, &txn);
        if (rc != 0) {
            break;
        }
        rc = mdb_cursor_open(txn, ls->recs, &c);
        if (rc != 0) {
            mdb_txn_abort(txn);
            break;
        }
        k.mv_data = resume;
        k.mv_size = rlen;
        rc = mdb_cursor_get(c, &k, &v, rlen == 0 ? MDB_FIRST : MDB_SET_RANGE);
        while (rc == 0 && batch < most && *dropped + batch < max) {
            if (drop(&v, arg)) {
                rc = mdb_cursor_del(c, 0);
                batch += rc == 0;
            }
            if (rc == 0) {
                rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
            }
        }
        if (rc == MDB_NOTFOUND) {
            end = true;
            rc = 0;
        } else if (rc == 0 && k.mv_size <= sizeof(next)) {
            memcpy(next, k.mv_data, k.mv_size); /* the next to look at */
            nlen = k.mv_size;
        } else if (rc == 0) {
            end = true; /* not a key of ours: stop here */
        }
        mdb_cursor_close(c);
        rc = lm_txn_end(txn, rc);
        if (rc == 0) {
            *dropped += batch;
            done = end;
            memcpy(resume, next, nlen);
            rlen = nlen;
        } else if (rc == MDB_MAP_FULL && most > 1) {
            most /= 2; /* the same stretch again, in smaller bites */
            rc = 0;
        }
    }
    return rc;
}

static bool drop_expired(const MDB_val *v, void *arg)
{
    return value_expired(v, *(const int64_t *)arg);
}

int lm_purge_all(lmstore_t *ls, int64_t now_ms, size_t *purged)
{
    *purged = 0;
    return drop_batched(ls, drop_expired, &now_ms, SIZE_MAX, purged);
}

#define EVICT_SAMPLE 1024

/* Whether r is a counter that may be evicted at now; *newest its newest
 * hit. */
static bool evictable(const rec_view_t *r, int64_t now_ms, int64_t *newest)
{
    if ((r->count == 0 && !r->metered) || r->lock_until_ms > now_ms ||
        r->nresv > 0 || (r->offences > 0 && r->offence_until_ms > now_ms)) {
        return false;
    }
    /* A meter keeps no hit times: the later its end, the more recent its
     * use, so its end less the window stands for its newest hit. */
    *newest = r->metered ? r->expires_ms - (int64_t)r->window_s * 1000
                         : lm_rec_hit(r, r->count - 1);
    return true;
}

static int cmp_ms(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

/* Which counters go: those hit last at or before cutoff, quota at most. */
typedef struct evict_arg {
    int64_t now_ms;
    int64_t cutoff;
    size_t quota;
} evict_arg_t;

/* Sets the cutoff and the quota from a sample of the counters, in a read
 * transaction (quota 0: no counter). */
static int evict_plan(lmstore_t *ls, evict_arg_t *ea)
{
    int64_t sample[EVICT_SAMPLE]; /* 8 KiB */
    size_t ns = 0, candidates = 0, stride;
    MDB_val k, v;
    MDB_stat st;
    MDB_cursor *c;
    MDB_txn *txn;
    rec_view_t r;
    int64_t newest;
    int rc = lm_txn_begin(ls, MDB_RDONLY, &txn);

    if (rc != 0) {
        return rc;
    }
    rc = mdb_stat(txn, ls->recs, &st);
    if (rc == 0) {
        rc = mdb_cursor_open(txn, ls->recs, &c);
    }
    if (rc != 0) {
        mdb_txn_abort(txn);
        return rc;
    }
    stride = st.ms_entries / EVICT_SAMPLE + 1;
    for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
         rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
        if (lm_rec_parse(&v, &r) && evictable(&r, ea->now_ms, &newest) &&
            candidates++ % stride == 0 && ns < EVICT_SAMPLE) {
            sample[ns++] = newest;
        }
    }
    mdb_cursor_close(c);
    mdb_txn_abort(txn);
    if (rc != MDB_NOTFOUND) {
        return rc;
    }
    ea->quota = 0;
    if (ns > 0) {
        qsort(sample, ns, sizeof(sample[0]), cmp_ms);
        ea->cutoff = sample[(ns - 1) / 8];
        ea->quota = candidates / 8 + 1;
    }
    return 0;
}

static bool drop_counter(const MDB_val *v, void *arg)
{
    const evict_arg_t *ea = arg;
    rec_view_t r;
    int64_t newest;

    return lm_rec_parse(v, &r) && evictable(&r, ea->now_ms, &newest) &&
           newest <= ea->cutoff;
}

int lm_evict_counters(lmstore_t *ls, int64_t now_ms, size_t *evicted)
{
    evict_arg_t ea = {now_ms, 0, 0};
    int rc = evict_plan(ls, &ea);

    *evicted = 0;
    if (rc != 0 || ea.quota == 0) {
        return rc;
    }
    return drop_batched(ls, drop_counter, &ea, ea.quota, evicted);
}

/* Calls fn for each live lock in txn until fn returns nonzero. */
int lm_scan_locked(lmstore_t *ls, MDB_txn *txn, int64_t now_ms,
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
        if (lm_rec_parse(&v, &r) && r.lock_until_ms > now_ms &&
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

/* ---- when to walk ----------------------------------------------------------
 */

bool lm_is_full(int rc)
{
    return rc == MDB_MAP_FULL || rc == LM_COUNTERS_FULL;
}

/* Whether the walk whose last fruitless run was at *idle_at (the caller's
 * clock, 0 = none) may run at now: not within BACKOFF_MS of it. */
static bool walk_ready(const int64_t *idle_at, int64_t now_ms)
{
    int64_t at = __atomic_load_n(idle_at, __ATOMIC_RELAXED);

    return at == 0 || now_ms - at >= BACKOFF_MS || at - now_ms >= BACKOFF_MS;
}

/* After a walk at now that freed freed records: notes it when that was
 * few. */
static void walk_done(int64_t *idle_at, int64_t now_ms, size_t freed)
{
    __atomic_store_n(idle_at, freed < BACKOFF_FREED ? now_ms : 0,
                     __ATOMIC_RELAXED);
}

/* The full purge, unless one was fruitless lately; whether it freed any
 * record. */
bool lm_free_dead(lmstore_t *ls, int64_t now_ms)
{
    size_t freed = 0;

    if (!walk_ready(&ls->purge_idle_at, now_ms)) {
        return false;
    }
    (void)lm_purge_all(ls, now_ms, &freed);
    walk_done(&ls->purge_idle_at, now_ms, freed);
    return freed > 0; /* what committed, whatever stopped it */
}

/* The eviction of counters, unless one was fruitless lately; whether it
 * freed any record. */
bool lm_free_counters(lmstore_t *ls, int64_t now_ms)
{
    size_t freed = 0;

    if (!walk_ready(&ls->evict_idle_at, now_ms)) {
        return false;
    }
    (void)lm_evict_counters(ls, now_ms, &freed);
    walk_done(&ls->evict_idle_at, now_ms, freed);
    return freed > 0; /* what committed, whatever stopped it */
}
