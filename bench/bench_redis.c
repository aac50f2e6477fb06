/*
 * bench_redis.c - decisions per second through the Redis store, against
 * redis-benchmark sending the very same EVALSHA, in the same run.
 *
 *   bench-redis [CLIENTS [REQUESTS [ROUNDS [tcp|unix [single]]]]]
 *                                          (8, 50000, 5, unix)
 *
 * Starts a private redis-server (a unix socket in a temp dir, and with
 * "tcp" a loopback TCP port, which both sides then use instead), then:
 *   1. CLIENTS threads share one Redis store and decide REQUESTS times in
 *      all on one identity (a limit no run reaches, so every decision
 *      records a hit): decisions/s;
 *   2. redis-benchmark with CLIENTS connections sends REQUESTS times the
 *      same EVALSHA of decide.lua (the same four keys, the same arguments,
 *      a random member of the same length per call): requests/s, and the
 *      ratio of the two (the store's overhead over the wire protocol; the
 *      target is >= 0.9x).  Until December 2026 this sent two keys and
 *      six arguments, on which the script does nothing: that is what the
 *      earlier figures of docs/BENCHMARKS.md compared against;
 *      1 and 2 alternate for ROUNDS rounds, which side goes first
 *      alternating too (A B, B A, ...), so that a machine getting busier
 *      or quieter during the run weighs on both alike; the median ratio
 *      is the result;
 *   3. the realistic rows (bench_redis_mix.c): the decisions the recipes
 *      make on 100,000 identities, the store against a bare hiredis
 *      client sending the same EVALSHAs;
 *   4. a locked identity decided through the failover wrapper: served by
 *      the lock cache, so INFO commandstats shows the same EVALSHA count
 *      before and after;
 *   5. the meter rows (meter_rows(), at the end): Redis CPU per decision
 *      of a token bucket against the sliding log at LimitCount 10, and
 *      MEMORY USAGE per identity of a bucket, a counter and a log at
 *      5,000 per hour;
 *   6. the cluster rows (bench_redis_cluster.c): one Redis, a Redis
 *      Cluster of one master and one of three, in the same run.
 * "bench-redis ... single" stops after 5; "bench-redis ... mix" runs 3
 * only.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench.h"
#include "bench_cluster.h"
#include "bench_mix.h"
#include "clock.h"
#include "helpers/redisserver.h"
#include "suspect_failover.h"
#include "suspect_redis.h"
#include "helpers/util.h"

/* Generated from the lua directory (lua/scripts.c). */
extern const char redis_lua_decide[];

#define MAX_ROUNDS 99

/* Where both sides connect: the store's URL and redis-benchmark's
 * options. */
static char store_url[700], bench_addr[600];

static const suspect_rule_t rule = {"Bench", 1000000, 60, 0, 0, 0,
                                    0,       0,       0,  0, 0};

typedef struct worker {
    suspect_store_t *store;
    long requests;
    long errors;
} worker_t;

/* CPU seconds used by this process (all threads). */
static double cpu_self(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds used by waited-for children (redis-benchmark). */
static double cpu_children(void)
{
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* Client CPU microseconds per request of the last run of each side. */
static double store_cpu_us, bench_cpu_us;

/* CPU seconds redis-server has used (INFO cpu), or 0. */
static double cpu_server(test_redis_t *srv)
{
    redisReply *r = test_redis_cmd(srv, "INFO cpu");
    double v = 0;
    const char *p;

    if (r != NULL && r->type == REDIS_REPLY_STRING) {
        p = strstr(r->str, "used_cpu_sys:");
        v += p != NULL ? strtod(p + 13, NULL) : 0;
        p = strstr(r->str, "used_cpu_user:");
        v += p != NULL ? strtod(p + 14, NULL) : 0;
    }
    freeReplyObject(r);
    return v;
}

static void *work(void *p)
{
    worker_t *w = p;
    suspect_key_t key = test_key("Bench", "x");

    for (long i = 0; i < w->requests; i++) {
        suspect_decision_t d;
        if (suspect_store_decide(w->store, &rule, &key, 1, wall_ms(), &d,
                                 NULL) != SUSPECT_OK ||
            !d.allowed) {
            w->errors++;
        }
    }
    return NULL;
}

/* Decisions/s of clients threads doing requests decisions in all. */
static double run_store(test_redis_t *srv, int clients, long requests)
{
    suspect_redis_opts_t opts = {store_url, 1000, 1000, 0, NULL};
    suspect_store_t *store = NULL;
    pthread_t tid[256];
    worker_t w[256];
    long errors = 0;
    double t0, dt, cpu0;

    if (suspect_redis_new(&opts, &store, NULL) != SUSPECT_OK) {
        return -1;
    }
    for (int i = 0; i < clients; i++) {
        w[i].store = store;
        w[i].requests = requests / clients;
        w[i].errors = 0;
    }
    t0 = now_s();
    cpu0 = cpu_self();
    for (int i = 0; i < clients; i++) {
        pthread_create(&tid[i], NULL, work, &w[i]);
    }
    for (int i = 0; i < clients; i++) {
        pthread_join(tid[i], NULL);
        errors += w[i].errors;
    }
    dt = now_s() - t0;
    store_cpu_us = (cpu_self() - cpu0) * 1e6 / (double)requests;
    suspect_store_free(store);
    if (errors > 0) {
        fprintf(stderr, "bench-redis: %ld decisions failed\n", errors);
        return -1;
    }
    return (double)(requests / clients * clients) / dt;
}

/* requests/s that redis-benchmark reports for the same EVALSHA. */
static double run_benchmark(test_redis_t *srv, int clients, long requests)
{
    redisReply *r = test_redis_cmd(srv, "SCRIPT LOAD %s", redis_lua_decide);
    char cmd[2048], line[1024], sha[41];
    double rps = -1, cpu0 = cpu_children();
    FILE *p;

    if (r == NULL || r->type != REDIS_REPLY_STRING || r->len != 40) {
        freeReplyObject(r);
        return -1;
    }
    memcpy(sha, r->str, 41);
    freeReplyObject(r);
    snprintf(cmd, sizeof(cmd),
             "redis-benchmark %s -c %d -n %ld -r 100000000 --csv "
             "EVALSHA %s 4 Bench:x Bench:x:locked Bench:x:slots "
             "Bench:x:offences %lld 1000000 60000 0 "
             "__rand_int__-0000-4000-8000-00000000 0 0 0 0 x",
             bench_addr, clients, requests, sha, (long long)wall_ms());
    p = popen(cmd, "r");
    if (p == NULL) {
        return -1;
    }
    while (fgets(line, sizeof(line), p) != NULL) {
        /* "EVALSHA ...","12345.67",...: the second field. */
        char *q = strstr(line, "\",\"");
        if (strncmp(line, "\"EVALSHA", 8) == 0 && q != NULL) {
            rps = strtod(q + 3, NULL);
        }
    }
    if (pclose(p) != 0) {
        return -1;
    }
    bench_cpu_us = (cpu_children() - cpu0) * 1e6 / (double)requests;
    return rps;
}

/* Denials/s of a locked identity through the failover wrapper; prints the
 * EVALSHA calls Redis saw before and after. */
static double run_lock_cache(test_redis_t *srv, long requests)
{
    suspect_redis_opts_t opts = {store_url, 1000, 1000, 0, NULL};
    suspect_rule_t otp = {"BenchOtp", 1, 60, 600, 0, 0, 0, 0, 0, 0, 0};
    suspect_key_t key = test_key("BenchOtp", "locked");
    suspect_store_t *redis = NULL, *mem = NULL, *s = NULL;
    suspect_decision_t d;
    long long before, after;
    int64_t t = wall_ms();
    double t0, dt;

    if (suspect_redis_new(&opts, &redis, NULL) != SUSPECT_OK ||
        suspect_memstore_new(NULL, &mem, NULL) != SUSPECT_OK ||
        suspect_failover_new(redis, mem, NULL, &s, NULL) != SUSPECT_OK) {
        return -1;
    }
    suspect_store_decide(s, &otp, &key, 1, t, &d, NULL);
    suspect_store_decide(s, &otp, &key, 1, t, &d, NULL);
    before = test_redis_calls(srv, "evalsha");
    t0 = now_s();
    for (long i = 0; i < requests; i++) {
        suspect_store_decide(s, &otp, &key, 1, t + i / 1000, &d, NULL);
    }
    dt = now_s() - t0;
    after = test_redis_calls(srv, "evalsha");
    printf("  lock cache: INFO commandstats evalsha calls before %lld, "
           "after %lld (%lld Redis commands for %ld denials)\n",
           before, after, after - before, requests);
    suspect_store_free(s);
    return d.locked && after == before ? (double)requests / dt : -1;
}

/* One side of a round: rate and CPU per request of client and server. */
typedef struct side {
    double rps, client_us, server_us;
} side_t;

/* Runs the store (which 0) or redis-benchmark (1) on a flushed db. */
static void run_side(test_redis_t *srv, int which, int clients, long requests,
                     side_t *out)
{
    double s0;

    freeReplyObject(test_redis_cmd(srv, "FLUSHALL"));
    s0 = cpu_server(srv);
    out->rps = which == 0 ? run_store(srv, clients, requests)
                          : run_benchmark(srv, clients, requests);
    out->server_us = (cpu_server(srv) - s0) * 1e6 / (double)requests;
    out->client_us = which == 0 ? store_cpu_us : bench_cpu_us;
}

static int meter_rows(test_redis_t *srv, int clients, long requests);

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int clients = argc > 1 ? atoi(argv[1]) : 8;
    long requests = argc > 2 ? atol(argv[2]) : 50000;
    int rounds = argc > 3 ? atoi(argv[3]) : 5;
    bool tcp = argc > 4 && strcmp(argv[4], "tcp") == 0;
    bool single_only = argc > 5 && strcmp(argv[5], "single") == 0;
    bool mix_only = argc > 5 && strcmp(argv[5], "mix") == 0;
    test_redis_t srv;
    double ratio[MAX_ROUNDS], cache_rps;
    int ok = 1;

    if (clients < 1 || clients > 256 || requests < clients || rounds < 1 ||
        rounds > MAX_ROUNDS) {
        fprintf(stderr,
                "usage: bench-redis [CLIENTS [REQUESTS [ROUNDS [tcp|unix "
                "[single|mix]]]]]\n");
        return 2;
    }
    if (test_redis_start(&srv, tcp, NULL) != 0) {
        fprintf(stderr, "bench-redis: cannot start redis-server\n");
        return 1;
    }
    if (tcp) {
        snprintf(store_url, sizeof(store_url), "redis://127.0.0.1:%d",
                 srv.port);
        snprintf(bench_addr, sizeof(bench_addr), "-h 127.0.0.1 -p %d",
                 srv.port);
    } else {
        snprintf(store_url, sizeof(store_url), "%s", srv.url);
        snprintf(bench_addr, sizeof(bench_addr), "-s '%s'", srv.sock);
    }
    printf("bench-redis: %d clients, %ld requests per side and round, "
           "%d rounds, %s\n",
           clients, requests, rounds, tcp ? "TCP 127.0.0.1" : "unix socket");
    /* Alternate the two sides, and which goes first, so that noise from
     * other processes on the machine hits both alike; report every round
     * and the median. */
    if (mix_only) {
        ok = bench_mix_rows(&srv, store_url, tcp ? srv.port : 0, clients,
                            requests, rounds) == 0;
        test_redis_stop(&srv);
        return ok ? 0 : 1;
    }
    for (int i = 0; i < rounds; i++) {
        side_t st, bs;
        if (i % 2 == 0) {
            run_side(&srv, 0, clients, requests, &st);
            run_side(&srv, 1, clients, requests, &bs);
        } else {
            run_side(&srv, 1, clients, requests, &bs);
            run_side(&srv, 0, clients, requests, &st);
        }
        ok = ok && st.rps > 0 && bs.rps > 0;
        ratio[i] = ok ? st.rps / bs.rps : 0;
        printf("  round %d: suspect store %6.0f decisions/s, 100%% allowed "
               "(client %.1f us, "
               "redis %.1f us CPU each), redis-benchmark %6.0f requests/s "
               "(%.1f us, %.1f us), ratio %.2fx\n",
               i + 1, st.rps, st.client_us, st.server_us, bs.rps, bs.client_us,
               bs.server_us, ratio[i]);
    }
    qsort(ratio, (size_t)rounds, sizeof(ratio[0]), cmp_double);
    printf("  median ratio: %.2fx (target >= 0.9x)%s\n", ratio[rounds / 2],
           ratio[rounds / 2] < 0.9 ? "  BELOW TARGET" : "");
    ok = ok && bench_mix_rows(&srv, store_url, tcp ? srv.port : 0, clients,
                              requests, rounds) == 0;
    cache_rps = run_lock_cache(&srv, requests);
    printf("  lock cache, locked identity: %10.0f decisions/s, 0%% allowed\n",
           cache_rps);
    ok = ok && meter_rows(&srv, clients, requests) == 0;
    test_redis_stop(&srv);
    if (!single_only) {
        ok = ok && bench_cluster_rows(clients, requests, rounds) == 0;
    }
    return ok && cache_rps > 0 ? 0 : 1;
}

/* ---- meters: Redis CPU and memory per identity --------------------------
 */

/* One thread of a meter run: decisions on identities first, first +
 * stride, ... of n, each at the wall clock. */
typedef struct mworker {
    suspect_store_t *store;
    const suspect_rule_t *rule;
    long first, stride, n, requests;
    long allowed, errors;
} mworker_t;

static void *mwork(void *p)
{
    mworker_t *w = p;
    char id[32];

    for (long i = 0; i < w->requests; i++) {
        suspect_decision_t d;
        suspect_key_t key;

        snprintf(id, sizeof(id), "u%ld", (w->first + i * w->stride) % w->n);
        key = test_key(w->rule->action, id);
        if (suspect_store_decide(w->store, w->rule, &key, 1, wall_ms(), &d,
                                 NULL) != SUSPECT_OK) {
            w->errors++;
        }
        w->allowed += d.allowed;
    }
    return NULL;
}

/* The usec INFO commandstats gives evalsha so far. */
static double evalsha_usec(test_redis_t *srv)
{
    redisReply *r = test_redis_cmd(srv, "INFO commandstats");
    const char *p = NULL;
    double v = 0;

    if (r != NULL && r->type == REDIS_REPLY_STRING) {
        p = strstr(r->str, "cmdstat_evalsha:");
    }
    p = p != NULL ? strstr(p, "usec=") : NULL;
    v = p != NULL ? strtod(p + 5, NULL) : 0;
    freeReplyObject(r);
    return v;
}

/* The calls INFO commandstats counts for commands run inside scripts
 * (every command but evalsha, info and the bench's own). */
static long long inner_calls(test_redis_t *srv)
{
    redisReply *r = test_redis_cmd(srv, "INFO commandstats");
    long long n = 0;
    const char *p = r != NULL && r->type == REDIS_REPLY_STRING ? r->str : "";

    while ((p = strstr(p, "cmdstat_")) != NULL) {
        const char *c = strstr(p, "calls=");
        p += 8;
        if (c != NULL && strncmp(p, "evalsha:", 8) != 0 &&
            strncmp(p, "info:", 5) != 0 && strncmp(p, "flushall:", 9) != 0 &&
            strncmp(p, "script|", 7) != 0 && strncmp(p, "hello:", 6) != 0 &&
            strncmp(p, "client|", 7) != 0) {
            n += strtoll(c + 6, NULL, 10);
        }
    }
    freeReplyObject(r);
    return n;
}

/* Redis CPU (INFO cpu, and evalsha's own time from commandstats) per
 * decision of rule, clients threads deciding requests times on
 * requests / 10 identities (each about LimitCount hits: every window
 * full, nearly every decision allowed). */
static int meter_cpu(test_redis_t *srv, const suspect_rule_t *r, int clients,
                     long requests)
{
    suspect_redis_opts_t opts = {store_url, 1000, 1000, 0, NULL};
    suspect_store_t *store = NULL;
    pthread_t tid[256];
    mworker_t w[256];
    long allowed = 0, errors = 0, per = requests / clients;
    double s0, u0;
    long long c0;

    freeReplyObject(test_redis_cmd(srv, "FLUSHALL"));
    if (suspect_redis_new(&opts, &store, NULL) != SUSPECT_OK) {
        return -1;
    }
    s0 = cpu_server(srv);
    u0 = evalsha_usec(srv);
    c0 = inner_calls(srv);
    for (int i = 0; i < clients; i++) {
        w[i] = (mworker_t){store, r, i, clients, per * clients / 10, per, 0, 0};
        pthread_create(&tid[i], NULL, mwork, &w[i]);
    }
    for (int i = 0; i < clients; i++) {
        pthread_join(tid[i], NULL);
        allowed += w[i].allowed;
        errors += w[i].errors;
    }
    printf("  %-14s LimitCount %u: redis %.1f us CPU per decision "
           "(INFO cpu), evalsha %.1f us, %.2f commands inside it "
           "(commandstats), %.1f%% allowed\n",
           r->algorithm == SUSPECT_ALGO_BUCKET ? "token bucket" : "sliding log",
           r->limit_count,
           (cpu_server(srv) - s0) * 1e6 / (double)(per * clients),
           (evalsha_usec(srv) - u0) / (double)(per * clients),
           (double)(inner_calls(srv) - c0) / (double)(per * clients),
           100.0 * (double)allowed / (double)(per * clients));
    suspect_store_free(store);
    return errors == 0 ? 0 : -1;
}

/* MEMORY USAGE (SAMPLES 0: every member) of one identity of rule after
 * LimitCount decisions, a second apart on the caller's clock, so that
 * the log holds them all. */
static long long meter_bytes(test_redis_t *srv, const suspect_rule_t *r)
{
    suspect_redis_opts_t opts = {store_url, 1000, 1000, 0, NULL};
    suspect_key_t key = test_key(r->action, "33612345678");
    suspect_store_t *store = NULL;
    int64_t t = wall_ms() - (int64_t)r->limit_count * 500;
    const char *sfx = r->algorithm == SUSPECT_ALGO_BUCKET    ? ":tb"
                      : r->algorithm == SUSPECT_ALGO_COUNTER ? ":sc"
                                                             : "";
    long long bytes;

    freeReplyObject(test_redis_cmd(srv, "FLUSHALL"));
    if (suspect_redis_new(&opts, &store, NULL) != SUSPECT_OK) {
        return -1;
    }
    for (uint32_t i = 0; i < r->limit_count; i++) {
        suspect_decision_t d;
        if (suspect_store_decide(store, r, &key, 1, t + i / 2, &d, NULL) !=
                SUSPECT_OK ||
            !d.allowed) {
            suspect_store_free(store);
            return -1;
        }
    }
    suspect_store_free(store);
    bytes = test_redis_int(srv, "MEMORY USAGE %b%s SAMPLES 0", key.buf,
                           key.window_len, sfx);
    printf("  MEMORY USAGE, %-14s at %u per hour: %lld bytes per "
           "identity (DBSIZE %lld)\n",
           r->algorithm == SUSPECT_ALGO_BUCKET    ? "token bucket"
           : r->algorithm == SUSPECT_ALGO_COUNTER ? "sliding counter"
                                                  : "sliding log",
           r->limit_count, bytes, test_redis_int(srv, "DBSIZE"));
    return bytes;
}

static int meter_rows(test_redis_t *srv, int clients, long requests)
{
    suspect_rule_t log10 = {"MeterLog", 10, 60, 0, 0, 0, 0, 0, 0, 0, 0};
    suspect_rule_t tb10 = log10,
                   tb = {"MeterMem", 5000, 3600, 0, 0, 0, 0, 0, 0, 0, 0};
    suspect_rule_t sc = tb, log = tb;
    int rc = 0;

    tb10.action = "MeterTb";
    tb10.algorithm = SUSPECT_ALGO_BUCKET;
    tb.algorithm = SUSPECT_ALGO_BUCKET;
    sc.algorithm = SUSPECT_ALGO_COUNTER;
    printf("bench-redis: meters\n");
    for (int round = 0; round < 2 && rc == 0; round++) {
        rc = meter_cpu(srv, round == 0 ? &log10 : &tb10, clients, requests);
        rc = rc == 0 ? meter_cpu(srv, round == 0 ? &tb10 : &log10, clients,
                                 requests)
                     : rc;
    }
    if (rc == 0 && (meter_bytes(srv, &tb) < 0 || meter_bytes(srv, &sc) < 0 ||
                    meter_bytes(srv, &log) < 0)) {
        rc = -1;
    }
    return rc;
}
