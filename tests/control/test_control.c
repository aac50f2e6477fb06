/*
 * test_control.c - suite "control": the control socket's server
 * (middleware/control/control_server.c) and client (control_io.c) over a
 * real unix socket in a temp dir, with a handler that echoes: a request
 * answered, another version and a malformed request answered with an
 * error, a peer that sends nothing cut at the timeout, a stale socket
 * replaced and a live one left alone, a peer that is not allowed refused
 * (a child process that drops to another uid), the socket's mode.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "control/control_io.h"
#include "control/control_server.h"
#include "control_test.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"
#include "suites.h"

static char *dir;

/* Answers "ok" and echoes the command. */
static void echo(void *arg, const mw_ctl_msg_t *req, mw_ctl_out_t *reply)
{
    const char *cmd = mw_ctl_get_str(req, "command", NULL);

    ++*(int *)arg;
    mw_ctl_out_line(reply, "ok");
    mw_ctl_out_field(reply, "echo", cmd != NULL ? cmd : "none");
}

static mw_ctl_server_t *start(const char *path, int *calls, unsigned io_ms)
{
    mw_ctl_server_opts_t o;
    mw_ctl_server_t *s = NULL;
    suspect_err_t err;

    memset(&o, 0, sizeof(o));
    o.path = path;
    o.io_timeout_ms = io_ms;
    o.handler = echo;
    o.arg = calls;
    suspect_err_clear(&err);
    if (mw_ctl_server_start(&o, &s, &err) != SUSPECT_OK) {
        fprintf(stderr, "\n  control server: %s\n", err.text);
    }
    return s;
}

/* Sends text raw and reads the reply; the rc. */
static suspect_rc_t call_raw(const char *path, const char *text,
                             mw_ctl_msg_t *reply)
{
    return mw_ctl_call(path, text, strlen(text), test_scale_ms(5000), reply,
                       NULL);
}

static void test_request_answered(void)
{
    char path[600];
    int calls = 0;
    mw_ctl_server_t *s;
    mw_ctl_msg_t r;
    struct stat st;

    snprintf(path, sizeof(path), "%s/a.sock", dir);
    s = start(path, &calls, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(stat(path, &st), 0);
    CU_ASSERT_EQUAL(st.st_mode & 0777, 0660);
    CU_ASSERT_EQUAL(call_raw(path, "suspect-control 1\ncommand stats\n\n", &r),
                    SUSPECT_OK);
    CU_ASSERT_PTR_NOT_NULL(mw_ctl_get(&r, "ok"));
    CU_ASSERT_STRING_EQUAL(mw_ctl_get_str(&r, "echo", NULL), "stats");
    mw_ctl_msg_free(&r);
    /* another version: an error naming ours */
    CU_ASSERT_EQUAL(call_raw(path, "suspect-control 7\nx y\n\n", &r),
                    SUSPECT_OK);
    CU_ASSERT_STRING_EQUAL(mw_ctl_get_str(&r, "error", NULL), "version");
    CU_ASSERT_PTR_NOT_NULL(
        strstr(mw_ctl_get(&r, "error")->arg[1].p, "speaks version 1"));
    mw_ctl_msg_free(&r);
    /* malformed: an error, the handler never called */
    CU_ASSERT_EQUAL(call_raw(path, "suspect-control 1\nBAD\n\n", &r),
                    SUSPECT_OK);
    CU_ASSERT_STRING_EQUAL(mw_ctl_get_str(&r, "error", NULL), "protocol");
    mw_ctl_msg_free(&r);
    CU_ASSERT_EQUAL(calls, 1);
    mw_ctl_server_stop(s);
    CU_ASSERT_NOT_EQUAL(access(path, F_OK), 0);
    /* nobody there now */
    CU_ASSERT_EQUAL(call_raw(path, "suspect-control 1\n\n", &r),
                    SUSPECT_E_NOTFOUND);
}

/* A peer that connects and sends nothing (or half a request) holds the
 * server for the timeout only; the next one is served. */
static void test_silent_peer(void)
{
    char path[600];
    struct sockaddr_un a;
    int calls = 0, fd;
    mw_ctl_server_t *s;
    mw_ctl_msg_t r;
    long long t0;

    snprintf(path, sizeof(path), "%s/b.sock", dir);
    s = start(path, &calls, 200);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    memset(&a, 0, sizeof(a));
    a.sun_family = AF_UNIX;
    CU_ASSERT_FATAL(strlen(path) < sizeof(a.sun_path));
    memcpy(a.sun_path, path, strlen(path) + 1);
    CU_ASSERT_EQUAL_FATAL(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    CU_ASSERT_EQUAL(write(fd, "suspect-control 1\ncomm", 22), 22);
    t0 = (long long)mono_ms();
    CU_ASSERT_EQUAL(call_raw(path, "suspect-control 1\ncommand next\n\n", &r),
                    SUSPECT_OK);
    CU_ASSERT_STRING_EQUAL(mw_ctl_get_str(&r, "echo", NULL), "next");
    CU_ASSERT(mono_ms() - t0 >= 150);
    mw_ctl_msg_free(&r);
    close(fd);
    mw_ctl_server_stop(s);
}

/* A stale socket is replaced; a live one, or a file, is left alone. */
static void test_socket_in_the_way(void)
{
    char path[600];
    int calls = 0, fd;
    struct sockaddr_un a;
    mw_ctl_server_t *s, *s2;

    snprintf(path, sizeof(path), "%s/c.sock", dir);
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    memset(&a, 0, sizeof(a));
    a.sun_family = AF_UNIX;
    CU_ASSERT_FATAL(strlen(path) < sizeof(a.sun_path));
    memcpy(a.sun_path, path, strlen(path) + 1);
    CU_ASSERT_EQUAL(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    close(fd); /* bound, never listened: stale */
    s = start(path, &calls, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    s2 = start(path, &calls, 0);
    CU_ASSERT_PTR_NULL(s2);
    mw_ctl_server_stop(s2);
    mw_ctl_server_stop(s);
    snprintf(path, sizeof(path), "%s/plain", dir);
    CU_ASSERT_EQUAL(test_write_file(path, "x", 1), 0);
    CU_ASSERT_PTR_NULL(start(path, &calls, 0));
    CU_ASSERT_EQUAL(access(path, F_OK), 0);
}

/* A peer that is not root, the daemon's user or its group is refused:
 * a child process that takes another uid (the suite runs as root; as
 * another user it can only check that its own uid is let in). */
static void test_peer_refused(void)
{
    char path[600];
    int calls = 0, status = -1;
    mw_ctl_server_t *s;
    pid_t pid;

    snprintf(path, sizeof(path), "%s/d.sock", dir);
    s = start(path, &calls, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_EQUAL(chmod(path, 0666), 0);
    if (geteuid() != 0) {
        mw_ctl_msg_t r;

        CU_ASSERT_EQUAL(call_raw(path, "suspect-control 1\ncommand x\n\n", &r),
                        SUSPECT_OK);
        CU_ASSERT_PTR_NOT_NULL(mw_ctl_get(&r, "ok"));
        mw_ctl_msg_free(&r);
        mw_ctl_server_stop(s);
        return;
    }
    CU_ASSERT_EQUAL(chmod(dir, 0755), 0);
    pid = fork();
    if (pid == 0) {
        mw_ctl_msg_t r;
        const char *code;

        if (setgid(65534) != 0 || setuid(65534) != 0) {
            _exit(3);
        }
        if (call_raw(path, "suspect-control 1\ncommand x\n\n", &r) !=
            SUSPECT_OK) {
            _exit(4);
        }
        code = mw_ctl_get_str(&r, "error", NULL);
        _exit(code != NULL && strcmp(code, "denied") == 0 ? 0 : 5);
    }
    CU_ASSERT_FATAL(pid > 0);
    waitpid(pid, &status, 0);
    CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CU_ASSERT_EQUAL(calls, 0);
    mw_ctl_server_stop(s);
}

int control_add_server_tests(CU_pSuite s)
{
    if (!CU_add_test(s, "server: a request answered", test_request_answered) ||
        !CU_add_test(s, "server: a silent peer", test_silent_peer) ||
        !CU_add_test(s, "server: a socket in the way",
                     test_socket_in_the_way) ||
        !CU_add_test(s, "server: a peer refused", test_peer_refused)) {
        return -1;
    }
    return 0;
}

static int suite_init(void)
{
    dir = test_mkdtemp();
    return dir != NULL ? 0 : -1;
}

static int suite_clean(void)
{
    test_rmtree(dir);
    free(dir);
    return 0;
}

int register_control_suite(void)
{
    CU_pSuite s = CU_add_suite("control", suite_init, suite_clean);

    if (s == NULL || control_add_proto_tests(s) != 0 ||
        control_add_server_tests(s) != 0) {
        return -1;
    }
    return 0;
}
