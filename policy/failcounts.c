/*
 * failcounts.c - the counts the failover wrapper's primary last reported,
 * so that fail mode local starts an identity where the primary left it
 * rather than from zero (an identity at its limit of 10 would otherwise
 * get 10 more in every process while Redis is away).
 *
 * What is noted.  After each decision of the primary (and reservation):
 *   - allowed: every identity's count is limit - remaining (the hits in
 *     its window, this one and the reservations included).  The
 *     primary reports one remaining for the decision, the tightest
 *     identity's: with one identity that is its count exactly; with
 *     several, each is noted with the tightest one's, which may be more
 *     than its own (stricter, never looser: during an outage an identity
 *     that shared a decision with a busier one may be refused early);
 *   - denied over the limit (not a lock): the identity that denied is at
 *     its limit;
 *   - locks are the lock cache's (failover.c), not this table's.
 * Each note is the count and the time of the decision; it stands until
 * that time plus the rule's window (all the hits may have been that
 * recent), and the next note of the identity replaces it.
 *
 * Prefilling.  Before the local store decides on an identity, it is given at
 * least the noted count (the store's prefill operation, suspect_store_impl.h:
 * the memory store has it), the missing hits at the
 * time of the note: they leave its window no earlier than the primary's
 * did.  Prefilling is idempotent (at least, not plus), so it runs before
 * every local decision; the prefilled hits are not journaled to be carried
 * back (the primary has them).
 *
 * The table: FAIL_COUNT_CELLS direct-mapped cells, each the 128-bit keyed
 * SipHash of a window key, its count, when and for how long; a new note
 * replaces whatever shared its cell (a miss later: that identity starts
 * from zero again, as before this table).  One mutex; a note is a hash
 * and a few stores on the request path.
 *
 * What it does not know: hits the primary took from other hosts after the
 * last note here; identities whose cell another took; a process that
 * started during the outage.
 */
#include "failcounts.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "meter.h"
#include "suspect_store_impl.h"

struct fail_count {
    uint64_t h[2];
    int64_t at_ms;  /* the decision's time; 0 = empty */
    int64_t end_ms; /* at_ms + the window: stands until then */
    uint32_t hits;
};

int fail_counts_init(fail_counts_t *c, const suspect_siphash_key_t *secret)
{
    c->secret = *secret;
    c->cells = suspect_calloc(FAIL_COUNT_CELLS, sizeof(*c->cells));
    if (c->cells == NULL) {
        return -1;
    }
    pthread_mutex_init(&c->mu, NULL);
    return 0;
}

void fail_counts_free(fail_counts_t *c)
{
    if (c->cells != NULL) {
        pthread_mutex_destroy(&c->mu);
        free(c->cells);
        c->cells = NULL;
    }
}

static fail_count_t *cell_of(fail_counts_t *c, const suspect_key_t *key,
                             uint64_t h[2])
{
    suspect_siphash128(&c->secret, key->buf, key->window_len, h);
    return &c->cells[h[0] & (FAIL_COUNT_CELLS - 1)];
}

static void put(fail_counts_t *c, const suspect_key_t *key, uint32_t hits,
                int64_t at_ms, int64_t window_ms)
{
    uint64_t h[2];
    fail_count_t *s = cell_of(c, key, h);

    pthread_mutex_lock(&c->mu);
    s->h[0] = h[0];
    s->h[1] = h[1];
    s->hits = hits;
    s->at_ms = at_ms;
    s->end_ms = at_ms + window_ms;
    pthread_mutex_unlock(&c->mu);
}

void fail_counts_note(fail_counts_t *c, const suspect_rule_t *rule,
                      const suspect_key_t *keys, size_t n, int64_t now_ms,
                      const suspect_decision_t *d)
{
    /* a meter's count (tokens in use) weighs for its span, and is out of
     * its capacity */
    int64_t window_ms = suspect_meter_span_ms(rule);
    uint32_t cap = suspect_rule_capacity(rule);

    if (c->cells == NULL) {
        return;
    }
    if (d->allowed) {
        uint32_t hits = d->remaining < cap ? cap - d->remaining : 1;

        for (size_t i = 0; i < n; i++) {
            put(c, &keys[i], hits, now_ms, window_ms);
        }
    } else if (!d->locked && d->tripped >= 0 && (size_t)d->tripped < n) {
        put(c, &keys[d->tripped], cap, now_ms, window_ms);
    }
}

void fail_counts_prefill(fail_counts_t *c, suspect_store_t *local,
                         const suspect_rule_t *rule, const suspect_key_t *keys,
                         size_t n, int64_t now_ms)
{
    if (c->cells == NULL || local->ops->prefill == NULL) {
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t h[2];
        fail_count_t *s = cell_of(c, &keys[i], h), got = {{0, 0}, 0, 0, 0};

        pthread_mutex_lock(&c->mu);
        if (s->at_ms != 0 && s->h[0] == h[0] && s->h[1] == h[1]) {
            got = *s;
        }
        pthread_mutex_unlock(&c->mu);
        if (got.at_ms != 0 && got.end_ms > now_ms) {
            (void)local->ops->prefill(local, rule, &keys[i], got.hits,
                                      got.at_ms, now_ms, NULL);
        }
    }
}

void fail_counts_forget(fail_counts_t *c, const suspect_key_t *key)
{
    uint64_t h[2];
    fail_count_t *s;

    if (c->cells == NULL) {
        return;
    }
    s = cell_of(c, key, h);
    pthread_mutex_lock(&c->mu);
    if (s->h[0] == h[0] && s->h[1] == h[1]) {
        s->at_ms = 0;
    }
    pthread_mutex_unlock(&c->mu);
}
