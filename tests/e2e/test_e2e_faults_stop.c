/*
 * test_e2e_faults_stop.c - suite "faults": SIGTERM while the app hangs.
 *
 * nginx -> suspect-fcgi (--grace 0.5) -> the fake app, which never
 * answers, with <Upstream timeout="30">.  A request is in flight when
 * SIGTERM comes: the daemon stops accepting, waits the grace period, then
 * cancels the upstream request (its connection to the app closed, the
 * client answered 504) and exits 0, long before the 30 s the upstream
 * timeout would take.
 */
#include <CUnit/CUnit.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>

#include "clock.h"
#include "helpers/e2e.h"
#include "test_e2e_faults.h"

#define GRACE_MS 500
/* How long after the grace period the daemon may take to exit. */
#define EXIT_MS 3000

static void *hung_request(void *arg)
{
    flt_resp_t *r = arg;

    flt_http(r, "GET", "/index.php?op=hang", NULL, 15000);
    return NULL;
}

static void test_sigterm_hung_app(void)
{
    const char *extra[] = {"--grace", "0.5", NULL};
    flt_resp_t r;
    pthread_t th;
    long long t0, took;

    CU_ASSERT_EQUAL_FATAL(flt_fake_start(FK_HANG), 0);
    CU_ASSERT_EQUAL_FATAL(flt_start_upstream("30", extra), 0);
    CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, hung_request, &r), 0);
    CU_ASSERT_TRUE(flt_fake_wait_requests(1, 5000));
    t0 = mono_ms();
    CU_ASSERT_EQUAL(test_proc_signal(&e2e.fcgi, SIGTERM), 0);
    CU_ASSERT_EQUAL(test_proc_wait(&e2e.fcgi, GRACE_MS + EXIT_MS), 0);
    took = mono_ms() - t0;
    pthread_join(th, NULL);
    fprintf(stderr, "faults: SIGTERM with a hung app: exit after %lld ms\n",
            took);
    CU_ASSERT_TRUE(took >= GRACE_MS - 50);
    CU_ASSERT_TRUE(WIFEXITED(e2e.fcgi.status) &&
                   WEXITSTATUS(e2e.fcgi.status) == 0);
    CU_ASSERT_EQUAL(r.status, 504);
    /* the daemon closed its connection to the app before it exited; the
     * app's thread notices when it runs */
    CU_ASSERT_TRUE(flt_fake_wait_peer_gone(1, 3000));
    CU_ASSERT_EQUAL(flt_fake_peer_gone(NULL), 1);
    CU_ASSERT_EQUAL(flt_log_count("upstream requests still running"), 1);
    CU_ASSERT_EQUAL(flt_log_count("cancelled: the daemon is stopping"), 1);
}

int flt_add_stop_tests(CU_pSuite s)
{
    return CU_add_test(s, "SIGTERM with a hung app: cancelled after grace",
                       test_sigterm_hung_app) == NULL
               ? -1
               : 0;
}
