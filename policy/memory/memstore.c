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
 * key under a secret drawn from the kernel (random.h) when the store is
 * made.  The key string itself is not kept: a 64 KiB hostile value costs
 * the same 16 bytes as a short one, and since the secret is unknown to
 * clients they can neither aim keys at one chain nor make two identities
 * share an entry (a 128-bit collision is out of reach; a decision that meets
 * one anyway fails with SUSPECT_E_STORE rather than mixing identities).
 * h[0] picks the shard, h[1] the bucket.
 *
 * Layout.  S shards (a power of two, default 64), each with its own mutex,
 * hash table and LRU lists; an entry per identity holds a ring of its hit
 * timestamps and the end of its lock (mem_internal.h draws them).  The tables
 * and the bounds that keep them within max_entries are mem_table.c's.
 *
 * A decision (ms_decide):
 *   1. hash the n keys, lock their shards in ascending index (each once), so
 *      that threads deciding overlapping sets never deadlock;
 *   2. find each entry and meter cell (no allocation), drop hits with
 *      t <= now - window, compute its suspect_window_state_t (a missing
 *      entry is all zero);
 *   3. suspect_policy_evaluate();
 *   4. reserve: create the entries and cells the plan writes to (a lock,
 *      a hit, a meter) and grow rings that must take a hit; on failure,
 *      free what this step created and return SUSPECT_E_NOMEM;
 *   5. apply (cannot fail): new locks, the hit on every identity when
 *      allowed, window_s;
 *   6. free entries left with no hit and no live lock, move the others to
 *      the LRU head, unlock.
 *
 * Operators.  status, unblock, reset, block and the lock listing are
 * mem_ops.c's.
 *
 * Ownership.  The store owns its shards, entries and names; keys and rules are
 * borrowed for the call.  Everything is reached under the shard's mutex,
 * including the byte and entry counters that size() and bytes() add up.
 */
#include "mem_internal.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "random.h"

/* Name bytes a shard may hold: 64 per entry it may hold (the size of an
 * entry again), and at least two of the longest keys. */
#define NAME_BYTES_PER_ENTRY 64
#define NAME_BYTES_MIN       (2 * (sizeof(lock_name_t) + SUSPECT_KEY_MAX))

static const suspect_store_ops_t memstore_ops;

/* ---- locking ------------------------------------------------------------ */

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

/* ---- decide ------------------------------------------------------------- */

/* One decision's identities: hashes, shards, entries (NULL = none yet). */
typedef struct decision_ctx {
    memstore_t *ms;
    const suspect_rule_t *rule;
    const suspect_key_t *keys;
    int64_t now_ms;
    size_t n;
    const suspect_ticket_t *ticket; /* a reservation's, NULL = a decision */
    uint64_t h[SUSPECT_MAX_IDENTITIES][2];
    size_t shard[SUSPECT_MAX_IDENTITIES];
    bool created[SUSPECT_MAX_IDENTITIES];
    bool mcreated[SUSPECT_MAX_IDENTITIES]; /* a meter cell made by step 4 */
    working_set_t ws;                      /* ws.e[i] is identity i's entry */
    size_t order[SUSPECT_MAX_IDENTITIES];
    size_t m; /* distinct shards, in order[0..m) */
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

/* Starts a call on keys[0..n): hashes, then the shards locked in order. */
static suspect_rc_t ctx_begin(decision_ctx_t *ctx, suspect_store_t *store,
                              const suspect_rule_t *rule,
                              const suspect_key_t *keys, size_t n,
                              int64_t now_ms, suspect_err_t *err)
{
    ctx->ms = (memstore_t *)store;
    ctx->rule = rule;
    ctx->keys = keys;
    ctx->now_ms = now_ms;
    ctx->n = n;
    ctx->ticket = NULL;
    ctx->m = 0;
    ctx->ws.h = (const uint64_t(*)[2])ctx->h;
    ctx->ws.n = 0;
    if (!ctx_hash(ctx, keys)) {
        return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                               "memory store: two identities share a hash");
    }
    ctx->m = distinct_sorted(ctx->shard, n, ctx->order);
    lock_shards(ctx->ms, ctx->order, ctx->m);
    return SUSPECT_OK;
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
    mem_ext_state(e, rule, now_ms, st);
}

/* Step 2: find every entry, make its ended reservations hits, read its state.
 * A reservation that cannot move for want of memory is still counted as a hit
 * by the state. */
static void ctx_read(decision_ctx_t *ctx, suspect_window_state_t *st)
{
    bool metered = suspect_rule_metered(ctx->rule);

    ctx->ws.n = ctx->n;
    for (size_t i = 0; i < ctx->n; i++) {
        shard_t *sh = shard_at(ctx->ms, ctx->shard[i]);
        ctx->ws.e[i] = shard_find(sh, ctx->h[i]);
        ctx->created[i] = false;
        ctx->mcreated[i] = false;
        if (ctx->ws.e[i] != NULL) {
            mem_meter_adopt(ctx->ws.e[i], ctx->rule);
            (void)mem_ext_expire(sh, &ctx->ws.e[i], ctx->rule, ctx->now_ms);
        }
        if (metered) {
            mem_meter_state(ctx->ws.e[i], mem_mtab_find(sh, ctx->h[i][1]),
                            ctx->rule, ctx->now_ms, &st[i]);
        } else {
            entry_state(ctx->ws.e[i], ctx->rule, ctx->now_ms, &st[i]);
        }
    }
}

/* Undoes step 4: frees the entries and cells it created (they hold
 * nothing yet). */
static void ctx_rollback(decision_ctx_t *ctx)
{
    for (size_t i = 0; i < ctx->n; i++) {
        shard_t *sh = shard_at(ctx->ms, ctx->shard[i]);
        mcell_t *c = ctx->mcreated[i] ? mem_mtab_find(sh, ctx->h[i][1]) : NULL;

        if (c != NULL) {
            mem_mtab_remove(sh, c);
        }
        ctx->mcreated[i] = false;
        if (ctx->created[i]) {
            mem_shard_remove(shard_at(ctx->ms, ctx->shard[i]), ctx->ws.e[i]);
            ctx->ws.e[i] = NULL;
            ctx->created[i] = false;
        }
    }
}

/* The meter cell identity i needs for the plan. */
static suspect_rc_t ctx_reserve_meter(decision_ctx_t *ctx, shard_t *sh,
                                      size_t i)
{
    bool full = false;

    if (mem_mtab_find(sh, ctx->h[i][1]) != NULL) {
        return SUSPECT_OK;
    }
    if (mem_meter_new(ctx->ms, sh, &ctx->ws, ctx->h[i][1], ctx->now_ms,
                      &full) == NULL) {
        return full ? SUSPECT_E_FULL : SUSPECT_E_NOMEM;
    }
    ctx->mcreated[i] = true;
    return SUSPECT_OK;
}

/* The allocations identity i needs for the plan: a meter counts in its
 * cell, and takes an entry only for a lock or offences. */
static suspect_rc_t ctx_reserve_one(decision_ctx_t *ctx,
                                    const suspect_plan_t *plan, size_t i)
{
    shard_t *sh = shard_at(ctx->ms, ctx->shard[i]);
    bool metered = suspect_rule_metered(ctx->rule);
    bool resv = plan->record && ctx->ticket != NULL && !metered;
    bool hit = plan->record && ctx->ticket == NULL && !metered;
    uint32_t first = ctx->rule->limit_count < INITIAL_RING
                         ? ctx->rule->limit_count
                         : INITIAL_RING;

    if (metered && plan->record) {
        suspect_rc_t rc = ctx_reserve_meter(ctx, sh, i);

        if (rc != SUSPECT_OK) {
            return rc;
        }
    }
    if (ctx->ws.e[i] == NULL && ((plan->record && !metered) ||
                                 plan->lock_until_ms[i] || plan->offences[i])) {
        bool full = false;

        ctx->ws.e[i] = mem_shard_insert(ctx->ms, sh, &ctx->ws, ctx->h[i],
                                        hit ? first : 0, ctx->now_ms, &full);
        if (ctx->ws.e[i] == NULL) {
            return full ? SUSPECT_E_FULL : SUSPECT_E_NOMEM;
        }
        ctx->created[i] = true;
    }
    if (hit && mem_entry_reserve(sh, &ctx->ws.e[i], ctx->rule) != SUSPECT_OK) {
        return SUSPECT_E_NOMEM;
    }
    if ((resv || plan->offences[i] != 0) &&
        mem_ext_reserve(sh, ctx->ws.e[i], resv) != SUSPECT_OK) {
        return SUSPECT_E_NOMEM;
    }
    return SUSPECT_OK;
}

/* Step 4: every allocation the plan needs, before anything is written. */
static suspect_rc_t ctx_reserve(decision_ctx_t *ctx, const suspect_plan_t *plan)
{
    for (size_t i = 0; i < ctx->n; i++) {
        suspect_rc_t rc = ctx_reserve_one(ctx, plan, i);

        if (rc != SUSPECT_OK) {
            ctx_rollback(ctx);
            return rc;
        }
    }
    return SUSPECT_OK;
}

/* Step 5 for a meter: identity i's cell takes the request's cost (a
 * reservation too: mem_meter.c), or learns of its new lock. */
static void ctx_apply_meter(decision_ctx_t *ctx, const suspect_plan_t *plan,
                            size_t i)
{
    shard_t *sh = shard_at(ctx->ms, ctx->shard[i]);
    int64_t lock = ctx->ws.e[i] != NULL ? ctx->ws.e[i]->lock_until_ms : 0;
    mcell_t *c;

    if (!plan->record && plan->lock_until_ms[i] == 0) {
        return; /* a denial: the meter stays as it was */
    }
    c = mem_mtab_find(sh, ctx->h[i][1]);
    if (c == NULL) {
        return; /* not recorded, and no meter yet */
    }
    if (plan->record) {
        mem_meter_take(c, ctx->rule, ctx->now_ms, suspect_rule_cost(ctx->rule),
                       ctx->now_ms, lock);
    } else if (plan->lock_until_ms[i] != 0) {
        suspect_meter_t m;

        mem_meter_get(c, ctx->rule, &m);
        mem_meter_put(c, ctx->rule, &m, ctx->now_ms, lock);
    }
}

/* Steps 5 and 6: writes the plan (cannot fail), then tidies up. */
static void ctx_apply(decision_ctx_t *ctx, const suspect_plan_t *plan)
{
    bool metered = suspect_rule_metered(ctx->rule);

    for (size_t i = 0; i < ctx->n; i++) {
        shard_t *sh = shard_at(ctx->ms, ctx->shard[i]);
        entry_t *e = ctx->ws.e[i];

        if (e != NULL && plan->lock_until_ms[i] != 0) {
            e->lock_until_ms = plan->lock_until_ms[i];
            mem_name_keep(ctx->ms, sh, e, ctx->keys[i].buf,
                          ctx->keys[i].window_len);
        }
        if (e != NULL && plan->offences[i] != 0) {
            e->ext->offences = plan->offences[i];
            e->ext->offence_until_ms = plan->offence_until_ms[i];
        }
        if (metered) {
            ctx_apply_meter(ctx, plan, i);
        } else if (e != NULL && plan->record && ctx->ticket != NULL) {
            mem_ext_add_resv(e, ctx->ticket->id, ctx->ticket->at_ms,
                             ctx->ticket->end_ms);
        } else if (e != NULL && plan->record) {
            entry_record(e, ctx->now_ms);
        }
        if (e != NULL) {
            entry_set_rule(e, ctx->rule);
            ctx->ws.e[i] = mem_entry_tidy(sh, e, ctx->now_ms);
        }
    }
}

/* A decision, or with ticket a reservation (see suspect_store.h). */
static suspect_rc_t ms_run(suspect_store_t *store, const suspect_rule_t *rule,
                           const suspect_key_t *keys, size_t n, int64_t now_ms,
                           suspect_ticket_t *ticket, suspect_decision_t *out,
                           suspect_err_t *err)
{
    decision_ctx_t ctx;
    suspect_window_state_t st[SUSPECT_MAX_IDENTITIES];
    suspect_plan_t plan;
    suspect_rc_t rc = ctx_begin(&ctx, store, rule, keys, n, now_ms, err);

    if (rc != SUSPECT_OK) {
        return rc;
    }
    ctx.ticket = ticket;
    ctx_read(&ctx, st);
    suspect_policy_evaluate(rule, st, n, now_ms, &plan, out);
    rc = ctx_reserve(&ctx, &plan);
    if (rc == SUSPECT_OK) {
        ctx_apply(&ctx, &plan);
    }
    unlock_shards(ctx.ms, ctx.order, ctx.m);
    if (rc == SUSPECT_E_FULL) {
        return suspect_err_set(err, rc, NULL, 0,
                               "memory store: full of live locks "
                               "(maxEntries %zu)",
                               ctx.ms->max_entries);
    }
    if (rc != SUSPECT_OK) {
        return suspect_err_set(err, rc, NULL, 0, "memory store: out of memory");
    }
    return SUSPECT_OK;
}

static suspect_rc_t ms_decide(suspect_store_t *store,
                              const suspect_rule_t *rule,
                              const suspect_key_t *keys, size_t n,
                              int64_t now_ms, suspect_decision_t *out,
                              suspect_err_t *err)
{
    return ms_run(store, rule, keys, n, now_ms, NULL, out, err);
}

static suspect_rc_t ms_reserve(suspect_store_t *store,
                               const suspect_rule_t *rule,
                               const suspect_key_t *keys, size_t n,
                               int64_t now_ms, int64_t ttl_ms,
                               suspect_decision_t *out,
                               suspect_ticket_t *ticket, suspect_err_t *err)
{
    ticket->at_ms = now_ms;
    ticket->end_ms = now_ms + ttl_ms;
    return ms_run(store, rule, keys, n, now_ms, ticket, out, err);
}

/* Settles ticket's reservation on entry e of shard sh (see suspect_store.h). */
static suspect_rc_t entry_settle(shard_t *sh, entry_t **ep,
                                 const suspect_rule_t *rule,
                                 const suspect_ticket_t *ticket, bool failed,
                                 int64_t now_ms)
{
    mem_resv_t resv;

    if (!mem_ext_take_resv(*ep, ticket->id, &resv)) {
        return SUSPECT_OK; /* reset, or a hit already */
    }
    if (!suspect_policy_settle_counts(failed, resv.end_ms, now_ms)) {
        return SUSPECT_OK;
    }
    if (mem_entry_reserve(sh, ep, rule) != SUSPECT_OK) {
        mem_ext_add_resv(*ep, resv.id, resv.at_ms, resv.end_ms);
        return SUSPECT_E_NOMEM; /* it stays a reservation and ends as a hit */
    }
    mem_ring_insert(*ep, resv.at_ms);
    return SUSPECT_OK;
}

/* Settles ticket's metered reservation of the identity h1 (entry e, NULL =
 * none): a success gives its cost back. */
static void meter_settle(shard_t *sh, const entry_t *e, uint64_t h1,
                         const suspect_rule_t *rule,
                         const suspect_ticket_t *ticket, bool failed,
                         int64_t now_ms)
{
    mcell_t *c = mem_mtab_find(sh, h1);

    if (c == NULL ||
        suspect_policy_settle_counts(failed, ticket->end_ms, now_ms)) {
        return;
    }
    mem_meter_give(c, rule, ticket->at_ms, suspect_rule_cost(rule), now_ms,
                   e != NULL ? e->lock_until_ms : 0);
}

static suspect_rc_t ms_settle(suspect_store_t *store,
                              const suspect_rule_t *rule,
                              const suspect_key_t *keys, size_t n,
                              const suspect_ticket_t *ticket, bool failed,
                              int64_t now_ms, suspect_err_t *err)
{
    decision_ctx_t ctx;
    suspect_rc_t rc = ctx_begin(&ctx, store, rule, keys, n, now_ms, err);

    for (size_t i = 0; rc == SUSPECT_OK && i < n; i++) {
        shard_t *sh = shard_at(ctx.ms, ctx.shard[i]);
        entry_t *e = shard_find(sh, ctx.h[i]);

        if (suspect_rule_metered(rule)) {
            meter_settle(sh, e, ctx.h[i][1], rule, ticket, failed, now_ms);
        } else if (e != NULL) {
            rc = entry_settle(sh, &e, rule, ticket, failed, now_ms);
            entry_set_rule(e, rule);
            (void)mem_entry_tidy(sh, e, now_ms);
        }
    }
    if (ctx.m > 0) {
        unlock_shards(ctx.ms, ctx.order, ctx.m);
    }
    return rc == SUSPECT_OK || rc == SUSPECT_E_STORE
               ? rc
               : suspect_err_set(err, rc, NULL, 0,
                                 "memory store: out of memory");
}

/* ---- life cycle -----------------------------------------------------------
 */

/* Frees the first n shards and the store. */
static void memstore_destroy(memstore_t *ms, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        mem_shard_clear(shard_at(ms, i));
        mem_mtab_clear(shard_at(ms, i));
        pthread_mutex_destroy(&shard_at(ms, i)->mu);
    }
    free(ms->cells_raw);
    free(ms);
}

static void ms_free(suspect_store_t *store)
{
    memstore_t *ms = (memstore_t *)store;
    memstore_destroy(ms, ms->nshards);
}

/* The prefill operation (suspect_store_impl.h): what the failover wrapper's
 * local store starts an identity from. */
static suspect_rc_t ms_prefill(suspect_store_t *store,
                               const suspect_rule_t *rule,
                               const suspect_key_t *key, uint32_t hits,
                               int64_t at_ms, int64_t now_ms,
                               suspect_err_t *err)
{
    if (rule == NULL || key == NULL || rule->window_s == 0) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "memory store: prefill needs a rule and a key");
    }
    return mem_op_prefill(store, rule, key, hits, at_ms, now_ms, err);
}

/* Every feature beyond the seed's. */
static bool ms_supports(const suspect_store_t *store, unsigned what)
{
    (void)store;
    (void)what;
    return true;
}

static const suspect_store_ops_t memstore_ops = {
    .name = "memory",
    .decide = ms_decide,
    .status = mem_op_status,
    .reset = mem_op_reset,
    .block = mem_op_block,
    .free = ms_free,
    .unblock = mem_op_unblock,
    .foreach_locked = mem_op_foreach_locked,
    .reserve = ms_reserve,
    .settle = ms_settle,
    .supports = ms_supports,
    .prefill = ms_prefill,
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

/* Sizes the store from opts (see suspect_store.h for the defaults). */
static void memstore_configure(memstore_t *ms,
                               const suspect_memstore_opts_t *opts)
{
    size_t max = opts != NULL && opts->max_entries > 0 ? opts->max_entries
                                                       : DEFAULT_MAX_ENTRIES;
    size_t shards =
        opts != NULL && opts->shards > 0 ? opts->shards : DEFAULT_SHARDS;

    shards = pow2_ceil(shards > MAX_SHARDS ? MAX_SHARDS : shards);
    /* A shard of a few entries evicts a neighbour while the others
     * stand empty: a small store gets fewer shards. */
    if (shards > max / MIN_PER_SHARD) {
        shards = pow2_floor(max / MIN_PER_SHARD); /* at least 1 */
    }
    ms->nshards = shards;
    ms->max_entries = max;
    ms->max_per_shard = (max + shards - 1) / shards;
    ms->max_buckets = pow2_ceil(ms->max_per_shard);
    ms->names_max = ms->max_per_shard * NAME_BYTES_PER_ENTRY;
    if (ms->names_max < NAME_BYTES_MIN) {
        ms->names_max = NAME_BYTES_MIN;
    }
    if (ms->max_buckets < INITIAL_BUCKETS) {
        ms->max_buckets = INITIAL_BUCKETS;
    }
}

/* Allocates the shard array, cache-line aligned, and each shard's table. */
static suspect_rc_t memstore_alloc_shards(memstore_t *ms, suspect_err_t *err)
{
    size_t i;

    ms->cells_raw = suspect_malloc(ms->nshards * sizeof(shard_cell_t) + 63);
    if (ms->cells_raw == NULL) {
        memstore_destroy(ms, 0);
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "memory store: out of memory");
    }
    ms->cells =
        (shard_cell_t *)(((uintptr_t)ms->cells_raw + 63) & ~(uintptr_t)63);
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
    rc = suspect_random_bytes(&ms->secret, sizeof(ms->secret), err);
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
static size_t shard_size(const shard_t *sh)
{
    return sh->count + sh->mcount;
}

static size_t shard_bytes(const shard_t *sh)
{
    return sh->bytes;
}

/* part() added up over the shards, each under its mutex. */
static size_t memstore_sum(suspect_store_t *store,
                           size_t (*part)(const shard_t *))
{
    memstore_t *ms = (memstore_t *)store;
    size_t total = 0;

    if (store == NULL || store->ops != &memstore_ops) {
        return 0;
    }
    for (size_t i = 0; i < ms->nshards; i++) {
        shard_t *sh = shard_at(ms, i);
        pthread_mutex_lock(&sh->mu);
        total += part(sh);
        pthread_mutex_unlock(&sh->mu);
    }
    return total;
}

/* The entries and meters held now (an identity with a meter and a lock
 * has both); 0 for a store that is not a memory store. */
size_t suspect_memstore_size(suspect_store_t *store)
{
    return memstore_sum(store, shard_size);
}

/* The bytes allocated now for entries (72 bytes each plus 8 per ring
 * cell), meter tables (32 bytes a cell) and the shards' bucket arrays;
 * malloc's own overhead is not counted.  0 for a store that is not a
 * memory store. */
size_t suspect_memstore_bytes(suspect_store_t *store)
{
    return memstore_sum(store, shard_bytes);
}
