/*
 * mem_meter_table.c - a shard's meter table: the meters of the identities
 * its token buckets and sliding counters count, 32 bytes each, whatever
 * the limit.
 *
 * Why a table of its own.  An entry (mem_internal.h) carries what a log
 * of hits needs: a chain link, LRU links, a lock, a ring, an extension,
 * and malloc's header: 88 bytes and more for a meter of 16.  A meter
 * needs none of it: its lock and offences, when it has any, live in an
 * entry of the identity (memstore.c makes one only then), and eviction
 * can rank meters by when they end, which the meter says.  So meters live
 * in one array per shard, in place:
 *
 *   h1 8 | end_s 4 | hold_s 4 | at 8 | cur 31 bits, prev 31, algo 2
 *
 * Identity.  A cell is named by the identity's h[1]; its h[0], which
 * chose the shard, is not kept.  Two identities of one shard share a
 * cell only when their 64-bit SipHash values under the store's secret
 * meet: about 2^-64 a pair, and out of an attacker's reach since the
 * secret is unknown.
 *
 * Layout.  Open addressing with linear probing, in Robin Hood order: a
 * cell's home is h1 scaled to the table (the high bits of h1 * mcap), an
 * insert takes the place of a cell nearer its own home, so a lookup stops
 * at the first cell nearer its home than the one sought is to its own;
 * a removal shifts the following cells back (no tombstones).  The table
 * grows by half when it is 85% full, so it is between 57% and 85% full
 * once it has grown: 38 to 56 bytes an identity.  An empty cell has
 * end_s 0 (a meter in use ends after 1970).
 *
 * Bounds.  Cells count against the shard's bound with its entries
 * (mem_shard_make_room(), which mem_meter_new() calls first).  Every
 * insert frees up to EXPIRE_ON_INSERT ended cells from a cursor that
 * walks the table; a full shard drops, of EVICT_SCAN cells looked at from
 * the cursor, an ended one, else the one that ends first: the fewest
 * tokens (hits) in use, so an attacker's fresh identities go before a
 * victim's meter that holds more.  A cell that is full (one more request
 * of its cost does not fit), or whose identity is locked, is held and
 * never evicted (hold_s).
 *
 * Everything here runs under the shard's mutex.
 */
#include "mem_internal.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"

#define MTAB_MIN      16
#define MTAB_LOAD_NUM 85 /* grow past 85% full */
#define MTAB_LOAD_DEN 100

/* The home place of h1 in a table of cap cells. */
static uint32_t mtab_home(uint64_t h1, uint32_t cap)
{
    return (uint32_t)(((unsigned __int128)h1 * cap) >> 64);
}

/* How far the cell at i is from its home. */
static uint32_t mtab_dist(const shard_t *sh, uint32_t i)
{
    uint32_t home = mtab_home(sh->mcells[i].h1, sh->mcap);

    return i >= home ? i - home : i + sh->mcap - home;
}

static uint32_t mtab_next(const shard_t *sh, uint32_t i)
{
    return i + 1 == sh->mcap ? 0 : i + 1;
}

mcell_t *mem_mtab_find(shard_t *sh, uint64_t h1)
{
    uint32_t i, d = 0;

    if (sh->mcount == 0) {
        return NULL;
    }
    i = mtab_home(h1, sh->mcap);
    for (;;) {
        mcell_t *c = &sh->mcells[i];

        if (c->h1 == h1 && c->end_s != 0) {
            return c;
        }
        if (c->end_s == 0 || mtab_dist(sh, i) < d) {
            return NULL;
        }
        i = mtab_next(sh, i);
        d++;
    }
}

/* Puts c (not in the table, which has a free cell) in its place; returns
 * where c itself went. */
static mcell_t *mtab_place(shard_t *sh, mcell_t c)
{
    uint32_t i = mtab_home(c.h1, sh->mcap), d = 0;
    mcell_t *mine = NULL;

    for (;;) {
        mcell_t *at = &sh->mcells[i];
        uint32_t ad;

        if (at->end_s == 0) {
            *at = c;
            return mine != NULL ? mine : at;
        }
        ad = mtab_dist(sh, i);
        if (ad < d) {
            mcell_t out = *at;

            *at = c;
            mine = mine != NULL ? mine : at;
            c = out;
            d = ad;
        }
        i = mtab_next(sh, i);
        d++;
    }
}

/* Grows the table by half (or makes it); false when out of memory. */
static bool mtab_grow(shard_t *sh)
{
    uint32_t cap = sh->mcap < MTAB_MIN ? MTAB_MIN : sh->mcap + sh->mcap / 2;
    mcell_t *old = sh->mcells, *cells;
    uint32_t oldcap = sh->mcap;

    cells = suspect_calloc(cap, sizeof(*cells));
    if (cells == NULL) {
        return false;
    }
    sh->mcells = cells;
    sh->mcap = cap;
    for (uint32_t i = 0; i < oldcap; i++) {
        if (old[i].end_s != 0) {
            (void)mtab_place(sh, old[i]);
        }
    }
    free(old);
    sh->bytes += (size_t)(cap - oldcap) * sizeof(*cells);
    return true;
}

mcell_t *mem_mtab_insert(shard_t *sh, uint64_t h1)
{
    mcell_t c;

    if ((uint64_t)(sh->mcount + 1) * MTAB_LOAD_DEN >
            (uint64_t)sh->mcap * MTAB_LOAD_NUM &&
        !mtab_grow(sh)) {
        return NULL;
    }
    memset(&c, 0, sizeof(c));
    c.h1 = h1;
    c.end_s = 1; /* in use; its meter is written next */
    sh->mcount++;
    return mtab_place(sh, c);
}

void mem_mtab_remove(shard_t *sh, mcell_t *c)
{
    uint32_t i = (uint32_t)(c - sh->mcells), j = mtab_next(sh, i);

    while (sh->mcells[j].end_s != 0 && mtab_dist(sh, j) > 0) {
        sh->mcells[i] = sh->mcells[j];
        i = j;
        j = mtab_next(sh, j);
    }
    memset(&sh->mcells[i], 0, sizeof(sh->mcells[i]));
    sh->mcount--;
}

static bool mtab_in_ws(const working_set_t *ws, uint64_t h1)
{
    for (size_t i = 0; ws->h != NULL && i < ws->n; i++) {
        if (ws->h[i][1] == h1) {
            return true;
        }
    }
    return false;
}

size_t mem_mtab_own(shard_t *sh, const working_set_t *ws)
{
    size_t own = 0;

    for (size_t i = 0; ws->h != NULL && i < ws->n; i++) {
        own += mem_mtab_find(sh, ws->h[i][1]) != NULL;
    }
    return own;
}

void mem_mtab_expire(shard_t *sh, const working_set_t *ws, int64_t now_ms,
                     int max)
{
    /* look at twice as many cells as may go: most are in use */
    for (int seen = 0; sh->mcount > 0 && seen < 2 * max && max > 0; seen++) {
        mcell_t *c = &sh->mcells[sh->mcursor % sh->mcap];

        if (c->end_s != 0 && mcell_ended(c, now_ms) && !mtab_in_ws(ws, c->h1)) {
            mem_mtab_remove(sh, c); /* the next cell may have moved here */
            max--;
            continue;
        }
        sh->mcursor = mtab_next(sh, sh->mcursor % sh->mcap);
    }
}

bool mem_mtab_evict_one(shard_t *sh, const working_set_t *ws, int64_t now_ms)
{
    mcell_t *first = NULL;
    uint32_t seen = 0;

    for (uint32_t k = 0; k < sh->mcap && seen < EVICT_SCAN; k++) {
        mcell_t *c = &sh->mcells[sh->mcursor % sh->mcap];

        sh->mcursor = mtab_next(sh, sh->mcursor % sh->mcap);
        if (c->end_s == 0 || mtab_in_ws(ws, c->h1)) {
            continue;
        }
        seen++;
        if (mcell_ended(c, now_ms)) {
            mem_mtab_remove(sh, c);
            return true;
        }
        if (!mcell_held(c, now_ms) &&
            (first == NULL || c->end_s < first->end_s)) {
            first = c;
        }
    }
    if (first != NULL) {
        mem_mtab_remove(sh, first);
        return true;
    }
    return false;
}

void mem_mtab_clear(shard_t *sh)
{
    free(sh->mcells);
    sh->mcells = NULL;
    sh->mcap = 0;
    sh->mcount = 0;
}
