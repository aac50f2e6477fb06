/*
 * metrics.c - the registry of suspect-fcgi's own counters, and the
 * Prometheus text format writer (metrics.h).
 *
 * Actions to rows: an open-addressing table of 2 x MW_METRICS_ACTIONS
 * cells, indexed by the FNV-1a hash of the name.  A cell's name pointer is
 * published last (release) after its row index; readers load it
 * (acquire) and compare strings, so the request path takes no lock.  Only
 * an action met for the first time takes the mutex, to add it.  Names are
 * copied and kept until the registry is freed: a limits file does not
 * hold more than a few hundred actions, and a reload that renames one
 * leaves the old row counting what it counted.
 *
 * Rows and histograms are arrays of atomic counters bumped with relaxed
 * adds: exact totals, no ordering needed between them.  Each row has its
 * own cache lines, so threads deciding different actions do not share one.
 * What every request touches whatever its action (the histograms, the
 * forwarding errors, requests in flight) is kept per thread: SHARDS copies
 * on cache lines of their own, a thread using the one its first call drew
 * (round robin), summed when rendered, so the workers' every request does
 * not bounce the same few cache lines from core to core.
 * A histogram keeps a count per bucket (made cumulative when rendered),
 * the number of observations and their sum in nanoseconds.
 */
#include "metrics.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

#define TABLE        (2 * MW_METRICS_ACTIONS) /* a power of two */
#define OTHER_ROW    MW_METRICS_ACTIONS
#define STORE_NAME   16
#define HIST_BUCKETS 14
#define SHARDS       16 /* copies of the per-request counters */

typedef struct row {
    _Alignas(64) atomic_uint_fast64_t outcome[MW_OUT_COUNT];
    atomic_uint_fast64_t locks;
} row_t;

typedef struct hist {
    atomic_uint_fast64_t bucket[HIST_BUCKETS];
    atomic_uint_fast64_t count;
    atomic_uint_fast64_t sum_ns;
} hist_t;

/* What each request bumps whatever its action: one copy per shard. */
typedef struct shard {
    _Alignas(64) hist_t store_hist;
    hist_t fwd_hist[MW_TARGET_COUNT];
    atomic_uint_fast64_t fwd_errors[MW_TARGET_COUNT];
    atomic_int_fast64_t in_flight;
} shard_t;

struct mw_metrics {
    char store[STORE_NAME];
    mw_target_t target;
    pthread_mutex_t mu; /* adding an action */
    _Atomic(const char *) cell_name[TABLE];
    int cell_row[TABLE];
    atomic_int nrows;
    char *names[MW_METRICS_ACTIONS];
    row_t rows[MW_METRICS_ACTIONS + 1];
    shard_t shards[SHARDS];
    atomic_uint_fast64_t reloads[2][2]; /* [conf][applied] */
    atomic_uint_fast64_t generation;
    atomic_int_fast64_t last_ok_ms;
    atomic_uint_fast64_t store_full;
    atomic_uint_fast64_t device[2];    /* [allowed] of trusted devices */
    atomic_uint_fast64_t pass[2];      /* [allowed] of passes */
    atomic_uint_fast64_t challenge[3]; /* by mw_challenge_event_t */
};

/* Store decisions: 50 us to 1 s.  Forwarding (the application's own
 * time): 1 ms to 30 s. */
static const int64_t store_bounds[HIST_BUCKETS - 1] = {
    50000,    100000,   250000,   500000,    1000000,   2500000,   5000000,
    10000000, 25000000, 50000000, 100000000, 250000000, 1000000000};
static const int64_t fwd_bounds[HIST_BUCKETS - 1] = {
    1000000,    5000000,     10000000,   25000000,   50000000,
    100000000,  250000000,   500000000,  1000000000, 2500000000,
    5000000000, 10000000000, 30000000000};

static const char *const outcome_names[MW_OUT_COUNT] = {
    "allowed",     "denied_limit",       "denied_locked",     "fail_open",
    "fail_closed", "fail_local_allowed", "fail_local_denied", "skipped",
    "rejected",    "would_deny",         "denied_list"};
static const char *const target_names[MW_TARGET_COUNT] = {"cgi", "fastcgi"};

const char *mw_decision_outcome_name(mw_decision_outcome_t o)
{
    return o < MW_OUT_COUNT ? outcome_names[o] : "?";
}

mw_metrics_t *mw_metrics_new(const char *store, mw_target_t target)
{
    mw_metrics_t *m = suspect_calloc(1, sizeof(*m));

    if (m == NULL) {
        return NULL;
    }
    snprintf(m->store, sizeof(m->store), "%s", store);
    m->target = target;
    pthread_mutex_init(&m->mu, NULL);
    return m;
}

void mw_metrics_free(mw_metrics_t *m)
{
    if (m == NULL) {
        return;
    }
    for (int i = 0; i < atomic_load(&m->nrows); i++) {
        free(m->names[i]);
    }
    pthread_mutex_destroy(&m->mu);
    free(m);
}

const char *mw_metrics_store_name(const mw_metrics_t *m)
{
    return m->store;
}

/* ---- actions ------------------------------------------------------------ */

static uint32_t fnv1a(const char *s)
{
    uint32_t h = 2166136261u;

    while (*s != '\0') {
        h = (h ^ (unsigned char)*s++) * 16777619u;
    }
    return h;
}

/* The row of name if it is in the table, else -1; *free_cell gets the
 * first empty cell met (-1 when the table is full). */
static int find(mw_metrics_t *m, const char *name, uint32_t h, int *free_cell)
{
    for (uint32_t i = 0; i < TABLE; i++) {
        uint32_t k = (h + i) & (TABLE - 1);
        const char *n =
            atomic_load_explicit(&m->cell_name[k], memory_order_acquire);

        if (n == NULL) {
            *free_cell = (int)k;
            return -1;
        }
        if (strcmp(n, name) == 0) {
            return m->cell_row[k];
        }
    }
    *free_cell = -1;
    return -1;
}

/* Adds name under the mutex (another thread may have added it first). */
static int add(mw_metrics_t *m, const char *name, uint32_t h)
{
    int cell, row, n;
    char *copy;

    pthread_mutex_lock(&m->mu);
    row = find(m, name, h, &cell);
    n = atomic_load(&m->nrows);
    if (row < 0 && cell >= 0 && n < MW_METRICS_ACTIONS &&
        (copy = suspect_strdup(name)) != NULL) {
        m->names[n] = copy;
        m->cell_row[cell] = n;
        atomic_store_explicit(&m->cell_name[cell], copy, memory_order_release);
        atomic_store(&m->nrows, n + 1);
        row = n;
    }
    pthread_mutex_unlock(&m->mu);
    return row >= 0 ? row : OTHER_ROW;
}

int mw_metrics_action(mw_metrics_t *m, const char *action)
{
    uint32_t h = fnv1a(action);
    int cell, row = find(m, action, h, &cell);

    return row >= 0 ? row : add(m, action, h);
}

/* ---- the request path ---------------------------------------------------- */

static void bump(atomic_uint_fast64_t *c, uint64_t n)
{
    atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

void mw_metrics_decision(mw_metrics_t *m, int row, mw_decision_outcome_t o,
                         unsigned locks_created)
{
    row_t *r = &m->rows[row >= 0 && row <= OTHER_ROW ? row : OTHER_ROW];

    bump(&r->outcome[o < MW_OUT_COUNT ? o : MW_OUT_REJECTED], 1);
    if (locks_created > 0) {
        bump(&r->locks, locks_created);
    }
}

/* This thread's shard of m. */
static shard_t *my_shard(mw_metrics_t *m)
{
    static atomic_uint next;
    static _Thread_local int mine = -1;

    if (mine < 0) {
        mine = (int)(atomic_fetch_add(&next, 1) % SHARDS);
    }
    return &m->shards[mine];
}

static void observe(hist_t *h, const int64_t *bounds_ns, int64_t ns)
{
    int i = 0;

    if (ns < 0) {
        ns = 0;
    }
    while (i < HIST_BUCKETS - 1 && ns > bounds_ns[i]) {
        i++;
    }
    bump(&h->bucket[i], 1);
    bump(&h->count, 1);
    bump(&h->sum_ns, (uint64_t)ns);
}

void mw_metrics_store_time(mw_metrics_t *m, int64_t ns)
{
    observe(&my_shard(m)->store_hist, store_bounds, ns);
}

void mw_metrics_forward(mw_metrics_t *m, mw_target_t t, int64_t ns, bool failed)
{
    shard_t *s = my_shard(m);

    observe(&s->fwd_hist[t], fwd_bounds, ns);
    if (failed) {
        bump(&s->fwd_errors[t], 1);
    }
}

void mw_metrics_in_flight(mw_metrics_t *m, int delta)
{
    atomic_fetch_add_explicit(&my_shard(m)->in_flight, delta,
                              memory_order_relaxed);
}

void mw_metrics_store_full(mw_metrics_t *m)
{
    bump(&m->store_full, 1);
}

void mw_metrics_device(mw_metrics_t *m, bool allowed)
{
    bump(&m->device[allowed ? 1 : 0], 1);
}

void mw_metrics_pass(mw_metrics_t *m, bool allowed)
{
    bump(&m->pass[allowed ? 1 : 0], 1);
}

void mw_metrics_challenge(mw_metrics_t *m, mw_challenge_event_t e)
{
    bump(&m->challenge[e], 1);
}

uint64_t mw_metrics_store_full_count(mw_metrics_t *m)
{
    return atomic_load_explicit(&m->store_full, memory_order_relaxed);
}

void mw_metrics_reload(mw_metrics_t *m, bool conf, bool applied,
                       int64_t wall_ms)
{
    bump(&m->reloads[conf ? 1 : 0][applied ? 1 : 0], 1);
    if (applied) {
        bump(&m->generation, 1);
        atomic_store(&m->last_ok_ms, wall_ms);
    }
}

/* ---- reading ------------------------------------------------------------- */

/* Fills out from row i; false when it counted nothing. */
static bool read_row(mw_metrics_t *m, int i, mw_metrics_row_t *out)
{
    uint64_t any = 0;

    out->action = i == OTHER_ROW ? "_other" : m->names[i];
    for (int o = 0; o < MW_OUT_COUNT; o++) {
        out->outcome[o] =
            atomic_load_explicit(&m->rows[i].outcome[o], memory_order_relaxed);
        any |= out->outcome[o];
    }
    out->locks_created =
        atomic_load_explicit(&m->rows[i].locks, memory_order_relaxed);
    return any != 0 || out->locks_created != 0;
}

void mw_metrics_foreach_row(mw_metrics_t *m,
                            int (*fn)(void *arg, const mw_metrics_row_t *r),
                            void *arg)
{
    int n = atomic_load(&m->nrows);
    mw_metrics_row_t r;

    for (int i = 0; i < n; i++) {
        if (read_row(m, i, &r) && fn(arg, &r) != 0) {
            return;
        }
    }
    if (read_row(m, OTHER_ROW, &r)) {
        fn(arg, &r);
    }
}

/* ---- the text format ----------------------------------------------------- */

static void put(mw_prom_t *p, const char *s, size_t n)
{
    if (p->nomem) {
        return;
    }
    if (p->cap - p->len < n + 1) {
        size_t cap = p->cap == 0 ? 4096 : p->cap;
        char *nb;

        while (cap - p->len < n + 1) {
            cap *= 2;
        }
        nb = suspect_realloc(p->buf, cap);
        if (nb == NULL) {
            p->nomem = true;
            return;
        }
        p->buf = nb;
        p->cap = cap;
    }
    memcpy(p->buf + p->len, s, n);
    p->len += n;
    p->buf[p->len] = '\0';
}

static void puts_(mw_prom_t *p, const char *s)
{
    put(p, s, strlen(s));
}

/* A label value, escaped. */
static void put_escaped(mw_prom_t *p, const char *s)
{
    for (; *s != '\0'; s++) {
        if (*s == '\\' || *s == '"') {
            put(p, "\\", 1);
            put(p, s, 1);
        } else if (*s == '\n') {
            put(p, "\\n", 2);
        } else {
            put(p, s, 1);
        }
    }
}

void mw_prom_head(mw_prom_t *p, const char *name, const char *type,
                  const char *help)
{
    puts_(p, "# HELP ");
    puts_(p, name);
    puts_(p, " ");
    puts_(p, help);
    puts_(p, "\n# TYPE ");
    puts_(p, name);
    puts_(p, " ");
    puts_(p, type);
    puts_(p, "\n");
}

void mw_prom_sample(mw_prom_t *p, const char *name, const char *const *labels,
                    double value)
{
    char num[40];

    puts_(p, name);
    for (size_t i = 0; labels != NULL && labels[i] != NULL; i += 2) {
        puts_(p, i == 0 ? "{" : ",");
        puts_(p, labels[i]);
        puts_(p, "=\"");
        put_escaped(p, labels[i + 1]);
        puts_(p, "\"");
    }
    if (labels != NULL && labels[0] != NULL) {
        puts_(p, "}");
    }
    if (isinf(value)) {
        snprintf(num, sizeof(num), " %s\n", value > 0 ? "+Inf" : "-Inf");
    } else if (value == floor(value) && fabs(value) < 1e15) {
        snprintf(num, sizeof(num), " %.0f\n", value);
    } else {
        snprintf(num, sizeof(num), " %.15g\n", value);
    }
    puts_(p, num);
}

suspect_rc_t mw_prom_done(mw_prom_t *p)
{
    return p->nomem ? SUSPECT_E_NOMEM : SUSPECT_OK;
}

void mw_prom_free(mw_prom_t *p)
{
    free(p->buf);
    memset(p, 0, sizeof(*p));
}

/* The sum of the shards' copies of one histogram (at offset off of a
 * shard). */
typedef struct hist_sum {
    uint64_t bucket[HIST_BUCKETS], count, sum_ns;
} hist_sum_t;

static void sum_hist(const mw_metrics_t *m, size_t off, hist_sum_t *out)
{
    memset(out, 0, sizeof(*out));
    for (int s = 0; s < SHARDS; s++) {
        const hist_t *h = (const hist_t *)((const char *)&m->shards[s] + off);

        for (int i = 0; i < HIST_BUCKETS; i++) {
            out->bucket[i] +=
                atomic_load_explicit(&h->bucket[i], memory_order_relaxed);
        }
        out->count += atomic_load_explicit(&h->count, memory_order_relaxed);
        out->sum_ns += atomic_load_explicit(&h->sum_ns, memory_order_relaxed);
    }
}

/* A histogram's buckets, sum and count, with one label pair. */
static void render_hist(mw_prom_t *p, const char *name, const hist_sum_t *h,
                        const int64_t *bounds_ns, const char *label,
                        const char *value)
{
    const char *labels[] = {label, value, NULL};
    char metric[96], le[32];
    uint64_t cum = 0;

    snprintf(metric, sizeof(metric), "%s_bucket", name);
    for (int i = 0; i < HIST_BUCKETS; i++) {
        const char *bl[] = {label, value, "le", le, NULL};

        cum += h->bucket[i];
        if (i < HIST_BUCKETS - 1) {
            snprintf(le, sizeof(le), "%g", (double)bounds_ns[i] / 1e9);
        } else {
            snprintf(le, sizeof(le), "+Inf");
        }
        mw_prom_sample(p, metric, bl, (double)cum);
    }
    snprintf(metric, sizeof(metric), "%s_sum", name);
    mw_prom_sample(p, metric, labels, (double)h->sum_ns / 1e9);
    snprintf(metric, sizeof(metric), "%s_count", name);
    mw_prom_sample(p, metric, labels, (double)h->count);
}

static int render_row(void *arg, const mw_metrics_row_t *r)
{
    mw_prom_t *p = arg;

    for (int o = 0; o < MW_OUT_COUNT; o++) {
        const char *labels[] = {"action", r->action, "outcome",
                                outcome_names[o], NULL};

        mw_prom_sample(p, "suspect_decisions_total", labels,
                       (double)r->outcome[o]);
    }
    return 0;
}

static int render_locks(void *arg, const mw_metrics_row_t *r)
{
    const char *labels[] = {"action", r->action, NULL};

    mw_prom_sample(arg, "suspect_locks_created_total", labels,
                   (double)r->locks_created);
    return 0;
}

/* Reload counters and the configuration's generation. */
static void render_reloads(mw_metrics_t *m, mw_prom_t *p)
{
    static const char *const files[2] = {"limits", "suspect.xml"};
    static const char *const results[2] = {"rejected", "applied"};

    mw_prom_head(p, "suspect_reloads_total", "counter",
                 "Reloads of suspect.xml and the limits file, by result.");
    for (int f = 0; f < 2; f++) {
        for (int a = 0; a < 2; a++) {
            const char *labels[] = {"file", files[f], "result", results[a],
                                    NULL};

            mw_prom_sample(p, "suspect_reloads_total", labels,
                           (double)atomic_load(&m->reloads[f][a]));
        }
    }
    mw_prom_head(p, "suspect_config_generation", "gauge",
                 "Reloads applied since start: changes when a new "
                 "configuration is in force.");
    mw_prom_sample(p, "suspect_config_generation", NULL,
                   (double)atomic_load(&m->generation));
    mw_prom_head(p, "suspect_config_last_reload_success_timestamp_seconds",
                 "gauge",
                 "When a reload was last applied (0: none since start).");
    mw_prom_sample(p, "suspect_config_last_reload_success_timestamp_seconds",
                   NULL, (double)atomic_load(&m->last_ok_ms) / 1000.0);
}

/* The decisions counted as a trusted device (device cookies). */
static void render_devices(mw_metrics_t *m, mw_prom_t *p)
{
    static const char *const names[2] = {"denied", "allowed"};

    mw_prom_head(p, "suspect_device_decisions_total", "counter",
                 "Decisions on an account counted as a trusted device (a "
                 "valid device cookie), by outcome.");
    for (int i = 1; i >= 0; i--) {
        const char *labels[] = {"outcome", names[i], NULL};

        mw_prom_sample(
            p, "suspect_device_decisions_total", labels,
            (double)atomic_load_explicit(&m->device[i], memory_order_relaxed));
    }
}

/* The decisions counted as a pass, and the challenges. */
static void render_challenges(mw_metrics_t *m, mw_prom_t *p)
{
    static const char *const outcomes[2] = {"denied", "allowed"};
    static const char *const events[3] = {"served", "solved", "refused"};

    mw_prom_head(p, "suspect_pass_decisions_total", "counter",
                 "Decisions whose shared address was counted as a pass "
                 "(a solved challenge), by outcome.");
    for (int i = 1; i >= 0; i--) {
        const char *labels[] = {"outcome", outcomes[i], NULL};

        mw_prom_sample(
            p, "suspect_pass_decisions_total", labels,
            (double)atomic_load_explicit(&m->pass[i], memory_order_relaxed));
    }
    mw_prom_head(p, "suspect_challenges_total", "counter",
                 "Challenge pages served to browsers refused only because of "
                 "a shared address, and the solutions posted back, by "
                 "outcome.");
    for (int i = 0; i < 3; i++) {
        const char *labels[] = {"outcome", events[i], NULL};

        mw_prom_sample(p, "suspect_challenges_total", labels,
                       (double)atomic_load_explicit(&m->challenge[i],
                                                    memory_order_relaxed));
    }
}

void mw_metrics_render(mw_metrics_t *m, mw_prom_t *p)
{
    hist_sum_t h;
    uint64_t errors = 0;
    int64_t in_flight = 0;

    for (int s = 0; s < SHARDS; s++) {
        in_flight += atomic_load(&m->shards[s].in_flight);
        if (m->target < MW_TARGET_COUNT) {
            errors += atomic_load(&m->shards[s].fwd_errors[m->target]);
        }
    }
    mw_prom_head(p, "suspect_decisions_total", "counter",
                 "Requests that met a route, by action and outcome.");
    mw_metrics_foreach_row(m, render_row, p);
    mw_prom_head(p, "suspect_locks_created_total", "counter",
                 "Locks created by decisions, by action.");
    mw_metrics_foreach_row(m, render_locks, p);
    mw_prom_head(p, "suspect_store_latency_seconds", "histogram",
                 "Time of one decision in the store.");
    sum_hist(m, offsetof(shard_t, store_hist), &h);
    render_hist(p, "suspect_store_latency_seconds", &h, store_bounds, "store",
                m->store);
    if (m->target < MW_TARGET_COUNT) {
        const char *labels[] = {"target", target_names[m->target], NULL};

        mw_prom_head(p, "suspect_upstream_latency_seconds", "histogram",
                     "Time of an allowed request in the application (cgi: "
                     "a CGI program; fastcgi: the upstream server).");
        sum_hist(
            m, offsetof(shard_t, fwd_hist) + (size_t)m->target * sizeof(hist_t),
            &h);
        render_hist(p, "suspect_upstream_latency_seconds", &h, fwd_bounds,
                    "target", target_names[m->target]);
        mw_prom_head(p, "suspect_upstream_errors_total", "counter",
                     "Allowed requests the application failed (502, 504, a "
                     "cut response).");
        mw_prom_sample(p, "suspect_upstream_errors_total", labels,
                       (double)errors);
    }
    mw_prom_head(p, "suspect_requests_in_flight", "gauge",
                 "Requests being handled now.");
    mw_prom_sample(p, "suspect_requests_in_flight", NULL, (double)in_flight);
    render_reloads(m, p);
    render_devices(m, p);
    render_challenges(m, p);
}
