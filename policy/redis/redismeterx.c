/*
 * redismeterx.c - a metered decision whose keys live in several slots of
 * a Redis Cluster (redis_meter_cross(), redismeter.h): several identities,
 * or the seed's keys, whose window and lock hash apart.
 *
 * A script's keys must share a slot, so the decision takes the request's
 * cost from each identity's meter in turn, each in one atomic call of
 * lua/bucket.lua in its own slot (its lock read there too, or first with
 * lock.lua when it lives in another slot): an identity that allows gives
 * up its tokens at once, one that denies is only read (and locked when
 * over), and once one denied the rest are only read.  When the request is
 * denied, every identity that gave tokens gets them back (bucket.lua
 * "give", suspect_meter_give() at the same moment).  The evaluator then
 * decides on the states read, and the answer is refused unless every
 * call agrees with it and with meter.c, as on one server.
 *
 * Why it never admits more than the capacity: each identity's read and
 * take is one atomic step in its slot, so no meter ever holds more than
 * its capacity, and an admitted request's tokens are among them.  What it
 * gives up: tokens taken and then given back counted meanwhile, so a
 * concurrent request on that identity may be denied although, had the
 * requests come one after the other, it would have fitted; and a giving
 * back that failed (the node went away) leaves the tokens taken: an error
 * on the safe side.  A lock in another slot is written (SET) after the
 * window's step, as for the sliding log (rediscross.c).
 */
#include "redismeter.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rediscross.h"
#include "redisslot.h"

#define NUM_LEN 24

/* One identity's part of the decision. */
typedef struct mpart {
    int ws, ls;    /* slots of its window and lock */
    bool apart;    /* its lock lives in another slot */
    bool recorded; /* its tokens are taken */
    bool denies;   /* it denies the request */
    int64_t at_ms; /* the time its call used */
    int64_t v[REDIS_METER_PER];
} mpart_t;

/* bucket.lua on identity i alone ("read" when dry). */
static suspect_rc_t part_run(redisstore_t *rs, redis_thread_t *t,
                             const suspect_rule_t *rule, const suspect_key_t *k,
                             bool dry, redis_meter_args_t *a, mpart_t *p,
                             suspect_err_t *err)
{
    redis_request_t rq = {.script = SCRIPT_NONE};
    redis_meter_key_t mk;
    redis_more_keys_t more;
    const char *kv[3];
    size_t kl[3], nk = 0, idl;
    const char *id = redis_identity_of(rs->prefix_len, k, &idl);
    char lub[NUM_LEN];
    int64_t v[2 + REDIS_METER_PER], lu = 0;
    redisReply *r = NULL;
    suspect_rc_t rc = SUSPECT_OK;

    p->ws = redis_key_slot(k->buf, k->window_len);
    p->ls = redis_key_slot(k->buf, k->lock_len);
    p->apart = p->ws != p->ls;
    redis_meter_key(k, rule->algorithm, true, &mk);
    if (p->apart) {
        redis_more_keys_apart(k, &more);
        rc = redis_meter_read_lock(t, a, k, p->ls, &lu, err);
    } else {
        redis_more_keys(k, &more);
        kv[nk] = k->buf;
        kl[nk++] = k->lock_len;
    }
    if (rc != SUSPECT_OK) {
        return rc;
    }
    kv[nk] = mk.meter;
    kl[nk++] = mk.meter_len;
    kv[nk] = more.offences;
    kl[nk++] = more.offences_len;
    redis_meter_head(&rq, a, dry ? "read" : "decide", p->apart, kv, kl, nk);
    if (p->apart) {
        redis_rq_arg(&rq, lub, redis_fmt_i64(lub, lu));
    } else {
        redis_rq_arg(&rq, id, idl);
    }
    rq.nints = 2 + REDIS_METER_PER;
    rq.ints = v;
    rc = redis_route_call(t, p->ws, &rq, &r, err);
    if (rc == SUSPECT_OK) {
        rc = redis_script_ints(&rq, r, "bucket.lua", err);
    }
    freeReplyObject(r);
    if (rc != SUSPECT_OK) {
        return rc;
    }
    if (a->now_len == 0) {
        a->now_len = redis_fmt_i64(a->now, v[0]);
    }
    p->at_ms = v[0];
    p->denies = v[1] == 0;
    p->recorded = !p->denies && !dry;
    memcpy(p->v, v + 2, sizeof(p->v));
    return SUSPECT_OK;
}

/* SET lock|until PX: a lock earned by a window whose lock lives in
 * another slot. */
static suspect_rc_t write_lock(redisstore_t *rs, redis_thread_t *t,
                               const suspect_key_t *k, const mpart_t *p,
                               suspect_err_t *err)
{
    redis_request_t rq = {.script = SCRIPT_NONE};
    char value[SUSPECT_KEY_MAX + 32], px[NUM_LEN];
    size_t idl;
    const char *id = redis_identity_of(rs->prefix_len, k, &idl);
    redisReply *r = NULL;
    suspect_rc_t rc;

    snprintf(value, sizeof(value), "%.*s|until=%lld", (int)idl, id,
             (long long)p->v[3]);
    redis_rq_str(&rq, "SET");
    redis_rq_arg(&rq, k->buf, k->lock_len);
    redis_rq_str(&rq, value);
    redis_rq_str(&rq, "PX");
    redis_rq_arg(&rq, px, redis_fmt_i64(px, p->v[3] - p->at_ms));
    rc = redis_route_call(t, p->ls, &rq, &r, err);
    freeReplyObject(r);
    return rc;
}

/* Gives back what parts[0..n) took (errors ignored: tokens that stay
 * taken only deny sooner). */
static void give_back(redisstore_t *rs, redis_thread_t *t,
                      const suspect_rule_t *rule, const suspect_key_t *keys,
                      const mpart_t *parts, size_t n,
                      const redis_meter_args_t *a)
{
    for (size_t i = 0; i < n; i++) {
        if (parts[i].recorded) {
            (void)redis_meter_give(rs, t, rule, &keys[i], 1, a, parts[i].at_ms,
                                   NULL);
            REDIS_STAT_ADD(&t->stats, rollbacks, 1);
        }
    }
}

/* The evaluator on the parts' states: *out, and whether every part wrote
 * what it plans. */
static bool evaluate(const suspect_rule_t *rule, const mpart_t *parts, size_t n,
                     bool dry, int64_t now_ms, suspect_decision_t *out)
{
    suspect_window_state_t st[SUSPECT_MAX_IDENTITIES];
    suspect_plan_t plan;
    bool agree;

    for (size_t i = 0; i < n; i++) {
        redis_decide_state(parts[i].v, &st[i]);
    }
    suspect_policy_evaluate(rule, st, n, now_ms, &plan, out);
    agree = plan.record == !dry;
    for (size_t i = 0; i < n && agree; i++) {
        agree = redis_decide_agrees(&plan, i, parts[i].v) &&
                redis_meter_agrees(rule, now_ms, parts[i].v, parts[i].recorded);
    }
    return agree;
}

suspect_rc_t redis_meter_cross(redisstore_t *rs, redis_thread_t *t,
                               const suspect_rule_t *rule,
                               const suspect_key_t *keys, size_t n,
                               int64_t now_ms, suspect_decision_t *out,
                               int64_t *now_out, suspect_err_t *err)
{
    mpart_t parts[SUSPECT_MAX_IDENTITIES];
    redis_meter_args_t a;
    bool dry = false;
    suspect_rc_t rc = SUSPECT_OK;

    redis_meter_args(rule, rs->clock == SUSPECT_REDIS_CLOCK_SERVER, now_ms, &a);
    memset(parts, 0, sizeof(parts));
    REDIS_STAT_ADD(&t->stats, cross_slot, 1);
    for (size_t i = 0; i < n && rc == SUSPECT_OK; i++) {
        rc = part_run(rs, t, rule, &keys[i], dry, &a, &parts[i], err);
        dry = dry || parts[i].denies;
    }
    if (rc == SUSPECT_OK) {
        *now_out = strtoll(a.now, NULL, 10);
        if (!evaluate(rule, parts, n, dry, *now_out, out)) {
            rc = suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                                 "redis: bucket.lua disagrees with the "
                                 "policy");
        }
    }
    for (size_t i = 0; i < n && rc == SUSPECT_OK; i++) {
        if (parts[i].v[3] != 0 && parts[i].apart) {
            rc = write_lock(rs, t, &keys[i], &parts[i], err);
        }
    }
    if (rc != SUSPECT_OK || !out->allowed) {
        give_back(rs, t, rule, keys, parts, n, &a);
    }
    return rc;
}
