/*
 * stores.h - the store backends the shared policy suites run against.
 *
 * The scenario suite (test_scenarios.c) is registered once per kind listed
 * in test_store_kinds, so every store must give the same decisions.  A kind
 * that needs a server starts it in setup() and stops it in teardown();
 * open() returns a fresh, empty store for one test; the suites build keys
 * with the kind's key options.  The memory store's own suites make
 * theirs with test_memstore().
 */
#ifndef SUSPECT_TESTS_STORES_H
#define SUSPECT_TESTS_STORES_H

#include "suspect_store.h"

typedef struct test_store_kind {
    const char *name;
    int (*setup)(void);    /* 0 on success; NULL = nothing to do */
    int (*teardown)(void); /* 0 on success; NULL = nothing to do */
    suspect_store_t *(*open)(void);
    /* The keys' options (the Cluster's hash tag); NULL = the defaults. */
    const suspect_keyopts_t *keyopts;
} test_store_kind_t;

/* NULL-terminated. */
extern const test_store_kind_t *const test_store_kinds[];

/* A new memory store of max_entries in shards (0: the defaults); a
 * fatal CUnit failure when it cannot be made.  The caller frees it. */
suspect_store_t *test_memstore(size_t max_entries, unsigned shards);

/* A suspect_store_foreach_locked() callback that counts the locks into
 * the int at arg. */
int test_count_lock(void *arg, const char *key, size_t len, int64_t until_ms);

#endif
