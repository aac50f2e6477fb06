/*
 * lmdb_meter.c - the LMDB store's metered records: an identity of an
 * action counted by a token bucket or a two-window sliding counter keeps
 * a meter (meter.h) in place of its hits, in a record of fixed size
 * (lmdb_rec.c), read and written in the same write transaction as a
 * decision on hits, so it is exact across the processes on the file.
 *
 * Algorithm changes.  A record of hits, or of another algorithm's meter,
 * decided on under a metered rule starts afresh (lm_meter_adopt()): its
 * hits, reservations and meter are dropped, its lock and offence count kept, so
 * a live reload never lets a locked identity in.  A metered record decided
 * on under a sliding log is read as holding no hit, and becomes a record
 * of hits when it is next written.
 *
 * Reservations.  A metered reservation takes its cost at once and keeps
 * no reservation; settling it as a success gives the cost back at the moment it
 * was taken; a failure or no answer leaves it taken (docs/policy.md).
 */
#include "lmdb_internal.h"

#include <stdlib.h>
#include <string.h>

/* The meter of rule in r: r's own when it counts that way, else empty. */
static suspect_meter_t meter_of(const rec_view_t *r, const suspect_rule_t *rule)
{
    suspect_meter_t m = {0, 0, 0};

    if (r->found && r->metered && r->algorithm == rule->algorithm) {
        m = r->meter;
    }
    return m;
}

void lm_meter_state(const rec_view_t *r, const suspect_rule_t *rule,
                    int64_t now_ms, suspect_window_state_t *st)
{
    suspect_meter_t m = meter_of(r, rule);

    memset(st, 0, sizeof(*st));
    suspect_meter_read(rule, &m, now_ms, st);
    if (!r->found) {
        return;
    }
    st->lock_until_ms = r->lock_until_ms;
    if (suspect_rule_escalates(rule) && r->offence_until_ms > now_ms) {
        st->offences = r->offences;
    }
}

void lm_meter_adopt(rec_new_t *nr, const rec_view_t *r,
                    const suspect_rule_t *rule)
{
    nr->meter = meter_of(r, rule);
    nr->from = r->count; /* hits of a sliding log: gone */
    nr->nresv = 0;
    nr->nextra = 0;
    nr->add = false;
    nr->metered = true;
    nr->algorithm = rule->algorithm;
    nr->window_s = rule->window_s;
}

int lm_meter_settle(lmstore_t *ls, MDB_txn *txn, skey_t *sk,
                    const suspect_rule_t *rule, const suspect_ticket_t *ticket,
                    bool failed, int64_t now_ms)
{
    rec_view_t r;
    rec_new_t nr;
    int rc = lm_rec_get(ls, txn, sk, &r);

    if (rc != 0 || !r.found || !r.metered || r.algorithm != rule->algorithm ||
        suspect_policy_settle_counts(failed, ticket->end_ms, now_ms)) {
        return rc; /* it stays taken, or nothing of it is left */
    }
    lm_rec_new(&nr, &r, NULL);
    lm_meter_adopt(&nr, &r, rule);
    suspect_meter_give(rule, &nr.meter, ticket->at_ms, suspect_rule_cost(rule));
    return lm_rec_store(ls, txn, sk, &nr);
}

int lm_meter_unblock(lmstore_t *ls, MDB_txn *txn, skey_t *sk,
                     const suspect_rule_t *rule, int64_t now_ms,
                     suspect_unblock_t *out)
{
    suspect_window_state_t st;
    rec_view_t r;
    rec_new_t nr;
    int rc = lm_rec_get(ls, txn, sk, &r);

    if (rc != 0 || !r.found) {
        return rc;
    }
    lm_rec_new(&nr, &r, NULL);
    lm_meter_adopt(&nr, &r, rule);
    out->lock_until_ms = r.lock_until_ms > now_ms ? r.lock_until_ms : 0;
    out->dropped = suspect_meter_make_room(rule, &nr.meter, now_ms);
    memset(&st, 0, sizeof(st));
    suspect_meter_read(rule, &nr.meter, now_ms, &st);
    out->kept = st.in_window;
    nr.lock_until_ms = 0;
    return lm_rec_store(ls, txn, sk, &nr);
}

void lm_meter_status(const rec_view_t *r, const suspect_rule_t *rule,
                     int64_t now_ms, suspect_status_t *out)
{
    uint32_t cap = suspect_rule_capacity(rule);
    suspect_meter_t m = meter_of(r, rule);
    suspect_window_state_t st;
    int64_t full = suspect_meter_end_ms(rule, &m);

    lm_meter_state(r, rule, now_ms, &st);
    memset(out, 0, sizeof(*out));
    out->in_window = st.in_window;
    out->remaining = st.in_window < cap ? cap - st.in_window : 0;
    out->free_at_ms = st.free_at_ms;
    out->full_at_ms = full > now_ms ? full : 0;
    out->locked_until_ms = st.lock_until_ms > now_ms ? st.lock_until_ms : 0;
    if (r->found && r->offence_until_ms > now_ms) {
        out->offences = r->offences;
        out->offence_until_ms = r->offence_until_ms;
    }
}
