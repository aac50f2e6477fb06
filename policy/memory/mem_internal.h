/*
 * mem_internal.h - what the files of the memory store share: an entry (one
 * identity's hits and lock), a shard (a mutex, a hash table, an LRU list),
 * the store, and the table operations of mem_table.c, and the operator
 * operations of mem_ops.c that the store's table names.  The small entry and
 * lookup helpers that every decision runs are inline here.
 *
 * Layout.  S shards (a power of two, default 64), each with its own mutex,
 * a chained hash table of power-of-two size (doubling when it holds more
 * entries than buckets, up to the shard's bound), LRU lists (head = most
 * recently used: one per rank of counters, one of held entries; see
 * mem_table.c), a table of meter cells (mem_meter_table.c) and counters
 * of entries, cells and bytes.  An entry is 72 bytes
 * (checked below) followed by a ring of int64 hit timestamps:
 *
 *   h[2] 16 | chain next 8 | lru prev, next 16 | lock_until_ms 8 |
 *   count 4 | window_s 25 bits, rank 5, named 1, held 1 |
 *   head, cap, limit 21 bits each | ext 8 | hits[cap] 8 each
 *
 * The bit widths hold SUSPECT_DURATION_MAX and SUSPECT_LIMIT_COUNT_MAX
 * (checked below); a ring never holds more hits than a limit allows.
 *
 * The ring holds the hits oldest first from index head, ascending (a hit is
 * recorded at max(now, newest), so a clock that steps back a little keeps
 * it sorted).  It starts at min(limit, 4) cells and doubles, up to what the
 * rule needs (limit_count, or the current count + 1 if a lowered limit left
 * more hits than that); it never shrinks.  Growing it reallocates the entry,
 * which is then relinked in its chain and the LRU list.  An entry's expiry
 * is not stored: it is max(newest hit + window_s, lock_until_ms), with
 * window_s the window of the last decision on it.
 *
 * At its limit.  limit is the LimitCount of the last decision on the
 * entry: while its window holds that many hits (the hit number count -
 * limit, from 0, is newer than now - window_s), the next request is
 * denied, and for a rule without BlockDuration that count is the lock, so
 * eviction spares the entry like a locked one (entry_at_limit()).
 *
 * Meters.  An identity of an action counted by a token bucket or a
 * sliding counter (meter.h) keeps no entry for its count: its meter is a
 * 32-byte cell of its shard's meter table (mem_meter_table.c draws it),
 * whatever the limit.  An entry is made for such an identity only to hold
 * what a meter cell does not: a lock, an offence count, a name.  An entry
 * whose hits are another algorithm's than the decision's rule (a live
 * reload changed the action) forgets them: mem_meter_adopt() keeps its
 * lock and offences, so a reload never lets a locked identity in; a cell
 * whose algorithm is not the rule's is read as empty and started afresh.
 *
 * Extension.  An entry that holds reservations or an
 * offence count (escalating rules) points at an entry_ext_t of its own
 * (mem_ext.c); the others pay 8 bytes for the NULL pointer.  An entry with
 * a live reservation or a remembered offence outlives its hits and lock until
 * those end, and eviction takes it only after entries without them, as a
 * locked one.
 *
 * Names.  Listing the locks needs keys, and entries hold only hashes: an
 * entry that gets a lock has its window key kept beside it, in its shard's
 * list of names (found by the entry's hashes; `named` says it has one),
 * within the shard's name budget (mem_table.c).
 *
 * Everything here is reached under the entry's shard mutex.
 */
#ifndef SUSPECT_MEM_INTERNAL_H
#define SUSPECT_MEM_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "meter.h"
#include "siphash.h"
#include "suspect_store_impl.h"

#define DEFAULT_MAX_ENTRIES 200000
#define DEFAULT_SHARDS      64
#define MAX_SHARDS          65536
#define MIN_PER_SHARD       64 /* fewer shards than that for a small store */
#define INITIAL_BUCKETS     8
#define INITIAL_RING        4
#define EXPIRE_ON_INSERT    2  /* expired tail entries freed on every insert */
#define EVICT_SCAN          16 /* tail entries looked at to evict one */
#define NRANKS              32 /* counter lists: ranks 0 .. 31 */
#define EXACT_RANKS         16 /* counts 0 .. 15 have a rank each */

/* The key of a locked entry, kept so the store can list its locks. */
typedef struct lock_name {
    struct lock_name *next;
    uint64_t h[2];
    size_t len;
    char key[];
} lock_name_t;

/* A reservation: a reservation not yet settled. */
typedef struct mem_resv {
    uint64_t id;
    int64_t at_ms;  /* taken at: the hit's time if it counts */
    int64_t end_ms; /* a hit from then on, unless settled before */
} mem_resv_t;

/* What only some entries hold (see the top of this file). */
typedef struct entry_ext {
    int64_t offence_until_ms; /* offences forgotten from then on */
    uint32_t offences;
    uint32_t nresv;
    uint32_t cap;
    mem_resv_t resv[];
} entry_ext_t;

typedef struct entry {
    uint64_t h[2];
    struct entry *next; /* hash chain */
    struct entry *lru_prev, *lru_next;
    int64_t lock_until_ms;  /* locked while now < lock_until_ms; 0 = none */
    uint32_t count;         /* hits in the ring */
    uint32_t window_s : 25; /* window of the last decision, for expiry */
    uint32_t rank : 5;      /* the counter list it is in, when not held */
    uint32_t named : 1;     /* its key is in the shard's names */
    uint32_t held : 1;      /* in the shard's list of held entries */
    uint64_t head : 21;     /* ring index of the oldest hit */
    uint64_t cap : 21;      /* ring cells */
    uint64_t limit : 21;    /* LimitCount of the last decision, 0 = none */
    entry_ext_t *ext;       /* reservations and offences, NULL = none */
    int64_t hits[];
} entry_t;

_Static_assert(sizeof(void *) != 8 || sizeof(entry_t) == 72,
               "an entry is 72 bytes before its hits on 64-bit hosts");
_Static_assert(SUSPECT_DURATION_MAX < (1u << 25), "window_s fits 25 bits");
_Static_assert(SUSPECT_LIMIT_COUNT_MAX < (1u << 21),
               "head, cap and limit fit 21 bits");

/* A meter's cell in its shard's meter table (mem_meter_table.c). */
typedef struct mcell {
    uint64_t h1;     /* the identity's h[1] (its h[0] chose the shard) */
    uint32_t end_s;  /* 0: an empty cell; else the meter says nothing from
                        then on (epoch s, rounded up) */
    uint32_t hold_s; /* eviction spares it until then (epoch s, rounded
                        up): full, or its identity locked */
    int64_t at;      /* the meter's at (meter.h) */
    uint64_t cur : 31;
    uint64_t prev : 31;
    uint64_t algo : 2; /* the suspect_algorithm_t that wrote it */
} mcell_t;

_Static_assert(sizeof(mcell_t) == 32, "a meter cell is 32 bytes");

typedef struct shard {
    pthread_mutex_t mu;
    entry_t **buckets;
    size_t nbuckets;           /* a power of two */
    size_t count;              /* entries */
    size_t bytes;              /* entry, bucket and name allocations */
    entry_t *cnt_head[NRANKS]; /* counters (not held), by rank */
    entry_t *cnt_tail[NRANKS];
    uint32_t ranks; /* bit r: cnt_head[r] is not empty */
    uint32_t sweep; /* the next rank expiry looks at */
    entry_t *held_head,
        *held_tail;     /* locked, at limit, reservations, offences */
    lock_name_t *names; /* keys of locked entries, for listing */
    size_t names_bytes;
    mcell_t *mcells; /* the meter table: mcap cells, mcount in use */
    uint32_t mcap, mcount;
    uint32_t mcursor; /* where its expiry and eviction look next */
} shard_t;

/* Shards padded to whole cache lines, so two mutexes never share one. */
typedef union shard_cell {
    shard_t s;
    char pad[(sizeof(shard_t) + 63) / 64 * 64];
} shard_cell_t;

typedef struct memstore {
    suspect_store_t base; /* first: a suspect_store_t * is a memstore_t * */
    suspect_siphash_key_t secret;
    size_t nshards;     /* a power of two */
    size_t max_entries; /* as configured, for messages */
    size_t max_per_shard;
    size_t max_buckets; /* a power of two >= max_per_shard */
    size_t names_max;   /* name bytes per shard at most */
    void *cells_raw;    /* what suspect_malloc returned */
    shard_cell_t *cells;
} memstore_t;

/* The entries and meters one decision works on, which eviction must leave
 * alone: e[i] is identity i's entry (NULL = none), h[i] its hashes
 * (h NULL: no meter is the call's). */
typedef struct working_set {
    entry_t *e[SUSPECT_MAX_IDENTITIES];
    const uint64_t (*h)[2];
    size_t n;
} working_set_t;

/* ---- entries ------------------------------------------------------------ */

static inline size_t entry_size(uint32_t cap)
{
    return sizeof(entry_t) + (size_t)cap * sizeof(int64_t);
}

/* The ring cell of the i-th hit, 0 being the oldest. */
static inline uint32_t ring_index(const entry_t *e, uint32_t i)
{
    uint32_t idx = e->head + i;
    return idx >= e->cap ? idx - e->cap : idx;
}

static inline int64_t entry_newest(const entry_t *e)
{
    return e->hits[ring_index(e, e->count - 1)];
}

/* Drops the hits at or before cutoff (they left the window). */
static inline void entry_trim(entry_t *e, int64_t cutoff)
{
    while (e->count > 0 && e->hits[e->head] <= cutoff) {
        e->head = ring_index(e, 1);
        e->count--;
    }
    if (e->count == 0) {
        e->head = 0;
    }
}

/* True when e holds a reservation or an offence that still matters at now (a
 * reservation past its end is a hit to come: it matters until it is one). */
static inline bool entry_ext_live(const entry_t *e, int64_t now_ms)
{
    return e->ext != NULL &&
           (e->ext->nresv > 0 || e->ext->offence_until_ms > now_ms);
}

/* True when nothing in e matters any more at now. */
static inline bool entry_expired(const entry_t *e, int64_t now_ms)
{
    if (e->lock_until_ms > now_ms || entry_ext_live(e, now_ms)) {
        return false;
    }
    return e->count == 0 ||
           entry_newest(e) + (int64_t)e->window_s * 1000 <= now_ms;
}

static inline bool entry_locked(const entry_t *e, int64_t now_ms)
{
    return e->lock_until_ms > now_ms;
}

/* True when e's window holds its rule's limit at now (see the top). */
static inline bool entry_at_limit(const entry_t *e, int64_t now_ms)
{
    return e->limit > 0 && e->count >= e->limit &&
           e->hits[ring_index(e, (uint32_t)(e->count - e->limit))] +
                   (int64_t)e->window_s * 1000 >
               now_ms;
}

/* True when eviction should spare e like a locked entry. */
static inline bool entry_held(const entry_t *e, int64_t now_ms)
{
    return entry_locked(e, now_ms) || entry_ext_live(e, now_ms) ||
           entry_at_limit(e, now_ms);
}

/* The rank of a counter of count hits: count itself below EXACT_RANKS,
 * then one rank per power of two (12 + floor(log2 count)), at most
 * NRANKS - 1.  Eviction takes the lowest rank first. */
static inline uint32_t rank_of(uint32_t count)
{
    uint32_t r = 12; /* 16 = 2^4 has rank 16 */

    if (count < EXACT_RANKS) {
        return count;
    }
    while (count > 1 && r < NRANKS - 1) {
        count >>= 1;
        r++;
    }
    return r;
}

/* True when e has no hit. */
static inline bool entry_empty(const entry_t *e)
{
    return e->count == 0;
}

/* Records the rule of a decision on e: its window and its limit. */
static inline void entry_set_rule(entry_t *e, const suspect_rule_t *rule)
{
    e->window_s = rule->window_s;
    e->limit = rule->limit_count;
}

/* Appends a hit at max(now, newest); the ring has room. */
static inline void entry_record(entry_t *e, int64_t now_ms)
{
    int64_t ts = now_ms;
    if (e->count > 0 && entry_newest(e) > ts) {
        ts = entry_newest(e);
    }
    e->hits[ring_index(e, e->count)] = ts;
    e->count++;
}

static inline size_t entry_ext_size(uint32_t cap)
{
    return sizeof(entry_ext_t) + (size_t)cap * sizeof(mem_resv_t);
}

/* Frees e's extension and counts its bytes off sh. */
static inline void entry_ext_release(shard_t *sh, entry_t *e)
{
    if (e->ext != NULL) {
        sh->bytes -= entry_ext_size(e->ext->cap);
        free(e->ext);
        e->ext = NULL;
    }
}

static inline shard_t *shard_at(memstore_t *ms, size_t i)
{
    return &ms->cells[i].s;
}

static inline size_t shard_index(const memstore_t *ms, const uint64_t h[2])
{
    return (size_t)(h[0] & (ms->nshards - 1));
}

static inline entry_t **bucket_of(shard_t *sh, const uint64_t h[2])
{
    return &sh->buckets[h[1] & (sh->nbuckets - 1)];
}

static inline entry_t *shard_find(shard_t *sh, const uint64_t h[2])
{
    entry_t *e = *bucket_of(sh, h);
    while (e != NULL && (e->h[0] != h[0] || e->h[1] != h[1])) {
        e = e->next;
    }
    return e;
}

/* ---- mem_table.c -------------------------------------------------------- */

/* Unlinks e from its chain and the LRU list and frees it. */
void mem_shard_remove(shard_t *sh, entry_t *e);

/* Makes room in sh for one more entry or meter cell (expiry, then
 * eviction of an entry, then of a cell); false when the shard is full and
 * nothing may go. */
bool mem_shard_make_room(memstore_t *ms, shard_t *sh, const working_set_t *ws,
                         int64_t now_ms);

/* Moves e to the head of the LRU list (most recently used). */
void mem_lru_touch(shard_t *sh, entry_t *e, int64_t now_ms);

/* Creates the entry h with cap ring cells at the LRU head of sh, making
 * room first (never evicting an entry of ws, nor a live lock).  NULL when
 * out of memory, or with *full set when the shard is full of entries that
 * are held (locks, reservations, offences) or in ws: nothing may go (the store
 * is then as it was, less what making room dropped).  full may be NULL. */
entry_t *mem_shard_insert(memstore_t *ms, shard_t *sh, const working_set_t *ws,
                          const uint64_t h[2], uint32_t cap, int64_t now_ms,
                          bool *full);

/* Makes room in *ep's ring for one more hit under rule, moving the entry
 * to a larger block if needed (its links follow).  SUSPECT_E_NOMEM leaves
 * it as it was. */
suspect_rc_t mem_entry_reserve(shard_t *sh, entry_t **ep,
                               const suspect_rule_t *rule);

/* Makes *ep's ring at least cap cells (the entry moves as in
 * mem_entry_reserve()).  SUSPECT_E_NOMEM leaves it as it was. */
suspect_rc_t mem_entry_grow(shard_t *sh, entry_t **ep, uint32_t cap);

/* Makes room in *ep's ring for k more hits (see mem_entry_reserve()). */
suspect_rc_t mem_entry_reserve_n(shard_t *sh, entry_t **ep,
                                 const suspect_rule_t *rule, uint32_t k);

/* Frees every entry of sh, its names and its table; the mutex is left to
 * the caller. */
void mem_shard_clear(shard_t *sh);

/*
 * Keeps the window key key[0..len) of e, which has just been locked, in
 * the shard's names (once per entry), unless the shard's name budget
 * (ms->names_max) is spent or memory is short: the lock stands either
 * way, it is only left out of listings.
 */
void mem_name_keep(memstore_t *ms, shard_t *sh, entry_t *e, const char *key,
                   size_t len);

/* Forgets e's name (its lock was lifted); mem_shard_remove() does it too. */
void mem_name_drop(shard_t *sh, entry_t *e);

/* ---- mem_ops.c ---------------------------------------------------------- */

/* The store's status, reset, block, unblock and foreach_locked (see
 * suspect_store_impl.h). */
suspect_rc_t mem_op_status(suspect_store_t *store, const suspect_rule_t *rule,
                           const suspect_key_t *key, int64_t now_ms,
                           suspect_status_t *out, suspect_err_t *err);
suspect_rc_t mem_op_reset(suspect_store_t *store, const suspect_key_t *key,
                          unsigned what, suspect_err_t *err);
suspect_rc_t mem_op_block(suspect_store_t *store, const suspect_key_t *key,
                          int64_t now_ms, int64_t until_ms, suspect_err_t *err);
suspect_rc_t mem_op_unblock(suspect_store_t *store, const suspect_rule_t *rule,
                            const suspect_key_t *key, int64_t now_ms,
                            suspect_unblock_t *out, suspect_err_t *err);
suspect_rc_t mem_op_foreach_locked(suspect_store_t *store, const char *prefix,
                                   int64_t now_ms, suspect_locked_fn fn,
                                   void *arg, suspect_err_t *err);

/* The memory store's prefill operation (suspect_store_impl.h). */
suspect_rc_t mem_op_prefill(suspect_store_t *store, const suspect_rule_t *rule,
                            const suspect_key_t *key, uint32_t hits,
                            int64_t at_ms, int64_t now_ms, suspect_err_t *err);

/* ---- mem_ext.c ---------------------------------------------------------- */

/* Makes sure e has an extension with room for one more reservation when
 * want_resv; SUSPECT_E_NOMEM leaves e as it was. */
suspect_rc_t mem_ext_reserve(shard_t *sh, entry_t *e, bool want_resv);

/* Turns the reservations of *ep whose end has come into hits at their times
 * (the ring may move: *ep follows).  SUSPECT_E_NOMEM leaves them reservations,
 * which the state still counts as hits. */
suspect_rc_t mem_ext_expire(shard_t *sh, entry_t **ep,
                            const suspect_rule_t *rule, int64_t now_ms);

/* Adds e's reservations and offences at now to st (whose hits the caller
 * counted): live reservations as pending, ended ones as hits in the window. */
void mem_ext_state(const entry_t *e, const suspect_rule_t *rule, int64_t now_ms,
                   suspect_window_state_t *st);

/* Adds a reservation (mem_ext_reserve(sh, e, true) first). */
void mem_ext_add_resv(entry_t *e, uint64_t id, int64_t at_ms, int64_t end_ms);

/* Removes the reservation id; true with *reservation filled when e held it. */
bool mem_ext_take_resv(entry_t *e, uint64_t id, mem_resv_t *resv);

/* Inserts a hit at ts in e's ring, keeping it sorted (the ring has room). */
void mem_ring_insert(entry_t *e, int64_t ts);

/* Frees e's extension when it holds nothing that matters at now. */
void mem_ext_trim(shard_t *sh, entry_t *e, int64_t now_ms);

/* ---- mem_meter_table.c -------------------------------------------------- */

/* The cell of the meter h1 in sh, NULL when it has none. */
mcell_t *mem_mtab_find(shard_t *sh, uint64_t h1);

/* Adds an empty cell for h1 (not in sh; room made for it); NULL when out
 * of memory.  The cell's place holds until the next insert or removal in
 * sh. */
mcell_t *mem_mtab_insert(shard_t *sh, uint64_t h1);

/* Empties the cell c of sh (the cells after it may move). */
void mem_mtab_remove(shard_t *sh, mcell_t *c);

/* Frees up to max ended cells of sh (not in ws) from its cursor on. */
void mem_mtab_expire(shard_t *sh, const working_set_t *ws, int64_t now_ms,
                     int max);

/* Drops one cell of sh: among the EVICT_SCAN looked at from its cursor
 * on, an ended one, else the one that ends first; never one held or in
 * ws.  False when none may go. */
bool mem_mtab_evict_one(shard_t *sh, const working_set_t *ws, int64_t now_ms);

/* Cells of ws's identities in sh. */
size_t mem_mtab_own(shard_t *sh, const working_set_t *ws);

/* Frees sh's meter table. */
void mem_mtab_clear(shard_t *sh);

/* ---- mem_meter.c -------------------------------------------------------- */

/* Forgets e's hits and reservations when rule counts with a meter (its
 * algorithm changed); keeps its lock and offences. */
void mem_meter_adopt(entry_t *e, const suspect_rule_t *rule);

/* The window state of rule's meter in c (NULL or another algorithm's:
 * empty) at now, with the lock and offences of e (NULL = none). */
void mem_meter_state(const entry_t *e, const mcell_t *c,
                     const suspect_rule_t *rule, int64_t now_ms,
                     suspect_window_state_t *st);

/* A new empty cell for the identity h1 of sh, room made for it first
 * (mem_shard_make_room()); NULL when out of memory, or with *full set
 * when nothing may go. */
mcell_t *mem_meter_new(memstore_t *ms, shard_t *sh, const working_set_t *ws,
                       uint64_t h1, int64_t now_ms, bool *full);

/* Reads c as rule's meter (another algorithm's: empty). */
void mem_meter_get(const mcell_t *c, const suspect_rule_t *rule,
                   suspect_meter_t *m);

/* Writes m into c as rule's meter at now, with when it ends and how long
 * eviction must spare it: while the next request does not fit, and until
 * lock_ms (its identity's lock, 0 = none). */
void mem_meter_put(mcell_t *c, const suspect_rule_t *rule,
                   const suspect_meter_t *m, int64_t now_ms, int64_t lock_ms);

/* Keeps c, held, at least until until_ms (its identity's new lock). */
void mem_meter_hold(mcell_t *c, int64_t until_ms);

/* Takes (take) or gives back units of rule's meter in c at at_ms (now_ms
 * and lock_ms as in mem_meter_put()). */
void mem_meter_take(mcell_t *c, const suspect_rule_t *rule, int64_t at_ms,
                    uint32_t units, int64_t now_ms, int64_t lock_ms);
void mem_meter_give(mcell_t *c, const suspect_rule_t *rule, int64_t at_ms,
                    uint32_t units, int64_t now_ms, int64_t lock_ms);

/* True when c says nothing any more at now. */
static inline bool mcell_ended(const mcell_t *c, int64_t now_ms)
{
    return (int64_t)c->end_s * 1000 <= now_ms;
}

/* True when eviction must spare c at now. */
static inline bool mcell_held(const mcell_t *c, int64_t now_ms)
{
    return (int64_t)c->hold_s * 1000 > now_ms;
}

/* ---- mem_ext.c, continued ---------------------------------------------- */

/* Frees e when nothing in it matters at now (no hit, no live lock, no
 * extension), else makes it the most recently used; returns e or NULL. */
entry_t *mem_entry_tidy(shard_t *sh, entry_t *e, int64_t now_ms);

#endif
