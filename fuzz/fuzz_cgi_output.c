/*
 * fuzz_cgi_output.c - libFuzzer target for what a CGI program writes back
 * (middleware/forward/cgi_io.c): the stdout pump that holds the CGI header
 * block until its blank line, checks every line is a header field and relays
 * the response, and the stderr pump that splits lines for the log.
 *
 * suspect-fcgi does not rewrite the header block (the web server parses
 * Status:, Location: and the rest); it decides whether the block is
 * complete and well-formed within 8 KiB, or answers 502.  The pumps are
 * driven as cgi.c's loop drives them, over real non-blocking pipes, without
 * a process: the input is written into the pipes in up to 64 chunks whose
 * sizes come from the first byte, and each chunk is pumped before the next.
 * The child's pid is one no process can have, so a kill is a no-op.
 *
 * Oracle: a reference scan of the input (lines end in LF, a blank line is
 * empty or a lone CR, a field line has a ':' or starts with a blank after
 * an optional CR) decides the outcome: a complete block relays the whole
 * input unchanged with no status; a bad line, or no end within 8 KiB,
 * relays nothing and sets 502; an unfinished short block relays nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "forward/cgi_internal.h"
#include "helpers/fakereq.h"
#include "log/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_cgi_output: check failed: %s\n", #cond);     \
            abort();                                                           \
        }                                                                      \
    } while (0)

#define MAX_CHUNKS 64

enum { REF_END, REF_BAD, REF_LONG, REF_SHORT };

/* The reference verdict on the header block of p[0..n). */
static int ref_scan(const uint8_t *p, size_t n)
{
    size_t start = 0;

    for (size_t i = 0; i < n && i < CGI_HDR_MAX; i++) {
        const uint8_t *l = p + start;
        size_t len = i - start;

        if (p[i] != '\n') {
            continue;
        }
        if (len > 0 && l[0] == '\r') {
            l++;
            len--;
            if (len == 0) {
                return REF_END;
            }
        } else if (len == 0) {
            return REF_END;
        }
        if (l[0] != ' ' && l[0] != '\t' && memchr(l, ':', len) == NULL) {
            return REF_BAD;
        }
        start = i + 1;
    }
    return n >= CGI_HDR_MAX ? REF_LONG : REF_SHORT;
}

/* One round of the loop in cgi.c, without the poll. */
static void pump(cgi_run_t *r)
{
    cgi_out_pump(r);
    cgi_err_pump(r, false);
}

/* Writes p[0..n) into a pipe, pumping while it is full; stops when the
 * pump no longer reads it (stdout after a failure). */
static void put(cgi_run_t *r, int fd, bool is_out, const uint8_t *p, size_t n)
{
    while (n > 0 && !(is_out && r->out_eof)) {
        ssize_t k = write(fd, p, n);

        if (k > 0) {
            p += k;
            n -= (size_t)k;
        } else {
            CHECK(k < 0 && errno == EAGAIN);
            pump(r);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char scratch[CGI_OUT_BUF + CGI_IN_BUF];
    fakereq_t fr;
    mw_fwd_result_t res = {0, false, -1, false};
    cgi_run_t r;
    int out[2], err[2], verdict;
    size_t off = 1;
    unsigned seed;

    if (size < 1 || size > 60000) {
        return 0;
    }
    mw_log_init("fuzz", MW_LOG_ERROR);
    seed = data[0];
    fakereq_init(&fr, NULL, NULL, 0);
    memset(&r, 0, sizeof(r));
    r.req = &fr.req;
    r.res = &res;
    r.script = "/fuzz.cgi";
    r.scratch = scratch;
    r.child.pid = INT_MAX; /* above any pid_max: kill() finds nobody */
    r.child.in_fd = r.child.pidfd = -1;
    CHECK(pipe2(out, O_NONBLOCK | O_CLOEXEC) == 0);
    CHECK(pipe2(err, O_NONBLOCK | O_CLOEXEC) == 0);
    r.child.out_fd = out[0];
    r.child.err_fd = err[0];
    for (int i = 0; off < size; i++) {
        size_t k = size - off;

        seed = seed * 1103515245u + 12345u;
        if (i < MAX_CHUNKS - 1) {
            k = 1 + (seed >> 16) % (data[0] < 128 ? 16 : 5000);
            k = k < size - off ? k : size - off;
        }
        put(&r, out[1], true, data + off, k);
        put(&r, err[1], false, data + off, k);
        off += k;
        pump(&r);
    }
    close(out[1]);
    close(err[1]);
    while (!r.out_eof || !r.err_eof) {
        cgi_out_pump(&r);
        cgi_err_pump(&r, r.out_eof);
    }
    verdict = ref_scan(data + 1, size - 1);
    if (verdict == REF_END) {
        CHECK(r.hdr_done && res.status == 0 && !r.killed);
        CHECK(fr.out_len == size - 1 &&
              memcmp(fr.out, data + 1, size - 1) == 0);
    } else {
        CHECK(!r.hdr_done && fr.out_len == 0);
        CHECK(res.status == (verdict == REF_SHORT ? 0 : 502));
    }
    close(out[0]);
    close(err[0]);
    fakereq_free(&fr);
    return 0;
}
