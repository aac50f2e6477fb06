/*
 * lmdb_admin.c - the LMDB store's operator operations: status, reset,
 * block and unblock, each one transaction on one stored key.
 *
 * What.  suspect_store_status() reads a record in a read transaction;
 * reset, block and unblock rewrite it in a write transaction, so each is
 * atomic against the decisions of every process on the file.  A block or
 * a reset that meets a full map makes room as a decision does (the full
 * purge, then the counters: lmdb_scan.c) and runs once more.
 *
 * Unblock lets the identity in on its next request: it drops the lock
 * and, when the window is full, the oldest hits past LimitCount - 1, so
 * the next hit does not lock again; reservations and the offence count
 * stay (reset clears those).
 *
 * Ownership.  Keys and rules are borrowed for the call; values LMDB
 * returns are valid only inside their transaction and are never kept.
 */
#include "lmdb_internal.h"

#include <stdlib.h>
#include <string.h>

suspect_rc_t lm_status(suspect_store_t *store, const suspect_rule_t *rule,
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
    lm_store_key(ls, key, &sk);
    rc = lm_txn_begin(ls, MDB_RDONLY, &txn);
    if (rc == 0) {
        rc = lm_rec_get(ls, txn, &sk, &r);
        if (rc == 0 && suspect_rule_metered(rule)) {
            lm_meter_status(&r, rule, now_ms, out);
        } else if (rc == 0) {
            lm_rec_state(&r, rule, now_ms, &st, &first);
            lm_rec_ext_state(&r, rule, now_ms, &st);
        }
        mdb_txn_abort(txn);
    }
    if (rc == 0 && !suspect_rule_metered(rule)) {
        out->in_window = st.in_window;
        out->remaining = st.in_window + st.pending < rule->limit_count
                             ? rule->limit_count - st.in_window - st.pending
                             : 0;
        out->locked_until_ms = st.lock_until_ms > now_ms ? st.lock_until_ms : 0;
        out->free_at_ms = st.free_at_ms;
        out->pending = st.pending;
        if (r.found && r.offence_until_ms > now_ms) {
            out->offences = r.offences;
            out->offence_until_ms = r.offence_until_ms;
        }
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
    lm_resv_t *resv;
    int rc = lm_rec_get(ls, txn, sk, &r);

    if (rc != 0 || (!r.found && until_ms == 0)) {
        return rc;
    }
    resv = lm_resv_alloc(&r);
    if (resv == NULL) {
        return LM_NOMEM;
    }
    lm_rec_new(&nr, &r, resv);
    nr.from = (what & SUSPECT_RESET_WINDOW) ? r.count : 0;
    if (what & SUSPECT_RESET_WINDOW) {
        nr.nresv = 0;       /* reservations are hits to be */
        nr.metered = false; /* a meter goes like hits */
    }
    if (what & SUSPECT_RESET_OFFENCES) {
        nr.offences = 0;
        nr.offence_until_ms = 0;
    }
    nr.lock_until_ms = (what & SUSPECT_RESET_LOCK) ? 0 : r.lock_until_ms;
    nr.lock_until_ms = until_ms > 0 ? until_ms : nr.lock_until_ms;
    rc = lm_rec_store(ls, txn, sk, &nr);
    free(resv);
    return rc;
}

/* One write transaction of change(). */
static int change_once(lmstore_t *ls, skey_t *sk, unsigned what,
                       int64_t until_ms)
{
    MDB_txn *txn;
    int rc = lm_txn_begin(ls, 0, &txn);

    return rc != 0 ? rc
                   : lm_txn_end(txn, change_in(ls, txn, sk, what, until_ms));
}

/* The body of reset and block (at now): one write transaction on one
 * key; in a full map, once more after making room as a decision does. */
static suspect_rc_t change(lmstore_t *ls, const suspect_key_t *key,
                           unsigned what, int64_t now_ms, int64_t until_ms,
                           suspect_err_t *err)
{
    skey_t sk;
    suspect_rc_t src = lm_enter(ls, err);
    int rc;

    if (src != SUSPECT_OK) {
        return src;
    }
    lm_store_key(ls, key, &sk);
    rc = change_once(ls, &sk, what, until_ms);
    if (lm_is_full(rc) && now_ms > 0 &&
        (lm_free_dead(ls, now_ms) || lm_free_counters(ls, now_ms))) {
        rc = change_once(ls, &sk, what, until_ms);
    }
    src = rc == 0 ? SUSPECT_OK
                  : lm_fail(ls, err, rc, until_ms > 0 ? "block" : "reset");
    lm_leave(ls);
    return src;
}

suspect_rc_t lm_reset(suspect_store_t *store, const suspect_key_t *key,
                      unsigned what, suspect_err_t *err)
{
    return change((lmstore_t *)store, key, what, 0, 0, err);
}

suspect_rc_t lm_block(suspect_store_t *store, const suspect_key_t *key,
                      int64_t now_ms, int64_t until_ms, suspect_err_t *err)
{
    return change((lmstore_t *)store, key, 0, now_ms, until_ms, err);
}

/* Unblock in txn: drop the lock and the oldest hits past limit - 1. */
static int unblock_in(lmstore_t *ls, MDB_txn *txn, skey_t *sk,
                      const suspect_rule_t *rule, int64_t now_ms,
                      suspect_unblock_t *out)
{
    suspect_window_state_t st;
    rec_view_t r;
    rec_new_t nr;
    lm_resv_t *resv;
    uint32_t first;
    int rc;

    if (suspect_rule_metered(rule)) {
        return lm_meter_unblock(ls, txn, sk, rule, now_ms, out);
    }
    rc = lm_rec_get(ls, txn, sk, &r);
    if (rc != 0 || !r.found) {
        return rc;
    }
    lm_rec_state(&r, rule, now_ms, &st, &first);
    out->lock_until_ms = r.lock_until_ms > now_ms ? r.lock_until_ms : 0;
    if (st.in_window >= rule->limit_count) {
        out->dropped = st.in_window - rule->limit_count + 1;
    }
    out->kept = st.in_window - out->dropped;
    resv = lm_resv_alloc(&r);
    if (resv == NULL) {
        return LM_NOMEM;
    }
    lm_rec_new(&nr, &r, resv); /* reservations and offences stay */
    nr.from = first + out->dropped;
    nr.lock_until_ms = 0;
    rc = lm_rec_store(ls, txn, sk, &nr);
    free(resv);
    return rc;
}

suspect_rc_t lm_unblock(suspect_store_t *store, const suspect_rule_t *rule,
                        const suspect_key_t *key, int64_t now_ms,
                        suspect_unblock_t *out, suspect_err_t *err)
{
    lmstore_t *ls = (lmstore_t *)store;
    skey_t sk;
    MDB_txn *txn;
    suspect_rc_t src = lm_enter(ls, err);
    int rc;

    if (src != SUSPECT_OK) {
        return src;
    }
    lm_store_key(ls, key, &sk);
    rc = lm_txn_begin(ls, 0, &txn);
    if (rc == 0) {
        rc = lm_txn_end(txn, unblock_in(ls, txn, &sk, rule, now_ms, out));
    }
    if (rc != 0) {
        memset(out, 0, sizeof(*out));
    }
    src = rc == 0 ? SUSPECT_OK : lm_fail(ls, err, rc, "unblock");
    lm_leave(ls);
    return src;
}
