/*
 * memstore.c - the in-process store: exact under threads, bounded.
 *
 * What.  For every identity (window key) the store keeps the timestamps of
 * its hits still in the window and the end of its lock, and decides
 * requests with suspect_policy_evaluate(), the one definition of the
 * semantics.  It is the default store of suspect-fcgi (one process, many
 * threads) and the "local" fail mode of the remote stores.
 *
 * Identities.  An entry is named by the 128-bit SipHash-2-4 of its window
 * key under a secret drawn from getrandom() (or /dev/urandom) when the store
 * is made.  The key string itself is not kept: a 64 KiB hostile value costs
 * the same 16 bytes as a short one, and since the secret is unknown to
 * clients they can neither aim keys at one chain nor make two identities
 * share an entry (a 128-bit collision is out of reach; a decision that meets
 * one anyway fails with SUSPECT_E_STORE rather than mixing identities).
 * h[0] picks the shard, h[1] the bucket.
 *
 * Layout.  S shards (a power of two, default 64), each with its own mutex,
 * a chained hash table of power-of-two size (doubling when it holds more
 * entries than buckets, up to the shard's bound), an LRU list (head = most
 * recently used) and counters of entries and bytes.  An entry is 64 bytes
 * (checked below) followed by a ring of int64 hit timestamps:
 *
 *   h[2] 16 | chain next 8 | lru prev, next 16 | lock_until_ms 8 |
 *   head, count, cap, window_s 4 x 4 | hits[cap] 8 each
 *
 * The ring holds the hits oldest first from index head, ascending (a hit is
 * recorded at max(now, newest), so a clock that steps back a little keeps
 * it sorted).  It starts at min(limit, 4) slots and doubles, up to what the
 * rule needs (limit_count, or the current count + 1 if a lowered limit left
 * more hits than that); it never shrinks.  Growing it reallocates the entry,
 * which is then relinked in its chain and the LRU list.  An entry's expiry
 * is not stored: it is max(newest hit + window_s, lock_until_ms), with
 * window_s the window of the last decision on it.
 *
 * A decision (ms_decide):
 *   1. hash the n keys, lock their shards in ascending index (each once), so
 *      that threads deciding overlapping sets never deadlock;
 *   2. find each entry (no allocation), drop hits with t <= now - window,
 *      compute its suspect_window_state_t (a missing entry is all zero);
 *   3. suspect_policy_evaluate();
 *   4. reserve: create the entries the plan writes to (a lock or a hit) and
 *      grow rings that must take a hit; on failure, free what this step
 *      created and return SUSPECT_E_NOMEM, the store unchanged in meaning;
 *   5. apply (cannot fail): new locks, the hit on every identity when
 *      allowed, window_s;
 *   6. free entries left with no hit and no live lock, move the others to
 *      the LRU head, unlock.
 *
 * Bounds.  A shard holds at most ceil(max_entries / S) entries; S is lowered
 * (to a power of two) when max_entries is smaller than S, so the store holds
 * at most max_entries + S - 1.  Every insert first frees up to 2 expired
 * entries at the LRU tail (as nginx limit_req does).  If the shard is still
 * full, it looks at up to 16 entries from the tail and drops the first
 * expired one, else the first one that is not locked, else the tail itself.
 * Entries of the decision in progress are never evicted by it; if a shard
 * holds nothing else it goes over its bound by at most n - 1 entries until
 * its next insert.
 *
 * Ownership.  The store owns its shards and entries; keys and rules are
 * borrowed for the call.  Everything is reached under the shard's mutex,
 * including the byte and entry counters that size() and bytes() add up.
 */
#include "suspect_store_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "alloc.h"
#include "siphash.h"

#define DEFAULT_MAX_ENTRIES 200000
#define DEFAULT_SHARDS      64
#define MAX_SHARDS          65536
#define INITIAL_BUCKETS     8
#define INITIAL_RING        4
#define EXPIRE_ON_INSERT    2  /* expired tail entries freed on every insert */
#define EVICT_SCAN          16 /* tail entries looked at to evict one */

typedef struct entry {
    uint64_t h[2];
    struct entry *next; /* hash chain */
    struct entry *lru_prev, *lru_next;
    int64_t lock_until_ms; /* locked while now < lock_until_ms; 0 = none */
    uint32_t head;         /* ring index of the oldest hit */
    uint32_t count;        /* hits in the ring */
    uint32_t cap;          /* ring slots */
    uint32_t window_s;     /* window of the last decision, for expiry */
    int64_t hits[];
} entry_t;

_Static_assert(sizeof(void *) != 8 || sizeof(entry_t) == 64,
               "an entry is 64 bytes before its hits on 64-bit hosts");

typedef struct shard {
    pthread_mutex_t mu;
    entry_t **buckets;
    size_t nbuckets; /* a power of two */
    size_t count;    /* entries */
    size_t bytes;    /* entry and bucket allocations */
    entry_t *lru_head, *lru_tail;
} shard_t;

/* Shards padded to whole cache lines, so two mutexes never share one. */
typedef union shard_slot {
    shard_t s;
    char pad[(sizeof(shard_t) + 63) / 64 * 64];
} shard_slot_t;

typedef struct memstore {
    suspect_store_t base; /* first: a suspect_store_t * is a memstore_t * */
    suspect_siphash_key_t secret;
    size_t nshards; /* a power of two */
    size_t max_per_shard;
    size_t max_buckets; /* a power of two >= max_per_shard */
    void *slots_raw;    /* what suspect_malloc returned */
    shard_slot_t *slots;
} memstore_t;

/* The entries one decision works on, which eviction must leave alone. */
typedef struct working_set {
    entry_t *e[SUSPECT_MAX_IDENTITIES];
    size_t n;
} working_set_t;

static const suspect_store_ops_t memstore_ops;

/* ---- entries --------------------------------------------------------------
 */

static size_t entry_size(uint32_t cap)
{
    return sizeof(entry_t) + (size_t)cap * sizeof(int64_t);
}

/* The ring slot of the i-th hit, 0 being the oldest. */
static uint32_t ring_index(const entry_t *e, uint32_t i)
{
    uint32_t idx = e->head + i;
    return idx >= e->cap ? idx - e->cap : idx;
}

static int64_t entry_newest(const entry_t *e)
{
    return e->hits[ring_index(e, e->count - 1)];
}

/* Drops the hits at or before cutoff (they left the window). */
static void entry_trim(entry_t *e, int64_t cutoff)
{
    while (e->count > 0 && e->hits[e->head] <= cutoff) {
        e->head = ring_index(e, 1);
        e->count--;
    }
    if (e->count == 0) {
        e->head = 0;
    }
}

/* True when nothing in e matters any more at now. */
static bool entry_expired(const entry_t *e, int64_t now_ms)
{
    if (e->lock_until_ms > now_ms) {
        return false;
    }
    return e->count == 0 ||
           entry_newest(e) + (int64_t)e->window_s * 1000 <= now_ms;
}

static bool entry_locked(const entry_t *e, int64_t now_ms)
{
    return e->lock_until_ms > now_ms;
}

/* Appends a hit at max(now, newest); the ring has room. */
static void entry_record(entry_t *e, int64_t now_ms)
{
    int64_t ts = now_ms;
    if (e->count > 0 && entry_newest(e) > ts) {
        ts = entry_newest(e);
    }
    e->hits[ring_index(e, e->count)] = ts;
    e->count++;
}

/* ---- a shard's hash table and LRU list ------------------------------------
 */

static shard_t *shard_at(memstore_t *ms, size_t i)
{
    return &ms->slots[i].s;
}

static size_t shard_index(const memstore_t *ms, const uint64_t h[2])
{
    return (size_t)(h[0] & (ms->nshards - 1));
}

static entry_t **bucket_of(shard_t *sh, const uint64_t h[2])
{
    return &sh->buckets[h[1] & (sh->nbuckets - 1)];
}

static entry_t *shard_find(shard_t *sh, const uint64_t h[2])
{
    entry_t *e = *bucket_of(sh, h);
    while (e != NULL && (e->h[0] != h[0] || e->h[1] != h[1])) {
        e = e->next;
    }
    return e;
}

/* The link that points at e in its chain. */
static entry_t **chain_link(shard_t *sh, const entry_t *e)
{
    entry_t **link = bucket_of(sh, e->h);
    while (*link != e) {
        link = &(*link)->next;
    }
    return link;
}

static void lru_unlink(shard_t *sh, entry_t *e)
{
    if (e->lru_prev != NULL) {
        e->lru_prev->lru_next = e->lru_next;
    } else {
        sh->lru_head = e->lru_next;
    }
    if (e->lru_next != NULL) {
        e->lru_next->lru_prev = e->lru_prev;
    } else {
        sh->lru_tail = e->lru_prev;
    }
}

static void lru_push_head(shard_t *sh, entry_t *e)
{
    e->lru_prev = NULL;
    e->lru_next = sh->lru_head;
    if (sh->lru_head != NULL) {
        sh->lru_head->lru_prev = e;
    } else {
        sh->lru_tail = e;
    }
    sh->lru_head = e;
}

static void lru_touch(shard_t *sh, entry_t *e)
{
    if (sh->lru_head != e) {
        lru_unlink(sh, e);
        lru_push_head(sh, e);
    }
}

/* Unlinks e from its chain and the LRU list and frees it. */
static void shard_remove(shard_t *sh, entry_t *e)
{
    *chain_link(sh, e) = e->next;
    lru_unlink(sh, e);
    sh->count--;
    sh->bytes -= entry_size(e->cap);
    free(e);
}

/* Doubles the bucket array when the chains grow long; a failed allocation
 * only leaves them longer. */
static void shard_maybe_grow_table(memstore_t *ms, shard_t *sh)
{
    size_t n = sh->nbuckets * 2;
    entry_t **nb;

    if (sh->count <= sh->nbuckets || n > ms->max_buckets) {
        return;
    }
    nb = suspect_calloc(n, sizeof(*nb));
    if (nb == NULL) {
        return;
    }
    for (size_t i = 0; i < sh->nbuckets; i++) {
        entry_t *e = sh->buckets[i];
        while (e != NULL) {
            entry_t *next = e->next;
            entry_t **b = &nb[e->h[1] & (n - 1)];
            e->next = *b;
            *b = e;
            e = next;
        }
    }
    free(sh->buckets);
    sh->bytes += (n - sh->nbuckets) * sizeof(*nb);
    sh->buckets = nb;
    sh->nbuckets = n;
}

/* ---- bounds: expiry and eviction ------------------------------------------
 */

static bool in_working_set(const working_set_t *ws, const entry_t *e)
{
    for (size_t i = 0; i < ws->n; i++) {
        if (ws->e[i] == e) {
            return true;
        }
    }
    return false;
}

/* Frees up to max expired entries from the LRU tail, stopping at the first
 * live one (nginx's "expire a few on every insert"). */
static void shard_expire_tail(shard_t *sh, const working_set_t *ws,
                              int64_t now_ms, int max)
{
    entry_t *e = sh->lru_tail;
    while (max > 0 && e != NULL) {
        entry_t *prev = e->lru_prev;
        if (!in_working_set(ws, e)) {
            if (!entry_expired(e, now_ms)) {
                return;
            }
            shard_remove(sh, e);
            max--;
        }
        e = prev;
    }
}

/* Drops one entry of a full shard: among the EVICT_SCAN oldest, the first
 * expired one, else the first unlocked one, else the oldest. */
static void shard_evict_one(shard_t *sh, const working_set_t *ws,
                            int64_t now_ms)
{
    entry_t *oldest = NULL, *unlocked = NULL;
    int seen = 0;

    for (entry_t *e = sh->lru_tail; e != NULL && seen < EVICT_SCAN;
         e = e->lru_prev) {
        if (in_working_set(ws, e)) {
            continue;
        }
        seen++;
        if (entry_expired(e, now_ms)) {
            shard_remove(sh, e);
            return;
        }
        if (oldest == NULL) {
            oldest = e;
        }
        if (unlocked == NULL && !entry_locked(e, now_ms)) {
            unlocked = e;
        }
    }
    if (unlocked != NULL) {
        shard_remove(sh, unlocked);
    } else if (oldest != NULL) {
        shard_remove(sh, oldest);
    }
}

/* Makes room for one more entry in sh. */
static void shard_make_room(memstore_t *ms, shard_t *sh,
                            const working_set_t *ws, int64_t now_ms)
{
    shard_expire_tail(sh, ws, now_ms, EXPIRE_ON_INSERT);
    if (sh->count >= ms->max_per_shard) {
        shard_evict_one(sh, ws, now_ms);
    }
}

/* Creates the entry h with cap ring slots at the LRU head of sh, making
 * room first.  NULL when out of memory (the store is then as it was, less
 * what making room dropped). */
static entry_t *shard_insert(memstore_t *ms, shard_t *sh,
                             const working_set_t *ws, const uint64_t h[2],
                             uint32_t cap, int64_t now_ms)
{
    entry_t *e;
    entry_t **b;

    shard_make_room(ms, sh, ws, now_ms);
    e = suspect_malloc(entry_size(cap));
    if (e == NULL) {
        return NULL;
    }
    memset(e, 0, sizeof(*e));
    e->h[0] = h[0];
    e->h[1] = h[1];
    e->cap = cap;
    b = bucket_of(sh, h);
    e->next = *b;
    *b = e;
    lru_push_head(sh, e);
    sh->count++;
    sh->bytes += entry_size(cap);
    shard_maybe_grow_table(ms, sh);
    return e;
}

/* Ring slots for an entry that must take one more hit under rule. */
static uint32_t ring_target(const entry_t *e, const suspect_rule_t *rule)
{
    uint64_t want = e->cap == 0 ? INITIAL_RING : (uint64_t)e->cap * 2;
    uint64_t most =
        rule->limit_count > e->count + 1 ? rule->limit_count : e->count + 1;
    return (uint32_t)(want < most ? want : most);
}

/* Makes room in *ep's ring for one more hit, moving the entry to a larger
 * block if needed (its links follow).  SUSPECT_E_NOMEM leaves it as it was. */
static suspect_rc_t entry_reserve(shard_t *sh, entry_t **ep,
                                  const suspect_rule_t *rule)
{
    entry_t *old = *ep, *e;
    uint32_t cap;

    if (old->count < old->cap) {
        return SUSPECT_OK;
    }
    cap = ring_target(old, rule);
    e = suspect_malloc(entry_size(cap));
    if (e == NULL) {
        return SUSPECT_E_NOMEM;
    }
    memcpy(e, old, sizeof(*e));
    for (uint32_t i = 0; i < old->count; i++) {
        e->hits[i] = old->hits[ring_index(old, i)];
    }
    e->head = 0;
    e->cap = cap;
    *chain_link(sh, old) = e;
    if (e->lru_prev != NULL) {
        e->lru_prev->lru_next = e;
    } else {
        sh->lru_head = e;
    }
    if (e->lru_next != NULL) {
        e->lru_next->lru_prev = e;
    } else {
        sh->lru_tail = e;
    }
    sh->bytes += entry_size(cap) - entry_size(old->cap);
    free(old);
    *ep = e;
    return SUSPECT_OK;
}

/* ---- locking --------------------------------------------------------------
 */

/* Sorts the distinct shard indexes of idx[0..n-1] into out; returns how
 * many. */
static size_t distinct_sorted(const size_t *idx, size_t n, size_t *out)
{
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        size_t j = m;
        bool dup = false;
        for (size_t k = 0; k < m; k++) {
            dup |= out[k] == idx[i];
        }
        if (dup) {
            continue;
        }
        while (j > 0 && out[j - 1] > idx[i]) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = idx[i];
        m++;
    }
    return m;
}

static void lock_shards(memstore_t *ms, const size_t *order, size_t m)
{
    for (size_t i = 0; i < m; i++) {
        pthread_mutex_lock(&shard_at(ms, order[i])->mu);
    }
}

static void unlock_shards(memstore_t *ms, const size_t *order, size_t m)
{
    for (size_t i = m; i > 0; i--) {
        pthread_mutex_unlock(&shard_at(ms, order[i - 1])->mu);
    }
}

/* ---- decide ---------------------------------------------------------------
 */

/* One decision's identities: hashes, shards, entries (NULL = none yet). */
typedef struct decision_ctx {
    memstore_t *ms;
    const suspect_rule_t *rule;
    int64_t now_ms;
    size_t n;
    uint64_t h[SUSPECT_MAX_IDENTITIES][2];
    size_t shard[SUSPECT_MAX_IDENTITIES];
    bool created[SUSPECT_MAX_IDENTITIES];
    working_set_t ws; /* ws.e[i] is identity i's entry */
} decision_ctx_t;

/* Fills ctx->h and ctx->shard; false on a 128-bit collision between two
 * distinct keys of the call. */
static bool ctx_hash(decision_ctx_t *ctx, const suspect_key_t *keys)
{
    for (size_t i = 0; i < ctx->n; i++) {
        suspect_siphash128(&ctx->ms->secret, keys[i].buf, keys[i].window_len,
                           ctx->h[i]);
        ctx->shard[i] = shard_index(ctx->ms, ctx->h[i]);
        for (size_t j = 0; j < i; j++) {
            if (ctx->h[i][0] == ctx->h[j][0] && ctx->h[i][1] == ctx->h[j][1]) {
                return false;
            }
        }
    }
    return true;
}

/* The state of entry e (trimmed to the window) under rule at now. */
static void entry_state(entry_t *e, const suspect_rule_t *rule, int64_t now_ms,
                        suspect_window_state_t *st)
{
    int64_t window_ms = (int64_t)rule->window_s * 1000;

    memset(st, 0, sizeof(*st));
    if (e == NULL) {
        return;
    }
    entry_trim(e, now_ms - window_ms);
    st->lock_until_ms = e->lock_until_ms;
    st->in_window = e->count;
    if (e->count >= rule->limit_count) {
        uint32_t k = e->count - rule->limit_count;
        st->free_at_ms = e->hits[ring_index(e, k)] + window_ms;
    }
}

/* Step 2: find every entry and read its state. */
static void ctx_read(decision_ctx_t *ctx, suspect_window_state_t *st)
{
    ctx->ws.n = ctx->n;
    for (size_t i = 0; i < ctx->n; i++) {
        shard_t *sh = shard_at(ctx->ms, ctx->shard[i]);
        ctx->ws.e[i] = shard_find(sh, ctx->h[i]);
        ctx->created[i] = false;
        entry_state(ctx->ws.e[i], ctx->rule, ctx->now_ms, &st[i]);
    }
}

/* Undoes step 4: frees the entries it created (they hold nothing yet). */
static void ctx_rollback(decision_ctx_t *ctx)
{
    for (size_t i = 0; i < ctx->n; i++) {
        if (ctx->created[i]) {
            shard_remove(shard_at(ctx->ms, ctx->shard[i]), ctx->ws.e[i]);
            ctx->ws.e[i] = NULL;
            ctx->created[i] = false;
        }
    }
}

/* Step 4: every allocation the plan needs, before anything is written. */
static suspect_rc_t ctx_reserve(decision_ctx_t *ctx, const suspect_plan_t *plan)
{
    uint32_t first = ctx->rule->limit_count < INITIAL_RING
                         ? ctx->rule->limit_count
                         : INITIAL_RING;

    for (size_t i = 0; i < ctx->n; i++) {
        shard_t *sh = shard_at(ctx->ms, ctx->shard[i]);
        if (ctx->ws.e[i] == NULL && (plan->record || plan->lock_until_ms[i])) {
            ctx->ws.e[i] = shard_insert(ctx->ms, sh, &ctx->ws, ctx->h[i],
                                        plan->record ? first : 0, ctx->now_ms);
            if (ctx->ws.e[i] == NULL) {
                ctx_rollback(ctx);
                return SUSPECT_E_NOMEM;
            }
            ctx->created[i] = true;
        }
        if (plan->record &&
            entry_reserve(sh, &ctx->ws.e[i], ctx->rule) != SUSPECT_OK) {
            ctx_rollback(ctx);
            return SUSPECT_E_NOMEM;
        }
    }
    return SUSPECT_OK;
}

/* Steps 5 and 6: writes the plan (cannot fail), then tidies up. */
static void ctx_apply(decision_ctx_t *ctx, const suspect_plan_t *plan)
{
    for (size_t i = 0; i < ctx->n; i++) {
        shard_t *sh = shard_at(ctx->ms, ctx->shard[i]);
        entry_t *e = ctx->ws.e[i];
        if (e == NULL) {
            continue;
        }
        if (plan->lock_until_ms[i] != 0) {
            e->lock_until_ms = plan->lock_until_ms[i];
        }
        if (plan->record) {
            entry_record(e, ctx->now_ms);
        }
        e->window_s = ctx->rule->window_s;
        if (e->count == 0 && !entry_locked(e, ctx->now_ms)) {
            shard_remove(sh, e);
            ctx->ws.e[i] = NULL;
        } else {
            lru_touch(sh, e);
        }
    }
}

static suspect_rc_t ms_decide(suspect_store_t *store,
                              const suspect_rule_t *rule,
                              const suspect_key_t *keys, size_t n,
                              int64_t now_ms, suspect_decision_t *out,
                              suspect_err_t *err)
{
    decision_ctx_t ctx;
    suspect_window_state_t st[SUSPECT_MAX_IDENTITIES];
    suspect_plan_t plan;
    size_t order[SUSPECT_MAX_IDENTITIES], m;
    suspect_rc_t rc;

    ctx.ms = (memstore_t *)store;
    ctx.rule = rule;
    ctx.now_ms = now_ms;
    ctx.n = n;
    if (!ctx_hash(&ctx, keys)) {
        return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                               "memory store: two identities share a hash");
    }
    m = distinct_sorted(ctx.shard, n, order);
    lock_shards(ctx.ms, order, m);
    ctx_read(&ctx, st);
    suspect_policy_evaluate(rule, st, n, now_ms, &plan, out);
    rc = ctx_reserve(&ctx, &plan);
    if (rc == SUSPECT_OK) {
        ctx_apply(&ctx, &plan);
    }
    unlock_shards(ctx.ms, order, m);
    if (rc != SUSPECT_OK) {
        return suspect_err_set(err, rc, NULL, 0, "memory store: out of memory");
    }
    return SUSPECT_OK;
}

/* ---- operator operations --------------------------------------------------
 */

/* Hashes key and locks its shard; returns the shard. */
static shard_t *lock_key(memstore_t *ms, const suspect_key_t *key,
                         uint64_t h[2])
{
    shard_t *sh;
    suspect_siphash128(&ms->secret, key->buf, key->window_len, h);
    sh = shard_at(ms, shard_index(ms, h));
    pthread_mutex_lock(&sh->mu);
    return sh;
}

/* Fills a status from entry e without changing it. */
static void entry_status(const entry_t *e, const suspect_rule_t *rule,
                         int64_t now_ms, suspect_status_t *out)
{
    int64_t window_ms = (int64_t)rule->window_s * 1000;
    uint32_t skip = 0, in;

    memset(out, 0, sizeof(*out));
    out->remaining = rule->limit_count;
    if (e == NULL) {
        return;
    }
    while (skip < e->count &&
           e->hits[ring_index(e, skip)] <= now_ms - window_ms) {
        skip++;
    }
    in = e->count - skip;
    out->in_window = in;
    out->remaining = in < rule->limit_count ? rule->limit_count - in : 0;
    out->locked_until_ms = entry_locked(e, now_ms) ? e->lock_until_ms : 0;
    if (in >= rule->limit_count) {
        uint32_t k = skip + (in - rule->limit_count);
        out->free_at_ms = e->hits[ring_index(e, k)] + window_ms;
    }
}

static suspect_rc_t ms_status(suspect_store_t *store,
                              const suspect_rule_t *rule,
                              const suspect_key_t *key, int64_t now_ms,
                              suspect_status_t *out, suspect_err_t *err)
{
    uint64_t h[2];
    shard_t *sh = lock_key((memstore_t *)store, key, h);

    entry_status(shard_find(sh, h), rule, now_ms, out);
    pthread_mutex_unlock(&sh->mu);
    return SUSPECT_OK;
}

static suspect_rc_t ms_reset(suspect_store_t *store, const suspect_key_t *key,
                             unsigned what, suspect_err_t *err)
{
    uint64_t h[2];
    shard_t *sh = lock_key((memstore_t *)store, key, h);
    entry_t *e = shard_find(sh, h);

    if (e != NULL) {
        if (what & SUSPECT_RESET_LOCK) {
            e->lock_until_ms = 0;
        }
        if (what & SUSPECT_RESET_WINDOW) {
            e->count = 0;
            e->head = 0;
        }
        if (e->count == 0 && e->lock_until_ms == 0) {
            shard_remove(sh, e);
        }
    }
    pthread_mutex_unlock(&sh->mu);
    return SUSPECT_OK;
}

static suspect_rc_t ms_block(suspect_store_t *store, const suspect_key_t *key,
                             int64_t now_ms, int64_t until_ms,
                             suspect_err_t *err)
{
    memstore_t *ms = (memstore_t *)store;
    uint64_t h[2];
    shard_t *sh = lock_key(ms, key, h);
    entry_t *e = shard_find(sh, h);
    working_set_t ws = {{NULL}, 0};

    if (e == NULL) {
        e = shard_insert(ms, sh, &ws, h, 0, now_ms);
    }
    if (e != NULL) {
        e->lock_until_ms = until_ms;
        if (e->count == 0 && !entry_locked(e, now_ms)) {
            shard_remove(sh, e);
        } else {
            lru_touch(sh, e);
        }
    }
    pthread_mutex_unlock(&sh->mu);
    if (e == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "memory store: out of memory");
    }
    return SUSPECT_OK;
}

/* ---- life cycle -----------------------------------------------------------
 */

/* Frees every entry of sh and its table; the mutex is left to the caller. */
static void shard_clear(shard_t *sh)
{
    entry_t *e = sh->lru_head;
    while (e != NULL) {
        entry_t *next = e->lru_next;
        free(e);
        e = next;
    }
    free(sh->buckets);
}

/* Frees the first n shards and the store. */
static void memstore_destroy(memstore_t *ms, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        shard_clear(shard_at(ms, i));
        pthread_mutex_destroy(&shard_at(ms, i)->mu);
    }
    free(ms->slots_raw);
    free(ms);
}

static void ms_free(suspect_store_t *store)
{
    memstore_t *ms = (memstore_t *)store;
    memstore_destroy(ms, ms->nshards);
}

static const suspect_store_ops_t memstore_ops = {
    "memory", ms_decide, ms_status, ms_reset, ms_block, ms_free,
};

static size_t pow2_ceil(size_t v)
{
    size_t p = 1;
    while (p < v) {
        p <<= 1;
    }
    return p;
}

static size_t pow2_floor(size_t v)
{
    size_t p = 1;
    while (p * 2 <= v) {
        p <<= 1;
    }
    return p;
}

/* Fills key with secret random bytes: getrandom(), else /dev/urandom. */
static suspect_rc_t random_secret(suspect_siphash_key_t *key,
                                  suspect_err_t *err)
{
    unsigned char *p = (unsigned char *)key;
    size_t got = 0;
    int fd;

    while (got < sizeof(*key)) {
        ssize_t r = getrandom(p + got, sizeof(*key) - got, 0);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            break;
        }
        got += (size_t)r;
    }
    if (got == sizeof(*key)) {
        return SUSPECT_OK;
    }
    fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return suspect_err_sys(err, SUSPECT_E_IO, "/dev/urandom",
                               "memory store: no random secret");
    }
    for (got = 0; got < sizeof(*key);) {
        ssize_t r = read(fd, p + got, sizeof(*key) - got);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            close(fd);
            return suspect_err_sys(err, SUSPECT_E_IO, "/dev/urandom",
                                   "memory store: no random secret");
        }
        got += (size_t)r;
    }
    close(fd);
    return SUSPECT_OK;
}

/* Sizes the store from opts (see suspect_store.h for the defaults). */
static void memstore_configure(memstore_t *ms,
                               const suspect_memstore_opts_t *opts)
{
    size_t max = opts != NULL && opts->max_entries > 0 ? opts->max_entries
                                                       : DEFAULT_MAX_ENTRIES;
    size_t shards =
        opts != NULL && opts->shards > 0 ? opts->shards : DEFAULT_SHARDS;

    shards = pow2_ceil(shards > MAX_SHARDS ? MAX_SHARDS : shards);
    if (shards > max) {
        shards = pow2_floor(max);
    }
    ms->nshards = shards;
    ms->max_per_shard = (max + shards - 1) / shards;
    ms->max_buckets = pow2_ceil(ms->max_per_shard);
    if (ms->max_buckets < INITIAL_BUCKETS) {
        ms->max_buckets = INITIAL_BUCKETS;
    }
}

/* Allocates the shard array, cache-line aligned, and each shard's table. */
static suspect_rc_t memstore_alloc_shards(memstore_t *ms, suspect_err_t *err)
{
    size_t i;

    ms->slots_raw = suspect_malloc(ms->nshards * sizeof(shard_slot_t) + 63);
    if (ms->slots_raw == NULL) {
        memstore_destroy(ms, 0);
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "memory store: out of memory");
    }
    ms->slots =
        (shard_slot_t *)(((uintptr_t)ms->slots_raw + 63) & ~(uintptr_t)63);
    for (i = 0; i < ms->nshards; i++) {
        shard_t *sh = shard_at(ms, i);
        memset(sh, 0, sizeof(*sh));
        sh->nbuckets = INITIAL_BUCKETS;
        sh->buckets = suspect_calloc(sh->nbuckets, sizeof(entry_t *));
        if (sh->buckets == NULL) {
            break;
        }
        sh->bytes = sh->nbuckets * sizeof(entry_t *);
        if (pthread_mutex_init(&sh->mu, NULL) != 0) {
            free(sh->buckets);
            break;
        }
    }
    if (i < ms->nshards) {
        memstore_destroy(ms, i);
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "memory store: out of memory");
    }
    return SUSPECT_OK;
}

/*
 * Makes a memory store sized by opts (NULL for the defaults).  Returns
 * SUSPECT_OK and an owned store in *out (free it with suspect_store_free),
 * SUSPECT_E_NOMEM, or SUSPECT_E_IO when no random secret can be had.
 */
suspect_rc_t suspect_memstore_new(const suspect_memstore_opts_t *opts,
                                  suspect_store_t **out, suspect_err_t *err)
{
    memstore_t *ms;
    suspect_rc_t rc;

    *out = NULL;
    ms = suspect_calloc(1, sizeof(*ms));
    if (ms == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "memory store: out of memory");
    }
    ms->base.ops = &memstore_ops;
    rc = random_secret(&ms->secret, err);
    if (rc != SUSPECT_OK) {
        free(ms);
        return rc;
    }
    memstore_configure(ms, opts);
    rc = memstore_alloc_shards(ms, err);
    if (rc != SUSPECT_OK) {
        return rc;
    }
    *out = &ms->base;
    return SUSPECT_OK;
}

/* Adds up one counter of every shard, each read under its mutex. */
static size_t memstore_sum(suspect_store_t *store, size_t offset)
{
    memstore_t *ms = (memstore_t *)store;
    size_t total = 0;

    if (store == NULL || store->ops != &memstore_ops) {
        return 0;
    }
    for (size_t i = 0; i < ms->nshards; i++) {
        shard_t *sh = shard_at(ms, i);
        pthread_mutex_lock(&sh->mu);
        total += *(const size_t *)((const char *)sh + offset);
        pthread_mutex_unlock(&sh->mu);
    }
    return total;
}

/* The number of identities held now; 0 for a store that is not a memory
 * store. */
size_t suspect_memstore_size(suspect_store_t *store)
{
    return memstore_sum(store, offsetof(shard_t, count));
}

/* The bytes allocated now for entries (64 bytes each plus 8 per ring slot)
 * and for the shards' bucket arrays; malloc's own overhead is not counted.
 * 0 for a store that is not a memory store. */
size_t suspect_memstore_bytes(suspect_store_t *store)
{
    return memstore_sum(store, offsetof(shard_t, bytes));
}
