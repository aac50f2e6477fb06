/*
 * test_reload.c - the "reload" suite: a watched limits file and its swaps.
 *
 * Each test works on a file in its own temp directory.  File times are
 * coarse (a clock tick), so every rewrite stamps an explicit, distinct
 * mtime with utimensat(): detection never depends on the clock.  poll() is
 * driven with explicit now_ms values, never by sleeping.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "clock.h"
#include "suites.h"
#include "limits/suspect_limits.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"

#define HEAD "<ArrayOfSuspectUsageSettingEntity>\n"
#define TAIL "</ArrayOfSuspectUsageSettingEntity>\n"

/* Table A: one rule.  Table B: two.  BAD: an error on line 2. */
static const char doc_a[] =
    HEAD "<SuspectUsageSettingEntity Action='Foo' LimitCount='1' "
         "LimitDuration='10'/>\n" TAIL;
static const char doc_a2[] =
    HEAD "<SuspectUsageSettingEntity Action='Foo' LimitCount='2' "
         "LimitDuration='10'/>\n" TAIL;
static const char doc_b[] =
    HEAD "<SuspectUsageSettingEntity Action='Foo' LimitCount='2' "
         "LimitDuration='20'/>\n"
         "<SuspectUsageSettingEntity Action='Bar' LimitCount='3' "
         "LimitDuration='30' BlockDuration='60'/>\n" TAIL;
static const char doc_bad[] =
    HEAD "<SuspectUsageSettingEntity Action='Foo' LimitCount='x' "
         "LimitDuration='10'/>\n" TAIL;
static const char doc_bad2[] =
    HEAD "<SuspectUsageSettingEntity Action='Foo' LimitCount='1' "
         "LimitDuration='y'/>\n" TAIL;

/* A temp directory and the limits file in it. */
typedef struct fixture {
    char *dir;
    char path[4096];
    char tmp[4096];
    long stamp; /* mtime of the next write, seconds */
} fixture_t;

static int fixture_init(fixture_t *f)
{
    memset(f, 0, sizeof(*f));
    f->dir = test_mkdtemp();
    if (f->dir == NULL) {
        return -1;
    }
    snprintf(f->path, sizeof(f->path), "%s/limits.xml", f->dir);
    snprintf(f->tmp, sizeof(f->tmp), "%s/limits.xml.new", f->dir);
    f->stamp = 1000000000;
    return 0;
}

static void fixture_done(fixture_t *f)
{
    test_rmtree(f->dir);
    free(f->dir);
}

/* Sets path's mtime to the fixture's next stamp. */
static int stamp(fixture_t *f, const char *path)
{
    struct timespec ts[2];
    ts[0].tv_sec = ts[1].tv_sec = f->stamp++;
    ts[0].tv_nsec = ts[1].tv_nsec = 0;
    return utimensat(AT_FDCWD, path, ts, 0);
}

/* Rewrites the file in place (same inode), with a new mtime. */
static int write_in_place(fixture_t *f, const char *doc)
{
    if (test_write_file(f->path, doc, strlen(doc)) != 0) {
        return -1;
    }
    return stamp(f, f->path);
}

/* Writes a new file and renames it over the old one (a new inode). */
static int write_rename(fixture_t *f, const char *doc)
{
    if (test_write_file(f->tmp, doc, strlen(doc)) != 0 ||
        stamp(f, f->tmp) != 0) {
        return -1;
    }
    return rename(f->tmp, f->path);
}

/* 'A' for table A, 'a' for A with LimitCount 2, 'B' for table B, else 0. */
static int table_of(const suspect_limits_t *lim)
{
    const suspect_rule_t *foo = suspect_limits_find(lim, "Foo");
    const suspect_rule_t *bar = suspect_limits_find(lim, "Bar");

    if (suspect_limits_count(lim) == 1 && foo != NULL && foo->window_s == 10 &&
        foo->block_s == 0) {
        return foo->limit_count == 1 ? 'A' : foo->limit_count == 2 ? 'a' : 0;
    }
    if (suspect_limits_count(lim) == 2 && foo != NULL && bar != NULL &&
        foo->limit_count == 2 && foo->window_s == 20 && foo->block_s == 0 &&
        bar->limit_count == 3 && bar->window_s == 30 && bar->block_s == 60) {
        return 'B';
    }
    return 0;
}

/* The reloader's current table, as table_of() says. */
static int current_table(suspect_reloader_t *r)
{
    suspect_limits_t *lim = suspect_reloader_acquire(r);
    int t = table_of(lim);
    suspect_limits_unref(lim);
    return t;
}

/* Room for a short_msg(). */
#define MSG_MAX 1024

/* Formats err with its file cut to the basename into msg (the caller's)
 * and returns it. */
static const char *short_msg(char msg[MSG_MAX], suspect_err_t *err)
{
    const char *slash = strrchr(err->file, '/');
    char base[256];

    snprintf(base, sizeof(base), "%s", slash != NULL ? slash + 1 : err->file);
    snprintf(err->file, sizeof(err->file), "%s", base);
    suspect_err_format(err, msg, MSG_MAX);
    return msg;
}

/* A change in place swaps; a reader's old reference keeps the old table. */
static void test_change_in_place(void)
{
    suspect_reloader_t *r = NULL;
    suspect_limits_t *old, *fresh;
    fixture_t f;

    CU_ASSERT_EQUAL_FATAL(fixture_init(&f), 0);
    CU_ASSERT_EQUAL_FATAL(write_in_place(&f, doc_a), 0);
    CU_ASSERT_EQUAL_FATAL(suspect_reloader_new(f.path, NULL, 0, &r, NULL),
                          SUSPECT_OK);
    CU_ASSERT_EQUAL(suspect_reloader_generation(r), 0);
    old = suspect_reloader_acquire(r);
    CU_ASSERT_EQUAL(table_of(old), 'A');
    CU_ASSERT_EQUAL(suspect_reloader_check(r, NULL), 0);

    /* Same size, same inode: only the mtime tells. */
    CU_ASSERT_EQUAL_FATAL(write_in_place(&f, doc_a2), 0);
    CU_ASSERT_EQUAL(suspect_reloader_check(r, NULL), 1);
    CU_ASSERT_EQUAL(suspect_reloader_check(r, NULL), 0);
    CU_ASSERT_EQUAL(suspect_reloader_generation(r), 1);
    fresh = suspect_reloader_acquire(r);
    CU_ASSERT_EQUAL(table_of(fresh), 'a');
    CU_ASSERT_EQUAL(table_of(old), 'A');
    CU_ASSERT_PTR_NOT_EQUAL(old, fresh);
    suspect_limits_unref(fresh);

    /* The reader outlives the reloader. */
    suspect_reloader_free(r);
    CU_ASSERT_EQUAL(table_of(old), 'A');
    suspect_limits_unref(old);
    suspect_reloader_free(NULL);
    fixture_done(&f);
}

/* An editor that renames a new file over the old one is seen too. */
static void test_rename_over(void)
{
    suspect_reloader_t *r = NULL;
    suspect_limits_t *old;
    fixture_t f;

    CU_ASSERT_EQUAL_FATAL(fixture_init(&f), 0);
    CU_ASSERT_EQUAL_FATAL(write_rename(&f, doc_a), 0);
    CU_ASSERT_EQUAL_FATAL(suspect_reloader_new(f.path, NULL, 0, &r, NULL),
                          SUSPECT_OK);
    old = suspect_reloader_acquire(r);
    CU_ASSERT_EQUAL_FATAL(write_rename(&f, doc_b), 0);
    CU_ASSERT_EQUAL(suspect_reloader_check(r, NULL), 1);
    CU_ASSERT_EQUAL(current_table(r), 'B');
    CU_ASSERT_EQUAL(table_of(old), 'A');
    suspect_limits_unref(old);
    suspect_reloader_free(r);
    fixture_done(&f);
}

/* A bad file keeps the old table and is reported once; a fix swaps. */
static void test_bad_file_once(void)
{
    char msg[MSG_MAX];
    suspect_reloader_t *r = NULL;
    suspect_err_t err;
    fixture_t f;

    CU_ASSERT_EQUAL_FATAL(fixture_init(&f), 0);
    CU_ASSERT_EQUAL_FATAL(write_in_place(&f, doc_a), 0);
    CU_ASSERT_EQUAL_FATAL(suspect_reloader_new(f.path, NULL, 0, &r, NULL),
                          SUSPECT_OK);

    CU_ASSERT_EQUAL_FATAL(write_rename(&f, doc_bad), 0);
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(suspect_reloader_check(r, &err), SUSPECT_E_CONFIG);
    CU_ASSERT_STRING_EQUAL(short_msg(msg, &err),
                           "limits.xml:2: LimitCount: 'x' is not a number");
    CU_ASSERT_EQUAL(current_table(r), 'A');
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(suspect_reloader_check(r, &err), 0);
    CU_ASSERT_EQUAL(suspect_reloader_check(r, &err), 0);
    CU_ASSERT_EQUAL(err.code, 0);

    /* Another bad version is news. */
    CU_ASSERT_EQUAL_FATAL(write_in_place(&f, doc_bad2), 0);
    CU_ASSERT_EQUAL(suspect_reloader_check(r, &err), SUSPECT_E_CONFIG);
    CU_ASSERT_STRING_EQUAL(short_msg(msg, &err),
                           "limits.xml:2: LimitDuration: 'y' is not a number");
    CU_ASSERT_EQUAL(suspect_reloader_check(r, NULL), 0);
    CU_ASSERT_EQUAL(suspect_reloader_generation(r), 0);

    CU_ASSERT_EQUAL_FATAL(write_in_place(&f, doc_b), 0);
    CU_ASSERT_EQUAL(suspect_reloader_check(r, NULL), 1);
    CU_ASSERT_EQUAL(current_table(r), 'B');
    CU_ASSERT_EQUAL(suspect_reloader_generation(r), 1);

    /* Bad again after a good one: reported again. */
    CU_ASSERT_EQUAL_FATAL(write_in_place(&f, doc_bad), 0);
    CU_ASSERT(suspect_reloader_check(r, NULL) < 0);
    CU_ASSERT_EQUAL(current_table(r), 'B');
    suspect_reloader_free(r);
    fixture_done(&f);
}

/* A deleted file keeps the old table, reported once; its return swaps. */
static void test_deleted_file(void)
{
    char msg[MSG_MAX];
    suspect_reloader_t *r = NULL;
    suspect_err_t err;
    char want[256];
    fixture_t f;

    CU_ASSERT_EQUAL_FATAL(fixture_init(&f), 0);
    CU_ASSERT_EQUAL_FATAL(write_in_place(&f, doc_a), 0);
    CU_ASSERT_EQUAL_FATAL(suspect_reloader_new(f.path, NULL, 0, &r, NULL),
                          SUSPECT_OK);
    CU_ASSERT_EQUAL_FATAL(unlink(f.path), 0);
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(suspect_reloader_check(r, &err), SUSPECT_E_NOTFOUND);
    snprintf(want, sizeof(want), "limits.xml: cannot open: %s",
             strerror(ENOENT));
    CU_ASSERT_STRING_EQUAL(short_msg(msg, &err), want);
    CU_ASSERT_STRING_EQUAL(want, "limits.xml: cannot open: No such file or "
                                 "directory");
    CU_ASSERT_EQUAL(current_table(r), 'A');
    CU_ASSERT_EQUAL(suspect_reloader_check(r, NULL), 0);
    CU_ASSERT_EQUAL(suspect_reloader_check(r, NULL), 0);

    CU_ASSERT_EQUAL_FATAL(write_rename(&f, doc_b), 0);
    CU_ASSERT_EQUAL(suspect_reloader_check(r, NULL), 1);
    CU_ASSERT_EQUAL(current_table(r), 'B');
    suspect_reloader_free(r);
    fixture_done(&f);
}

/* poll() looks at most once per interval of the given clock. */
static void test_poll_interval(void)
{
    suspect_reloader_t *r = NULL;
    fixture_t f;

    CU_ASSERT_EQUAL_FATAL(fixture_init(&f), 0);
    CU_ASSERT_EQUAL_FATAL(write_in_place(&f, doc_a), 0);
    CU_ASSERT_EQUAL_FATAL(suspect_reloader_new(f.path, NULL, 500, &r, NULL),
                          SUSPECT_OK);
    CU_ASSERT_EQUAL_FATAL(write_in_place(&f, doc_a2), 0);
    CU_ASSERT_EQUAL(suspect_reloader_poll(r, 1000, NULL), 1); /* first */
    CU_ASSERT_EQUAL_FATAL(write_in_place(&f, doc_b), 0);
    CU_ASSERT_EQUAL(suspect_reloader_poll(r, 1000, NULL), 0);
    CU_ASSERT_EQUAL(suspect_reloader_poll(r, 1200, NULL), 0);
    CU_ASSERT_EQUAL(suspect_reloader_poll(r, 1499, NULL), 0);
    CU_ASSERT_EQUAL(current_table(r), 'a');
    CU_ASSERT_EQUAL(suspect_reloader_poll(r, 1500, NULL), 1);
    CU_ASSERT_EQUAL(current_table(r), 'B');
    CU_ASSERT_EQUAL(suspect_reloader_poll(r, 2000, NULL), 0); /* same file */

    /* A clock that jumps back by more than an interval does not stall. */
    CU_ASSERT_EQUAL_FATAL(write_in_place(&f, doc_a), 0);
    CU_ASSERT_EQUAL(suspect_reloader_poll(r, 100, NULL), 1);
    CU_ASSERT_EQUAL(suspect_reloader_poll(r, 400, NULL), 0);
    CU_ASSERT_EQUAL(suspect_reloader_generation(r), 3);
    suspect_reloader_free(r);
    fixture_done(&f);
}

static void test_new_errors(void)
{
    suspect_reloader_t *r = NULL;
    suspect_err_t err;
    fixture_t f;

    CU_ASSERT_EQUAL_FATAL(fixture_init(&f), 0);
    CU_ASSERT_EQUAL(suspect_reloader_new(f.path, NULL, 0, &r, NULL),
                    SUSPECT_E_NOTFOUND);
    CU_ASSERT_EQUAL_FATAL(write_in_place(&f, doc_bad), 0);
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(suspect_reloader_new(f.path, NULL, 0, &r, &err),
                    SUSPECT_E_CONFIG);
    CU_ASSERT_EQUAL(err.line, 2);
    CU_ASSERT_EQUAL(suspect_reloader_new(f.path, NULL, -1, &r, NULL),
                    SUSPECT_E_INVAL);
    CU_ASSERT_PTR_NULL(r);

    /* opts are copied and used on reload. */
    {
        suspect_limits_opts_t opts = {sizeof(doc_a), 1};
        CU_ASSERT_EQUAL_FATAL(write_in_place(&f, doc_a), 0);
        CU_ASSERT_EQUAL_FATAL(suspect_reloader_new(f.path, &opts, 0, &r, NULL),
                              SUSPECT_OK);
        opts.max_rules = 100;
        CU_ASSERT_EQUAL_FATAL(write_in_place(&f, doc_b), 0);
        suspect_err_clear(&err);
        CU_ASSERT_EQUAL(suspect_reloader_check(r, &err), SUSPECT_E_CONFIG);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "too large"));
        suspect_reloader_free(r);
    }
    fixture_done(&f);
}

/* Allocation failures in new() and check(): out of memory or success,
 * never a half state; a check failed by memory is retried, not muted. */
static void test_out_of_memory(void)
{
    suspect_reloader_t *r = NULL;
    suspect_rc_t rc = SUSPECT_E_NOMEM;
    int bad = 0;
    fixture_t f;

    CU_ASSERT_EQUAL_FATAL(fixture_init(&f), 0);
    CU_ASSERT_EQUAL_FATAL(write_in_place(&f, doc_a), 0);
    for (long n = 1; n < 10000 && rc == SUSPECT_E_NOMEM; n++) {
        suspect_test_fail_alloc_after(n);
        rc = suspect_reloader_new(f.path, NULL, 0, &r, NULL);
        suspect_test_fail_alloc_after(-1);
        bad += rc != SUSPECT_OK && rc != SUSPECT_E_NOMEM;
    }
    CU_ASSERT_EQUAL_FATAL(rc, SUSPECT_OK);
    CU_ASSERT_EQUAL_FATAL(write_in_place(&f, doc_b), 0);
    rc = SUSPECT_E_NOMEM;
    for (long n = 1; n < 10000 && rc == SUSPECT_E_NOMEM; n++) {
        suspect_test_fail_alloc_after(n);
        rc = suspect_reloader_check(r, NULL);
        suspect_test_fail_alloc_after(-1);
        bad += rc != 1 && rc != SUSPECT_E_NOMEM;
        bad += rc == SUSPECT_E_NOMEM && current_table(r) != 'A';
    }
    CU_ASSERT_EQUAL(rc, 1);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(current_table(r), 'B');
    suspect_reloader_free(r);
    fixture_done(&f);
}

/* Shared by the reader threads of test_threads. */
typedef struct race {
    suspect_reloader_t *r;
    int stop;      /* atomic */
    long acquired; /* atomic; per thread, summed after join */
    long wrong;    /* snapshots that were not a valid table */
    int poller;    /* this thread also polls */
} race_t;

static void *reader(void *arg)
{
    race_t *rc = arg;
    int64_t now = 0;

    while (!__atomic_load_n(&rc->stop, __ATOMIC_ACQUIRE)) {
        suspect_limits_t *lim = suspect_reloader_acquire(rc->r);
        int t = table_of(lim);
        rc->wrong += t != 'A' && t != 'B';
        __atomic_fetch_add(&rc->acquired, 1, __ATOMIC_RELAXED);
        suspect_limits_unref(lim);
        if (rc->poller) {
            suspect_reloader_poll(rc->r, now++, NULL);
        }
    }
    return NULL;
}

/* Whether every reader of races[4] has acquired a snapshot yet. */
static bool all_acquired(race_t races[4])
{
    for (int i = 0; i < 4; i++) {
        if (__atomic_load_n(&races[i].acquired, __ATOMIC_RELAXED) == 0) {
            return false;
        }
    }
    return true;
}

/* 4 readers acquire and release while the file flips between valid and
 * invalid 200 times, and on until each reader has run (a loaded machine
 * may not have given them a CPU yet; within a scaled deadline): every
 * snapshot seen is one of the valid tables. */
static void test_threads(void)
{
    suspect_reloader_t *r = NULL;
    race_t races[4];
    pthread_t th[4];
    long acquired = 0, wrong = 0;
    int write_errors = 0;
    int64_t deadline;
    fixture_t f;

    CU_ASSERT_EQUAL_FATAL(fixture_init(&f), 0);
    CU_ASSERT_EQUAL_FATAL(write_in_place(&f, doc_a), 0);
    CU_ASSERT_EQUAL_FATAL(suspect_reloader_new(f.path, NULL, 1, &r, NULL),
                          SUSPECT_OK);
    for (int i = 0; i < 4; i++) {
        memset(&races[i], 0, sizeof(races[i]));
        races[i].r = r;
        races[i].poller = i == 0;
        CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, reader, &races[i]),
                              0);
    }
    deadline = mono_ms() + test_scale_ms(10000);
    for (int i = 0; i < 200 || (!all_acquired(races) && mono_ms() < deadline);
         i++) {
        static const char *const docs[] = {doc_b, doc_bad, doc_a, doc_bad2};
        write_errors += write_rename(&f, docs[i % 4]) != 0;
        suspect_reloader_check(r, NULL);
    }
    for (int i = 0; i < 4; i++) {
        __atomic_store_n(&races[i].stop, 1, __ATOMIC_RELEASE);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        acquired += races[i].acquired;
        wrong += races[i].wrong;
    }
    CU_ASSERT_EQUAL(write_errors, 0);
    CU_ASSERT_EQUAL(wrong, 0);
    for (int i = 0; i < 4; i++) {
        CU_ASSERT(races[i].acquired > 0);
    }
    CU_ASSERT(acquired > 0);
    CU_ASSERT(suspect_reloader_generation(r) >= 50);

    CU_ASSERT_EQUAL_FATAL(write_rename(&f, doc_b), 0);
    suspect_reloader_check(r, NULL);
    CU_ASSERT_EQUAL(current_table(r), 'B');
    suspect_reloader_free(r);
    fixture_done(&f);
}

int register_reload_suite(void)
{
    static const struct {
        const char *name;
        CU_TestFunc fn;
    } tests[] = {
        {"change in place", test_change_in_place},
        {"rename over", test_rename_over},
        {"bad file reported once", test_bad_file_once},
        {"deleted file", test_deleted_file},
        {"poll interval", test_poll_interval},
        {"new: errors and opts", test_new_errors},
        {"out of memory", test_out_of_memory},
        {"threads", test_threads},
    };
    CU_pSuite suite = CU_add_suite("reload", NULL, NULL);

    if (suite == NULL) {
        return -1;
    }
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(suite, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return 0;
}
