/*
 * test_wrap_io.c - suite "suspect-cgi", part two: the CGI request I/O
 * (middleware/cgi-wrapper/wrap_io.h) in process, over pipes and files, so
 * the sanitizers and valgrind see the code suspect-cgi runs: variables from an
 * environment, reads bounded by CONTENT_LENGTH, stalls, writes, and rewinding
 * the body for the program.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cgi-wrapper/wrap_io.h"
#include "cgirun.h"
#include "helpers/e2e.h"
#include "helpers/util.h"

/* A request I/O over a pipe holding body (closed after it); fds in p. */
static mw_cgi_io_t *io_on(const char *const envp[], const char *body, int p[2],
                          int out)
{
    mw_cgi_io_t *f = NULL;

    CU_ASSERT_FATAL(pipe2(p, O_CLOEXEC) == 0);
    CU_ASSERT_FATAL(write(p[1], body, strlen(body)) == (ssize_t)strlen(body));
    close(p[1]);
    CU_ASSERT_FATAL(mw_cgi_io_new((char *const *)envp, p[0], out, &f, NULL) ==
                    0);
    return f;
}

/* Variables from the environment; reads bounded by CONTENT_LENGTH; an
 * early end is an error; output written through. */
static void test_io_basics(void)
{
    const char *envp[] = {"A=1",     "NOEQ", "=x", "CONTENT_LENGTH=5",
                          "B=x=y\n", NULL};
    const char *short_env[] = {"CONTENT_LENGTH=9", NULL};
    char buf[64];
    int p[2], o[2];
    mw_cgi_io_t *f;
    mw_req_t *req;
    size_t len;

    CU_ASSERT_FATAL(pipe2(o, O_CLOEXEC) == 0);
    f = io_on(envp, "hello world", p, o[1]);
    req = mw_cgi_io_req(f);
    CU_ASSERT_EQUAL(req->nparams, 3);
    CU_ASSERT_EQUAL(req->role, MW_ROLE_RESPONDER);
    CU_ASSERT_STRING_EQUAL(mw_req_param(req, "B", &len), "x=y\n");
    CU_ASSERT_EQUAL(len, 4);
    CU_ASSERT_PTR_NULL(mw_req_param(req, "NOEQ", NULL));
    CU_ASSERT_EQUAL(mw_req_read(req, buf, sizeof(buf), true), 5);
    CU_ASSERT_EQUAL(memcmp(buf, "hello", 5), 0);
    CU_ASSERT_EQUAL(mw_req_read(req, buf, sizeof(buf), true), 0);
    CU_ASSERT_EQUAL(mw_req_write(req, "out", 3), 0);
    CU_ASSERT_EQUAL(read(o[0], buf, sizeof(buf)), 3);
    CU_ASSERT_EQUAL(mw_req_flush(req), 0);
    mw_cgi_io_free(f);
    close(p[0]);
    f = io_on(short_env, "hi", p, o[1]);
    req = mw_cgi_io_req(f);
    CU_ASSERT_EQUAL(mw_req_read(req, buf, sizeof(buf), true), 2);
    CU_ASSERT_EQUAL(mw_req_read(req, buf, sizeof(buf), true), -EIO);
    mw_cgi_io_free(f);
    close(p[0]);
    close(o[0]);
    close(o[1]);
}

/* Reads that would wait: -EAGAIN without wait, -ETIMEDOUT with it. */
static void test_io_stall(void)
{
    const char *envp[] = {"CONTENT_LENGTH=5", NULL};
    mw_cgi_io_t *f = NULL;
    int p[2];
    char buf[8];

    CU_ASSERT_FATAL(pipe2(p, O_CLOEXEC) == 0);
    CU_ASSERT_FATAL(mw_cgi_io_new((char *const *)envp, p[0], -1, &f, NULL) ==
                    0);
    mw_cgi_io_set_timeout(f, 30);
    CU_ASSERT_EQUAL(mw_req_read(mw_cgi_io_req(f), buf, 8, false), -EAGAIN);
    CU_ASSERT_EQUAL(mw_req_read(mw_cgi_io_req(f), buf, 8, true), -ETIMEDOUT);
    mw_cgi_io_free(f);
    close(p[0]);
    close(p[1]);
}

/* Reads what fd holds from its current offset (up to size - 1 bytes). */
static size_t slurp(int fd, char *buf, size_t size)
{
    size_t len = 0;
    ssize_t n;

    while (len < size - 1 && (n = read(fd, buf + len, size - 1 - len)) > 0) {
        len += (size_t)n;
    }
    buf[len] = '\0';
    return len;
}

/* rewind: untouched when nothing was read; a pipe becomes a memfd with
 * the whole body; a file is sought back; too long is a 413. */
static void test_io_rewind(void)
{
    const char *envp[] = {"CONTENT_LENGTH=13", NULL};
    const char *nolen[] = {"X=1", NULL};
    char path[TEST_PATH_MAX], buf[64], link[64];
    const char *pre;
    size_t len;
    bool complete;
    int p[2], st, fd;
    mw_cgi_io_t *f;

    f = io_on(envp, "member=1&rest", p, -1);
    CU_ASSERT_EQUAL(mw_cgi_io_rewind(f, 100, &st, NULL), 0);
    snprintf(path, sizeof(path), "/proc/self/fd/%d", p[0]);
    CU_ASSERT(readlink(path, link, sizeof(link)) > 5 &&
              strncmp(link, "pipe:", 5) == 0);
    CU_ASSERT_EQUAL(mw_req_prefetch(mw_cgi_io_req(f), 4, &pre, &len, &complete),
                    0);
    CU_ASSERT_EQUAL(mw_cgi_io_rewind(f, 100, &st, NULL), 0);
    CU_ASSERT_EQUAL(slurp(p[0], buf, sizeof(buf)), 13);
    CU_ASSERT_STRING_EQUAL(buf, "member=1&rest");
    mw_cgi_io_free(f);
    close(p[0]);

    snprintf(path, sizeof(path), "%s/body", e2e.dir);
    CU_ASSERT_FATAL(test_write_file(path, "..member=1&rest", 15) == 0);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    CU_ASSERT_EQUAL(lseek(fd, 2, SEEK_SET), 2);
    CU_ASSERT_FATAL(mw_cgi_io_new((char *const *)envp, fd, -1, &f, NULL) == 0);
    mw_req_prefetch(mw_cgi_io_req(f), 4, &pre, &len, &complete);
    CU_ASSERT_EQUAL(mw_cgi_io_rewind(f, 100, &st, NULL), 0);
    CU_ASSERT_EQUAL(slurp(fd, buf, sizeof(buf)), 13);
    mw_cgi_io_free(f);
    close(fd);

    f = io_on(envp, "member=1&rest", p, -1);
    mw_req_prefetch(mw_cgi_io_req(f), 4, &pre, &len, &complete);
    CU_ASSERT_EQUAL(mw_cgi_io_rewind(f, 10, &st, NULL), SUSPECT_E_FULL);
    CU_ASSERT_EQUAL(st, 413);
    mw_cgi_io_free(f);
    close(p[0]);
    f = io_on(nolen, "member=1&rest", p, -1); /* to the end of input */
    mw_req_prefetch(mw_cgi_io_req(f), 4, &pre, &len, &complete);
    CU_ASSERT_EQUAL(mw_cgi_io_rewind(f, 10, &st, NULL), SUSPECT_E_FULL);
    CU_ASSERT_EQUAL(st, 413);
    mw_cgi_io_free(f);
    close(p[0]);
}

int cgirun_add_io_tests(struct CU_Suite *s)
{
    if (CU_add_test(s, "request I/O: variables, reads, writes",
                    test_io_basics) == NULL ||
        CU_add_test(s, "request I/O: stalled body", test_io_stall) == NULL ||
        CU_add_test(s, "request I/O: rewind", test_io_rewind) == NULL) {
        return -1;
    }
    return 0;
}
