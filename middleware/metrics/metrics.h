/*
 * metrics.h - what a running suspect-fcgi counts, and the Prometheus text
 * exposition format it is read in.
 *
 * The registry holds the counters the request path moves: decisions by
 * action and outcome, locks created by action, store and forward
 * latencies (histograms), forward errors, requests in flight, reloads.
 * Everything else (workers busy, CGI children, breaker state, lock cache
 * hits, store errors, timeouts) is read from its owner when the metrics
 * are rendered, by the daemon (daemon/observe.c), with the writer below.
 *
 * Cost on the request path: an action's row is found by a hash of its
 * name in an append-only table read without a lock; each counter is a
 * relaxed atomic add on the row, which is padded to its own cache lines
 * (bench/bench-fcgi measures what it costs).  Labels are bounded: actions
 * come from the limits file (at most MW_METRICS_ACTIONS are kept apart;
 * later ones are counted under action="_other"), outcomes and stores are
 * fixed sets, and no label ever holds an identity or a request's value.
 */
#ifndef MW_METRICS_H
#define MW_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "suspect_error.h"

/* Actions kept apart in labels; more share the row "_other". */
#define MW_METRICS_ACTIONS 256

/* What became of a request that met a route (label outcome). */
typedef enum mw_decision_outcome {
    MW_OUT_ALLOWED = 0,        /* counted and allowed */
    MW_OUT_DENIED_LIMIT,       /* over the limit: the 429 */
    MW_OUT_DENIED_LOCKED,      /* locked out: the 429 */
    MW_OUT_FAIL_OPEN,          /* store unavailable, fail mode open: allowed */
    MW_OUT_FAIL_CLOSED,        /* store unavailable, fail mode closed: 503 */
    MW_OUT_FAIL_LOCAL_ALLOWED, /* store unavailable, decided locally */
    MW_OUT_FAIL_LOCAL_DENIED,
    MW_OUT_SKIPPED,     /* no identity (missing): not counted */
    MW_OUT_REJECTED,    /* a bad request for the route: 400, 413, 415, 500 */
    MW_OUT_WOULD_DENY,  /* a shadow route let through what it would refuse */
    MW_OUT_DENIED_LIST, /* on a deny list: refused before any count */
    MW_OUT_COUNT
} mw_decision_outcome_t;

/* The label value of an outcome ("denied_locked"). */
const char *mw_decision_outcome_name(mw_decision_outcome_t o);

/* Where an allowed request went (label target). */
typedef enum mw_target {
    MW_TARGET_CGI = 0,
    MW_TARGET_FASTCGI,
    MW_TARGET_COUNT
} mw_target_t;

typedef struct mw_metrics mw_metrics_t;

/* A new registry; NULL when out of memory.  store names the store's kind
 * ("memory", "lmdb", "redis") for the store_* labels; target is where
 * allowed requests go (MW_TARGET_COUNT: nowhere, a deciding mode), the
 * only target rendered. */
mw_metrics_t *mw_metrics_new(const char *store, mw_target_t target);
void mw_metrics_free(mw_metrics_t *m); /* NULL is a no-op */

/* The store name given to mw_metrics_new(). */
const char *mw_metrics_store_name(const mw_metrics_t *m);

/* The row of action (a name from the limits file): an index for the calls
 * below.  Thread-safe; never fails (an action past MW_METRICS_ACTIONS, or
 * one met when memory is short, gets the "_other" row). */
int mw_metrics_action(mw_metrics_t *m, const char *action);

/* Request path, thread-safe and lock-free. */
void mw_metrics_decision(mw_metrics_t *m, int row, mw_decision_outcome_t o,
                         unsigned locks_created);
void mw_metrics_store_time(mw_metrics_t *m, int64_t ns);
void mw_metrics_forward(mw_metrics_t *m, mw_target_t t, int64_t ns,
                        bool failed);
void mw_metrics_in_flight(mw_metrics_t *m, int delta);
/* A decision the store could not take because it is full (the memory
 * store full of live locks: the request got a 503). */
void mw_metrics_store_full(mw_metrics_t *m);

/* A decision on an account counted as a trusted device (device cookies):
 * allowed, or denied. */
void mw_metrics_device(mw_metrics_t *m, bool allowed);

/* A decision whose shared address was counted as a pass (challenges):
 * allowed, or denied. */
void mw_metrics_pass(mw_metrics_t *m, bool allowed);

/* A decision on a body of calls (XML-RPC, a JSON batch) that carried
 * calls of them. */
void mw_metrics_calls(mw_metrics_t *m, unsigned calls);

/* What became of a challenge: a page served, a solution that earned a
 * pass, a solution refused. */
typedef enum mw_challenge_event {
    MW_CHALLENGE_SERVED = 0,
    MW_CHALLENGE_SOLVED,
    MW_CHALLENGE_REFUSED
} mw_challenge_event_t;
void mw_metrics_challenge(mw_metrics_t *m, mw_challenge_event_t e);

/* How many mw_metrics_store_full() counted. */
uint64_t mw_metrics_store_full_count(mw_metrics_t *m);

/* A reload of suspect.xml (conf true) or of the limits file. */
void mw_metrics_reload(mw_metrics_t *m, bool conf, bool applied,
                       int64_t wall_ms);

/* One action's decisions, for suspectctl stats. */
typedef struct mw_metrics_row {
    const char *action; /* the registry's copy, or "_other" */
    uint64_t outcome[MW_OUT_COUNT];
    uint64_t locks_created;
} mw_metrics_row_t;

/* Calls fn for each action row that has counted anything, in the order
 * the actions were first met.  fn returns 0 to go on. */
void mw_metrics_foreach_row(mw_metrics_t *m,
                            int (*fn)(void *arg, const mw_metrics_row_t *r),
                            void *arg);

/* ---- the exposition format ---------------------------------------------- */

/* A text being rendered; zero it.  Out of memory is kept and reported by
 * mw_prom_done(). */
typedef struct mw_prom {
    char *buf;
    size_t len, cap;
    bool nomem;
} mw_prom_t;

/* "# HELP name help" and "# TYPE name type" (type: counter, gauge,
 * histogram). */
void mw_prom_head(mw_prom_t *p, const char *name, const char *type,
                  const char *help);

/* One sample: name{labels} value.  labels is NULL or pairs
 * {"key", "value", ..., NULL}; values are escaped as the format asks
 * (backslash, double quote, newline). */
void mw_prom_sample(mw_prom_t *p, const char *name, const char *const *labels,
                    double value);

/* SUSPECT_OK, or SUSPECT_E_NOMEM; the text is p->buf[0..p->len). */
suspect_rc_t mw_prom_done(mw_prom_t *p);
void mw_prom_free(mw_prom_t *p);

/* Renders what the registry holds (every metric it owns, with HELP and
 * TYPE) into p. */
void mw_metrics_render(mw_metrics_t *m, mw_prom_t *p);

#endif
