/*
 * test_compiled_runs.c - suite "suspect-cgi", part four: the built
 * suspect-cgi and suspect-cgi-compile with their compiled configuration,
 * run as a web server runs them (cgirun.h), on the fixture of
 * test_suspect_cgi.c (DIR/suspect.xml: /hdr counts header X-Member
 * against Hello, 2 a minute; the echo script touches DIR/ran).
 *
 * What is checked is what a request sees: the compiled configuration is
 * saved once its sources have settled and then used (its inode stays:
 * nothing compiles again); an edit of any source, even one that keeps
 * the size, the inode and the mtime, changes the very next decision; a
 * damaged or untrusted file is compiled again, never used; a bad edit
 * keeps the last good one, said once; a directory
 * that cannot be written costs speed only and is logged once; concurrent
 * first requests all decide right and leave one sound file.
 */
#include <CUnit/CUnit.h>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgi-wrapper/wrap_compiled.h"
#include "cgirun.h"
#include "clock.h"
#include "helpers/e2e.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"

#define SETTLE_MS 5000 /* sources are saved once 100 ms old */
#define NCONC     8

/* Room for the path of a compiled configuration. */
#define SNAP_MAX (TEST_PATH_MAX + 64)

/* The compiled configuration's file for e2e.conf in dir, written into path
 * (the caller's; "" when it cannot be named). */
static const char *snap_in(char path[SNAP_MAX], const char *dir)
{
    char abs[TEST_PATH_MAX];

    if (cgi_snap_path(dir, e2e.conf, abs, sizeof(abs), path, SNAP_MAX) != 0) {
        path[0] = '\0';
    }
    return path;
}

/* snap_in() for the test's directory. */
static const char *snap(char path[SNAP_MAX])
{
    return snap_in(path, e2e.dir);
}

/* Whether the program ran since the last call (and forgets it). */
static bool ran(void)
{
    char at[TEST_PATH_MAX];
    return unlink(e2e_path(at, "ran")) == 0;
}

/* GET uri as member, with extra options before -c; the status of the
 * answer (200 when the program ran), r kept for more checks. */
static int get(cgi_out_t *r, const char *uri, const char *member,
               const char *opt, const char *val)
{
    char u[256], m[256];
    const char *vars[] = {"REQUEST_METHOD=GET", u, m, NULL};
    const char *argv[] = {cgirun_bin(), "-c", e2e.conf, NULL, NULL, NULL};

    snprintf(u, sizeof(u), "REQUEST_URI=%s", uri);
    snprintf(m, sizeof(m), "HTTP_X_MEMBER=%s", member);
    if (opt != NULL) {
        argv[3] = opt;
        argv[4] = val;
    }
    cgirun(r, argv, vars, NULL, 0, false);
    if (ran()) {
        return 200;
    }
    return r->out != NULL && strncmp(r->out, "Status: ", 8) == 0
               ? atoi(r->out + 8)
               : -1;
}

/* get() without keeping the output. */
static int status(const char *uri, const char *member)
{
    cgi_out_t r;
    int st = get(&r, uri, member, NULL, NULL);

    cgirun_free(&r);
    return st;
}

/* Runs uncounted requests until the compiled configuration is saved
 * (its sources must be 100 ms old first); whether it was. */
static bool settle(void)
{
    char sp[SNAP_MAX];
    long long deadline = mono_ms() + test_scale_ms(SETTLE_MS);

    while (access(snap(sp), F_OK) != 0 && mono_ms() < deadline) {
        status("/none", "x");
    }
    return access(snap(sp), F_OK) == 0;
}

static ino_t inode(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 ? st.st_ino : 0;
}

/* Makes requests until the compiled file is another than ino (sources
 * changed a moment ago are not compiled yet), or the deadline. */
static bool resaved(ino_t ino)
{
    char sp[SNAP_MAX];
    long long deadline = mono_ms() + test_scale_ms(SETTLE_MS);

    while (inode(snap(sp)) == ino && mono_ms() < deadline) {
        status("/none", "x");
    }
    return inode(snap(sp)) != ino;
}

/* Whether the compiled configuration in the test's directory is sound. */
static bool sound(void)
{
    char sp[SNAP_MAX];
    compiled_t s;
    bool ok = compiled_read(snap(sp), &s, NULL) == SUSPECT_OK;

    compiled_clear(&s);
    return ok;
}

/* Saved once settled, then used: decisions across processes, and the
 * file is not written again. */
static void test_used(void)
{
    char sp[SNAP_MAX];
    ino_t ino;

    CU_ASSERT_FATAL(settle());
    ino = inode(snap(sp));
    CU_ASSERT_EQUAL(status("/hdr", "u1"), 200);
    CU_ASSERT_EQUAL(status("/hdr", "u1"), 200);
    CU_ASSERT_EQUAL(status("/hdr", "u1"), 429);
    CU_ASSERT_EQUAL(status("/hdr", "u2"), 200);
    CU_ASSERT_EQUAL(inode(snap(sp)), ino);
    CU_ASSERT(sound());
}

/* Writes suspect.xml: text with a store in a directory that does not
 * exist, in failMode mode. */
static void unusable_store(const char *text, const char *mode)
{
    char at[TEST_PATH_MAX];
    char store[TEST_PATH_MAX + 128];
    const char *pairs[] = {"  <Cgi ", store, NULL};
    char *edited;

    snprintf(store, sizeof(store),
             "  <Store type=\"lmdb\" path=\"%s\" failMode=\"%s\"/>\n  <Cgi ",
             e2e_path(at, "none/x.lmdb"), mode);
    edited = test_subst(text, pairs);
    CU_ASSERT_FATAL(edited != NULL && strstr(edited, "<Store ") != NULL);
    CU_ASSERT_FATAL(test_write_file(e2e.conf, edited, strlen(edited)) == 0);
    free(edited);
}

/* A request no route counts runs the program without opening the store:
 * an unusable store does not stop it, in the compiler's first answer or
 * with the compiled configuration, while a counted one gets the fail
 * mode's answer. */
static void test_store_not_needed(void)
{
    char sp[SNAP_MAX];
    char at[TEST_PATH_MAX];
    static const struct {
        const char *mode;
        int status;
    } modes[] = {{"closed", 503}, {"local", 500}};
    char *text = test_read_file(e2e.conf, NULL);
    cgi_out_t r;

    CU_ASSERT_FATAL(text != NULL);
    for (size_t i = 0; i < 2; i++) {
        ino_t ino = inode(snap(sp));

        unusable_store(text, modes[i].mode);
        CU_ASSERT_EQUAL(get(&r, "/page", "p1", NULL, NULL), 200);
        CU_ASSERT(r.err == NULL || r.err[0] == '\0');
        cgirun_free(&r);
        CU_ASSERT_FATAL(resaved(ino));
        CU_ASSERT_EQUAL(get(&r, "/page", "p1", NULL, NULL), 200);
        CU_ASSERT(r.err == NULL || r.err[0] == '\0');
        cgirun_free(&r);
        CU_ASSERT_EQUAL(status("/hdr", "p1"), modes[i].status);
    }
    CU_ASSERT(access(e2e_path(at, "none"), F_OK) != 0);
    free(text);
}

/* Rewrites path in place with from replaced by to (same length), then
 * puts its mtime back: only its ctime says it changed. */
static void edit_in_place(const char *path, const char *from, const char *to)
{
    struct stat st;
    char *text = test_read_file(path, NULL);
    char *p = text != NULL ? strstr(text, from) : NULL;
    struct timespec ts[2] = {{0, UTIME_OMIT}, {0, 0}};

    CU_ASSERT_FATAL(p != NULL && strlen(from) == strlen(to));
    CU_ASSERT_FATAL(stat(path, &st) == 0);
    memcpy(p, to, strlen(to));
    CU_ASSERT(test_write_file(path, text, strlen(text)) == 0);
    ts[1] = st.st_mtim;
    CU_ASSERT(utimensat(AT_FDCWD, path, ts, 0) == 0);
    free(text);
}

/* suspect.xml: /hdr becomes /hdx; the next request sees it. */
static void test_stale_conf(void)
{
    char sp[SNAP_MAX];
    ino_t ino;

    CU_ASSERT_FATAL(settle());
    ino = inode(snap(sp));
    edit_in_place(e2e.conf, "\"/hdr\"", "\"/hdx\"");
    CU_ASSERT_EQUAL(status("/hdx", "c1"), 200);
    CU_ASSERT_EQUAL(status("/hdx", "c1"), 200);
    CU_ASSERT_EQUAL(status("/hdx", "c1"), 429);
    CU_ASSERT_EQUAL(status("/hdr", "c2"), 200);
    CU_ASSERT_EQUAL(status("/hdr", "c2"), 200);
    CU_ASSERT_EQUAL(status("/hdr", "c2"), 200); /* no route any more */
    CU_ASSERT(resaved(ino));
}

/* A bad edit of suspect.xml keeps deciding with the last compiled
 * configuration saved (the count goes on: two, then the 429), says why
 * once however many requests follow, and a fix applies at once. */
static void test_bad_edit_keeps_last(void)
{
    char *good = test_read_file(e2e.conf, NULL);
    char *bad;
    cgi_out_t r;
    int said = 0;

    CU_ASSERT_FATAL(good != NULL && settle());
    bad = test_subst(good,
                     (const char *[]){"</Suspect>", "<Oops/></Suspect>", NULL});
    CU_ASSERT_FATAL(bad != NULL &&
                    test_write_file(e2e.conf, bad, strlen(bad)) == 0);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(get(&r, "/hdr", "k1", NULL, NULL), i < 2 ? 200 : 429);
        if (r.err != NULL && strstr(r.err, "<Oops>") != NULL) {
            said++;
            CU_ASSERT(strstr(r.err, "keeping the last good configuration") !=
                      NULL);
        }
        cgirun_free(&r);
    }
    CU_ASSERT_EQUAL(said, 1);
    /* fixed: /hdr becomes /hdx, applied by the very next request */
    free(bad);
    bad = test_subst(good, (const char *[]){"\"/hdr\"", "\"/hdx\"", NULL});
    CU_ASSERT_FATAL(bad != NULL &&
                    test_write_file(e2e.conf, bad, strlen(bad)) == 0);
    CU_ASSERT_EQUAL(status("/hdr", "k1"), 200);
    free(bad);
    free(good);
}

/* The limits file: 2 becomes 1. */
static void test_stale_limits(void)
{
    CU_ASSERT_FATAL(settle());
    edit_in_place(e2e.limits, "LimitCount=\"2\"", "LimitCount=\"1\"");
    CU_ASSERT_EQUAL(status("/hdr", "l1"), 200);
    CU_ASSERT_EQUAL(status("/hdr", "l1"), 429);
}

/* The response template: its new text is in the very next denial. */
static void test_stale_template(void)
{
    char at[TEST_PATH_MAX];
    static const char conf[] =
        "<Suspect>\n"
        "  <Limits path=\"limits.xml\"/>\n"
        "  <Response format=\"html\" template=\"page.html\"/>\n"
        "  <Cgi program=\"@APP@/echo.cgi\"/>\n"
        "  <Route action=\"Hello\" path=\"/hdr\">\n"
        "    <Identity type=\"Member\" from=\"header:X-Member\"/>\n"
        "  </Route>\n"
        "</Suspect>\n";
    const char *pairs[] = {"@APP@", e2e.app, NULL};
    char *text = test_subst(conf, pairs);
    cgi_out_t r;

    CU_ASSERT_FATAL(
        text != NULL && test_write_file(e2e.conf, text, strlen(text)) == 0 &&
        test_write_file(e2e_path(at, "page.html"), "AAAA {status}\n", 14) == 0);
    free(text);
    CU_ASSERT_FATAL(settle());
    CU_ASSERT_EQUAL(status("/hdr", "t1"), 200);
    CU_ASSERT_EQUAL(status("/hdr", "t1"), 200);
    edit_in_place(e2e_path(at, "page.html"), "AAAA", "BBBB");
    CU_ASSERT_EQUAL(get(&r, "/hdr", "t1", NULL, NULL), 429);
    CU_ASSERT(r.out != NULL && strstr(r.out, "\r\n\r\nBBBB 429") != NULL);
    cgirun_free(&r);
}

/* Writes len bytes of the saved file, changed by damage k, back. */
static void damage(int k)
{
    char sp[SNAP_MAX];
    size_t len = 0;
    char *buf = test_read_file(snap(sp), &len);

    CU_ASSERT_FATAL(buf != NULL && len > 64);
    switch (k) {
    case 0: /* cut in half */
        len /= 2;
        break;
    case 1: /* one byte of the payload */
        buf[len - 10] ^= 1;
        break;
    case 2: /* another version */
        buf[8] = 99;
        break;
    case 3: /* empty */
        len = 0;
        break;
    default: /* not one at all */
        len = 5;
        memcpy(buf, "hello", 5);
        break;
    }
    CU_ASSERT(test_write_file(snap(sp), buf, len) == 0);
    free(buf);
}

/* Damaged, truncated, of another version, or writable by others: the
 * request is decided from the XML, and the file made sound again. */
static void test_damaged(void)
{
    char sp[SNAP_MAX];
    char member[16];

    CU_ASSERT_FATAL(settle());
    for (int k = 0; k < 6; k++) {
        snprintf(member, sizeof(member), "d%d", k);
        if (k < 5) {
            damage(k);
        } else {
            CU_ASSERT(chmod(snap(sp), 0666) == 0);
        }
        CU_ASSERT(!sound() || k == 5);
        CU_ASSERT_EQUAL(status("/hdr", member), 200);
        CU_ASSERT(sound());
        CU_ASSERT_EQUAL(status("/hdr", member), 200);
        CU_ASSERT_EQUAL(status("/hdr", member), 429);
    }
}

/* A directory that cannot be written: right decisions, slowly, and one
 * warning for this configuration however many requests follow. */
static void test_unwritable(void)
{
    char sp[SNAP_MAX];
    char none[TEST_PATH_MAX], marker[128];
    cgi_out_t r;
    compiled_t s;

    CU_ASSERT_FATAL(settle());
    e2e_path(none, "none");
    CU_ASSERT_FATAL(compiled_load(e2e.conf, &s, NULL) == SUSPECT_OK);
    CU_ASSERT_FATAL(
        cgi_snap_marker(snap_in(sp, none), &s, marker, sizeof(marker)) == 0);
    shm_unlink(marker);
    CU_ASSERT_EQUAL(get(&r, "/hdr", "w1", "-s", none), 200);
    CU_ASSERT(cgirun_one_log_line(&r, "compiled configuration not saved"));
    cgirun_free(&r);
    CU_ASSERT_EQUAL(get(&r, "/hdr", "w1", "-s", none), 200);
    CU_ASSERT_PTR_NULL(r.err);
    cgirun_free(&r);
    CU_ASSERT_EQUAL(get(&r, "/hdr", "w1", "-s", none), 429);
    CU_ASSERT_PTR_NULL(r.err);
    cgirun_free(&r);
    CU_ASSERT_EQUAL(access(snap_in(sp, none), F_OK), -1);
    CU_ASSERT_EQUAL(shm_unlink(marker), 0);
    compiled_clear(&s);
}

/* Starts suspect-cgi for member with output to DIR/out.i; the pid. */
static pid_t start(int i, const char *member)
{
    char u[] = "REQUEST_URI=/hdr", m[64], out[TEST_PATH_MAX];
    const char *vars[] = {"REQUEST_METHOD=GET", u, m, NULL};
    const char *argv[] = {cgirun_bin(), "-c", e2e.conf, NULL};
    const char *env[CGIRUN_MAX_ENV];
    posix_spawn_file_actions_t fa;
    pid_t pid = -1;

    snprintf(m, sizeof(m), "HTTP_X_MEMBER=%s", member);
    snprintf(out, sizeof(out), "%s/out.%d", e2e.dir, i);
    cgirun_env(env, vars);
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT, 0600);
    if (posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv,
                    (char *const *)env) != 0) {
        pid = -1;
    }
    posix_spawn_file_actions_destroy(&fa);
    return pid;
}

/* Waits for pid, killing it after the deadline; whether it exited 0. */
static bool finish(pid_t pid, long long deadline)
{
    int st = -1;

    while (waitpid(pid, &st, WNOHANG) == 0) {
        if (mono_ms() >= deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            return false;
        }
        poll(NULL, 0, 5);
    }
    return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* Whether DIR holds a leftover temporary file of a save. */
static bool leftovers(void)
{
    DIR *d = opendir(e2e.dir);
    struct dirent *e;
    bool found = false;

    while (d != NULL && (e = readdir(d)) != NULL) {
        found = found || strstr(e->d_name, ".snap.") != NULL;
    }
    if (d != NULL) {
        closedir(d);
    }
    return found;
}

/* NCONC first requests at once, all compiling and saving: exactly the
 * limit is allowed, and one sound file remains. */
static void test_concurrent(void)
{
    char sp[SNAP_MAX];
    char at[TEST_PATH_MAX];
    pid_t pids[NCONC];
    long long deadline;
    int allowed = 0, denied = 0;

    CU_ASSERT_FATAL(settle());
    CU_ASSERT_FATAL(unlink(snap(sp)) == 0);
    for (int i = 0; i < NCONC; i++) {
        pids[i] = start(i, "k1");
    }
    deadline = mono_ms() + test_scale_ms(10000);
    for (int i = 0; i < NCONC; i++) {
        char out[16];
        char *text;

        CU_ASSERT(pids[i] > 0 && finish(pids[i], deadline));
        snprintf(out, sizeof(out), "out.%d", i);
        text = test_read_file(e2e_path(at, out), NULL);
        allowed += text != NULL && strncmp(text, "Content-Type:", 13) == 0;
        denied += text != NULL && strncmp(text, "Status: 429", 11) == 0;
        free(text);
    }
    CU_ASSERT_EQUAL(allowed, 2);
    CU_ASSERT_EQUAL(denied, NCONC - 2);
    CU_ASSERT(sound());
    CU_ASSERT(!leftovers());
}

/* --check goes to the compiler; a compiler that cannot be run is a 500
 * and one line, never a request let through. */
static void test_check_and_no_compiler(void)
{
    const char *check[] = {cgirun_bin(), "-c", e2e.conf, "--check", NULL};
    const char *vars[] = {"SUSPECT_CGI_COMPILE=/nonexistent/compile",
                          "REQUEST_METHOD=GET", "REQUEST_URI=/hdr",
                          "HTTP_X_MEMBER=n1", NULL};
    const char *run[] = {cgirun_bin(), "-c", e2e.conf, NULL};
    cgi_out_t r;

    char *text = test_read_file(e2e.conf, NULL);
    char *failure;

    cgirun(&r, check, NULL, NULL, 0, false);
    CU_ASSERT(cgirun_exited_0(&r));
    CU_ASSERT(r.out != NULL && strstr(r.out, "store (suspect-cgi): lmdb"));
    cgirun_free(&r);
    /* a reading suspect-cgi cannot make: refused, and nothing said "ok"
     * first */
    failure = test_subst(text, (const char *[]){"/>\n  </Route>",
                                                " normalize=\"html-entities\"/>"
                                                "\n  </Route>",
                                                NULL});
    CU_ASSERT_FATAL(failure != NULL &&
                    test_write_file(e2e.conf, failure, strlen(failure)) == 0);
    cgirun(&r, check, NULL, NULL, 0, false);
    CU_ASSERT(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 1);
    CU_ASSERT(r.out == NULL || r.out[0] == '\0');
    CU_ASSERT(r.err != NULL &&
              strstr(r.err, "Identity: normalize html-entities needs"));
    cgirun_free(&r);
    CU_ASSERT_FATAL(test_write_file(e2e.conf, text, strlen(text)) == 0);
    free(failure);
    free(text);
    cgirun(&r, run, vars, NULL, 0, false);
    CU_ASSERT(cgirun_starts(&r, "Status: 500"));
    CU_ASSERT(cgirun_one_log_line(&r, "cannot run /nonexistent/compile"));
    CU_ASSERT(!ran());
    cgirun_free(&r);
}

/* suspect-cgi carries no XML parser, linked or loaded: its file names
 * neither libxml2 nor any of its functions. */
static void test_no_xml(void)
{
    size_t len = 0;
    char *bin = test_read_file(cgirun_bin(), &len);
    bool found = false;

    CU_ASSERT_FATAL(bin != NULL && len > 0);
    for (size_t i = 0; i + 8 <= len && !found; i++) {
        found = (bin[i] == 'l' && memcmp(bin + i, "libxml2", 7) == 0) ||
                (bin[i] == 'x' && memcmp(bin + i, "xmlRead", 7) == 0) ||
                (bin[i] == 'x' && memcmp(bin + i, "xmlCtxt", 7) == 0);
    }
    CU_ASSERT(!found);
    free(bin);
}

int cgirun_add_snap_run_tests(struct CU_Suite *s)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        {"compiled: saved once settled, then used", test_used},
        {"compiled: suspect.xml edited (size, inode, mtime kept)",
         test_stale_conf},
        {"compiled: limits file edited (size, inode, mtime kept)",
         test_stale_limits},
        {"compiled: template edited (size, inode, mtime kept)",
         test_stale_template},
        {"compiled: damaged or untrusted file compiled again", test_damaged},
        {"compiled: a bad edit keeps the last good one",
         test_bad_edit_keeps_last},
        {"compiled: unwritable directory, one warning", test_unwritable},
        {"compiled: concurrent first requests", test_concurrent},
        {"compiled: --check, and no compiler", test_check_and_no_compiler},
        {"compiled: suspect-cgi links no XML parser", test_no_xml},
        {"compiled: a request no route counts needs no store",
         test_store_not_needed},
    };

    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return 0;
}
