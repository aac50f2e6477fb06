/*
 * mem_ops.c - the memory store's operator operations: status, unblock,
 * reset and block of one identity, each under its shard's mutex, and the
 * listing of live locks.
 *
 * Prefilling (the store's prefill operation) gives an identity hits it had
 * elsewhere: the failover wrapper's local store, when the primary fails,
 * starts an identity from the count the primary last reported rather than
 * from zero.  The missing hits go in at their time, the ring kept sorted.
 *
 * To list the locks (suspect_store_foreach_locked()), the store keeps the
 * window key of every entry that gets a lock (a decision that locks, or
 * block), within a byte budget per shard (mem_table.c); a lock that finds
 * the budget spent is kept all the same and left out of listings.  A
 * listing copies one shard's live named locks under its mutex and calls
 * back outside it, so a slow callback never holds a shard.
 */
#include "mem_internal.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"

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

/* Adds e's reservations and offences to a status (ended reservations are hits).
 */
static void entry_ext_status(const entry_t *e, const suspect_rule_t *rule,
                             int64_t now_ms, suspect_status_t *out)
{
    suspect_window_state_t st;

    memset(&st, 0, sizeof(st));
    mem_ext_state(e, rule, now_ms, &st);
    out->in_window += st.in_window;
    out->remaining = out->in_window + st.pending < rule->limit_count
                         ? rule->limit_count - out->in_window - st.pending
                         : 0;
    out->pending = st.pending;
    if (e->ext != NULL && e->ext->offence_until_ms > now_ms) {
        out->offences = e->ext->offences;
        out->offence_until_ms = e->ext->offence_until_ms;
    }
}

/* Fills a status of rule's meter in cell c with entry e (either NULL =
 * none) at now. */
static void meter_status(const entry_t *e, const mcell_t *c,
                         const suspect_rule_t *rule, int64_t now_ms,
                         suspect_status_t *out)
{
    uint32_t cap = suspect_rule_capacity(rule);
    suspect_window_state_t st;
    suspect_meter_t m;
    int64_t full;

    mem_meter_state(e, c, rule, now_ms, &st);
    mem_meter_get(c, rule, &m);
    memset(out, 0, sizeof(*out));
    out->in_window = st.in_window;
    out->remaining = st.in_window < cap ? cap - st.in_window : 0;
    out->free_at_ms = st.free_at_ms;
    full = suspect_meter_end_ms(rule, &m);
    out->full_at_ms = full > now_ms ? full : 0;
    if (e != NULL) {
        out->locked_until_ms = entry_locked(e, now_ms) ? e->lock_until_ms : 0;
        if (e->ext != NULL && e->ext->offence_until_ms > now_ms) {
            out->offences = e->ext->offences;
            out->offence_until_ms = e->ext->offence_until_ms;
        }
    }
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
    entry_ext_status(e, rule, now_ms, out);
}

suspect_rc_t mem_op_status(suspect_store_t *store, const suspect_rule_t *rule,
                           const suspect_key_t *key, int64_t now_ms,
                           suspect_status_t *out, suspect_err_t *err)
{
    uint64_t h[2];
    shard_t *sh = lock_key((memstore_t *)store, key, h);

    if (suspect_rule_metered(rule)) {
        meter_status(shard_find(sh, h), mem_mtab_find(sh, h[1]), rule, now_ms,
                     out);
    } else {
        entry_status(shard_find(sh, h), rule, now_ms, out);
    }
    pthread_mutex_unlock(&sh->mu);
    return SUSPECT_OK;
}

suspect_rc_t mem_op_reset(suspect_store_t *store, const suspect_key_t *key,
                          unsigned what, suspect_err_t *err)
{
    uint64_t h[2];
    shard_t *sh = lock_key((memstore_t *)store, key, h);
    entry_t *e = shard_find(sh, h);
    mcell_t *c = mem_mtab_find(sh, h[1]);

    if (c != NULL && (what & SUSPECT_RESET_WINDOW)) {
        mem_mtab_remove(sh, c); /* a meter is forgotten like hits */
    }
    if (e != NULL) {
        if (what & SUSPECT_RESET_LOCK) {
            e->lock_until_ms = 0;
            mem_name_drop(sh, e);
        }
        if (what & SUSPECT_RESET_WINDOW) {
            e->count = 0;
            e->head = 0;
            if (e->ext != NULL) {
                e->ext->nresv = 0; /* reservations are hits to be */
            }
        }
        if ((what & SUSPECT_RESET_OFFENCES) && e->ext != NULL) {
            e->ext->offences = 0;
            e->ext->offence_until_ms = 0;
        }
        mem_ext_trim(sh, e, 0);
        if (entry_empty(e) && e->lock_until_ms == 0 && e->ext == NULL) {
            mem_shard_remove(sh, e);
        }
    }
    pthread_mutex_unlock(&sh->mu);
    return SUSPECT_OK;
}

suspect_rc_t mem_op_block(suspect_store_t *store, const suspect_key_t *key,
                          int64_t now_ms, int64_t until_ms, suspect_err_t *err)
{
    memstore_t *ms = (memstore_t *)store;
    uint64_t h[2];
    shard_t *sh = lock_key(ms, key, h);
    entry_t *e = shard_find(sh, h);
    working_set_t ws = {{NULL}, NULL, 0};
    bool full = false;

    if (e == NULL) {
        e = mem_shard_insert(ms, sh, &ws, h, 0, now_ms, &full);
    }
    if (e != NULL) {
        mcell_t *c = mem_mtab_find(sh, h[1]);

        e->lock_until_ms = until_ms;
        mem_name_keep(ms, sh, e, key->buf, key->window_len);
        (void)mem_entry_tidy(sh, e, now_ms);
        if (c != NULL) {
            mem_meter_hold(c, until_ms); /* its meter outlives the lock */
        }
    }
    pthread_mutex_unlock(&sh->mu);
    if (e == NULL && full) {
        return suspect_err_set(err, SUSPECT_E_FULL, NULL, 0,
                               "memory store: full of live locks "
                               "(maxEntries %zu)",
                               ms->max_entries);
    }
    if (e == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "memory store: out of memory");
    }
    return SUSPECT_OK;
}

/* Drops the lock of e (NULL = none) and makes room in rule's meter in c
 * (NULL = none) for one more request (suspect_store_unblock()). */
static void meter_unblock(entry_t *e, mcell_t *c, const suspect_rule_t *rule,
                          int64_t now_ms, suspect_unblock_t *out)
{
    suspect_window_state_t st;
    suspect_meter_t m;

    if (e != NULL) {
        mem_meter_adopt(e, rule);
        out->lock_until_ms = entry_locked(e, now_ms) ? e->lock_until_ms : 0;
        e->lock_until_ms = 0;
    }
    if (c != NULL) {
        mem_meter_get(c, rule, &m);
        out->dropped = suspect_meter_make_room(rule, &m, now_ms);
        mem_meter_put(c, rule, &m, now_ms, 0);
    }
    mem_meter_state(e, c, rule, now_ms, &st);
    out->kept = st.in_window;
}

/* Drops e's lock and, when its window is full, its oldest hits, so that
 * one more fits (suspect_store_unblock()). */
static void entry_unblock(entry_t *e, const suspect_rule_t *rule,
                          int64_t now_ms, suspect_unblock_t *out)
{
    entry_trim(e, now_ms - (int64_t)rule->window_s * 1000);
    out->lock_until_ms = entry_locked(e, now_ms) ? e->lock_until_ms : 0;
    e->lock_until_ms = 0;
    if (e->count >= rule->limit_count) {
        out->dropped = e->count - rule->limit_count + 1;
        e->head = ring_index(e, out->dropped);
        e->count -= out->dropped;
    }
    out->kept = e->count;
}

suspect_rc_t mem_op_unblock(suspect_store_t *store, const suspect_rule_t *rule,
                            const suspect_key_t *key, int64_t now_ms,
                            suspect_unblock_t *out, suspect_err_t *err)
{
    uint64_t h[2];
    shard_t *sh = lock_key((memstore_t *)store, key, h);
    entry_t *e = shard_find(sh, h);

    (void)err;
    if (suspect_rule_metered(rule)) {
        meter_unblock(e, mem_mtab_find(sh, h[1]), rule, now_ms, out);
    } else if (e != NULL) {
        entry_unblock(e, rule, now_ms, out);
    }
    if (e != NULL) {
        mem_name_drop(sh, e);
        if (entry_empty(e) && e->ext == NULL) {
            mem_shard_remove(sh, e);
        }
    }
    pthread_mutex_unlock(&sh->mu);
    return SUSPECT_OK;
}

/* The live named locks of one shard, copied out under its mutex. */
typedef struct lock_copy {
    char *key;
    size_t len;
    int64_t until_ms;
} lock_copy_t;

/* Copies the shard's live locks whose key starts with prefix into a new
 * array (*out, *n; the caller frees it and each key); false when out of
 * memory. */
static bool shard_locks(shard_t *sh, const char *prefix, int64_t now_ms,
                        lock_copy_t **out, size_t *n)
{
    size_t plen = strlen(prefix), cap = 0;
    lock_copy_t *v = NULL;
    bool ok = true;

    *n = 0;
    pthread_mutex_lock(&sh->mu);
    for (const lock_name_t *ln = sh->names; ok && ln != NULL; ln = ln->next) {
        const entry_t *e = shard_find(sh, ln->h);

        if (e == NULL || !entry_locked(e, now_ms) || ln->len < plen ||
            memcmp(ln->key, prefix, plen) != 0) {
            continue;
        }
        if (*n == cap) {
            lock_copy_t *nv;

            cap = cap != 0 ? 2 * cap : 16;
            nv = suspect_realloc(v, cap * sizeof(*v));
            ok = nv != NULL;
            v = nv != NULL ? nv : v;
        }
        if (ok && (v[*n].key = suspect_malloc(ln->len)) == NULL) {
            ok = false;
        }
        if (ok) {
            memcpy(v[*n].key, ln->key, ln->len);
            v[*n].len = ln->len;
            v[(*n)++].until_ms = e->lock_until_ms;
        }
    }
    pthread_mutex_unlock(&sh->mu);
    *out = v;
    return ok;
}

/* Lists the named live locks, a shard at a time, with the callback
 * outside the mutex. */
suspect_rc_t mem_op_foreach_locked(suspect_store_t *store, const char *prefix,
                                   int64_t now_ms, suspect_locked_fn fn,
                                   void *arg, suspect_err_t *err)
{
    memstore_t *ms = (memstore_t *)store;
    bool stop = false, ok = true;

    for (size_t i = 0; i < ms->nshards && !stop && ok; i++) {
        lock_copy_t *v = NULL;
        size_t n = 0;

        ok = shard_locks(shard_at(ms, i), prefix, now_ms, &v, &n);
        for (size_t k = 0; k < n; k++) {
            stop =
                stop || (ok && fn(arg, v[k].key, v[k].len, v[k].until_ms) != 0);
            free(v[k].key);
        }
        free(v);
    }
    return ok ? SUSPECT_OK
              : suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                                "memory store: out of memory");
}

/* Puts k hits at at_ms among e's hits, in order; the ring has room. */
static void entry_insert_hits(entry_t *e, uint32_t k, int64_t at_ms)
{
    uint32_t n = e->count, before = 0;

    while (before < n && e->hits[ring_index(e, before)] <= at_ms) {
        before++;
    }
    /* the hits after at_ms move k reservations on, the newest first */
    for (uint32_t i = n; i > before; i--) {
        e->hits[ring_index(e, i - 1 + k)] = e->hits[ring_index(e, i - 1)];
    }
    for (uint32_t i = 0; i < k; i++) {
        e->hits[ring_index(e, before + i)] = at_ms;
    }
    e->count = n + k;
}

/* Fills rule's meter of the identity h (entry e, NULL = none) in sh:
 * takes at at_ms what it lacks at now of hits units in use (the prefill
 * op's "at least hits", suspect_store_impl.h). */
static suspect_rc_t meter_prefill(memstore_t *ms, shard_t *sh, entry_t *e,
                                  const uint64_t h[2],
                                  const suspect_rule_t *rule, uint32_t hits,
                                  int64_t at_ms, int64_t now_ms)
{
    working_set_t ws = {{NULL}, NULL, 0};
    mcell_t *c = mem_mtab_find(sh, h[1]);
    suspect_window_state_t st;
    bool full = false;

    if (e != NULL) {
        mem_meter_adopt(e, rule);
    }
    mem_meter_state(e, c, rule, now_ms, &st);
    if (st.in_window >= hits) {
        return SUSPECT_OK;
    }
    if (c == NULL) {
        c = mem_meter_new(ms, sh, &ws, h[1], now_ms, &full);
    }
    if (c == NULL) {
        return full ? SUSPECT_E_FULL : SUSPECT_E_NOMEM;
    }
    mem_meter_take(c, rule, at_ms, hits - st.in_window, now_ms,
                   e != NULL ? e->lock_until_ms : 0);
    return SUSPECT_OK;
}

/* Fills rule's log of hits of the identity h in sh with hits at at_ms. */
static suspect_rc_t log_prefill(memstore_t *ms, shard_t *sh, entry_t *e,
                                const uint64_t h[2], const suspect_rule_t *rule,
                                uint32_t hits, int64_t at_ms, int64_t now_ms)
{
    working_set_t ws = {{NULL}, NULL, 0};
    suspect_rc_t rc = SUSPECT_OK;
    bool full = false;

    if (e == NULL) {
        e = mem_shard_insert(ms, sh, &ws, h, 0, now_ms, &full);
    }
    if (e == NULL) {
        return full ? SUSPECT_E_FULL : SUSPECT_E_NOMEM;
    }
    entry_trim(e, now_ms - (int64_t)rule->window_s * 1000);
    if (e->count < hits) {
        uint32_t k = hits - e->count;

        rc = mem_entry_reserve_n(sh, &e, rule, k);
        if (rc == SUSPECT_OK) {
            entry_insert_hits(e, k, at_ms);
            entry_set_rule(e, rule);
        }
    }
    (void)mem_entry_tidy(sh, e, now_ms);
    return rc;
}

suspect_rc_t mem_op_prefill(suspect_store_t *store, const suspect_rule_t *rule,
                            const suspect_key_t *key, uint32_t hits,
                            int64_t at_ms, int64_t now_ms, suspect_err_t *err)
{
    memstore_t *ms = (memstore_t *)store;
    int64_t cutoff = now_ms - (int64_t)rule->window_s * 1000;
    suspect_rc_t rc;
    uint64_t h[2];
    shard_t *sh;
    entry_t *e;

    hits =
        hits < suspect_rule_capacity(rule) ? hits : suspect_rule_capacity(rule);
    if (hits == 0 || at_ms <= cutoff || at_ms > now_ms) {
        return SUSPECT_OK; /* nothing of it is in the window */
    }
    sh = lock_key(ms, key, h);
    e = shard_find(sh, h);
    rc = suspect_rule_metered(rule)
             ? meter_prefill(ms, sh, e, h, rule, hits, at_ms, now_ms)
             : log_prefill(ms, sh, e, h, rule, hits, at_ms, now_ms);
    pthread_mutex_unlock(&sh->mu);
    if (rc != SUSPECT_OK) {
        return suspect_err_set(err, rc, NULL, 0, "memory store: %s",
                               rc == SUSPECT_E_FULL ? "full of live locks"
                                                    : "out of memory");
    }
    return SUSPECT_OK;
}
