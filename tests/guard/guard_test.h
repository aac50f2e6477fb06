/*
 * guard_test.h - what the files of the "guard" suite share: a fixture
 * (a hand-built configuration compiled into a guard, limits parsed from
 * inline XML, a memory store) and the per-file registration functions.
 */
#ifndef SUSPECT_TESTS_GUARD_TEST_H
#define SUSPECT_TESTS_GUARD_TEST_H

#include <CUnit/CUnit.h>
#include <stdint.h>

#include "conf/conf_internal.h"
#include "guard/guard.h"

#define GT_NOW 1700000000000LL

/* Limits of the fixture: One (1 per 60 s), Two (2 per 120 s),
 * SecureForgotAccount (3 per 1800 s, then locked 1800 s), Many (1000 per
 * 60 s), GT_LONG_ACTION (1 per 60 s) and OtpSend (a token bucket of 6,
 * 5 tokens back per 60 s). */
#define GT_LONG_ACTION                                                         \
    "A_long_action_name_that_expands_templates_0123456789_abcdefghijk"

typedef struct gt_fixture {
    conf_snap_t snap; /* the configuration, as the loader lays it out */
    mw_guard_t *g;
    suspect_limits_t *lim;
    suspect_store_t *store;
} gt_fixture_t;

/* The n bytes at s as a string that lives, unchanged, until the runner
 * exits (configurations borrow their names): equal names share one entry
 * of an append-only table, so no later call overwrites one. */
const char *gt_name(const char *s, size_t n);

/* An identity of type from "kind:name kind:name ..." (client-ip alone). */
suspect_conf_identity_t gt_ident(const char *type, const char *from);

/* A route (exact path, no methods, no parameter, missing = skip). */
suspect_conf_route_t gt_route(const char *action, const char *path,
                              suspect_conf_identity_t *ids, size_t n);

/* A configuration of routes[0..n) (borrowed), other fields at defaults. */
suspect_conf_t gt_conf(const suspect_conf_route_t *routes, size_t n);

/* Compiles conf (copied) into f with fresh limits and store; 0 or -1. */
int gt_open(gt_fixture_t *f, const suspect_conf_t *conf);

/* Frees f's guard, limits and store; checks the conf's references. */
void gt_close(gt_fixture_t *f);

/* The verdict on a request of vars ("NAME=value", NULL-terminated) and
 * body (NULL: none) at GT_NOW, or at now_ms. */
mw_verdict_t gt_decide(gt_fixture_t *f, const char *const *vars,
                       const char *body);
mw_verdict_t gt_decide_at(gt_fixture_t *f, const char *const *vars,
                          const char *body, int64_t now_ms);

/* gt_decide() on POST uri with QUERY_STRING qs (NULL: none), a form body
 * (NULL: none) and one more variable extra ("NAME=value", NULL: none). */
mw_verdict_t gt_post(gt_fixture_t *f, const char *uri, const char *qs,
                     const char *body, const char *extra);

/* Hits in the window of action's seed key for value (9999 on error). */
uint32_t gt_count(gt_fixture_t *f, const char *action, const char *value);

/* Room for a header value gt_header() writes. */
#define GT_HEADER_MAX 256

/* Writes the value of header line name in CGI response r (or "<none>")
 * into value (the caller's) and returns it. */
const char *gt_header(char value[GT_HEADER_MAX], const char *r,
                      const char *name);

/* A store whose every call fails (SUSPECT_E_STORE); suspect_store_free()
 * frees it. */
suspect_store_t *gt_failing_store(void);

/* Registration of the other files' tests in suite s; 0 or -1. */
int guard_register_routes(CU_pSuite s);
int guard_register_identities(CU_pSuite s);
int guard_register_decisions(CU_pSuite s);
int guard_register_modes(CU_pSuite s);
int guard_register_bypass(CU_pSuite s);
int guard_register_readings(CU_pSuite s);
int guard_register_cgipm(CU_pSuite s);
int guard_register_challenges(CU_pSuite s);
int guard_register_devices(CU_pSuite s);
int guard_register_multipart(CU_pSuite s);
int guard_register_calls(CU_pSuite s);
int guard_register_lists(CU_pSuite s);
int guard_register_targets(CU_pSuite s);

#endif
