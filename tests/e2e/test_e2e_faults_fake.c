/*
 * test_e2e_faults_fake.c - suite "faults": a FastCGI application that
 * misbehaves on purpose, listening on the stack's upstream socket
 * (e2e.php_sock) in a thread of the test process.
 *
 * Each connection gets its own thread, which reads one whole request
 * (BEGIN_REQUEST, PARAMS, STDIN up to its empty record, with the records
 * of helpers/fcgiclient.h) and then answers
 * as the current mode says: well, never (it waits for the peer to close
 * and notes when), or wrongly (see flt_fake_mode_t).  A well answered
 * request on a kept connection is followed by the next one.  The counters
 * let a test see from the app's side what suspect-fcgi did: a request
 * arrived, a connection was closed by suspect-fcgi.
 *
 * Every wait also polls a stop eventfd, and sends time out after 5 s, so
 * flt_fake_stop() always ends every thread, then joins it.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "clock.h"
#include "helpers/e2e.h"
#include "helpers/fcgiclient.h"
#include "test_e2e_faults.h"
#include "helpers/vgwrap.h"

#define CONNS_MAX 256
#define HUGE_HEAD (1u << 20)

static struct fake {
    bool running;
    int lfd, stop;
    pthread_t th;
    pthread_t conns[CONNS_MAX];
    int nconns;
    atomic_int mode;
    atomic_int requests;  /* requests read whole */
    atomic_int peer_gone; /* connections the peer closed mid-request */
    atomic_llong gone_ms; /* mono_ms() of the last such close */
} fk = {.lfd = -1, .stop = -1};

/* ---- I/O with the stop ------------------------------------------------ */

/* Waits for events on fd or the stop: 1 ready, 0 stop, -1 error. */
static int wait_fd(int fd, short events)
{
    struct pollfd p[2] = {{fd, events, 0}, {fk.stop, POLLIN, 0}};

    for (;;) {
        int r = poll(p, 2, -1);

        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0 || p[1].revents != 0) {
            return r < 0 ? -1 : 0;
        }
        return 1;
    }
}

/* Sends one record (len <= 65535). */
static int send_rec(int fd, int type, const void *p, size_t len)
{
    uint8_t h[FCGI_HEADER_LEN];

    fcgi_header_encode(h, (uint8_t)type, 1, (uint16_t)len, 0);
    return fcc_send(fd, h, sizeof(h), 0) == 0 && fcc_send(fd, p, len, 0) == 0
               ? 0
               : -1;
}

/* Sends text as STDOUT records. */
static int send_out(int fd, const char *text, size_t len)
{
    while (len > 0) {
        size_t k = len > 65535 ? 65535 : len;

        if (send_rec(fd, 6, text, k) != 0) {
            return -1;
        }
        text += k;
        len -= k;
    }
    return 0;
}

/* The empty STDOUT and END_REQUEST (app status 0, complete). */
static int send_end(int fd)
{
    static const uint8_t end[8] = {0};

    return send_rec(fd, 6, NULL, 0) == 0 && send_rec(fd, 3, end, 8) == 0 ? 0
                                                                         : -1;
}

/* ---- one connection --------------------------------------------------- */

/* Reads one request; 0 (*keep: FCGI_KEEP_CONN), or -1 when the peer
 * closed (noted when it was mid-request) or the stop came. */
static int read_request(int fd, bool *keep)
{
    fcc_record_t rec;
    bool begun = false;

    for (;;) {
        int r = fcc_read_record_stop(fd, &rec, fk.stop);

        if (r == -1 && begun) {
            atomic_fetch_add(&fk.peer_gone, 1);
            atomic_store(&fk.gone_ms, mono_ms());
        }
        if (r != 0) {
            return -1;
        }
        if (rec.h.type == FCGI_BEGIN_REQUEST) {
            begun = true;
            *keep = (rec.content[2] & FCGI_KEEP_CONN) != 0;
        }
        if (rec.h.type == FCGI_STDIN && rec.h.content_len == 0) {
            atomic_fetch_add(&fk.requests, 1);
            return 0;
        }
    }
}

/* Waits until the peer closes the connection (noted) or the stop. */
static void hang(int fd)
{
    uint8_t b[4096];

    while (wait_fd(fd, POLLIN) == 1) {
        ssize_t r = recv(fd, b, sizeof(b), 0);

        if (r == 0 || (r < 0 && errno != EINTR)) {
            atomic_fetch_add(&fk.peer_gone, 1);
            atomic_store(&fk.gone_ms, mono_ms());
            return;
        }
    }
}

/* A header block of about HUGE_HEAD bytes, never ended. */
static int send_huge(int fd)
{
    char *text = malloc(HUGE_HEAD);
    size_t len = 0;
    int r;

    if (text == NULL) {
        return -1;
    }
    len = (size_t)snprintf(text, HUGE_HEAD, "Status: 200 OK\r\n");
    for (int i = 0; len + 64 < HUGE_HEAD; i++) {
        len += (size_t)snprintf(text + len, HUGE_HEAD - len,
                                "X-Filler-%06d: %040d\r\n", i, i);
    }
    r = send_out(fd, text, len);
    free(text);
    return r;
}

/* Binary junk instead of records, then a close. */
static void send_junk(int fd)
{
    uint8_t junk[4096];

    for (size_t i = 0; i < sizeof(junk); i++) {
        junk[i] = (uint8_t)(i * 167 + 13);
    }
    junk[0] = 0xff; /* not version 1 */
    fcc_send(fd, junk, sizeof(junk), 0);
}

/* A partial response, then the death of a process with unread input: a
 * reset (SO_LINGER 0). */
static void send_cut(int fd)
{
    static const char head[] = "Status: 200 OK\r\nContent-Type: text/plain"
                               "\r\n\r\n";
    struct linger lg = {1, 0};
    char *part = malloc(100000);

    if (part != NULL) {
        memset(part, 'x', 100000);
        if (send_out(fd, head, sizeof(head) - 1) == 0) {
            send_out(fd, part, 100000);
        }
        free(part);
    }
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
}

/* Answers one request as mode says; true when the connection may take
 * another one. */
static bool answer(int fd, flt_fake_mode_t mode)
{
    static const char ok[] = "Status: 200 OK\r\nContent-Type: text/plain\r\n"
                             "\r\nok fake\n";
    static const char bad[] = "this is not a header\r\nnor: this: either\r\n"
                              "\r\nbody\n";
    static const char bare[] = "just a body, no header block";
    /* No Content-Length: only the END_REQUEST that never comes would say
     * the body is whole (with one, nginx on a kept connection ends the
     * response on its length, and the client rightly gets it whole). */
    static const char noend[] = "Status: 200 OK\r\nContent-Type: text/plain"
                                "\r\n\r\ncomplete body\n";

    switch (mode) {
    case FK_OK:
        return send_out(fd, ok, sizeof(ok) - 1) == 0 && send_end(fd) == 0;
    case FK_HANG:
        hang(fd);
        return false;
    case FK_BAD_HEADERS:
        if (send_out(fd, bad, sizeof(bad) - 1) == 0) {
            send_end(fd);
        }
        return false;
    case FK_NO_HEADERS:
        if (send_out(fd, bare, sizeof(bare) - 1) == 0) {
            send_end(fd);
        }
        return false;
    case FK_HUGE_HEADERS:
        if (send_huge(fd) == 0) {
            send_end(fd);
        }
        return false;
    case FK_JUNK:
        send_junk(fd);
        return false;
    case FK_NO_END:
        send_out(fd, noend, sizeof(noend) - 1);
        return false;
    default: /* FK_CUT */
        send_cut(fd);
        return false;
    }
}

static void *conn_main(void *arg)
{
    int fd = (int)(intptr_t)arg;
    struct timeval tv = {5, 0};
    bool keep = false;

    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    while (read_request(fd, &keep) == 0 &&
           answer(fd, (flt_fake_mode_t)atomic_load(&fk.mode)) && keep) {
    }
    close(fd);
    return NULL;
}

static void *accept_main(void *arg)
{
    (void)arg;
    while (wait_fd(fk.lfd, POLLIN) == 1) {
        int fd = accept4(fk.lfd, NULL, NULL, SOCK_CLOEXEC);

        if (fd < 0) {
            continue;
        }
        if (fk.nconns == CONNS_MAX ||
            pthread_create(&fk.conns[fk.nconns], NULL, conn_main,
                           (void *)(intptr_t)fd) != 0) {
            close(fd);
            continue;
        }
        fk.nconns++;
    }
    for (int i = 0; i < fk.nconns; i++) {
        pthread_join(fk.conns[i], NULL);
    }
    return NULL;
}

/* ---- control ---------------------------------------------------------- */

int flt_fake_start(flt_fake_mode_t mode)
{
    struct sockaddr_un un;

    memset(&un, 0, sizeof(un));
    un.sun_family = AF_UNIX;
    if (strlen(e2e.php_sock) >= sizeof(un.sun_path)) {
        fprintf(stderr, "faults: %s: path too long\n", e2e.php_sock);
        return -1;
    }
    memcpy(un.sun_path, e2e.php_sock, strlen(e2e.php_sock) + 1);
    atomic_store(&fk.mode, (int)mode);
    atomic_store(&fk.requests, 0);
    atomic_store(&fk.peer_gone, 0);
    atomic_store(&fk.gone_ms, 0);
    fk.nconns = 0;
    fk.lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    fk.stop = eventfd(0, EFD_CLOEXEC);
    unlink(e2e.php_sock);
    if (fk.lfd < 0 || fk.stop < 0 ||
        bind(fk.lfd, (struct sockaddr *)&un, sizeof(un)) != 0 ||
        listen(fk.lfd, 64) != 0 ||
        pthread_create(&fk.th, NULL, accept_main, NULL) != 0) {
        fprintf(stderr, "faults: the fake FastCGI app cannot start: %s\n",
                strerror(errno));
        flt_fake_stop();
        return -1;
    }
    fk.running = true;
    return 0;
}

void flt_fake_set_mode(flt_fake_mode_t mode)
{
    atomic_store(&fk.mode, (int)mode);
}

int flt_fake_requests(void)
{
    return atomic_load(&fk.requests);
}

int flt_fake_peer_gone(long long *at_ms)
{
    if (at_ms != NULL) {
        *at_ms = atomic_load(&fk.gone_ms);
    }
    return atomic_load(&fk.peer_gone);
}

bool flt_fake_wait_peer_gone(int n, unsigned ms)
{
    long long end = mono_ms() + test_scale_ms(ms);

    while (flt_fake_peer_gone(NULL) < n) {
        if (mono_ms() >= end) {
            fprintf(stderr,
                    "faults: the fake app saw %d connections closed, "
                    "not %d\n",
                    flt_fake_peer_gone(NULL), n);
            return false;
        }
        usleep(5000);
    }
    return true;
}

bool flt_fake_wait_requests(int n, unsigned ms)
{
    long long end = mono_ms() + test_scale_ms(ms);

    while (flt_fake_requests() < n) {
        if (mono_ms() >= end) {
            fprintf(stderr, "faults: the fake app got %d requests, not %d\n",
                    flt_fake_requests(), n);
            return false;
        }
        usleep(5000);
    }
    return true;
}

void flt_fake_stop(void)
{
    uint64_t one = 1;

    if (fk.running) {
        if (write(fk.stop, &one, sizeof(one)) != sizeof(one)) {
            fprintf(stderr, "faults: cannot stop the fake app\n");
        }
        pthread_join(fk.th, NULL);
        fk.running = false;
    }
    if (fk.lfd >= 0) {
        close(fk.lfd);
    }
    if (fk.stop >= 0) {
        close(fk.stop);
    }
    fk.lfd = fk.stop = -1;
}
