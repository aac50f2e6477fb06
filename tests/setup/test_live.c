/*
 * test_live.c - suspect.xml and its limits file kept current
 * (middleware/setup/live.c, suite "setup"): a good file swapped in, a bad
 * one refused with its file:line while the running one stays.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers/util.h"
#include "setup/live.h"
#include "suites.h"

static char *dir;

/* What the hooks heard, last first. */
static struct heard {
    int applied, refused;
    bool conf;
    char msg[512];
} heard;

static void on_refused(void *arg, bool conf, const char *msg)
{
    (void)arg;
    heard.refused++;
    heard.conf = conf;
    snprintf(heard.msg, sizeof(heard.msg), "%s", msg);
}

static void on_applied(void *arg, bool conf)
{
    (void)arg;
    heard.applied++;
    heard.conf = conf;
}

static const mw_live_hooks_t hooks = {NULL, on_refused, on_applied, NULL};

static const char *path_of(char *path, const char *name)
{
    snprintf(path, TEST_PATH_MAX, "%s/%s", dir, name);
    return path;
}

/* A new file each time (rename), as a deployment makes it. */
static void put(const char *name, const char *text)
{
    char path[TEST_PATH_MAX], tmp[TEST_PATH_MAX + 8];

    path_of(path, name);
    snprintf(tmp, sizeof(tmp), "%s.new", path);
    CU_ASSERT_EQUAL_FATAL(test_write_file(tmp, text, strlen(text)), 0);
    CU_ASSERT_EQUAL_FATAL(rename(tmp, path), 0);
}

/* suspect.xml with one route on path; line 3 is the route. */
static void put_conf(const char *path)
{
    char text[1024];

    snprintf(text, sizeof(text),
             "<Suspect>\n"
             "  <Server listen='unix:/tmp/s.sock' mode='auth-request'/>\n"
             "  <Route action='One' method='POST' path='%s'>\n"
             "    <Identity type='ClientIp' from='client-ip'/>\n"
             "  </Route>\n"
             "  <Limits path='limits.xml'/>\n"
             "</Suspect>\n",
             path);
    put("suspect.xml", text);
}

/* The limits file; line 2 is the rule. */
static void put_limits(const char *count)
{
    char text[512];

    snprintf(text, sizeof(text),
             "<ArrayOfSuspectUsageSettingEntity>\n"
             "<SuspectUsageSettingEntity Action='One' LimitCount='%s' "
             "LimitDuration='60'/>\n"
             "</ArrayOfSuspectUsageSettingEntity>\n",
             count);
    put("limits.xml", text);
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

/* The running guard and limits, with references the test keeps to the
 * end, so that no two of them can share an address. */
static mw_guard_t *held_g[8];
static suspect_limits_t *held_l[8];
static size_t nheld;

static void current(mw_live_t *lv, mw_guard_t **g, suspect_limits_t **l)
{
    mw_live_acquire(lv, g, l);
    CU_ASSERT_FATAL(nheld < 8);
    held_g[nheld] = *g;
    held_l[nheld++] = *l;
}

static void release(void)
{
    while (nheld > 0) {
        nheld--;
        mw_guard_unref(held_g[nheld]);
        suspect_limits_unref(held_l[nheld]);
    }
}

static void test_swap_and_refuse(void)
{
    char conf[TEST_PATH_MAX], limits[TEST_PATH_MAX], want[TEST_PATH_MAX + 8];
    mw_guard_t *g0, *g1, *g2;
    suspect_limits_t *l0, *l1, *l2;
    suspect_err_t err;
    mw_live_t *lv = NULL;

    put_limits("3");
    put_conf("/a");
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL_FATAL(
        mw_live_new(path_of(conf, "suspect.xml"), &hooks, &lv, &err),
        SUSPECT_OK);
    current(lv, &g0, &l0);

    /* A good suspect.xml: compiled and swapped in; the limits stay. */
    memset(&heard, 0, sizeof(heard));
    put_conf("/b");
    CU_ASSERT_EQUAL(mw_live_reload(lv, true), 1);
    CU_ASSERT_EQUAL(heard.applied, 1);
    CU_ASSERT_TRUE(heard.conf);
    CU_ASSERT_EQUAL(heard.refused, 0);
    current(lv, &g1, &l1);
    CU_ASSERT_PTR_NOT_EQUAL(g1, g0);
    CU_ASSERT_PTR_EQUAL(l1, l0);

    /* A bad one: refused at its file and line, the running one kept. */
    memset(&heard, 0, sizeof(heard));
    put_conf("relative");
    CU_ASSERT_EQUAL(mw_live_reload(lv, true), 0);
    CU_ASSERT_EQUAL(heard.refused, 1);
    CU_ASSERT_TRUE(heard.conf);
    CU_ASSERT_EQUAL(heard.applied, 0);
    snprintf(want, sizeof(want), "%s:3: ", conf);
    CU_ASSERT_NSTRING_EQUAL(heard.msg, want, strlen(want));
    current(lv, &g2, &l2);
    CU_ASSERT_PTR_EQUAL(g2, g1);

    /* The same for the limits file: a bad one keeps the running snapshot,
     * a good one replaces it.  Not forced from here: only the file that
     * changed is loaded (force loads suspect.xml again too). */
    put_conf("/b");
    CU_ASSERT_EQUAL(mw_live_reload(lv, true), 1);
    current(lv, &g1, &l2);
    memset(&heard, 0, sizeof(heard));
    put_limits("many");
    CU_ASSERT_EQUAL(mw_live_reload(lv, false), 0);
    CU_ASSERT_EQUAL(heard.refused, 1);
    CU_ASSERT_FALSE(heard.conf);
    snprintf(want, sizeof(want), "%s:2: ", path_of(limits, "limits.xml"));
    CU_ASSERT_NSTRING_EQUAL(heard.msg, want, strlen(want));
    current(lv, &g2, &l2);
    CU_ASSERT_PTR_EQUAL(g2, g1);
    CU_ASSERT_PTR_EQUAL(l2, l1);

    memset(&heard, 0, sizeof(heard));
    put_limits("5");
    CU_ASSERT_EQUAL(mw_live_reload(lv, false), 1);
    CU_ASSERT_EQUAL(heard.refused, 0);
    current(lv, &g2, &l2);
    CU_ASSERT_PTR_NOT_EQUAL(l2, l1);
    CU_ASSERT_EQUAL(suspect_limits_find(l2, "One")->limit_count, 5);
    release();
    mw_live_free(lv);
}

/* A route that takes 3 tokens of a bucket: a limits file that makes the
 * action a sliding log again (which counts one hit a request) is refused,
 * and the running pair stays. */
static void test_cost_needs_bucket(void)
{
    static const char conf_text[] =
        "<Suspect>\n"
        "  <Server listen='unix:/tmp/s.sock' mode='auth-request'/>\n"
        "  <Route action='One' method='POST' path='/otp' cost='3'>\n"
        "    <Identity type='Phone' from='query:phone'/>\n"
        "  </Route>\n"
        "  <Limits path='limits.xml'/>\n"
        "</Suspect>\n";
    char conf[TEST_PATH_MAX], want[TEST_PATH_MAX + 80];
    mw_guard_t *g0, *g1;
    suspect_limits_t *l0, *l1;
    mw_live_t *lv = NULL;

    put("limits.xml", "<ArrayOfSuspectUsageSettingEntity>\n"
                      "<SuspectUsageSettingEntity Action='One' LimitCount='5' "
                      "LimitDuration='60' Algorithm='TokenBucket'/>\n"
                      "</ArrayOfSuspectUsageSettingEntity>\n");
    put("suspect.xml", conf_text);
    CU_ASSERT_EQUAL_FATAL(
        mw_live_new(path_of(conf, "suspect.xml"), &hooks, &lv, NULL),
        SUSPECT_OK);
    current(lv, &g0, &l0);
    memset(&heard, 0, sizeof(heard));
    put_limits("5");
    CU_ASSERT_EQUAL(mw_live_reload(lv, false), 0);
    CU_ASSERT_EQUAL(heard.refused, 1);
    CU_ASSERT_FALSE(heard.conf);
    snprintf(want, sizeof(want),
             "%s:3: route cost 3: action 'One' is a "
             "SlidingLog in limits.xml",
             conf);
    CU_ASSERT_NSTRING_EQUAL(heard.msg, want, strlen(want));
    current(lv, &g1, &l1);
    CU_ASSERT_PTR_EQUAL(g1, g0);
    CU_ASSERT_PTR_EQUAL(l1, l0);
    CU_ASSERT_EQUAL(suspect_limits_find(l1, "One")->algorithm,
                    SUSPECT_ALGO_BUCKET);
    release();
    mw_live_free(lv);
    /* and at start, the same pair is an error */
    CU_ASSERT_NOT_EQUAL(
        mw_live_new(path_of(conf, "suspect.xml"), &hooks, &lv, NULL),
        SUSPECT_OK);
}

/* At start a bad file is an error with its file:line, and nothing runs. */
static void test_bad_at_start(void)
{
    char conf[TEST_PATH_MAX], want[TEST_PATH_MAX + 8], msg[512];
    suspect_err_t err;
    mw_live_t *lv = NULL;

    put_limits("3");
    put_conf("relative");
    suspect_err_clear(&err);
    CU_ASSERT_NOT_EQUAL(
        mw_live_new(path_of(conf, "suspect.xml"), &hooks, &lv, &err),
        SUSPECT_OK);
    CU_ASSERT_PTR_NULL(lv);
    suspect_err_format(&err, msg, sizeof(msg));
    snprintf(want, sizeof(want), "%s:3: ", conf);
    CU_ASSERT_NSTRING_EQUAL(msg, want, strlen(want));
}

int register_setup_suite(void)
{
    CU_pSuite s = CU_add_suite("setup", suite_init, suite_clean);
    if (s == NULL || !CU_add_test(s, "swap and refuse", test_swap_and_refuse) ||
        !CU_add_test(s, "bad at start", test_bad_at_start) ||
        !CU_add_test(s, "a cost needs a bucket", test_cost_needs_bucket)) {
        return -1;
    }
    return 0;
}
