/*
 * test_suspectctl_group.c - the suspectctl suite, part four: an operator
 * in the daemon's group runs suspectctl on its LMDB store.
 *
 * suspect-fcgi starts, under umask 077 as systemd units often set it, on
 * <Store type="lmdb" mode="0660" group="www-data">: both files must come
 * out 0660 and of that group.  Then (as root only, since it takes another
 * user) suspectctl runs as nobody with www-data as a supplementary group,
 * through setpriv: it reads the daemon's lock and lifts it; the same user
 * without the group is refused by the file system and says so.  The
 * program run as nobody is a copy of the built one in the test's
 * directory (a build tree, say under /root, may be out of its reach).
 */
#include <CUnit/CUnit.h>
#include <dirent.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl_test.h"
#include "helpers/procs.h"
#include "helpers/util.h"
#include "suspect_lmdb.h"

#define GROUP "www-data"

static const char limits_xml[] =
    "<ArrayOfSuspectUsageSettingEntity>\n"
    "  <SuspectUsageSettingEntity Action=\"Login\" LimitCount=\"3\" "
    "LimitDuration=\"60\" BlockDuration=\"300\"/>\n"
    "  <SuspectUsageSettingEntity Action=\"BankAccountUpdate\" "
    "LimitCount=\"2\" LimitDuration=\"120\"/>\n"
    "</ArrayOfSuspectUsageSettingEntity>\n";

/* Whether path is an ELF executable (not a libtool wrapper script). */
static bool is_elf(const char *path)
{
    char head[4] = "";
    FILE *f = fopen(path, "rbe");

    if (f == NULL) {
        return false;
    }
    if (fread(head, 1, sizeof(head), f) != sizeof(head)) {
        head[0] = '\0';
    }
    fclose(f);
    return memcmp(head, "\177ELF", 4) == 0;
}

/* Copies the built suspectctl (and, for a libtool build, libsuspect) into
 * dir/bin and dir/lib; 0 or -1. */
static int copy_tool(const char *dir)
{
    const char *build = getenv("SUSPECT_BUILDDIR");
    char src[TEST_PATH_MAX], dst[TEST_PATH_MAX];
    struct dirent *e;
    DIR *libs;
    int rc = 0;

    build = build != NULL && build[0] != '\0' ? build : ".";
    snprintf(src, sizeof(src), "%s/suspectctl", build);
    snprintf(dst, sizeof(dst), "%s/bin", dir);
    if (mkdir(dst, 0755) != 0) {
        return -1;
    }
    if (!is_elf(src)) {
        snprintf(src, sizeof(src), "%s/.libs/suspectctl", build);
    }
    snprintf(dst, sizeof(dst), "%s/bin/suspectctl", dir);
    if (test_copy_file(src, dst, 0755) != 0) {
        return -1;
    }
    snprintf(dst, sizeof(dst), "%s/lib", dir);
    snprintf(src, sizeof(src), "%s/.libs", build);
    if (mkdir(dst, 0755) != 0) {
        return -1;
    }
    libs = opendir(src);
    while (libs != NULL && rc == 0 && (e = readdir(libs)) != NULL) {
        if (strncmp(e->d_name, "libsuspect.so", 13) == 0) {
            char from[TEST_PATH_MAX + 256], to[TEST_PATH_MAX + 256];

            snprintf(from, sizeof(from), "%s/%s", src, e->d_name);
            snprintf(to, sizeof(to), "%s/lib/%s", dir, e->d_name);
            rc = test_copy_file(from, to, 0644);
        }
    }
    if (libs != NULL) {
        closedir(libs);
    }
    return rc;
}

/* Runs dir/bin/suspectctl as nobody (with GROUP as a supplementary group
 * when in_group) on conf: "status Login 42", then, when that worked,
 * "unblock Login 42"; the exit status of the last, its stderr in *err
 * (malloc'ed). */
static int as_nobody(const char *dir, const char *conf, bool in_group,
                     char **err)
{
    char bin[TEST_PATH_MAX], libenv[TEST_PATH_MAX + 32];
    char log[TEST_PATH_MAX];
    const char *env[] = {libenv, NULL};
    const char *cmds[][3] = {{"status", "Login", "42"},
                             {"unblock", "Login", "42"}};
    int status = -1;

    snprintf(bin, sizeof(bin), "%s/bin/suspectctl", dir);
    snprintf(libenv, sizeof(libenv), "LD_LIBRARY_PATH=%s/lib", dir);
    snprintf(log, sizeof(log), "%s/nobody.log", dir);
    for (size_t i = 0; i < 2; i++) {
        const char *argv[] = {"setpriv",
                              "--reuid=nobody",
                              "--regid=nogroup",
                              in_group ? "--groups=" GROUP : "--clear-groups",
                              "--",
                              bin,
                              "-c",
                              conf,
                              cmds[i][0],
                              cmds[i][1],
                              cmds[i][2],
                              NULL};
        test_proc_t p;

        unlink(log);
        if (test_proc_start(&p, argv, env, log) != 0 ||
            test_proc_wait(&p, 10000) != 0) {
            return -1;
        }
        status = WIFEXITED(p.status) ? WEXITSTATUS(p.status) : -1;
        if (status != 0) {
            break;
        }
    }
    *err = test_read_file(log, NULL);
    return status;
}

/* Whether path has mode 0660 and group gid (else says what it has). */
static bool shared(const char *path, gid_t gid)
{
    struct stat st;

    if (stat(path, &st) != 0) {
        fprintf(stderr, "  %s: missing\n", path);
        return false;
    }
    if ((st.st_mode & 07777) != 0660 || st.st_gid != gid) {
        fprintf(stderr, "  %s: mode %04o, group %d\n", path,
                (unsigned)(st.st_mode & 07777), (int)st.st_gid);
        return false;
    }
    return true;
}

static void test_group_operator(void)
{
    struct group *g = getgrnam(GROUP);
    char *dir = test_mkdtemp();
    char conf[TEST_PATH_MAX], store[TEST_PATH_MAX + 256], db[TEST_PATH_MAX];
    char lock[TEST_PATH_MAX + 8], sock[TEST_PATH_MAX + 32], path[TEST_PATH_MAX];
    const char *extra[] = {"--listen", sock, NULL};
    char *err = NULL;
    test_proc_t daemon;
    mode_t old;
    int rc;

    CU_ASSERT_PTR_NOT_NULL_FATAL(g);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    snprintf(db, sizeof(db), "%s/state/store.mdb", dir);
    snprintf(lock, sizeof(lock), "%s-lock", db);
    snprintf(sock, sizeof(sock), "unix:%s/fcgi.sock", dir);
    snprintf(conf, sizeof(conf), "%s/suspect.xml", dir);
    snprintf(store, sizeof(store),
             "<Store type=\"lmdb\" path=\"%s\" mode=\"0660\" group=\"" GROUP
             "\"/>",
             db);
    snprintf(path, sizeof(path), "%s/state", dir);
    /* The state directory as an operator would set it up for the group
     * (systemd: StateDirectoryMode=0770 and a chgrp). */
    CU_ASSERT_FATAL(chmod(dir, 0755) == 0 && mkdir(path, 0770) == 0);
    if (geteuid() == 0) {
        CU_ASSERT_FATAL(chown(path, (uid_t)-1, g->gr_gid) == 0);
    }
    snprintf(path, sizeof(path), "%s/limits.xml", dir);
    CU_ASSERT_FATAL(test_write_file(path, limits_xml, strlen(limits_xml)) == 0);
    CU_ASSERT_FATAL(ctl_write_conf(conf, store) == 0);

    old = umask(077);
    rc = test_suspect_start(&daemon, dir, conf, sock + 5, 0, extra);
    umask(old);
    CU_ASSERT_FATAL(rc == 0);
    CU_ASSERT_TRUE(shared(db, g->gr_gid));
    CU_ASSERT_TRUE(shared(lock, g->gr_gid));

    if (geteuid() != 0) {
        fprintf(stderr, "  (not root: suspectctl as another user not run)\n");
    } else {
        suspect_lmdb_opts_t o = {db, 0, 0660, 0, 0};
        suspect_key_t key = test_key("Login", "42");
        suspect_store_t *s = NULL;

        /* A lock the daemon's store holds, as after three failed logins. */
        CU_ASSERT_FATAL(suspect_lmdb_new(&o, &s, NULL) == SUSPECT_OK);
        CU_ASSERT_EQUAL(
            suspect_store_block(s, &key, wall_ms(), wall_ms() + 300000, NULL),
            SUSPECT_OK);
        suspect_store_free(s);
        CU_ASSERT_FATAL(copy_tool(dir) == 0);
        rc = as_nobody(dir, conf, true, &err);
        CU_ASSERT_EQUAL(rc, 0);
        CU_ASSERT(err != NULL && strstr(err, "unblocked Login 42") != NULL);
        if (rc != 0) {
            fprintf(stderr, "  suspectctl as nobody in " GROUP ": %s", err);
        }
        free(err);
        rc = as_nobody(dir, conf, false, &err);
        CU_ASSERT_EQUAL(rc, 3);
        CU_ASSERT(err != NULL && strstr(err, "Permission denied") != NULL);
        if (rc != 3 || err == NULL ||
            strstr(err, "Permission denied") == NULL) {
            fprintf(stderr, "  suspectctl as nobody: %s", err);
        }
        free(err);
    }
    test_proc_stop(&daemon, SIGTERM, 5000);
    test_rmtree(dir);
    free(dir);
}

int ctl_add_group_tests(CU_pSuite s)
{
    return CU_add_test(s, "lmdb: an operator in the daemon's group",
                       test_group_operator) != NULL
               ? 0
               : -1;
}
