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
 * Per identity i, at now, with cap the rule's capacity (its limit, or a
 * bucket's burst) and cost what the request takes (1 but for buckets and
 * counters, whose stores report tokens in use as in_window: meter.c):
 *   - a live lock (lock_until > now) denies until lock_until, whatever the
 *     rule's strategy: operators may block any identity;
 *   - otherwise a window without room for the cost (in_window + cost > cap)
 *     denies: with a block rule it creates a lock until now + block and
 *     denies until then; with a basic rule it denies until free_at (the
 *     moment the cost fits);
 *   - otherwise it allows, with cap - in_window - cost left after it.
 * Reservations (a request whose response says whether it counts): a reservation
 * in flight fills the window like a hit, so the limit holds however many
 * requests run at once, but only hits lock.  So with in_window hits and
 * pending reservations, an identity with in_window + pending >= limit
 * and in_window < limit is busy: denied, not locked, until a reservation may be
 * free again (the earliest end of those in flight, at most
 * SUSPECT_BUSY_RETRY_MS away: they usually settle sooner).
 *
 * Repeat offenders: a lock this decision creates under an escalating rule
 * is the identity's offence number offences + 1 and lasts
 * suspect_rule_lock_ms() of it; the plan keeps that count until the new
 * lock's end plus the offence period.
 *
 * The request is allowed only when every identity allows; then the plan
 * records the hit on all of them.  New locks are planned for every identity
 * that is over, even when another one tripped first.  The reported identity
 * is the one whose restriction ends last (the first of equals), so the
 * countdown a client sees is the true one.
 */
#include "suspect_policy.h"

#include <string.h>

/* Guards the escalation loop: a factor of at least 1.01 reaches a year
 * from one second in under 2,500 steps. */
#define MAX_STEPS 4096

uint32_t suspect_rule_capacity(const suspect_rule_t *rule)
{
    return rule->algorithm == SUSPECT_ALGO_BUCKET && rule->burst != 0
               ? rule->burst
               : rule->limit_count;
}

uint32_t suspect_rule_cost(const suspect_rule_t *rule)
{
    return rule->cost != 0 ? rule->cost : 1;
}

const char *suspect_algorithm_name(uint32_t algorithm)
{
    static const char *const names[] = {"SlidingLog", "TokenBucket",
                                        "SlidingCounter"};

    return algorithm < sizeof(names) / sizeof(names[0]) ? names[algorithm]
                                                        : NULL;
}

bool suspect_rule_escalates(const suspect_rule_t *rule)
{
    return rule->block_s > 0 && rule->block_factor_pct > 100;
}

static int64_t rule_max_ms(const suspect_rule_t *rule)
{
    uint32_t max_s =
        rule->block_max_s != 0 ? rule->block_max_s : SUSPECT_DURATION_MAX;
    return (int64_t)(max_s < rule->block_s ? rule->block_s : max_s) * 1000;
}

int64_t suspect_rule_lock_ms(const suspect_rule_t *rule, uint32_t offence)
{
    int64_t d = (int64_t)rule->block_s * 1000;
    int64_t max_ms;

    if (!suspect_rule_escalates(rule)) {
        return d;
    }
    max_ms = rule_max_ms(rule);
    for (uint32_t k = 1; k < offence && k < MAX_STEPS && d < max_ms; k++) {
        d = d * rule->block_factor_pct / 100;
    }
    return d < max_ms ? d : max_ms;
}

int64_t suspect_rule_offence_ms(const suspect_rule_t *rule)
{
    return rule->offence_s != 0 ? (int64_t)rule->offence_s * 1000
                                : rule_max_ms(rule);
}

/* What identity st does to the decision. */
typedef struct verdict {
    int64_t until;    /* the end of its denial, 0 = it allows */
    bool lock;        /* a lock denies (existing or new) */
    bool busy;        /* reservations deny */
    int64_t new_lock; /* the lock the plan creates, 0 = none */
    uint32_t offence; /* the new lock's offence number, 0 = none kept */
} verdict_t;

/* When identity st denies, the end of its restriction (see the file
 * comment), with what the plan must write for it. */
static void identity_verdict(const suspect_rule_t *rule,
                             const suspect_window_state_t *st, int64_t now_ms,
                             verdict_t *v)
{
    uint64_t cap = suspect_rule_capacity(rule);
    uint64_t cost = suspect_rule_cost(rule);
    uint64_t used = (uint64_t)st->in_window + st->pending;

    memset(v, 0, sizeof(*v));
    if (st->lock_until_ms > now_ms) {
        v->lock = true;
        v->until = st->lock_until_ms;
        return;
    }
    if (used + cost <= cap) {
        return;
    }
    if (st->in_window + cost <= cap) {
        int64_t end =
            st->pending_end_ms > now_ms ? st->pending_end_ms : now_ms + 1;
        v->busy = true;
        v->until = end < now_ms + SUSPECT_BUSY_RETRY_MS
                       ? end
                       : now_ms + SUSPECT_BUSY_RETRY_MS;
        return;
    }
    if (rule->block_s > 0) {
        v->lock = true;
        if (suspect_rule_escalates(rule)) {
            v->offence = st->offences + 1;
        }
        v->new_lock = now_ms + suspect_rule_lock_ms(rule, v->offence);
        v->until = v->new_lock;
        return;
    }
    /* A hit in the window has t > now - window, so free_at > now; keep the
     * promise "denied until a moment after now" even for a confused store. */
    v->until = st->free_at_ms > now_ms ? st->free_at_ms : now_ms + 1;
}

void suspect_policy_evaluate(const suspect_rule_t *rule,
                             const suspect_window_state_t *st, size_t n,
                             int64_t now_ms, suspect_plan_t *plan,
                             suspect_decision_t *out)
{
    uint32_t cap = suspect_rule_capacity(rule);
    uint32_t remaining = cap;
    int64_t end = 0;

    memset(plan, 0, sizeof(*plan));
    memset(out, 0, sizeof(*out));
    out->tripped = -1;
    out->limit = cap;

    for (size_t i = 0; i < n && i < SUSPECT_MAX_IDENTITIES; i++) {
        verdict_t v;

        identity_verdict(rule, &st[i], now_ms, &v);
        if (v.new_lock != 0) {
            plan->lock_until_ms[i] = v.new_lock;
            out->locks_created++;
            if (v.offence != 0) {
                plan->offences[i] = v.offence;
                plan->offence_until_ms[i] =
                    v.new_lock + suspect_rule_offence_ms(rule);
            }
        }
        if (v.until == 0) {
            uint32_t left =
                cap - st[i].in_window - st[i].pending - suspect_rule_cost(rule);
            remaining = left < remaining ? left : remaining;
        } else if (v.until > end) {
            end = v.until;
            out->tripped = (int)i;
            out->locked = v.lock;
            out->busy = v.busy;
            out->offences = v.offence != 0 ? v.offence
                            : v.lock && suspect_rule_escalates(rule)
                                ? st[i].offences
                                : 0;
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

bool suspect_policy_settle_counts(bool failed, int64_t expires_ms,
                                  int64_t now_ms)
{
    return failed || expires_ms <= now_ms;
}
