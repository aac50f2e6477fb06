/*
 * evaluate.c - the decision, once, for every store.
 *
 * Each store gathers, under its own atomicity (a mutex, a transaction, a Lua
 * script), the state of every identity of a request: the lock end and the
 * hits still in the window.  suspect_policy_evaluate() turns those states
 * into a decision and a plan of writes; the store applies the plan.  Keeping
 * the rules here, without I/O and with the clock as a parameter, is what
 * makes the stores agree and lets the tests drive time by hand.
 *
 * Per identity i, at now:
 *   - a live lock (lock_until > now) denies until lock_until, whatever the
 *     rule's strategy: operators may block any identity;
 *   - otherwise a full window (in_window >= limit) denies: with a block
 *     rule it creates a lock until now + block and denies until then; with a
 *     basic rule it denies until free_at (the moment one more hit fits);
 *   - otherwise it allows, with limit - in_window - 1 hits left after this
 *     one.
 * The request is allowed only when every identity allows; then the plan
 * records the hit on all of them.  New locks are planned for every identity
 * that is over, even when another one tripped first.  The reported identity
 * is the one whose restriction ends last (the first of equals), so the
 * countdown a client sees is the true one.
 */
#include "suspect_policy.h"

#include <string.h>

/* When identity st denies, the end of its restriction, else 0.  Sets *lock
 * when a lock denies and *new_lock when the plan must create one. */
static int64_t identity_denies_until(const suspect_rule_t *rule,
                                     const suspect_window_state_t *st,
                                     int64_t now_ms, int *lock,
                                     int64_t *new_lock)
{
    *lock = 0;
    *new_lock = 0;
    if (st->lock_until_ms > now_ms) {
        *lock = 1;
        return st->lock_until_ms;
    }
    if (st->in_window < rule->limit_count) {
        return 0;
    }
    if (rule->block_s > 0) {
        *lock = 1;
        *new_lock = now_ms + (int64_t)rule->block_s * 1000;
        return *new_lock;
    }
    /* A hit in the window has t > now - window, so free_at > now; keep the
     * promise "denied until a moment after now" even for a confused store. */
    return st->free_at_ms > now_ms ? st->free_at_ms : now_ms + 1;
}

void suspect_policy_evaluate(const suspect_rule_t *rule,
                             const suspect_window_state_t *st, size_t n,
                             int64_t now_ms, suspect_plan_t *plan,
                             suspect_decision_t *out)
{
    uint32_t remaining = rule->limit_count;
    int64_t end = 0;

    memset(plan, 0, sizeof(*plan));
    memset(out, 0, sizeof(*out));
    out->tripped = -1;
    out->limit = rule->limit_count;

    for (size_t i = 0; i < n && i < SUSPECT_MAX_IDENTITIES; i++) {
        int lock;
        int64_t until = identity_denies_until(rule, &st[i], now_ms, &lock,
                                              &plan->lock_until_ms[i]);
        if (plan->lock_until_ms[i] != 0) {
            out->locks_created++;
        }
        if (until == 0) {
            uint32_t left = rule->limit_count - st[i].in_window - 1;
            remaining = left < remaining ? left : remaining;
        } else if (until > end) {
            end = until;
            out->tripped = (int)i;
            out->locked = lock != 0;
        }
    }

    out->allowed = end == 0;
    plan->record = out->allowed;
    if (out->allowed) {
        out->remaining = remaining;
    } else {
        out->restriction_end_ms = end;
        out->retry_after_ms = end - now_ms;
    }
}
