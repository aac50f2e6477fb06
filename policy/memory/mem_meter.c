/*
 * mem_meter.c - the memory store's meters: an identity of an action
 * counted by a token bucket or a two-window sliding counter keeps a meter
 * (meter.h) in a cell of its shard's meter table (mem_meter_table.c), and
 * its lock and offences, when it has any, in an entry (mem_internal.h).
 *
 * Algorithm changes.  A live reload may change how an action counts.  An
 * entry whose hits are a log's while the rule counts with a meter forgets
 * them (mem_meter_adopt(), with its reservations in flight, which only a
 * log keeps), and a cell written by another algorithm reads as empty and
 * is started afresh: the lock and the offence count stay, so a reload
 * never lets a locked identity in.  A cell left behind by an action that
 * now counts with a log is not read; it goes when it ends, or comes back
 * into use if the action goes back to that algorithm first.
 *
 * Reservations.  A metered reservation takes its cost at once and keeps
 * no reservation: settling it as a success gives the cost back, at the
 * moment it was taken (suspect_meter_give()); a failure or no answer
 * leaves it taken (docs/policy.md).
 *
 * Everything here runs under the cell's shard mutex.
 */
#include "mem_internal.h"

#include <string.h>

/* Epoch ms to epoch s, rounded up, at least 1 (0 marks an empty cell). */
static uint32_t ms_to_s_up(int64_t ms)
{
    int64_t s = ms <= 0 ? 1 : (ms + 999) / 1000;

    return s > UINT32_MAX ? UINT32_MAX : s < 1 ? 1 : (uint32_t)s;
}

static uint64_t clamp_31(int64_t v)
{
    return v < 0 ? 0 : v > 0x7fffffff ? 0x7fffffff : (uint64_t)v;
}

void mem_meter_adopt(entry_t *e, const suspect_rule_t *rule)
{
    if (!suspect_rule_metered(rule)) {
        return;
    }
    e->count = 0;
    e->head = 0;
    if (e->ext != NULL) {
        e->ext->nresv = 0;
    }
}

mcell_t *mem_meter_new(memstore_t *ms, shard_t *sh, const working_set_t *ws,
                       uint64_t h1, int64_t now_ms, bool *full)
{
    *full = !mem_shard_make_room(ms, sh, ws, now_ms);
    return *full ? NULL : mem_mtab_insert(sh, h1);
}

void mem_meter_get(const mcell_t *c, const suspect_rule_t *rule,
                   suspect_meter_t *m)
{
    if (c == NULL || c->algo != rule->algorithm) {
        m->at = m->cur = m->prev = 0;
        return;
    }
    m->at = c->at;
    m->cur = (int64_t)c->cur;
    m->prev = (int64_t)c->prev;
}

void mem_meter_put(mcell_t *c, const suspect_rule_t *rule,
                   const suspect_meter_t *m, int64_t now_ms, int64_t lock_ms)
{
    suspect_window_state_t st = {0};
    int64_t end = suspect_meter_end_ms(rule, m);

    suspect_meter_read(rule, m, now_ms, &st);
    c->at = m->at;
    c->cur = clamp_31(m->cur);
    c->prev = clamp_31(m->prev);
    c->algo = rule->algorithm;
    c->end_s = ms_to_s_up(end > lock_ms ? end : lock_ms);
    c->hold_s = st.free_at_ms > lock_ms ? ms_to_s_up(st.free_at_ms)
                : lock_ms > now_ms      ? ms_to_s_up(lock_ms)
                                        : 0;
}

void mem_meter_hold(mcell_t *c, int64_t until_ms)
{
    uint32_t s = ms_to_s_up(until_ms);

    c->hold_s = s > c->hold_s ? s : c->hold_s;
    c->end_s = s > c->end_s ? s : c->end_s;
}

void mem_meter_state(const entry_t *e, const mcell_t *c,
                     const suspect_rule_t *rule, int64_t now_ms,
                     suspect_window_state_t *st)
{
    suspect_meter_t m;

    memset(st, 0, sizeof(*st));
    if (e != NULL) {
        st->lock_until_ms = e->lock_until_ms;
        mem_ext_state(e, rule, now_ms, st);
    }
    mem_meter_get(c, rule, &m);
    suspect_meter_read(rule, &m, now_ms, st);
}

void mem_meter_take(mcell_t *c, const suspect_rule_t *rule, int64_t at_ms,
                    uint32_t units, int64_t now_ms, int64_t lock_ms)
{
    suspect_meter_t m;

    mem_meter_get(c, rule, &m);
    suspect_meter_take(rule, &m, at_ms, units);
    mem_meter_put(c, rule, &m, now_ms, lock_ms);
}

void mem_meter_give(mcell_t *c, const suspect_rule_t *rule, int64_t at_ms,
                    uint32_t units, int64_t now_ms, int64_t lock_ms)
{
    suspect_meter_t m;

    if (c->algo != rule->algorithm) {
        return; /* the action changed: nothing of it is left */
    }
    mem_meter_get(c, rule, &m);
    suspect_meter_give(rule, &m, at_ms, units);
    mem_meter_put(c, rule, &m, now_ms, lock_ms);
}
