/*
 * wrap_io.c - the CGI request's input and output in suspect-cgi (wrap_io.h).
 *
 * Variables: one mw_param_t per "NAME=value" string of the environment,
 * pointing into it (the strings are NUL-terminated, as mw_param_t wants of
 * values), in environment order.
 *
 * Body: reads go to in_fd, at most CONTENT_LENGTH bytes in all; an end of
 * input before that is an error (-EIO), so a truncated body is never
 * decided on nor handed on.  Without a usable CONTENT_LENGTH the body is
 * whatever comes before the end of input.  Every read waits with poll()
 * and a deadline, so a stalled web server cannot hold the program forever,
 * and copes with an in_fd left non-blocking.  `consumed` counts the bytes
 * taken from in_fd: all of them went into the request's prefetch buffer
 * (the middleware only ever prefetches), which is what lets rewind put the
 * body back together.
 *
 * Output: written through at once (denials and errors are one short
 * response; there is nothing to gain from buffering), retried on EINTR and
 * short writes.
 *
 * Rewind: nothing read, nothing done.  A regular file is sought back to
 * the offset it had when the request's I/O was made.  Otherwise a memfd gets
 * the prefetched bytes and the rest of the body, is rewound and dup2()'ed
 * onto in_fd; dup2() clears close-on-exec on the copy, so the memfd itself
 * is made MFD_CLOEXEC and only in_fd survives execve().  A body with a
 * filter (mw_req_filter(): the multipart fields past formMax) is read
 * whole through it first, so a body it refuses never reaches the
 * program: the refusal is answered instead.
 */
#include "wrap_io.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "clock.h"

#define DEFAULT_TIMEOUT_MS 30000u
#define COPY_BUF           65536

struct mw_cgi_io {
    mw_req_t req; /* first: the ops get the request's I/O back by a cast */
    mw_param_t *params;
    int in_fd;
    int out_fd;
    unsigned timeout_ms;
    long long clen;              /* CONTENT_LENGTH, -1 when unusable */
    unsigned long long consumed; /* bytes read from in_fd */
    bool seekable;               /* in_fd is a regular file ... */
    off_t start;                 /* ... and this was its offset */
};

/* Waits until fd is ready for events or deadline (mono ms; 0 = do not
 * wait): 0, -EAGAIN (not ready, no wait), -ETIMEDOUT or -errno. */
static int wait_fd(int fd, short events, long long deadline)
{
    for (;;) {
        struct pollfd p = {fd, events, 0};
        long long left = deadline > 0 ? deadline - mono_ms() : 0;
        int r = poll(&p, 1, left > 0 ? (int)left : 0);

        if (r > 0) {
            return 0;
        }
        if (r < 0 && errno != EINTR) {
            return -errno;
        }
        if (r == 0) {
            return deadline == 0 ? -EAGAIN : -ETIMEDOUT;
        }
    }
}

static ssize_t io_read(mw_req_t *req, void *buf, size_t n, bool wait)
{
    mw_cgi_io_t *f = (mw_cgi_io_t *)req;
    long long deadline = wait ? mono_ms() + f->timeout_ms : 0;

    if (f->clen >= 0) {
        unsigned long long left = (unsigned long long)f->clen - f->consumed;

        if (left == 0) {
            return 0;
        }
        if (n > left) {
            n = (size_t)left;
        }
    }
    for (;;) {
        int w = wait_fd(f->in_fd, POLLIN, deadline);
        ssize_t r;

        if (w < 0) {
            return w;
        }
        r = read(f->in_fd, buf, n);
        if (r > 0) {
            f->consumed += (unsigned long long)r;
            return r;
        }
        if (r == 0) {
            return f->clen >= 0 ? -EIO : 0; /* cut short, or the end */
        }
        if (errno != EINTR && errno != EAGAIN) {
            return -errno;
        }
        if (errno == EAGAIN && !wait) {
            return -EAGAIN;
        }
    }
}

static int io_read_fd(mw_req_t *req)
{
    return ((mw_cgi_io_t *)req)->in_fd;
}

/* Writes all n bytes to fd; 0 or -errno. */
static int write_all(int fd, const void *buf, size_t n, unsigned timeout_ms)
{
    const char *p = buf;

    while (n > 0) {
        ssize_t r = write(fd, p, n);

        if (r > 0) {
            p += r;
            n -= (size_t)r;
        } else if (r < 0 && errno == EAGAIN) {
            int w = wait_fd(fd, POLLOUT, mono_ms() + timeout_ms);

            if (w < 0) {
                return w;
            }
        } else if (r < 0 && errno != EINTR) {
            return -errno;
        }
    }
    return 0;
}

static int io_write(mw_req_t *req, const void *buf, size_t n)
{
    mw_cgi_io_t *f = (mw_cgi_io_t *)req;

    return write_all(f->out_fd, buf, n, f->timeout_ms);
}

static int io_flush(mw_req_t *req)
{
    (void)req;
    return 0;
}

static const mw_req_ops_t io_ops = {io_read, io_read_fd, io_write, io_flush};

/* Points f's params at the "NAME=value" strings of envp. */
static suspect_rc_t load_params(mw_cgi_io_t *f, char *const *envp)
{
    size_t n = 0, k = 0;

    while (envp[n] != NULL) {
        n++;
    }
    f->params = suspect_calloc(n > 0 ? n : 1, sizeof(*f->params));
    if (f->params == NULL) {
        return SUSPECT_E_NOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const char *eq = strchr(envp[i], '=');

        if (eq == NULL || eq == envp[i]) {
            continue;
        }
        f->params[k].name = envp[i];
        f->params[k].name_len = (size_t)(eq - envp[i]);
        f->params[k].value = eq + 1;
        f->params[k].value_len = strlen(eq + 1);
        f->params[k].repeated = false;
        k++;
    }
    f->req.params = f->params;
    f->req.nparams = k;
    return SUSPECT_OK;
}

suspect_rc_t mw_cgi_io_new(char *const *envp, int in_fd, int out_fd,
                           mw_cgi_io_t **out, suspect_err_t *err)
{
    mw_cgi_io_t *f = suspect_calloc(1, sizeof(*f));
    struct stat st;

    if (f == NULL || load_params(f, envp) != SUSPECT_OK) {
        mw_cgi_io_free(f);
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0, "out of memory");
    }
    f->req.ops = &io_ops;
    f->req.role = MW_ROLE_RESPONDER;
    f->in_fd = in_fd;
    f->out_fd = out_fd;
    f->timeout_ms = DEFAULT_TIMEOUT_MS;
    f->clen = mw_req_content_length(&f->req);
    if (fstat(in_fd, &st) == 0 && S_ISREG(st.st_mode)) {
        f->start = lseek(in_fd, 0, SEEK_CUR);
        f->seekable = f->start >= 0;
    }
    *out = f;
    return SUSPECT_OK;
}

void mw_cgi_io_free(mw_cgi_io_t *f)
{
    if (f == NULL) {
        return;
    }
    mw_req_release(&f->req);
    free(f->params);
    free(f);
}

mw_req_t *mw_cgi_io_req(mw_cgi_io_t *f)
{
    return &f->req;
}

void mw_cgi_io_set_timeout(mw_cgi_io_t *f, unsigned timeout_ms)
{
    f->timeout_ms = timeout_ms > 0 ? timeout_ms : DEFAULT_TIMEOUT_MS;
}

/* Sets *status and returns the error. */
static suspect_rc_t fail(int *status, int code, suspect_rc_t rc)
{
    *status = code;
    return rc;
}

/* Copies the rest of the body from in_fd to fd after `have` bytes.  0, or
 * the status to answer (err filled). */
static int copy_rest(mw_cgi_io_t *f, int fd, size_t have, size_t max,
                     suspect_err_t *err)
{
    char *buf = suspect_malloc(COPY_BUF);
    int status = 0;

    if (buf == NULL) {
        suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0, "out of memory");
        return 500;
    }
    while (status == 0 && !f->req.body_done) {
        ssize_t n = io_read(&f->req, buf, COPY_BUF, true);
        int w;

        if (n == 0) {
            break;
        }
        if (n < 0) {
            errno = (int)-n;
            suspect_err_sys(err, SUSPECT_E_IO, NULL, "request body");
            status = 400;
        } else if ((have += (size_t)n) > max) {
            suspect_err_set(err, SUSPECT_E_FULL, NULL, 0,
                            "request body larger than %zu bytes", max);
            status = 413;
        } else if ((w = write_all(fd, buf, (size_t)n, f->timeout_ms)) != 0) {
            errno = -w;
            suspect_err_sys(err, SUSPECT_E_IO, NULL, "request body: memfd");
            status = 500;
        }
    }
    free(buf);
    return status;
}

/* The memfd way of mw_cgi_io_rewind(). */
static suspect_rc_t rewind_memfd(mw_cgi_io_t *f, size_t max, int *status,
                                 suspect_err_t *err)
{
    const mw_req_t *req = &f->req;
    int fd, w, st;

    if ((f->clen >= 0 && (unsigned long long)f->clen > max) ||
        req->pre_len > max) {
        return fail(status, 413,
                    suspect_err_set(err, SUSPECT_E_FULL, NULL, 0,
                                    "request body larger than %zu bytes", max));
    }
    fd = memfd_create("suspect-cgi-body", MFD_CLOEXEC);
    if (fd < 0) {
        return fail(status, 500,
                    suspect_err_sys(err, SUSPECT_E_IO, NULL, "memfd_create"));
    }
    w = write_all(fd, req->pre, req->pre_len, f->timeout_ms);
    if (w != 0) {
        errno = -w;
        close(fd);
        return fail(
            status, 500,
            suspect_err_sys(err, SUSPECT_E_IO, NULL, "request body: memfd"));
    }
    st = copy_rest(f, fd, req->pre_len, max, err);
    if (st == 0 && (lseek(fd, 0, SEEK_SET) != 0 || dup2(fd, f->in_fd) < 0)) {
        suspect_err_sys(err, SUSPECT_E_IO, NULL, "request body: dup2");
        st = 500;
    }
    close(fd);
    return st == 0
               ? SUSPECT_OK
               : fail(status, st, st == 413 ? SUSPECT_E_FULL : SUSPECT_E_IO);
}

/* Reads the body through its filter into fd (-1: only read it); the
 * status to answer (err filled), or 0. */
static int read_filtered(mw_cgi_io_t *f, int fd, size_t max, suspect_err_t *err)
{
    mw_req_t *req = &f->req;
    char *buf = suspect_malloc(COPY_BUF);
    unsigned long long have = 0;
    int st = 0;

    if (buf == NULL) {
        suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0, "out of memory");
        return 500;
    }
    while (st == 0) {
        ssize_t n = mw_req_read(req, buf, COPY_BUF, true);
        int w;

        if (n == 0) {
            break;
        }
        if (n == -EMSGSIZE) {
            suspect_err_set(err, SUSPECT_E_PARSE, NULL, 0,
                            "request body refused: %s", req->refused_why);
            st = req->refused;
        } else if (n < 0) {
            errno = (int)-n;
            suspect_err_sys(err, SUSPECT_E_IO, NULL, "request body");
            st = 400;
        } else if (fd >= 0 && (have += (size_t)n) > max) {
            suspect_err_set(err, SUSPECT_E_FULL, NULL, 0,
                            "request body larger than %zu bytes", max);
            st = 413;
        } else if (fd >= 0 &&
                   (w = write_all(fd, buf, (size_t)n, f->timeout_ms)) != 0) {
            errno = -w;
            suspect_err_sys(err, SUSPECT_E_IO, NULL, "request body: memfd");
            st = 500;
        }
    }
    free(buf);
    return st;
}

/* The rewind of a body with a filter: see the file comment. */
static suspect_rc_t rewind_filtered(mw_cgi_io_t *f, size_t max, int *status,
                                    suspect_err_t *err)
{
    int fd = -1, st;

    if (f->req.pre_off != 0) {
        return fail(status, 500,
                    suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                                    "request body: read before the rewind"));
    }
    if (!f->seekable) {
        fd = memfd_create("suspect-cgi-body", MFD_CLOEXEC);
        if (fd < 0) {
            return fail(
                status, 500,
                suspect_err_sys(err, SUSPECT_E_IO, NULL, "memfd_create"));
        }
    }
    st = read_filtered(f, fd, max, err);
    if (st == 0 && f->seekable &&
        lseek(f->in_fd, f->start, SEEK_SET) != f->start) {
        suspect_err_sys(err, SUSPECT_E_IO, NULL, "request body: lseek");
        st = 500;
    }
    if (st == 0 && fd >= 0 &&
        (lseek(fd, 0, SEEK_SET) != 0 || dup2(fd, f->in_fd) < 0)) {
        suspect_err_sys(err, SUSPECT_E_IO, NULL, "request body: dup2");
        st = 500;
    }
    if (fd >= 0) {
        close(fd);
    }
    return st == 0
               ? SUSPECT_OK
               : fail(status, st, st == 413 ? SUSPECT_E_FULL : SUSPECT_E_IO);
}

suspect_rc_t mw_cgi_io_rewind(mw_cgi_io_t *f, size_t max, int *status,
                              suspect_err_t *err)
{
    *status = 0;
    if (f->req.filter != NULL) {
        return rewind_filtered(f, max, status, err);
    }
    if (f->consumed == 0) {
        return SUSPECT_OK;
    }
    if (f->req.pre == NULL || f->consumed != f->req.pre_len) {
        /* Some body went elsewhere than the prefetch buffer: it cannot be
         * handed on whole. */
        return fail(status, 500,
                    suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                                    "request body: read outside the "
                                    "prefetch buffer"));
    }
    if (f->seekable) {
        if (lseek(f->in_fd, f->start, SEEK_SET) == f->start) {
            return SUSPECT_OK;
        }
        return fail(
            status, 500,
            suspect_err_sys(err, SUSPECT_E_IO, NULL, "request body: lseek"));
    }
    return rewind_memfd(f, max, status, err);
}
