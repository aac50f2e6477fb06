/*
 * bench_redis_cluster.c - the cluster rows of bench-redis: the store on
 * one Redis, on a Redis Cluster of one master and on one of three masters,
 * in the same run (bench_redis.c calls bench_cluster_rows()).
 *
 * Each round runs every target in turn (the order rotating from round to
 * round, so that a machine getting busier weighs on all alike), each with
 * CLIENTS threads making REQUESTS decisions in all, in two workloads:
 *   single  one identity per decision, a new one each time (hash-tagged
 *           keys: its window and lock in one slot), as a login form counts
 *           its user;
 *   pair    a member and a client IP per decision, as the bank update of
 *           the seed counts them: two identities in two slots, on a
 *           cluster a reservation on each (no rule is ever reached, so
 *           nothing is taken back).
 * For each: decisions/s, the client's CPU per decision (this process),
 * the Redis CPU per decision (INFO cpu of every master, summed, and of
 * the busiest master alone: with a core per master, the cluster decides
 * at most about 1,000,000 / that figure times a second), the
 * scripts Redis ran per decision, and the share of decisions that crossed
 * slots (suspect_redis_stats().cross_slot).  The medians over the rounds
 * are printed; the client CPU of the single workload on one Redis and on
 * the one-master cluster differ by what slot routing costs the client.
 *
 * On two cores three masters cannot run three times faster: the point is
 * Redis CPU per decision, from which docs/BENCHMARKS.md projects capacity
 * per added master.
 */
#include "bench_cluster.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "clock.h"
#include "helpers/redisha.h"
#include "helpers/util.h"
#include "suspect_redis.h"

#define TARGETS 3
#define LOADS   2
#define MAX_R   99

static const suspect_rule_t rule = {"BenchC", 1000000, 60, 0, 0, 0,
                                    0,        0,       0,  0, 0};
static const suspect_keyopts_t tagged = {SUSPECT_KEYS_SEED, NULL, 0, true};

typedef struct cworker {
    suspect_store_t *store;
    int id;
    int load; /* 0 single, 1 pair */
    long requests;
    long errors;
} cworker_t;

/* One result: decisions/s, client and Redis CPU (us, all masters) and
 * Redis scripts per decision, share of decisions across slots, and the
 * Redis CPU per decision of the busiest master. */
typedef struct row {
    double rps, client_us, redis_us, scripts, cross, master_us;
} row_t;

static suspect_key_t key_of(const char *value)
{
    suspect_identity_t id = test_identity("Id", value);
    suspect_key_t key;

    if (suspect_key_build(&tagged, rule.action, &id, &key, NULL) !=
        SUSPECT_OK) {
        abort();
    }
    return key;
}

static void *cwork(void *p)
{
    cworker_t *w = p;
    char a[48], b[48];

    for (long i = 0; i < w->requests; i++) {
        suspect_key_t keys[2];
        suspect_decision_t d;

        snprintf(a, sizeof(a), "m%d-%ld", w->id, i);
        keys[0] = key_of(a);
        if (w->load == 1) {
            snprintf(b, sizeof(b), "10.%d.%ld.%ld", w->id, (i >> 8) & 255,
                     i & 255);
            keys[1] = key_of(b);
        }
        if (suspect_store_decide(w->store, &rule, keys, (size_t)w->load + 1,
                                 wall_ms(), &d, NULL) != SUSPECT_OK ||
            !d.allowed) {
            w->errors++;
        }
    }
    return NULL;
}

/* CPU seconds this process has used. */
static double cpu_self(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A number after field in INFO's text, 0. */
static double info_num(const redisReply *r, const char *field)
{
    const char *p = r != NULL && r->type == REDIS_REPLY_STRING
                        ? strstr(r->str, field)
                        : NULL;
    return p != NULL ? strtod(p + strlen(field), NULL) : 0;
}

/* Redis CPU seconds of each of nodes[0..n) (cpu[i]) and their EVALSHA
 * calls, summed. */
static void redis_usage(test_redis_t *const *nodes, int n, double *cpu,
                        double *calls)
{
    *calls = 0;
    for (int i = 0; i < n; i++) {
        redisReply *r = test_redis_cmd(nodes[i], "INFO cpu");
        cpu[i] = info_num(r, "used_cpu_sys:") + info_num(r, "used_cpu_user:");
        freeReplyObject(r);
        r = test_redis_cmd(nodes[i], "INFO commandstats");
        *calls += info_num(r, "cmdstat_evalsha:calls=");
        freeReplyObject(r);
    }
}

/* Runs load on the store of url (whose data nodes are nodes[0..n)). */
static int run(const char *url, test_redis_t *const *nodes, int n, int load,
               int clients, long requests, row_t *out)
{
    suspect_redis_opts_t opts = {url, 1000, 1000, 0, NULL};
    suspect_store_t *store = NULL;
    suspect_redis_stats_t st;
    pthread_t tid[256];
    cworker_t w[256];
    double t0, cpu0, r0[3], c0, r1[3], c1;
    long errors = 0, done = requests / clients * clients;

    for (int i = 0; i < n; i++) {
        freeReplyObject(test_redis_cmd(nodes[i], "FLUSHALL"));
    }
    if (suspect_redis_new(&opts, &store, NULL) != SUSPECT_OK ||
        suspect_redis_ping(store, NULL) != SUSPECT_OK) {
        suspect_store_free(store);
        return -1;
    }
    redis_usage(nodes, n, r0, &c0);
    t0 = now_s();
    cpu0 = cpu_self();
    for (int i = 0; i < clients; i++) {
        w[i] = (cworker_t){store, i, load, requests / clients, 0};
        pthread_create(&tid[i], NULL, cwork, &w[i]);
    }
    for (int i = 0; i < clients; i++) {
        pthread_join(tid[i], NULL);
        errors += w[i].errors;
    }
    out->rps = (double)done / (now_s() - t0);
    out->client_us = (cpu_self() - cpu0) * 1e6 / (double)done;
    redis_usage(nodes, n, r1, &c1);
    out->redis_us = out->master_us = 0;
    for (int i = 0; i < n; i++) {
        double us = (r1[i] - r0[i]) * 1e6 / (double)done;
        out->redis_us += us;
        out->master_us = us > out->master_us ? us : out->master_us;
    }
    out->scripts = (c1 - c0) / (double)done;
    suspect_redis_stats(store, &st);
    out->cross = (double)st.cross_slot / (double)done;
    suspect_store_free(store);
    if (errors > 0) {
        fprintf(stderr, "bench-redis: %ld cluster decisions failed\n", errors);
        return -1;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return v[n / 2];
}

int bench_cluster_rows(int clients, long requests, int rounds)
{
    static const char *const names[TARGETS] = {"one Redis", "cluster, 1 master",
                                               "cluster, 3 masters"};
    static const char *const loads[LOADS] = {"single", "pair"};
    static double v[TARGETS][LOADS][6][MAX_R];
    test_redis_t single, *nodes[TARGETS][3];
    test_cluster_t c1, c3;
    const char *url[TARGETS];
    char single_url[64];
    int nn[TARGETS] = {1, 1, 3}, ok = 0;

    rounds = rounds > MAX_R ? MAX_R : rounds;
    /* A long node timeout: a busy machine must not fail a node over. */
    if (test_redis_start(&single, true, NULL) != 0 ||
        test_cluster_start(&c1, 1, 0, 15000) != 0 ||
        test_cluster_start(&c3, 3, 0, 15000) != 0) {
        fprintf(stderr, "bench-redis: cannot start the clusters\n");
        return 1;
    }
    snprintf(single_url, sizeof(single_url), "redis://127.0.0.1:%d",
             single.port);
    url[0] = single_url;
    url[1] = c1.url;
    url[2] = c3.url;
    nodes[0][0] = &single;
    nodes[1][0] = &c1.node[0];
    for (int i = 0; i < 3; i++) {
        nodes[2][i] = &c3.node[i];
    }
    printf("bench-redis cluster rows: %d clients, %ld decisions per target, "
           "workload and round, %d rounds, all on TCP 127.0.0.1\n",
           clients, requests, rounds);
    for (int r = 0; r < rounds && ok == 0; r++) {
        for (int k = 0; k < TARGETS && ok == 0; k++) {
            int t = (k + r) % TARGETS;
            for (int l = 0; l < LOADS && ok == 0; l++) {
                row_t row = {0, 0, 0, 0, 0, 0};
                ok = run(url[t], nodes[t], nn[t], l, clients, requests, &row);
                v[t][l][0][r] = row.rps;
                v[t][l][1][r] = row.client_us;
                v[t][l][2][r] = row.redis_us;
                v[t][l][3][r] = row.scripts;
                v[t][l][4][r] = row.cross;
                v[t][l][5][r] = row.master_us;
            }
        }
    }
    for (int t = 0; t < TARGETS && ok == 0; t++) {
        for (int l = 0; l < LOADS; l++) {
            printf("  %-19s %-6s %7.0f decisions/s, client %5.1f us, redis "
                   "%5.1f us CPU (busiest master %5.1f us) and %.2f "
                   "scripts per decision, %3.0f%% across slots\n",
                   names[t], loads[l], median(v[t][l][0], rounds),
                   median(v[t][l][1], rounds), median(v[t][l][2], rounds),
                   median(v[t][l][5], rounds), median(v[t][l][3], rounds),
                   100 * median(v[t][l][4], rounds));
        }
    }
    test_cluster_stop(&c3);
    test_cluster_stop(&c1);
    test_redis_stop(&single);
    return ok == 0 ? 0 : 1;
}
