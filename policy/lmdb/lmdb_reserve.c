/*
 * lmdb_reserve.c - the LMDB store's reservations: the ones whose end has
 * come merged among the hits before a decision reads a record, and the
 * settling of one (suspect_store_settle()): the reservation removed and, when
 * it counts, a hit merged at the moment it was taken, for every identity of the
 * request in one write transaction.  The record's layout is lmdb_rec.c's;
 * reservations themselves are decisions (lmdbstore.c).
 */
#include "lmdb_internal.h"

#include <stdlib.h>

#include "alloc.h"

/* Writes back r's reservations whose end has come as hits at their times, and
 * reads the record again into *r.  0 when there were none. */
int lm_resv_expire(lmstore_t *ls, MDB_txn *txn, skey_t *sk, int64_t now_ms,
                   rec_view_t *r)
{
    int64_t *ended;
    lm_resv_t *resv;
    rec_new_t nr;
    uint32_t n = 0, kept = 0;
    int rc;

    for (uint32_t i = 0; i < r->nresv; i++) {
        n += lm_rec_resv(r, i).end_ms <= now_ms;
    }
    if (n == 0) {
        return 0;
    }
    ended = suspect_malloc((size_t)n * sizeof(*ended));
    resv = lm_resv_alloc(r);
    if (ended == NULL || resv == NULL) {
        free(ended);
        free(resv);
        return LM_NOMEM;
    }
    lm_rec_new(&nr, r, resv);
    n = 0;
    for (uint32_t i = 0; i < r->nresv; i++) {
        if (resv[i].end_ms <= now_ms) {
            ended[n++] = resv[i].at_ms;
        } else {
            resv[kept++] = resv[i];
        }
    }
    /* sorted, for the merge (a few at most: insertion sort) */
    for (uint32_t i = 1; i < n; i++) {
        for (uint32_t j = i; j > 0 && ended[j - 1] > ended[j]; j--) {
            int64_t t = ended[j];
            ended[j] = ended[j - 1];
            ended[j - 1] = t;
        }
    }
    nr.nresv = kept;
    nr.extra = ended;
    nr.nextra = n;
    rc = lm_rec_store(ls, txn, sk, &nr);
    free(ended);
    free(resv);
    return rc != 0 ? rc : lm_rec_get(ls, txn, sk, r);
}

/* Settles ticket's reservation on one record (see suspect_store.h). */
static int settle_in(lmstore_t *ls, MDB_txn *txn, skey_t *sk,
                     const suspect_rule_t *rule, const suspect_ticket_t *ticket,
                     bool failed, int64_t now_ms)
{
    rec_view_t r;
    rec_new_t nr;
    lm_resv_t *resv;
    int64_t hit;
    int rc = lm_rec_get(ls, txn, sk, &r);
    uint32_t at = UINT32_MAX;

    if (rc != 0 || !r.found) {
        return rc;
    }
    for (uint32_t i = 0; i < r.nresv && at == UINT32_MAX; i++) {
        at = lm_rec_resv(&r, i).id == ticket->id ? i : at;
    }
    if (at == UINT32_MAX) {
        return 0; /* reset, or a hit already */
    }
    resv = lm_resv_alloc(&r);
    if (resv == NULL) {
        return LM_NOMEM;
    }
    lm_rec_new(&nr, &r, resv);
    hit = resv[at].at_ms;
    if (suspect_policy_settle_counts(failed, resv[at].end_ms, now_ms)) {
        nr.extra = &hit;
        nr.nextra = 1;
    }
    resv[at] = resv[--nr.nresv];
    nr.window_s = rule->window_s;
    rc = lm_rec_store(ls, txn, sk, &nr);
    free(resv);
    return rc;
}

suspect_rc_t lm_op_settle(suspect_store_t *store, const suspect_rule_t *rule,
                          const suspect_key_t *keys, size_t n,
                          const suspect_ticket_t *ticket, bool failed,
                          int64_t now_ms, suspect_err_t *err)
{
    lmstore_t *ls = (lmstore_t *)store;
    MDB_txn *txn;
    suspect_rc_t src = lm_enter(ls, err);
    int rc;

    if (src != SUSPECT_OK) {
        return src;
    }
    rc = lm_txn_begin(ls, 0, &txn);
    if (rc == 0) {
        for (size_t i = 0; rc == 0 && i < n; i++) {
            skey_t sk;

            lm_store_key(ls, &keys[i], &sk);
            rc = suspect_rule_metered(rule)
                     ? lm_meter_settle(ls, txn, &sk, rule, ticket, failed,
                                       now_ms)
                     : settle_in(ls, txn, &sk, rule, ticket, failed, now_ms);
        }
        rc = lm_txn_end(txn, rc);
    }
    src = rc == 0 ? SUSPECT_OK : lm_fail(ls, err, rc, "settle");
    lm_leave(ls);
    return src;
}
