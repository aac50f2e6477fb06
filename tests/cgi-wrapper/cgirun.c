/*
 * cgirun.c - suspect-cgi as a web server runs it (cgirun.h).
 *
 * One poll() loop feeds the body (non-blocking, so a program that answers
 * without reading it cannot block the test; EPIPE ends the feeding) and
 * collects stdout and stderr until both end or the deadline passes; the
 * process is then reaped, killed first if it still runs.  SIGPIPE must be
 * ignored by the caller (the suite does); the child gets it back.
 *
 * lighttpd: examples/lighttpd/suspect-cgi.conf enabled with
 * lighty-enable-mod in Debian's lighttpd layout (helpers/debian.h), the
 * document root DIR/www.  lighttpd gives CGI programs none of its
 * environment: a drop-in of the test's own passes what a build tree
 * needs.
 */
#include "cgirun.h"

#include <CUnit/CUnit.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "helpers/debian.h"
#include "helpers/e2e.h"
#include "helpers/redisserver.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"

#define RUN_MS 5000

static char bin[TEST_PATH_MAX];      /* the suspect-cgi executable */
static char compiler[TEST_PATH_MAX]; /* suspect-cgi-compile */
static char libenv[TEST_PATH_MAX];   /* LD_LIBRARY_PATH=... or "" */
static char compenv[TEST_PATH_MAX + 32];
static char lmdbenv[TEST_PATH_MAX];
static char snapenv[TEST_PATH_MAX];

/* Whether path is an executable (ELF), not a libtool wrapper script. */
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

/* The compiler of build: BUILD/suspect-cgi-compile when it is the program
 * itself (a static build), else the real one of a libtool build in
 * BUILD/.libs, which then needs LD_LIBRARY_PATH. */
static void find_compiler(const char *build)
{
    char path[TEST_PATH_MAX];
    const char *env = getenv("SUSPECT_CGI_COMPILE");

    snprintf(path, sizeof(path), "%s/suspect-cgi-compile", build);
    if (env != NULL && env[0] != '\0') {
        snprintf(path, sizeof(path), "%s", env);
    } else if (!is_elf(path)) {
        char *lib = realpath(build, NULL);

        snprintf(path, sizeof(path), "%s/.libs/suspect-cgi-compile", build);
        snprintf(libenv, sizeof(libenv), "LD_LIBRARY_PATH=%s/.libs",
                 lib != NULL ? lib : build);
        free(lib);
    }
    if (realpath(path, compiler) == NULL) {
        snprintf(compiler, sizeof(compiler), "%s", path);
    }
    snprintf(compenv, sizeof(compenv), "SUSPECT_CGI_COMPILE=%s", compiler);
}

int cgirun_init(void)
{
    const char *env = getenv("SUSPECT_CGI");
    const char *build = getenv("SUSPECT_BUILDDIR");
    char path[TEST_PATH_MAX];

    libenv[0] = '\0';
    if (build == NULL || build[0] == '\0') {
        build = ".";
    }
    snprintf(path, sizeof(path), "%s/suspect-cgi", build);
    if (env != NULL && env[0] != '\0') {
        snprintf(path, sizeof(path), "%s", env);
    }
    if (realpath(path, bin) == NULL) {
        snprintf(bin, sizeof(bin), "%s", path);
    }
    find_compiler(build);
    return access(bin, X_OK) == 0 && access(compiler, X_OK) == 0 ? 0 : -1;
}

const char *cgirun_bin(void)
{
    return bin;
}

const char *cgirun_compiler(void)
{
    return compiler;
}

const char *cgirun_libenv(void)
{
    return libenv;
}

const char *cgirun_compenv(void)
{
    return compenv;
}

/* Whether vars (may be NULL) sets the variable "NAME=" prefix. */
static bool has_var(const char *const vars[], const char *prefix)
{
    for (size_t i = 0; vars != NULL && vars[i] != NULL; i++) {
        if (strncmp(vars[i], prefix, strlen(prefix)) == 0) {
            return true;
        }
    }
    return false;
}

void cgirun_env(const char *env[], const char *const vars[])
{
    size_t n = 0;

    snprintf(lmdbenv, sizeof(lmdbenv), "SUSPECT_LMDB=%s/suspect.lmdb", e2e.dir);
    snprintf(snapenv, sizeof(snapenv), "SUSPECT_SNAPSHOT_DIR=%s", e2e.dir);
    for (size_t i = 0; vars != NULL && vars[i] != NULL; i++) {
        env[n++] = vars[i];
    }
    env[n++] = "GATEWAY_INTERFACE=CGI/1.1";
    env[n++] = "PATH=/usr/bin:/bin";
    env[n++] = lmdbenv;
    env[n++] = snapenv;
    if (!has_var(vars, "SUSPECT_CGI_COMPILE=")) {
        env[n++] = compenv;
    }
    if (libenv[0] != '\0') {
        env[n++] = libenv;
    }
    if (test_vg_on()) {
        /* valgrind adds it and leaves it, emptied, to what suspect-cgi
         * executes. */
        env[n++] = "LD_PRELOAD=";
    }
    env[n] = NULL;
}

/* Appends what fd has to *buf; false at EOF or error. */
static bool drain(int fd, char **buf, size_t *len)
{
    char chunk[65536];
    ssize_t n = read(fd, chunk, sizeof(chunk));
    char *nb;

    if (n <= 0) {
        return n < 0 && errno == EINTR;
    }
    nb = realloc(*buf, *len + (size_t)n + 1);
    if (nb == NULL) {
        return false;
    }
    memcpy(nb + *len, chunk, (size_t)n);
    *len += (size_t)n;
    nb[*len] = '\0';
    *buf = nb;
    return true;
}

/* Closes the descriptors of fds that are open. */
static void close_all(const int *fds, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (fds[i] >= 0) {
            close(fds[i]);
        }
    }
}

/* Feeds the body and collects the output until both pipes end. */
static void pump(int in, int out, int err, const char *body, size_t len,
                 cgi_out_t *r)
{
    long long deadline = mono_ms() + test_scale_ms(RUN_MS);
    size_t off = 0, err_len = 0;

    while ((out >= 0 || err >= 0) && mono_ms() < deadline) {
        struct pollfd p[3] = {{out, POLLIN, 0}, {err, POLLIN, 0}, {-1, 0, 0}};

        if (in >= 0 && off == len) {
            close(in);
            in = -1;
        }
        p[2].fd = in;
        p[2].events = POLLOUT;
        if (poll(p, 3, 50) <= 0) {
            continue;
        }
        if (p[0].revents != 0 && !drain(out, &r->out, &r->out_len)) {
            close(out);
            out = -1;
        }
        if (p[1].revents != 0 && !drain(err, &r->err, &err_len)) {
            close(err);
            err = -1;
        }
        if (in >= 0 && p[2].revents != 0) {
            ssize_t n = write(in, body + off, len - off);

            if (n < 0 && errno != EAGAIN && errno != EINTR) {
                close(in); /* EPIPE: it did not want the rest */
                in = -1;
            }
            off += n > 0 ? (size_t)n : 0;
        }
    }
    close_all((int[]){in, out, err}, 3);
}

/* Waits for pid until the deadline, then kills it; the wait status. */
static int reap(pid_t pid)
{
    long long deadline = mono_ms() + test_scale_ms(RUN_MS);
    int status = -1;

    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (mono_ms() >= deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            return -1;
        }
        poll(NULL, 0, 5);
    }
    return status;
}

/* Starts argv with env and fds[0..2] as its stdin, stdout and stderr, a
 * clean signal mask and SIGPIPE at its default; the pid, or -1.  Under
 * scripts/valgrind, suspect-cgi itself (not a #! script) runs under
 * valgrind. */
static pid_t spawn(const char *const argv[], const char *const env[],
                   const int fds[3])
{
    const char *wrapped[64];
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t none, dfl;
    pid_t pid;
    int rc;

    if (strcmp(argv[0], bin) == 0) {
        argv = test_vg_argv(argv, wrapped, sizeof(wrapped) / sizeof(*wrapped));
    }

    posix_spawn_file_actions_init(&fa);
    for (int i = 0; i < 3; i++) {
        posix_spawn_file_actions_adddup2(&fa, fds[i], i);
    }
    sigemptyset(&none);
    sigemptyset(&dfl);
    sigaddset(&dfl, SIGPIPE);
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr,
                             POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &dfl);
    rc = posix_spawn(&pid, argv[0], &fa, &attr, (char *const *)argv,
                     (char *const *)env);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) {
        fprintf(stderr, "suspect-cgi: cannot run %s: %s\n", argv[0],
                strerror(rc));
        return -1;
    }
    return pid;
}

void cgirun(cgi_out_t *r, const char *const argv[], const char *const vars[],
            const char *body, size_t len, bool spool)
{
    const char *env[CGIRUN_MAX_ENV];
    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
    char path[TEST_PATH_MAX];
    pid_t pid = -1;

    memset(r, 0, sizeof(*r));
    r->status = -1;
    cgirun_env(env, vars);
    snprintf(path, sizeof(path), "%s/body.in", e2e.dir);
    if (spool && test_write_file(path, body, len) == 0) {
        in[0] = open(path, O_RDONLY | O_CLOEXEC);
    } else if (!spool && pipe2(in, O_CLOEXEC) != 0) {
        in[0] = -1;
    }
    if (in[0] >= 0 && pipe2(out, O_CLOEXEC) == 0 &&
        pipe2(err, O_CLOEXEC) == 0) {
        pid = spawn(argv, env, (int[]){in[0], out[1], err[1]});
    }
    close_all((int[]){in[0], out[1], err[1]}, 3);
    if (pid < 0) {
        close_all((int[]){in[1], out[0], err[0]}, 3);
        CU_FAIL("suspect-cgi: could not be started");
        return;
    }
    if (in[1] >= 0) {
        fcntl(in[1], F_SETFL, O_NONBLOCK);
    }
    pump(in[1], out[0], err[0], body, spool ? 0 : len, r);
    r->status = reap(pid);
    if (r->err != NULL &&
        (strstr(r->err, "Sanitizer") || strstr(r->err, "runtime error:"))) {
        CU_FAIL("suspect-cgi: sanitizer report");
        fprintf(stderr, "%s\n", r->err);
    }
}

void cgirun_free(cgi_out_t *r)
{
    free(r->out);
    free(r->err);
}

bool cgirun_exited_0(const cgi_out_t *r)
{
    return r->status != -1 && WIFEXITED(r->status) &&
           WEXITSTATUS(r->status) == 0;
}

bool cgirun_starts(const cgi_out_t *r, const char *prefix)
{
    bool ok = r->out != NULL && strncmp(r->out, prefix, strlen(prefix)) == 0;

    if (!ok) {
        fprintf(stderr, "expected '%s', got:\n%s\nstderr: %s\n", prefix,
                r->out != NULL ? r->out : "(nothing)",
                r->err != NULL ? r->err : "");
    }
    return ok;
}

bool cgirun_has_line(const cgi_out_t *r, const char *line)
{
    char want[TEST_PATH_MAX + 64];

    snprintf(want, sizeof(want), "\n%s\n", line);
    return r->out != NULL && strstr(r->out, want) != NULL;
}

bool cgirun_one_log_line(const cgi_out_t *r, const char *text)
{
    const char *nl = r->err != NULL ? strchr(r->err, '\n') : NULL;
    bool ok = nl != NULL && nl[1] == '\0' && strstr(r->err, text) != NULL;

    if (!ok) {
        fprintf(stderr, "stderr should be one line with '%s': %s\n", text,
                r->err != NULL ? r->err : "(nothing)");
    }
    return ok;
}

/* See cgirun.h. */
int cgirun_start_lighttpd(void)
{
    static const char test_env[] =
        "# -*- depends: setenv -*-\n"
        "setenv.add-environment = ( \"LD_LIBRARY_PATH\" => \"@LIB@\",\n"
        "  \"SUSPECT_CGI_COMPILE\" => \"@COMP@\",\n"
        "  \"SUSPECT_SNAPSHOT_DIR\" => \"@DIR@\" )\n";
    char www[TEST_PATH_MAX], conf[TEST_PATH_MAX], env[TEST_PATH_MAX];
    const char *lib = strchr(cgirun_libenv(), '=');
    const char *pairs[] = {"@LIB@",  lib != NULL ? lib + 1 : "",
                           "@COMP@", cgirun_compiler(),
                           "@DIR@",  e2e.dir,
                           NULL};
    char *text = test_subst(test_env, pairs);
    int rc;

    e2e_path(www, "www");
    e2e_path(env, "test-env.conf");
    e2e_path(conf, "suspect-cgi.conf");
    e2e.port = test_free_port();
    mkdir(www, 0755);
    rc = text != NULL ? test_write_file(env, text, strlen(text)) : -1;
    free(text);
    if (rc != 0 || e2e.port <= 0 ||
        e2e_write_example("lighttpd/suspect-cgi.conf", "suspect-cgi.conf",
                          NULL) ||
        deb_lighttpd_layout(e2e.dir, e2e.port, www) != 0 ||
        deb_lighttpd_enable(e2e.dir, "00-test-env.conf", env) != 0 ||
        deb_lighttpd_enable(e2e.dir, "50-suspect-cgi.conf", conf) != 0) {
        return -1;
    }
    CU_ASSERT_EQUAL(deb_lighttpd_check(e2e.dir), 0);
    return deb_lighttpd_start(&e2e.web, e2e.dir, e2e.port);
}
