/*
 * stores.c - the list of store kinds the shared suites run against:
 * memory, lmdb, redis, and failover (the failover wrapper over Redis, with
 * its lock cache and a memory fallback, Redis up).
 */
#include "stores.h"

#include <CUnit/CUnit.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include "redisha.h"
#include "redisserver.h"
#include "suspect_failover.h"
#include "suspect_lmdb.h"
#include "suspect_redis.h"
#include "util.h"

suspect_store_t *test_memstore(size_t max_entries, unsigned shards)
{
    suspect_memstore_opts_t opts = {max_entries, shards};
    suspect_store_t *store = NULL;

    CU_ASSERT_EQUAL_FATAL(suspect_memstore_new(&opts, &store, NULL),
                          SUSPECT_OK);
    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    return store;
}

int test_count_lock(void *arg, const char *key, size_t len, int64_t until_ms)
{
    (void)key;
    (void)len;
    (void)until_ms;
    (*(int *)arg)++;
    return 0;
}

static suspect_store_t *open_memory(void)
{
    suspect_store_t *store = NULL;
    suspect_memstore_opts_t opts = {1000, 8};
    return suspect_memstore_new(&opts, &store, NULL) == SUSPECT_OK ? store
                                                                   : NULL;
}

static const test_store_kind_t memory_kind = {"memory", NULL, NULL, open_memory,
                                              NULL};

/* The lmdb kind: a fresh database in a new temp dir per open(); the dirs
 * are remembered and removed by teardown(). */
static char **lmdb_dirs;
static size_t lmdb_ndirs;

static suspect_store_t *open_lmdb(void)
{
    suspect_lmdb_opts_t opts = {NULL, 8u << 20, 0, 0, 1};
    suspect_store_t *store = NULL;
    char path[4096], **grown;
    char *dir = test_mkdtemp();

    grown = realloc(lmdb_dirs, (lmdb_ndirs + 1) * sizeof(*lmdb_dirs));
    if (dir == NULL || grown == NULL) {
        free(dir);
        return NULL;
    }
    lmdb_dirs = grown;
    lmdb_dirs[lmdb_ndirs++] = dir;
    snprintf(path, sizeof(path), "%s/suspect.mdb", dir);
    opts.path = path;
    return suspect_lmdb_new(&opts, &store, NULL) == SUSPECT_OK ? store : NULL;
}

static int teardown_lmdb(void)
{
    for (size_t i = 0; i < lmdb_ndirs; i++) {
        test_rmtree(lmdb_dirs[i]);
        free(lmdb_dirs[i]);
    }
    free(lmdb_dirs);
    lmdb_dirs = NULL;
    lmdb_ndirs = 0;
    return 0;
}

static const test_store_kind_t lmdb_kind = {"lmdb", NULL, teardown_lmdb,
                                            open_lmdb, NULL};

/* The failover kind: Redis behind the failover wrapper, on a server of
 * its own. */
static test_redis_t kind_srv;

static int setup_failover(void)
{
    return test_redis_start(&kind_srv, false, NULL);
}

static int teardown_failover(void)
{
    test_redis_stop(&kind_srv);
    return 0;
}

/* A fresh wrapper on a flushed Redis, default options (the lock cache on),
 * timeouts generous enough for the sanitizers. */
static suspect_store_t *open_failover(void)
{
    freeReplyObject(test_redis_cmd(&kind_srv, "FLUSHALL"));
    return test_redis_failover(kind_srv.url, 5000, NULL);
}

static const test_store_kind_t failover_kind = {
    "failover", setup_failover, teardown_failover, open_failover, NULL};

/* The redis kind (tests/policy/redis/test_redis.c) starts its own redis-server.
 */
const test_store_kind_t *const test_store_kinds[] = {&memory_kind,
                                                     &lmdb_kind,
                                                     &test_redis_kind,
                                                     &failover_kind,
                                                     &test_cluster_kind,
                                                     &test_cluster_seed_kind,
                                                     NULL};
