/*
 * cgi.c - run a CGI program for a request and relay its response.
 *
 * mw_cgi_run() resolves and checks the script (cgi_spawn.c), settles the
 * body length, starts the program, then runs one poll() loop that moves
 * bytes between the request and the program's three pipes (cgi_io.c) until
 * the program has exited and its stdout has ended.  Flushing happens when
 * the loop would otherwise sleep, so output streams as it comes.
 *
 * Body length: the child gets exactly what CONTENT_LENGTH announces (more
 * is not passed on; less ends its stdin early).  When the request has no
 * usable CONTENT_LENGTH (a chunked body, or an empty value) the body is
 * read first, up to CGI_BODY_MAX (else 413), and CONTENT_LENGTH is set to
 * its size, so the environment always matches the bytes on stdin.  What
 * the program left unread when it ends is the request I/O's to drain.
 *
 * Ends: the timeout (the program's whole run), a client that went away (a
 * failed write or flush, or the web server hanging up the request's
 * connection), a body that could not be read and the daemon's stop
 * (mw_cgi_shutdown(): 504) all SIGKILL the program's process group.  The
 * program is always reaped; its wait status is res->exit_status.
 * Children a script leaves running in its group after a normal exit are
 * left alone (fire-and-forget jobs of legacy scripts); they only die with
 * a timeout, a client abort or the daemon.  No output, or output without a
 * header block: 502; a timeout before any output: 504.  Once output has
 * started, a timeout, the stop or a program killed by a signal marks the
 * response cut (mw_req_t.cut): the web server is not told it ended well.
 *
 * Hang-up: a script may print nothing for minutes, so a failed write
 * cannot be the only sign that the client left.  When the request I/O has a
 * connection (mw_req_t.has_conn: FastCGI), the loop polls it for
 * POLLRDHUP for the whole run, body or not, and never reads it.  Only a
 * real hang-up counts: a kept connection (FCGI_KEEP_CONN) that stays open
 * and silent is not one, and bytes the web server sends after the body
 * are left to the request I/O.  nginx closes the connection when its client
 * aborts, with or without keep-conn.
 *
 * SIGPIPE is blocked in the calling thread for the duration (a child that
 * closed its stdin must give EPIPE, not kill the daemon); one raised by
 * our writes is consumed before the caller's mask is restored.
 */
#include "cgi.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "cgi_internal.h"
#include "clock.h"
#include "log/log.h"

#define CGI_TIMEOUT_MS_DEFAULT 30000u

/* Set once by mw_cgi_shutdown(): every run ends at once. */
static atomic_bool shutting_down;

/* ---- the loop ----------------------------------------------------------- */

/* Adds fd with events to the poll set. */
static void watch(struct pollfd *pf, int *n, int fd, short events)
{
    if (fd >= 0) {
        pf[*n].fd = fd;
        pf[*n].events = events;
        pf[*n].revents = 0;
        (*n)++;
    }
}

/* Waits for something to do, at most until the deadline.  Returns true
 * when the web server hung up the request's connection. */
static bool wait_events(cgi_run_t *r, bool busy)
{
    struct pollfd pf[6];
    int n = 0, pidfd_at = -1, conn_at = -1, rc;
    int64_t left = busy ? 0 : r->deadline_ms - mono_ms();

    if (left > INT_MAX) {
        left = INT_MAX;
    }
    if (r->unflushed && !r->discard) {
        r->unflushed = false;
        rc = mw_req_flush(r->req);
        if (rc != 0) {
            r->epipe |= rc == -EPIPE;
            cgi_stop(r);
            return false;
        }
    }
    if (r->req->has_conn && r->req->conn_fd >= 0) {
        conn_at = n;
        watch(pf, &n, r->req->conn_fd, POLLRDHUP);
    }
    if (r->child.in_fd >= 0 && r->pend_len > 0) {
        watch(pf, &n, r->child.in_fd, POLLOUT);
    }
    if (r->body_wait && !r->body_eof) {
        int fd = mw_req_read_fd(r->req);

        watch(pf, &n, fd, POLLIN);
        if (fd < 0 && left > 10) {
            left = 10; /* a request I/O that cannot be polled: retry soon */
        }
    }
    if (!r->out_eof) {
        watch(pf, &n, r->child.out_fd, POLLIN);
    }
    if (!r->err_eof) {
        watch(pf, &n, r->child.err_fd, POLLIN);
    }
    if (!r->exited) {
        pidfd_at = r->child.pidfd >= 0 ? n : -1;
        watch(pf, &n, r->child.pidfd, POLLIN);
        if (r->child.pidfd < 0 && left > 10) {
            left = 10; /* no pidfd: check for its exit now and then */
        }
    }
    rc = poll(pf, (nfds_t)n, left > 0 ? (int)left : 0);
    if (rc > 0 && pidfd_at >= 0 && pf[pidfd_at].revents != 0) {
        r->exited = true;
    } else if (rc < 0 && errno != EINTR) {
        usleep(1000); /* cannot wait: the deadline still ends the run */
    }
    return rc > 0 && conn_at >= 0 &&
           (pf[conn_at].revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

/* Whether the daemon's stop (mw_cgi_shutdown()) ends the run now: unless
 * the program has answered in full, its group is killed (if that has not
 * happened yet) and the client gets a 504. */
static bool shutdown_ends(cgi_run_t *r)
{
    if (!atomic_load(&shutting_down) || r->killed ||
        (r->exited && r->out_eof && r->hdr_done)) {
        return false;
    }
    mw_log(MW_LOG_WARNING, "cgi %s: killed: the daemon is stopping", r->script);
    cgi_fail(r, 504);
    cgi_stop(r);
    return true;
}

/* Runs the started program to its end. */
static void run_loop(cgi_run_t *r, unsigned timeout_ms)
{
    r->deadline_ms = mono_ms() + timeout_ms;
    for (;;) {
        bool busy = cgi_body_pump(r);

        cgi_out_pump(r);
        cgi_err_pump(r, false);
        if (!r->exited && r->child.pidfd < 0) {
            r->exited = cgi_exited(&r->child);
        }
        if (shutdown_ends(r) || r->killed || (r->exited && r->out_eof)) {
            return;
        }
        if (mono_ms() >= r->deadline_ms) {
            mw_log(MW_LOG_WARNING, "cgi %s: killed after %u ms", r->script,
                   timeout_ms);
            r->res->timed_out = true;
            cgi_fail(r, 504);
            cgi_stop(r);
            return;
        }
        if (wait_events(r, busy)) {
            mw_log(MW_LOG_INFO, "cgi %s: killed: the client went away",
                   r->script);
            cgi_stop(r); /* nobody to answer */
            return;
        }
    }
}

/* Explains why a program that printed no response failed. */
static void no_response(cgi_run_t *r)
{
    if (r->child.exec_errno != 0) {
        mw_log(MW_LOG_ERROR, "cgi %s: cannot execute: %s", r->script,
               strerror(r->child.exec_errno));
    } else if (r->hlen > 0) {
        mw_log(MW_LOG_WARNING, "cgi %s: output has no header block", r->script);
    } else {
        mw_log(MW_LOG_WARNING, "cgi %s: exited without output", r->script);
    }
    cgi_fail(r, 502);
}

/* ---- entry -------------------------------------------------------------- */

/* Settles the body: CONTENT_LENGTH, or the whole body read now.  Returns
 * 0 and sets clen (NULL: keep the request's), else a status or -1. */
static int body_setup(cgi_run_t *r, char *clen_buf, size_t size,
                      const char **clen)
{
    long long n = mw_req_content_length(r->req);
    size_t len = 0;
    int st;

    *clen = NULL;
    if (r->req->role != MW_ROLE_RESPONDER) {
        *clen = ""; /* authorizers get no body */
        r->body_eof = true;
        return 0;
    }
    if (n >= 0) {
        r->body_left = (unsigned long long)n;
        r->body_eof = n == 0;
        return 0;
    }
    st = cgi_body_slurp(r, &len);
    if (st == 0) {
        clen_buf[0] = '\0'; /* an empty body: no CONTENT_LENGTH */
        if (len > 0) {
            snprintf(clen_buf, size, "%zu", len);
        }
        *clen = clen_buf;
    }
    return st;
}

/* Starts the program and relays it; the part of mw_cgi_run() after the
 * checks. */
static suspect_rc_t run_program(cgi_run_t *r, const char *clen,
                                unsigned timeout, suspect_err_t *err)
{
    cgi_image_t img;
    suspect_rc_t rc =
        cgi_image_build(r->req, r->script, clen, r->pass_env, &img);

    if (rc != SUSPECT_OK) {
        r->res->status = 500;
        return suspect_err_set(err, rc, NULL, 0, "cgi: out of memory");
    }
    rc = cgi_spawn(&img, &r->child, err);
    free(img.block);
    if (rc != SUSPECT_OK) {
        r->res->status = 500;
        return rc;
    }
    run_loop(r, timeout);
    if (!r->killed) {
        cgi_err_pump(r, true); /* what is left, and a last line */
    }
    r->res->exit_status = cgi_reap(&r->child);
    if (r->req->output_started && !r->killed && r->res->exit_status != -1 &&
        WIFSIGNALED(r->res->exit_status)) {
        mw_log(MW_LOG_WARNING, "cgi %s: killed by signal %d: response cut",
               r->script, WTERMSIG(r->res->exit_status));
        r->req->cut = true; /* it died mid-response, as far as we know */
    }
    /* Killed by us with no status set: the client went away. */
    if (!r->hdr_done && r->res->status == 0 && !r->killed) {
        no_response(r);
    }
    r->res->complete = !r->killed && !r->epipe && r->out_eof && r->hdr_done &&
                       !r->req->cut && r->res->status == 0;
    return SUSPECT_OK;
}

/* Runs the program for req (see cgi.h): checks, body, then the run with
 * SIGPIPE blocked. */
suspect_rc_t mw_cgi_run(const mw_cgi_opts_t *opts, mw_req_t *req,
                        mw_fwd_result_t *res, suspect_err_t *err)
{
    char script[PATH_MAX];
    char clen_buf[24];
    const char *clen = NULL;
    sigset_t pipe_set, old;
    cgi_run_t r;
    suspect_rc_t rc = SUSPECT_OK;
    int st;

    res->status = 0;
    res->timed_out = false;
    res->complete = false;
    res->exit_status = -1;
    st = cgi_resolve(opts, req, script);
    if (st != 0) {
        res->status = st;
        return SUSPECT_OK;
    }
    memset(&r, 0, sizeof(r));
    r.req = req;
    r.res = res;
    r.script = script;
    r.pass_env = opts->pass_env;
    r.scratch = suspect_malloc(CGI_OUT_BUF + CGI_IN_BUF);
    if (r.scratch == NULL) {
        res->status = 500;
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "cgi: out of memory");
    }
    st = body_setup(&r, clen_buf, sizeof(clen_buf), &clen);
    if (st < 0) {
        res->status = 500;
        rc = suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                             "cgi: out of memory");
    } else if (st > 0) {
        res->status = st;
    } else {
        sigemptyset(&pipe_set);
        sigaddset(&pipe_set, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
        rc = run_program(&r, clen,
                         opts->timeout_ms != 0 ? opts->timeout_ms
                                               : CGI_TIMEOUT_MS_DEFAULT,
                         err);
        if (r.epipe && !sigismember(&old, SIGPIPE)) {
            struct timespec zero = {0, 0};

            sigtimedwait(&pipe_set, NULL, &zero);
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
    free(r.body);
    free(r.scratch);
    return rc;
}

void mw_cgi_shutdown(void)
{
    atomic_store(&shutting_down, true);
    mw_cgi_kill_all();
}
