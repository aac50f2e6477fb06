/*
 * bench_policy.c - decisions per second of suspect_store_decide() on the
 * memory store (`make bench`).
 *
 * What: first the headline, a row where every decision is allowed (a hit
 * recorded, the oldest trimmed: the work a legitimate request costs), 1
 * thread, 16 identities, LimitCount 100, the clock moving fast enough that
 * no identity reaches its limit; its ratio to the target, single-thread
 * >= 5,000,000 decisions/s, is the one printed.  Then one table row per
 * (threads, identities, LimitCount, strategy), with threads 1 and the
 * number of cores, identities 1, 16 and 1,000,000 (the last over a table
 * sized for 2,000,000, warmed up before timing so every identity exists),
 * LimitCount 10 and 100, basic and block-lock; each row says which share
 * of its decisions were allowed (the few-identity rows are almost all
 * denials: what a flood costs, not what a visitor does).  Then one row
 * that builds every key inside the timed loop and the memory each tracked
 * identity costs, and the cost of eviction: fresh identities into a full
 * store of 200,000 counters (the default max_entries; every decision
 * evicts one) against the same into a store with room, as a ratio.
 *
 * How: keys are built once with suspect_key_build() and kept as compact
 * 48-byte records; a decision copies one into a suspect_key_t (a memcpy of
 * 48 bytes) and decides.  The clock is fake: every thread advances a shared
 * now_ms by 1 ms (the headline: HEADLINE_STEP ms) every CLOCK_EVERY
 * decisions, so windows (10 s) and locks (30 s) roll during a run.  Identities
 * are picked by a per-thread xorshift.  Each row runs for RUN_MS of wall time;
 * the whole bench takes about 30 s on 2 cores.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "suspect_store.h"

#define RUN_MS       400
#define CLOCK_EVERY  100 /* decisions per fake millisecond, per thread */
#define WINDOW_S     10
#define BLOCK_S      30
#define MANY         1000000
#define KEY_BYTES    48 /* a compact key: window key + ":locked" + NUL */
#define TARGET       5000000.0
#define FULL_ENTRIES 200000 /* the memory store's default max_entries */
#define FULL_ROUNDS  3
/* The headline's clock: 13 ms per decision, so 16 identities picked at
 * random get about 48 hits each per 10 s window, never near 100. */
#define HEADLINE_STEP (13 * CLOCK_EVERY)

typedef struct keyset {
    char *records; /* n records of KEY_BYTES bytes */
    size_t n;
    size_t window_len; /* the same for every key of a set */
} keyset_t;

typedef struct run {
    suspect_store_t *store;
    const suspect_rule_t *rule;
    const keyset_t *keys;
    int build_keys;   /* build each key inside the loop */
    int stop;         /* atomic */
    int64_t clock_ms; /* atomic: the shared fake clock */
    int64_t step_ms;  /* its advance every CLOCK_EVERY decisions */
    size_t first;     /* with span: identities first, first + 1, ... */
    size_t span;      /* 0 = identities picked at random */
    pthread_barrier_t start;
} run_t;

typedef struct worker {
    run_t *run;
    unsigned seed;
    uint64_t decisions;
    uint64_t allowed;
    int failed;
} worker_t;

static uint32_t xorshift(uint32_t *s)
{
    uint32_t x = *s;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *s = x;
}

/* The identity value of number i: "u" and 7 digits, the same length for
 * every i, so every key of a set has one length. */
static void identity_value(size_t i, char out[16])
{
    snprintf(out, 16, "u%07zu", i);
}

static int build_key(size_t i, suspect_key_t *key)
{
    char value[16];
    suspect_identity_t id;

    identity_value(i, value);
    memset(&id, 0, sizeof(id));
    id.type = "MemberCode";
    id.nparts = 1;
    id.part[0].ptr = value;
    id.part[0].len = strlen(value);
    return suspect_key_build(NULL, "BankAccountUpdate", &id, key, NULL) ==
                   SUSPECT_OK
               ? 0
               : -1;
}

/* Builds n keys into compact records; 0 on success. */
static int keyset_build(keyset_t *ks, size_t n)
{
    suspect_key_t key;

    ks->n = n;
    ks->records = malloc(n * KEY_BYTES);
    if (ks->records == NULL) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        if (build_key(i, &key) != 0 || key.lock_len + 1 > KEY_BYTES) {
            return -1;
        }
        memcpy(ks->records + i * KEY_BYTES, key.buf, key.lock_len + 1);
        ks->window_len = key.window_len;
    }
    return 0;
}

/* Fills key from record i of ks. */
static void keyset_get(const keyset_t *ks, size_t i, suspect_key_t *key)
{
    key->window_len = ks->window_len;
    key->lock_len = ks->window_len + SUSPECT_LOCK_SUFFIX_LEN;
    memcpy(key->buf, ks->records + i * KEY_BYTES, KEY_BYTES);
}

/* One decision on identity i at now; counts it in w. */
static void decide_one(worker_t *w, size_t i, int64_t now_ms,
                       suspect_key_t *key)
{
    run_t *r = w->run;
    suspect_decision_t d;

    if (r->build_keys) {
        build_key(i, key);
    } else {
        keyset_get(r->keys, i, key);
    }
    if (suspect_store_decide(r->store, r->rule, key, 1, now_ms, &d, NULL) !=
        SUSPECT_OK) {
        w->failed = 1;
    }
    w->decisions++;
    w->allowed += d.allowed;
}

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    run_t *r = w->run;
    suspect_key_t key;
    uint32_t seed = w->seed;
    int64_t now = __atomic_load_n(&r->clock_ms, __ATOMIC_RELAXED);
    size_t next = 0;

    pthread_barrier_wait(&r->start);
    while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
        for (int k = 0; k < CLOCK_EVERY; k++) {
            size_t i = r->span > 0 ? r->first + next++ % r->span
                                   : xorshift(&seed) % r->keys->n;
            decide_one(w, i, now, &key);
        }
        now = __atomic_add_fetch(&r->clock_ms, r->step_ms, __ATOMIC_RELAXED);
    }
    return NULL;
}

/* Runs nthreads workers for RUN_MS; returns decisions per second. */
static double run_timed(run_t *r, int nthreads, double *allowed_share)
{
    pthread_t th[64];
    worker_t w[64];
    uint64_t total = 0, allowed = 0;
    double t0, t1;

    __atomic_store_n(&r->stop, 0, __ATOMIC_RELAXED);
    pthread_barrier_init(&r->start, NULL, (unsigned)nthreads + 1);
    for (int i = 0; i < nthreads; i++) {
        memset(&w[i], 0, sizeof(w[i]));
        w[i].run = r;
        w[i].seed = 2463534242u + 7919u * (unsigned)i;
        pthread_create(&th[i], NULL, worker_main, &w[i]);
    }
    pthread_barrier_wait(&r->start);
    t0 = now_s();
    usleep(RUN_MS * 1000);
    __atomic_store_n(&r->stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < nthreads; i++) {
        pthread_join(th[i], NULL);
        total += w[i].decisions;
        allowed += w[i].allowed;
        if (w[i].failed) {
            fprintf(stderr, "bench-policy: a decision failed\n");
            exit(1);
        }
    }
    t1 = now_s();
    pthread_barrier_destroy(&r->start);
    *allowed_share = total > 0 ? (double)allowed / (double)total : 0;
    return (double)total / (t1 - t0);
}

/* Decides once for every identity of ks, so all exist before timing. */
static void warm_up(suspect_store_t *store, const suspect_rule_t *rule,
                    const keyset_t *ks, int64_t now_ms)
{
    suspect_key_t key;
    suspect_decision_t d;

    for (size_t i = 0; i < ks->n; i++) {
        keyset_get(ks, i, &key);
        suspect_store_decide(store, rule, &key, 1, now_ms, &d, NULL);
    }
}

typedef struct result {
    double min_single; /* slowest single-thread row, LimitCount <= 100 */
    const char *min_row;
    double per_identity_bytes;
    double per_identity_rss;
} result_t;

/* One row: a fresh store, a warm-up for many identities, a timed run. */
static void bench_row(const keyset_t *ks, int nthreads, uint32_t limit,
                      uint32_t block_s, result_t *res)
{
    static char label[128];
    suspect_rule_t rule = {
        "BankAccountUpdate", limit, WINDOW_S, block_s, 0, 0, 0, 0, 0, 0, 0};
    size_t rss0 = rss_bytes();
    suspect_store_t *store =
        bench_memstore(ks->n > 16 ? 2 * ks->n : 0, "bench-policy");
    run_t r;
    double rate, share;

    memset(&r, 0, sizeof(r));
    r.store = store;
    r.rule = &rule;
    r.keys = ks;
    r.clock_ms = 1700000000000;
    r.step_ms = 1;
    if (ks->n > 16) {
        warm_up(store, &rule, ks, r.clock_ms);
    }
    if (ks->n > 16 && res->per_identity_bytes == 0) {
        /* the first such store: later ones reuse memory freed before */
        res->per_identity_bytes = (double)suspect_memstore_bytes(store) /
                                  (double)suspect_memstore_size(store);
        res->per_identity_rss =
            (double)(rss_bytes() - rss0) / (double)suspect_memstore_size(store);
    }
    rate = run_timed(&r, nthreads, &share);
    printf("%7d  %10zu  %5u  %-6s  %12.0f  %7.1f%%\n", nthreads, ks->n, limit,
           block_s > 0 ? "block" : "basic", rate, 100.0 * share);
    fflush(stdout);
    if (nthreads == 1 && limit <= 100 &&
        (res->min_single == 0 || rate < res->min_single)) {
        res->min_single = rate;
        snprintf(label, sizeof(label), "%zu identities, LimitCount %u, %s",
                 ks->n, limit, block_s > 0 ? "block" : "basic");
        res->min_row = label;
    }
    suspect_store_free(store);
}

/* The headline: every decision allowed; its rate, or 0 when some were
 * not (then the bench is wrong, and says so). */
static double bench_headline(const keyset_t *ks)
{
    suspect_rule_t rule = {
        "BankAccountUpdate", 100, WINDOW_S, 0, 0, 0, 0, 0, 0, 0, 0};
    run_t r;
    double rate, share;

    memset(&r, 0, sizeof(r));
    r.store = bench_memstore(0, "bench-policy");
    r.rule = &rule;
    r.keys = ks;
    r.clock_ms = 1700000000000;
    r.step_ms = HEADLINE_STEP;
    rate = run_timed(&r, 1, &share);
    printf("headline, every decision allowed: 1 thread, %zu identities, "
           "LimitCount 100, basic, now_ms += %d per decision: %.0f "
           "decisions/s, %.1f%% allowed\n",
           ks->n, HEADLINE_STEP / CLOCK_EVERY, rate, 100.0 * share);
    suspect_store_free(r.store);
    if (share < 1.0) {
        fprintf(stderr, "bench-policy: the headline row denied some "
                        "decisions; its clock must move faster\n");
        return 0;
    }
    return rate;
}

/* Fresh identities, one after another, into a store of FULL_ENTRIES that
 * first holds FULL_ENTRIES counters of 1 to 4 hits (max_entries full, or
 * twice that: room); the clock stands still, so in a full store every
 * decision evicts a live counter.  Returns decisions per second. */
static double fresh_inserts(const keyset_t *ks, size_t max_entries)
{
    suspect_rule_t rule = {
        "BankAccountUpdate", 10, WINDOW_S, 0, 0, 0, 0, 0, 0, 0, 0};
    suspect_key_t key;
    suspect_decision_t d;
    run_t r;
    double rate, share;

    memset(&r, 0, sizeof(r));
    r.store = bench_memstore(max_entries, "bench-policy");
    r.rule = &rule;
    r.keys = ks;
    r.clock_ms = 1700000000000;
    for (size_t i = 0; i < FULL_ENTRIES; i++) {
        keyset_get(ks, i, &key);
        for (size_t k = 0; k <= i % 4; k++) {
            suspect_store_decide(r.store, &rule, &key, 1, r.clock_ms, &d, NULL);
        }
    }
    r.first = FULL_ENTRIES;
    r.span = ks->n - FULL_ENTRIES;
    rate = run_timed(&r, 1, &share);
    suspect_store_free(r.store);
    return rate;
}

/* The cost of eviction: fresh identities into a full store against the
 * same into a store with room, in the same run: FULL_ROUNDS rounds of
 * both, interleaved, the best of each (a loaded machine only slows a
 * round down). */
static void bench_full_store(const keyset_t *ks)
{
    double full = 0, room = 0;

    for (int i = 0; i < FULL_ROUNDS; i++) {
        double f = fresh_inserts(ks, FULL_ENTRIES);
        double r = fresh_inserts(ks, 2 * ks->n);

        full = f > full ? f : full;
        room = r > room ? r : room;
    }
    printf("fresh identities, 1 thread, LimitCount 10, basic, a store of "
           "%d counters of 1-4 hits, best of %d: full (every decision "
           "evicts one) %.0f decisions/s, with room %.0f decisions/s, "
           "ratio %.2f\n",
           FULL_ENTRIES, FULL_ROUNDS, full, room, full / room);
}

/* The row that builds each key inside the timed loop. */
static void bench_key_building(const keyset_t *ks)
{
    suspect_rule_t rule = {
        "BankAccountUpdate", 100, WINDOW_S, 0, 0, 0, 0, 0, 0, 0, 0};
    run_t r;
    double rate, share;

    memset(&r, 0, sizeof(r));
    r.store = bench_memstore(0, "bench-policy");
    r.rule = &rule;
    r.keys = ks;
    r.build_keys = 1;
    r.clock_ms = 1700000000000;
    r.step_ms = 1;
    rate = run_timed(&r, 1, &share);
    printf("with key building (suspect_key_build in the loop): 1 thread, "
           "%zu identities, LimitCount 100, basic: %.0f decisions/s\n",
           ks->n, rate);
    suspect_store_free(r.store);
}

int main(void)
{
    const size_t sizes[3] = {1, 16, MANY};
    const uint32_t limits[2] = {10, 100};
    int cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    int threads[2] = {1, cores < 1 ? 1 : cores > 64 ? 64 : cores};
    keyset_t sets[3];
    result_t res = {0, NULL, 0, 0};
    double headline;

    for (int s = 0; s < 3; s++) {
        if (keyset_build(&sets[s], sizes[s]) != 0) {
            fprintf(stderr, "bench-policy: cannot build keys\n");
            return 1;
        }
    }
    printf("suspect_store_decide on the memory store: window %d s, block "
           "%d s, now_ms += 1 every %d decisions per thread, %d ms a row\n\n",
           WINDOW_S, BLOCK_S, CLOCK_EVERY, RUN_MS);
    headline = bench_headline(&sets[1]);
    printf("\nthreads  identities  limit  strat   decisions/s  allowed\n");
    for (int t = 0; t < (threads[1] > 1 ? 2 : 1); t++) {
        for (int s = 0; s < 3; s++) {
            for (int l = 0; l < 2; l++) {
                bench_row(&sets[s], threads[t], limits[l], 0, &res);
                bench_row(&sets[s], threads[t], limits[l], BLOCK_S, &res);
            }
        }
    }
    printf("\n");
    bench_key_building(&sets[1]);
    bench_full_store(&sets[2]);
    printf("memory per tracked identity (%d identities): %.1f bytes counted "
           "by suspect_memstore_bytes, %.1f bytes of RSS\n",
           MANY, res.per_identity_bytes, res.per_identity_rss);
    printf("target single-thread >= %.0f allowed decisions/s: headline %.0f, "
           "ratio %.2f (slowest single-thread row: %.0f, %s)\n",
           TARGET, headline, headline / TARGET, res.min_single, res.min_row);
    for (int s = 0; s < 3; s++) {
        free(sets[s].records);
    }
    return 0;
}
