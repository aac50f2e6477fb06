/*
 * test_e2e_faults_redis.c - suite "faults": Redis fails under load.
 *
 * The nginx auth_request shape of examples/ with the Redis store
 * (timeoutMs 100) on a real redis-server, three client threads sending
 * promotion lookups, each by a new member, the whole time.  For each fail
 * mode (closed, open, local), two faults one after the other: Redis
 * killed with SIGKILL, then started again (from a snapshot saved just
 * before, as a Redis with persistence would come back), and Redis paused
 * with SIGSTOP, then resumed with SIGCONT.  Each outage lasts OUTAGE_MS.
 *
 * Before each fault: an account is locked (LoginVerificationResend: three
 * resends, the fourth is 429) and a member makes 4 of its 10 promotion
 * lookups.  During the outage:
 *   - every request of the load that started and ended inside it got the
 *     fail mode's answer: closed 503, open and local 200;
 *   - a new member making 12 lookups gets 12 x 503 (closed), 12 x 200
 *     (open: allowed), or 10 x 200 then 429 (local: counted in the
 *     daemon's own store);
 *   - a member Redis had at 9 of its 10 lookups gets, of 5, none
 *     (closed), 5 (open) or 1 (local: the daemon's own store starts it
 *     from what Redis last said, not from zero);
 *   - the locked account is still denied (429) at the end of the
 *     outage, more than a second after Redis last said so: the daemon
 *     remembers the locks it saw (neither open nor the local store knows
 *     them).
 * After Redis is back:
 *   - decisions are on Redis again within RECOVER_MS: a resend by a new
 *     account lands in Redis (its key exists) and the load answers 200
 *     from then on;
 *   - nothing Redis held was lost: the account is still locked, and the
 *     member gets exactly its 6 remaining lookups, then 429;
 *   - the daemon never stopped, and no request of the whole run took
 *     longer than the Redis timeout plus SLOW_MARGIN_MS.
 * And Redis paused for long (a timeout of 20 s): requests that ask it
 * wait in workers, and the front, which never runs a decision that may
 * wait, still accepts and reads: pages that ask no store are answered
 * while the counted requests still wait (an order of events: they are
 * still counted busy after the answers), and no request was answered by
 * the front itself (suspect_fastcgi_requests_in_front_total stays 0).
 *
 * Both bounds are SUSPECT_TEST_SCALE'd and measured over the machine's
 * own pace: the slowest request of a peer load that never asks Redis
 * (an unprotected page through the same web server, daemon and PHP),
 * running all along, or of the load before the fault, is added, so a
 * loaded machine fails them only when the fault itself costs more.
 */
#include <CUnit/CUnit.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "helpers/e2e.h"
#include "helpers/redisserver.h"
#include "test_e2e_faults.h"
#include "helpers/vgwrap.h"

#define TIMEOUT_MS     100
#define SLOW_MARGIN_MS 1000
#define OUTAGE_MS      800
#define RECOVER_MS     2500
#define LOAD_THREADS   3
#define PROMO_LIMIT    10
/* How long the daemon trusts a lock it saw without asking Redis. */
#define LOCK_TRUST_MS 1000

typedef enum { KILL, PAUSE } fault_t;

/* A fail mode and what the client sees while Redis is down. */
typedef struct mode {
    const char *name;
    int down;     /* the load's answer */
    int hammered; /* of 12 lookups by one member, how many are allowed */
    int over;     /* the answer to the others */
    int near;     /* of 5 lookups by a member Redis had at 9 of 10 */
} redis_mode_t;

static test_redis_t rs;
static bool paused;
static long long worst_ms; /* the slowest probe of the test's own */
static long long base_ms;  /* the slowest request before a fault */

void flt_redis_cleanup(void)
{
    if (paused && rs.pid > 0) {
        kill(rs.pid, SIGCONT);
    }
    paused = false;
    if (rs.dir != NULL) {
        test_redis_stop(&rs);
    }
    memset(&rs, 0, sizeof(rs));
}

static int resend(const char *account)
{
    return flt_resend(account, &worst_ms);
}

static int promo(const char *member)
{
    return flt_promo(member, &worst_ms);
}

/* Starts Redis and the stack in fail mode m. */
static int start(const redis_mode_t *m)
{
    char store[700];
    const char *edits[] = {"<Store type=\"memory\"/>", store, NULL};

    if (test_redis_start(&rs, false, NULL) != 0) {
        return -1;
    }
    snprintf(store, sizeof(store),
             "<Store type=\"redis\" url=\"%s\" timeoutMs=\"%d\" "
             "failMode=\"%s\"/>",
             rs.url, TIMEOUT_MS, m->name);
    return flt_start_auth(edits);
}

/* The state letter of pid in /proc/PID/stat, or '?'. */
static char proc_state(pid_t pid)
{
    char path[64], stat[512];
    const char *paren;
    char state = '?';
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    f = fopen(path, "r");
    if (f == NULL) {
        return state;
    }
    if (fgets(stat, sizeof(stat), f) != NULL &&
        (paren = strrchr(stat, ')')) != NULL) {
        state = paren[2];
    }
    fclose(f);
    return state;
}

/* Kills (reaped) or stops Redis; returns once it can no longer answer. */
static void fault_start(fault_t f)
{
    if (f == KILL) {
        test_redis_kill9(&rs);
        return;
    }
    paused = kill(rs.pid, SIGSTOP) == 0;
    for (long long end = mono_ms() + test_scale_ms(2000);
         paused && proc_state(rs.pid) != 'T' && mono_ms() < end;) {
        usleep(1000);
    }
}

static int fault_end(fault_t f)
{
    if (f == KILL) {
        return test_redis_restart(&rs);
    }
    paused = false;
    return kill(rs.pid, SIGCONT);
}

/* Waits until the load has n answers. */
static bool load_going(flt_load_t *l, size_t n)
{
    for (long long end = mono_ms() + test_scale_ms(5000); mono_ms() < end;) {
        if (flt_load_count(l, 0, LLONG_MAX, 0) >= n) {
            return true;
        }
        usleep(10000);
    }
    return false;
}

/* Resends by new accounts until one is recorded in Redis: when that
 * happened (mono_ms()), or -1 after 5 s (scaled). */
static long long redis_back(int round)
{
    long long end = mono_ms() + test_scale_ms(5000);
    char account[64], key[128];

    for (int k = 0; mono_ms() < end; k++) {
        snprintf(account, sizeof(account), "back-%d-%d", round, k);
        snprintf(key, sizeof(key), "LoginVerificationResend:%s", account);
        if (resend(account) == 200 &&
            test_redis_int(&rs, "EXISTS %s", key) == 1) {
            return mono_ms();
        }
        if (k > 0 && k % 100 == 0) {
            fprintf(stderr, "faults: not back on Redis after %d resends\n", k);
        }
        usleep(10000);
    }
    return -1;
}

/* The end of the last answer of the load that was not 200, or 0. */
static long long last_bad(flt_load_t *l)
{
    long long at = 0;

    pthread_mutex_lock(&l->mu);
    for (size_t i = 0; i < l->n; i++) {
        if (l->hits[i].status != 200 && l->hits[i].end > at) {
            at = l->hits[i].end;
        }
    }
    pthread_mutex_unlock(&l->mu);
    return at;
}

/* Twelve lookups by a new member while Redis is down. */
static void hammer(const redis_mode_t *m, int round)
{
    char member[64];
    int allowed = 0, other = 0;

    snprintf(member, sizeof(member), "hammer-%d", round);
    for (int i = 0; i < 12; i++) {
        int st = promo(member);

        allowed += st == 200;
        other += st == m->over;
    }
    CU_ASSERT_EQUAL(allowed, m->hammered);
    CU_ASSERT_EQUAL(other, 12 - m->hammered);
}

/* Five lookups during the outage by a member Redis had at 9 of its 10:
 * in fail mode local, one more (the daemon's own store starts from what
 * Redis last said), not ten. */
static void near_limit(const redis_mode_t *m, const char *near)
{
    int allowed = 0;

    for (int i = 0; i < 5; i++) {
        allowed += promo(near) == 200;
    }
    CU_ASSERT_EQUAL(allowed, m->near);
}

/* What Redis held before the fault is still in force. */
static void kept(const char *locked, const char *counted)
{
    int allowed = 0;

    CU_ASSERT_EQUAL(resend(locked), 429);
    while (allowed < PROMO_LIMIT && promo(counted) == 200) {
        allowed++;
    }
    CU_ASSERT_EQUAL(allowed, PROMO_LIMIT - 4);
    CU_ASSERT_EQUAL(promo(counted), 429);
}

/* The load's answers while Redis was down: all the fail mode's. */
static void check_down(flt_load_t *l, const redis_mode_t *m, long long from,
                       long long to)
{
    size_t all = flt_load_count(l, from, to, 0);
    size_t good = flt_load_count(l, from, to, m->down);

    CU_ASSERT_TRUE(all >= 3);
    CU_ASSERT_EQUAL(good, all);
    if (good != all) {
        fprintf(stderr,
                "faults: %s: %zu of %zu answers during the outage "
                "were not %d\n",
                m->name, all - good, all, m->down);
    }
}

static void run_fault(const redis_mode_t *m, fault_t f, int round)
{
    char locked[64], counted[64], near[64], prefix[96];
    flt_load_t l, peer;
    long long t1, t2, back, stable, locked_at, base;
    int status = 0;

    snprintf(locked, sizeof(locked), "locked-%d", round);
    snprintf(counted, sizeof(counted), "counted-%d", round);
    snprintf(near, sizeof(near), "near-%d", round);
    snprintf(prefix, sizeof(prefix),
             "/index.php?op=promo&code=load&member=r%d-", round);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(resend(locked), 200);
    }
    CU_ASSERT_EQUAL(resend(locked), 429);
    locked_at = mono_ms();
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL(promo(counted), 200);
    }
    for (int i = 0; i < PROMO_LIMIT - 1; i++) {
        CU_ASSERT_EQUAL(promo(near), 200);
    }
    if (f == KILL) {
        /* what a Redis with persistence would come back with */
        freeReplyObject(test_redis_cmd(&rs, "SAVE"));
    }
    CU_ASSERT_EQUAL_FATAL(flt_load_start(&l, LOAD_THREADS, prefix), 0);
    CU_ASSERT_EQUAL_FATAL(flt_load_start(&peer, 1, "/index.php?op=index&n="),
                          0);
    CU_ASSERT_TRUE(load_going(&l, 10));
    fault_start(f);
    t1 = mono_ms();
    /* The machine's own pace, Redis healthy: a loaded machine answers
     * slowly with or without a fault, and the bounds below are about
     * what the fault adds. */
    base = flt_load_max_ms(&l, t1, &status);
    base_ms = base > base_ms ? base : base_ms;
    hammer(m, round);
    near_limit(m, near);
    /* past the second for which a lock is trusted without asking Redis */
    while (mono_ms() < t1 + OUTAGE_MS ||
           mono_ms() < locked_at + LOCK_TRUST_MS + 200) {
        usleep(10000);
    }
    CU_ASSERT_EQUAL(resend(locked), 429);
    t2 = mono_ms();
    CU_ASSERT_EQUAL(fault_end(f), 0);
    back = redis_back(round);
    CU_ASSERT_TRUE(back > 0);
    /* a little more load on Redis, then the checks */
    while (mono_ms() < back + 500) {
        usleep(10000);
    }
    flt_load_stop(&l);
    flt_load_stop(&peer);
    /* the machine's pace while it ran, from a peer Redis never slowed */
    {
        long long pace = flt_load_max_ms(&peer, LLONG_MAX, &status);

        base = pace > base ? pace : base;
        base_ms = base > base_ms ? base : base_ms;
    }
    /* the first moment after which every answer was 200 */
    stable = (last_bad(&l) > back ? last_bad(&l) : back) + 1;
    fprintf(stderr,
            "faults: redis %s, fail mode %s: decisions back on Redis %lld ms "
            "after it returned, answers stable after %lld ms\n",
            f == KILL ? "killed" : "paused", m->name, back > 0 ? back - t2 : -1,
            stable - t2);
    flt_load_print(&l, f == KILL ? "load (kill -9, restart)"
                                 : "load (SIGSTOP, SIGCONT)");
    CU_ASSERT_TRUE(back - t2 <= test_scale_ms(RECOVER_MS) + base &&
                   stable - t2 <= test_scale_ms(RECOVER_MS) + base);
    check_down(&l, m, t1, t2);
    CU_ASSERT_EQUAL(flt_load_count(&l, stable, LLONG_MAX, 200),
                    flt_load_count(&l, stable, LLONG_MAX, 0));
    {
        long long max = flt_load_max_ms(&l, LLONG_MAX, &status);

        fprintf(stderr,
                "faults: slowest request %lld ms (%d), of the test's "
                "own %lld ms, %lld ms without Redis (the machine's pace)\n",
                max, status, worst_ms, base);
        CU_ASSERT_TRUE(max <=
                       TIMEOUT_MS + test_scale_ms(SLOW_MARGIN_MS) + base);
    }
    flt_load_free(&l);
    flt_load_free(&peer);
    kept(locked, counted);
    CU_ASSERT_TRUE(flt_daemon_alive());
}

static void run_mode(const redis_mode_t *m)
{
    worst_ms = 0;
    base_ms = 0;
    CU_ASSERT_EQUAL_FATAL(start(m), 0);
    run_fault(m, KILL, 1);
    run_fault(m, PAUSE, 2);
    CU_ASSERT_TRUE(worst_ms <=
                   TIMEOUT_MS + test_scale_ms(SLOW_MARGIN_MS) + base_ms);
    CU_ASSERT_TRUE(flt_log_count("breaker closed -> open") >= 2);
    CU_ASSERT_TRUE(flt_log_count("breaker half-open -> closed") >= 2);
}

static void test_redis_closed(void)
{
    static const redis_mode_t m = {"closed", 503, 0, 503, 0};

    run_mode(&m);
}

static void test_redis_open(void)
{
    static const redis_mode_t m = {"open", 200, 12, 0, 5};

    run_mode(&m);
}

static void test_redis_local(void)
{
    static const redis_mode_t m = {"local", 200, PROMO_LIMIT, 429, 1};

    run_mode(&m);
}

/* ---- a Redis that does not answer, and the front ------------------------ */

#define STUCK 3

static void *stuck_promo(void *arg)
{
    char member[32];

    snprintf(member, sizeof(member), "stuck-%d", *(int *)arg);
    *(int *)arg = flt_promo(member, NULL);
    return NULL;
}

static void test_redis_paused_front(void)
{
    char store[700], path[64];
    const char *edits[] = {"<Store type=\"memory\"/>", store, NULL};
    int port = test_free_port(), status[STUCK], ok = 0;
    unsigned timeout_ms =
        test_scale_ms(20000) < 60000 ? test_scale_ms(20000) : 60000;
    pthread_t th[STUCK];

    CU_ASSERT_EQUAL_FATAL(test_redis_start(&rs, false, NULL), 0);
    snprintf(store, sizeof(store),
             "<Store type=\"redis\" url=\"%s\" timeoutMs=\"%u\" "
             "failMode=\"closed\"/>\n  <Metrics listen=\"tcp:127.0.0.1:%d\"/>",
             rs.url, timeout_ms, port);
    CU_ASSERT_EQUAL_FATAL(flt_start_auth(edits), 0);
    CU_ASSERT_EQUAL(flt_promo("before", NULL), 200);
    fault_start(PAUSE);
    for (int i = 0; i < STUCK; i++) {
        status[i] = i;
        CU_ASSERT_EQUAL_FATAL(
            pthread_create(&th[i], NULL, stuck_promo, &status[i]), 0);
    }
    CU_ASSERT_TRUE(
        flt_metric_wait(port, "\nsuspect_workers_busy ", STUCK, 5000));
    for (int i = 0; i < 20; i++) {
        snprintf(path, sizeof(path), "/index.php?n=%d", i); /* no route */
        ok += flt_get(path) == 200;
    }
    CU_ASSERT_EQUAL(ok, 20);
    /* answered while the counted requests still waited for Redis */
    CU_ASSERT_EQUAL(flt_metric(port, "\nsuspect_workers_busy "), STUCK);
    CU_ASSERT_EQUAL(
        flt_metric(port, "\nsuspect_fastcgi_requests_in_front_total "), 0);
    CU_ASSERT_EQUAL(fault_end(PAUSE), 0);
    for (int i = 0; i < STUCK; i++) {
        pthread_join(th[i], NULL);
        CU_ASSERT_EQUAL(status[i], 200);
    }
    CU_ASSERT_TRUE(flt_daemon_alive());
}

int flt_add_redis_tests(CU_pSuite s)
{
    return CU_add_test(s, "Redis killed, paused: fail mode closed",
                       test_redis_closed) == NULL ||
                   CU_add_test(s, "Redis killed, paused: fail mode open",
                               test_redis_open) == NULL ||
                   CU_add_test(s, "Redis killed, paused: fail mode local",
                               test_redis_local) == NULL ||
                   CU_add_test(s, "Redis paused: the front still answers",
                               test_redis_paused_front) == NULL
               ? -1
               : 0;
}
