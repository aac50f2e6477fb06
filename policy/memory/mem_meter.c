/*
 * mem_meter.c - the memory store's metered entries: an identity of an
 * action counted by a token bucket or a two-window sliding counter keeps
 * a meter (meter.h) in place of its ring of hits (mem_internal.h says where).
 *
 * Algorithm changes.  A live reload may change how an action counts.  An
 * entry whose hits or meter are another algorithm's than the decision's
 * rule starts afresh: mem_meter_adopt() forgets them (and its reservations in
 * flight, which only a sliding log keeps) and keeps its lock and offence
 * count, so a reload never lets a locked identity in.
 *
 * Reservations.  A metered reservation takes its cost at once and keeps
 * no reservation: settling it as a success gives the cost back, at the moment
 * it was taken (suspect_meter_give()); a failure or no answer leaves it taken
 * (docs/policy.md).
 *
 * Everything here runs under the entry's shard mutex.
 */
#include "mem_internal.h"

#include <string.h>

void mem_meter_adopt(entry_t *e, const suspect_rule_t *rule)
{
    bool metered = suspect_rule_metered(rule);

    if (metered ? entry_meter_matches(e, rule) : !e->metered && e->count > 0) {
        return;
    }
    if (!metered && !e->metered) {
        return; /* an empty log entry: nothing to forget */
    }
    e->count = 0;
    e->head = 0;
    e->metered = 0;
    if (e->ext != NULL) {
        e->ext->nresv = 0;
    }
}

suspect_rc_t mem_meter_reserve(shard_t *sh, entry_t **ep)
{
    return (*ep)->cap >= METER_CELLS ? SUSPECT_OK
                                     : mem_entry_grow(sh, ep, METER_CELLS);
}

void mem_meter_start(entry_t *e, const suspect_rule_t *rule)
{
    suspect_meter_t m = {0, 0, 0};

    if (entry_meter_matches(e, rule)) {
        return;
    }
    e->count = 0;
    e->head = rule->algorithm;
    e->metered = 1;
    entry_meter_put(e, &m);
}

void mem_meter_state(const entry_t *e, const suspect_rule_t *rule,
                     int64_t now_ms, suspect_window_state_t *st)
{
    suspect_meter_t m = {0, 0, 0};

    memset(st, 0, sizeof(*st));
    if (e != NULL) {
        st->lock_until_ms = e->lock_until_ms;
        if (entry_meter_matches(e, rule)) {
            entry_meter_get(e, &m);
        }
        mem_ext_state(e, rule, now_ms, st);
    }
    suspect_meter_read(rule, &m, now_ms, st);
}

void mem_meter_take(entry_t *e, const suspect_rule_t *rule, int64_t at_ms,
                    uint32_t units)
{
    suspect_meter_t m;

    mem_meter_start(e, rule);
    entry_meter_get(e, &m);
    suspect_meter_take(rule, &m, at_ms, units);
    entry_meter_put(e, &m);
}

void mem_meter_give(entry_t *e, const suspect_rule_t *rule, int64_t at_ms,
                    uint32_t units)
{
    suspect_meter_t m;

    if (!entry_meter_matches(e, rule)) {
        return; /* reset, or the action changed: nothing of it is left */
    }
    entry_meter_get(e, &m);
    suspect_meter_give(rule, &m, at_ms, units);
    entry_meter_put(e, &m);
}
