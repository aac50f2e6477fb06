/*
 * test_lmdb_map.c - the LMDB store's map and its bounds (suite "lmdb",
 * registered by test_lmdb.c, which makes a fresh temp dir per test):
 *
 *   - the incremental purge keeps a small map from filling under 50,000
 *     short-lived identities;
 *   - a map full of live ones gives SUSPECT_E_FULL with a clear message,
 *     and recovers once they expire;
 *   - a flood of new identities stops at the counters' share of the map
 *     and leaves the locks, the identities held and new locks their room;
 *     the growth of the identities held past the map evicts counters,
 *     never a lock;
 *   - a map another process enlarged is adopted.
 * Time is a parameter; nothing sleeps.
 */
#include <CUnit/CUnit.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lmdb_parts.h"
#include "suspect_lmdb.h"
#include "helpers/util.h"

#define T0  1710000012345LL
#define SEC 1000LL

static const char *path; /* the test's store file */

static const suspect_rule_t basic = {"Burst", 100, 3600, 0, 0, 0,
                                     0,       0,   0,    0, 0};
static const suspect_rule_t login = {"Login", 2, 86400, 86400, 0, 0,
                                     0,       0, 0,     0,     0};
static const suspect_rule_t brief = {"Brief", 1, 1, 0, 0, 0, 0, 0, 0, 0, 0};

/* 50,000 identities of one hit each, a 1 s window, 100 ms apart: without
 * purging they would need several MiB; the map has 512 KiB. */
static void test_purge_keeps_bounded(void)
{
    suspect_store_t *store = lmdb_open(512 * 1024, NULL);
    struct stat sb;
    size_t entries = 0, purged = 0;
    int failures = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    for (int i = 0; i < 50000; i++) {
        char value[32];
        snprintf(value, sizeof(value), "id%d", i);
        failures += lmdb_decide_at(store, &brief, value, T0 + i * 100LL) != 1;
    }
    CU_ASSERT_EQUAL(failures, 0);
    CU_ASSERT_EQUAL(suspect_lmdb_entries(store, &entries, NULL), SUSPECT_OK);
    CU_ASSERT(entries < 1000);
    CU_ASSERT_EQUAL(stat(path, &sb), 0);
    CU_ASSERT(sb.st_size <= 512 * 1024);

    /* A full purge later leaves nothing. */
    CU_ASSERT_EQUAL(
        suspect_lmdb_purge(store, T0 + 50000 * 100LL + 2 * SEC, &purged, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(purged, entries);
    CU_ASSERT_EQUAL(suspect_lmdb_entries(store, &entries, NULL), SUSPECT_OK);
    CU_ASSERT_EQUAL(entries, 0);
    suspect_store_free(store);
}

static void test_map_full(void)
{
    suspect_store_t *store = lmdb_open(128 * 1024, NULL);
    suspect_key_t key;
    suspect_decision_t d;
    suspect_status_t st;
    suspect_err_t err;
    suspect_rc_t rc = SUSPECT_OK;
    int stored = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    suspect_err_clear(&err);
    for (int i = 0; i < 100000 && rc == SUSPECT_OK; i++) {
        char value[64];
        snprintf(value, sizeof(value), "a-rather-long-identity-value-%d", i);
        key = test_key(basic.action, value);
        rc = suspect_store_decide(store, &basic, &key, 1, T0, &d, &err);
        stored += rc == SUSPECT_OK;
    }
    CU_ASSERT_EQUAL(rc, SUSPECT_E_FULL);
    CU_ASSERT(stored > 100);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "store full (map size 131072"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, path));
    CU_ASSERT_FALSE(d.allowed);

    /* What was stored is still there and readable. */
    key = test_key(basic.action, "a-rather-long-identity-value-0");
    CU_ASSERT_EQUAL(suspect_store_status(store, &basic, &key, T0, &st, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(st.in_window, 1);

    /* Once the hits expire, a decision makes room and passes. */
    CU_ASSERT_EQUAL(lmdb_decide_at(store, &basic, "newcomer", T0 + 3601 * SEC),
                    1);
    suspect_store_free(store);
}

/* Whether the login lock of value holds at now, with its end at until. */
static bool login_locked(suspect_store_t *store, const char *value,
                         int64_t now_ms, int64_t until_ms)
{
    suspect_key_t key = test_key(login.action, value);
    suspect_decision_t d;

    return suspect_store_decide(store, &login, &key, 1, now_ms, &d, NULL) ==
               SUSPECT_OK &&
           !d.allowed && d.locked && d.restriction_end_ms == until_ms;
}

/* The in_window of value under rule at now, -1 on an error. */
static int in_window(suspect_store_t *store, const suspect_rule_t *rule,
                     const char *value, int64_t now_ms)
{
    suspect_key_t key = test_key(rule->action, value);
    suspect_status_t st;

    if (suspect_store_status(store, rule, &key, now_ms, &st, NULL) !=
        SUSPECT_OK) {
        return -1;
    }
    return (int)st.in_window;
}

/* A flood of new identities fills the map: it stops at the counters'
 * share, and the rest keeps the locks and what the store holds; then the
 * growth of the identities held fills the rest: counters are evicted,
 * locks never. */
static void test_map_full_locks(void)
{
    suspect_store_t *store = lmdb_open(1 << 20, NULL);
    const int64_t day = 86400 * SEC;
    suspect_key_t keys[2];
    suspect_decision_t d;
    suspect_err_t err;
    suspect_rc_t rc = SUSPECT_OK;
    size_t before = 0, after = 0;
    char value[64];
    int stored = 0, failures = 0, refused = 0, lost = 0, rounds;

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    for (int i = 0; i < 20; i++) { /* locked for a day */
        snprintf(value, sizeof(value), "locked-%d", i);
        lmdb_decide_at(store, &login, value, T0);
        lmdb_decide_at(store, &login, value, T0);
        CU_ASSERT_EQUAL(lmdb_decide_at(store, &login, value, T0), 0);
    }
    CU_ASSERT_EQUAL(lmdb_decide_at(store, &login, "half", T0), 1);

    suspect_err_clear(&err);
    for (int i = 0; i < 200000 && rc == SUSPECT_OK; i++) {
        suspect_key_t key;

        snprintf(value, sizeof(value), "flood-%d", i);
        key = test_key(basic.action, value);
        rc = suspect_store_decide(store, &basic, &key, 1, T0, &d, &err);
        stored += rc == SUSPECT_OK;
    }
    fprintf(stderr, "\n  1 MiB map: %d new identities, then full ", stored);
    CU_ASSERT_EQUAL(rc, SUSPECT_E_FULL);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "no room for a new identity"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "store full (map size 1048576"));

    /* The locks hold, from the store itself. */
    for (int i = 0; i < 20; i++) {
        snprintf(value, sizeof(value), "locked-%d", i);
        lost += !login_locked(store, value, T0 + SEC, T0 + day);
    }
    CU_ASSERT_EQUAL(lost, 0);
    /* An identity held is still counted, and gets its lock. */
    CU_ASSERT_EQUAL(lmdb_decide_at(store, &login, "half", T0 + SEC), 1);
    CU_ASSERT_EQUAL(lmdb_decide_at(store, &login, "half", T0 + 2 * SEC), 0);
    CU_ASSERT_TRUE(
        login_locked(store, "half", T0 + 3 * SEC, T0 + 2 * SEC + day));
    /* An operator's block on a new identity takes the room kept. */
    keys[0] = test_key(login.action, "blocked");
    CU_ASSERT_EQUAL(suspect_store_block(store, &keys[0], T0, T0 + day, NULL),
                    SUSPECT_OK);
    CU_ASSERT_TRUE(login_locked(store, "blocked", T0 + SEC, T0 + day));
    /* A held identity and a new one in one decision: the held one is
     * counted, the new one is not stored. */
    keys[0] = test_key(basic.action, "flood-0");
    keys[1] = test_key(basic.action, "newcomer");
    CU_ASSERT_EQUAL(
        suspect_store_decide(store, &basic, keys, 2, T0 + SEC, &d, NULL),
        SUSPECT_OK);
    CU_ASSERT_TRUE(d.allowed);
    CU_ASSERT_EQUAL(in_window(store, &basic, "flood-0", T0 + SEC), 2);
    CU_ASSERT_EQUAL(in_window(store, &basic, "newcomer", T0 + SEC), 0);

    /* The identities held grow until the map is full: the counters least
     * recently hit are evicted to make room, the locks stay. */
    CU_ASSERT_EQUAL(suspect_lmdb_entries(store, &before, NULL), SUSPECT_OK);
    after = before;
    for (rounds = 0; rounds < 100 && after >= before; rounds++) {
        for (int i = rounds % 2; i < stored; i += 2) {
            int64_t now = T0 + (10 + rounds) * SEC;

            snprintf(value, sizeof(value), "flood-%d", i);
            if (lmdb_decide_at(store, &basic, value, now) < 0) {
                /* only one evicted may be refused: it is new again */
                refused++;
                failures += in_window(store, &basic, value, now) != 0;
            }
        }
        CU_ASSERT_EQUAL(suspect_lmdb_entries(store, &after, NULL), SUSPECT_OK);
    }
    fprintf(stderr,
            "\n  growth: %zu -> %zu records in %d rounds, %d evicted ones "
            "refused as new ",
            before, after, rounds, refused);
    CU_ASSERT(after < before);
    CU_ASSERT_EQUAL(failures, 0);
    for (int i = 0; i < 20; i++) {
        snprintf(value, sizeof(value), "locked-%d", i);
        lost += !login_locked(store, value, T0 + 200 * SEC, T0 + day);
    }
    CU_ASSERT_EQUAL(lost, 0);
    CU_ASSERT_TRUE(
        login_locked(store, "half", T0 + 200 * SEC, T0 + 2 * SEC + day));
    CU_ASSERT_TRUE(login_locked(store, "blocked", T0 + 200 * SEC, T0 + day));
    suspect_store_free(store);
}

/* Another process opens the file with a larger map and fills past this
 * store's map: this store adopts the larger map (MDB_MAP_RESIZED). */
static void test_map_enlarged_elsewhere(void)
{
    suspect_store_t *store = lmdb_open(128 * 1024, NULL);
    suspect_key_t key = test_key(basic.action, "big-0");
    suspect_status_t st;
    int status = 0;
    pid_t pid;

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    CU_ASSERT_EQUAL(lmdb_decide_at(store, &basic, "small", T0), 1);
    pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        suspect_store_t *big = lmdb_open(4 * 1024 * 1024, NULL);
        int ok = big != NULL;
        for (int i = 0; ok && i < 5000; i++) {
            char value[64];
            snprintf(value, sizeof(value), "big-%d", i);
            ok = lmdb_decide_at(big, &basic, value, T0) == 1;
        }
        suspect_store_free(big);
        suspect_store_free(store); /* the parent's: abandoned, not closed */
        _exit(ok ? 0 : 1);
    }
    CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
    CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CU_ASSERT_EQUAL(lmdb_decide_at(store, &basic, "small", T0 + 1), 1);
    CU_ASSERT_EQUAL(suspect_store_status(store, &basic, &key, T0, &st, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(st.in_window, 1);
    suspect_store_free(store);
}

int lmdb_map_register(CU_pSuite s, const char *store_path)
{
    static const struct {
        const char *name;
        CU_TestFunc fn;
    } tests[] = {
        {"purge keeps the map bounded", test_purge_keeps_bounded},
        {"map full", test_map_full},
        {"map full: locks kept", test_map_full_locks},
        {"map enlarged by another process", test_map_enlarged_elsewhere},
    };

    path = store_path;
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return 0;
}
