/*
 * test_lmdb.c - the LMDB store's own suite ("lmdb"): what the shared
 * scenarios (suite "scenarios-lmdb") cannot show.
 *
 *   - exactness across processes: forked children, each with its own
 *     store on one file, decide on one identity; exactly LimitCount pass,
 *     at a fixed now and window after window;
 *   - exactness across threads sharing one store;
 *   - a store used after fork() reopens itself in the child;
 *   - a 24 h lock survives closing and reopening (a restart);
 *   - (test_lmdb_map.c) the map's bounds: the purge, a full map, a map
 *     another process enlarged;
 *   - files are created 0600; a file that is not LMDB is refused clearly;
 *   - keys longer than LMDB's limit are hashed, and kept apart;
 *   - the operator's listing of live locks.
 * Every test gets a fresh temp dir, removed after it.  Time is a parameter;
 * nothing sleeps.
 */
#include <CUnit/CUnit.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lmdb_parts.h"
#include "suites.h"
#include "suspect_lmdb.h"
#include "helpers/util.h"

#define T0  1710000012345LL
#define SEC 1000LL

#define CHILDREN  4
#define PER_CHILD 500
#define PHASES    4

static char *dir;
static char path[4096];

static const suspect_rule_t basic = {"Burst", 100, 3600, 0, 0, 0,
                                     0,       0,   0,    0, 0};
static const suspect_rule_t phased = {"Phased", 50, 10, 0, 0, 0, 0, 0, 0, 0, 0};
static const suspect_rule_t login = {"Login", 2, 86400, 86400, 0, 0,
                                     0,       0, 0,     0,     0};

static void make_dir(void)
{
    dir = test_mkdtemp();
    snprintf(path, sizeof(path), "%s/suspect.mdb", dir != NULL ? dir : "/");
}

static void remove_dir(void)
{
    if (dir != NULL) {
        test_rmtree(dir);
        free(dir);
        dir = NULL;
    }
}

suspect_store_t *lmdb_open(size_t map_size, suspect_err_t *err)
{
    suspect_lmdb_opts_t opts;
    suspect_store_t *store = NULL;

    memset(&opts, 0, sizeof(opts));
    opts.path = path;
    opts.map_size = map_size;
    opts.no_sync = 1;
    if (suspect_lmdb_new(&opts, &store, err) != SUSPECT_OK) {
        return NULL;
    }
    return store;
}

int lmdb_decide_at(suspect_store_t *store, const suspect_rule_t *rule,
                   const char *value, int64_t now_ms)
{
    suspect_key_t key = test_key(rule->action, value);
    suspect_decision_t d;

    if (suspect_store_decide(store, rule, &key, 1, now_ms, &d, NULL) !=
        SUSPECT_OK) {
        return -1;
    }
    return d.allowed ? 1 : 0;
}

/* ---- processes and threads ------------------------------------------------
 */

/* In a child: opens its own store and decides PER_CHILD times at one now;
 * writes how many passed (or -1) to fd and exits. */
static void child_fixed_now(int fd)
{
    suspect_store_t *store = lmdb_open(0, NULL);
    int32_t admitted = store != NULL ? 0 : -1;

    for (int i = 0; store != NULL && i < PER_CHILD; i++) {
        int r = lmdb_decide_at(store, &basic, "shared", T0);
        admitted = r < 0 || admitted < 0 ? -1 : admitted + r;
    }
    suspect_store_free(store);
    _exit(write(fd, &admitted, sizeof(admitted)) == sizeof(admitted) ? 0 : 1);
}

/* Reaps every child; CU-fails when one did not exit 0. */
static void reap(const pid_t *pids, int n)
{
    for (int i = 0; i < n; i++) {
        int status = 0;
        CU_ASSERT_EQUAL(waitpid(pids[i], &status, 0), pids[i]);
        CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
}

static void test_processes_fixed_now(void)
{
    pid_t pids[CHILDREN];
    int fds[CHILDREN][2];
    int32_t total = 0;
    suspect_store_t *store;
    suspect_key_t key = test_key(basic.action, "shared");
    suspect_status_t st;

    for (int i = 0; i < CHILDREN; i++) {
        CU_ASSERT_FATAL(pipe(fds[i]) == 0);
        pids[i] = fork();
        CU_ASSERT_FATAL(pids[i] >= 0);
        if (pids[i] == 0) {
            child_fixed_now(fds[i][1]);
        }
        close(fds[i][1]);
    }
    for (int i = 0; i < CHILDREN; i++) {
        int32_t got = -1;
        CU_ASSERT_EQUAL(read(fds[i][0], &got, sizeof(got)), sizeof(got));
        CU_ASSERT(got >= 0);
        total += got;
        close(fds[i][0]);
    }
    reap(pids, CHILDREN);
    CU_ASSERT_EQUAL(total, (int32_t)basic.limit_count);

    store = lmdb_open(0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    CU_ASSERT_EQUAL(suspect_store_status(store, &basic, &key, T0, &st, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(st.in_window, basic.limit_count);
    suspect_store_free(store);
}

/* In a child: for each phase, waits for the parent's go, decides
 * PER_CHILD / PHASES times with now rising inside the phase's window, and
 * reports how many passed. */
static void child_phases(int go, int res)
{
    suspect_store_t *store = lmdb_open(0, NULL);
    int ok = store != NULL;

    for (int p = 0; ok && p < PHASES; p++) {
        int64_t base = T0 + p * (int64_t)phased.window_s * SEC;
        int32_t admitted = 0;
        char c;
        ok = read(go, &c, 1) == 1;
        for (int k = 0; ok && k < PER_CHILD / PHASES; k++) {
            int r = lmdb_decide_at(store, &phased, "shared", base + k);
            ok = r >= 0;
            admitted += r;
        }
        admitted = ok ? admitted : -1;
        ok = write(res, &admitted, sizeof(admitted)) == sizeof(admitted) && ok;
    }
    suspect_store_free(store);
    _exit(ok ? 0 : 1);
}

static void test_processes_across_windows(void)
{
    pid_t pids[CHILDREN];
    int go[CHILDREN][2], res[CHILDREN][2];

    for (int i = 0; i < CHILDREN; i++) {
        CU_ASSERT_FATAL(pipe(go[i]) == 0 && pipe(res[i]) == 0);
        pids[i] = fork();
        CU_ASSERT_FATAL(pids[i] >= 0);
        if (pids[i] == 0) {
            close(go[i][1]);
            close(res[i][0]);
            child_phases(go[i][0], res[i][1]);
        }
        close(go[i][0]);
        close(res[i][1]);
    }
    /* A barrier per phase: every child's hits of a phase are in the
     * window of every decision of that phase, and out of the next one. */
    for (int p = 0; p < PHASES; p++) {
        int32_t total = 0;
        for (int i = 0; i < CHILDREN; i++) {
            CU_ASSERT_EQUAL(write(go[i][1], "g", 1), 1);
        }
        for (int i = 0; i < CHILDREN; i++) {
            int32_t got = -1;
            CU_ASSERT_EQUAL(read(res[i][0], &got, sizeof(got)), sizeof(got));
            total += got;
        }
        CU_ASSERT_EQUAL(total, (int32_t)phased.limit_count);
    }
    for (int i = 0; i < CHILDREN; i++) {
        close(go[i][1]);
        close(res[i][0]);
    }
    reap(pids, CHILDREN);
}

typedef struct thread_arg {
    suspect_store_t *store;
    int admitted; /* -1 on a store error */
} thread_arg_t;

static void *thread_main(void *p)
{
    thread_arg_t *a = p;
    for (int i = 0; i < PER_CHILD / 2 && a->admitted >= 0; i++) {
        int r = lmdb_decide_at(a->store, &basic, "threads", T0);
        a->admitted = r < 0 ? -1 : a->admitted + r;
    }
    return NULL;
}

static void test_threads(void)
{
    suspect_store_t *store = lmdb_open(0, NULL);
    pthread_t th[CHILDREN];
    thread_arg_t args[CHILDREN];
    int total = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    for (int i = 0; i < CHILDREN; i++) {
        args[i].store = store;
        args[i].admitted = 0;
        CU_ASSERT_FATAL(pthread_create(&th[i], NULL, thread_main, &args[i]) ==
                        0);
    }
    for (int i = 0; i < CHILDREN; i++) {
        pthread_join(th[i], NULL);
        CU_ASSERT(args[i].admitted >= 0);
        total += args[i].admitted;
    }
    CU_ASSERT_EQUAL(total, (int)basic.limit_count);
    suspect_store_free(store);
}

/* A child that uses the parent's store must not share its environment. */
static void test_used_after_fork(void)
{
    suspect_store_t *store = lmdb_open(0, NULL);
    suspect_key_t key = test_key(login.action, "forked");
    suspect_status_t st;
    int status = 0;
    pid_t pid;

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    CU_ASSERT_EQUAL(lmdb_decide_at(store, &login, "forked", T0), 1);
    pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        int r = lmdb_decide_at(store, &login, "forked", T0 + 1);
        suspect_store_free(store);
        _exit(r == 1 ? 0 : 1);
    }
    CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
    CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CU_ASSERT_EQUAL(
        suspect_store_status(store, &login, &key, T0 + 2, &st, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(st.in_window, 2);
    suspect_store_free(store);
}

/* ---- persistence, bounds, files ------------------------------------------
 */

static void test_survives_reopen(void)
{
    suspect_store_t *store = lmdb_open(0, NULL);
    suspect_key_t key = test_key(login.action, "member");
    suspect_decision_t d;
    suspect_status_t st;
    int64_t until = T0 + 2 * SEC + 86400 * SEC;

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    CU_ASSERT_EQUAL(lmdb_decide_at(store, &login, "member", T0), 1);
    CU_ASSERT_EQUAL(lmdb_decide_at(store, &login, "member", T0 + SEC), 1);
    CU_ASSERT_EQUAL(lmdb_decide_at(store, &login, "member", T0 + 2 * SEC), 0);
    suspect_store_free(store);

    /* "Restart": a new store on the same file, a day later minus 1 s. */
    store = lmdb_open(0, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    CU_ASSERT_EQUAL(
        suspect_store_decide(store, &login, &key, 1, until - SEC, &d, NULL),
        SUSPECT_OK);
    CU_ASSERT_FALSE(d.allowed);
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(d.restriction_end_ms, until);
    CU_ASSERT_EQUAL(
        suspect_store_status(store, &login, &key, until - SEC, &st, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(st.locked_until_ms, until);
    CU_ASSERT_EQUAL(lmdb_decide_at(store, &login, "member", until), 1);
    suspect_store_free(store);
}

static void test_permissions(void)
{
    suspect_store_t *store = lmdb_open(0, NULL);
    char lock[4200];
    struct stat sb;

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    CU_ASSERT_EQUAL(stat(path, &sb), 0);
    CU_ASSERT_EQUAL(sb.st_mode & 0777, 0600);
    snprintf(lock, sizeof(lock), "%s-lock", path);
    CU_ASSERT_EQUAL(stat(lock, &sb), 0);
    CU_ASSERT_EQUAL(sb.st_mode & 0777, 0600);
    suspect_store_free(store);
}

static void test_bad_files(void)
{
    static const char text[] = "this is not an LMDB file, just some text\n";
    char *junk = calloc(1, 16384);
    suspect_err_t err;
    suspect_lmdb_opts_t opts;
    suspect_store_t *store = NULL;

    CU_ASSERT_PTR_NOT_NULL_FATAL(junk);
    memset(junk, 'x', 16384);
    CU_ASSERT_EQUAL(test_write_file(path, junk, 16384), 0);
    suspect_err_clear(&err);
    CU_ASSERT_PTR_NULL(lmdb_open(0, &err));
    CU_ASSERT_EQUAL(err.code, SUSPECT_E_STORE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "not an LMDB database"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, path));
    free(junk);

    CU_ASSERT_EQUAL(test_write_file(path, text, sizeof(text) - 1), 0);
    suspect_err_clear(&err);
    CU_ASSERT_PTR_NULL(lmdb_open(0, &err));
    CU_ASSERT_EQUAL(err.code, SUSPECT_E_STORE);

    /* No such directory: an I/O error with errno. */
    snprintf(path, sizeof(path), "%s/missing/suspect.mdb", dir);
    suspect_err_clear(&err);
    CU_ASSERT_PTR_NULL(lmdb_open(0, &err));
    CU_ASSERT_EQUAL(err.code, SUSPECT_E_IO);
    CU_ASSERT(err.sys_errno != 0);

    memset(&opts, 0, sizeof(opts));
    CU_ASSERT_EQUAL(suspect_lmdb_new(&opts, &store, NULL), SUSPECT_E_INVAL);
    CU_ASSERT_EQUAL(suspect_lmdb_new(NULL, &store, NULL), SUSPECT_E_INVAL);
    CU_ASSERT_PTR_NULL(store);
}

/* ---- keys and listing ------------------------------------------------------
 */

/* A typed key with a 128-byte prefix and a 512-byte value cap: ~700 bytes,
 * more than LMDB takes. */
static suspect_key_t long_key(char last)
{
    static const char type[] = "MemberCode";
    char prefix[129], value[600];
    suspect_keyopts_t ko = {SUSPECT_KEYS_TYPED, prefix, 512, false};
    suspect_identity_t id;
    suspect_key_t key;

    memset(prefix, 'p', 128);
    prefix[128] = '\0';
    memset(value, 'v', sizeof(value) - 1);
    value[sizeof(value) - 2] = last;
    value[sizeof(value) - 1] = '\0';
    id = test_identity(type, value);
    CU_ASSERT_EQUAL(suspect_key_build(&ko, login.action, &id, &key, NULL),
                    SUSPECT_OK);
    return key;
}

typedef struct listing {
    int calls;
    int stop_after;
    size_t last_len;
    int64_t until[8];
} listing_t;

static int collect(void *ud, const char *key, size_t key_len,
                   int64_t lock_until_ms)
{
    listing_t *l = ud;
    CU_ASSERT_EQUAL(strlen(key), key_len);
    l->last_len = key_len;
    if (l->calls < 8) {
        l->until[l->calls] = lock_until_ms;
    }
    l->calls++;
    return l->stop_after != 0 && l->calls >= l->stop_after;
}

static void test_long_keys(void)
{
    suspect_store_t *store = lmdb_open(0, NULL);
    suspect_key_t a = long_key('a'), b = long_key('b');
    suspect_decision_t d;
    listing_t l;

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    CU_ASSERT(a.window_len > 511);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(
            suspect_store_decide(store, &login, &a, 1, T0 + i, &d, NULL),
            SUSPECT_OK);
    }
    CU_ASSERT_TRUE(d.locked);
    CU_ASSERT_EQUAL(
        suspect_store_decide(store, &login, &b, 1, T0 + 3, &d, NULL),
        SUSPECT_OK);
    CU_ASSERT_TRUE(d.allowed);

    memset(&l, 0, sizeof(l));
    CU_ASSERT_EQUAL(
        suspect_lmdb_foreach_locked(store, T0 + 4, collect, &l, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(l.calls, 1);
    CU_ASSERT_EQUAL(l.last_len, 511);
    suspect_store_free(store);
}

static void test_foreach_locked(void)
{
    suspect_store_t *store = lmdb_open(0, NULL);
    suspect_key_t k1 = test_key("Login", "one"), k2 = test_key("Login", "two");
    suspect_key_t k3 = test_key("Login", "old");
    listing_t l;

    CU_ASSERT_PTR_NOT_NULL_FATAL(store);
    CU_ASSERT_EQUAL(suspect_store_block(store, &k1, T0, T0 + 60 * SEC, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(suspect_store_block(store, &k2, T0, T0 + 90 * SEC, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(suspect_store_block(store, &k3, T0, T0 + SEC, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(lmdb_decide_at(store, &basic, "unlocked", T0), 1);

    memset(&l, 0, sizeof(l));
    CU_ASSERT_EQUAL(
        suspect_lmdb_foreach_locked(store, T0 + 2 * SEC, collect, &l, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(l.calls, 2);
    CU_ASSERT_EQUAL(l.until[0], T0 + 60 * SEC); /* "Login:one" sorts first */
    CU_ASSERT_EQUAL(l.until[1], T0 + 90 * SEC);

    memset(&l, 0, sizeof(l));
    l.stop_after = 1;
    CU_ASSERT_EQUAL(
        suspect_lmdb_foreach_locked(store, T0 + 2 * SEC, collect, &l, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(l.calls, 1);

    /* Unblocking removes it from the list. */
    CU_ASSERT_EQUAL(suspect_store_reset(store, &k1, SUSPECT_RESET_LOCK, NULL),
                    SUSPECT_OK);
    memset(&l, 0, sizeof(l));
    CU_ASSERT_EQUAL(
        suspect_lmdb_foreach_locked(store, T0 + 2 * SEC, collect, &l, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(l.calls, 1);
    CU_ASSERT_EQUAL(suspect_lmdb_foreach_locked(NULL, T0, collect, &l, NULL),
                    SUSPECT_E_INVAL);
    suspect_store_free(store);
}

/* ---- registration ----------------------------------------------------------
 */

int register_lmdb_suite(void)
{
    static const struct {
        const char *name;
        CU_TestFunc fn;
    } tests[] = {
        {"processes exact at one now", test_processes_fixed_now},
        {"processes exact across windows", test_processes_across_windows},
        {"threads exact", test_threads},
        {"used after fork", test_used_after_fork},
        {"lock survives reopen", test_survives_reopen},
        {"file permissions", test_permissions},
        {"bad files", test_bad_files},
        {"long keys", test_long_keys},
        {"list live locks", test_foreach_locked},
    };
    CU_pSuite s = CU_add_suite_with_setup_and_teardown("lmdb", NULL, NULL,
                                                       make_dir, remove_dir);
    if (s == NULL) {
        return -1;
    }
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return lmdb_map_register(s, path);
}
