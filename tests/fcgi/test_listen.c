/*
 * test_listen.c - the fcgi-server suite, part three: middleware/listen.c.
 * Every spec form opens a real socket that mw_connect() reaches (unix,
 * IPv4, IPv6 loopback, a name, port 0, fd:N, systemd in a child process
 * whose fd 3 is the socket); a regular file at the unix path is never
 * removed, a stale socket is replaced, a live one is refused; bad specs
 * are SUSPECT_E_CONFIG errors naming the spec; every descriptor is
 * CLOEXEC; mw_connect() times out on a unix listener whose backlog is
 * full.
 */
#include <CUnit/CUnit.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "helpers/fcgiclient.h"
#include "fcgi/listen.h"
#include "helpers/redisserver.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"

/* Fills sa with the unix path (cut to fit: the tests use short ones). */
static void sun_set(struct sockaddr_un *sa, const char *path)
{
    size_t n = strlen(path);

    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    n = n < sizeof(sa->sun_path) ? n : sizeof(sa->sun_path) - 1;
    memcpy(sa->sun_path, path, n);
}

static bool cloexec(int fd)
{
    int f = fcntl(fd, F_GETFD);

    return f >= 0 && (f & FD_CLOEXEC) != 0;
}

static int sockopt(int fd, int level, int name)
{
    int v = -1;
    socklen_t len = sizeof(v);

    getsockopt(fd, level, name, &v, &len);
    return v;
}

/* Opens spec, connects to address through it, accepts: true when all of
 * it worked and every descriptor is CLOEXEC. */
static bool round_trip(const char *spec, const char *address, int *lfd_out)
{
    suspect_err_t err;
    int lfd = -1, c = -1, a = -1;
    bool ok;

    suspect_err_clear(&err);
    ok = mw_listen_open(spec, 16, 0600, &lfd, &err) == SUSPECT_OK;
    if (!ok) {
        fprintf(stderr, "\n%s: %s\n", spec, err.text);
        return false;
    }
    ok = mw_connect(address, 1000, &c, &err) == SUSPECT_OK;
    if (ok) {
        a = accept(lfd, NULL, NULL);
        ok = a >= 0 && cloexec(lfd) && cloexec(c) &&
             (fcntl(c, F_GETFL) & O_NONBLOCK) == 0 &&
             sockopt(lfd, SOL_SOCKET, SO_ACCEPTCONN) == 1;
    } else {
        fprintf(stderr, "\n%s: %s\n", address, err.text);
    }
    if (a >= 0) {
        close(a);
    }
    if (c >= 0) {
        close(c);
    }
    if (lfd_out != NULL && ok) {
        *lfd_out = lfd;
    } else {
        close(lfd);
    }
    return ok;
}

static void test_unix(void)
{
    char *dir = test_mkdtemp();
    char spec[600];
    struct stat st;
    int lfd = -1;

    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    snprintf(spec, sizeof(spec), "unix:%s/s.sock", dir);
    CU_ASSERT_TRUE(round_trip(spec, spec, &lfd));
    CU_ASSERT_EQUAL(stat(spec + 5, &st), 0);
    CU_ASSERT_TRUE(S_ISSOCK(st.st_mode));
    CU_ASSERT_EQUAL(st.st_mode & 0777, 0600);
    close(lfd);
    mw_listen_cleanup(spec);
    CU_ASSERT_NOT_EQUAL(access(spec + 5, F_OK), 0);
    test_rmtree(dir);
    free(dir);
}

static void test_unix_existing_paths(void)
{
    char *dir = test_mkdtemp();
    char spec[600];
    suspect_err_t err;
    struct sockaddr_un sa;
    int lfd = -1, other, probe;
    size_t len;
    char *data;

    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    snprintf(spec, sizeof(spec), "unix:%s/s.sock", dir);
    /* a regular file is never removed */
    CU_ASSERT_EQUAL(test_write_file(spec + 5, "keep me", 7), 0);
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(mw_listen_open(spec, 16, 0600, &lfd, &err), SUSPECT_E_IO);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "not a socket"));
    data = test_read_file(spec + 5, &len);
    CU_ASSERT_TRUE(data != NULL && len == 7 && memcmp(data, "keep me", 7) == 0);
    free(data);
    mw_listen_cleanup(spec); /* not ours: stays */
    CU_ASSERT_EQUAL(access(spec + 5, F_OK), 0);
    unlink(spec + 5);
    /* a live socket is refused and keeps working */
    sun_set(&sa, spec + 5);
    other = socket(AF_UNIX, SOCK_STREAM, 0);
    CU_ASSERT_EQUAL_FATAL(bind(other, (struct sockaddr *)&sa, sizeof(sa)), 0);
    CU_ASSERT_EQUAL(listen(other, 4), 0);
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(mw_listen_open(spec, 16, 0600, &lfd, &err), SUSPECT_E_IO);
    CU_ASSERT_EQUAL(err.sys_errno, EADDRINUSE);
    probe = fcc_connect(spec + 5);
    CU_ASSERT_TRUE(probe >= 0);
    close(probe);
    /* once it is closed, the stale socket is replaced */
    close(other);
    CU_ASSERT_TRUE(round_trip(spec, spec, &lfd));
    /* cleanup leaves a path someone else has put there since */
    unlink(spec + 5);
    CU_ASSERT_EQUAL(test_write_file(spec + 5, "new", 3), 0);
    mw_listen_cleanup(spec);
    CU_ASSERT_EQUAL(access(spec + 5, F_OK), 0);
    close(lfd);
    test_rmtree(dir);
    free(dir);
}

static void test_tcp(void)
{
    int port = test_free_port(), lfd = -1;
    char spec[64], name[64];
    struct sockaddr_in6 sa6;
    socklen_t len = sizeof(sa6);

    CU_ASSERT_TRUE_FATAL(port > 0);
    snprintf(spec, sizeof(spec), "tcp:127.0.0.1:%d", port);
    CU_ASSERT_TRUE(round_trip(spec, spec, &lfd));
    CU_ASSERT_EQUAL(sockopt(lfd, SOL_SOCKET, SO_REUSEADDR), 1);
    close(lfd);
    /* IPv6 loopback, IPv6 only */
    snprintf(spec, sizeof(spec), "tcp:[::1]:%d", port);
    CU_ASSERT_TRUE(round_trip(spec, spec, &lfd));
    CU_ASSERT_EQUAL(sockopt(lfd, IPPROTO_IPV6, IPV6_V6ONLY), 1);
    CU_ASSERT_EQUAL(getsockname(lfd, (struct sockaddr *)&sa6, &len), 0);
    CU_ASSERT_EQUAL(sa6.sin6_family, AF_INET6);
    close(lfd);
    /* a name, and connecting by address to what it resolved to */
    snprintf(name, sizeof(name), "tcp:localhost:%d", port);
    lfd = -1;
    CU_ASSERT_TRUE(round_trip(name, name, &lfd));
    close(lfd);
}

static void test_port_zero(void)
{
    suspect_err_t err;
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    char address[64];
    int lfd = -1, c = -1;

    suspect_err_clear(&err);
    CU_ASSERT_EQUAL_FATAL(mw_listen_open("tcp:127.0.0.1:0", 4, 0, &lfd, &err),
                          SUSPECT_OK);
    CU_ASSERT_EQUAL(getsockname(lfd, (struct sockaddr *)&sa, &len), 0);
    CU_ASSERT_NOT_EQUAL(ntohs(sa.sin_port), 0);
    snprintf(address, sizeof(address), "tcp:127.0.0.1:%d", ntohs(sa.sin_port));
    CU_ASSERT_EQUAL(mw_connect(address, 1000, &c, &err), SUSPECT_OK);
    close(c);
    /* port 0 is no address to connect to */
    CU_ASSERT_EQUAL(mw_connect("tcp:127.0.0.1:0", 1000, &c, &err),
                    SUSPECT_E_CONFIG);
    close(lfd);
}

/* A listening unix socket in dir without CLOEXEC. */
static int plain_listener(const char *dir, const char *name)
{
    struct sockaddr_un sa;
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);

    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, name);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        listen(fd, 4) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void test_fd_spec(void)
{
    char *dir = test_mkdtemp();
    char spec[32];
    suspect_err_t err;
    int lfd, got = -1, udp, stream, file, bad[4];

    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    lfd = plain_listener(dir, "fd.sock");
    CU_ASSERT_TRUE_FATAL(lfd >= 0);
    CU_ASSERT_FALSE(cloexec(lfd));
    snprintf(spec, sizeof(spec), "fd:%d", lfd);
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(mw_listen_open(spec, 4, 0, &got, &err), SUSPECT_OK);
    CU_ASSERT_EQUAL(got, lfd);
    CU_ASSERT_TRUE(cloexec(lfd));
    /* not listening, not a stream, not a socket, not open */
    udp = socket(AF_INET, SOCK_DGRAM, 0);
    stream = socket(AF_UNIX, SOCK_STREAM, 0);
    file = open("/dev/null", O_RDONLY);
    bad[0] = udp;
    bad[1] = stream;
    bad[2] = file;
    bad[3] = 999;
    for (int i = 0; i < 4; i++) {
        snprintf(spec, sizeof(spec), "fd:%d", bad[i]);
        suspect_err_clear(&err);
        CU_ASSERT_EQUAL(mw_listen_open(spec, 4, 0, &got, &err), SUSPECT_E_IO);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.text, spec));
    }
    close(udp);
    close(stream);
    close(file);
    close(lfd);
    test_rmtree(dir);
    free(dir);
}

/* In a child: makes fd 3 the listener, sets the variables as systemd
 * does, opens spec; exit status 0 when it got fd 3 with CLOEXEC and the
 * variables are gone, 20 for a SUSPECT_E_CONFIG error. */
static int activated_child(int lfd, const char *fds, bool own_pid,
                           const char *spec)
{
    pid_t pid = fork();
    int status = -1;

    if (pid == 0) {
        char buf[32];
        suspect_err_t err;
        int got = -1;

        if (dup2(lfd, 3) != 3) {
            _exit(10);
        }
        snprintf(buf, sizeof(buf), "%d", own_pid ? (int)getpid() : 1);
        setenv("LISTEN_PID", buf, 1);
        setenv("LISTEN_FDS", fds, 1);
        suspect_err_clear(&err);
        if (mw_listen_open(spec, 4, 0, &got, &err) != SUSPECT_OK) {
            _exit(err.code == SUSPECT_E_CONFIG ? 20 : 21);
        }
        _exit(got == 3 && cloexec(3) && getenv("LISTEN_FDS") == NULL ? 0 : 30);
    }
    if (pid > 0) {
        waitpid(pid, &status, 0);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int systemd_child(int lfd, const char *fds, bool own_pid)
{
    return activated_child(lfd, fds, own_pid, "systemd");
}

/* Started by socket activation, a unix: or tcp: listen takes the socket
 * systemd passed on that address (it listens there already: binding one
 * would find the address taken), and refuses one on another address. */
static void test_activated_spec(void)
{
    char *dir = test_mkdtemp();
    char spec[TEST_PATH_MAX], other[TEST_PATH_MAX];
    struct sockaddr_in in;
    socklen_t len = sizeof(in);
    int lfd, tfd;

    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    lfd = plain_listener(dir, "sd.sock");
    CU_ASSERT_TRUE_FATAL(lfd >= 0);
    snprintf(spec, sizeof(spec), "unix:%s/sd.sock", dir);
    snprintf(other, sizeof(other), "unix:%s/other.sock", dir);
    CU_ASSERT_EQUAL(activated_child(lfd, "1", true, spec), 0);
    CU_ASSERT_EQUAL(activated_child(lfd, "1", true, other), 20);
    CU_ASSERT_NOT_EQUAL(access(other + 5, F_OK), 0); /* nothing bound */
    /* not started for this process: the spec binds as usual, and finds
     * the address taken by the live listener */
    CU_ASSERT_EQUAL(activated_child(lfd, "1", false, spec), 21);

    tfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    memset(&in, 0, sizeof(in));
    in.sin_family = AF_INET;
    in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CU_ASSERT_FATAL(bind(tfd, (struct sockaddr *)&in, sizeof(in)) == 0 &&
                    listen(tfd, 4) == 0 &&
                    getsockname(tfd, (struct sockaddr *)&in, &len) == 0);
    snprintf(spec, sizeof(spec), "tcp:127.0.0.1:%d", ntohs(in.sin_port));
    snprintf(other, sizeof(other), "tcp:127.0.0.1:%d",
             ntohs(in.sin_port) == 65535 ? 1 : ntohs(in.sin_port) + 1);
    CU_ASSERT_EQUAL(activated_child(tfd, "1", true, spec), 0);
    CU_ASSERT_EQUAL(activated_child(tfd, "1", true, other), 20);
    close(tfd);
    close(lfd);
    test_rmtree(dir);
    free(dir);
}

static void test_systemd(void)
{
    char *dir = test_mkdtemp();
    suspect_err_t err;
    int lfd, got = -1;
    const char *old_pid = getenv("LISTEN_PID");

    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    lfd = plain_listener(dir, "sd.sock");
    CU_ASSERT_TRUE_FATAL(lfd >= 0);
    CU_ASSERT_EQUAL(systemd_child(lfd, "1", true), 0);
    CU_ASSERT_EQUAL(systemd_child(lfd, "1", false), 20); /* not our pid */
    CU_ASSERT_EQUAL(systemd_child(lfd, "0", true), 20);  /* no socket */
    CU_ASSERT_EQUAL(systemd_child(lfd, "x", true), 20);
    if (old_pid == NULL) {
        suspect_err_clear(&err);
        CU_ASSERT_EQUAL(mw_listen_open("systemd", 4, 0, &got, &err),
                        SUSPECT_E_CONFIG);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "LISTEN_"));
    }
    close(lfd);
    test_rmtree(dir);
    free(dir);
}

static void test_bad_specs(void)
{
    static const char *const specs[] = {
        "",
        "foo",
        "unix:",
        "tcp:",
        "tcp:127.0.0.1",
        "tcp:127.0.0.1:",
        "tcp:127.0.0.1:99999",
        "tcp:127.0.0.1:8x",
        "tcp::::1:80",
        "tcp:[::1]80",
        "tcp:[::1",
        "tcp:[]:80",
        "tcp::80",
        "fd:",
        "fd:-1",
        "fd:3x",
        "tcp:[not-v6]:80",
        "tcp:no-such-host.invalid:80",
        "unix:/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
        "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    };
    suspect_err_t err;
    int fd = -1;

    for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
        suspect_err_clear(&err);
        CU_ASSERT_EQUAL(mw_listen_open(specs[i], 4, 0, &fd, &err),
                        SUSPECT_E_CONFIG);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.text, specs[i]));
        if (strncmp(specs[i], "fd:", 3) != 0) {
            suspect_err_clear(&err);
            CU_ASSERT_EQUAL(mw_connect(specs[i], 100, &fd, &err),
                            SUSPECT_E_CONFIG);
        }
    }
    CU_ASSERT_EQUAL(mw_connect("fd:3", 100, &fd, &err), SUSPECT_E_CONFIG);
}

static void test_connect_errors(void)
{
    char *dir = test_mkdtemp();
    char address[600];
    suspect_err_t err;
    long long t0;
    int port = test_free_port(), fd = -1, lfd, fill[64], n = 0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    snprintf(address, sizeof(address), "tcp:127.0.0.1:%d", port);
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(mw_connect(address, 1000, &fd, &err), SUSPECT_E_IO);
    CU_ASSERT_EQUAL(err.sys_errno, ECONNREFUSED);
    snprintf(address, sizeof(address), "unix:%s/none.sock", dir);
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(mw_connect(address, 1000, &fd, &err), SUSPECT_E_IO);
    CU_ASSERT_EQUAL(err.sys_errno, ENOENT);
    /* a listener that never accepts and whose backlog is full */
    lfd = plain_listener(dir, "full.sock");
    CU_ASSERT_TRUE_FATAL(lfd >= 0);
    CU_ASSERT_EQUAL(listen(lfd, 0), 0);
    snprintf(address, sizeof(address), "unix:%s/full.sock", dir);
    for (n = 0; n < 64; n++) {
        struct sockaddr_un sa;

        fill[n] = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
        sun_set(&sa, address + 5);
        if (connect(fill[n], (struct sockaddr *)&sa, sizeof(sa)) != 0) {
            close(fill[n]);
            break;
        }
    }
    CU_ASSERT_TRUE(n < 64);
    t0 = mono_ms();
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(mw_connect(address, 150, &fd, &err), SUSPECT_E_TIMEOUT);
    CU_ASSERT_TRUE(mono_ms() - t0 >= 140 &&
                   mono_ms() - t0 < test_scale_ms(1000));
    while (n-- > 0) {
        close(fill[n]);
    }
    close(lfd);
    test_rmtree(dir);
    free(dir);
}

int add_listen_tests(CU_pSuite s)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        {"listen unix", test_unix},
        {"listen unix: file, live, stale", test_unix_existing_paths},
        {"listen tcp v4, v6, name", test_tcp},
        {"listen tcp port 0", test_port_zero},
        {"listen fd:N", test_fd_spec},
        {"listen systemd", test_systemd},
        {"socket activation of unix: and tcp:", test_activated_spec},
        {"listen bad specs", test_bad_specs},
        {"connect errors and timeout", test_connect_errors},
    };

    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return 0;
}
