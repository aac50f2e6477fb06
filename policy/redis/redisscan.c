/*
 * redisscan.c - the identities a Redis store has locked now, for
 * operators (suspect_redis_foreach_locked() in redisstore.c hands it the
 * store's connection pool and clock).
 *
 * Algorithm: SCAN with MATCH "<prefix>*:locked" and COUNT 500 walks the
 * keyspace a slice per call, so Redis is never blocked for long however
 * large the database; each slice's keys are read with one MGET per
 * MGET_BATCH keys, and a lock's end is read from its value as
 * lua/status.lua reads it ("|until=<ms>" at the end; else now + PTTL,
 * the .NET system's locks; no TTL at all: a year).  Only locks live at now
 * are reported, as their window keys (":locked" cut off).
 *
 * Not a snapshot: a lock set or dropped during the walk may or may not be
 * listed, and SCAN may return a key twice (the caller dedupes if it
 * counts).  Keys that are not strings (MGET answers nil) and keys longer
 * than any Suspect key are skipped.
 *
 * A Redis Cluster is walked master by master (SCAN covers one node); the
 * values are read with one GET-sized MGET per key there, each sent to the
 * master of its slot (a key may have moved meanwhile: MOVED is followed),
 * since an MGET's keys must share a slot.
 *
 * Time: each command of the walk has the store's timeout of its own
 * (redis_op_next()): a walk of a large database takes as long as it takes.
 */
#include "redisscan.h"

#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

#include "redisslot.h"

#define NUM_LEN 24

#define SCAN_COUNT  "500"
#define MGET_BATCH  (REDIS_MAX_ARGS - 2)
#define PATTERN_MAX (2 * SUSPECT_KEY_MAX + 16)
#define YEAR_MS     31536000000LL /* a lock without a TTL: as status.lua */

typedef struct scan {
    redis_thread_t *t;
    int master;   /* the node SCAN walks */
    size_t batch; /* keys per MGET: 1 on a Cluster */
    bool cluster;
    int64_t now_ms;
    suspect_redis_locked_fn fn;
    void *ud;
    bool stop;
} scan_t;

/* The SCAN pattern of the lock keys whose window key starts with match:
 * glob specials escaped, then "*:locked". */
static suspect_rc_t scan_pattern(const char *match, char *buf,
                                 suspect_err_t *err)
{
    static const char tail[] = "*" SUSPECT_LOCK_SUFFIX;
    size_t n = 0;

    for (const char *p = match != NULL ? match : ""; *p != '\0'; p++) {
        if (n + 2 + sizeof(tail) > PATTERN_MAX) {
            return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                                   "redis: key prefix to list is too long");
        }
        if (strchr("*?[]\\", *p) != NULL) {
            buf[n++] = '\\';
        }
        buf[n++] = *p;
    }
    memcpy(buf + n, tail, sizeof(tail));
    return SUSPECT_OK;
}

/* The end in a lock value ("...|until=<ms>" at its end, as status.lua
 * matches it), or -1 when it has none. */
static int64_t value_until(const char *v, size_t len)
{
    static const char tag[] = "|until=";
    const char *bar = NULL;
    int64_t ms = 0;

    for (size_t i = len; i-- > 0 && bar == NULL;) {
        bar = v[i] == '|' ? v + i : NULL;
    }
    if (bar == NULL || (size_t)(v + len - bar) < sizeof(tag) ||
        (size_t)(v + len - bar) > sizeof(tag) + 17 ||
        memcmp(bar, tag, sizeof(tag) - 1) != 0) {
        return -1;
    }
    for (const char *p = bar + sizeof(tag) - 1; p < v + len; p++) {
        if (*p < '0' || *p > '9') {
            return -1;
        }
        ms = ms * 10 + (*p - '0');
    }
    return ms;
}

/* Runs rq (whose first key, if any, is argv[1]) where its key lives, with
 * a deadline of its own. */
static suspect_rc_t scan_route(scan_t *s, redis_request_t *rq, redisReply **r,
                               suspect_err_t *err)
{
    int slot = s->cluster && rq->argc > 1
                   ? redis_key_slot(rq->argv[1], rq->len[1])
                   : -1;

    redis_op_next(s->t);
    return redis_route_call(s->t, slot, rq, r, err);
}

/* Runs a one-argument command where its key lives. */
static suspect_rc_t scan_cmd(scan_t *s, const char *cmd, const char *arg,
                             size_t len, redisReply **r, suspect_err_t *err)
{
    redis_request_t rq = {.script = SCRIPT_NONE};

    redis_rq_str(&rq, cmd);
    if (arg != NULL) {
        redis_rq_arg(&rq, arg, len);
    }
    return scan_route(s, &rq, r, err);
}

/* The end of the lock key k from its PTTL (a lock without "|until="). */
static suspect_rc_t pttl_until(scan_t *s, const redisReply *k, int64_t *until,
                               suspect_err_t *err)
{
    redisReply *r;
    suspect_rc_t rc = scan_cmd(s, "PTTL", k->str, k->len, &r, err);

    *until = 0;
    if (rc == SUSPECT_OK && r->type == REDIS_REPLY_INTEGER) {
        *until = r->integer == -1 ? s->now_ms + YEAR_MS
                 : r->integer > 0 ? s->now_ms + r->integer
                                  : 0;
    }
    freeReplyObject(r);
    return rc;
}

/* Reports the lock key k (its window key) if it is live. */
static void scan_report(scan_t *s, const redisReply *k, int64_t until)
{
    char key[SUSPECT_KEY_MAX];
    size_t len = k->len - SUSPECT_LOCK_SUFFIX_LEN;

    /* Longer keys are not Suspect's. */
    if (until > s->now_ms && len < sizeof(key)) {
        memcpy(key, k->str, len);
        key[len] = '\0';
        s->stop = s->fn(s->ud, key, len, until) != 0;
    }
}

/* Reads the values of the lock keys keys[0..n) (one MGET) and reports. */
static suspect_rc_t scan_batch(scan_t *s, redisReply **keys, size_t n,
                               suspect_err_t *err)
{
    redis_request_t rq = {.script = SCRIPT_NONE};
    redisReply *r;
    suspect_rc_t rc;

    redis_rq_str(&rq, "MGET");
    for (size_t i = 0; i < n; i++) {
        redis_rq_arg(&rq, keys[i]->str, keys[i]->len);
    }
    rc = scan_route(s, &rq, &r, err);
    if (rc == SUSPECT_OK &&
        (r->type != REDIS_REPLY_ARRAY || r->elements != n)) {
        rc = suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                             "redis: MGET answered an unexpected shape");
    }
    for (size_t i = 0; rc == SUSPECT_OK && i < n && !s->stop; i++) {
        const redisReply *v = r->element[i];
        int64_t until;

        if (v->type != REDIS_REPLY_STRING) {
            continue; /* gone meanwhile, or not a string */
        }
        until = value_until(v->str, v->len);
        if (until < 0) {
            rc = pttl_until(s, keys[i], &until, err);
        }
        if (rc == SUSPECT_OK) {
            scan_report(s, keys[i], until);
        }
    }
    freeReplyObject(r);
    return rc;
}

/* Checks a SCAN reply and copies its cursor; *keys, *n: its keys. */
static suspect_rc_t scan_reply(const redisReply *r, char cursor[NUM_LEN],
                               redisReply ***keys, size_t *n,
                               suspect_err_t *err)
{
    const redisReply *c, *ks;

    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        (c = r->element[0])->type != REDIS_REPLY_STRING || c->len == 0 ||
        c->len >= NUM_LEN || (ks = r->element[1])->type != REDIS_REPLY_ARRAY) {
        return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                               "redis: SCAN answered an unexpected shape");
    }
    for (size_t i = 0; i < ks->elements; i++) {
        if (ks->element[i]->type != REDIS_REPLY_STRING ||
            ks->element[i]->len < SUSPECT_LOCK_SUFFIX_LEN) {
            return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                                   "redis: SCAN answered a bad key");
        }
    }
    memcpy(cursor, c->str, c->len);
    cursor[c->len] = '\0';
    *keys = ks->element;
    *n = ks->elements;
    return SUSPECT_OK;
}

/* Redis TIME in epoch ms into s->now_ms. */
static suspect_rc_t server_now(scan_t *s, suspect_err_t *err)
{
    redisReply *r;
    suspect_rc_t rc = scan_cmd(s, "TIME", NULL, 0, &r, err);

    if (rc == SUSPECT_OK && (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
                             r->element[0]->type != REDIS_REPLY_STRING ||
                             r->element[1]->type != REDIS_REPLY_STRING)) {
        rc = suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                             "redis: TIME answered an unexpected shape");
    }
    if (rc == SUSPECT_OK) {
        s->now_ms = strtoll(r->element[0]->str, NULL, 10) * 1000 +
                    strtoll(r->element[1]->str, NULL, 10) / 1000;
    }
    freeReplyObject(r);
    return rc;
}

/* Walks master s->master with SCAN from cursor 0 to the end. */
static suspect_rc_t scan_master(scan_t *s, const char *pattern,
                                suspect_err_t *err)
{
    char cursor[NUM_LEN] = "0";
    suspect_rc_t rc = SUSPECT_OK;

    do {
        redis_request_t rq = {.script = SCRIPT_NONE};
        redisReply *r = NULL, **keys = NULL;
        size_t n = 0;

        redis_rq_str(&rq, "SCAN");
        redis_rq_str(&rq, cursor);
        redis_rq_str(&rq, "MATCH");
        redis_rq_str(&rq, pattern);
        redis_rq_str(&rq, "COUNT");
        redis_rq_str(&rq, SCAN_COUNT);
        redis_op_next(s->t);
        rc = redis_route_call_master(s->t, s->master, &rq, &r, err);
        if (rc == SUSPECT_OK) {
            rc = scan_reply(r, cursor, &keys, &n, err);
        }
        for (size_t i = 0; rc == SUSPECT_OK && i < n && !s->stop;
             i += s->batch) {
            rc = scan_batch(s, keys + i, n - i < s->batch ? n - i : s->batch,
                            err);
        }
        freeReplyObject(r);
    } while (rc == SUSPECT_OK && !s->stop && strcmp(cursor, "0") != 0);
    return rc;
}

/* Walks the live locks under match: see redisscan.h. */
suspect_rc_t redis_scan_locked(redis_pool_t *pool, suspect_redis_clock_t clock,
                               const char *match, int64_t now_ms,
                               suspect_redis_locked_fn fn, void *ud,
                               suspect_err_t *err)
{
    char pattern[PATTERN_MAX];
    int masters[REDIS_MAX_NODES];
    size_t nmasters = 0;
    scan_t s = {NULL, 0, MGET_BATCH, false, now_ms, fn, ud, false};
    suspect_rc_t rc;

    rc = scan_pattern(match, pattern, err);
    if (rc != SUSPECT_OK) {
        return rc;
    }
    s.t = redis_op_begin(pool, err);
    if (s.t == NULL) {
        return SUSPECT_E_NOMEM;
    }
    s.cluster = pool->addr.kind == REDIS_CLUSTER;
    s.batch = s.cluster ? 1 : MGET_BATCH;
    if (clock == SUSPECT_REDIS_CLOCK_SERVER) {
        rc = server_now(&s, err);
    }
    if (rc == SUSPECT_OK) {
        rc = redis_route_masters(s.t, masters, REDIS_MAX_NODES, &nmasters, err);
    }
    for (size_t i = 0; i < nmasters && rc == SUSPECT_OK && !s.stop; i++) {
        s.master = masters[i];
        rc = scan_master(&s, pattern, err);
    }
    return rc;
}
