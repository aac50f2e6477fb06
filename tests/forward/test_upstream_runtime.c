/*
 * test_upstream_runtime.c - suite "upstream", the daemon's runtime and its
 * reloads: a suspect.xml that changes a setting bound to what was built at
 * start (<Server mode>: how every request is answered and whether an
 * upstream client exists at all; <Upstream maxIdle>: the size of its pool)
 * is refused as a whole and logged, and the running configuration stays;
 * one that changes only live settings is applied.
 *
 * Real files in the suite's temp dir, the runtime's own loaders, the log
 * captured from stderr.  No upstream needs to run: nothing is forwarded.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/runtime.h"
#include "upstream_test.h"
#include "helpers/util.h"

static const char limits_xml[] =
    "<ArrayOfSuspectUsageSettingEntity>\n"
    "<SuspectUsageSettingEntity Action='Login' LimitCount='5' "
    "LimitDuration='60'/>\n"
    "</ArrayOfSuspectUsageSettingEntity>\n";

/* Writes dir/suspect.xml: mode, maxIdle, formMax and <Upstream>'s other
 * attributes (more) as given, an <Upstream> in every mode (ignored with a
 * warning unless forward). */
static int write_conf_more(const char *dir, const char *mode, int max_idle,
                           const char *form_max, const char *more)
{
    char path[4200], text[5000];

    snprintf(path, sizeof(path), "%s/suspect.xml", dir);
    snprintf(text, sizeof(text),
             "<Suspect>\n"
             "  <Server mode='%s' formMax='%s'/>\n"
             "  <Limits path='limits.xml'/>\n"
             "  <Upstream address='unix:%s/php.sock' maxIdle='%d' %s/>\n"
             "  <Route action='Login' path='/login'>\n"
             "    <Identity type='Ip' from='client-ip'/>\n"
             "  </Route>\n"
             "</Suspect>\n",
             mode, form_max, dir, max_idle, more);
    return test_write_file(path, text, strlen(text));
}

static int write_conf(const char *dir, const char *mode, int max_idle,
                      const char *form_max)
{
    return write_conf_more(dir, mode, max_idle, form_max, "");
}

/* Reloads rt (forced, as SIGHUP does); the number of files swapped in,
 * and the log in *log (malloc'ed). */
static int reload(mw_runtime_t *rt, char **log)
{
    int saved = up_capture_start();
    int n = mw_runtime_reload(rt, true, NULL);

    *log = up_capture_end(saved);
    return n;
}

static bool contains(const char *log, const char *s)
{
    return log != NULL && strstr(log, s) != NULL;
}

/* Starts a runtime on dir/suspect.xml (written first) in mode. */
static mw_runtime_t *runtime_start(const char *dir, const char *mode)
{
    char path[4200];
    mw_runtime_t *rt = NULL;
    suspect_err_t err;

    snprintf(path, sizeof(path), "%s/limits.xml", dir);
    CU_ASSERT_FATAL(test_write_file(path, limits_xml, sizeof(limits_xml) - 1) ==
                    0);
    CU_ASSERT_FATAL(write_conf(dir, mode, 4, "64K") == 0);
    snprintf(path, sizeof(path), "%s/suspect.xml", dir);
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL_FATAL(mw_runtime_new(path, NULL, &rt, &err), SUSPECT_OK);
    return rt;
}

/* Deciding modes: auth-request -> authorizer changes what every request
 * is answered, though neither has a forwarder: refused; formMax is live. */
static void test_runtime_mode_change(void)
{
    char *dir = test_mkdtemp(), *log = NULL;
    mw_runtime_t *rt;

    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    rt = runtime_start(dir, "auth-request");
    CU_ASSERT_EQUAL(mw_runtime_conf(rt)->mode, SUSPECT_MODE_AUTH_REQUEST);
    CU_ASSERT(write_conf(dir, "authorizer", 4, "64K") == 0);
    CU_ASSERT_EQUAL(reload(rt, &log), 0);
    CU_ASSERT(contains(log, "suspect.xml: <Server> changed: restart "
                            "suspect-fcgi to apply it; keeping the running "
                            "configuration"));
    CU_ASSERT(!contains(log, "reloaded"));
    free(log);
    /* formMax is live: applied (the mode as it runs). */
    CU_ASSERT(write_conf(dir, "auth-request", 4, "128K") == 0);
    CU_ASSERT_EQUAL(reload(rt, &log), 1);
    CU_ASSERT(contains(log, "suspect.xml: reloaded (1 routes)"));
    CU_ASSERT(!contains(log, "changed: restart"));
    free(log);
    /* From the reloaded configuration: still refused. */
    CU_ASSERT(write_conf(dir, "forward", 4, "128K") == 0);
    CU_ASSERT_EQUAL(reload(rt, &log), 0);
    CU_ASSERT(contains(log, "<Server> changed: restart"));
    free(log);
    mw_runtime_free(rt);
    test_rmtree(dir);
    free(dir);
}

/* Forward mode: the upstream client was built at start; a new mode, pool
 * size or passParams is refused. */
static void test_runtime_upstream_change(void)
{
    char *dir = test_mkdtemp(), *log = NULL;
    mw_runtime_t *rt;

    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    rt = runtime_start(dir, "forward");
    CU_ASSERT(write_conf(dir, "auth-request", 4, "64K") == 0);
    CU_ASSERT_EQUAL(reload(rt, &log), 0);
    CU_ASSERT(contains(log, "<Server> changed: restart"));
    free(log);
    CU_ASSERT(write_conf(dir, "forward", 0, "64K") == 0);
    CU_ASSERT_EQUAL(reload(rt, &log), 0);
    CU_ASSERT(contains(log, "<Upstream> changed: restart"));
    free(log);
    CU_ASSERT(write_conf_more(dir, "forward", 4, "64K",
                              "passParams='PHP_VALUE'") == 0);
    CU_ASSERT_EQUAL(reload(rt, &log), 0);
    CU_ASSERT(contains(log, "<Upstream> changed: restart"));
    free(log);
    CU_ASSERT(write_conf(dir, "forward", 4, "32K") == 0);
    CU_ASSERT_EQUAL(reload(rt, &log), 1);
    free(log);
    mw_runtime_free(rt);
    test_rmtree(dir);
    free(dir);
}

int upstream_runtime_register(CU_pSuite s)
{
    if (!CU_add_test(s, "runtime: mode change refused",
                     test_runtime_mode_change) ||
        !CU_add_test(s, "runtime: upstream change refused",
                     test_runtime_upstream_change)) {
        return -1;
    }
    return 0;
}
