/*
 * lmdb_parts.h - tests of the "lmdb" suite that live in a file of their
 * own, and the helpers they share with test_lmdb.c (which makes a fresh
 * temp dir for every test and removes it after).
 */
#ifndef SUSPECT_TESTS_LMDB_PARTS_H
#define SUSPECT_TESTS_LMDB_PARTS_H

#include <CUnit/CUnit.h>
#include <stddef.h>
#include <stdint.h>

#include "suspect_store.h"

/* A store on the test's file with the given map size (0 = default), no
 * fsync; NULL (and *err) when it cannot be opened. */
suspect_store_t *lmdb_open(size_t map_size, suspect_err_t *err);

/* Decides rule for one value at now; -1 on a store error, else allowed. */
int lmdb_decide_at(suspect_store_t *store, const suspect_rule_t *rule,
                   const char *value, int64_t now_ms);

/* test_lmdb_map.c: the map's bounds: the purge, a full map and what it
 * keeps, a map another process enlarged.  path is the test's store file
 * (filled by the suite's setup before each test). */
int lmdb_map_register(CU_pSuite s, const char *path);

#endif
