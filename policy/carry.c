/*
 * carry.c - the journal of what the failover wrapper decided on its local
 * store while the primary was failing (carry.h).
 *
 * While the primary fails and the fail mode is "local", every hit the local
 * store admits and every lock it holds for a denied identity is journaled
 * here, grouped by identity (and, in any mode, the locks the wrapper's lock
 * cache enforces meanwhile, and blocks the primary refused); when the
 * primary answers again, the wrapper carries the journal back, so the
 * identities this host locked stay locked on every host and the hits it
 * admitted count everywhere.
 *
 * Bounds: at most CARRY_MAX_IDENTS identities and CARRY_MAX_HITS hits; what
 * does not fit is dropped and counted.  A hit that has left its window is
 * worth nothing once the primary is back, so each new hit first forgets the
 * identity's hits older than its window: a long outage keeps at most a
 * window's worth per identity.  Locks are kept once per identity, the
 * latest end winning.
 *
 * Each hit gets its member (a GUID-like id, hitid.h) when journaled:
 * carrying the same hit twice (a retry after a timeout whose write did
 * happen) adds it once.  A metered rule's hit (a token bucket or a
 * sliding counter, meter.h) also keeps its cost, and its identity the
 * rule's algorithm, limit and burst: the primary takes it into the
 * identity's meter at its own time (suspect_meter_take()); such a hit
 * weighs for suspect_meter_span_ms() rather than a window.
 *
 * Sending: a primary with a carry operation in the store interface (the
 * Redis store: lua/carry.lua, a few identities per call) takes locks and
 * hits whole; a primary without one gets the locks only, by status and
 * block.  A failed send stops; the wrapper journals the rest again for the
 * next time the primary answers.  On a primary whose write-back is part of
 * the decision it comes before (suspect_store_ops_t.carry_begin), both,
 * and the wait for another thread's write-back, run against one deadline.
 *
 * Lookup: an open-addressing table of 2 x CARRY_MAX_IDENTS cells, indexed
 * by a keyed SipHash of the lock key (the wrapper's secret), both halves
 * compared before the key itself.  Identities are never removed
 * (forgetting clears their lock and hits), so there are no tombstones.
 */
#include "carry.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "clock.h"
#include "meter.h"

#define INDEX_CELLS (2 * CARRY_MAX_IDENTS) /* a power of two */

/* Identities handed to a store's carry operation per call. */
#define CARRY_VIEWS 64

_Static_assert(HIT_ID_LEN == SUSPECT_CARRY_MEMBER_LEN,
               "a journaled hit's member is a hit id");

/* Rebuilds ident's key (window key, ":locked", NUL) as a suspect_key_t. */
static void ident_key(const carry_ident_t *ident, suspect_key_t *out)
{
    size_t lock_len = ident->window_len + SUSPECT_LOCK_SUFFIX_LEN;

    out->window_len = ident->window_len;
    out->lock_len = lock_len;
    memcpy(out->buf, ident->key, lock_len + 1);
}

suspect_rc_t carry_init(carry_t *j, const suspect_siphash_key_t *secret,
                        suspect_err_t *err)
{
    memset(j, 0, sizeof(*j));
    j->secret = *secret;
    return hit_ids_init(&j->ids, err);
}

void carry_free(carry_t *j)
{
    for (size_t i = 0; i < j->nidents; i++) {
        free(j->idents[i].key);
        free(j->idents[i].hits);
    }
    free(j->idents);
    free(j->index);
    j->idents = NULL;
    j->index = NULL;
    j->nidents = 0;
    j->nhits = 0;
}

static bool same_ident(const carry_ident_t *id, const uint64_t h[2],
                       const suspect_key_t *key)
{
    return id->h[0] == h[0] && id->h[1] == h[1] &&
           id->window_len == key->window_len &&
           memcmp(id->key, key->buf, key->window_len) == 0;
}

/* The cell of key's identity in the index: its own, or the empty one
 * where it would go. */
static uint32_t *index_cell(carry_t *j, const uint64_t h[2],
                            const suspect_key_t *key)
{
    size_t s = h[0] & (INDEX_CELLS - 1);

    while (j->index[s] != 0 &&
           !same_ident(&j->idents[j->index[s] - 1], h, key)) {
        s = (s + 1) & (INDEX_CELLS - 1);
    }
    return &j->index[s];
}

/* key's identity, added when create; NULL when absent (or full, or out
 * of memory, when create). */
static carry_ident_t *find(carry_t *j, const suspect_key_t *key, bool create)
{
    carry_ident_t *id;
    uint64_t h[2];
    uint32_t *cell;

    if (j->index == NULL) {
        if (!create) {
            return NULL;
        }
        j->index = suspect_calloc(INDEX_CELLS, sizeof(*j->index));
        j->idents = suspect_calloc(CARRY_MAX_IDENTS, sizeof(*j->idents));
        if (j->index == NULL || j->idents == NULL) {
            free(j->index);
            free(j->idents);
            j->index = NULL;
            j->idents = NULL;
            return NULL;
        }
    }
    suspect_siphash128(&j->secret, key->buf, key->lock_len, h);
    cell = index_cell(j, h, key);
    if (*cell != 0) {
        return &j->idents[*cell - 1];
    }
    if (!create || j->nidents == CARRY_MAX_IDENTS) {
        return NULL;
    }
    id = &j->idents[j->nidents];
    memset(id, 0, sizeof(*id));
    id->key = suspect_strndup(key->buf, key->lock_len);
    if (id->key == NULL) {
        return NULL;
    }
    id->h[0] = h[0];
    id->h[1] = h[1];
    id->window_len = key->window_len;
    *cell = (uint32_t)++j->nidents;
    return id;
}

bool carry_lock(carry_t *j, const suspect_key_t *key, int64_t until_ms)
{
    carry_ident_t *id = find(j, key, true);

    if (id == NULL) {
        j->dropped++;
        return false;
    }
    if (until_ms > id->lock_until_ms) {
        id->lock_until_ms = until_ms;
    }
    return true;
}

/* Drops id's hits at or before cut (they are in time order). */
static void forget_before(carry_t *j, carry_ident_t *id, int64_t cut)
{
    size_t k = 0;

    while (k < id->nhits && id->hits[k].at_ms <= cut) {
        k++;
    }
    if (k > 0) {
        memmove(id->hits, id->hits + k, (id->nhits - k) * sizeof(*id->hits));
        id->nhits -= k;
        j->nhits -= k;
    }
}

/* How long a hit of id weighs: its window, or its meter's span. */
static int64_t ident_span_ms(const carry_ident_t *id)
{
    suspect_rule_t r;

    memset(&r, 0, sizeof(r));
    r.limit_count = id->limit_count;
    r.window_s = (uint32_t)(id->window_ms / 1000);
    r.algorithm = id->algorithm;
    r.burst = id->burst;
    return id->algorithm != 0 ? suspect_meter_span_ms(&r) : id->window_ms;
}

/* Appends a hit of units with the given member to id (member NULL: draw
 * one). */
static bool add_hit(carry_t *j, carry_ident_t *id, int64_t at_ms,
                    uint32_t units, const char *member)
{
    suspect_carry_hit_t *hit;

    forget_before(j, id, at_ms - ident_span_ms(id));
    if (j->nhits == CARRY_MAX_HITS) {
        return false;
    }
    if (id->nhits == id->hits_cap) {
        size_t cap = id->hits_cap != 0 ? 2 * id->hits_cap : 4;
        suspect_carry_hit_t *grown =
            suspect_realloc(id->hits, cap * sizeof(*id->hits));
        if (grown == NULL) {
            return false;
        }
        id->hits = grown;
        id->hits_cap = cap;
    }
    /* Keep time order: a late caller's hit goes before newer ones. */
    hit = &id->hits[id->nhits];
    while (hit > id->hits && hit[-1].at_ms > at_ms) {
        hit[0] = hit[-1];
        hit--;
    }
    hit->at_ms = at_ms;
    hit->units = units;
    if (member != NULL) {
        memcpy(hit->member, member, sizeof(hit->member));
    } else {
        hit_ids_next(&j->ids, hit->member);
    }
    id->nhits++;
    j->nhits++;
    return true;
}

/* Notes rule's window (and meter) on id. */
static void ident_rule(carry_ident_t *id, const suspect_rule_t *rule)
{
    bool metered = suspect_rule_metered(rule);

    id->window_ms = (int64_t)rule->window_s * 1000;
    id->algorithm = metered ? rule->algorithm : 0;
    id->limit_count = metered ? rule->limit_count : 0;
    id->burst = metered ? rule->burst : 0;
}

bool carry_hit(carry_t *j, const suspect_key_t *key, const suspect_rule_t *rule,
               int64_t at_ms)
{
    carry_ident_t *id = find(j, key, true);
    uint32_t units = suspect_rule_metered(rule) ? suspect_rule_cost(rule) : 1;

    if (id != NULL) {
        ident_rule(id, rule);
    }
    if (id == NULL || !add_hit(j, id, at_ms, units, NULL)) {
        j->dropped++;
        return false;
    }
    return true;
}

void carry_forget(carry_t *j, const suspect_key_t *key, unsigned what)
{
    carry_ident_t *id = find(j, key, false);

    if (id == NULL) {
        return;
    }
    if (what & SUSPECT_RESET_LOCK) {
        id->lock_until_ms = 0;
    }
    if (what & SUSPECT_RESET_WINDOW) {
        j->nhits -= id->nhits;
        id->nhits = 0;
    }
}

bool carry_empty(const carry_t *j)
{
    for (size_t i = 0; i < j->nidents; i++) {
        if (j->idents[i].lock_until_ms != 0 || j->idents[i].nhits != 0) {
            return false;
        }
    }
    return true;
}

void carry_take(carry_t *j, carry_t *out)
{
    *out = *j;
    j->idents = NULL;
    j->index = NULL;
    j->nidents = 0;
    j->nhits = 0;
}

void carry_put_back(carry_t *j, const carry_t *src, size_t from)
{
    for (size_t i = from; i < src->nidents; i++) {
        const carry_ident_t *s = &src->idents[i];
        carry_ident_t *id;
        suspect_key_t key;

        ident_key(s, &key);
        id = find(j, &key, true);
        if (id == NULL) {
            j->dropped += (s->lock_until_ms != 0) + s->nhits;
            continue;
        }
        if (s->lock_until_ms > id->lock_until_ms) {
            id->lock_until_ms = s->lock_until_ms;
        }
        if (s->nhits > 0) {
            id->window_ms = s->window_ms;
            id->algorithm = s->algorithm;
            id->limit_count = s->limit_count;
            id->burst = s->burst;
        }
        for (size_t k = 0; k < s->nhits; k++) {
            if (!add_hit(j, id, s->hits[k].at_ms, s->hits[k].units,
                         s->hits[k].member)) {
                j->dropped++;
            }
        }
    }
}

/* ---- recording and sending -----------------------------------------------
 */

size_t carry_record(carry_t *j, suspect_store_t *local,
                    const suspect_rule_t *rule, const suspect_key_t *keys,
                    size_t n, int64_t now_ms, const suspect_decision_t *d)
{
    size_t dropped = 0;

    for (size_t i = 0; i < n; i++) {
        suspect_status_t st;

        if (d->allowed) {
            dropped += !carry_hit(j, &keys[i], rule, now_ms);
        } else if (suspect_store_status(local, rule, &keys[i], now_ms, &st,
                                        NULL) == SUSPECT_OK &&
                   st.locked_until_ms > now_ms) {
            /* Every identity over the limit was locked, not only the one
             * the decision reports. */
            dropped += !carry_lock(j, &keys[i], st.locked_until_ms);
        }
    }
    return dropped;
}

/* Writes ident's lock to a primary without a carry operation, unless it
 * holds a longer one. */
static suspect_rc_t send_lock(suspect_store_t *primary,
                              const carry_ident_t *ident, int64_t now_ms,
                              uint64_t *locks, suspect_err_t *err)
{
    static const suspect_rule_t any = {"Carry", 1, 1, 0, 0, 0, 0, 0, 0, 0, 0};
    suspect_status_t st;
    suspect_key_t key;
    suspect_rc_t rc;

    if (ident->lock_until_ms <= now_ms) {
        return SUSPECT_OK;
    }
    ident_key(ident, &key);
    rc = suspect_store_status(primary, &any, &key, now_ms, &st, err);
    if (rc != SUSPECT_OK || st.locked_until_ms >= ident->lock_until_ms) {
        return rc;
    }
    rc = suspect_store_block(primary, &key, now_ms, ident->lock_until_ms, err);
    *locks += rc == SUSPECT_OK;
    return rc;
}

/* A store's view of ident (borrowing its key and hits). */
static void ident_view(const carry_ident_t *ident, suspect_carry_t *out)
{
    out->key = ident->key;
    out->window_len = ident->window_len;
    out->lock_until_ms = ident->lock_until_ms;
    out->window_ms = ident->window_ms;
    out->algorithm = ident->algorithm;
    out->limit_count = ident->limit_count;
    out->burst = ident->burst;
    out->nhits = ident->nhits;
    out->hits = ident->hits;
}

suspect_rc_t carry_send(const carry_t *j, suspect_store_t *primary,
                        int64_t now_ms, size_t *done, uint64_t *locks,
                        uint64_t *hits, suspect_err_t *err)
{
    suspect_rc_t rc = SUSPECT_OK;

    *done = 0;
    while (*done < j->nidents && rc == SUSPECT_OK) {
        suspect_carry_t view[CARRY_VIEWS];
        size_t k = 0, sent = 0;

        if (primary->ops->carry == NULL) {
            rc = send_lock(primary, &j->idents[*done], now_ms, locks, err);
            *done += rc == SUSPECT_OK;
            continue;
        }
        while (k < CARRY_VIEWS && *done + k < j->nidents) {
            ident_view(&j->idents[*done + k], &view[k]);
            k++;
        }
        rc = primary->ops->carry(primary, view, k, now_ms, &sent, locks, hits,
                                 err);
        *done += sent;
    }
    return rc;
}

/* ---- shared by threads ---------------------------------------------------
 */

suspect_rc_t carry_sync_init(carry_sync_t *s,
                             const suspect_siphash_key_t *secret,
                             suspect_err_t *err)
{
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->send_mu, NULL);
    s->pending = 0;
    s->locks = 0;
    s->hits = 0;
    s->dropped = 0;
    return carry_init(&s->journal, secret, err);
}

void carry_sync_destroy(carry_sync_t *s)
{
    carry_free(&s->journal);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->send_mu);
}

void carry_sync_record(carry_sync_t *s, suspect_store_t *local,
                       const suspect_rule_t *rule, const suspect_key_t *keys,
                       size_t n, int64_t now_ms, const suspect_decision_t *d)
{
    size_t dropped;

    pthread_mutex_lock(&s->mu);
    dropped = carry_record(&s->journal, local, rule, keys, n, now_ms, d);
    __atomic_store_n(&s->pending, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&s->mu);
    __atomic_add_fetch(&s->dropped, dropped, __ATOMIC_RELAXED);
}

void carry_sync_lock(carry_sync_t *s, const suspect_key_t *key,
                     int64_t until_ms)
{
    bool kept;

    pthread_mutex_lock(&s->mu);
    kept = carry_lock(&s->journal, key, until_ms);
    __atomic_store_n(&s->pending, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&s->mu);
    __atomic_add_fetch(&s->dropped, !kept, __ATOMIC_RELAXED);
}

void carry_sync_forget(carry_sync_t *s, const suspect_key_t *key, unsigned what)
{
    pthread_mutex_lock(&s->mu);
    carry_forget(&s->journal, key, what);
    pthread_mutex_unlock(&s->mu);
}

/* Takes the journal, sends it, journals again what was not sent (the
 * caller holds send_mu). */
static suspect_rc_t send_journal(carry_sync_t *s, suspect_store_t *primary,
                                 int64_t now_ms, suspect_err_t *err)
{
    carry_t batch;
    uint64_t locks = 0, hits = 0;
    size_t done = 0;
    suspect_rc_t rc = SUSPECT_OK;

    pthread_mutex_lock(&s->mu);
    carry_take(&s->journal, &batch);
    __atomic_store_n(&s->pending, 0, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&s->mu);
    if (!carry_empty(&batch)) {
        rc = carry_send(&batch, primary, now_ms, &done, &locks, &hits, err);
    }
    __atomic_add_fetch(&s->locks, locks, __ATOMIC_RELAXED);
    __atomic_add_fetch(&s->hits, hits, __ATOMIC_RELAXED);
    if (rc != SUSPECT_OK) {
        pthread_mutex_lock(&s->mu);
        carry_put_back(&s->journal, &batch, done);
        __atomic_store_n(&s->pending, 1, __ATOMIC_RELEASE);
        pthread_mutex_unlock(&s->mu);
    }
    carry_free(&batch);
    return rc;
}

/* Starts the operation the write-back shares with the decision after it,
 * on a primary that has one: its deadline (CLOCK_MONOTONIC ns), 0 = none. */
static int64_t carry_begin(suspect_store_t *primary)
{
    return primary->ops->carry_begin != NULL
               ? primary->ops->carry_begin(primary)
               : 0;
}

/* Ends it when no decision follows. */
static void carry_end(suspect_store_t *primary)
{
    if (primary->ops->carry_end != NULL) {
        primary->ops->carry_end(primary);
    }
}

/* Takes send_mu: waiting until deadline_ns when wait (0: no deadline),
 * else only when free.  False when not taken. */
static bool take_sender(carry_sync_t *s, bool wait, int64_t deadline_ns)
{
    if (!wait) {
        return pthread_mutex_trylock(&s->send_mu) == 0;
    }
    if (deadline_ns != 0) {
        struct timespec at = ns_timespec(deadline_ns);

        return pthread_mutex_clocklock(&s->send_mu, CLOCK_MONOTONIC, &at) == 0;
    }
    return pthread_mutex_lock(&s->send_mu) == 0;
}

suspect_rc_t carry_sync_flush(carry_sync_t *s, suspect_store_t *primary,
                              int64_t now_ms, bool wait, bool *busy,
                              suspect_err_t *err)
{
    suspect_rc_t rc = SUSPECT_OK;
    int64_t d;

    *busy = false;
    if (!__atomic_load_n(&s->pending, __ATOMIC_ACQUIRE)) {
        return SUSPECT_OK;
    }
    d = carry_begin(primary);
    if (!take_sender(s, wait, d)) {
        carry_end(primary);
        *busy = !wait;
        return wait ? suspect_err_set(err, SUSPECT_E_TIMEOUT, NULL, 0,
                                      "%s: the outage journal is still "
                                      "being written back by another request",
                                      suspect_store_name(primary))
                    : SUSPECT_OK;
    }
    if (__atomic_load_n(&s->pending, __ATOMIC_ACQUIRE)) {
        rc = send_journal(s, primary, now_ms, err);
    }
    pthread_mutex_unlock(&s->send_mu);
    if (rc != SUSPECT_OK) {
        carry_end(primary);
    }
    return rc;
}
