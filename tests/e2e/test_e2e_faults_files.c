/*
 * test_e2e_faults_files.c - suite "faults": the files under the daemon
 * fail.
 *
 * The limits file, while three threads keep sending requests (the nginx
 * auth_request shape, both files looked at every 0.1 s): it is replaced
 * by garbage, emptied, deleted, replaced by a directory, by a FIFO (a
 * reload must not hang on it) and by a file over the 4 MiB cap (tests run
 * as root, for whom chmod 000 changes nothing: these are the unreadable
 * files root meets).  After each: exactly one log line, however many
 * times the file is looked at; the limits of the last good file stay in
 * force, with the counts and locks made under them (a member gets one
 * more of its 10 lookups per fault, then is denied; a locked account
 * stays locked); no request of the load is refused.  Then a good file
 * with a higher limit is picked up and applies to the counts already
 * made.
 *
 * The LMDB store full: on a small tmpfs (skipped, and said so, where
 * mount is not permitted) that a filler file then fills, with fail mode
 * closed: new identities get 503, and an account locked before the store
 * filled is still denied (429) after the second for which the daemon
 * trusts a lock without asking the store; and, anywhere, a map (mapSize
 * 1M) that a flood of new members (straight to the daemon's socket)
 * fills, under a daemon restarted after the locks were made (so it never
 * saw them: another of the processes of one host, or a restart), with
 * fail mode local: the flood stops at the counters' share of the map; an
 * account locked before is denied (429), a member counted before is still
 * counted in the store (7 more of 10), an account locked now is denied by
 * the next daemon too, a new member is counted by the daemon's own store
 * (10 lookups, then 429), the breaker never opens, and the metrics count
 * the store full, not failed.  Either way the daemon stays up.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "helpers/e2e.h"
#include "helpers/redisserver.h"
#include "test_e2e_abuse.h"
#include "test_e2e_faults.h"
#include "helpers/util.h"

#define KEEPING "keeping the running limits"
/* How long a bad file is watched for a second log line (5 looks). */
#define WATCH_MS 500

static char *mnt;        /* the tmpfs mount point, while mounted */
static int metrics_port; /* the daemon's <Metrics> (start_lmdb) */

void flt_files_cleanup(void)
{
    if (mnt != NULL) {
        if (umount2(mnt, MNT_DETACH) != 0) {
            fprintf(stderr, "faults: cannot unmount %s: %s\n", mnt,
                    strerror(errno));
        }
        rmdir(mnt);
        free(mnt);
        mnt = NULL;
    }
}

/* ---- the limits file ---------------------------------------------------- */

/* examples/limits.xml with PromoQuery's LimitCount 10 replaced by count. */
static int good_limits(int count)
{
    char src[TEST_PATH_MAX];
    char to[64];
    const char *pairs[] = {"Action=\"PromoQuery\" LimitCount=\"10\"", to, NULL};
    char *text = test_read_file(e2e_src(src, "examples/limits.xml"), NULL);
    char *edited;
    int rc;

    snprintf(to, sizeof(to), "Action=\"PromoQuery\" LimitCount=\"%d\"", count);
    edited = text != NULL ? test_subst(text, pairs) : NULL;
    rc = edited != NULL ? e2e_write_limits(edited) : -1;
    free(text);
    free(edited);
    return rc;
}

/* Puts a 5 MiB file at tmp: valid XML at the start, a sparse tail. */
static int write_big(const char *tmp)
{
    static const char head[] = "<ArrayOfSuspectUsageSettingEntity>";
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int rc;

    if (fd < 0) {
        return -1;
    }
    rc = write(fd, head, sizeof(head) - 1) == (ssize_t)(sizeof(head) - 1) &&
                 ftruncate(fd, 5 << 20) == 0
             ? 0
             : -1;
    close(fd);
    return rc;
}

/*
 * Replaces the limits file by something bad (fault 0..5); 0 or -1.  Each
 * replacement is one atomic step (made aside, then renamed or exchanged
 * into place), so the daemon, which looks at the file every 0.1 s, never
 * sees a state between two faults (a FIFO made after the directory is
 * removed would be seen deleted first on a loaded machine: two lines).
 */
static int break_limits(int fault)
{
    char tmp[TEST_PATH_MAX + 8];

    snprintf(tmp, sizeof(tmp), "%s.bad", e2e.limits);
    switch (fault) {
    case 0:
        return e2e_write_limits("<ArrayOfSuspectUsageSettingEntity><Sus");
    case 1:
        return e2e_write_limits("");
    case 2:
        return unlink(e2e.limits);
    case 3:
        return mkdir(e2e.limits, 0755);
    case 4: /* a FIFO in place of the directory: exchanged, then removed */
        return mkfifo(tmp, 0644) == 0 &&
                       renameat2(AT_FDCWD, tmp, AT_FDCWD, e2e.limits,
                                 RENAME_EXCHANGE) == 0
                   ? rmdir(tmp)
                   : -1;
    default:
        return write_big(tmp) == 0 ? rename(tmp, e2e.limits) : -1;
    }
}

static const char *const fault_names[] = {"garbage",   "empty", "deleted",
                                          "directory", "FIFO",  "over 4 MiB"};

static void test_limits_broken(void)
{
    const char *edits[] = {"reload=\"1\"", "reload=\"0.1\"", NULL};
    flt_load_t l;
    long long worst = 0, t0;
    int logged = 0, status = 0;

    CU_ASSERT_EQUAL_FATAL(flt_start_auth(edits), 0);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(flt_resend("locked", &worst), 200);
    }
    CU_ASSERT_EQUAL(flt_resend("locked", &worst), 429);
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL(flt_promo("counted", &worst), 200);
    }
    t0 = mono_ms();
    CU_ASSERT_EQUAL_FATAL(
        flt_load_start(&l, 3, "/index.php?op=promo&code=load&member="), 0);
    for (int f = 0; f < 6; f++) {
        CU_ASSERT_EQUAL_FATAL(break_limits(f), 0);
        /* one line, and no second one while the file stays bad */
        CU_ASSERT_TRUE(flt_log_wait(KEEPING, logged + 1, 3000));
        usleep(WATCH_MS * 1000);
        if (flt_log_count(KEEPING) != logged + 1) {
            fprintf(stderr, "faults: limits file %s: %d log lines\n",
                    fault_names[f], flt_log_count(KEEPING) - logged);
            CU_FAIL("not exactly one log line for a bad limits file");
        }
        logged = flt_log_count(KEEPING);
        /* the old limits, counts and locks are in force */
        CU_ASSERT_EQUAL(flt_promo("counted", &worst), 200);
        CU_ASSERT_EQUAL(flt_resend("locked", &worst), 429);
    }
    /* 4 + 6 lookups: the limit of 10 is reached */
    CU_ASSERT_EQUAL(flt_promo("counted", &worst), 429);
    CU_ASSERT_EQUAL_FATAL(unlink(e2e.limits), 0);
    CU_ASSERT_EQUAL_FATAL(good_limits(12), 0);
    CU_ASSERT_TRUE(flt_log_wait("limits reloaded", 1, 3000));
    CU_ASSERT_EQUAL(flt_promo("counted", &worst), 200);
    CU_ASSERT_EQUAL(flt_promo("counted", &worst), 200);
    CU_ASSERT_EQUAL(flt_promo("counted", &worst), 429);
    CU_ASSERT_EQUAL(flt_resend("locked", &worst), 429);
    flt_load_stop(&l);
    flt_load_print(&l, "load while the limits file broke");
    CU_ASSERT_TRUE(flt_load_count(&l, t0, LLONG_MAX, 0) > 0);
    CU_ASSERT_EQUAL(flt_load_count(&l, t0, LLONG_MAX, 200),
                    flt_load_count(&l, t0, LLONG_MAX, 0));
    fprintf(stderr, "faults: slowest request %lld ms, of the test's own %lld\n",
            flt_load_max_ms(&l, LLONG_MAX, &status), worst);
    flt_load_free(&l);
    CU_ASSERT_EQUAL(flt_log_count(KEEPING), 6);
    CU_ASSERT_TRUE(flt_daemon_alive());
}

/* ---- the LMDB store's disk ---------------------------------------------- */

/* The stack with the LMDB store at path in fail mode mode. */
static int start_lmdb(const char *path, const char *map_size, const char *mode)
{
    char store[TEST_PATH_MAX + 192];
    const char *edits[] = {"<Store type=\"memory\"/>", store, NULL};

    metrics_port = test_free_port();
    snprintf(store, sizeof(store),
             "<Store type=\"lmdb\" path=\"%s\" mapSize=\"%s\" noSync=\"true\" "
             "failMode=\"%s\"/>\n  <Metrics listen=\"tcp:127.0.0.1:%d\"/>",
             path, map_size, mode, metrics_port);
    return flt_start_auth(edits);
}

/* A sample of the daemon's metrics (flt_metric()). */
static double metric(const char *sample)
{
    return flt_metric(metrics_port, sample);
}

/* Locks account "locked" (three resends allowed, the fourth 429). */
static void lock_account(void)
{
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(flt_resend("locked", NULL), 200);
    }
    CU_ASSERT_EQUAL(flt_resend("locked", NULL), 429);
}

/* The locked account, a while after the store last said so (the daemon
 * trusts a lock it saw for a second before it asks the store again). */
static void still_locked(long long locked_at)
{
    while (mono_ms() < locked_at + 1200) {
        usleep(10000);
    }
    CU_ASSERT_EQUAL(flt_resend("locked", NULL), 429);
}

/* New members until one gets 503: how many were allowed first, or -1
 * when none was refused in 200 tries.  A full store must refuse soon. */
static int until_refused(const char *prefix)
{
    char member[64];

    for (int i = 0; i < 200; i++) {
        int st;

        snprintf(member, sizeof(member), "%s-%d", prefix, i);
        st = flt_promo(member, NULL);
        if (st == 503) {
            return i;
        }
        if (st != 200) {
            fprintf(stderr, "faults: %s: answered %d\n", member, st);
            return -1;
        }
    }
    return -1;
}

/* Fail mode closed, the store full: new identities are refused (503)
 * after the few the store still had room for. */
static void check_closed(const char *what)
{
    int allowed = until_refused(what);

    fprintf(stderr, "faults: %s full: %d new identities allowed, then 503\n",
            what, allowed);
    CU_ASSERT_TRUE(allowed >= 0);
    for (int i = 0; i < 5; i++) {
        char member[64];

        snprintf(member, sizeof(member), "%s-more-%d", what, i);
        CU_ASSERT_EQUAL(flt_promo(member, NULL), 503);
    }
}

/* Fail mode local, the store full: a member is counted by the daemon's
 * own store (10 lookups, then 429), once the store said it was full. */
static void check_local(void)
{
    char member[64];
    int allowed = 0;

    for (int i = 0; i < 200 && flt_log_count("store full") == 0; i++) {
        snprintf(member, sizeof(member), "probe-%d", i);
        CU_ASSERT_EQUAL(flt_promo(member, NULL), 200);
    }
    CU_ASSERT_TRUE_FATAL(flt_log_wait("store full", 1, 3000));
    while (allowed < 20 && flt_promo("local", NULL) == 200) {
        allowed++;
    }
    CU_ASSERT_EQUAL(allowed, 10);
    CU_ASSERT_EQUAL(flt_promo("local", NULL), 429);
}

/* Fills the file system of dir: a filler file written until ENOSPC. */
static int fill_disk(const char *dir)
{
    char path[TEST_PATH_MAX], block[4096];
    int fd;

    snprintf(path, sizeof(path), "%s/filler", dir);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) {
        return -1;
    }
    memset(block, 'f', sizeof(block));
    while (write(fd, block, sizeof(block)) > 0) {
    }
    close(fd);
    return errno == ENOSPC ? 0 : -1;
}

static void test_lmdb_disk_full(void)
{
    char path[TEST_PATH_MAX];
    long long locked_at;

    mnt = test_mkdtemp();
    CU_ASSERT_PTR_NOT_NULL_FATAL(mnt);
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=2m") != 0) {
        fprintf(stderr,
                "faults: SKIPPED LMDB disk full: cannot mount a "
                "tmpfs here (%s)\n",
                strerror(errno));
        rmdir(mnt);
        free(mnt);
        mnt = NULL;
        return;
    }
    snprintf(path, sizeof(path), "%s/counters.mdb", mnt);
    CU_ASSERT_EQUAL_FATAL(start_lmdb(path, "64M", "closed"), 0);
    lock_account();
    locked_at = mono_ms();
    CU_ASSERT_EQUAL_FATAL(fill_disk(mnt), 0);
    check_closed("disk");
    still_locked(locked_at);
    CU_ASSERT_TRUE(flt_daemon_alive());
}

/* New members' promo lookups straight to the daemon's socket (the
 * subrequest nginx would send) until the daemon says the store is full
 * (at most 100,000): how many were allowed before, or -1. */
static int flood_until_full(void)
{
    char uri[128], qs[96], member[48], out[4096];
    int fd = e2e_fcgi_connect(), allowed = 0;

    if (fd < 0) {
        return -1;
    }
    for (int i = 0; i < 100000 && flt_log_count("store full") == 0; i++) {
        const char *vars[] = {"REQUEST_METHOD",
                              "GET",
                              "REQUEST_URI",
                              uri,
                              "SCRIPT_NAME",
                              "/index.php",
                              "QUERY_STRING",
                              qs,
                              "REMOTE_ADDR",
                              "127.0.0.1",
                              NULL};
        int st;

        snprintf(member, sizeof(member), "flood-%d", i);
        snprintf(qs, sizeof(qs), "op=promo&code=c&member=%s", member);
        snprintf(uri, sizeof(uri), "/index.php?%s", qs);
        st = abuse_decide(fd, 1, vars, out, sizeof(out));
        if (st < 0) {
            allowed = -1;
            break;
        }
        allowed += st == 200;
    }
    close(fd);
    return allowed;
}

/* Restarts the daemon on its configuration: a process that never saw the
 * locks made before (a restart, or another of the processes Apache or
 * spawn-fcgi run on one file). */
static int restart_daemon(void)
{
    test_proc_stop(&e2e.fcgi, SIGTERM, 3000);
    return test_suspect_start(&e2e.fcgi, e2e.dir, e2e.conf, e2e.sock, 0, NULL);
}

/* Promo lookups by member until one is refused (at most 20): how many
 * were allowed. */
static int promo_allowed(const char *member)
{
    int allowed = 0;

    while (allowed < 20 && flt_promo(member, NULL) == 200) {
        allowed++;
    }
    return allowed;
}

/* A flood of new identities fills the map (mapSize 1M) under a daemon
 * that never saw the locks in it: the flood stops at the counters' share,
 * the locks hold and the identities held are still counted in the store,
 * a new lock is kept there for the next process; only new identities go
 * to the fail mode, and the store is not taken for down. */
static void test_lmdb_map_full(void)
{
    char path[TEST_PATH_MAX];
    int flood;

    snprintf(path, sizeof(path), "%s/counters.mdb", e2e.dir);
    CU_ASSERT_EQUAL_FATAL(start_lmdb(path, "1M", "local"), 0);
    lock_account();
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(flt_promo("held", NULL), 200);
    }
    for (int i = 0; i < 2; i++) {
        CU_ASSERT_EQUAL(flt_resend("late", NULL), 200);
    }
    CU_ASSERT_EQUAL_FATAL(restart_daemon(), 0);
    flood = flood_until_full();
    fprintf(stderr, "\n  1 MiB map: %d new identities, then 'store full' ",
            flood);
    CU_ASSERT_TRUE_FATAL(flood > 0);
    CU_ASSERT_TRUE_FATAL(flt_log_count("store full") > 0);

    /* A lock the daemon never saw: denied, from the store. */
    CU_ASSERT_EQUAL(flt_resend("locked", NULL), 429);
    /* A member the store holds (3 of 10): 7 more, then refused. */
    CU_ASSERT_EQUAL(promo_allowed("held"), 7);
    /* A lock set now is in the store: the next process denies it too. */
    CU_ASSERT_EQUAL(flt_resend("late", NULL), 200);
    CU_ASSERT_EQUAL(flt_resend("late", NULL), 429);
    CU_ASSERT_EQUAL_FATAL(restart_daemon(), 0);
    CU_ASSERT_EQUAL(flt_resend("late", NULL), 429);
    CU_ASSERT_EQUAL(flt_resend("locked", NULL), 429);
    /* New identities: the daemon's own store (fail mode local); the
     * store is not taken for down. */
    check_local();
    CU_ASSERT_EQUAL(flt_log_count("breaker closed -> open"), 0);
    CU_ASSERT_EQUAL(flt_resend("locked", NULL), 429);
    /* what the operator is alerted by */
    CU_ASSERT_TRUE(metric("\nsuspect_store_full_total{store=\"lmdb\"} ") >= 1);
    CU_ASSERT_EQUAL(metric("\nsuspect_store_errors_total{store=\"lmdb\"} "), 0);
    CU_ASSERT_TRUE(flt_daemon_alive());
}

int flt_add_files_tests(CU_pSuite s)
{
    return CU_add_test(s, "limits file broken 6 ways under load",
                       test_limits_broken) == NULL ||
                   CU_add_test(s, "LMDB disk full (tmpfs)",
                               test_lmdb_disk_full) == NULL ||
                   CU_add_test(s, "LMDB map full", test_lmdb_map_full) == NULL
               ? -1
               : 0;
}
