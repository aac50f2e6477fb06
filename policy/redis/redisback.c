/*
 * redisback.c - writing the failover wrapper's outage journal back to the
 * Redis store (redis_store_carry(), redisstore.h, in chunks from
 * rediscarry.c; the journal is the core's carry.c).
 *
 * One EVALSHA of lua/carry.lua per REDIS_CARRY_CHUNK identities: each lock
 * unless Redis holds a longer one, each hit still in its window, with the
 * member it was journaled with (so a retry adds it once).  On a Redis
 * Cluster a script's keys must share a slot: one call per identity, and
 * two when its window and lock hash apart (the seed's keys there), the
 * lock alone and the hits alone, each in its own key's slot; carry.lua
 * never touches a key its fields leave out, so the other key is named
 * twice.
 *
 * Time: the write-back comes right before a decision, as part of it, so
 * both run against one deadline (redis_store_carry_begin()): the thread's
 * operation is held for the decision, which joins it.
 *
 * Each function here is an operation of the Redis store's table (or,
 * redis_store_carry(), called by one, rediscarry.c): store is a Redis
 * store.
 */
#include "redisstore.h"

#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "redismeter.h"
#include "redisslot.h"

#define NUM_LEN 24

/* Rebuilds ident's key (window key, ":locked", NUL) as a suspect_key_t. */
static void carry_key(const suspect_carry_t *ident, suspect_key_t *out)
{
    size_t lock_len = ident->window_len + SUSPECT_LOCK_SUFFIX_LEN;

    out->window_len = ident->window_len;
    out->lock_len = lock_len;
    memcpy(out->buf, ident->key, lock_len + 1);
}

/* What one carry.lua call writes of an identity: everything, or (the
 * seed's keys on a Cluster, whose window and lock hash apart) its lock
 * alone or its hits alone, each in its own key's slot. */
typedef enum { CARRY_ALL, CARRY_LOCK, CARRY_HITS } carry_part_t;

/* "<lock_until> <window_ms> <t> <member> ..." of ident (the part of it
 * `part` says) into a new buffer (the caller frees it); NULL when out of
 * memory. */
static char *carry_fields(const suspect_carry_t *ident, carry_part_t part,
                          size_t *len)
{
    /* a meter's hits are bucket.lua's (redis_meter_carry()) */
    size_t nhits =
        part == CARRY_LOCK || ident->algorithm != 0 ? 0 : ident->nhits;
    size_t cap = 2 * NUM_LEN + nhits * (NUM_LEN + SUSPECT_CARRY_MEMBER_LEN + 2);
    char *buf = suspect_malloc(cap), *p = buf;

    if (buf == NULL) {
        return NULL;
    }
    p += redis_fmt_i64(p, part == CARRY_HITS ? 0 : ident->lock_until_ms);
    *p++ = ' ';
    p += redis_fmt_i64(p, ident->window_ms);
    for (size_t k = 0; k < nhits; k++) {
        *p++ = ' ';
        p += redis_fmt_i64(p, ident->hits[k].at_ms);
        *p++ = ' ';
        memcpy(p, ident->hits[k].member, SUSPECT_CARRY_MEMBER_LEN);
        p += SUSPECT_CARRY_MEMBER_LEN;
    }
    *len = (size_t)(p - buf);
    return buf;
}

/* Fills rq with carry.lua's KEYS and ARGV for idents[0..n); fields[i]
 * gets the buffers it points into (freed by the caller).  A part without
 * the lock (or the hits) names the other key twice: carry.lua never
 * touches a key its fields leave out, so every key is in one slot. */
static suspect_rc_t carry_args(redisstore_t *rs, redis_request_t *rq,
                               const suspect_carry_t *idents, size_t n,
                               carry_part_t part, char *now, char **fields,
                               suspect_err_t *err)
{
    char *nkeys = now + NUM_LEN;

    redis_rq_str(rq, "EVALSHA");
    redis_rq_arg(rq, "", 0);
    redis_rq_arg(rq, nkeys, redis_fmt_i64(nkeys, (int64_t)(2 * n)));
    for (size_t i = 0; i < n; i++) {
        size_t wl = idents[i].window_len;
        size_t ll = wl + SUSPECT_LOCK_SUFFIX_LEN;
        redis_rq_arg(rq, idents[i].key, part == CARRY_LOCK ? ll : wl);
        redis_rq_arg(rq, idents[i].key, part == CARRY_HITS ? wl : ll);
    }
    redis_rq_str(rq, now);
    for (size_t i = 0; i < n; i++) {
        suspect_key_t key;
        size_t len;
        const char *v;

        carry_key(&idents[i], &key);
        v = redis_identity_of(rs->prefix_len, &key, &len);
        /* v points into key: the argument must point into idents[i]. */
        redis_rq_arg(rq, idents[i].key + (v - key.buf), len);
        fields[i] = carry_fields(&idents[i], part, &len);
        if (fields[i] == NULL) {
            return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                                   "redis: out of memory");
        }
        redis_rq_arg(rq, fields[i], len);
    }
    return SUSPECT_OK;
}

/* One carry.lua of idents[0..n) (their `part`) on slot. */
static suspect_rc_t carry_call(redisstore_t *rs, redis_thread_t *t,
                               const suspect_carry_t *idents, size_t n,
                               carry_part_t part, int slot, int64_t now_ms,
                               uint64_t *locks, uint64_t *hits,
                               suspect_err_t *err)
{
    redis_request_t rq = {.script = SCRIPT_CARRY};
    char nums[2 * NUM_LEN], *fields[REDIS_CARRY_CHUNK] = {NULL};
    redisReply *r = NULL;
    int64_t v[2];
    suspect_rc_t rc;

    nums[0] = '\0';
    if (rs->clock != SUSPECT_REDIS_CLOCK_SERVER) {
        redis_fmt_i64(nums, now_ms);
    }
    rc = carry_args(rs, &rq, idents, n, part, nums, fields, err);
    rq.nints = 2;
    rq.ints = v;
    if (rc == SUSPECT_OK) {
        rc = redis_route_call(t, slot, &rq, &r, err);
    }
    if (rc == SUSPECT_OK) {
        rc = redis_script_ints(&rq, r, "carry.lua", err);
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

/* On a Cluster: a call per identity in its slot, or two (lock, hits)
 * when its keys hash apart. */
static suspect_rc_t carry_cluster(redisstore_t *rs, redis_thread_t *t,
                                  const suspect_carry_t *idents, size_t n,
                                  int64_t now_ms, uint64_t *locks,
                                  uint64_t *hits, suspect_err_t *err)
{
    suspect_rc_t rc = SUSPECT_OK;

    for (size_t i = 0; i < n && rc == SUSPECT_OK; i++) {
        const suspect_carry_t *id = &idents[i];
        int ws = redis_key_slot(id->key, id->window_len);
        int ls =
            redis_key_slot(id->key, id->window_len + SUSPECT_LOCK_SUFFIX_LEN);

        if (ws == ls) {
            rc = carry_call(rs, t, id, 1, CARRY_ALL, ws, now_ms, locks, hits,
                            err);
        } else {
            rc = carry_call(rs, t, id, 1, CARRY_LOCK, ls, now_ms, locks, hits,
                            err);
            if (rc == SUSPECT_OK && id->algorithm == 0) {
                rc = carry_call(rs, t, id, 1, CARRY_HITS, ws, now_ms, locks,
                                hits, err);
            }
        }
        if (rc == SUSPECT_OK && id->algorithm != 0) {
            rc = redis_meter_carry(rs, t, id, ws, now_ms, hits, err);
        }
    }
    return rc;
}

suspect_rc_t redis_store_carry(suspect_store_t *store,
                               const suspect_carry_t *idents, size_t n,
                               int64_t now_ms, uint64_t *locks, uint64_t *hits,
                               suspect_err_t *err)
{
    redisstore_t *rs = (redisstore_t *)store;
    redis_thread_t *t;
    suspect_rc_t rc;

    if (n > REDIS_CARRY_CHUNK) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "redis: cannot carry that");
    }
    t = redis_thread_get(&rs->pool, err);
    if (t == NULL) {
        return SUSPECT_E_NOMEM;
    }
    if (!t->held) {
        redis_op_next(t); /* not within a held operation: one of its own */
    }
    if (rs->pool.addr.kind == REDIS_CLUSTER) {
        return carry_cluster(rs, t, idents, n, now_ms, locks, hits, err);
    }
    rc = carry_call(rs, t, idents, n, CARRY_ALL, -1, now_ms, locks, hits, err);
    for (size_t i = 0; i < n && rc == SUSPECT_OK; i++) {
        if (idents[i].algorithm != 0) {
            rc = redis_meter_carry(rs, t, &idents[i], -1, now_ms, hits, err);
        }
    }
    return rc;
}

int64_t redis_store_carry_begin(suspect_store_t *store)
{
    redis_thread_t *t;

    if ((t = redis_thread_get(&((redisstore_t *)store)->pool, NULL)) == NULL) {
        return 0;
    }
    redis_op_next(t);
    t->held = true;
    return t->deadline;
}

void redis_store_carry_end(suspect_store_t *store)
{
    redis_thread_t *t;

    if ((t = redis_thread_get(&((redisstore_t *)store)->pool, NULL)) != NULL) {
        t->held = false;
    }
}
