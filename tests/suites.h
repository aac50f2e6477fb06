/*
 * suites.h - one registration function per test suite; runner.c calls them.
 * Each adds its suite and tests with CU_add_suite/CU_add_test and returns 0,
 * or -1 when CUnit refused (the runner then fails).
 */
#ifndef SUSPECT_TESTS_SUITES_H
#define SUSPECT_TESTS_SUITES_H

int register_error_suite(void);
int register_random_suite(void);
int register_setup_suite(void);
int register_evaluate_suite(void);
int register_meter_suite(void);
int register_keys_suite(void);
int register_memstore_suite(void);
int register_mem_meter_suite(void);
int register_scenarios_suite(void);
int register_beyond_suite(void);
int register_threads_suite(void);
int register_limits_suite(void);
int register_reload_suite(void);
int register_lmdb_suite(void);
int register_redis_suite(void);
int register_failover_suite(void);
int register_request_suite(void);
int register_normalize_suite(void);
int register_collate_suite(void);
int register_multipart_suite(void);
int register_bodies_suite(void);
int register_deny_suite(void);
/* The response watcher's tests, in the deny suite (test_outcome.c). */
struct CU_Suite;
int deny_add_outcome_tests(struct CU_Suite *s);
int register_fcgi_proto_suite(void);
int register_fcgi_server_suite(void);
int register_cgi_suite(void);
int register_upstream_suite(void);
int register_conf_suite(void);
int register_guard_suite(void);
int register_e2e_suite(void);
int register_suspectctl_suite(void);
int register_redis_scan_suite(void);
int register_suspect_cgi_suite(void);
int register_suspect_cgi_policy_suite(void);
int register_abuse_suite(void);
int register_wordpress_suite(void);
int register_faults_suite(void);
int register_dropins_suite(void);
int register_libfcgi_suite(void);
int register_log_suite(void);
int register_sentinel_suite(void);
int register_cluster_suite(void);
int register_control_suite(void);
int register_metrics_suite(void);
int register_operate_suite(void);
int register_inproc_suite(void);

#endif
