/*
 * cgi_io.c - the three pipes of a running CGI program.
 *
 *   request body -> child stdin   read without waiting (the loop polls the
 *       request I/O's descriptor when it has one), written to a non-blocking
 *       pipe; at the body's end (or CONTENT_LENGTH bytes) the pipe is
 *       closed.  A child that closes its stdin early (EPIPE) gets nothing
 *       more; the rest of the body is read and dropped while it runs.  A
 *       body that cannot be read to its end, or that a body filter
 *       refuses, kills the program before it gets the end of its input,
 *       and answers 400 or the filter's status.
 *   child stdout -> response      the first bytes are held until the blank
 *       line that ends the CGI header block (at most 8 KiB, every line a
 *       header field), then relayed as they come with mw_req_write().
 *       A failed write means the client went away: the group is killed.
 *   child stderr -> log           one warning per line, naming the script;
 *       long lines are cut, and a chatty script is cut off after
 *       CGI_ERR_LINES_MAX lines (the pipe is still drained).
 *
 * Each pump does what it can without blocking and returns; cgi.c's loop
 * polls and calls them again.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "cgi_internal.h"
#include "log/log.h"

void cgi_stop(cgi_run_t *r)
{
    if (!r->killed) {
        cgi_kill(&r->child);
        r->killed = true;
    }
    r->discard = true;
}

void cgi_fail(cgi_run_t *r, int status)
{
    if (!r->req->output_started && r->res->status == 0) {
        r->res->status = status;
    } else if (r->req->output_started) {
        r->req->cut = true; /* too late for a status: end it short */
    }
}

/* ---- body --------------------------------------------------------------- */

int cgi_body_slurp(cgi_run_t *r, size_t *len)
{
    char *buf = r->scratch + CGI_OUT_BUF;
    size_t cap = CGI_IN_BUF, n = 0;

    for (;;) {
        ssize_t k;

        if (n == cap) {
            size_t ncap =
                cap * 2 > CGI_BODY_MAX + 1 ? CGI_BODY_MAX + 1 : cap * 2;
            char *nb;

            if (n > CGI_BODY_MAX) {
                return 413;
            }
            nb = suspect_realloc(r->body, ncap);
            if (nb == NULL) {
                return -1;
            }
            if (r->body == NULL) {
                memcpy(nb, buf, n);
            }
            r->body = buf = nb;
            cap = ncap;
        }
        k = mw_req_read(r->req, buf + n, cap - n, true);
        if (k == 0) {
            break;
        }
        if (k < 0) {
            return k == -EMSGSIZE ? r->req->refused : 400;
        }
        n += (size_t)k;
    }
    r->pend = buf;
    r->pend_len = n;
    r->body_left = n;
    r->body_eof = true;
    *len = n;
    return 0;
}

/* Reads more body into pend (which is empty); sets body_wait when
 * nothing can be read now. */
static void body_fill(cgi_run_t *r)
{
    char *buf = r->scratch + CGI_OUT_BUF;
    size_t want = CGI_IN_BUF;
    ssize_t n;

    if (r->body_left < want) {
        want = (size_t)r->body_left;
    }
    n = mw_req_read(r->req, buf, want, false);
    r->body_wait = n == -EAGAIN;
    if (n > 0) {
        r->body_left -= (unsigned long long)n;
        r->body_eof = r->body_left == 0;
        if (r->child.in_fd >= 0) {
            r->pend = buf;
            r->pend_len = (size_t)n;
        }
    } else if (n == 0) {
        r->body_eof = true;
    } else if (n != -EAGAIN) {
        /* The client is gone or stalled, or the body was refused on its
         * way (mw_req_filter()): the program must not act on a truncated
         * request. */
        r->body_eof = true;
        cgi_fail(r, n == -EMSGSIZE ? r->req->refused : 400);
        cgi_stop(r);
    }
}

bool cgi_body_pump(cgi_run_t *r)
{
    for (int i = 0; i < CGI_BODY_STEPS; i++) {
        ssize_t n;

        if (r->killed) {
            return false;
        }
        if (r->pend_len == 0) {
            if (r->body_eof) {
                cgi_close(&r->child.in_fd);
                return false;
            }
            body_fill(r);
            if (r->body_wait) {
                return false;
            }
            continue;
        }
        if (r->child.in_fd < 0) {
            r->pend_len = 0; /* the child closed its stdin: drop */
            continue;
        }
        n = write(r->child.in_fd, r->pend, r->pend_len);
        if (n > 0) {
            r->pend += n;
            r->pend_len -= (size_t)n;
        } else if (n < 0 && errno == EAGAIN) {
            return false;
        } else if (n < 0 && errno != EINTR) {
            r->epipe |= errno == EPIPE;
            cgi_close(&r->child.in_fd);
            r->pend_len = 0;
        }
    }
    return true;
}

/* ---- stdout ------------------------------------------------------------- */

/* Passes n bytes of output on; a failure means the client went away. */
static void relay(cgi_run_t *r, const char *buf, size_t n)
{
    int rc = mw_req_write(r->req, buf, n);

    r->unflushed = true;
    if (rc != 0) {
        r->epipe |= rc == -EPIPE;
        cgi_stop(r);
    }
}

/*
 * Scans n new header bytes at p.  Returns 1 at the blank line that ends
 * the header block, -1 at a line that is no header field (no colon, not a
 * continuation), 0 when more is needed.
 */
static int header_scan(cgi_run_t *r, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char c = p[i];

        if (c == '\n') {
            if (r->hstate != 2) {
                return 1;
            }
            if (!r->hfield) {
                return -1;
            }
            r->hstate = 0;
        } else if (r->hstate == 0 && c == '\r') {
            r->hstate = 1;
        } else {
            if (r->hstate != 2) {
                r->hfield = c == ' ' || c == '\t'; /* continuation */
            }
            r->hfield |= c == ':';
            r->hstate = 2;
        }
    }
    return 0;
}

/* Handles n bytes just read from stdout into the scratch buffer. */
static void out_bytes(cgi_run_t *r, size_t n)
{
    int found;

    if (r->discard) {
        return;
    }
    if (r->hdr_done) {
        relay(r, r->scratch, n);
        return;
    }
    found = header_scan(r, r->scratch + r->hlen, n);
    r->hlen += n;
    if (found > 0) {
        r->hdr_done = true;
        relay(r, r->scratch, r->hlen);
    } else if (found < 0 || r->hlen == CGI_HDR_MAX) {
        mw_log(MW_LOG_WARNING, "cgi %s: %s", r->script,
               found < 0 ? "output has a malformed header line"
                         : "no header block in the first 8 KiB of output");
        cgi_fail(r, 502);
        cgi_stop(r);
    }
}

void cgi_out_pump(cgi_run_t *r)
{
    for (int i = 0; i < CGI_READS_PER_WAKEUP && !r->out_eof; i++) {
        char *dst = r->hdr_done ? r->scratch : r->scratch + r->hlen;
        size_t room = r->hdr_done ? CGI_OUT_BUF : CGI_HDR_MAX - r->hlen;
        ssize_t n = read(r->child.out_fd, dst, room);

        if (n > 0) {
            out_bytes(r, (size_t)n);
        } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
            r->out_eof = true;
        } else if (errno == EAGAIN) {
            return;
        }
    }
}

/* ---- stderr ------------------------------------------------------------- */

/* Logs the line held in eline. */
static void err_line(cgi_run_t *r)
{
    size_t n = r->elen;

    if (n > 0 && r->eline[n - 1] == '\r') {
        n--;
    }
    if (r->elines < CGI_ERR_LINES_MAX) {
        mw_log(MW_LOG_WARNING, "cgi %s: %.*s%s", r->script, (int)n, r->eline,
               r->ecut ? " [cut]" : "");
    } else if (r->elines == CGI_ERR_LINES_MAX) {
        mw_log(MW_LOG_WARNING, "cgi %s: more stderr output not logged",
               r->script);
    }
    r->elines++;
    r->elen = 0;
    r->ecut = false;
}

/* Splits n stderr bytes into lines. */
static void err_bytes(cgi_run_t *r, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\n') {
            err_line(r);
        } else if (r->elen < sizeof(r->eline)) {
            r->eline[r->elen++] = p[i];
        } else {
            r->ecut = true;
        }
    }
}

void cgi_err_pump(cgi_run_t *r, bool last)
{
    char buf[4096];

    for (int i = 0; i < CGI_READS_PER_WAKEUP && !r->err_eof; i++) {
        ssize_t n = read(r->child.err_fd, buf, sizeof(buf));

        if (n > 0) {
            err_bytes(r, buf, (size_t)n);
        } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
            r->err_eof = true;
        } else if (errno == EAGAIN) {
            return;
        }
    }
    if ((r->err_eof || last) && (r->elen > 0 || r->ecut)) {
        err_line(r);
    }
}
