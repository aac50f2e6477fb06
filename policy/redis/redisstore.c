/*
 * redisstore.c - the Redis store backend (suspect_redis.h).
 *
 * Algorithm: a decision is one EVALSHA of lua/decide.lua with the keys of
 * every identity in KEYS (window, lock, reservations, offences).  The
 * script gathers each identity's state (lock end, hits in the window after
 * trimming, the moment one more hit fits, reservations, offences),
 * applies the writes suspect_policy_evaluate() would plan (locks for
 * identities over the limit, the hit or the reservation on every identity when
 * allowed) and returns the states and what it wrote.  This file then runs
 * suspect_policy_evaluate() on those states: the decision the caller gets is
 * computed by the one definition of the semantics, and if the script's
 * writes differ from the evaluator's plan the call fails loudly instead of
 * drifting.  status is lua/status.lua, unblock lua/unblock.lua; reset (DEL)
 * and block (SET PX) are plain commands.
 *
 * On a Redis Cluster every command goes to the master of its keys' slot;
 * a decision, status or unblock whose keys hash to several slots (several
 * identities, or the seed's keys, whose window and lock hash apart) is
 * rediscross.c's, a reset is a DEL per slot, and carrying a journal back
 * is redisback.c's.
 *
 * Where requests go (a server, a Sentinel's master, a Cluster's nodes) is
 * redisroute.c's; connections, timeouts, reconnects, NOSCRIPT and SIGPIPE
 * redisconn.c's; listing locks redisscan.c's.
 */
#include "suspect_redis.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "rediscarry.h"
#include "rediscross.h"
#include "redismeter.h"
#include "redisscan.h"
#include "redisslot.h"
#include "redissettle.h"
#include "redisstore.h"
#include "suspect_store_impl.h"

#define NUM_LEN   24
#define LOCK_VMAX (SUSPECT_KEY_MAX + 32)

static const suspect_store_ops_t redis_ops;

/* ---- keys ----------------------------------------------------------------
 */

/* The identity part of key (after the prefix and "Action:", inside the
 * hash tag's braces of the Cluster layout): the lock's value, as the .NET
 * code writes it. */
/* The slot of key (bytes [0, len)) on a Cluster, -1 elsewhere (the
 * router ignores it). */
static int slot_of(const redisstore_t *rs, const char *key, size_t len)
{
    return rs->pool.addr.kind == REDIS_CLUSTER ? redis_key_slot(key, len) : -1;
}

/* True when key's window and lock live in different slots (the seed's
 * keys on a Cluster). */
static bool key_split(const redisstore_t *rs, const suspect_key_t *key)
{
    return rs->pool.addr.kind == REDIS_CLUSTER &&
           redis_key_slot(key->buf, key->window_len) !=
               redis_key_slot(key->buf, key->lock_len);
}

/* The request of several slots, handed to rediscross.c. */
static void cross_of(redisstore_t *rs, redis_thread_t *t,
                     const suspect_rule_t *rule, const suspect_key_t *keys,
                     size_t n, int64_t now_ms, redis_cross_t *x)
{
    memset(x, 0, sizeof(*x));
    x->t = t;
    x->rule = rule;
    x->keys = keys;
    x->n = n;
    x->server_clock = rs->clock == SUSPECT_REDIS_CLOCK_SERVER;
    x->now_ms = now_ms;
    for (size_t i = 0; i < n; i++) {
        x->ident[i] =
            redis_identity_of(rs->prefix_len, &keys[i], &x->ident_len[i]);
    }
}

/* ---- the store operations ------------------------------------------------
 */

/* decide.lua's numbers, formatted. */
typedef struct decide_nums {
    char n[NUM_LEN], now[NUM_LEN], limit[NUM_LEN], window[NUM_LEN],
        block[NUM_LEN], ttl[NUM_LEN], pct[NUM_LEN], max[NUM_LEN],
        period[NUM_LEN];
} decide_nums_t;

/* Fills the KEYS and ARGV of decide.lua (ttl_ms > 0: a reservation). */
static void decide_args(redisstore_t *rs, redis_request_t *rq,
                        const suspect_rule_t *rule, const suspect_key_t *keys,
                        size_t n, int64_t now_ms, int64_t ttl_ms,
                        decide_nums_t *nums, redis_more_keys_t *more,
                        const char *id, size_t id_len)
{
    bool esc = suspect_rule_escalates(rule);

    redis_fmt_i64(nums->n, (int64_t)(4 * n));
    redis_rq_str(rq, "EVALSHA");
    redis_rq_arg(rq, "", 0);
    redis_rq_str(rq, nums->n);
    for (size_t i = 0; i < n; i++) {
        redis_more_keys(&keys[i], &more[i]);
        redis_rq_arg(rq, keys[i].buf, keys[i].window_len);
        redis_rq_arg(rq, keys[i].buf, keys[i].lock_len);
        redis_rq_arg(rq, more[i].resv, more[i].resv_len);
        redis_rq_arg(rq, more[i].offences, more[i].offences_len);
    }
    if (rs->clock == SUSPECT_REDIS_CLOCK_SERVER) {
        redis_rq_arg(rq, "", 0);
    } else {
        redis_rq_arg(rq, nums->now, redis_fmt_i64(nums->now, now_ms));
    }
    redis_rq_arg(rq, nums->limit,
                 redis_fmt_i64(nums->limit, rule->limit_count));
    redis_rq_arg(rq, nums->window,
                 redis_fmt_i64(nums->window, (int64_t)rule->window_s * 1000));
    redis_rq_arg(rq, nums->block,
                 redis_fmt_i64(nums->block, (int64_t)rule->block_s * 1000));
    redis_rq_arg(rq, id, id_len);
    redis_rq_arg(rq, nums->ttl, redis_fmt_i64(nums->ttl, ttl_ms));
    redis_rq_arg(rq, nums->pct,
                 redis_fmt_i64(nums->pct, esc ? rule->block_factor_pct : 0));
    redis_rq_arg(
        rq, nums->max,
        redis_fmt_i64(nums->max,
                      esc ? suspect_rule_lock_ms(rule, UINT32_MAX) : 0));
    redis_rq_arg(
        rq, nums->period,
        redis_fmt_i64(nums->period, esc ? suspect_rule_offence_ms(rule) : 0));
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *v = redis_identity_of(rs->prefix_len, &keys[i], &len);
        redis_rq_arg(rq, v, len);
    }
}

/* Turns decide.lua's answer v into *out through the policy evaluator, and
 * checks the script wrote what the evaluator planned. */
static suspect_rc_t decide_reply(const int64_t *v, const suspect_rule_t *rule,
                                 size_t n, suspect_decision_t *out,
                                 suspect_err_t *err)
{
    suspect_window_state_t st[SUSPECT_MAX_IDENTITIES];
    suspect_plan_t plan;
    bool agree;

    for (size_t i = 0; i < n; i++) {
        redis_decide_state(v + 2 + REDIS_DECIDE_PER * i, &st[i]);
    }
    suspect_policy_evaluate(rule, st, n, v[0], &plan, out);
    agree = plan.record == (v[1] != 0);
    for (size_t i = 0; i < n; i++) {
        agree = agree &&
                redis_decide_agrees(&plan, i, v + 2 + REDIS_DECIDE_PER * i);
    }
    if (!agree) {
        return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                               "redis: decide.lua disagrees with the policy");
    }
    return SUSPECT_OK;
}

/* A decision, or with ttl_ms > 0 a reservation *ticket names;
 * on a Cluster, rediscross.c's when its keys span slots. */
static suspect_rc_t rs_run(redisstore_t *rs, const suspect_rule_t *rule,
                           const suspect_key_t *keys, size_t n, int64_t now_ms,
                           int64_t ttl_ms, suspect_ticket_t *ticket,
                           suspect_decision_t *out, suspect_err_t *err)
{
    redis_thread_t *t = redis_op_begin(&rs->pool, err);
    redis_request_t rq = {.script = SCRIPT_DECIDE};
    redis_more_keys_t more[SUSPECT_MAX_IDENTITIES];
    decide_nums_t nums;
    char id[HIT_ID_LEN + 1];
    int64_t v[2 + REDIS_DECIDE_PER * SUSPECT_MAX_IDENTITIES];
    redisReply *r;
    suspect_rc_t rc;
    int slot = -1;

    if (t == NULL) {
        return SUSPECT_E_NOMEM;
    }
    if (suspect_rule_metered(rule)) {
        rc = rs->pool.addr.kind == REDIS_CLUSTER &&
                     redis_cross_needed(keys, n, &slot)
                 ? redis_meter_cross(rs, t, rule, keys, n, now_ms, out, &v[0],
                                     err)
                 : redis_meter_decide(rs, t, rule, keys, n, now_ms, out, &v[0],
                                      err);
        if (rc == SUSPECT_OK && ticket != NULL) {
            ticket->at_ms = v[0];
            ticket->end_ms = v[0] + ttl_ms;
        }
        return rc;
    }
    if (ticket != NULL) {
        redis_slot_id(ticket->id, id);
    } else {
        hit_ids_next(&t->ids, id);
    }
    if (rs->pool.addr.kind == REDIS_CLUSTER &&
        redis_cross_needed(keys, n, &slot)) {
        redis_cross_t x;
        cross_of(rs, t, rule, keys, n, now_ms, &x);
        x.ttl_ms = ttl_ms;
        x.member = id;
        x.member_len = ticket != NULL ? REDIS_SLOT_ID_LEN : HIT_ID_LEN;
        rc = redis_cross_decide(&x, out, &v[0], err);
    } else {
        decide_args(rs, &rq, rule, keys, n, now_ms, ttl_ms, &nums, more, id,
                    ticket != NULL ? REDIS_SLOT_ID_LEN : HIT_ID_LEN);
        rq.nints = 2 + REDIS_DECIDE_PER * n;
        rq.ints = v;
        rc = redis_route_call(t, slot, &rq, &r, err);
        if (rc == SUSPECT_OK) {
            rc = redis_script_ints(&rq, r, "decide.lua", err);
        }
        freeReplyObject(r);
        if (rc == SUSPECT_OK) {
            rc = decide_reply(v, rule, n, out, err);
        }
    }
    if (rc == SUSPECT_OK && ticket != NULL) {
        /* the reservation's member is "<taken at>:<id in hex>", Redis's time
         * when it keeps the clock */
        ticket->at_ms = v[0];
        ticket->end_ms = v[0] + ttl_ms;
    }
    return rc;
}

static suspect_rc_t rs_decide(suspect_store_t *store,
                              const suspect_rule_t *rule,
                              const suspect_key_t *keys, size_t n,
                              int64_t now_ms, suspect_decision_t *out,
                              suspect_err_t *err)
{
    return rs_run((redisstore_t *)store, rule, keys, n, now_ms, 0, NULL, out,
                  err);
}

static suspect_rc_t rs_reserve(suspect_store_t *store,
                               const suspect_rule_t *rule,
                               const suspect_key_t *keys, size_t n,
                               int64_t now_ms, int64_t ttl_ms,
                               suspect_decision_t *out,
                               suspect_ticket_t *ticket, suspect_err_t *err)
{
    return rs_run((redisstore_t *)store, rule, keys, n, now_ms, ttl_ms, ticket,
                  out, err);
}

/* Every feature beyond the seed's. */
static bool rs_supports(const suspect_store_t *store, unsigned what)
{
    (void)store;
    (void)what;
    return true;
}

/* The EVALSHA of a one-identity script (status.lua, unblock.lua): its
 * window and lock keys, then now (or "" for Redis TIME), limit and window
 * in ms; the numbers are formatted into nums. */
static void key_script_args(const redisstore_t *rs, redis_request_t *rq,
                            const suspect_rule_t *rule,
                            const suspect_key_t *key,
                            const redis_more_keys_t *more, int64_t now_ms,
                            char nums[3][NUM_LEN])
{
    redis_rq_str(rq, "EVALSHA");
    redis_rq_arg(rq, "", 0);
    redis_rq_str(rq, more != NULL ? "4" : "2");
    redis_rq_arg(rq, key->buf, key->window_len);
    redis_rq_arg(rq, key->buf, key->lock_len);
    if (more != NULL) {
        redis_rq_arg(rq, more->resv, more->resv_len);
        redis_rq_arg(rq, more->offences, more->offences_len);
    }
    if (rs->clock == SUSPECT_REDIS_CLOCK_SERVER) {
        redis_rq_arg(rq, "", 0);
    } else {
        redis_rq_arg(rq, nums[0], redis_fmt_i64(nums[0], now_ms));
    }
    redis_rq_arg(rq, nums[1], redis_fmt_i64(nums[1], rule->limit_count));
    redis_rq_arg(rq, nums[2],
                 redis_fmt_i64(nums[2], (int64_t)rule->window_s * 1000));
}

/* Runs script (file name, for errors) on one key whose keys share a slot
 * (with its slots and offences keys for status.lua): the nv integers it
 * answers in v. */
static suspect_rc_t key_script(redisstore_t *rs, redis_thread_t *t, int script,
                               const char *name, const suspect_rule_t *rule,
                               const suspect_key_t *key, int64_t now_ms,
                               int64_t *v, size_t nv, suspect_err_t *err)
{
    redis_request_t rq = {.script = script};
    char nums[3][NUM_LEN];
    redis_more_keys_t more;
    redisReply *r;
    suspect_rc_t rc;

    redis_more_keys(key, &more);
    key_script_args(rs, &rq, rule, key, script == SCRIPT_STATUS ? &more : NULL,
                    now_ms, nums);
    rq.nints = nv;
    rq.ints = v;
    rc = redis_route_call(t, slot_of(rs, key->buf, key->window_len), &rq, &r,
                          err);
    if (rc == SUSPECT_OK) {
        rc = redis_script_ints(&rq, r, name, err);
    }
    freeReplyObject(r);
    return rc;
}

static suspect_rc_t rs_status(suspect_store_t *store,
                              const suspect_rule_t *rule,
                              const suspect_key_t *key, int64_t now_ms,
                              suspect_status_t *out, suspect_err_t *err)
{
    redisstore_t *rs = (redisstore_t *)store;
    redis_thread_t *t = redis_op_begin(&rs->pool, err);
    int64_t v[7];
    suspect_rc_t rc;

    if (t == NULL) {
        return SUSPECT_E_NOMEM;
    }
    if (suspect_rule_metered(rule)) {
        return redis_meter_status(rs, t, rule, key, now_ms, out, err);
    }
    if (key_split(rs, key)) {
        redis_cross_t x;
        cross_of(rs, t, rule, key, 1, now_ms, &x);
        rc = redis_cross_status(&x, v, err);
    } else {
        rc = key_script(rs, t, SCRIPT_STATUS, "status.lua", rule, key, now_ms,
                        v, 7, err);
    }
    if (rc == SUSPECT_OK) {
        out->locked_until_ms = v[1];
        out->in_window = v[2] > UINT32_MAX ? UINT32_MAX : (uint32_t)v[2];
        out->pending = v[4] > UINT32_MAX ? UINT32_MAX : (uint32_t)v[4];
        out->remaining =
            (uint64_t)out->in_window + out->pending < rule->limit_count
                ? rule->limit_count - out->in_window - out->pending
                : 0;
        out->free_at_ms = v[3];
        out->offences = v[5] > UINT32_MAX ? UINT32_MAX : (uint32_t)v[5];
        out->offence_until_ms = v[6];
    }
    return rc;
}

static suspect_rc_t rs_unblock(suspect_store_t *store,
                               const suspect_rule_t *rule,
                               const suspect_key_t *key, int64_t now_ms,
                               suspect_unblock_t *out, suspect_err_t *err)
{
    redisstore_t *rs = (redisstore_t *)store;
    redis_thread_t *t = redis_op_begin(&rs->pool, err);
    int64_t v[4];
    suspect_rc_t rc;

    if (t == NULL) {
        return SUSPECT_E_NOMEM;
    }
    if (suspect_rule_metered(rule)) {
        return redis_meter_unblock(rs, t, rule, key, now_ms, out, err);
    }
    if (key_split(rs, key)) {
        redis_cross_t x;
        cross_of(rs, t, rule, key, 1, now_ms, &x);
        return redis_cross_unblock(&x, out, err);
    }
    rc = key_script(rs, t, SCRIPT_UNBLOCK, "unblock.lua", rule, key, now_ms, v,
                    4, err);
    if (rc == SUSPECT_OK) {
        out->lock_until_ms = v[1];
        out->dropped = v[2] > UINT32_MAX ? UINT32_MAX : (uint32_t)v[2];
        out->kept = v[3] > UINT32_MAX ? UINT32_MAX : (uint32_t)v[3];
    }
    return rc;
}

/* suspect_store_foreach_locked(): the prefix is the SCAN match. */
static suspect_rc_t rs_foreach_locked(suspect_store_t *store,
                                      const char *prefix, int64_t now_ms,
                                      suspect_locked_fn fn, void *arg,
                                      suspect_err_t *err)
{
    return suspect_redis_foreach_locked(store, prefix, now_ms, fn, arg, err);
}

/* DEL of keys[0..n) (lengths lens) in one slot. */
static suspect_rc_t del_keys(redisstore_t *rs, redis_thread_t *t,
                             const char *const *keys, const size_t *lens,
                             size_t n, suspect_err_t *err)
{
    redis_request_t rq = {.script = SCRIPT_NONE};
    redisReply *r;
    suspect_rc_t rc;

    if (n == 0) {
        return SUSPECT_OK;
    }
    redis_rq_str(&rq, "DEL");
    for (size_t i = 0; i < n; i++) {
        redis_rq_arg(&rq, keys[i], lens[i]);
    }
    rc = redis_route_call(t, slot_of(rs, keys[0], lens[0]), &rq, &r, err);
    freeReplyObject(r);
    return rc;
}

static suspect_rc_t rs_reset(suspect_store_t *store, const suspect_key_t *key,
                             unsigned what, suspect_err_t *err)
{
    redisstore_t *rs = (redisstore_t *)store;
    redis_thread_t *t = redis_op_begin(&rs->pool, err);
    bool apart = key_split(rs, key);
    const char *w[6];
    size_t wl[6], nw = 0, ll = key->lock_len;
    redis_more_keys_t more;
    redis_meter_key_t tb, sc;
    suspect_rc_t rc = SUSPECT_OK;

    if (t == NULL) {
        return SUSPECT_E_NOMEM;
    }
    if (apart) {
        redis_more_keys_apart(key, &more);
    } else {
        redis_more_keys(key, &more);
    }
    /* The window's slot holds its slots and offences keys too; the lock
     * is in it unless the seed's keys on a Cluster put it elsewhere. */
    if (what & SUSPECT_RESET_WINDOW) {
        w[nw] = key->buf;
        wl[nw++] = key->window_len;
        w[nw] = more.resv;
        wl[nw++] = more.resv_len;
        /* the meters of both algorithms: reset names no rule */
        redis_meter_key(key, SUSPECT_ALGO_BUCKET,
                        rs->pool.addr.kind == REDIS_CLUSTER, &tb);
        redis_meter_key(key, SUSPECT_ALGO_COUNTER,
                        rs->pool.addr.kind == REDIS_CLUSTER, &sc);
        w[nw] = tb.meter;
        wl[nw++] = tb.meter_len;
        w[nw] = sc.meter;
        wl[nw++] = sc.meter_len;
    }
    if (what & SUSPECT_RESET_OFFENCES) {
        w[nw] = more.offences;
        wl[nw++] = more.offences_len;
    }
    if ((what & SUSPECT_RESET_LOCK) && apart) {
        const char *lk = key->buf;
        rc = del_keys(rs, t, &lk, &ll, 1, err);
    } else if (what & SUSPECT_RESET_LOCK) {
        w[nw] = key->buf;
        wl[nw++] = key->lock_len;
    }
    return rc == SUSPECT_OK ? del_keys(rs, t, w, wl, nw, err) : rc;
}

static suspect_rc_t rs_block(suspect_store_t *store, const suspect_key_t *key,
                             int64_t now_ms, int64_t until_ms,
                             suspect_err_t *err)
{
    redisstore_t *rs = (redisstore_t *)store;
    redis_thread_t *t = redis_op_begin(&rs->pool, err);
    redis_request_t rq = {.script = SCRIPT_NONE};
    char value[LOCK_VMAX], ttl[NUM_LEN];
    size_t len;
    const char *ident = redis_identity_of(rs->prefix_len, key, &len);
    redisReply *r;
    suspect_rc_t rc;

    if (t == NULL) {
        return SUSPECT_E_NOMEM;
    }
    snprintf(value, sizeof(value), "%.*s|until=%lld", (int)len, ident,
             (long long)until_ms);
    snprintf(ttl, sizeof(ttl), "%lld", (long long)(until_ms - now_ms));
    redis_rq_str(&rq, "SET");
    redis_rq_arg(&rq, key->buf, key->lock_len);
    redis_rq_str(&rq, value);
    redis_rq_str(&rq, "PX");
    redis_rq_str(&rq, ttl);
    rc =
        redis_route_call(t, slot_of(rs, key->buf, key->lock_len), &rq, &r, err);
    freeReplyObject(r);
    return rc;
}

static void rs_free(suspect_store_t *store)
{
    redisstore_t *rs = (redisstore_t *)store;

    redis_pool_destroy(&rs->pool);
    free(rs);
}

static const suspect_store_ops_t redis_ops = {
    .name = "redis",
    .decide = rs_decide,
    .status = rs_status,
    .reset = rs_reset,
    .block = rs_block,
    .free = rs_free,
    .unblock = rs_unblock,
    .foreach_locked = rs_foreach_locked,
    .reserve = rs_reserve,
    .settle = redis_store_settle,
    .supports = rs_supports,
    .carry = redis_carry,
    .carry_begin = redis_store_carry_begin,
    .carry_end = redis_store_carry_end,
};

/* ---- public --------------------------------------------------------------
 */

suspect_rc_t suspect_redis_new(const suspect_redis_opts_t *opts,
                               suspect_store_t **out, suspect_err_t *err)
{
    static const suspect_redis_opts_t defaults = {NULL, 0, 0, 0, NULL};
    redisstore_t *rs;
    suspect_rc_t rc;

    *out = NULL;
    opts = opts != NULL ? opts : &defaults;
    if (opts->clock != SUSPECT_REDIS_CLOCK_CALLER &&
        opts->clock != SUSPECT_REDIS_CLOCK_SERVER) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "redis: unknown clock option");
    }
    rs = suspect_calloc(1, sizeof(*rs));
    if (rs == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "redis: out of memory");
    }
    rc = redis_pool_init(
        &rs->pool, opts->url != NULL ? opts->url : SUSPECT_REDIS_DEFAULT_URL,
        opts->connect_timeout_ms ? opts->connect_timeout_ms
                                 : SUSPECT_REDIS_DEFAULT_TIMEOUT_MS,
        opts->command_timeout_ms ? opts->command_timeout_ms
                                 : SUSPECT_REDIS_DEFAULT_TIMEOUT_MS,
        err);
    if (rc != SUSPECT_OK) {
        free(rs);
        return rc;
    }
    rs->base.ops = &redis_ops;
    rs->clock = opts->clock;
    rs->prefix_len = opts->key_prefix != NULL ? strlen(opts->key_prefix) : 0;
    *out = &rs->base;
    return SUSPECT_OK;
}

bool suspect_store_is_redis(const suspect_store_t *store)
{
    return store != NULL && store->ops == &redis_ops;
}

/* PING on master id (redis_route_masters()). */
static suspect_rc_t ping_master(redisstore_t *rs, redis_thread_t *t, int id,
                                suspect_err_t *err)
{
    redis_request_t rq = {.script = SCRIPT_NONE};
    redisReply *r;
    suspect_rc_t rc;

    redis_rq_str(&rq, "PING");
    rc = redis_route_call_master(t, id, &rq, &r, err);
    if (rc == SUSPECT_OK &&
        (r->type != REDIS_REPLY_STATUS || strcmp(r->str, "PONG") != 0)) {
        rc = suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                             "redis %s: PING answered something else",
                             rs->pool.addr.name);
    }
    freeReplyObject(r);
    return rc;
}

suspect_rc_t suspect_redis_ping(suspect_store_t *store, suspect_err_t *err)
{
    redisstore_t *rs = (redisstore_t *)store;
    int ids[REDIS_MAX_NODES];
    redis_thread_t *t;
    size_t n;
    suspect_rc_t rc = SUSPECT_OK;

    if (!suspect_store_is_redis(store)) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "redis: not a Redis store");
    }
    t = redis_op_begin(&rs->pool, err);
    if (t == NULL) {
        return SUSPECT_E_NOMEM;
    }
    /* Every master of a Cluster: each connects and loads the scripts. */
    rc = redis_route_masters(t, ids, REDIS_MAX_NODES, &n, err);
    for (size_t i = 0; i < n && rc == SUSPECT_OK; i++) {
        redis_op_next(t); /* each master its own time */
        rc = ping_master(rs, t, ids[i], err);
    }
    return rc;
}

void suspect_redis_stats(suspect_store_t *store, suspect_redis_stats_t *out)
{
    memset(out, 0, sizeof(*out));
    if (suspect_store_is_redis(store)) {
        redis_pool_stats(&((redisstore_t *)store)->pool, out);
    }
}

/* Walks the live locks under match: see suspect_redis.h. */
suspect_rc_t suspect_redis_foreach_locked(suspect_store_t *store,
                                          const char *match, int64_t now_ms,
                                          suspect_redis_locked_fn fn, void *ud,
                                          suspect_err_t *err)
{
    redisstore_t *rs = (redisstore_t *)store;

    if (!suspect_store_is_redis(store) || fn == NULL) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "redis: listing needs a Redis store and a "
                               "callback");
    }
    return redis_scan_locked(&rs->pool, rs->clock, match, now_ms, fn, ud, err);
}
