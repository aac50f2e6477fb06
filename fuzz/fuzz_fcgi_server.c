/*
 * fuzz_fcgi_server.c - libFuzzer target for the FastCGI server side: a
 * connection's requests (middleware/fcgi/fcgi_serve.c), the record state
 * machine (fcgi_conn.c), PARAMS collection and the merging of repeated
 * names (fcgi_params.c), the request's reader and STDOUT writer
 * (fcgi_req.c) and the buffered socket I/O (fcgi_io.c).
 *
 * Input: the bytes a web server sends on one connection.  They are
 * written into one end of a socketpair, whose write side is then shut, and
 * the other end is served in this thread the way the front thread
 * (fcgi_front.c) and a worker take turns: mw_fc_front_step() until a
 * request is in, mw_fc_run() with a worker's scratch lent, and again
 * until the connection ends.  Every other request whose body is in is
 * served as the front serves it itself (mw_fc_run_in_front(), reads and
 * sends that never wait), what it could not send then sent as a worker
 * does (mw_fc_send_unsent()).  A second thread reads everything the server
 * answers.  PARAMS are capped at 1 KiB so the over-the-cap answer is
 * reachable.
 *
 * The handler checks the variables it is given (non-empty list entries,
 * values NUL-terminated, no name twice after merging) and then, chosen by
 * the number of variables, reads the whole body, prefetches part of it,
 * ignores it, or writes a response larger than one record.
 *
 * Oracle on the output: it must be a well-formed FastCGI record stream
 * (version 1, whole records, END_REQUEST bodies of 8 bytes).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fcgi/fcgi_conn.h"
#include "log/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_fcgi_server: check failed: %s\n", #cond);    \
            abort();                                                           \
        }                                                                      \
    } while (0)

#define PARAMS_MAX 1024
#define BIG_OUT    (70 * 1024)

/* What the reader thread collects. */
typedef struct sink {
    int fd;
    uint8_t *buf;
    size_t len, cap;
} sink_t;

static void *drain(void *arg)
{
    sink_t *s = arg;

    for (;;) {
        ssize_t n;

        if (s->len == s->cap) {
            s->cap = s->cap ? s->cap * 2 : 65536;
            s->buf = realloc(s->buf, s->cap);
            CHECK(s->buf != NULL);
        }
        n = read(s->fd, s->buf + s->len, s->cap - s->len);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return NULL;
        }
        s->len += (size_t)n;
    }
}

/* The server's output must be whole, valid records. */
static void check_output(const uint8_t *p, size_t len)
{
    size_t off = 0;

    while (off < len) {
        fcgi_header_t h;

        CHECK(len - off >= FCGI_HEADER_LEN);
        CHECK(fcgi_header_decode(p + off, &h) == SUSPECT_OK);
        CHECK(h.type == FCGI_STDOUT || h.type == FCGI_END_REQUEST ||
              h.type == FCGI_GET_VALUES_RESULT || h.type == FCGI_UNKNOWN_TYPE);
        CHECK(h.type != FCGI_END_REQUEST || h.content_len == 8);
        off += FCGI_HEADER_LEN;
        CHECK(len - off >= (size_t)h.content_len + h.padding_len);
        off += (size_t)h.content_len + h.padding_len;
    }
}

/* The variables a handler gets. */
static void check_params(const mw_req_t *req)
{
    for (size_t i = 0; i < req->nparams; i++) {
        const mw_param_t *p = &req->params[i];

        CHECK(p->name != NULL && p->value != NULL);
        CHECK(p->value[p->value_len] == '\0');
        for (size_t j = 0; j < i; j++) {
            const mw_param_t *q = &req->params[j];

            CHECK(q->name_len != p->name_len ||
                  memcmp(q->name, p->name, p->name_len) != 0);
        }
    }
}

static void handler(mw_req_t *req, void *arg)
{
    static char big[BIG_OUT];
    char buf[1000];
    const char *body;
    size_t len;
    bool complete;
    ssize_t n;

    (void)arg;
    check_params(req);
    (void)mw_req_param(req, "CONTENT_LENGTH", &len);
    switch (req->nparams % 4) {
    case 0:
        do {
            n = mw_req_read(req, buf, sizeof(buf), true);
        } while (n > 0);
        mw_req_write(req, "Status: 200 OK\r\n\r\nok\n", 21);
        break;
    case 1:
        memset(big, 'x', sizeof(big));
        mw_req_write(req, "Content-Type: text/plain\r\n\r\n", 28);
        mw_req_write(req, big, sizeof(big));
        mw_req_flush(req);
        mw_req_write(req, big, 100);
        break;
    case 2:
        if (mw_req_prefetch(req, 100, &body, &len, &complete) == SUSPECT_OK) {
            CHECK(len <= 100);
            n = mw_req_read(req, buf, sizeof(buf), true);
            CHECK(n < 0 || (size_t)n >= (len > 0 ? 1 : 0));
        }
        mw_req_write(req, "\r\n", 2);
        break;
    default:
        break;
    }
}

/* Serves the connection c to its end, as the front and a worker would. */
static void serve(conn_t *c, fc_scratch_t *scratch)
{
    int stalls = 0;
    unsigned served = 0;

    for (;;) {
        int r = mw_fc_front_step(c);

        if (r == FC_STEP_READY) {
            int next;

            if (++served % 2 == 1 && mw_fc_body_buffered(c)) {
                next = mw_fc_run_in_front(c, scratch);
                if (c->unsent != NULL) {
                    c->after = next;
                    mw_fc_lend(c, scratch);
                    next = mw_fc_send_unsent(c);
                    mw_fc_take_back(c, scratch);
                }
            } else {
                mw_fc_lend(c, scratch);
                next = mw_fc_run(c);
                mw_fc_take_back(c, scratch);
            }
            if (next != FC_NEXT_KEEP) {
                break;
            }
            continue;
        }
        if (r == FC_STEP_MORE && ++stalls < 3) {
            continue; /* the rest is in the socket, or its end is */
        }
        if (r == -EMSGSIZE) {
            mw_fc_refuse_too_large(c);
        } else if (r == -ECONNABORTED && mw_fc_end_aborted(c) == 0) {
            continue;
        }
        break;
    }
    while (c->linger && mw_fc_linger_step(c) == 0) {
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static fc_shared_t srv;
    static fc_scratch_t scratch;
    sink_t sink = {0};
    pthread_t th;
    conn_t *c;
    int sv[2];
    size_t off = 0;

    if (srv.handler == NULL) {
        signal(SIGPIPE, SIG_IGN);
        mw_log_init("fuzz", MW_LOG_ERROR);
        srv.params_max = PARAMS_MAX;
        srv.pairs_max = PARAMS_MAX / sizeof(mw_param_t) + 64;
        srv.workers = 4;
        srv.io_timeout_ms = 2000;
        srv.idle_timeout_ms = 2000;
        srv.request_timeout_ms = 2000;
        srv.handler = handler;
        scratch.out = malloc(FCGI_HEADER_LEN + FCGI_MAX_CONTENT);
        CHECK(scratch.out != NULL);
    }
    if (size > 65536) {
        return 0; /* written before it is read: keep within the buffer */
    }
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    while (off < size) {
        ssize_t n = write(sv[1], data + off, size - off);

        CHECK(n > 0);
        off += (size_t)n;
    }
    CHECK(shutdown(sv[1], SHUT_WR) == 0);
    sink.fd = sv[1];
    CHECK(pthread_create(&th, NULL, drain, &sink) == 0);
    c = mw_fc_conn_new(&srv, sv[0]);
    CHECK(c != NULL);
    c->nowait = true;
    serve(c, &scratch);
    mw_fc_conn_free(c); /* closes sv[0] */
    CHECK(pthread_join(th, NULL) == 0);
    close(sv[1]);
    check_output(sink.buf, sink.len);
    free(sink.buf);
    return 0;
}
