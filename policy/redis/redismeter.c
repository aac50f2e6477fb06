/*
 * redismeter.c - token buckets and sliding counters on the Redis store
 * (redismeter.h).
 *
 * A metered rule (suspect_rule_metered()) keeps, per identity, a meter of
 * three numbers (policy/meter.h) instead of a sorted set of hits: one
 * string key beside the window key (lua/bucket.lua describes it), while
 * the lock and offences keys stay those of the sliding log, so that a lock
 * survives a change of algorithm and the .NET system, which reads the
 * window and the lock only, never meets a value it does not know.
 *
 * A decision is one EVALSHA of lua/bucket.lua with the lock, meter and
 * offences keys of every identity: it reads each meter, decides as
 * suspect_policy_evaluate() does, writes the locks it earns and, when
 * allowed, takes the request's cost from every meter.  It answers the
 * states it decided on with the meters it read and wrote; this file then
 * runs the evaluator on those states and meter.c on those meters, and
 * fails the call on any difference (as decide.lua's answer is checked),
 * so the Lua mirror of meter.c can never drift unnoticed.
 *
 * A reservation (count only failed attempts) takes the cost at once, as a
 * decision does; settling a success gives it back (suspect_meter_give(),
 * at the moment it was taken), a failure or an attempt never settled
 * leaves it taken.  No reservations: a meter has nowhere to keep one.
 *
 * On a Cluster, a decision whose keys span slots is redismeterx.c's (the
 * store sends it there);
 * status and unblock read a lock in another slot (the seed's keys) with
 * lock.lua first.
 */
#include "redismeter.h"

#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "meter.h"
#include "redisslot.h"

#define NUM_LEN 24

static bool on_cluster(const redisstore_t *rs)
{
    return rs->pool.addr.kind == REDIS_CLUSTER;
}

void redis_meter_key(const suspect_key_t *k, uint32_t algorithm, bool cluster,
                     redis_meter_key_t *out)
{
    const char *sfx = algorithm == SUSPECT_ALGO_COUNTER ? ":sc" : ":tb";
    size_t wl = k->window_len, n = 0;

    memcpy(out->meter, k->buf, wl);
    memcpy(out->meter + wl, sfx, 3);
    out->meter_len = wl + 3;
    if (cluster && redis_key_slot(out->meter, out->meter_len) !=
                       redis_key_slot(k->buf, wl)) {
        out->meter[n++] = '{';
        memcpy(out->meter + n, k->buf, wl);
        n += wl;
        out->meter[n++] = '}';
        memcpy(out->meter + n, sfx, 3);
        out->meter_len = n + 3;
    }
    memcpy(out->carried, out->meter, out->meter_len);
    memcpy(out->carried + out->meter_len, ":carried", 8);
    out->carried_len = out->meter_len + 8;
}

void redis_meter_args(const suspect_rule_t *rule, bool server_clock,
                      int64_t now_ms, redis_meter_args_t *a)
{
    bool esc = suspect_rule_escalates(rule);

    a->now_len = server_clock ? 0 : redis_fmt_i64(a->now, now_ms);
    redis_fmt_i64(a->algo, rule->algorithm);
    redis_fmt_i64(a->limit, rule->limit_count);
    redis_fmt_i64(a->window, (int64_t)rule->window_s * 1000);
    redis_fmt_i64(a->cap, suspect_rule_capacity(rule));
    redis_fmt_i64(a->cost, suspect_rule_cost(rule));
    redis_fmt_i64(a->block, (int64_t)rule->block_s * 1000);
    redis_fmt_i64(a->pct, esc ? rule->block_factor_pct : 0);
    redis_fmt_i64(a->max, esc ? suspect_rule_lock_ms(rule, UINT32_MAX) : 0);
    redis_fmt_i64(a->period, esc ? suspect_rule_offence_ms(rule) : 0);
}

void redis_meter_head(redis_request_t *rq, const redis_meter_args_t *a,
                      const char *op, bool apart, const char *const *keys,
                      const size_t *lens, size_t nkeys)
{
    /* KEYS counts: up to three keys per identity */
    static const char *const nk[] = {"0",  "1",  "2",  "3",  "4",  "5",  "6",
                                     "7",  "8",  "9",  "10", "11", "12", "13",
                                     "14", "15", "16", "17", "18", "19", "20",
                                     "21", "22", "23", "24"};

    _Static_assert(sizeof(nk) / sizeof(nk[0]) > 3 * SUSPECT_MAX_IDENTITIES,
                   "a KEYS count for every decision");

    rq->script = SCRIPT_BUCKET;
    redis_rq_str(rq, "EVALSHA");
    redis_rq_arg(rq, "", 0);
    redis_rq_str(rq, nk[nkeys]);
    for (size_t i = 0; i < nkeys; i++) {
        redis_rq_arg(rq, keys[i], lens[i]);
    }
    redis_rq_arg(rq, a->now, a->now_len);
    redis_rq_str(rq, op);
    redis_rq_str(rq, a->algo);
    redis_rq_str(rq, a->limit);
    redis_rq_str(rq, a->window);
    redis_rq_str(rq, a->cap);
    redis_rq_str(rq, a->cost);
    redis_rq_str(rq, a->block);
    redis_rq_str(rq, a->pct);
    redis_rq_str(rq, a->max);
    redis_rq_str(rq, a->period);
    redis_rq_str(rq, apart ? "1" : "0");
}

bool redis_meter_agrees(const suspect_rule_t *rule, int64_t now_ms,
                        const int64_t *v, bool recorded)
{
    const int64_t *read = v + REDIS_DECIDE_PER, *after = read + 3;
    suspect_meter_t m = {read[0], read[1], read[2]};
    suspect_window_state_t st;

    memset(&st, 0, sizeof(st));
    suspect_meter_read(rule, &m, now_ms, &st);
    if ((int64_t)st.in_window != v[1] || st.free_at_ms != v[2]) {
        return false;
    }
    if (recorded) {
        suspect_meter_take(rule, &m, now_ms, suspect_rule_cost(rule));
    }
    return m.at == after[0] && m.cur == after[1] && m.prev == after[2];
}

/* Runs rq (answering nints integers into v) on slot. */
static suspect_rc_t call_ints(redis_thread_t *t, int slot, redis_request_t *rq,
                              int64_t *v, size_t nints, suspect_err_t *err)
{
    redisReply *r = NULL;
    suspect_rc_t rc;

    rq->nints = nints;
    rq->ints = v;
    rc = redis_route_call(t, slot, rq, &r, err);
    if (rc == SUSPECT_OK) {
        rc = redis_script_ints(rq, r, "bucket.lua", err);
    }
    freeReplyObject(r);
    return rc;
}

/* The decision of v (now, allowed, REDIS_METER_PER per identity) through
 * the evaluator, checked against what bucket.lua wrote. */
static suspect_rc_t decide_reply(const suspect_rule_t *rule, const int64_t *v,
                                 size_t n, suspect_decision_t *out,
                                 suspect_err_t *err)
{
    suspect_window_state_t st[SUSPECT_MAX_IDENTITIES];
    suspect_plan_t plan;
    bool agree;

    for (size_t i = 0; i < n; i++) {
        redis_decide_state(v + 2 + REDIS_METER_PER * i, &st[i]);
    }
    suspect_policy_evaluate(rule, st, n, v[0], &plan, out);
    agree = plan.record == (v[1] != 0);
    for (size_t i = 0; i < n && agree; i++) {
        const int64_t *p = v + 2 + REDIS_METER_PER * i;
        agree = redis_decide_agrees(&plan, i, p) &&
                redis_meter_agrees(rule, v[0], p, plan.record);
    }
    if (!agree) {
        return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                               "redis: bucket.lua disagrees with the policy");
    }
    return SUSPECT_OK;
}

suspect_rc_t redis_meter_decide(redisstore_t *rs, redis_thread_t *t,
                                const suspect_rule_t *rule,
                                const suspect_key_t *keys, size_t n,
                                int64_t now_ms, suspect_decision_t *out,
                                int64_t *now_out, suspect_err_t *err)
{
    redis_request_t rq = {.script = SCRIPT_NONE};
    redis_meter_key_t mk[SUSPECT_MAX_IDENTITIES];
    redis_more_keys_t more[SUSPECT_MAX_IDENTITIES];
    const char *kv[3 * SUSPECT_MAX_IDENTITIES];
    size_t kl[3 * SUSPECT_MAX_IDENTITIES];
    int64_t v[2 + REDIS_METER_PER * SUSPECT_MAX_IDENTITIES];
    redis_meter_args_t a;
    int slot = -1;
    suspect_rc_t rc;

    if (on_cluster(rs)) {
        slot = redis_key_slot(keys[0].buf, keys[0].window_len);
    }
    redis_meter_args(rule, rs->clock == SUSPECT_REDIS_CLOCK_SERVER, now_ms, &a);
    for (size_t i = 0; i < n; i++) {
        redis_meter_key(&keys[i], rule->algorithm, on_cluster(rs), &mk[i]);
        redis_more_keys(&keys[i], &more[i]);
        kv[3 * i] = keys[i].buf;
        kl[3 * i] = keys[i].lock_len;
        kv[3 * i + 1] = mk[i].meter;
        kl[3 * i + 1] = mk[i].meter_len;
        kv[3 * i + 2] = more[i].offences;
        kl[3 * i + 2] = more[i].offences_len;
    }
    redis_meter_head(&rq, &a, "decide", false, kv, kl, 3 * n);
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *id = redis_identity_of(rs->prefix_len, &keys[i], &len);
        redis_rq_arg(&rq, id, len);
    }
    rc = call_ints(t, slot, &rq, v, 2 + REDIS_METER_PER * n, err);
    if (rc == SUSPECT_OK) {
        *now_out = v[0];
        rc = decide_reply(rule, v, n, out, err);
    }
    return rc;
}

/* give on keys[0..n), whose meters share slot. */
static suspect_rc_t give_call(redis_thread_t *t, const suspect_rule_t *rule,
                              const suspect_key_t *keys, size_t n, bool cluster,
                              int slot, const redis_meter_args_t *a,
                              int64_t at_ms, suspect_err_t *err)
{
    redis_request_t rq = {.script = SCRIPT_NONE};
    redis_meter_key_t mk[SUSPECT_MAX_IDENTITIES];
    const char *kv[SUSPECT_MAX_IDENTITIES];
    size_t kl[SUSPECT_MAX_IDENTITIES];
    char at[NUM_LEN];
    int64_t v[2];

    for (size_t i = 0; i < n; i++) {
        redis_meter_key(&keys[i], rule->algorithm, cluster, &mk[i]);
        kv[i] = mk[i].meter;
        kl[i] = mk[i].meter_len;
    }
    redis_meter_head(&rq, a, "give", false, kv, kl, n);
    redis_rq_arg(&rq, at, redis_fmt_i64(at, at_ms));
    return call_ints(t, slot, &rq, v, 2, err);
}

suspect_rc_t redis_meter_give(redisstore_t *rs, redis_thread_t *t,
                              const suspect_rule_t *rule,
                              const suspect_key_t *keys, size_t n,
                              const redis_meter_args_t *a, int64_t at_ms,
                              suspect_err_t *err)
{
    suspect_rc_t rc = SUSPECT_OK;

    if (!on_cluster(rs)) {
        return give_call(t, rule, keys, n, false, -1, a, at_ms, err);
    }
    for (size_t i = 0; i < n && rc == SUSPECT_OK; i++) {
        rc = give_call(t, rule, &keys[i], 1, true,
                       redis_key_slot(keys[i].buf, keys[i].window_len), a,
                       at_ms, err);
    }
    return rc;
}

suspect_rc_t redis_meter_settle(redisstore_t *rs, redis_thread_t *t,
                                const suspect_rule_t *rule,
                                const suspect_key_t *keys, size_t n,
                                const suspect_ticket_t *ticket, bool failed,
                                int64_t now_ms, suspect_err_t *err)
{
    redis_meter_args_t a;

    if (suspect_policy_settle_counts(failed, ticket->end_ms, now_ms)) {
        return SUSPECT_OK; /* the cost taken stays taken */
    }
    redis_meter_args(rule, rs->clock == SUSPECT_REDIS_CLOCK_SERVER, now_ms, &a);
    return redis_meter_give(rs, t, rule, keys, n, &a, ticket->at_ms, err);
}

suspect_rc_t redis_meter_read_lock(redis_thread_t *t, redis_meter_args_t *a,
                                   const suspect_key_t *key, int ls,
                                   int64_t *lu, suspect_err_t *err)
{
    redis_request_t rq = {.script = SCRIPT_LOCK};
    int64_t v[2];
    suspect_rc_t rc;

    redis_rq_str(&rq, "EVALSHA");
    redis_rq_arg(&rq, "", 0);
    redis_rq_str(&rq, "1");
    redis_rq_arg(&rq, key->buf, key->lock_len);
    redis_rq_arg(&rq, a->now, a->now_len);
    rq.nints = 2;
    rq.ints = v;
    {
        redisReply *r = NULL;
        rc = redis_route_call(t, ls, &rq, &r, err);
        if (rc == SUSPECT_OK) {
            rc = redis_script_ints(&rq, r, "lock.lua", err);
        }
        freeReplyObject(r);
    }
    if (rc == SUSPECT_OK) {
        if (a->now_len == 0) {
            a->now_len = redis_fmt_i64(a->now, v[0]);
        }
        *lu = v[1];
    }
    return rc;
}

/* Where key's lock lives when it is apart from its window (-1: with it). */
static int lock_apart(const redisstore_t *rs, const suspect_key_t *key)
{
    int ls;

    if (!on_cluster(rs)) {
        return -1;
    }
    ls = redis_key_slot(key->buf, key->lock_len);
    return ls != redis_key_slot(key->buf, key->window_len) ? ls : -1;
}

suspect_rc_t redis_meter_status(redisstore_t *rs, redis_thread_t *t,
                                const suspect_rule_t *rule,
                                const suspect_key_t *key, int64_t now_ms,
                                suspect_status_t *out, suspect_err_t *err)
{
    redis_request_t rq = {.script = SCRIPT_NONE};
    int ls = lock_apart(rs, key);
    redis_meter_key_t mk;
    redis_more_keys_t more;
    const char *kv[3];
    size_t kl[3], nk = 0;
    redis_meter_args_t a;
    suspect_window_state_t st;
    suspect_meter_t m;
    int64_t v[7], lu = 0;
    suspect_rc_t rc = SUSPECT_OK;

    redis_meter_args(rule, rs->clock == SUSPECT_REDIS_CLOCK_SERVER, now_ms, &a);
    redis_meter_key(key, rule->algorithm, on_cluster(rs), &mk);
    if (ls >= 0) {
        redis_more_keys_apart(key, &more);
        rc = redis_meter_read_lock(t, &a, key, ls, &lu, err);
    } else {
        redis_more_keys(key, &more);
        kv[nk] = key->buf;
        kl[nk++] = key->lock_len;
    }
    kv[nk] = mk.meter;
    kl[nk++] = mk.meter_len;
    kv[nk] = more.offences;
    kl[nk++] = more.offences_len;
    if (rc != SUSPECT_OK) {
        return rc;
    }
    redis_meter_head(&rq, &a, "status", ls >= 0, kv, kl, nk);
    rc =
        call_ints(t, redis_key_slot(key->buf, key->window_len), &rq, v, 7, err);
    if (rc != SUSPECT_OK) {
        return rc;
    }
    m.at = v[2];
    m.cur = v[3];
    m.prev = v[4];
    memset(&st, 0, sizeof(st));
    suspect_meter_read(rule, &m, v[0], &st);
    memset(out, 0, sizeof(*out));
    out->locked_until_ms = ls >= 0 ? (lu > v[0] ? lu : 0) : v[1];
    out->in_window = st.in_window;
    out->remaining = st.in_window < suspect_rule_capacity(rule)
                         ? suspect_rule_capacity(rule) - st.in_window
                         : 0;
    out->free_at_ms = st.free_at_ms;
    out->offences = v[5] > UINT32_MAX ? UINT32_MAX : (uint32_t)v[5];
    out->offence_until_ms = v[6];
    out->full_at_ms = suspect_meter_end_ms(rule, &m);
    out->full_at_ms = out->full_at_ms > v[0] ? out->full_at_ms : 0;
    return SUSPECT_OK;
}

/* Deletes key's lock in slot ls (the seed's keys on a Cluster). */
static suspect_rc_t del_lock(redis_thread_t *t, const suspect_key_t *key,
                             int ls, suspect_err_t *err)
{
    redis_request_t rq = {.script = SCRIPT_NONE};
    redisReply *r = NULL;
    suspect_rc_t rc;

    redis_rq_str(&rq, "DEL");
    redis_rq_arg(&rq, key->buf, key->lock_len);
    rc = redis_route_call(t, ls, &rq, &r, err);
    freeReplyObject(r);
    return rc;
}

suspect_rc_t redis_meter_unblock(redisstore_t *rs, redis_thread_t *t,
                                 const suspect_rule_t *rule,
                                 const suspect_key_t *key, int64_t now_ms,
                                 suspect_unblock_t *out, suspect_err_t *err)
{
    redis_request_t rq = {.script = SCRIPT_NONE};
    int ls = lock_apart(rs, key);
    redis_meter_key_t mk;
    const char *kv[2];
    size_t kl[2], nk = 0;
    redis_meter_args_t a;
    suspect_window_state_t st;
    suspect_meter_t m;
    int64_t v[9], lu = 0;
    suspect_rc_t rc = SUSPECT_OK;

    redis_meter_args(rule, rs->clock == SUSPECT_REDIS_CLOCK_SERVER, now_ms, &a);
    redis_meter_key(key, rule->algorithm, on_cluster(rs), &mk);
    if (ls >= 0) {
        rc = redis_meter_read_lock(t, &a, key, ls, &lu, err);
        rc = rc == SUSPECT_OK ? del_lock(t, key, ls, err) : rc;
    } else {
        kv[nk] = key->buf;
        kl[nk++] = key->lock_len;
    }
    if (rc != SUSPECT_OK) {
        return rc;
    }
    kv[nk] = mk.meter;
    kl[nk++] = mk.meter_len;
    redis_meter_head(&rq, &a, "room", ls >= 0, kv, kl, nk);
    rc =
        call_ints(t, redis_key_slot(key->buf, key->window_len), &rq, v, 9, err);
    if (rc != SUSPECT_OK) {
        return rc;
    }
    m.at = v[3];
    m.cur = v[4];
    m.prev = v[5];
    if ((int64_t)suspect_meter_make_room(rule, &m, v[0]) != v[2] ||
        m.at != v[6] || m.cur != v[7] || m.prev != v[8]) {
        return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                               "redis: bucket.lua disagrees with meter.c");
    }
    memset(&st, 0, sizeof(st));
    suspect_meter_read(rule, &m, v[0], &st);
    out->lock_until_ms = ls >= 0 ? (lu > v[0] ? lu : 0) : v[1];
    out->dropped = (uint32_t)v[2];
    out->kept = st.in_window;
    return SUSPECT_OK;
}

/* "<t> <units> <member> ..." of ident's hits, in a new buffer (the
 * caller's), NULL when out of memory. */
static char *carry_fields(const suspect_carry_t *ident, size_t *len)
{
    char *buf = suspect_malloc(
        1 + ident->nhits * (2 * NUM_LEN + SUSPECT_CARRY_MEMBER_LEN + 3));
    char *p = buf;

    if (buf == NULL) {
        return NULL;
    }
    for (size_t k = 0; k < ident->nhits; k++) {
        const suspect_carry_hit_t *h = &ident->hits[k];
        p += k > 0 ? (*p = ' ', 1) : 0;
        p += redis_fmt_i64(p, h->at_ms);
        *p++ = ' ';
        p += redis_fmt_i64(p, h->units != 0 ? h->units : 1);
        *p++ = ' ';
        memcpy(p, h->member, SUSPECT_CARRY_MEMBER_LEN);
        p += SUSPECT_CARRY_MEMBER_LEN;
    }
    *p = '\0';
    *len = (size_t)(p - buf);
    return buf;
}

suspect_rc_t redis_meter_carry(redisstore_t *rs, redis_thread_t *t,
                               const suspect_carry_t *ident, int slot,
                               int64_t now_ms, uint64_t *hits,
                               suspect_err_t *err)
{
    redis_request_t rq = {.script = SCRIPT_NONE};
    suspect_rule_t rule;
    suspect_key_t key;
    redis_meter_key_t mk;
    redis_meter_args_t a;
    const char *kv[2];
    size_t kl[2], len = 0;
    char *fields;
    int64_t v[2];
    suspect_rc_t rc;

    if (ident->nhits == 0) {
        return SUSPECT_OK;
    }
    memset(&rule, 0, sizeof(rule));
    rule.action = "Carry";
    rule.limit_count = ident->limit_count;
    rule.window_s = (uint32_t)(ident->window_ms / 1000);
    rule.algorithm = ident->algorithm;
    rule.burst = ident->burst;
    key.window_len = ident->window_len;
    key.lock_len = ident->window_len + SUSPECT_LOCK_SUFFIX_LEN;
    memcpy(key.buf, ident->key, key.lock_len);
    redis_meter_key(&key, rule.algorithm, on_cluster(rs), &mk);
    redis_meter_args(&rule, rs->clock == SUSPECT_REDIS_CLOCK_SERVER, now_ms,
                     &a);
    fields = carry_fields(ident, &len);
    if (fields == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "redis: out of memory");
    }
    kv[0] = mk.meter;
    kl[0] = mk.meter_len;
    kv[1] = mk.carried;
    kl[1] = mk.carried_len;
    redis_meter_head(&rq, &a, "carry", false, kv, kl, 2);
    redis_rq_arg(&rq, fields, len);
    rc = call_ints(t, slot, &rq, v, 2, err);
    free(fields);
    if (rc == SUSPECT_OK) {
        *hits += (uint64_t)v[1];
    }
    return rc;
}
