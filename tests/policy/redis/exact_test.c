/*
 * exact_test.c - the exactness check of the Redis stores (exact_test.h).
 *
 * The run forks EX_PROCS processes; each opens its own store on the plan's
 * URL and runs EX_THREADS threads that decide as fast as they can for
 * EX_RUN_MS, each keeping the wall time of its admitted hits (times two,
 * plus the pair it decided, so one number says both).  A process writes
 * its threads' times to a pipe, then its error count as a negative number,
 * and exits.  The parent reads them all, sorts each identity's times and
 * looks for EX_LIMIT + 1 of them within 1000 ms: the limit was exceeded.
 *
 * Memory: the threads' and the parent's tables are static (several MiB,
 * too much for a stack); one run at a time.
 */
#include "exact_test.h"

#include <CUnit/CUnit.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "helpers/redisserver.h"

#define EX_THREADS 16
#define EX_PROCS   2
#define EX_RUN_MS  1500
#define EX_MAX     4096

typedef struct ex_thread {
    suspect_store_t *store;
    const ex_plan_t *plan;
    int which; /* the pair it decides */
    int64_t allowed[EX_MAX];
    int nallowed;
    int errors;
} ex_thread_t;

static void *ex_run(void *p)
{
    ex_thread_t *t = p;
    const suspect_key_t *keys = t->plan->pair[t->which];
    int64_t end = mono_ms() + EX_RUN_MS;

    while (mono_ms() < end) {
        suspect_decision_t d;
        int64_t now = wall_ms();
        if (suspect_store_decide(t->store, t->plan->rule, keys, t->plan->nkeys,
                                 now, &d, NULL) != SUSPECT_OK) {
            t->errors++;
        } else if (d.allowed && t->nallowed < EX_MAX) {
            t->allowed[t->nallowed++] = now * 2 + t->which;
        }
    }
    return NULL;
}

/* One process of a run: writes (time * 2 + pair) of each admitted
 * decision to fd, then its errors as a negative number; never returns. */
static void ex_process(const ex_plan_t *plan, int fd)
{
    static ex_thread_t th[EX_THREADS];
    pthread_t tid[EX_THREADS];
    suspect_store_t *store =
        test_redis_store(plan->url, 5000, SUSPECT_REDIS_CLOCK_CALLER, NULL);
    int64_t errors = 0;

    if (store == NULL) {
        _exit(2);
    }
    for (int i = 0; i < EX_THREADS; i++) {
        th[i].store = store;
        th[i].plan = plan;
        th[i].which = i % plan->npairs;
        pthread_create(&tid[i], NULL, ex_run, &th[i]);
    }
    for (int i = 0; i < EX_THREADS; i++) {
        pthread_join(tid[i], NULL);
        if (write(fd, th[i].allowed, sizeof(int64_t) * th[i].nallowed) < 0) {
            _exit(3);
        }
        errors += th[i].errors;
    }
    errors = -1 - errors;
    if (write(fd, &errors, sizeof(errors)) < 0) {
        _exit(3);
    }
    suspect_store_free(store);
    _exit(0);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* True when the sorted times t[0..n) hold EX_LIMIT + 1 within 1 s. */
static bool over_admitted(const int64_t *t, size_t n)
{
    for (size_t i = 0; i + EX_LIMIT < n; i++) {
        if (t[i + EX_LIMIT] - t[i] < 1000) {
            return true;
        }
    }
    return false;
}

void ex_check(const ex_plan_t *plan, size_t admitted[3])
{
    static int64_t all[EX_PROCS * EX_THREADS * EX_MAX];
    static int64_t ident[3][EX_PROCS * EX_THREADS * EX_MAX];
    size_t n = 0, ni[3] = {0, 0, 0};
    int64_t errors = 0, v;
    pid_t pid[EX_PROCS];
    int fds[2], status;

    CU_ASSERT_EQUAL_FATAL(pipe(fds), 0);
    for (int p = 0; p < EX_PROCS; p++) {
        pid[p] = fork();
        CU_ASSERT_FATAL(pid[p] >= 0);
        if (pid[p] == 0) {
            close(fds[0]);
            ex_process(plan, fds[1]);
        }
    }
    close(fds[1]);
    while (read(fds[0], &v, sizeof(v)) == sizeof(v)) {
        if (v < 0) {
            errors += -1 - v;
        } else if (n < sizeof(all) / sizeof(all[0])) {
            all[n++] = v;
        }
    }
    close(fds[0]);
    for (int p = 0; p < EX_PROCS; p++) {
        CU_ASSERT_EQUAL(waitpid(pid[p], &status, 0), pid[p]);
        CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    CU_ASSERT_EQUAL(errors, 0);
    for (size_t i = 0; i < n; i++) {
        int which = (int)(all[i] & 1);
        ident[0][ni[0]++] = all[i] / 2;
        if (plan->nkeys == 2) {
            ident[1 + which][ni[1 + which]++] = all[i] / 2;
        }
    }
    for (int k = 0; k < 3; k++) {
        qsort(ident[k], ni[k], sizeof(int64_t), cmp_i64);
        if (over_admitted(ident[k], ni[k])) {
            CU_FAIL("more than limit_count hits admitted in one window");
        }
        admitted[k] = ni[k];
    }
    /* The limit is reached: the test did test something. */
    CU_ASSERT_TRUE(ni[0] >= EX_LIMIT);
}
