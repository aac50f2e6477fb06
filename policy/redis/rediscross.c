/*
 * rediscross.c - decisions whose keys live in several slots of a Redis
 * Cluster (rediscross.h).
 *
 * A script's keys must share a slot, so a decision on several identities
 * (a member and a client IP hash to different slots, usually on different
 * nodes) cannot be one atomic script.  It becomes a reservation per
 * identity, in the request's order:
 *
 *   1. per identity, atomically in its slot (lua/decide.lua on its keys
 *      alone): its lock read, its window and reservations counted; if it
 *      allows, the hit is recorded there as a reservation that ends
 *      REDIS_RESERVE_MS later (the same reservations a route counting only
 * failed attempts takes: suspect_policy.h's pending); if it is over, its lock
 *      is created as the policy says.  Once one identity denied, the rest
 *      are only read (and locked when over), not reserved;
 *   2. suspect_policy_evaluate() decides on the states read; when denied,
 *      every reservation is taken back (ZREM from its reservations key), when
 * allowed they stay, and each becomes a hit at the moment it was taken when its
 * end has come. The last identity's hit is never taken back (if it allows, so
 * did all before it), so it is recorded as a plain hit.  A reservation of a
 * route that counts only failed attempts (x->ttl_ms) takes a reservation on
 * every identity, with its own life, and is settled later (redissettle.c).
 *
 * Why it never admits more than the limit: each identity's count, reservations
 * and new reservation are one atomic step in its slot, so no identity ever
 * holds more than its limit in hits and reservations together, and an admitted
 * request's hits are among them.  What it gives up: a reservation that is
 * then taken back counted meanwhile, so a concurrent request on that
 * identity may be denied — as busy, for at most REDIS_RESERVE_MS: a reservation
 * never earns a lock — although, had the requests come one after
 * the other, it would have fitted.  A reservation whose taking back failed
 * (the node went away) becomes a hit at its end: an error on the safe side.
 *
 * The seed's key layout on a Cluster ("A:I" and "A:I:locked" hash apart):
 * each identity is then lock.lua on the lock's slot, decide.lua on the
 * window's keys alone (window, reservations, offences: named to share the
 * window's slot, redisutil.c) given the lock's end, and a SET of the lock
 * when the policy creates one.  The window is the authority (its count and
 * hit are atomic); a lock created by another request between the read and
 * the window's step is seen by the next request, not this one.
 *
 * Round trips: one per identity (two with the seed's layout, plus a SET
 * per new lock), one more per reservation taken back.
 */
#include "rediscross.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redisslot.h"

#define NUM_LEN 24
/* How long a decision's reservation stays a reservation. */
#define REDIS_RESERVE_MS 1000

/* One decision in progress. */
typedef struct run {
    const redis_cross_t *x;
    char now[NUM_LEN]; /* "" until Redis said (server clock) */
    size_t now_len;
    char limit[NUM_LEN], window[NUM_LEN], block[NUM_LEN], pct[NUM_LEN],
        max[NUM_LEN], period[NUM_LEN];
} run_t;

/* One identity's outcome. */
typedef struct part {
    int ws, ls;                  /* slots of its window and lock */
    bool apart;                  /* its lock lives in another slot */
    bool recorded;               /* its hit or reservation is written */
    int64_t ttl_ms;              /* its reservation's life (0: a hit) */
    int64_t at_ms;               /* the time its call used */
    bool denies;                 /* it denies the request */
    int64_t v[REDIS_DECIDE_PER]; /* decide.lua's answer for it */
} part_t;

bool redis_cross_needed(const suspect_key_t *keys, size_t n, int *slot)
{
    *slot = redis_key_slot(keys[0].buf, keys[0].window_len);
    for (size_t i = 0; i < n; i++) {
        if (redis_key_slot(keys[i].buf, keys[i].window_len) != *slot ||
            redis_key_slot(keys[i].buf, keys[i].lock_len) != *slot) {
            return true;
        }
    }
    return false;
}

/* Runs rq (a script answering nints integers into v) on slot. */
static suspect_rc_t script(const run_t *r, int slot, redis_request_t *rq,
                           size_t nints, int64_t *v, const char *what,
                           suspect_err_t *err)
{
    redisReply *reply = NULL;
    suspect_rc_t rc;

    rq->nints = nints;
    rq->ints = v;
    rc = redis_route_call(r->x->t, slot, rq, &reply, err);
    if (rc == SUSPECT_OK) {
        rc = redis_script_ints(rq, reply, what, err);
    }
    freeReplyObject(reply);
    return rc;
}

/* The first answer fixes now for the rest (Redis TIME: one clock). */
static void take_now(run_t *r, int64_t now)
{
    if (r->now_len == 0) {
        r->now_len = redis_fmt_i64(r->now, now);
    }
}

/* EVALSHA <script> <nkeys> keys[0..nkeys) now. */
static void head(run_t *r, redis_request_t *rq, int script_id,
                 const char *const *keys, const size_t *lens, size_t nkeys,
                 char *nbuf)
{
    rq->script = script_id;
    redis_rq_str(rq, "EVALSHA");
    redis_rq_arg(rq, "", 0);
    redis_rq_arg(rq, nbuf, redis_fmt_i64(nbuf, (int64_t)nkeys));
    for (size_t i = 0; i < nkeys; i++) {
        redis_rq_arg(rq, keys[i], lens[i]);
    }
    redis_rq_arg(rq, r->now, r->now_len);
}

/* lock.lua on identity i's lock: its end into *lu. */
static suspect_rc_t read_lock(run_t *r, size_t i, int ls, int64_t *lu,
                              suspect_err_t *err)
{
    const suspect_key_t *k = &r->x->keys[i];
    redis_request_t rq = {.script = SCRIPT_NONE};
    const char *key = k->buf;
    char nbuf[NUM_LEN];
    int64_t v[2];
    suspect_rc_t rc;

    head(r, &rq, SCRIPT_LOCK, &key, &k->lock_len, 1, nbuf);
    rc = script(r, ls, &rq, 2, v, "lock.lua", err);
    if (rc == SUSPECT_OK) {
        take_now(r, v[0]);
        *lu = v[1];
    }
    return rc;
}

/* decide.lua on identity i alone (p->apart: its window's keys, given the
 * lock's end lu). */
static suspect_rc_t decide_one(run_t *r, size_t i, bool dry, part_t *p,
                               int64_t lu, suspect_err_t *err)
{
    const suspect_key_t *k = &r->x->keys[i];
    redis_request_t rq = {.script = SCRIPT_NONE};
    redis_more_keys_t more;
    const char *keys[4];
    size_t lens[4], nk = 0;
    char nbuf[NUM_LEN], ttl[NUM_LEN], arg[NUM_LEN];
    int64_t v[2 + REDIS_DECIDE_PER];
    suspect_rc_t rc;

    if (p->apart) {
        redis_more_keys_apart(k, &more);
    } else {
        redis_more_keys(k, &more);
    }
    keys[nk] = k->buf;
    lens[nk++] = k->window_len;
    if (!p->apart) {
        keys[nk] = k->buf;
        lens[nk++] = k->lock_len;
    }
    keys[nk] = more.resv;
    lens[nk++] = more.resv_len;
    keys[nk] = more.offences;
    lens[nk++] = more.offences_len;
    head(r, &rq, SCRIPT_DECIDE, keys, lens, nk, nbuf);
    redis_rq_str(&rq, r->limit);
    redis_rq_str(&rq, r->window);
    redis_rq_str(&rq, r->block);
    redis_rq_arg(&rq, r->x->member, dry ? 0 : r->x->member_len);
    redis_rq_arg(&rq, ttl, redis_fmt_i64(ttl, p->ttl_ms));
    redis_rq_str(&rq, r->pct);
    redis_rq_str(&rq, r->max);
    redis_rq_str(&rq, r->period);
    if (p->apart) {
        redis_rq_arg(&rq, arg, redis_fmt_i64(arg, lu));
    } else {
        redis_rq_arg(&rq, r->x->ident[i], r->x->ident_len[i]);
    }
    rc = script(r, p->ws, &rq, 2 + REDIS_DECIDE_PER, v, "decide.lua", err);
    if (rc != SUSPECT_OK) {
        return rc;
    }
    take_now(r, v[0]);
    p->at_ms = v[0];
    p->denies = v[1] == 0;
    p->recorded = !p->denies && !dry;
    memcpy(p->v, v + 2, sizeof(p->v));
    return SUSPECT_OK;
}

/* SET lock|until PX: the lock decide.lua found earned on a window whose
 * lock lives in another slot (seed layout). */
static suspect_rc_t write_lock(run_t *r, size_t i, const part_t *p,
                               suspect_err_t *err)
{
    const suspect_key_t *k = &r->x->keys[i];
    redis_request_t rq = {.script = SCRIPT_NONE};
    char value[SUSPECT_KEY_MAX + 32], px[NUM_LEN];
    int64_t until = p->v[3];
    redisReply *reply = NULL;
    suspect_rc_t rc;

    snprintf(value, sizeof(value), "%.*s|until=%lld", (int)r->x->ident_len[i],
             r->x->ident[i], (long long)until);
    redis_rq_str(&rq, "SET");
    redis_rq_arg(&rq, k->buf, k->lock_len);
    redis_rq_str(&rq, value);
    redis_rq_str(&rq, "PX");
    redis_rq_arg(&rq, px, redis_fmt_i64(px, until - p->at_ms));
    rc = redis_route_call(r->x->t, p->ls, &rq, &reply, err);
    freeReplyObject(reply);
    return rc;
}

/* Takes back the reservations parts[0..n) took (errors ignored: one that
 * stays becomes a hit, which only denies sooner). */
static void take_back(run_t *r, const part_t *parts, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        redis_request_t rq = {.script = SCRIPT_NONE};
        char member[NUM_LEN + 2 + HIT_ID_LEN + 1];
        redis_more_keys_t more;
        redisReply *reply = NULL;
        size_t len;

        if (!parts[i].recorded || parts[i].ttl_ms == 0) {
            continue;
        }
        if (parts[i].apart) {
            redis_more_keys_apart(&r->x->keys[i], &more);
        } else {
            redis_more_keys(&r->x->keys[i], &more);
        }
        len = redis_fmt_i64(member, parts[i].at_ms);
        member[len++] = ':';
        memcpy(member + len, r->x->member, r->x->member_len);
        len += r->x->member_len;
        redis_rq_str(&rq, "ZREM");
        redis_rq_arg(&rq, more.resv, more.resv_len);
        redis_rq_arg(&rq, member, len);
        (void)redis_route_call(r->x->t, parts[i].ws, &rq, &reply, NULL);
        freeReplyObject(reply);
        REDIS_STAT_ADD(&r->x->t->stats, rollbacks, 1);
    }
}

/* Sets r up: the numbers of the rule. */
static void run_init(run_t *r, const redis_cross_t *x)
{
    const suspect_rule_t *rule = x->rule;
    bool esc = suspect_rule_escalates(rule);

    memset(r, 0, sizeof(*r));
    r->x = x;
    if (!x->server_clock) {
        r->now_len = redis_fmt_i64(r->now, x->now_ms);
    }
    redis_fmt_i64(r->limit, rule->limit_count);
    redis_fmt_i64(r->window, (int64_t)rule->window_s * 1000);
    redis_fmt_i64(r->block, (int64_t)rule->block_s * 1000);
    redis_fmt_i64(r->pct, esc ? rule->block_factor_pct : 0);
    redis_fmt_i64(r->max, esc ? suspect_rule_lock_ms(rule, UINT32_MAX) : 0);
    redis_fmt_i64(r->period, esc ? suspect_rule_offence_ms(rule) : 0);
}

/* Identity i's part: its Cluster slots, its reservation's life, its
 * call(s). */
static suspect_rc_t part_run(run_t *r, size_t i, bool dry, part_t *p,
                             suspect_err_t *err)
{
    const redis_cross_t *x = r->x;
    int64_t lu = 0;
    suspect_rc_t rc = SUSPECT_OK;

    p->ws = redis_key_slot(x->keys[i].buf, x->keys[i].window_len);
    p->ls = redis_key_slot(x->keys[i].buf, x->keys[i].lock_len);
    p->apart = p->ws != p->ls;
    p->ttl_ms = x->ttl_ms > 0 ? x->ttl_ms : i + 1 < x->n ? REDIS_RESERVE_MS : 0;
    if (p->apart) {
        rc = read_lock(r, i, p->ls, &lu, err);
    }
    return rc == SUSPECT_OK ? decide_one(r, i, dry, p, lu, err) : rc;
}

suspect_rc_t redis_cross_decide(const redis_cross_t *x, suspect_decision_t *out,
                                int64_t *now_ms, suspect_err_t *err)
{
    suspect_window_state_t st[SUSPECT_MAX_IDENTITIES];
    part_t parts[SUSPECT_MAX_IDENTITIES];
    suspect_plan_t plan;
    bool dry = false, agree = true;
    suspect_rc_t rc = SUSPECT_OK;
    run_t r;

    run_init(&r, x);
    memset(parts, 0, sizeof(parts));
    REDIS_STAT_ADD(&x->t->stats, cross_slot, 1);
    for (size_t i = 0; i < x->n && rc == SUSPECT_OK; i++) {
        rc = part_run(&r, i, dry, &parts[i], err);
        redis_decide_state(parts[i].v, &st[i]);
        dry = dry || parts[i].denies;
    }
    if (rc == SUSPECT_OK) {
        *now_ms = strtoll(r.now, NULL, 10);
        suspect_policy_evaluate(x->rule, st, x->n, *now_ms, &plan, out);
        agree = plan.record == !dry;
        for (size_t i = 0; i < x->n && agree; i++) {
            agree = redis_decide_agrees(&plan, i, parts[i].v);
        }
        if (!agree) {
            rc = suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                                 "redis: decide.lua disagrees with the "
                                 "policy");
        }
    }
    for (size_t i = 0; i < x->n && rc == SUSPECT_OK; i++) {
        if (parts[i].v[3] != 0 && parts[i].apart) {
            rc = write_lock(&r, i, &parts[i], err);
        }
    }
    if (rc != SUSPECT_OK || !out->allowed) {
        take_back(&r, parts, x->n);
    }
    return rc;
}

suspect_rc_t redis_cross_status(const redis_cross_t *x, int64_t v[7],
                                suspect_err_t *err)
{
    const suspect_key_t *k = &x->keys[0];
    redis_request_t rq = {.script = SCRIPT_NONE};
    redis_more_keys_t more;
    const char *keys[3];
    size_t lens[3];
    char nbuf[NUM_LEN];
    int64_t lu = 0;
    suspect_rc_t rc;
    run_t r;

    run_init(&r, x);
    rc = read_lock(&r, 0, redis_key_slot(k->buf, k->lock_len), &lu, err);
    if (rc != SUSPECT_OK) {
        return rc;
    }
    redis_more_keys_apart(k, &more);
    keys[0] = k->buf;
    lens[0] = k->window_len;
    keys[1] = more.resv;
    lens[1] = more.resv_len;
    keys[2] = more.offences;
    lens[2] = more.offences_len;
    head(&r, &rq, SCRIPT_STATUS, keys, lens, 3, nbuf);
    redis_rq_str(&rq, r.limit);
    redis_rq_str(&rq, r.window);
    rc = script(&r, redis_key_slot(k->buf, k->window_len), &rq, 7, v,
                "status.lua", err);
    if (rc == SUSPECT_OK) {
        v[1] = lu > v[0] ? lu : 0;
    }
    return rc;
}

suspect_rc_t redis_cross_unblock(const redis_cross_t *x, suspect_unblock_t *out,
                                 suspect_err_t *err)
{
    const suspect_key_t *k = &x->keys[0];
    int ls = redis_key_slot(k->buf, k->lock_len);
    redis_request_t rq = {.script = SCRIPT_NONE};
    const char *key = k->buf;
    redisReply *reply = NULL;
    char nbuf[NUM_LEN];
    int64_t v[4], lu = 0;
    suspect_rc_t rc;
    run_t r;

    run_init(&r, x);
    rc = read_lock(&r, 0, ls, &lu, err);
    if (rc != SUSPECT_OK) {
        return rc;
    }
    out->lock_until_ms = lu > strtoll(r.now, NULL, 10) ? lu : 0;
    redis_rq_str(&rq, "DEL");
    redis_rq_arg(&rq, k->buf, k->lock_len);
    rc = redis_route_call(x->t, ls, &rq, &reply, err);
    freeReplyObject(reply);
    if (rc != SUSPECT_OK) {
        return rc;
    }
    memset(&rq, 0, sizeof(rq));
    head(&r, &rq, SCRIPT_UNBLOCK, &key, &k->window_len, 1, nbuf);
    redis_rq_str(&rq, r.limit);
    redis_rq_str(&rq, r.window);
    rc = script(&r, redis_key_slot(k->buf, k->window_len), &rq, 4, v,
                "unblock.lua", err);
    if (rc == SUSPECT_OK) {
        out->dropped = v[2] > UINT32_MAX ? UINT32_MAX : (uint32_t)v[2];
        out->kept = v[3] > UINT32_MAX ? UINT32_MAX : (uint32_t)v[3];
    }
    return rc;
}
