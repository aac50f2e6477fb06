/*
 * meter.c - the token bucket and the two-window sliding counter, pure.
 *
 * meter.h says what the numbers mean.  Everything here is arithmetic on
 * int64 in microseconds (bucket) or milliseconds (counter): a bucket's at
 * stays under 2^53 for dates before the year 2255, so the Lua mirror,
 * whose numbers are doubles, computes the same values.
 */
#include "meter.h"

#include <stdint.h>

static int64_t window_ms(const suspect_rule_t *rule)
{
    return (int64_t)rule->window_s * 1000;
}

static uint32_t clamp_u32(int64_t v)
{
    return v <= 0 ? 0 : v >= UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

static int64_t ceil_div(int64_t a, int64_t b)
{
    return a <= 0 ? 0 : (a + b - 1) / b;
}

int64_t suspect_meter_interval_us(const suspect_rule_t *rule)
{
    int64_t i = (int64_t)rule->window_s * 1000000 /
                (rule->limit_count != 0 ? rule->limit_count : 1);

    return i >= 1 ? i : 1;
}

/* ---- token bucket ------------------------------------------------------ */

static void bucket_read(const suspect_rule_t *rule, const suspect_meter_t *m,
                        int64_t now_ms, suspect_window_state_t *st)
{
    int64_t iv = suspect_meter_interval_us(rule);
    int64_t debt = m->at - now_ms * 1000;
    int64_t cap = suspect_rule_capacity(rule);
    int64_t cost = suspect_rule_cost(rule);

    st->in_window = clamp_u32(ceil_div(debt, iv));
    st->free_at_ms = 0;
    if ((int64_t)st->in_window + cost > cap) {
        /* The moment the debt is down to (cap - cost) intervals. */
        st->free_at_ms = ceil_div(m->at - (cap - cost) * iv, 1000);
    }
}

static void bucket_take(const suspect_rule_t *rule, suspect_meter_t *m,
                        int64_t at_ms, uint32_t units)
{
    int64_t from = m->at > at_ms * 1000 ? m->at : at_ms * 1000;

    m->at = from + (int64_t)units * suspect_meter_interval_us(rule);
}

static uint32_t bucket_make_room(const suspect_rule_t *rule, suspect_meter_t *m,
                                 int64_t now_ms)
{
    int64_t iv = suspect_meter_interval_us(rule);
    int64_t room =
        (int64_t)(suspect_rule_capacity(rule) - suspect_rule_cost(rule)) * iv;
    int64_t target = now_ms * 1000 + room;
    uint32_t given;

    if (m->at <= target) {
        return 0;
    }
    given = clamp_u32(ceil_div(m->at - target, iv));
    m->at = target;
    return given;
}

/* ---- two-window sliding counter ---------------------------------------- */

/* Moves m to the window of t_ms, when that is not before its own. */
static void counter_roll(const suspect_rule_t *rule, suspect_meter_t *m,
                         int64_t t_ms)
{
    int64_t w = window_ms(rule);
    int64_t k = t_ms - t_ms % w;

    if (k <= m->at) {
        return;
    }
    m->prev = k == m->at + w ? m->cur : 0;
    m->cur = 0;
    m->at = k;
}

/* The previous window's hits still counted e ms into the current one. */
static int64_t counter_carried(int64_t prev, int64_t w, int64_t e)
{
    if (e < 0) {
        e = 0; /* a late clock: count the previous window whole */
    }
    return ceil_div(prev * (w - e), w);
}

/* When cost fits again in a counter that has no room for it at e ms into
 * its window (meter.h): later in this window when the previous window's
 * share alone is too much, else when the current one's is, in the next. */
static int64_t counter_free_at(const suspect_meter_t *m, int64_t w,
                               int64_t limit, int64_t cost)
{
    int64_t r = limit - cost - m->cur;

    if (r >= 0 && m->prev > 0) {
        return m->at + w - r * w / m->prev;
    }
    r = limit - cost;
    if (r < 0 || m->cur <= 0) {
        return m->at + w; /* cost over the limit: refused by the config */
    }
    return m->at + w + w - r * w / m->cur;
}

static void counter_read(const suspect_rule_t *rule, const suspect_meter_t *m,
                         int64_t now_ms, suspect_window_state_t *st)
{
    suspect_meter_t c = *m;
    int64_t w = window_ms(rule);
    int64_t cost = suspect_rule_cost(rule);
    int64_t used;

    counter_roll(rule, &c, now_ms);
    used = counter_carried(c.prev, w, now_ms - c.at) + c.cur;
    st->in_window = clamp_u32(used);
    st->free_at_ms = 0;
    if (used + cost > (int64_t)rule->limit_count) {
        st->free_at_ms = counter_free_at(&c, w, rule->limit_count, cost);
        if (st->free_at_ms <= now_ms) {
            st->free_at_ms = now_ms + 1;
        }
    }
}

static void counter_take(const suspect_rule_t *rule, suspect_meter_t *m,
                         int64_t at_ms, uint32_t units)
{
    int64_t w = window_ms(rule);
    int64_t k = at_ms - at_ms % w;

    if (k >= m->at) {
        counter_roll(rule, m, at_ms);
        m->cur += units;
    } else if (k == m->at - w) {
        m->prev += units;
    }
}

static void counter_give(const suspect_rule_t *rule, suspect_meter_t *m,
                         int64_t at_ms, uint32_t units)
{
    int64_t w = window_ms(rule);
    int64_t k = at_ms - at_ms % w;
    int64_t *n = k == m->at ? &m->cur : k == m->at - w ? &m->prev : NULL;

    if (n != NULL) {
        *n -= *n < (int64_t)units ? *n : (int64_t)units;
    }
}

static uint32_t counter_make_room(const suspect_rule_t *rule,
                                  suspect_meter_t *m, int64_t now_ms)
{
    int64_t w = window_ms(rule);
    int64_t limit = rule->limit_count;
    int64_t cost = suspect_rule_cost(rule);
    int64_t before, r, e;

    counter_roll(rule, m, now_ms);
    e = now_ms > m->at ? now_ms - m->at : 0;
    before = counter_carried(m->prev, w, e) + m->cur;
    if (before + cost <= limit) {
        return 0;
    }
    r = limit - cost - m->cur;
    if (r >= 0) {
        int64_t keep = r * w / (w - e);
        m->prev = keep < m->prev ? keep : m->prev;
    } else {
        m->prev = 0;
        m->cur = limit - cost < m->cur ? limit - cost : m->cur;
    }
    return clamp_u32(before - counter_carried(m->prev, w, e) - m->cur);
}

/* ---- the interface ------------------------------------------------------ */

void suspect_meter_read(const suspect_rule_t *rule, const suspect_meter_t *m,
                        int64_t now_ms, suspect_window_state_t *st)
{
    if (rule->algorithm == SUSPECT_ALGO_COUNTER) {
        counter_read(rule, m, now_ms, st);
    } else {
        bucket_read(rule, m, now_ms, st);
    }
}

void suspect_meter_take(const suspect_rule_t *rule, suspect_meter_t *m,
                        int64_t at_ms, uint32_t units)
{
    if (rule->algorithm == SUSPECT_ALGO_COUNTER) {
        counter_take(rule, m, at_ms, units);
    } else {
        bucket_take(rule, m, at_ms, units);
    }
}

void suspect_meter_give(const suspect_rule_t *rule, suspect_meter_t *m,
                        int64_t at_ms, uint32_t units)
{
    if (rule->algorithm == SUSPECT_ALGO_COUNTER) {
        counter_give(rule, m, at_ms, units);
    } else {
        m->at -= (int64_t)units * suspect_meter_interval_us(rule);
    }
}

uint32_t suspect_meter_make_room(const suspect_rule_t *rule, suspect_meter_t *m,
                                 int64_t now_ms)
{
    return rule->algorithm == SUSPECT_ALGO_COUNTER
               ? counter_make_room(rule, m, now_ms)
               : bucket_make_room(rule, m, now_ms);
}

int64_t suspect_meter_end_ms(const suspect_rule_t *rule,
                             const suspect_meter_t *m)
{
    if (rule->algorithm == SUSPECT_ALGO_COUNTER) {
        int64_t w = window_ms(rule);
        return m->cur > 0 ? m->at + 2 * w : m->prev > 0 ? m->at + w : m->at;
    }
    return ceil_div(m->at, 1000);
}
