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
 *      same EVALSHA of decide.lua (same keys, same kind of arguments, a
 *      random member per call): requests/s, and the ratio of the two (the
 *      store's overhead over the wire protocol; the target is >= 0.9x);
 *      1 and 2 alternate for ROUNDS rounds, which side goes first
 *      alternating too (A B, B A, ...), so that a machine getting busier
 *      or quieter during the run weighs on both alike; the median ratio
 *      is the result;
 *   3. a locked identity decided through the failover wrapper: served by
 *      the lock cache, so INFO commandstats shows the same EVALSHA count
 *      before and after;
 *   4. the cluster rows (bench_redis_cluster.c): one Redis, a Redis
 *      Cluster of one master and one of three, in the same run.
 * "bench-redis ... single" stops after 3.
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
             "EVALSHA %s 2 Bench:x Bench:x:locked %lld 1000000 60000 0 "
             "__rand_int__-0000-0000-0000-000000000000 x",
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
    test_redis_t srv;
    double ratio[MAX_ROUNDS], cache_rps;
    int ok = 1;

    if (clients < 1 || clients > 256 || requests < clients || rounds < 1 ||
        rounds > MAX_ROUNDS) {
        fprintf(stderr,
                "usage: bench-redis [CLIENTS [REQUESTS [ROUNDS [tcp|unix "
                "[single]]]]]\n");
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
    cache_rps = run_lock_cache(&srv, requests);
    printf("  lock cache, locked identity: %10.0f decisions/s, 0%% allowed\n",
           cache_rps);
    test_redis_stop(&srv);
    if (!single_only) {
        ok = ok && bench_cluster_rows(clients, requests, rounds) == 0;
    }
    return ok && cache_rps > 0 ? 0 : 1;
}
