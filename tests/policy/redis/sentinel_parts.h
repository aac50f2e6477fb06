/*
 * sentinel_parts.h - tests of the "sentinel" suite that live in files of
 * their own; the suite's registration adds them, with its set-up.
 */
#ifndef SUSPECT_TESTS_SENTINEL_PARTS_H
#define SUSPECT_TESTS_SENTINEL_PARTS_H

#include <CUnit/CUnit.h>

#include "helpers/redisha.h"

/* test_sentinel_kill.c: kill -9 of the master under load (kills it: the
 * last test of the suite). */
int sentinel_kill_register(CU_pSuite s, test_sentinel_set_t *set);

#endif
