/*
 * test_metrics.c - suite "metrics": the registry and the text format
 * (middleware/metrics/metrics.c) and the HTTP listener (metrics_http.c).
 *
 * Counting: exact totals from 8 threads deciding at once, actions past
 * the bound counted under "_other", label values escaped.  Format: the
 * whole text read by Prometheus's own checker (promtool check metrics,
 * Debian's prometheus package) as a scrape would give it.  Listener: GET
 * and HEAD /metrics answered with the text's media type, other paths 404,
 * other methods 405, by curl over TCP.
 */
#include <CUnit/CUnit.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers/procs.h"
#include "helpers/redisserver.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"
#include "metrics/metrics.h"
#include "metrics/metrics_http.h"
#include "suites.h"

#define THREADS 8
#define PER     20000

static char *dir;

typedef struct worker {
    mw_metrics_t *m;
    int id;
} worker_t;

static void *hammer(void *arg)
{
    worker_t *w = arg;
    char name[32];

    for (int i = 0; i < PER; i++) {
        snprintf(name, sizeof(name), "Action%d", i % 4);
        mw_metrics_decision(w->m, mw_metrics_action(w->m, name),
                            (mw_decision_outcome_t)(i % 2), i % 2);
        mw_metrics_store_time(w->m, i * 1000);
    }
    return NULL;
}

typedef struct totals {
    uint64_t allowed, limited, locks;
    int rows;
    bool other;
} totals_t;

static int add_row(void *arg, const mw_metrics_row_t *r)
{
    totals_t *t = arg;

    t->allowed += r->outcome[MW_OUT_ALLOWED];
    t->limited += r->outcome[MW_OUT_DENIED_LIMIT];
    t->locks += r->locks_created;
    t->rows++;
    t->other |= strcmp(r->action, "_other") == 0;
    return 0;
}

/* 8 threads, 4 actions met first by whichever thread: exact totals. */
static void test_threads_exact(void)
{
    mw_metrics_t *m = mw_metrics_new("memory", MW_TARGET_CGI);
    pthread_t th[THREADS];
    worker_t w[THREADS];
    totals_t t = {0};

    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    for (int i = 0; i < THREADS; i++) {
        w[i].m = m;
        w[i].id = i;
        pthread_create(&th[i], NULL, hammer, &w[i]);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
    }
    mw_metrics_foreach_row(m, add_row, &t);
    CU_ASSERT_EQUAL(t.rows, 4);
    CU_ASSERT_EQUAL(t.allowed, THREADS * PER / 2);
    CU_ASSERT_EQUAL(t.limited, THREADS * PER / 2);
    CU_ASSERT_EQUAL(t.locks, THREADS * PER / 2);
    mw_metrics_free(m);
}

/* Past MW_METRICS_ACTIONS names, the rest share "_other". */
static void test_bounded_actions(void)
{
    mw_metrics_t *m = mw_metrics_new("redis", MW_TARGET_COUNT);
    totals_t t = {0};
    char name[32];

    CU_ASSERT_PTR_NOT_NULL_FATAL(m);
    for (int i = 0; i < MW_METRICS_ACTIONS + 50; i++) {
        snprintf(name, sizeof(name), "A%d", i);
        mw_metrics_decision(m, mw_metrics_action(m, name), MW_OUT_ALLOWED, 0);
    }
    /* a known one is still its own */
    mw_metrics_decision(m, mw_metrics_action(m, "A0"), MW_OUT_ALLOWED, 0);
    mw_metrics_foreach_row(m, add_row, &t);
    CU_ASSERT_EQUAL(t.rows, MW_METRICS_ACTIONS + 1);
    CU_ASSERT(t.other);
    CU_ASSERT_EQUAL(t.allowed, MW_METRICS_ACTIONS + 51);
    mw_metrics_free(m);
}

static void test_text_escaping(void)
{
    const char *labels[] = {"a", "x\"y\\z\nw", NULL};
    mw_prom_t p;

    memset(&p, 0, sizeof(p));
    mw_prom_head(&p, "suspect_x_total", "counter", "Help.");
    mw_prom_sample(&p, "suspect_x_total", labels, 3);
    mw_prom_sample(&p, "suspect_y", NULL, 0.25);
    CU_ASSERT_EQUAL_FATAL(mw_prom_done(&p), SUSPECT_OK);
    CU_ASSERT_STRING_EQUAL(p.buf, "# HELP suspect_x_total Help.\n"
                                  "# TYPE suspect_x_total counter\n"
                                  "suspect_x_total{a=\"x\\\"y\\\\z\\nw\"} 3\n"
                                  "suspect_y 0.25\n");
    mw_prom_free(&p);
}

/* A registry that has counted a little of everything, rendered. */
static mw_metrics_t *busy_registry(mw_prom_t *p)
{
    mw_metrics_t *m = mw_metrics_new("lmdb", MW_TARGET_FASTCGI);

    for (int o = 0; o < MW_OUT_COUNT; o++) {
        mw_metrics_decision(m, mw_metrics_action(m, "Login"),
                            (mw_decision_outcome_t)o, 1);
    }
    mw_metrics_store_time(m, 70000);
    mw_metrics_forward(m, MW_TARGET_FASTCGI, 3000000, true);
    mw_metrics_in_flight(m, 1);
    mw_metrics_reload(m, true, true, 1793705467000);
    mw_metrics_reload(m, false, false, 0);
    memset(p, 0, sizeof(*p));
    mw_metrics_render(m, p);
    return m;
}

/* promtool, as Prometheus reads a scrape, on the registry's text. */
static void test_promtool(void)
{
    char path[600], log[600], cmd[1400];
    const char *argv[] = {"sh", "-c", cmd, NULL};
    mw_prom_t p;
    mw_metrics_t *m = busy_registry(&p);
    test_proc_t proc;
    char *out;

    CU_ASSERT_EQUAL_FATAL(mw_prom_done(&p), SUSPECT_OK);
    CU_ASSERT_PTR_NOT_NULL(
        strstr(p.buf, "suspect_decisions_total{action=\"Login\",outcome=\"fail_"
                      "closed\"} 1\n"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(p.buf, "suspect_store_latency_seconds_bucket{store=\"lmdb\",le="
                      "\"0.0001\"} 1\n"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(p.buf, "suspect_upstream_errors_total{target=\"fastcgi\"} 1\n"));
    CU_ASSERT_PTR_NULL(strstr(p.buf, "target=\"cgi\""));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(p.buf, "suspect_reloads_total{file=\"limits\",result="
                      "\"rejected\"} 1\n"));
    snprintf(path, sizeof(path), "%s/metrics.txt", dir);
    snprintf(log, sizeof(log), "%s/promtool.log", dir);
    CU_ASSERT_EQUAL_FATAL(test_write_file(path, p.buf, p.len), 0);
    snprintf(cmd, sizeof(cmd), "exec promtool check metrics < '%s'", path);
    CU_ASSERT_EQUAL_FATAL(test_proc_start(&proc, argv, NULL, log), 0);
    CU_ASSERT_EQUAL(test_proc_wait(&proc, test_scale_ms(20000)), 0);
    out = test_read_file(log, NULL);
    if (proc.status != 0) {
        fprintf(stderr, "\n  promtool: %s\n", out != NULL ? out : "?");
    }
    CU_ASSERT_EQUAL(proc.status, 0);
    free(out);
    mw_prom_free(&p);
    mw_metrics_free(m);
}

static void render_busy(void *arg, mw_prom_t *p)
{
    (void)arg;
    mw_metrics_free(busy_registry(p));
}

/* The listener: only GET and HEAD of /metrics. */
static void test_listener(void)
{
    char listen[64], url[96], bad[96];
    mw_metrics_http_t *h = NULL;
    int port = test_free_port();
    test_http_t r;

    snprintf(listen, sizeof(listen), "tcp:127.0.0.1:%d", port);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", port);
    snprintf(bad, sizeof(bad), "http://127.0.0.1:%d/other", port);
    CU_ASSERT_EQUAL_FATAL(
        mw_metrics_http_start(listen, render_busy, NULL, &h, NULL), SUSPECT_OK);
    CU_ASSERT_EQUAL(test_http(&r, dir, (const char *[]){url, NULL}), 0);
    CU_ASSERT_EQUAL(r.status, 200);
    CU_ASSERT_STRING_EQUAL(test_http_header(&r, "Content-Type"),
                           "text/plain; version=0.0.4; charset=utf-8");
    CU_ASSERT_PTR_NOT_NULL(strstr(r.body, "# TYPE suspect_decisions_total "
                                          "counter\n"));
    test_http_free(&r);
    CU_ASSERT_EQUAL(test_http(&r, dir, (const char *[]){"-I", url, NULL}), 0);
    CU_ASSERT_EQUAL(r.status, 200);
    test_http_free(&r);
    CU_ASSERT_EQUAL(test_http(&r, dir, (const char *[]){bad, NULL}), 0);
    CU_ASSERT_EQUAL(r.status, 404);
    test_http_free(&r);
    CU_ASSERT_EQUAL(
        test_http(&r, dir, (const char *[]){"-X", "POST", url, NULL}), 0);
    CU_ASSERT_EQUAL(r.status, 405);
    test_http_free(&r);
    mw_metrics_http_stop(h);
    /* the port is free again */
    CU_ASSERT_EQUAL(mw_metrics_http_start(listen, render_busy, NULL, &h, NULL),
                    SUSPECT_OK);
    mw_metrics_http_stop(h);
}

static int suite_init(void)
{
    dir = test_mkdtemp();
    return dir != NULL ? 0 : -1;
}

static int suite_clean(void)
{
    test_rmtree(dir);
    free(dir);
    return 0;
}

int register_metrics_suite(void)
{
    CU_pSuite s = CU_add_suite("metrics", suite_init, suite_clean);

    if (s == NULL ||
        !CU_add_test(s, "exact under threads", test_threads_exact) ||
        !CU_add_test(s, "actions bounded", test_bounded_actions) ||
        !CU_add_test(s, "label values escaped", test_text_escaping) ||
        !CU_add_test(s, "promtool check metrics", test_promtool) ||
        !CU_add_test(s, "the listener", test_listener)) {
        return -1;
    }
    return 0;
}
