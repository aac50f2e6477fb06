/*
 * mem_table.c - the memory store's tables: a shard's chained hash table
 * and LRU lists, the growth of entries and tables, and the bounds (expiry
 * and eviction) that keep a shard within its share of max_entries.
 *
 * Bounds.  A shard holds at most ceil(max_entries / S) entries; S is lowered
 * (to a power of two) when max_entries is smaller than S, so the store holds
 * at most max_entries + S - 1.  An entry is held when it has a live lock,
 * reservations, a live offence count, or a count at its rule's limit
 * (mem_internal.h, entry_at_limit(): the next request is denied, and without
 * BlockDuration that count is the lock); the others are counters.  A
 * shard keeps one LRU list of held entries and NRANKS of counters, one per
 * rank: a counter's rank is its hits in the window at its last decision
 * (rank_of(): the count itself up to 15, then one rank per power of two).
 * A decision or an operator moves an entry to the list it now belongs to;
 * a held entry whose hold has ended since stays in the held list until
 * then.  Every insert first frees up to 2 expired entries at the tail of
 * the lowest rank, of one other rank in turn and of the held list (as
 * nginx limit_req does).  If the shard is still full it drops, among the
 * 16 counters looked at from the lowest rank up (each rank from its least
 * recently used), the first expired one, else the first looked at: the
 * counter with the fewest hits, the least recently used among equals.
 * Without a counter, it drops a held entry that holds nothing any more
 * (among the 16 least recently used); a held entry is never evicted.
 * Meters (mem_meter_table.c) count against the same bound and go last:
 * an ended one, else the one that ends first.  A
 * shard full of held entries and meters takes no new one: the insert fails
 * (*full) and the decision with it (SUSPECT_E_FULL), so the locks hold and the
 * operator's max_entries, not an attacker's flood, is the bound.
 *
 * What a flood costs.  A counter of h hits (below its limit) goes only
 * when every other counter of its shard ranks as high: h hits or more
 * for h < 16, else 2^floor(log2 h) or more, each counted in one window at
 * its last decision; among those of its rank, the more recently used stay.
 * An attacker who cannot see the shards (SipHash under a secret) must so
 * give about max_entries fresh identities that many hits each to push a
 * victim's count of h out (h = 1: max_entries identities, as plain LRU
 * asked); a count at the limit he cannot push out at all.
 *
 * Entries of the decision in progress are never evicted by it; if a shard
 * holds nothing else it goes over its bound by at most n - 1 entries
 * until the next insert expires or evicts them.
 *
 * Names.  The keys of locked entries (mem_internal.h) use at most
 * ms->names_max bytes per shard: past that a new lock keeps no name, so a
 * flood of locked hostile values cannot grow the store past its bound by
 * more than that budget.  A name goes with its entry.
 *
 * Every function here runs under the shard's mutex, held by the caller
 * (memstore.c), and keeps the shard's entry and byte counters exact.
 */
#include "mem_internal.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"

/* The link that points at e in its chain. */
static entry_t **chain_link(shard_t *sh, const entry_t *e)
{
    entry_t **link = bucket_of(sh, e->h);
    while (*link != e) {
        link = &(*link)->next;
    }
    return link;
}

/* The head and tail of the list e is in. */
static entry_t **list_head(shard_t *sh, const entry_t *e)
{
    return e->held ? &sh->held_head : &sh->cnt_head[e->rank];
}

static entry_t **list_tail(shard_t *sh, const entry_t *e)
{
    return e->held ? &sh->held_tail : &sh->cnt_tail[e->rank];
}

static void lru_unlink(shard_t *sh, entry_t *e)
{
    if (e->lru_prev != NULL) {
        e->lru_prev->lru_next = e->lru_next;
    } else {
        *list_head(sh, e) = e->lru_next;
    }
    if (e->lru_next != NULL) {
        e->lru_next->lru_prev = e->lru_prev;
    } else {
        *list_tail(sh, e) = e->lru_prev;
    }
    if (!e->held && sh->cnt_head[e->rank] == NULL) {
        sh->ranks &= ~(1u << e->rank);
    }
}

/* Puts e at the head of the list its held bit and rank name. */
static void lru_push_head(shard_t *sh, entry_t *e)
{
    entry_t **head = list_head(sh, e);

    e->lru_prev = NULL;
    e->lru_next = *head;
    if (*head != NULL) {
        (*head)->lru_prev = e;
    } else {
        *list_tail(sh, e) = e;
    }
    *head = e;
    if (!e->held) {
        sh->ranks |= 1u << e->rank;
    }
}

void mem_lru_touch(shard_t *sh, entry_t *e, int64_t now_ms)
{
    bool held = entry_held(e, now_ms);
    uint32_t rank = held ? 0 : rank_of(e->count);

    if (*list_head(sh, e) == e && e->held == held && e->rank == rank) {
        return;
    }
    lru_unlink(sh, e);
    e->held = held;
    e->rank = rank;
    lru_push_head(sh, e);
}

/* Unlinks e from its chain and the LRU list and frees it. */
void mem_shard_remove(shard_t *sh, entry_t *e)
{
    mem_name_drop(sh, e);
    entry_ext_release(sh, e);
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

/* Frees up to max expired entries from the tail of the list starting at
 * tail, stopping at the first live one (nginx's "expire a few on every
 * insert"). */
static void shard_expire_tail(shard_t *sh, entry_t *tail,
                              const working_set_t *ws, int64_t now_ms, int max)
{
    entry_t *e = tail;
    while (max > 0 && e != NULL) {
        entry_t *prev = e->lru_prev;
        if (!in_working_set(ws, e)) {
            if (!entry_expired(e, now_ms)) {
                return;
            }
            mem_shard_remove(sh, e);
            max--;
        }
        e = prev;
    }
}

/* The lowest rank of ranks at or above from (cyclically); ranks != 0. */
static uint32_t next_rank(uint32_t ranks, uint32_t from)
{
    uint32_t r = from % NRANKS;

    while ((ranks & (1u << r)) == 0) {
        r = (r + 1) % NRANKS;
    }
    return r;
}

/* The expiry of every insert: the tails of the lowest rank, of one other
 * rank in turn (so every rank's tail is looked at within NRANKS inserts)
 * and of the held entries. */
static void shard_expire(shard_t *sh, const working_set_t *ws, int64_t now_ms)
{
    uint32_t low = sh->ranks != 0 ? next_rank(sh->ranks, 0) : 0;
    uint32_t others;

    if (sh->ranks != 0) {
        shard_expire_tail(sh, sh->cnt_tail[low], ws, now_ms, EXPIRE_ON_INSERT);
    }
    others = sh->ranks & ~(1u << low);
    if (others != 0) {
        uint32_t r = next_rank(others, sh->sweep);

        sh->sweep = r + 1;
        shard_expire_tail(sh, sh->cnt_tail[r], ws, now_ms, EXPIRE_ON_INSERT);
    }
    shard_expire_tail(sh, sh->held_tail, ws, now_ms, EXPIRE_ON_INSERT);
}

/* Drops one entry of a full shard: among the EVICT_SCAN counters looked at
 * from the lowest rank up, each rank from its least recently used, the
 * first expired one, else the first looked at (the fewest hits, then the
 * least recently used); without a counter, the first held entry among the
 * EVICT_SCAN oldest that holds nothing any more (a lock that ended, a
 * count that left its limit).  False when nothing may go: the shard is
 * full of live locks, counts at their limit, reservations or offences (and the
 * decision's own entries). */
static bool shard_evict_one(shard_t *sh, const working_set_t *ws,
                            int64_t now_ms)
{
    entry_t *fewest = NULL;
    int seen = 0;

    for (uint32_t left = sh->ranks; left != 0 && seen < EVICT_SCAN;) {
        uint32_t r = next_rank(left, 0);

        left &= ~(1u << r);
        for (entry_t *e = sh->cnt_tail[r]; e != NULL && seen < EVICT_SCAN;
             e = e->lru_prev) {
            if (in_working_set(ws, e)) {
                continue;
            }
            seen++;
            if (entry_expired(e, now_ms)) {
                mem_shard_remove(sh, e);
                return true;
            }
            if (fewest == NULL) {
                fewest = e;
            }
        }
    }
    if (fewest != NULL) {
        mem_shard_remove(sh, fewest);
        return true;
    }
    seen = 0;
    for (entry_t *e = sh->held_tail; e != NULL && seen < EVICT_SCAN;
         e = e->lru_prev) {
        if (!in_working_set(ws, e) && !entry_held(e, now_ms)) {
            mem_shard_remove(sh, e);
            return true;
        }
        seen++;
    }
    return false;
}

bool mem_shard_make_room(memstore_t *ms, shard_t *sh, const working_set_t *ws,
                         int64_t now_ms)
{
    size_t own;

    shard_expire(sh, ws, now_ms);
    mem_mtab_expire(sh, ws, now_ms, EXPIRE_ON_INSERT);
    if (sh->count + sh->mcount < ms->max_per_shard ||
        shard_evict_one(sh, ws, now_ms) || mem_mtab_evict_one(sh, ws, now_ms)) {
        return true;
    }
    /* The decision's own entries and cells do not count against the
     * bound. */
    own = mem_mtab_own(sh, ws);
    for (size_t i = 0; i < ws->n; i++) {
        own += ws->e[i] != NULL && shard_find(sh, ws->e[i]->h) == ws->e[i];
    }
    return sh->count + sh->mcount < ms->max_per_shard + own;
}

/* Creates the entry h with cap ring cells at the LRU head of sh, making
 * room first.  NULL when out of memory (the store is then as it was, less
 * what making room dropped). */
entry_t *mem_shard_insert(memstore_t *ms, shard_t *sh, const working_set_t *ws,
                          const uint64_t h[2], uint32_t cap, int64_t now_ms,
                          bool *full)
{
    entry_t *e;
    entry_t **b;

    if (full != NULL) {
        *full = false;
    }
    if (!mem_shard_make_room(ms, sh, ws, now_ms)) {
        if (full != NULL) {
            *full = true;
        }
        return NULL;
    }
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

/* Ring cells for an entry that must take k more hits under rule. */
static uint32_t ring_target(const entry_t *e, const suspect_rule_t *rule,
                            uint32_t k)
{
    uint64_t want = e->cap == 0 ? INITIAL_RING : (uint64_t)e->cap * 2;
    uint64_t need = (uint64_t)e->count + k;
    uint64_t most = rule->limit_count > need ? rule->limit_count : need;

    want = want > need ? want : need;
    return (uint32_t)(want < most ? want : most);
}

/* Makes room in *ep's ring for one more hit, moving the entry to a larger
 * block if needed (its links follow).  SUSPECT_E_NOMEM leaves it as it was. */
suspect_rc_t mem_entry_reserve(shard_t *sh, entry_t **ep,
                               const suspect_rule_t *rule)
{
    return mem_entry_reserve_n(sh, ep, rule, 1);
}

suspect_rc_t mem_entry_reserve_n(shard_t *sh, entry_t **ep,
                                 const suspect_rule_t *rule, uint32_t k)
{
    if ((uint64_t)(*ep)->count + k <= (*ep)->cap) {
        return SUSPECT_OK;
    }
    return mem_entry_grow(sh, ep, ring_target(*ep, rule, k));
}

suspect_rc_t mem_entry_grow(shard_t *sh, entry_t **ep, uint32_t cap)
{
    entry_t *old = *ep, *e;

    if (cap <= old->cap) {
        return SUSPECT_OK;
    }
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
        *list_head(sh, e) = e;
    }
    if (e->lru_next != NULL) {
        e->lru_next->lru_prev = e;
    } else {
        *list_tail(sh, e) = e;
    }
    sh->bytes += entry_size(cap) - entry_size(old->cap);
    free(old);
    *ep = e;
    return SUSPECT_OK;
}

/* Frees every entry of sh and its table; the mutex is left to the caller. */
void mem_shard_clear(shard_t *sh)
{
    for (lock_name_t *n = sh->names, *next; n != NULL; n = next) {
        next = n->next;
        free(n);
    }
    sh->names = NULL;
    for (int list = 0; list <= NRANKS; list++) {
        entry_t *e = list < NRANKS ? sh->cnt_head[list] : sh->held_head;

        while (e != NULL) {
            entry_t *next = e->lru_next;
            free(e->ext);
            free(e);
            e = next;
        }
    }
    free(sh->buckets);
}

/* ---- names of locked entries ------------------------------------------- */

void mem_name_keep(memstore_t *ms, shard_t *sh, entry_t *e, const char *key,
                   size_t len)
{
    size_t size = sizeof(lock_name_t) + len;
    lock_name_t *n;

    if (e->named || sh->names_bytes + size > ms->names_max) {
        return;
    }
    n = suspect_malloc(size);
    if (n == NULL) {
        return;
    }
    n->h[0] = e->h[0];
    n->h[1] = e->h[1];
    n->len = len;
    memcpy(n->key, key, len);
    n->next = sh->names;
    sh->names = n;
    sh->names_bytes += size;
    sh->bytes += size;
    e->named = 1;
}

void mem_name_drop(shard_t *sh, entry_t *e)
{
    lock_name_t **link = &sh->names;

    if (!e->named) {
        return;
    }
    while (*link != NULL &&
           ((*link)->h[0] != e->h[0] || (*link)->h[1] != e->h[1])) {
        link = &(*link)->next;
    }
    if (*link != NULL) {
        lock_name_t *n = *link;
        size_t size = sizeof(lock_name_t) + n->len;

        *link = n->next;
        sh->names_bytes -= size;
        sh->bytes -= size;
        free(n);
    }
    e->named = 0;
}
