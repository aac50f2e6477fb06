/*
 * mem_ext.c - what only some entries of the memory store hold: reservations in
 * flight (reservations of requests whose response decides whether they
 * count) and an offence count (escalating rules).  See mem_internal.h.
 *
 * Reservations.  An unordered array (there are at most LimitCount of them: a
 * reservation is refused once hits and reservations fill the window), grown by
 * doubling.  A reservation whose end has come is a hit at its time: the state
 * of a decision counts it so (mem_ext_state), and mem_ext_expire() moves
 * it into the ring, sorted, before the decision writes anything, so the
 * ring stays the one list of hits.  Settling takes a reservation out by id and,
 * when it counts, inserts the hit.
 *
 * Offences.  A count and the moment it is forgotten; a decision that
 * reads it after that moment sees 0.
 *
 * Ownership: the extension belongs to its entry; everything here runs
 * under the entry's shard mutex.
 */
#include "mem_internal.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"

#define FIRST_RESV 2

static size_t ext_size(uint32_t cap)
{
    return entry_ext_size(cap);
}

suspect_rc_t mem_ext_reserve(shard_t *sh, entry_t *e, bool want_resv)
{
    entry_ext_t *x = e->ext;
    uint32_t cap;

    if (x != NULL && (!want_resv || x->nresv < x->cap)) {
        return SUSPECT_OK;
    }
    cap = x == NULL ? (want_resv ? FIRST_RESV : 0)
                    : (x->cap == 0 ? FIRST_RESV : x->cap * 2);
    x = suspect_realloc(e->ext, ext_size(cap));
    if (x == NULL) {
        return SUSPECT_E_NOMEM;
    }
    if (e->ext == NULL) {
        memset(x, 0, sizeof(*x));
        sh->bytes += ext_size(cap);
    } else {
        sh->bytes += ext_size(cap) - ext_size(x->cap);
    }
    x->cap = cap;
    e->ext = x;
    return SUSPECT_OK;
}

void mem_ring_insert(entry_t *e, int64_t ts)
{
    uint32_t i = e->count;

    while (i > 0 && e->hits[ring_index(e, i - 1)] > ts) {
        e->hits[ring_index(e, i)] = e->hits[ring_index(e, i - 1)];
        i--;
    }
    e->hits[ring_index(e, i)] = ts;
    e->count++;
}

suspect_rc_t mem_ext_expire(shard_t *sh, entry_t **ep,
                            const suspect_rule_t *rule, int64_t now_ms)
{
    entry_ext_t *x = (*ep)->ext;
    uint32_t ended = 0;
    suspect_rc_t rc;

    if (suspect_rule_metered(rule)) {
        return SUSPECT_OK; /* a meter keeps no reservations */
    }
    for (uint32_t i = 0; x != NULL && i < x->nresv; i++) {
        ended += x->resv[i].end_ms <= now_ms;
    }
    if (ended == 0) {
        return SUSPECT_OK;
    }
    rc = mem_entry_reserve_n(sh, ep, rule, ended);
    if (rc != SUSPECT_OK) {
        return rc;
    }
    x = (*ep)->ext;
    for (uint32_t i = 0; i < x->nresv;) {
        if (x->resv[i].end_ms <= now_ms) {
            mem_ring_insert(*ep, x->resv[i].at_ms);
            x->resv[i] = x->resv[--x->nresv];
        } else {
            i++;
        }
    }
    return SUSPECT_OK;
}

void mem_ext_state(const entry_t *e, const suspect_rule_t *rule, int64_t now_ms,
                   suspect_window_state_t *st)
{
    const entry_ext_t *x = e != NULL ? e->ext : NULL;
    int64_t cutoff = now_ms - (int64_t)rule->window_s * 1000;

    if (x == NULL) {
        return;
    }
    for (uint32_t i = 0; i < x->nresv; i++) {
        const mem_resv_t *s = &x->resv[i];

        if (s->end_ms > now_ms) {
            st->pending++;
            if (st->pending_end_ms == 0 || s->end_ms < st->pending_end_ms) {
                st->pending_end_ms = s->end_ms;
            }
        } else if (s->at_ms > cutoff) {
            /* only when mem_ext_expire() could not move it */
            st->in_window++;
        }
    }
    if (suspect_rule_escalates(rule) && x->offence_until_ms > now_ms) {
        st->offences = x->offences;
    }
}

void mem_ext_add_resv(entry_t *e, uint64_t id, int64_t at_ms, int64_t end_ms)
{
    mem_resv_t *s = &e->ext->resv[e->ext->nresv++];

    s->id = id;
    s->at_ms = at_ms;
    s->end_ms = end_ms;
}

bool mem_ext_take_resv(entry_t *e, uint64_t id, mem_resv_t *resv)
{
    entry_ext_t *x = e->ext;

    for (uint32_t i = 0; x != NULL && i < x->nresv; i++) {
        if (x->resv[i].id == id) {
            *resv = x->resv[i];
            x->resv[i] = x->resv[--x->nresv];
            return true;
        }
    }
    return false;
}

void mem_ext_trim(shard_t *sh, entry_t *e, int64_t now_ms)
{
    if (e->ext != NULL && !entry_ext_live(e, now_ms)) {
        entry_ext_release(sh, e);
    }
}

/* Frees e when nothing in it matters at now, else makes it the most
 * recently used; returns e or NULL. */
entry_t *mem_entry_tidy(shard_t *sh, entry_t *e, int64_t now_ms)
{
    mem_ext_trim(sh, e, now_ms);
    if (entry_empty(e) && !entry_locked(e, now_ms) && e->ext == NULL) {
        mem_shard_remove(sh, e);
        return NULL;
    }
    mem_lru_touch(sh, e, now_ms);
    return e;
}
