/*
 * bench_metrics.c - what the metrics and the decision log cost each
 * request (`make bench`).
 *
 * suspect-fcgi counts every request on its path, whether a listener is
 * configured or not (suspectctl stats reads the same counters), so
 * bench-fcgi cannot show their cost as a difference between two daemons.
 * This bench times exactly what the request path adds (daemon/handler.c
 * and record.c): the action's row by name (mw_metrics_action), the
 * decision counted (mw_metrics_decision), the store's time observed
 * (mw_metrics_store_time, with the two clock reads around the store call)
 * and in-flight up and down; with 1 thread, and with as many threads as
 * CPUs on actions picked at random among 8, so threads share rows and
 * cache lines as a busy daemon's workers do.  Then the same for one
 * decision log line (the identity's hash under a configured key, the line
 * built and handed to the buffered file, whose thread writes many lines
 * with one write(2) to a file, O_APPEND), what decisions="all" adds to
 * every request.  It prints the threads' CPU time
 * per request (not wall time: other work on the machine does not count),
 * to set against a request's own time (bench-fcgi: tens of microseconds
 * of CPU on the cheapest allowed path).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log/decision_log.h"
#include "metrics/metrics.h"

#define RUN_MS  500
#define ACTIONS 8

typedef struct job {
    mw_metrics_t *m;
    mw_dlog_t *dlog; /* NULL: the metrics alone */
    volatile int *stop;
    uint64_t done;
    int64_t cpu_ns; /* the thread's own CPU time */
    unsigned seed;
} job_t;

/* The calling thread's CPU time, ns: what it spent, however busy the
 * machine is with other work. */
static int64_t thread_cpu_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static const char *const actions[ACTIONS] = {"SecureLoginForceForgotAccount",
                                             "SecureForgotAccount",
                                             "BankAccountUpdate",
                                             "PromoQuery",
                                             "ComposeMessage",
                                             "LoginVerificationResend",
                                             "SecureChangeEmail",
                                             "Other"};

/* One request's metrics work, as the handler does it. */
static void one_request(mw_metrics_t *m, const char *action)
{
    int64_t t0, t1;

    mw_metrics_in_flight(m, 1);
    t0 = mono_ns();
    t1 = mono_ns(); /* the store's call would sit between these */
    mw_metrics_store_time(m, mono_ns() - t1);
    mw_metrics_decision(m, mw_metrics_action(m, action), MW_OUT_ALLOWED, 0);
    (void)(mono_ns() - t0); /* the decision's latency, for the log */
    mw_metrics_in_flight(m, -1);
}

/* One decision log line, as record.c writes it for an allowed request. */
static void one_line(mw_dlog_t *dlog, const char *action, int64_t now)
{
    static const char value[] = "member-000123";
    char hash[MW_DLOG_HASH_LEN];
    suspect_siphash_key_t key;
    mw_dlog_entry_t e;

    memset(&e, 0, sizeof(e));
    mw_dlog_key("bench-identity-key-0123", &key);
    mw_dlog_hash(&key, "Member", value, sizeof(value) - 1, hash);
    e.time_ms = now;
    e.action = action;
    e.route_file = "/etc/suspect/suspect.xml";
    e.route_line = 42;
    e.outcome = "allowed";
    e.reason = "allowed";
    e.identity_type = "Member";
    e.identity_hash = hash;
    e.client = "203.0.113.7";
    e.method = "GET";
    e.path = "/app.cgi";
    e.path_len = 8;
    e.store = "memory";
    e.latency_us = 12;
    mw_dlog_write(dlog, &e);
}

static void *worker(void *arg)
{
    job_t *j = arg;
    int64_t t0 = thread_cpu_ns();

    while (!*j->stop) {
        for (int i = 0; i < 256; i++) {
            j->seed = j->seed * 1103515245u + 12345u;
            if (j->dlog != NULL) {
                one_line(j->dlog, actions[(j->seed >> 16) % ACTIONS],
                         wall_ms());
            } else {
                one_request(j->m, actions[(j->seed >> 16) % ACTIONS]);
            }
        }
        j->done += 256;
    }
    j->cpu_ns = thread_cpu_ns() - t0;
    return NULL;
}

/* CPU ns per request with n threads (dlog NULL: the metrics work). */
static double run(int n, mw_dlog_t *dlog)
{
    mw_metrics_t *m = mw_metrics_new("memory", MW_TARGET_CGI);
    pthread_t th[64];
    job_t jobs[64];
    volatile int stop = 0;
    uint64_t total = 0;
    int64_t cpu = 0;

    for (int i = 0; i < n; i++) {
        jobs[i].m = m;
        jobs[i].dlog = dlog;
        jobs[i].stop = &stop;
        jobs[i].done = 0;
        jobs[i].seed = (unsigned)i * 7919u + 1u;
        pthread_create(&th[i], NULL, worker, &jobs[i]);
    }
    usleep(RUN_MS * 1000);
    stop = 1;
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        total += jobs[i].done;
        cpu += jobs[i].cpu_ns;
    }
    mw_metrics_free(m);
    /* CPU per request: what a worker pays */
    return (double)cpu / (double)total;
}

int main(void)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int n = cpus > 1 && cpus < 64 ? (int)cpus : 1;
    char path[] = "/tmp/suspect-bench-dlog-XXXXXX";
    int fd = mkstemp(path);
    mw_dlog_t *dlog = NULL;

    printf("bench-metrics: the metrics work of one request (row lookup, "
           "decision, store time, in flight, 4 clock reads)\n");
    printf("  1 thread:   %6.1f ns of CPU per request\n", run(1, NULL));
    printf("  %d threads: %6.1f ns of CPU per request (shared rows)\n", n,
           run(n, NULL));
    if (fd < 0 || mw_dlog_open(path, &dlog, NULL) != SUSPECT_OK) {
        fprintf(stderr, "bench-metrics: no temp file for the log\n");
        return 1;
    }
    close(fd);
    printf("a decision log line (hash, line, buffered for the file)\n");
    printf("  1 thread:   %6.1f ns of CPU per request\n", run(1, dlog));
    printf("  %d threads: %6.1f ns of CPU per request (one file)\n", n,
           run(n, dlog));
    mw_dlog_close(dlog);
    unlink(path);
    return 0;
}
