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
 * process.  The full purge deletes every expired record in its own write
 * transaction: what a decision that met a full map runs before its one
 * more try, and what suspect_lmdb_purge() offers the operator.
 *
 * Listing hands the callback each live lock's stored key, copied and
 * NUL-terminated (a hashed long key is listed in its hashed form).  The
 * public operations around these walks (transactions, errors) are
 * lmdbstore.c's.
 */
#include "lmdb_int.h"

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
int lm_purge_all(lmstore_t *ls, int64_t now_ms, size_t *purged)
{
    MDB_txn *txn;
    int rc = lm_txn_begin(ls, 0, &txn);

    *purged = 0;
    if (rc != 0) {
        return rc;
    }
    return lm_txn_end(txn, purge_all_in(ls, txn, now_ms, purged));
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
