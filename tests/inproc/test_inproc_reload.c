/*
 * test_inproc_reload.c - suite "inproc", continued: reloads and threads.
 *
 * A reload the application asks for keeps the running pair when a file
 * does not load, when the pair would leave a route without its action,
 * when suspect.xml changes what the store was built on or leaves forward
 * mode, says why (and logs it), and swaps in a good file; in the AUTO
 * mode the decisions themselves pick a change up.  Many threads deciding
 * on one identity while another reloads let exactly the limit through.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"
#include "inproc_test.h"

/* suspect_guard_reload() on g: the files swapped in, the error text in
 * why (the caller's; "" when none). */
static int reload(suspect_guard_t *g, suspect_rc_t want, char *why, size_t size)
{
    suspect_err_t err;
    int n = -1;

    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(suspect_guard_reload(g, false, &n, &err), want);
    snprintf(why, size, "%s", err.text);
    return n;
}

static bool says(const char *text, const char *part)
{
    if (strstr(text, part) != NULL) {
        return true;
    }
    fprintf(stderr, "inproc: \"%s\" not in \"%s\"\n", part, text);
    return false;
}

/* The log since the last look holds part. */
static bool logged(const char *part)
{
    char *log = ip_log_take();
    bool ok = says(log, part);

    free(log);
    return ok;
}

static const char limits5[] =
    "<ArrayOfSuspectUsageSettingEntity>\n"
    "<SuspectUsageSettingEntity Action='Bank' LimitCount='5' "
    "LimitDuration='120'/>\n"
    "<SuspectUsageSettingEntity Action='Lock' LimitCount='2' "
    "LimitDuration='600' BlockDuration='600'/>\n"
    "<SuspectUsageSettingEntity Action='Login' LimitCount='3' "
    "LimitDuration='600' BlockDuration='600'/>\n"
    "<SuspectUsageSettingEntity Action='Acct' LimitCount='5' "
    "LimitDuration='60'/>\n"
    "<SuspectUsageSettingEntity Action='Env' LimitCount='5' "
    "LimitDuration='60'/>\n"
    "<SuspectUsageSettingEntity Action='Peek' LimitCount='1' "
    "LimitDuration='60'/>\n"
    "</ArrayOfSuspectUsageSettingEntity>\n";

static void test_reload_keeps(void)
{
    suspect_guard_t *g = ip_open(true, SUSPECT_GUARD_RELOAD_MANUAL);
    char why[600];

    CU_ASSERT_EQUAL(ip_verdict(g, "bank", "member=m1"), SUSPECT_GUARD_ALLOW);
    CU_ASSERT_EQUAL(reload(g, SUSPECT_OK, why, sizeof(why)), 0);
    free(ip_log_take());
    /* a limits file that does not load */
    CU_ASSERT_FATAL(ip_write_limits("<ArrayOfSuspectUsageSettingEntity>"
                                    "<Suspect") == 0);
    CU_ASSERT_EQUAL(reload(g, SUSPECT_E_CONFIG, why, sizeof(why)), 0);
    CU_ASSERT(says(why, "limits.xml:1"));
    CU_ASSERT(logged("keeping the running limits"));
    /* the running limits still count: the second is allowed, the third
     * denied */
    CU_ASSERT_EQUAL(ip_verdict(g, "bank", "member=m1"), SUSPECT_GUARD_ALLOW);
    CU_ASSERT_EQUAL(ip_verdict(g, "bank", "member=m1"), SUSPECT_GUARD_DENY);
    /* a limits file without an action a route names */
    CU_ASSERT_FATAL(ip_write_limits("<ArrayOfSuspectUsageSettingEntity>"
                                    "<SuspectUsageSettingEntity Action='Bank' "
                                    "LimitCount='9' LimitDuration='120'/>"
                                    "</ArrayOfSuspectUsageSettingEntity>") ==
                    0);
    CU_ASSERT_EQUAL(reload(g, SUSPECT_E_CONFIG, why, sizeof(why)), 0);
    CU_ASSERT(says(why, "is not in limits.xml"));
    CU_ASSERT(logged("its requests would not be counted"));
    CU_ASSERT_EQUAL(ip_verdict(g, "bank", "member=m1"), SUSPECT_GUARD_DENY);
    /* a suspect.xml that leaves forward mode, or changes the store */
    CU_ASSERT_FATAL(ip_write_limits(NULL) == 0);
    CU_ASSERT_FATAL(ip_write_file("suspect.xml", IP_AUTHORIZER_XML) == 0);
    /* (the good limits file is swapped in, the suspect.xml refused) */
    CU_ASSERT_EQUAL(reload(g, SUSPECT_E_CONFIG, why, sizeof(why)), 1);
    CU_ASSERT(says(why, "mode must be forward"));
    CU_ASSERT(logged("keeping the running configuration"));
    CU_ASSERT_FATAL(ip_write_conf(NULL,
                                  "<Store type='memory' maxEntries='5000'/>",
                                  NULL) == 0);
    CU_ASSERT_EQUAL(reload(g, SUSPECT_E_CONFIG, why, sizeof(why)), 0);
    CU_ASSERT(says(why, "<Store> changed: restart the application"));
    CU_ASSERT_EQUAL(ip_verdict(g, "bank", "member=m1"), SUSPECT_GUARD_DENY);
    /* good files are swapped in: the limit is 5 now */
    CU_ASSERT_FATAL(ip_write_conf(NULL, NULL, NULL) == 0);
    CU_ASSERT_FATAL(ip_write_limits(limits5) == 0);
    CU_ASSERT_EQUAL(reload(g, SUSPECT_OK, why, sizeof(why)), 2);
    CU_ASSERT(logged("limits reloaded"));
    CU_ASSERT_EQUAL(ip_verdict(g, "bank", "member=m1"), SUSPECT_GUARD_ALLOW);
    suspect_guard_close(g);
}

/* AUTO: a decision after the interval looks at the files. */
static void test_reload_auto(void)
{
    suspect_guard_t *g = ip_open(true, SUSPECT_GUARD_RELOAD_AUTO);
    int64_t deadline;
    char *log = NULL;
    bool seen = false;

    CU_ASSERT_EQUAL(ip_verdict(g, "bank", "member=m1"), SUSPECT_GUARD_ALLOW);
    CU_ASSERT_EQUAL(ip_verdict(g, "bank", "member=m1"), SUSPECT_GUARD_ALLOW);
    CU_ASSERT_EQUAL(ip_verdict(g, "bank", "member=m1"), SUSPECT_GUARD_DENY);
    free(ip_log_take());
    CU_ASSERT_FATAL(ip_write_limits(limits5) == 0);
    deadline = mono_ms() + test_scale_ms(5000);
    while (!seen && mono_ms() < deadline) {
        struct timespec ts = {0, 20 * 1000000L};

        (void)ip_verdict(g, "index", NULL);
        log = ip_log_take();
        seen = strstr(log, "limits reloaded (6 actions)") != NULL;
        free(log);
        nanosleep(&ts, NULL);
    }
    CU_ASSERT(seen);
    CU_ASSERT_EQUAL(ip_verdict(g, "bank", "member=m1"), SUSPECT_GUARD_ALLOW);
    suspect_guard_close(g);
}

/* ---- threads ------------------------------------------------------------- */

typedef struct race {
    suspect_guard_t *g;
    atomic_int allowed, denied, other;
    atomic_bool stop;
} race_t;

static void *decider(void *arg)
{
    race_t *rc = arg;

    for (int i = 0; i < 200; i++) {
        switch (ip_verdict(rc->g, "bank", "member=hot")) {
        case SUSPECT_GUARD_ALLOW:
            atomic_fetch_add(&rc->allowed, 1);
            break;
        case SUSPECT_GUARD_DENY:
            atomic_fetch_add(&rc->denied, 1);
            break;
        default:
            atomic_fetch_add(&rc->other, 1);
            break;
        }
    }
    return NULL;
}

static void *reloader(void *arg)
{
    race_t *rc = arg;

    while (!atomic_load(&rc->stop)) {
        (void)suspect_guard_reload(rc->g, true, NULL, NULL);
    }
    return NULL;
}

/* Eight threads decide one identity while a ninth reloads suspect.xml
 * over and over: exactly the limit is allowed, every other request is
 * denied, nothing else happens (and the sanitizer build watches the
 * references). */
static void test_threads(void)
{
    race_t rc = {.g = ip_open(true, SUSPECT_GUARD_RELOAD_AUTO)};
    pthread_t t[8], rl;

    CU_ASSERT_FATAL(pthread_create(&rl, NULL, reloader, &rc) == 0);
    for (int i = 0; i < 8; i++) {
        CU_ASSERT_FATAL(pthread_create(&t[i], NULL, decider, &rc) == 0);
    }
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
    }
    atomic_store(&rc.stop, true);
    pthread_join(rl, NULL);
    CU_ASSERT_EQUAL(atomic_load(&rc.allowed), 2);
    CU_ASSERT_EQUAL(atomic_load(&rc.denied), 8 * 200 - 2);
    CU_ASSERT_EQUAL(atomic_load(&rc.other), 0);
    suspect_guard_close(rc.g);
    free(ip_log_take());
}

int inproc_register_reload(CU_pSuite s)
{
    if (CU_add_test(s, "reload: a bad file keeps the running pair",
                    test_reload_keeps) == NULL ||
        CU_add_test(s, "reload: from the decisions (AUTO)", test_reload_auto) ==
            NULL ||
        CU_add_test(s, "threads: one identity, reloads under way",
                    test_threads) == NULL) {
        return -1;
    }
    return 0;
}
