/*
 * fuzz_upstream.c - libFuzzer target for the FastCGI client's response
 * parser (middleware/forward/upstream_io.c): what php-cgi or php-fpm sends
 * back, records parsed in pieces as they arrive, STDOUT relayed, STDERR logged,
 * END_REQUEST ending the exchange.
 *
 * Input: a control byte (chunk sizes), then the bytes the upstream sends.
 * They are queued in up to 48 messages on a SOCK_SEQPACKET socketpair, so
 * each recv() returns one chunk and headers and contents split anywhere;
 * the upstream's side is then shut for writing.  One exchange runs over
 * the other end exactly as upstream.c runs it (prelude, a small buffered
 * body, the poll loop).
 *
 * Oracle: a reference parser over the whole input (records in order, id 0
 * skipped, id 1 STDOUT relayed, STDERR dropped, END_REQUEST of 8 bytes
 * ends it, anything else fails) gives the outcome (done, failed, closed),
 * the relayed bytes and END_REQUEST's statuses; bytes seen trailing it
 * must really be there (only those in the same read can be seen).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "helpers/fakereq.h"
#include "log/log.h"
#include "forward/upstream_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_upstream: check failed: %s\n", #cond);       \
            abort();                                                           \
        }                                                                      \
    } while (0)

#define MAX_CHUNKS 48

/* What the reference parser expects. */
typedef struct expect {
    up_end_t end;
    uint8_t *out;
    size_t out_len;
    uint32_t app_status;
    uint8_t proto_status;
    bool trailing;
} expect_t;

static void ref_parse(const uint8_t *p, size_t n, expect_t *e)
{
    size_t off = 0;

    e->end = UP_CLOSED;
    while (n - off >= FCGI_HEADER_LEN) {
        fcgi_header_t h;
        size_t body = off + FCGI_HEADER_LEN, avail = n - body;
        size_t clen;

        if (fcgi_header_decode(p + off, &h) != SUSPECT_OK ||
            (h.request_id != 0 && h.request_id != UP_REQUEST_ID) ||
            (h.request_id != 0 && h.type != FCGI_STDOUT &&
             h.type != FCGI_STDERR && h.type != FCGI_END_REQUEST) ||
            (h.request_id != 0 && h.type == FCGI_END_REQUEST &&
             h.content_len != 8)) {
            e->end = UP_FAILED;
            return;
        }
        clen = h.content_len < avail ? h.content_len : avail;
        if (h.request_id != 0 && h.type == FCGI_STDOUT) {
            memcpy(e->out + e->out_len, p + body, clen);
            e->out_len += clen;
        }
        if (avail < (size_t)h.content_len + h.padding_len) {
            return; /* cut inside the record: closed */
        }
        off = body + h.content_len + h.padding_len;
        if (h.request_id != 0 && h.type == FCGI_END_REQUEST) {
            CHECK(fcgi_end_decode(p + body, 8, &e->app_status,
                                  &e->proto_status) == SUSPECT_OK);
            e->end = UP_DONE;
            e->trailing = off < n;
            return;
        }
    }
}

/* The request prelude: BEGIN_REQUEST, one PARAMS pair, empty PARAMS. */
static void prelude(up_conn_t *c)
{
    uint8_t *p = malloc(64);
    size_t n = 0, k;

    CHECK(p != NULL);
    fcgi_header_encode(p, FCGI_BEGIN_REQUEST, UP_REQUEST_ID, 8, 0);
    fcgi_begin_encode(p + 8, FCGI_RESPONDER, FCGI_KEEP_CONN);
    n = 16;
    k = fcgi_nv_encode(p + n + 8, "REQUEST_METHOD", 14, "POST", 4);
    fcgi_header_encode(p + n, FCGI_PARAMS, UP_REQUEST_ID, (uint16_t)k, 0);
    n += 8 + k;
    fcgi_header_encode(p + n, FCGI_PARAMS, UP_REQUEST_ID, 0, 0);
    c->pre = p;
    c->pre_len = c->pre_cap = n + 8;
}

/* Queues data[0..size) as at most MAX_CHUNKS messages. */
static void send_chunks(int fd, const uint8_t *data, size_t size, unsigned seed)
{
    unsigned spread = (seed & 0x80) ? 3000 : 12;

    for (int i = 0; size > 0; i++) {
        size_t k = size;

        seed = seed * 1103515245u + 12345u;
        if (i < MAX_CHUNKS - 1 && size > 1) {
            k = 1 + (seed >> 16) % spread;
            k = k < size ? k : size;
        }
        CHECK(send(fd, data, k, MSG_DONTWAIT) == (ssize_t)k);
        data += k;
        size -= k;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char body[] = "member=abc&op=login";
    expect_t e;
    fakereq_t fr;
    up_xchg_t x;
    up_conn_t *c;
    up_end_t end;
    int sv[2];

    if (size < 1 || size > 60000) {
        return 0;
    }
    mw_log_init("fuzz", MW_LOG_ERROR);
    memset(&e, 0, sizeof(e));
    e.out = malloc(size);
    CHECK(e.out != NULL);
    ref_parse(data + 1, size - 1, &e);

    CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
    send_chunks(sv[1], data + 1, size - 1, data[0]);
    CHECK(shutdown(sv[1], SHUT_WR) == 0);
    c = up_conn_new();
    CHECK(c != NULL);
    c->fd = sv[0];
    prelude(c);
    fakereq_init(&fr, NULL, NULL, 0);
    up_xchg_start(&x, &fr.req, c, (const uint8_t *)body, sizeof(body) - 1, 0,
                  5000);
    end = up_xchg_run(&x);
    up_xchg_finish(&x);

    CHECK(end == e.end);
    CHECK(fr.out_len == e.out_len &&
          (e.out_len == 0 || memcmp(fr.out, e.out, e.out_len) == 0));
    CHECK(x.got_end == (end == UP_DONE));
    if (end == UP_DONE) {
        CHECK(x.app_status == e.app_status && x.proto_status == e.proto_status);
        /* Only bytes in the same read are seen as trailing; later ones
         * are in the socket, and up_pool_take() drops a pooled connection
         * with unread bytes (MSG_PEEK). */
        CHECK(!x.trailing || e.trailing);
        CHECK(!up_xchg_reusable(&x) ||
              (!x.trailing && e.proto_status == FCGI_REQUEST_COMPLETE));
    }
    up_conn_free(c); /* closes sv[0] */
    close(sv[1]);
    fakereq_free(&fr);
    free(e.out);
    return 0;
}
