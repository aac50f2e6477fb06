/*
 * fcgiclient.c - a raw FastCGI client for the server tests (see
 * fcgiclient.h).  Reads use poll() with a deadline so a server that hangs
 * fails the test instead of hanging it.
 */
#include "clock.h"
#include "fcgiclient.h"
#include "vgwrap.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static int left(long long deadline)
{
    long long d = deadline - mono_ms();

    return d < 0 ? 0 : (int)d;
}

void fcbuf_add(fcbuf_t *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap < 256 ? 256 : b->cap;

        while (cap < b->len + n) {
            cap *= 2;
        }
        b->p = realloc(b->p, cap);
        if (b->p == NULL) {
            fprintf(stderr, "fcgiclient: out of memory\n");
            abort();
        }
        b->cap = cap;
    }
    if (n > 0) {
        memcpy(b->p + b->len, p, n);
    }
    b->len += n;
}

void fcbuf_free(fcbuf_t *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

void fcbuf_record(fcbuf_t *b, uint8_t type, uint16_t id, const void *content,
                  size_t len, uint8_t pad)
{
    uint8_t h[FCGI_HEADER_LEN], zeros[255] = {0};

    fcgi_header_encode(h, type, id, (uint16_t)len, pad);
    fcbuf_add(b, h, sizeof(h));
    fcbuf_add(b, content, len);
    fcbuf_add(b, zeros, pad);
}

void fcbuf_begin(fcbuf_t *b, uint16_t id, uint16_t role, uint8_t flags)
{
    uint8_t body[8];

    fcgi_begin_encode(body, role, flags);
    fcbuf_record(b, FCGI_BEGIN_REQUEST, id, body, sizeof(body), 0);
}

void fcbuf_params(fcbuf_t *b, uint16_t id, const char *const *vars,
                  size_t chunk)
{
    fcbuf_t pairs = {0};

    for (size_t i = 0; vars[i] != NULL; i++) {
        const char *eq = strchr(vars[i], '=');
        size_t nlen = (size_t)(eq - vars[i]), vlen = strlen(eq + 1);
        uint8_t *tmp = malloc(fcgi_nv_size(nlen, vlen));

        fcbuf_add(&pairs, tmp,
                  fcgi_nv_encode(tmp, vars[i], nlen, eq + 1, vlen));
        free(tmp);
    }
    for (size_t off = 0; off < pairs.len; off += chunk) {
        size_t n = pairs.len - off < chunk ? pairs.len - off : chunk;

        fcbuf_record(b, FCGI_PARAMS, id, pairs.p + off, n, (uint8_t)(n % 8));
    }
    fcbuf_record(b, FCGI_PARAMS, id, NULL, 0, 0);
    fcbuf_free(&pairs);
}

void fcbuf_stream(fcbuf_t *b, uint8_t type, uint16_t id, const void *data,
                  size_t len)
{
    const uint8_t *p = data;

    for (size_t off = 0; off < len; off += FCGI_MAX_CONTENT) {
        size_t n = len - off < FCGI_MAX_CONTENT ? len - off : FCGI_MAX_CONTENT;

        fcbuf_record(b, type, id, p + off, n, (uint8_t)((8 - n % 8) % 8));
    }
    fcbuf_record(b, type, id, NULL, 0, 0);
}

int fcc_connect(const char *path)
{
    struct sockaddr_un sa;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0) {
        return -1;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int fcc_send(int fd, const void *p, size_t n, size_t piece)
{
    const uint8_t *b = p;

    while (n > 0) {
        size_t k = piece == 0 || piece > n ? n : piece;
        ssize_t r = send(fd, b, k, MSG_NOSIGNAL);

        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            return -1;
        }
        b += r;
        n -= (size_t)r;
    }
    return 0;
}

/* Reads exactly n bytes before deadline (mono_ms(); -1: none), giving up
 * when stop (-1: none) becomes readable; 0 or -1. */
static int read_full(int fd, void *p, size_t n, long long deadline, int stop)
{
    uint8_t *b = p;

    while (n > 0) {
        struct pollfd pf[2] = {{fd, POLLIN, 0}, {stop, POLLIN, 0}};
        int w = poll(pf, stop >= 0 ? 2 : 1, deadline < 0 ? -1 : left(deadline));
        ssize_t r;

        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0 || (stop >= 0 && pf[1].revents != 0)) {
            return -1;
        }
        r = recv(fd, b, n, 0);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            return -1;
        }
        b += r;
        n -= (size_t)r;
    }
    return 0;
}

/* One record: 0, -1 when its header did not come whole, -2 when the
 * header is malformed or the rest did not come. */
static int read_record(int fd, fcc_record_t *r, long long deadline, int stop)
{
    uint8_t h[FCGI_HEADER_LEN], pad[255];

    if (read_full(fd, h, sizeof(h), deadline, stop) != 0) {
        return -1;
    }
    if (fcgi_header_decode(h, &r->h) != SUSPECT_OK ||
        read_full(fd, r->content, r->h.content_len, deadline, stop) != 0 ||
        read_full(fd, pad, r->h.padding_len, deadline, stop) != 0) {
        return -2;
    }
    return 0;
}

int fcc_read_record(int fd, fcc_record_t *r, int timeout_ms)
{
    long long deadline = mono_ms() + test_scale_ms((unsigned)timeout_ms);

    return read_record(fd, r, deadline, -1) == 0 ? 0 : -1;
}

int fcc_read_record_stop(int fd, fcc_record_t *r, int stop_fd)
{
    return read_record(fd, r, -1, stop_fd);
}

/* Takes one record of request id into resp; 1 when it ended it. */
static int take(const fcc_record_t *rec, uint16_t id, fcc_response_t *resp)
{
    if (rec->h.request_id != id) {
        return 0;
    }
    if (rec->h.type == FCGI_STDOUT) {
        if (rec->h.content_len == 0) {
            resp->stdout_ended = true;
        }
        fcbuf_add(&resp->out, rec->content, rec->h.content_len);
    } else if (rec->h.type == FCGI_END_REQUEST) {
        resp->ended =
            fcgi_end_decode(rec->content, rec->h.content_len, &resp->app_status,
                            &resp->proto_status) == SUSPECT_OK;
        return 1;
    }
    return 0;
}

int fcc_read_response(int fd, uint16_t id, fcc_response_t *resp, int timeout_ms)
{
    long long deadline = mono_ms() + test_scale_ms((unsigned)timeout_ms);
    fcc_record_t *rec = malloc(sizeof(*rec));
    int r = -1;

    while (rec != NULL && fcc_read_record(fd, rec, left(deadline)) == 0) {
        if (take(rec, id, resp) == 1) {
            r = 0;
            break;
        }
    }
    free(rec);
    return r;
}

bool fcc_wait_closed(int fd, int timeout_ms)
{
    long long deadline = mono_ms() + test_scale_ms((unsigned)timeout_ms);
    uint8_t buf[4096];

    for (;;) {
        struct pollfd pf = {fd, POLLIN, 0};
        ssize_t r;

        if (poll(&pf, 1, left(deadline)) <= 0) {
            return false;
        }
        r = recv(fd, buf, sizeof(buf), 0);
        if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) {
            return true;
        }
    }
}

/* Parses whole records at the front of in into resp; returns 1 when the
 * END_REQUEST of id was seen, -1 on a malformed header. */
static int parse_some(fcbuf_t *in, uint16_t id, fcc_response_t *resp,
                      fcc_record_t *rec)
{
    size_t off = 0;
    int done = 0;

    while (!done && in->len - off >= FCGI_HEADER_LEN) {
        size_t whole;

        if (fcgi_header_decode(in->p + off, &rec->h) != SUSPECT_OK) {
            return -1;
        }
        whole =
            FCGI_HEADER_LEN + (size_t)rec->h.content_len + rec->h.padding_len;
        if (in->len - off < whole) {
            break;
        }
        memcpy(rec->content, in->p + off + FCGI_HEADER_LEN, rec->h.content_len);
        done = take(rec, id, resp);
        off += whole;
    }
    memmove(in->p, in->p + off, in->len - off);
    in->len -= off;
    return done;
}

int fcc_exchange(int fd, const fcbuf_t *req, uint16_t id, fcc_response_t *resp,
                 int timeout_ms)
{
    long long deadline = mono_ms() + test_scale_ms((unsigned)timeout_ms);
    fcc_record_t *rec = malloc(sizeof(*rec));
    fcbuf_t in = {0};
    size_t sent = 0;
    int done = 0;
    uint8_t buf[65536];

    while (rec != NULL && done == 0) {
        struct pollfd pf = {fd, POLLIN | (sent < req->len ? POLLOUT : 0), 0};
        ssize_t r;

        if (poll(&pf, 1, left(deadline)) <= 0) {
            break;
        }
        if ((pf.revents & POLLOUT) != 0) {
            r = send(fd, req->p + sent, req->len - sent,
                     MSG_NOSIGNAL | MSG_DONTWAIT);
            sent += r > 0 ? (size_t)r : 0;
        }
        if ((pf.revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
            r = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
            if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
                break;
            }
            fcbuf_add(&in, buf, r > 0 ? (size_t)r : 0);
            done = parse_some(&in, id, resp, rec);
        }
    }
    free(rec);
    fcbuf_free(&in);
    return done == 1 ? 0 : -1;
}
