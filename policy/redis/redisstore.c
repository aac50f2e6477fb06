/*
 * redisstore.c - the Redis store backend (suspect_redis.h).  With
 * redisconn.c, the only files of libsuspect that include hiredis.
 *
 * Algorithm: a decision is one EVALSHA of lua/decide.lua with the window and
 * lock keys of every identity in KEYS.  The script gathers each identity's
 * state (lock end, hits in the window after trimming, the moment one more
 * hit fits), applies the writes suspect_policy_evaluate() would plan (locks
 * for identities over the limit, the hit on every window when allowed) and
 * returns the states and what it wrote.  This file then runs
 * suspect_policy_evaluate() on those states: the decision the caller gets is
 * computed by the one definition of the semantics, and if the script's
 * writes differ from the evaluator's plan the call fails loudly instead of
 * drifting.  status is lua/status.lua, unblock lua/unblock.lua; reset (DEL)
 * and block (SET PX) are plain commands.
 *
 * Connections, timeouts, reconnects, NOSCRIPT and SIGPIPE are redisconn.c's;
 * URLs, hit ids and backoff redisutil.c's; listing locks redisscan.c's.
 */
#include "suspect_redis.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "redisconn.h"
#include "redisscan.h"
#include "redisslots.h"
#include "redisstore.h"
#include "redisutil.h"
#include "suspect_store_impl.h"

#define NUM_LEN   24
#define LOCK_VMAX (SUSPECT_KEY_MAX + 32)

static const suspect_store_ops_t redis_ops;

/* ---- replies -------------------------------------------------------------
 */

/* Copies an array reply of exactly n integers into v. */
static suspect_rc_t int_array(const redisReply *r, size_t n, int64_t *v,
                              const char *what, suspect_err_t *err)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements != n) {
        return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                               "redis: %s answered an unexpected shape", what);
    }
    for (size_t i = 0; i < n; i++) {
        if (r->element[i]->type != REDIS_REPLY_INTEGER) {
            return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                                   "redis: %s answered a non-integer", what);
        }
        v[i] = r->element[i]->integer;
    }
    return SUSPECT_OK;
}

/* The identity part of key (after the prefix and "Action:"): the lock's
 * value, as the .NET code writes it. */
static const char *identity_of(const redisstore_t *rs, const suspect_key_t *k,
                               size_t *len)
{
    size_t start = rs->prefix_len < k->window_len ? rs->prefix_len : 0;
    const char *colon = memchr(k->buf + start, ':', k->window_len - start);

    start = colon != NULL ? (size_t)(colon - k->buf) + 1 : start;
    *len = k->window_len - start;
    return k->buf + start;
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
        redis_rq_arg(rq, more[i].slots, more[i].slots_len);
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
        const char *v = identity_of(rs, &keys[i], &len);
        redis_rq_arg(rq, v, len);
    }
}

/* The answer of a script: rq->ints when it was decoded on the fast path,
 * else the reply r, which must then be an array of exactly rq->nints
 * integers (copied into rq->ints). */
static suspect_rc_t script_ints(const redis_request_t *rq, const redisReply *r,
                                const char *what, suspect_err_t *err)
{
    return r == NULL ? SUSPECT_OK
                     : int_array(r, rq->nints, rq->ints, what, err);
}

/* Values per identity in decide.lua's answer. */
#define DECIDE_PER 8

static uint32_t clamp_u32(int64_t v)
{
    return v < 0 ? 0 : v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
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

    memset(st, 0, sizeof(st));
    for (size_t i = 0; i < n; i++) {
        const int64_t *s = v + 2 + DECIDE_PER * i;
        st[i].lock_until_ms = s[0];
        st[i].in_window = clamp_u32(s[1]);
        st[i].free_at_ms = s[2];
        st[i].pending = clamp_u32(s[4]);
        st[i].pending_end_ms = s[5];
        st[i].offences = clamp_u32(s[6]);
    }
    suspect_policy_evaluate(rule, st, n, v[0], &plan, out);
    agree = plan.record == (v[1] != 0);
    for (size_t i = 0; i < n; i++) {
        const int64_t *s = v + 2 + DECIDE_PER * i;
        agree = agree && plan.lock_until_ms[i] == s[3] &&
                (int64_t)plan.offences[i] == s[7];
    }
    if (!agree) {
        return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                               "redis: decide.lua disagrees with the policy");
    }
    return SUSPECT_OK;
}

/* A decision, or with ttl_ms > 0 a reservation whose slot *ticket names. */
static suspect_rc_t rs_run(redisstore_t *rs, const suspect_rule_t *rule,
                           const suspect_key_t *keys, size_t n, int64_t now_ms,
                           int64_t ttl_ms, suspect_ticket_t *ticket,
                           suspect_decision_t *out, suspect_err_t *err)
{
    redis_conn_t *c = redis_conn_get(&rs->pool, err);
    redis_request_t rq = {.script = SCRIPT_DECIDE};
    redis_more_keys_t more[SUSPECT_MAX_IDENTITIES];
    decide_nums_t nums;
    char id[REDIS_ID_LEN + 1];
    int64_t v[2 + DECIDE_PER * SUSPECT_MAX_IDENTITIES];
    redisReply *r;
    suspect_rc_t rc;

    if (c == NULL) {
        return SUSPECT_E_NOMEM;
    }
    if (ticket != NULL) {
        redis_slot_id(ticket->id, id);
    } else {
        redis_ids_next(&c->ids, id);
    }
    decide_args(rs, &rq, rule, keys, n, now_ms, ttl_ms, &nums, more, id,
                ticket != NULL ? REDIS_SLOT_ID_LEN : REDIS_ID_LEN);
    rq.nints = 2 + DECIDE_PER * n;
    rq.ints = v;
    rc = redis_call(c, &rq, &r, err);
    if (rc == SUSPECT_OK) {
        rc = script_ints(&rq, r, "decide.lua", err);
    }
    freeReplyObject(r);
    if (rc != SUSPECT_OK) {
        return rc;
    }
    if (ticket != NULL) {
        /* the slot's member is "<taken at>:<id in hex>", Redis's time when
         * it keeps the clock */
        ticket->at_ms = v[0];
        ticket->end_ms = v[0] + ttl_ms;
    }
    return decide_reply(v, rule, n, out, err);
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
        redis_rq_arg(rq, more->slots, more->slots_len);
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

/* Runs script (file name, for errors) on one key (with its slots and
 * offences keys for status.lua): the nv integers it answers in v. */
static suspect_rc_t key_script(redisstore_t *rs, int script, const char *name,
                               const suspect_rule_t *rule,
                               const suspect_key_t *key, int64_t now_ms,
                               int64_t *v, size_t nv, suspect_err_t *err)
{
    redis_conn_t *c = redis_conn_get(&rs->pool, err);
    redis_request_t rq = {.script = script};
    char nums[3][NUM_LEN];
    redis_more_keys_t more;
    redisReply *r;
    suspect_rc_t rc;

    if (c == NULL) {
        return SUSPECT_E_NOMEM;
    }
    redis_more_keys(key, &more);
    key_script_args(rs, &rq, rule, key, script == SCRIPT_STATUS ? &more : NULL,
                    now_ms, nums);
    rq.nints = nv;
    rq.ints = v;
    rc = redis_call(c, &rq, &r, err);
    if (rc == SUSPECT_OK) {
        rc = script_ints(&rq, r, name, err);
    }
    freeReplyObject(r);
    return rc;
}

static suspect_rc_t rs_status(suspect_store_t *store,
                              const suspect_rule_t *rule,
                              const suspect_key_t *key, int64_t now_ms,
                              suspect_status_t *out, suspect_err_t *err)
{
    int64_t v[7];
    suspect_rc_t rc = key_script((redisstore_t *)store, SCRIPT_STATUS,
                                 "status.lua", rule, key, now_ms, v, 7, err);

    if (rc == SUSPECT_OK) {
        out->locked_until_ms = v[1];
        out->in_window = clamp_u32(v[2]);
        out->pending = clamp_u32(v[4]);
        out->remaining =
            (uint64_t)out->in_window + out->pending < rule->limit_count
                ? rule->limit_count - out->in_window - out->pending
                : 0;
        out->free_at_ms = v[3];
        out->offences = clamp_u32(v[5]);
        out->offence_until_ms = v[6];
    }
    return rc;
}

static suspect_rc_t rs_unblock(suspect_store_t *store,
                               const suspect_rule_t *rule,
                               const suspect_key_t *key, int64_t now_ms,
                               suspect_unblock_t *out, suspect_err_t *err)
{
    int64_t v[4];
    suspect_rc_t rc = key_script((redisstore_t *)store, SCRIPT_UNBLOCK,
                                 "unblock.lua", rule, key, now_ms, v, 4, err);

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

static suspect_rc_t rs_reset(suspect_store_t *store, const suspect_key_t *key,
                             unsigned what, suspect_err_t *err)
{
    redis_conn_t *c = redis_conn_get(&((redisstore_t *)store)->pool, err);
    redis_request_t rq = {.script = SCRIPT_NONE};
    redis_more_keys_t more;
    redisReply *r;
    suspect_rc_t rc;

    if (c == NULL) {
        return SUSPECT_E_NOMEM;
    }
    redis_more_keys(key, &more);
    redis_rq_str(&rq, "DEL");
    if (what & SUSPECT_RESET_WINDOW) {
        redis_rq_arg(&rq, key->buf, key->window_len);
        redis_rq_arg(&rq, more.slots, more.slots_len);
    }
    if (what & SUSPECT_RESET_LOCK) {
        redis_rq_arg(&rq, key->buf, key->lock_len);
    }
    if (what & SUSPECT_RESET_OFFENCES) {
        redis_rq_arg(&rq, more.offences, more.offences_len);
    }
    rc = redis_call(c, &rq, &r, err);
    freeReplyObject(r);
    return rc;
}

static suspect_rc_t rs_block(suspect_store_t *store, const suspect_key_t *key,
                             int64_t now_ms, int64_t until_ms,
                             suspect_err_t *err)
{
    redisstore_t *rs = (redisstore_t *)store;
    redis_conn_t *c = redis_conn_get(&rs->pool, err);
    redis_request_t rq = {.script = SCRIPT_NONE};
    char value[LOCK_VMAX], ttl[NUM_LEN];
    size_t len;
    const char *ident = identity_of(rs, key, &len);
    redisReply *r;
    suspect_rc_t rc;

    if (c == NULL) {
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
    rc = redis_call(c, &rq, &r, err);
    freeReplyObject(r);
    return rc;
}

/* ---- carrying a journal back (rediscarry.h) ------------------------------
 */

/* "<lock_until> <window_ms> <t> <member> ..." of ident into a new buffer
 * (the caller frees it); NULL when out of memory. */
static char *carry_fields(const redis_carry_ident_t *ident, size_t *len)
{
    size_t cap = 2 * NUM_LEN + ident->nhits * (NUM_LEN + REDIS_ID_LEN + 2);
    char *buf = suspect_malloc(cap), *p = buf;

    if (buf == NULL) {
        return NULL;
    }
    p += redis_fmt_i64(p, ident->lock_until_ms);
    *p++ = ' ';
    p += redis_fmt_i64(p, ident->window_ms);
    for (size_t k = 0; k < ident->nhits; k++) {
        *p++ = ' ';
        p += redis_fmt_i64(p, ident->hits[k].at_ms);
        *p++ = ' ';
        memcpy(p, ident->hits[k].id, REDIS_ID_LEN);
        p += REDIS_ID_LEN;
    }
    *len = (size_t)(p - buf);
    return buf;
}

/* Fills rq with carry.lua's KEYS and ARGV for idents[0..n); fields[i]
 * gets the buffers it points into (freed by the caller). */
static suspect_rc_t carry_args(redisstore_t *rs, redis_request_t *rq,
                               const redis_carry_ident_t *idents, size_t n,
                               char *now, char **fields, suspect_err_t *err)
{
    char *nkeys = now + NUM_LEN;

    redis_rq_str(rq, "EVALSHA");
    redis_rq_arg(rq, "", 0);
    redis_rq_arg(rq, nkeys, redis_fmt_i64(nkeys, (int64_t)(2 * n)));
    for (size_t i = 0; i < n; i++) {
        redis_rq_arg(rq, idents[i].key, idents[i].window_len);
        redis_rq_arg(rq, idents[i].key,
                     idents[i].window_len + SUSPECT_LOCK_SUFFIX_LEN);
    }
    redis_rq_str(rq, now);
    for (size_t i = 0; i < n; i++) {
        suspect_key_t key;
        size_t len;
        const char *v;

        redis_carry_key(&idents[i], &key);
        v = identity_of(rs, &key, &len);
        /* v points into key: the argument must point into idents[i]. */
        redis_rq_arg(rq, idents[i].key + (v - key.buf), len);
        fields[i] = carry_fields(&idents[i], &len);
        if (fields[i] == NULL) {
            return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                                   "redis: out of memory");
        }
        redis_rq_arg(rq, fields[i], len);
    }
    return SUSPECT_OK;
}

suspect_rc_t redis_store_carry(suspect_store_t *store,
                               const redis_carry_ident_t *idents, size_t n,
                               int64_t now_ms, uint64_t *locks, uint64_t *hits,
                               suspect_err_t *err)
{
    redisstore_t *rs = (redisstore_t *)store;
    redis_request_t rq = {.script = SCRIPT_CARRY};
    char nums[2 * NUM_LEN], *fields[REDIS_CARRY_CHUNK] = {NULL};
    redis_conn_t *c;
    redisReply *r = NULL;
    int64_t v[2];
    suspect_rc_t rc;

    if (!suspect_store_is_redis(store) || n > REDIS_CARRY_CHUNK) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "redis: cannot carry that");
    }
    c = redis_conn_get(&rs->pool, err);
    if (c == NULL) {
        return SUSPECT_E_NOMEM;
    }
    nums[0] = '\0';
    if (rs->clock != SUSPECT_REDIS_CLOCK_SERVER) {
        redis_fmt_i64(nums, now_ms);
    }
    rc = carry_args(rs, &rq, idents, n, nums, fields, err);
    rq.nints = 2;
    rq.ints = v;
    if (rc == SUSPECT_OK) {
        rc = redis_call(c, &rq, &r, err);
    }
    if (rc == SUSPECT_OK) {
        rc = script_ints(&rq, r, "carry.lua", err);
    }
    freeReplyObject(r);
    for (size_t i = 0; i < n; i++) {
        free(fields[i]);
    }
    if (rc == SUSPECT_OK) {
        *locks += (uint64_t)v[0];
        *hits += (uint64_t)v[1];
    }
    return rc;
}

static void rs_free(suspect_store_t *store)
{
    redisstore_t *rs = (redisstore_t *)store;

    redis_pool_destroy(&rs->pool);
    free(rs);
}

static const suspect_store_ops_t redis_ops = {
    "redis",     rs_decide,  rs_status,         rs_reset,   rs_block,
    rs_free,     rs_unblock, rs_foreach_locked, rs_reserve, redis_store_settle,
    rs_supports,
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

suspect_rc_t suspect_redis_ping(suspect_store_t *store, suspect_err_t *err)
{
    redisstore_t *rs = (redisstore_t *)store;
    redis_request_t rq = {.script = SCRIPT_NONE};
    redis_conn_t *c;
    redisReply *r;
    suspect_rc_t rc;

    if (!suspect_store_is_redis(store)) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "redis: not a Redis store");
    }
    c = redis_conn_get(&rs->pool, err);
    if (c == NULL) {
        return SUSPECT_E_NOMEM;
    }
    redis_rq_str(&rq, "PING");
    rc = redis_call(c, &rq, &r, err);
    if (rc == SUSPECT_OK &&
        (r->type != REDIS_REPLY_STATUS || strcmp(r->str, "PONG") != 0)) {
        rc = suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                             "redis %s: PING answered something else",
                             rs->pool.addr.name);
    }
    freeReplyObject(r);
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
