/*
 * runner.c - the one CUnit runner of libsuspect's test suite.
 *
 *   suspect-tests            run every suite
 *   suspect-tests NAME...    run only the suites whose names are given
 *   suspect-tests NAME/TEXT  run the tests of suite NAME whose names hold
 *                            TEXT
 *   suspect-tests --list     print the suites' names
 *
 * Run from anywhere: SUSPECT_SRCDIR, SUSPECT_TEST_DATA and
 * SUSPECT_BUILDDIR, when unset, default to the source and build trees it
 * was built in (make check sets them the same way).
 *
 * Exits 0 only when every suite set up and every test and assertion passed:
 * CU_basic_run_tests() returns CUE_SUCCESS even when assertions fail, so the
 * failure counts are read instead.
 */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suites.h"

static int (*const registrars[])(void) = {
    register_error_suite,       register_evaluate_suite,
    register_meter_suite,       register_keys_suite,
    register_memstore_suite,    register_mem_meter_suite,
    register_scenarios_suite,   register_threads_suite,
    register_limits_suite,      register_reload_suite,
    register_lmdb_suite,        register_redis_suite,
    register_failover_suite,    register_request_suite,
    register_deny_suite,        register_fcgi_proto_suite,
    register_fcgi_server_suite, register_cgi_suite,
    register_upstream_suite,    register_conf_suite,
    register_guard_suite,       register_e2e_suite,
    register_suspect_cgi_suite, register_suspectctl_suite,
    register_redis_scan_suite,  register_abuse_suite,
    register_wordpress_suite,   register_faults_suite,
    register_dropins_suite,     register_libfcgi_suite,
    register_normalize_suite,   register_collate_suite,
    register_log_suite,         register_beyond_suite,
    register_sentinel_suite,    register_cluster_suite,
    register_control_suite,     register_metrics_suite,
    register_operate_suite,     register_inproc_suite,
    register_multipart_suite,   register_suspect_cgi_policy_suite,
    register_random_suite,      register_setup_suite,
    register_bodies_suite,
};

/* Whether arg names suite ("SUITE", or "SUITE/TEXT" for its tests whose
 * name holds TEXT). */
static int names_suite(const char *arg, const char *suite)
{
    size_t n = strcspn(arg, "/");

    return strlen(suite) == n && strncmp(arg, suite, n) == 0;
}

/* Deactivates the suites not named on the command line, and in a suite
 * named as "SUITE/TEXT", the tests whose name does not hold TEXT. */
static void select_suites(int argc, char **argv)
{
    CU_pSuite suite;

    if (argc < 2) {
        return;
    }
    for (suite = CU_get_registry()->pSuite; suite != NULL;
         suite = suite->pNext) {
        int wanted = 0, all = 0;

        for (int i = 1; i < argc; i++) {
            wanted |= names_suite(argv[i], suite->pName);
            all |= strcmp(argv[i], suite->pName) == 0;
        }
        CU_set_suite_active(suite, wanted ? CU_TRUE : CU_FALSE);
        for (CU_pTest t = suite->pTest; wanted && !all && t != NULL;
             t = t->pNext) {
            int keep = 0;

            for (int i = 1; i < argc; i++) {
                const char *slash = strchr(argv[i], '/');

                keep |= names_suite(argv[i], suite->pName) && slash != NULL &&
                        strstr(t->pName, slash + 1) != NULL;
            }
            CU_set_test_active(t, keep ? CU_TRUE : CU_FALSE);
        }
    }
}

/* The trees this runner was built from, for the variables not set. */
static void default_dirs(void)
{
#if defined(SUSPECT_BUILT_SRCDIR) && defined(SUSPECT_BUILT_BUILDDIR)
    setenv("SUSPECT_SRCDIR", SUSPECT_BUILT_SRCDIR, 0);
    setenv("SUSPECT_TEST_DATA", SUSPECT_BUILT_SRCDIR "/tests/data", 0);
    setenv("SUSPECT_BUILDDIR", SUSPECT_BUILT_BUILDDIR, 0);
#endif
}

int main(int argc, char **argv)
{
    unsigned failed_suites, failed_tests, failed_asserts, ran_tests;

    default_dirs();

    if (CU_initialize_registry() != CUE_SUCCESS) {
        fprintf(stderr, "suspect-tests: %s\n", CU_get_error_msg());
        return 1;
    }
    for (size_t i = 0; i < sizeof(registrars) / sizeof(registrars[0]); i++) {
        if (registrars[i]() != 0) {
            fprintf(stderr, "suspect-tests: cannot register suite %zu: %s\n", i,
                    CU_get_error_msg());
            CU_cleanup_registry();
            return 1;
        }
    }
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (CU_pSuite s = CU_get_registry()->pSuite; s != NULL; s = s->pNext) {
            printf("%s\n", s->pName);
        }
        CU_cleanup_registry();
        return 0;
    }
    select_suites(argc, argv);
    /* What was left out on purpose is not a failure. */
    CU_set_fail_on_inactive(argc < 2 ? CU_TRUE : CU_FALSE);
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();

    failed_suites = CU_get_number_of_suites_failed() +
                    CU_get_number_of_suites_inactive() * (argc < 2);
    failed_tests = CU_get_number_of_tests_failed();
    failed_asserts = CU_get_number_of_failures();
    ran_tests = CU_get_number_of_tests_run();
    CU_cleanup_registry();

    printf("\nsuspect-tests: %u failed assertions, %u suites failed\n",
           failed_asserts, failed_suites);
    if (ran_tests == 0) {
        fprintf(stderr, "suspect-tests: no test ran\n");
        return 1;
    }
    printf("suspect-tests: %u passed, %u failed\n", ran_tests - failed_tests,
           failed_tests);
    return failed_suites || failed_tests || failed_asserts ? 1 : 0;
}
