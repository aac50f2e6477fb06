/*
 * sentinel_parts.h - tests of the "sentinel" suite that live in files of
 * their own; the suite's registration adds them, with its set-up.
 */
#ifndef SUSPECT_TESTS_SENTINEL_PARTS_H
#define SUSPECT_TESTS_SENTINEL_PARTS_H

#include <CUnit/CUnit.h>

#include "helpers/redisha.h"

/* What a request may take past the store's timeout (ms, scaled): the
 * deadline's rounding up to the millisecond, the wake-up, the work after
 * the last wait.  Its waits for a CPU are not counted (test_ha_queued_ms). */
#define SENTINEL_SLACK_MS 40

/* test_sentinel_kill.c: kill -9 of the master under load (kills it: after
 * it, only tests that need no failover). */
int sentinel_kill_register(CU_pSuite s, test_sentinel_set_t *set);

/* test_sentinel_dead.c: every sentinel paused, no master known (pauses
 * them: the last test of the suite). */
int sentinel_dead_register(CU_pSuite s, test_sentinel_set_t *set);

#endif
