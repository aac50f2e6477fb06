/*
 * failover.c - fail modes, circuit breaker and lock cache around a primary
 * store (suspect_failover.h).
 *
 * A decision goes through three gates:
 *   1. the lock cache: an identity known locked until T is denied until T
 *      without calling the primary;
 *   2. the breaker: while open, the primary is skipped; when the interval
 *      ends, one caller becomes the probe (half-open), the others keep
 *      skipping until it reports;
 *   3. the primary; on an error, the action's fail mode decides.  A full
 *      store (SUSPECT_E_FULL: an LMDB map with no room for a new identity)
 *      is up: the fail mode decides that call, and the breaker does not
 *      count it.
 *
 * Breaker state machine (under mu):
 *   closed    --`failures` consecutive errors-->  open (interval = min)
 *   open      --interval over, next call-------->  half-open (that call probes)
 *   half-open --probe ok------------------------>  closed (interval reset)
 *   half-open --probe failed-------------------->  open (interval doubled,
 *                                                  capped at max)
 * A call that started while closed and reports after the breaker opened
 * only updates the counters.
 *
 * Lock cache: CACHE_CELLS direct-mapped cells, each the 128-bit keyed
 * SipHash of a lock key, its end (caller's clock) and the generation it was
 * written in.  A new entry replaces whatever shared its cell (a miss later,
 * never a wrong denial: both hash halves must match).  Bumping the
 * generation invalidates every cell at once.  An entry is trusted for
 * lock_cache_ttl_ms of real time, then the primary is asked again, so an
 * unblock made by another process (suspectctl, another host) takes effect
 * here within that time while a locked client hammering the site still
 * costs one round trip per interval.  While the primary fails, an entry
 * denies until its lock ends, whatever its age: the fail mode (open, or
 * the local store) does not know the lock, and nobody can lift it through
 * the primary meanwhile.
 *
 * Carrying back: mode local journals what the local store decided
 * (carry.c).  A call that passes the breaker first writes the journal to
 * the primary (one thread at a time; the others decide locally meanwhile
 * rather than wait, except the probe), so the primary never decides for an
 * identity this process locked before that lock is there.  What a failed
 * write did not send is journaled again; the failure counts as the
 * primary's.  The write-back is an operation of the store interface
 * (suspect_store_impl.h, carry): a Redis primary takes locks and hits
 * whole, one script call per chunk (lua/carry.lua); a primary without the
 * operation gets the locks alone, by status and block.
 *
 * Counts: fail mode local starts an identity from the count the primary
 * last reported for it (failcounts.c), not from zero, through the local
 * store's prefill operation (the memory store's): for a token bucket or a
 * counter, the tokens it had in use.
 *
 * Meters (token buckets, sliding counters): the wrapper keeps them only
 * when both its stores do, since the local store decides on them during
 * an outage; the hits it admits are carried into the primary's meters at
 * their own times (carry.c).
 *
 * Reservations pass the same three gates as decisions;
 * the ticket says which store holds the reservation, and settling goes there. A
 * decision's own fail mode (suspect_rule_t.fail_mode: a route's or an
 * action's failMode) wins over the wrapper's.
 *
 * Length.  About 800 lines: the lock cache, the breaker, the fail modes
 * and the carrying back are one state machine over one struct, and every
 * store operation (decide, reserve, settle, and the operator's) passes
 * through all of it; split, each piece would reach into the others'
 * fields.
 *
 * Ownership: the wrapper owns both stores, a copy of the overrides, the
 * journal and the counts.
 */
#include "suspect_failover.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "clock.h"
#include "failcounts.h"
#include "random.h"
#include "carry.h"
#include "siphash.h"
#include "suspect_store_impl.h"

#define CACHE_CELLS 4096 /* a power of two */

typedef struct cell {
    uint64_t h[2];
    int64_t until_ms;
    int64_t stale_at; /* monotonic ms: ask the primary again from then */
    uint64_t gen;
    uint32_t offences; /* the lock's offence count, told again */
} cell_t;

typedef struct failover {
    suspect_store_t base;
    suspect_store_t *primary;
    suspect_store_t *local;
    suspect_failmode_t mode;
    suspect_failmode_override_t *ovr; /* actions owned */
    size_t novr;
    unsigned failures, min_open_ms, max_open_ms, closed_retry_ms;
    unsigned cache_ttl_ms;
    suspect_breaker_cb cb;
    void *cb_arg;
    int64_t (*clock)(void); /* NULL: mono_ms() */

    pthread_mutex_t mu; /* the breaker and the stats */
    suspect_breaker_t state;
    unsigned consecutive;
    unsigned interval_ms;
    int64_t open_until; /* monotonic ms */
    int64_t full_told;  /* monotonic ms the callback last heard "full" */
    suspect_failover_stats_t stats;

    pthread_mutex_t cache_mu; /* the cache and gen */
    suspect_siphash_key_t secret;
    uint64_t gen;
    cell_t cache[CACHE_CELLS];

    carry_sync_t carry;   /* local decisions to carry back */
    fail_counts_t counts; /* what the primary last counted */
} failover_t;

static const suspect_store_ops_t failover_ops;
static bool is_failover(const suspect_store_t *store);

/* The monotonic milliseconds of f: the options' clock, or mono_ms(). */
static inline int64_t f_mono(const failover_t *f)
{
    return f->clock != NULL ? f->clock() : mono_ms();
}

/* ---- lock cache ----------------------------------------------------------
 */

static void lock_hash(failover_t *f, const suspect_key_t *key, uint64_t h[2])
{
    suspect_siphash128(&f->secret, key->buf, key->lock_len, h);
}

/* The cached lock end of key when it is after now, else 0; with
 * any_age also from an entry that is no longer trusted over the
 * primary. */
static int64_t cache_get(failover_t *f, const suspect_key_t *key,
                         int64_t now_ms, bool any_age, uint32_t *offences)
{
    uint64_t h[2];
    int64_t until = 0;
    cell_t *s;

    lock_hash(f, key, h);
    s = &f->cache[h[0] & (CACHE_CELLS - 1)];
    pthread_mutex_lock(&f->cache_mu);
    if (s->gen == f->gen && s->h[0] == h[0] && s->h[1] == h[1] &&
        s->until_ms > now_ms && (any_age || f_mono(f) < s->stale_at)) {
        until = s->until_ms;
        *offences = s->offences;
    }
    pthread_mutex_unlock(&f->cache_mu);
    return until;
}

/* Remembers that key is locked until until_ms (0 = forget it), the
 * lock being its offence number offences (0 without escalation). */
static void cache_put(failover_t *f, const suspect_key_t *key, int64_t until_ms,
                      uint32_t offences)
{
    uint64_t h[2];
    cell_t *s;

    lock_hash(f, key, h);
    s = &f->cache[h[0] & (CACHE_CELLS - 1)];
    pthread_mutex_lock(&f->cache_mu);
    if (until_ms > 0) {
        s->h[0] = h[0];
        s->h[1] = h[1];
        s->until_ms = until_ms;
        s->stale_at = f_mono(f) + f->cache_ttl_ms;
        s->gen = f->gen;
        s->offences = offences;
    } else if (s->h[0] == h[0] && s->h[1] == h[1]) {
        s->until_ms = 0;
    }
    pthread_mutex_unlock(&f->cache_mu);
}

/* True (and *out filled) when a cached lock denies one of the keys. */
static bool cache_deny(failover_t *f, const suspect_rule_t *rule,
                       const suspect_key_t *keys, size_t n, int64_t now_ms,
                       bool any_age, suspect_decision_t *out)
{
    int64_t end = 0;
    int tripped = -1;
    uint32_t offences = 0;

    for (size_t i = 0; i < n; i++) {
        uint32_t o = 0;
        int64_t until = cache_get(f, &keys[i], now_ms, any_age, &o);
        if (until > end) {
            end = until;
            tripped = (int)i;
            offences = o;
        }
    }
    if (tripped < 0) {
        return false;
    }
    memset(out, 0, sizeof(*out));
    out->locked = true;
    out->tripped = tripped;
    out->limit = rule->limit_count;
    out->restriction_end_ms = end;
    out->retry_after_ms = end - now_ms;
    out->offences = offences;
    return true;
}

/* ---- breaker -------------------------------------------------------------
 */

/* Moves to state `to` (under mu) and tells the callback. */
static void transition(failover_t *f, suspect_breaker_t to,
                       const suspect_err_t *why)
{
    suspect_breaker_t from = f->state;

    f->state = to;
    f->stats.opens += to == SUSPECT_BREAKER_OPEN;
    f->stats.probes += to == SUSPECT_BREAKER_HALF_OPEN;
    f->stats.closes += to == SUSPECT_BREAKER_CLOSED;
    if (f->cb != NULL) {
        f->cb(f->cb_arg, from, to, why);
    }
}

/* True when the primary may be called now; *probe when this call is the
 * half-open probe. */
static bool gate(failover_t *f, bool *probe)
{
    bool pass = true;

    *probe = false;
    pthread_mutex_lock(&f->mu);
    if (f->state == SUSPECT_BREAKER_OPEN && f_mono(f) >= f->open_until) {
        transition(f, SUSPECT_BREAKER_HALF_OPEN, NULL);
        *probe = true;
    } else if (f->state != SUSPECT_BREAKER_CLOSED) {
        f->stats.skipped++;
        pass = false;
    }
    pthread_mutex_unlock(&f->mu);
    return pass;
}

/* Opens the breaker for the next interval (under mu). */
static void open_breaker(failover_t *f, const suspect_err_t *why)
{
    if (f->interval_ms == 0) {
        f->interval_ms = f->min_open_ms;
    } else {
        f->interval_ms = f->interval_ms * 2 < f->max_open_ms
                             ? f->interval_ms * 2
                             : f->max_open_ms;
    }
    f->open_until = f_mono(f) + f->interval_ms;
    transition(f, SUSPECT_BREAKER_OPEN, why);
}

/* Records the outcome rc of a primary call. */
static void report(failover_t *f, bool probe, suspect_rc_t rc,
                   const suspect_err_t *why)
{
    pthread_mutex_lock(&f->mu);
    if (rc == SUSPECT_OK) {
        f->stats.primary_ok++;
        f->consecutive = 0;
        if (probe) {
            f->interval_ms = 0;
            transition(f, SUSPECT_BREAKER_CLOSED, NULL);
        }
    } else {
        f->stats.primary_errors++;
        f->consecutive++;
        if (probe || (f->state == SUSPECT_BREAKER_CLOSED &&
                      f->consecutive >= f->failures)) {
            open_breaker(f, why);
        }
    }
    pthread_mutex_unlock(&f->mu);
}

/* How often the callback hears that the primary is full, at most. */
#define FULL_TELL_MS 10000

/* Records that the primary answered full (a call it could not take, the
 * store up); tells the callback at most every FULL_TELL_MS. */
static void report_full(failover_t *f, bool probe, const suspect_err_t *why)
{
    bool tell;

    report(f, probe, SUSPECT_OK, NULL);
    pthread_mutex_lock(&f->mu);
    f->stats.primary_full++;
    tell = f->full_told == 0 || f_mono(f) - f->full_told >= FULL_TELL_MS;
    if (tell) {
        f->full_told = f_mono(f);
        if (f->cb != NULL) {
            f->cb(f->cb_arg, f->state, f->state, why);
        }
    }
    pthread_mutex_unlock(&f->mu);
}

/* ---- fail modes ----------------------------------------------------------
 */

suspect_failmode_t suspect_failover_mode(suspect_store_t *store,
                                         const char *action)
{
    failover_t *f = (failover_t *)store;

    if (!is_failover(store)) {
        return SUSPECT_FAIL_LOCAL;
    }
    for (size_t i = 0; action != NULL && i < f->novr; i++) {
        if (strcmp(f->ovr[i].action, action) == 0) {
            return f->ovr[i].mode;
        }
    }
    return f->mode;
}

static void count(failover_t *f, uint64_t *counter)
{
    pthread_mutex_lock(&f->mu);
    (*counter)++;
    pthread_mutex_unlock(&f->mu);
}

/* Denies because the store is unavailable (mode closed). */
static void deny_unavailable(failover_t *f, const suspect_rule_t *rule,
                             int64_t now_ms, suspect_decision_t *out)
{
    memset(out, 0, sizeof(*out));
    out->tripped = -1;
    out->limit = rule->limit_count;
    out->retry_after_ms = f->closed_retry_ms;
    out->restriction_end_ms = now_ms + f->closed_retry_ms;
    out->degraded = SUSPECT_DEGRADED_CLOSED;
}

/* ---- carrying local decisions back ---------------------------------------
 */

/* Counts a denial the lock cache served; during an outage (failing, or
 * the breaker not closed) also journals its lock: a Redis that restarts
 * empty has lost it. */
static void cache_served(failover_t *f, const suspect_key_t *keys,
                         const suspect_decision_t *out, bool failing)
{
    bool outage;

    pthread_mutex_lock(&f->mu);
    f->stats.cache_hits++;
    outage = failing || f->state != SUSPECT_BREAKER_CLOSED;
    pthread_mutex_unlock(&f->mu);
    if (outage) {
        carry_sync_lock(&f->carry, &keys[out->tripped],
                        out->restriction_end_ms);
    }
}

/* Before the primary decides: writes the journal back if it holds
 * anything, so that no identity locked locally is decided by the primary
 * before its lock is there.  *busy when another thread is writing: this
 * call then decides by the fail mode rather than wait, unless it is the
 * breaker's probe (which must report). */
static suspect_rc_t carry_first(failover_t *f, int64_t now_ms, bool probe,
                                bool *busy, suspect_err_t *err)
{
    return carry_sync_flush(&f->carry, f->primary, now_ms, probe, busy, err);
}

/* Where a ticket's reservation is (suspect_ticket_t.where). */
#define WHERE_PRIMARY 1
#define WHERE_LOCAL   2

/* The fail mode of a decision: its rule's own (a route's or an action's
 * setting), else the wrapper's for the action. */
static suspect_failmode_t mode_of(failover_t *f, const suspect_rule_t *rule)
{
    if (rule->fail_mode >= SUSPECT_RULE_FAIL_LOCAL &&
        rule->fail_mode <= SUSPECT_RULE_FAIL_CLOSED) {
        return (suspect_failmode_t)(rule->fail_mode - 1);
    }
    return suspect_failover_mode(&f->base, rule->action);
}

/* The local store's decision (or reservation, with ticket); false when
 * it failed too. */
static bool decide_locally(failover_t *f, const suspect_rule_t *rule,
                           const suspect_key_t *keys, size_t n, int64_t now_ms,
                           int64_t ttl_ms, suspect_ticket_t *ticket,
                           suspect_decision_t *out)
{
    fail_counts_prefill(&f->counts, f->local, rule, keys, n, now_ms);
    if (ticket == NULL) {
        if (suspect_store_decide(f->local, rule, keys, n, now_ms, out, NULL) !=
            SUSPECT_OK) {
            return false;
        }
        carry_sync_record(&f->carry, f->local, rule, keys, n, now_ms, out);
        return true;
    }
    if (suspect_store_reserve(f->local, rule, keys, n, now_ms, ttl_ms, out,
                              ticket, NULL) != SUSPECT_OK) {
        return false;
    }
    ticket->where = ticket->id != 0 ? WHERE_LOCAL : 0;
    if (!out->allowed) {
        /* its locks go back; a reservation goes back once it is a hit */
        carry_sync_record(&f->carry, f->local, rule, keys, n, now_ms, out);
    }
    return true;
}

/* Clears a ticket: nothing is held. */
static void no_ticket(suspect_ticket_t *ticket)
{
    if (ticket != NULL) {
        memset(ticket, 0, sizeof(*ticket));
    }
}

static suspect_rc_t fail_mode(failover_t *f, const suspect_rule_t *rule,
                              const suspect_key_t *keys, size_t n,
                              int64_t now_ms, int64_t ttl_ms,
                              suspect_ticket_t *ticket, suspect_decision_t *out)
{
    /* A lock seen here still denies until its end, however old its entry:
     * neither open nor the local store knows of it, and nobody can lift
     * it through a primary that fails. */
    if (cache_deny(f, rule, keys, n, now_ms, true, out)) {
        cache_served(f, keys, out, true);
        no_ticket(ticket);
        return SUSPECT_OK;
    }
    switch (mode_of(f, rule)) {
    case SUSPECT_FAIL_OPEN:
        count(f, &f->stats.failed_open);
        memset(out, 0, sizeof(*out));
        out->allowed = true;
        out->tripped = -1;
        out->limit = rule->limit_count;
        out->remaining = rule->limit_count - 1;
        out->degraded = SUSPECT_DEGRADED_OPEN;
        no_ticket(ticket);
        return SUSPECT_OK;
    case SUSPECT_FAIL_LOCAL:
        if (decide_locally(f, rule, keys, n, now_ms, ttl_ms, ticket, out)) {
            count(f, &f->stats.failed_local);
            out->degraded = SUSPECT_DEGRADED_LOCAL;
            return SUSPECT_OK;
        }
        /* The local store failed too (out of memory): deny as closed. */
        break;
    case SUSPECT_FAIL_CLOSED:
        break;
    }
    count(f, &f->stats.failed_closed);
    deny_unavailable(f, rule, now_ms, out);
    no_ticket(ticket);
    return SUSPECT_OK;
}

/* ---- the store operations ------------------------------------------------
 */

/* The primary's decision, or with ticket its reservation. */
static suspect_rc_t primary_call(failover_t *f, const suspect_rule_t *rule,
                                 const suspect_key_t *keys, size_t n,
                                 int64_t now_ms, int64_t ttl_ms,
                                 suspect_ticket_t *ticket,
                                 suspect_decision_t *out, suspect_err_t *e)
{
    suspect_rc_t rc;

    if (ticket == NULL) {
        return suspect_store_decide(f->primary, rule, keys, n, now_ms, out, e);
    }
    rc = suspect_store_reserve(f->primary, rule, keys, n, now_ms, ttl_ms, out,
                               ticket, e);
    ticket->where = ticket->id != 0 ? WHERE_PRIMARY : 0;
    return rc;
}

/* A decision, or with ticket a reservation, through the three gates. */
static suspect_rc_t fo_run(failover_t *f, const suspect_rule_t *rule,
                           const suspect_key_t *keys, size_t n, int64_t now_ms,
                           int64_t ttl_ms, suspect_ticket_t *ticket,
                           suspect_decision_t *out, suspect_err_t *err)
{
    suspect_err_t e;
    suspect_rc_t rc;
    bool probe, busy;

    if (cache_deny(f, rule, keys, n, now_ms, false, out)) {
        cache_served(f, keys, out, false);
        no_ticket(ticket);
        return SUSPECT_OK;
    }
    if (!gate(f, &probe)) {
        return fail_mode(f, rule, keys, n, now_ms, ttl_ms, ticket, out);
    }
    suspect_err_clear(&e);
    rc = carry_first(f, now_ms, probe, &busy, &e);
    if (busy) {
        return fail_mode(f, rule, keys, n, now_ms, ttl_ms, ticket, out);
    }
    if (rc == SUSPECT_OK) {
        rc = primary_call(f, rule, keys, n, now_ms, ttl_ms, ticket, out, &e);
    }
    if (rc == SUSPECT_E_INVAL) {
        report(f, probe, SUSPECT_OK, NULL);
        return suspect_err_set(err, rc, NULL, 0, "%s", e.text);
    }
    /* A full store answered: it is up, and the next decision (an identity
     * it has, a lock) asks it again; this one takes the fail mode. */
    if (rc == SUSPECT_E_FULL) {
        report_full(f, probe, &e);
    } else {
        report(f, probe, rc, &e);
    }
    if (rc != SUSPECT_OK) {
        return fail_mode(f, rule, keys, n, now_ms, ttl_ms, ticket, out);
    }
    if (!out->allowed && out->locked && out->tripped >= 0) {
        cache_put(f, &keys[out->tripped], out->restriction_end_ms,
                  out->offences);
    }
    fail_counts_note(&f->counts, rule, keys, n, now_ms, out);
    return SUSPECT_OK;
}

static suspect_rc_t fo_decide(suspect_store_t *store,
                              const suspect_rule_t *rule,
                              const suspect_key_t *keys, size_t n,
                              int64_t now_ms, suspect_decision_t *out,
                              suspect_err_t *err)
{
    return fo_run((failover_t *)store, rule, keys, n, now_ms, 0, NULL, out,
                  err);
}

static suspect_rc_t fo_reserve(suspect_store_t *store,
                               const suspect_rule_t *rule,
                               const suspect_key_t *keys, size_t n,
                               int64_t now_ms, int64_t ttl_ms,
                               suspect_decision_t *out,
                               suspect_ticket_t *ticket, suspect_err_t *err)
{
    if (!suspect_store_can_reserve(((failover_t *)store)->primary)) {
        return suspect_err_set(
            err, SUSPECT_E_INVAL, NULL, 0, "store %s: cannot hold reservations",
            suspect_store_name(((failover_t *)store)->primary));
    }
    return fo_run((failover_t *)store, rule, keys, n, now_ms, ttl_ms, ticket,
                  out, err);
}

/* Settles on the store that holds the reservation.  A primary that fails now
 * keeps it, and it becomes a hit at its end: an outage between a
 * decision and its response counts the attempt.  A local reservation that
 * counts goes into the journal like any hit the local store admitted. */
static suspect_rc_t fo_settle(suspect_store_t *store,
                              const suspect_rule_t *rule,
                              const suspect_key_t *keys, size_t n,
                              const suspect_ticket_t *ticket, bool failed,
                              int64_t now_ms, suspect_err_t *err)
{
    failover_t *f = (failover_t *)store;
    suspect_rc_t rc;

    if (ticket->where == WHERE_PRIMARY) {
        return suspect_store_settle(f->primary, rule, keys, n, ticket, failed,
                                    now_ms, err);
    }
    if (ticket->where != WHERE_LOCAL) {
        return SUSPECT_OK;
    }
    rc = suspect_store_settle(f->local, rule, keys, n, ticket, failed, now_ms,
                              err);
    if (rc == SUSPECT_OK &&
        suspect_policy_settle_counts(failed, ticket->end_ms, now_ms)) {
        suspect_decision_t hit;

        memset(&hit, 0, sizeof(hit));
        hit.allowed = true;
        carry_sync_record(&f->carry, f->local, rule, keys, n, ticket->at_ms,
                          &hit);
    }
    return rc;
}

static suspect_rc_t fo_status(suspect_store_t *store,
                              const suspect_rule_t *rule,
                              const suspect_key_t *key, int64_t now_ms,
                              suspect_status_t *out, suspect_err_t *err)
{
    failover_t *f = (failover_t *)store;
    return suspect_store_status(f->primary, rule, key, now_ms, out, err);
}

static suspect_rc_t fo_reset(suspect_store_t *store, const suspect_key_t *key,
                             unsigned what, suspect_err_t *err)
{
    failover_t *f = (failover_t *)store;

    if (what & SUSPECT_RESET_LOCK) {
        cache_put(f, key, 0, 0);
    }
    if (what & SUSPECT_RESET_WINDOW) {
        fail_counts_forget(&f->counts, key);
    }
    carry_sync_forget(&f->carry, key, what);
    (void)suspect_store_reset(f->local, key, what, NULL);
    return suspect_store_reset(f->primary, key, what, err);
}

static suspect_rc_t fo_block(suspect_store_t *store, const suspect_key_t *key,
                             int64_t now_ms, int64_t until_ms,
                             suspect_err_t *err)
{
    failover_t *f = (failover_t *)store;
    suspect_rc_t rc;

    cache_put(f, key, until_ms, 0);
    (void)suspect_store_block(f->local, key, now_ms, until_ms, NULL);
    rc = suspect_store_block(f->primary, key, now_ms, until_ms, err);
    if (rc != SUSPECT_OK && rc != SUSPECT_E_INVAL) {
        /* The local store denies it meanwhile; the primary gets it when
         * it answers again. */
        carry_sync_lock(&f->carry, key, until_ms);
    }
    return rc;
}

/* Lets the identity in everywhere this process decides: the lock cache,
 * the journal (its hits there too, or carrying them back would lock it
 * again), the local store and the primary, whose answer is the one
 * returned. */
static suspect_rc_t fo_unblock(suspect_store_t *store,
                               const suspect_rule_t *rule,
                               const suspect_key_t *key, int64_t now_ms,
                               suspect_unblock_t *out, suspect_err_t *err)
{
    failover_t *f = (failover_t *)store;
    suspect_unblock_t local;

    cache_put(f, key, 0, 0);
    fail_counts_forget(&f->counts, key);
    carry_sync_forget(&f->carry, key, SUSPECT_RESET_ALL);
    (void)suspect_store_unblock(f->local, rule, key, now_ms, &local, NULL);
    return suspect_store_unblock(f->primary, rule, key, now_ms, out, err);
}

static suspect_rc_t fo_foreach_locked(suspect_store_t *store,
                                      const char *prefix, int64_t now_ms,
                                      suspect_locked_fn fn, void *arg,
                                      suspect_err_t *err)
{
    failover_t *f = (failover_t *)store;

    return suspect_store_foreach_locked(f->primary, prefix, now_ms, fn, arg,
                                        err);
}

static void free_overrides(suspect_failmode_override_t *ovr, size_t n)
{
    for (size_t i = 0; ovr != NULL && i < n; i++) {
        free((char *)ovr[i].action);
    }
    free(ovr);
}

static void fo_free(suspect_store_t *store)
{
    failover_t *f = (failover_t *)store;

    suspect_store_free(f->primary);
    suspect_store_free(f->local);
    free_overrides(f->ovr, f->novr);
    carry_sync_destroy(&f->carry);
    fail_counts_free(&f->counts);
    pthread_mutex_destroy(&f->mu);
    pthread_mutex_destroy(&f->cache_mu);
    free(f);
}

/* What the primary gives: a feature it lacks must not silently become
 * the local store's.  Meters need both: the local store decides on them
 * during an outage. */
static bool fo_supports(const suspect_store_t *store, unsigned what)
{
    const failover_t *f = (const failover_t *)store;

    return suspect_store_supports(f->primary, what) &&
           (!(what & SUSPECT_STORE_CAN_METER) ||
            suspect_store_supports(f->local, SUSPECT_STORE_CAN_METER));
}

static const suspect_store_ops_t failover_ops = {
    .name = "failover",
    .decide = fo_decide,
    .status = fo_status,
    .reset = fo_reset,
    .block = fo_block,
    .free = fo_free,
    .unblock = fo_unblock,
    .foreach_locked = fo_foreach_locked,
    .reserve = fo_reserve,
    .settle = fo_settle,
    .supports = fo_supports,
};

static bool is_failover(const suspect_store_t *store)
{
    return store != NULL && store->ops == &failover_ops;
}

/* ---- public --------------------------------------------------------------
 */

static bool mode_valid(suspect_failmode_t m)
{
    return m == SUSPECT_FAIL_LOCAL || m == SUSPECT_FAIL_OPEN ||
           m == SUSPECT_FAIL_CLOSED;
}

/* Copies and checks the options into f. */
static suspect_rc_t copy_opts(failover_t *f, const suspect_failover_opts_t *o,
                              suspect_err_t *err)
{
    if (!mode_valid(o->mode)) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "failover: unknown fail mode");
    }
    f->mode = o->mode;
    f->failures = o->failures ? o->failures : 3;
    f->min_open_ms = o->min_open_ms ? o->min_open_ms : 100;
    f->max_open_ms = o->max_open_ms ? o->max_open_ms : 5000;
    f->max_open_ms =
        f->max_open_ms < f->min_open_ms ? f->min_open_ms : f->max_open_ms;
    f->closed_retry_ms = o->closed_retry_ms ? o->closed_retry_ms : 1000;
    f->cache_ttl_ms = o->lock_cache_ttl_ms ? o->lock_cache_ttl_ms : 1000;
    f->cb = o->on_breaker;
    f->cb_arg = o->cb_arg;
    f->clock = o->mono_clock;
    if (o->noverrides == 0) {
        return SUSPECT_OK;
    }
    f->ovr = suspect_calloc(o->noverrides, sizeof(*f->ovr));
    if (f->ovr == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "failover: out of memory");
    }
    for (size_t i = 0; i < o->noverrides; i++) {
        const char *a = o->overrides[i].action;
        if (a == NULL || !suspect_name_valid(a, strlen(a)) ||
            !mode_valid(o->overrides[i].mode)) {
            return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                                   "failover: override %zu: bad action or "
                                   "mode",
                                   i);
        }
        f->ovr[i].action = suspect_strdup(a);
        f->ovr[i].mode = o->overrides[i].mode;
        f->novr = i + 1;
        if (f->ovr[i].action == NULL) {
            return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                                   "failover: out of memory");
        }
    }
    return SUSPECT_OK;
}

suspect_rc_t suspect_failover_new(suspect_store_t *primary,
                                  suspect_store_t *local,
                                  const suspect_failover_opts_t *opts,
                                  suspect_store_t **out, suspect_err_t *err)
{
    static const suspect_failover_opts_t defaults;
    failover_t *f;
    suspect_rc_t rc, rc2;

    *out = NULL;
    if (primary == NULL || local == NULL) {
        suspect_store_free(primary);
        suspect_store_free(local);
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "failover: needs a primary and a local store");
    }
    f = suspect_calloc(1, sizeof(*f));
    if (f == NULL) {
        suspect_store_free(primary);
        suspect_store_free(local);
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "failover: out of memory");
    }
    f->base.ops = &failover_ops;
    f->primary = primary;
    f->local = local;
    pthread_mutex_init(&f->mu, NULL);
    pthread_mutex_init(&f->cache_mu, NULL);
    rc = suspect_random_bytes(&f->secret, sizeof(f->secret), err);
    /* Whatever the secret gave: fo_free() undoes what this sets up. */
    rc2 = carry_sync_init(&f->carry, &f->secret, err);
    f->gen = 1;
    if (rc == SUSPECT_OK) {
        rc = rc2;
    }
    if (rc == SUSPECT_OK) {
        rc = fail_counts_init(&f->counts, &f->secret) == 0
                 ? copy_opts(f, opts != NULL ? opts : &defaults, err)
                 : suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                                   "failover: out of memory");
    }
    if (rc != SUSPECT_OK) {
        fo_free(&f->base);
        return rc;
    }
    *out = &f->base;
    return SUSPECT_OK;
}

void suspect_failover_stats(suspect_store_t *store,
                            suspect_failover_stats_t *out)
{
    failover_t *f = (failover_t *)store;

    memset(out, 0, sizeof(*out));
    if (!is_failover(store)) {
        return;
    }
    pthread_mutex_lock(&f->mu);
    *out = f->stats;
    out->state = f->state;
    pthread_mutex_unlock(&f->mu);
    out->carried_locks = __atomic_load_n(&f->carry.locks, __ATOMIC_RELAXED);
    out->carried_hits = __atomic_load_n(&f->carry.hits, __ATOMIC_RELAXED);
    out->carry_dropped = __atomic_load_n(&f->carry.dropped, __ATOMIC_RELAXED);
}

void suspect_failover_bump_generation(suspect_store_t *store)
{
    failover_t *f = (failover_t *)store;

    if (!is_failover(store)) {
        return;
    }
    pthread_mutex_lock(&f->cache_mu);
    f->gen++;
    pthread_mutex_unlock(&f->cache_mu);
}
