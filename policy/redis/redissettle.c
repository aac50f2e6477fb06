/*
 * redissettle.c - settling a reservation on the Redis store (lua/
 * settle.lua): the reservation's member ("<taken at>:<ticket id in hex>")
 * removed from each identity's reservations key and, when the attempt counts,
 * added to its window at the moment it was taken, all in one script (on a
 * Redis Cluster, one per identity, in its window's slot).  A reservation
 * itself is a decision (redisstore.c, lua/decide.lua).
 */
#include "redissettle.h"

#include <string.h>

#include "redismeter.h"
#include "redisslot.h"
#include "redisstore.h"

#define NUM_LEN 24

/* settle.lua on keys[0..n), whose windows (and reservations keys) share a slot
 * on a Cluster (slot -1 elsewhere). */
static suspect_rc_t settle_call(redisstore_t *rs, redis_thread_t *t,
                                const suspect_rule_t *rule,
                                const suspect_key_t *keys, size_t n, int slot,
                                const char *member, size_t len, bool failed,
                                int64_t now_ms, int64_t end_ms,
                                suspect_err_t *err)
{
    redis_request_t rq = {.script = SCRIPT_SETTLE};
    redis_more_keys_t more[SUSPECT_MAX_IDENTITIES];
    char nkeys[NUM_LEN], now[NUM_LEN], window[NUM_LEN], end[NUM_LEN];
    redisReply *r;
    suspect_rc_t rc;

    redis_rq_str(&rq, "EVALSHA");
    redis_rq_arg(&rq, "", 0);
    redis_rq_arg(&rq, nkeys, redis_fmt_i64(nkeys, (int64_t)(2 * n)));
    for (size_t i = 0; i < n; i++) {
        if (slot >= 0) {
            /* the reservations key in the window's slot, whatever the layout */
            redis_more_keys_apart(&keys[i], &more[i]);
        } else {
            redis_more_keys(&keys[i], &more[i]);
        }
        redis_rq_arg(&rq, keys[i].buf, keys[i].window_len);
        redis_rq_arg(&rq, more[i].resv, more[i].resv_len);
    }
    if (rs->clock == SUSPECT_REDIS_CLOCK_SERVER) {
        redis_rq_arg(&rq, "", 0);
    } else {
        redis_rq_arg(&rq, now, redis_fmt_i64(now, now_ms));
    }
    redis_rq_arg(&rq, window,
                 redis_fmt_i64(window, (int64_t)rule->window_s * 1000));
    redis_rq_arg(&rq, member, len);
    redis_rq_arg(&rq, end, redis_fmt_i64(end, end_ms));
    redis_rq_str(&rq, failed ? "1" : "0");
    rc = redis_route_call(t, slot, &rq, &r, err);
    if (rc == SUSPECT_OK && r != NULL && r->type != REDIS_REPLY_INTEGER) {
        rc = suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                             "redis: settle.lua answered an unexpected shape");
    }
    freeReplyObject(r);
    return rc;
}

suspect_rc_t redis_store_settle(suspect_store_t *store,
                                const suspect_rule_t *rule,
                                const suspect_key_t *keys, size_t n,
                                const suspect_ticket_t *ticket, bool failed,
                                int64_t now_ms, suspect_err_t *err)
{
    redisstore_t *rs = (redisstore_t *)store;
    redis_thread_t *t = redis_op_begin(&rs->pool, err);
    char member[2 * NUM_LEN + HIT_ID_LEN];
    suspect_rc_t rc = SUSPECT_OK;
    size_t len;

    if (t == NULL) {
        return SUSPECT_E_NOMEM;
    }
    if (suspect_rule_metered(rule)) {
        return redis_meter_settle(rs, t, rule, keys, n, ticket, failed, now_ms,
                                  err);
    }
    len = redis_fmt_i64(member, ticket->at_ms);
    member[len++] = ':';
    redis_slot_id(ticket->id, member + len);
    len += REDIS_SLOT_ID_LEN;
    if (rs->pool.addr.kind != REDIS_CLUSTER) {
        return settle_call(rs, t, rule, keys, n, -1, member, len, failed,
                           now_ms, ticket->end_ms, err);
    }
    /* A Cluster: each identity in its window's slot. */
    for (size_t i = 0; i < n && rc == SUSPECT_OK; i++) {
        rc = settle_call(rs, t, rule, &keys[i], 1,
                         redis_key_slot(keys[i].buf, keys[i].window_len),
                         member, len, failed, now_ms, ticket->end_ms, err);
    }
    return rc;
}
