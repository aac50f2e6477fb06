/*
 * upstream_fakesrv.c - a small FastCGI server for the protocol tests of
 * the FastCGI client (test_upstream_fake.c): a thread accepting on a unix
 * socket in a temp dir, serving one connection at a time, request after
 * request while the client keeps it (FCGI_KEEP_CONN).
 *
 * It reads a whole request (BEGIN_REQUEST, the PARAMS stream, the STDIN
 * stream), checking what a strict peer would: request ids, and that each
 * PARAMS record parses on its own (PHP's parser needs that).  What it
 * answers depends on the mode (fmode_t), which a test may change
 * between requests: echo what it saw, close instead of answering (after
 * reading the whole request), answer and close
 * a kept connection (as php-cgi does at PHP_FCGI_MAX_REQUESTS), answer
 * in tiny padded records mixed with management and STDERR records, end
 * the wrong request id, answer before reading STDIN, or send bytes that
 * are not FastCGI.  It counts the requests it read, so a test sees
 * whether a request reached it twice.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fcgi/fcgi_proto.h"
#include "upstream_test.h"
#include "helpers/util.h"

/* One request as the server read it. */
typedef struct freq {
    uint16_t role;
    uint8_t flags;
    bool ids_ok;     /* every record had id 1 */
    bool standalone; /* each PARAMS record parsed on its own */
    int records;     /* PARAMS records, the empty one excluded */
    uint8_t *params; /* all PARAMS content */
    size_t params_len;
    size_t stdin_len;
} freq_t;

/* ---- server I/O ------------------------------------------------------- */

static int read_full(int fd, void *buf, size_t n)
{
    size_t off = 0;

    while (off < n) {
        ssize_t k = read(fd, (char *)buf + off, n - off);

        if (k < 0 && errno == EINTR) {
            continue;
        }
        if (k <= 0) {
            return -1;
        }
        off += (size_t)k;
    }
    return 0;
}

static int write_full(int fd, const void *buf, size_t n)
{
    size_t off = 0;

    while (off < n) {
        ssize_t k = send(fd, (const char *)buf + off, n - off, MSG_NOSIGNAL);

        if (k < 0 && errno == EINTR) {
            continue;
        }
        if (k <= 0) {
            return -1;
        }
        off += (size_t)k;
    }
    return 0;
}

/* Reads one record: header and content (into buf, 65535 bytes), padding
 * skipped. */
static int read_record(int fd, fcgi_header_t *h, uint8_t *buf)
{
    uint8_t hb[FCGI_HEADER_LEN], pad[256];

    if (read_full(fd, hb, sizeof(hb)) != 0 ||
        fcgi_header_decode(hb, h) != SUSPECT_OK ||
        read_full(fd, buf, h->content_len) != 0 ||
        read_full(fd, pad, h->padding_len) != 0) {
        return -1;
    }
    return 0;
}

static bool parses_alone(const uint8_t *p, size_t len)
{
    size_t off = 0;
    fcgi_nv_t nv;
    suspect_rc_t rc;

    while ((rc = fcgi_nv_decode(p, len, &off, &nv)) == SUSPECT_OK) {
    }
    return rc == SUSPECT_E_NOTFOUND;
}

/* Reads BEGIN_REQUEST and the PARAMS stream; with body, the STDIN stream
 * too.  0, or -1 at EOF or on a malformed request. */
static int read_request(int fd, freq_t *q, bool body, uint8_t *buf)
{
    fcgi_header_t h;

    memset(q, 0, sizeof(*q));
    q->ids_ok = q->standalone = true;
    if (read_record(fd, &h, buf) != 0 || h.type != FCGI_BEGIN_REQUEST ||
        fcgi_begin_decode(buf, h.content_len, &q->role, &q->flags) !=
            SUSPECT_OK) {
        return -1;
    }
    q->ids_ok = h.request_id == 1;
    do {
        if (read_record(fd, &h, buf) != 0 || h.type != FCGI_PARAMS) {
            return -1;
        }
        q->ids_ok = q->ids_ok && h.request_id == 1;
        if (h.content_len > 0) {
            q->records++;
            q->standalone = q->standalone && parses_alone(buf, h.content_len);
            q->params = realloc(q->params, q->params_len + h.content_len);
            memcpy(q->params + q->params_len, buf, h.content_len);
            q->params_len += h.content_len;
        }
    } while (h.content_len > 0);
    while (body) {
        if (read_record(fd, &h, buf) != 0 || h.type != FCGI_STDIN) {
            return -1;
        }
        q->ids_ok = q->ids_ok && h.request_id == 1;
        q->stdin_len += h.content_len;
        body = h.content_len > 0;
    }
    return 0;
}

/* Appends a record of type/id with content p[0..n) and pad bytes of
 * padding to out at *len. */
static void put_record(uint8_t *out, size_t *len, uint8_t type, uint16_t id,
                       const void *p, size_t n, uint8_t pad)
{
    fcgi_header_encode(out + *len, type, id, (uint16_t)n, pad);
    *len += FCGI_HEADER_LEN;
    memcpy(out + *len, p, n);
    *len += n;
    memset(out + *len, 0xee, pad);
    *len += pad;
}

/* Sends text (NULL: nothing) as STDOUT records, the empty STDOUT and
 * END_REQUEST for id. */
static int reply(int fd, const char *text, uint16_t end_id)
{
    size_t n = text != NULL ? strlen(text) : 0, len = 0, off = 0;
    uint8_t *out = malloc(n + n / 1000 + 64), end[8];
    int r;

    while (off < n) {
        size_t k = n - off < 60000 ? n - off : 60000;

        put_record(out, &len, FCGI_STDOUT, 1, text + off, k, 0);
        off += k;
    }
    if (text != NULL) {
        put_record(out, &len, FCGI_STDOUT, 1, "", 0, 0);
    }
    fcgi_end_encode(end, 0, FCGI_REQUEST_COMPLETE);
    put_record(out, &len, FCGI_END_REQUEST, end_id, end, 8, 0);
    r = write_full(fd, out, len);
    free(out);
    return r;
}

/* The echo answer: one "NAME=value" line per variable (long values as
 * "<len x c>" when uniform), then what else was seen. */
static int reply_echo(int fd, const freq_t *q)
{
    size_t off = 0, cap = 4096 + q->params_len, n = 0;
    char *t = malloc(cap);
    fcgi_nv_t nv;
    int r;

    n += (size_t)snprintf(t + n, cap - n, "Status: 200 OK\r\n\r\n");
    while (fcgi_nv_decode(q->params, q->params_len, &off, &nv) == SUSPECT_OK) {
        size_t same = 1;

        while (same < nv.value_len && nv.value[same] == nv.value[0]) {
            same++;
        }
        if (nv.value_len <= 64) {
            n += (size_t)snprintf(t + n, cap - n, "%.*s=%.*s\n",
                                  (int)nv.name_len, nv.name, (int)nv.value_len,
                                  nv.value);
        } else {
            n += (size_t)snprintf(t + n, cap - n, "%.*s=<%u %c%s>\n",
                                  (int)nv.name_len, nv.name, nv.value_len,
                                  nv.value[0],
                                  same == nv.value_len ? "" : " mixed");
        }
    }
    snprintf(t + n, cap - n,
             "stdin=%zu\nrecords=%d\nstandalone=%d\nkeep=%d\nrole=%u\n"
             "ids=%d\n",
             q->stdin_len, q->records, q->standalone,
             (q->flags & FCGI_KEEP_CONN) != 0, q->role, q->ids_ok);
    r = reply(fd, t, 1);
    free(t);
    return r;
}

/* 3000 body bytes in records of 1..7 bytes with padding up to 255, a
 * management record and STDERR between them, written in 13-byte
 * pieces. */
static int reply_small(int fd)
{
    static const char head[] = "Status: 200 OK\r\n\r\n";
    uint8_t *out = malloc(3000 * 300 + 4096), unk[8] = {9}, end[8];
    size_t len = 0, off = 0;
    int r = 0;

    put_record(out, &len, FCGI_UNKNOWN_TYPE, 0, unk, 8, 0);
    put_record(out, &len, FCGI_STDOUT, 1, head, strlen(head), 3);
    for (size_t i = 0, at = 0; at < 3000; i++) {
        char chunk[8];
        size_t k = 1 + i % 7;

        k = k < 3000 - at ? k : 3000 - at;
        for (size_t j = 0; j < k; j++) {
            chunk[j] = (char)('a' + (at + j) % 26);
        }
        put_record(out, &len, FCGI_STDOUT, 1, chunk, k,
                   (uint8_t)(i % 5 == 0 ? 255 : (i * 37) % 256));
        if (i == 100) {
            put_record(out, &len, FCGI_STDERR, 1, "fake warn\n", 10, 6);
        }
        at += k;
    }
    put_record(out, &len, FCGI_STDOUT, 1, "", 0, 0);
    fcgi_end_encode(end, 7, FCGI_REQUEST_COMPLETE);
    put_record(out, &len, FCGI_END_REQUEST, 1, end, 8, 3);
    while (off < len && r == 0) {
        size_t k = len - off < 13 ? len - off : 13;

        r = write_full(fd, out + off, k);
        off += k;
    }
    free(out);
    return r;
}

/* Serves the requests of one connection; returns when it should close. */
static void serve(fake_t *f, int fd, uint8_t *buf)
{
    for (int n = 1;; n++) {
        fmode_t mode = (fmode_t)atomic_load(&f->mode);
        freq_t q;
        int r = read_request(fd, &q, mode != F_END_EARLY, buf);

        if (r != 0) {
            free(q.params);
            return;
        }
        atomic_fetch_add(&f->requests, 1);
        if (mode == F_CLOSE_ALL || (mode == F_CLOSE_KEPT && n >= 2)) {
            r = -1;
        } else if (mode == F_SMALL) {
            r = reply_small(fd);
        } else if (mode == F_WRONG_ID) {
            r = reply(fd, NULL, 2);
        } else if (mode == F_GARBAGE) {
            write_full(fd, "HTTP/1.0 500 oops\r\n\r\n", 21);
            r = -1;
        } else {
            r = reply_echo(fd, &q);
        }
        free(q.params);
        if (r != 0 || mode == F_END_EARLY || mode == F_ANSWER_CLOSE ||
            (q.flags & FCGI_KEEP_CONN) == 0) {
            return;
        }
    }
}

static void *server_main(void *arg)
{
    fake_t *f = arg;
    uint8_t *buf = malloc(65536);

    for (;;) {
        int fd = accept(f->lfd, NULL, NULL);

        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) {
                continue;
            }
            break;
        }
        atomic_fetch_add(&f->accepted, 1);
        serve(f, fd, buf);
        close(fd);
        atomic_fetch_add(&f->closed, 1);
    }
    free(buf);
    return NULL;
}

int fake_start(fake_t *f, fmode_t mode)
{
    struct sockaddr_un sa;

    memset(f, 0, sizeof(*f));
    atomic_store(&f->mode, mode);
    f->dir = test_mkdtemp();
    if (f->dir == NULL) {
        return -1;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/fcgi.sock", f->dir);
    snprintf(f->addr, sizeof(f->addr), "unix:%s", sa.sun_path);
    f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (f->lfd < 0 || bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        listen(f->lfd, 16) != 0 ||
        pthread_create(&f->th, NULL, server_main, f) != 0) {
        return -1;
    }
    return 0;
}

void fake_stop(fake_t *f)
{
    shutdown(f->lfd, SHUT_RDWR);
    pthread_join(f->th, NULL);
    close(f->lfd);
    test_rmtree(f->dir);
    free(f->dir);
}
