/*
 * listen.c - opening the listening socket of suspect-fcgi, and connecting
 * to upstream FastCGI servers, with clean errors.
 *
 * Specs are parsed into a sockaddr first (parse_spec), so every form
 * shares one socket/bind/listen path and every bad spec is reported as
 * SUSPECT_E_CONFIG naming the spec before any system call.
 *
 * Unix sockets: bind() fails with EADDRINUSE when the path exists.  Only a
 * socket is ever replaced, and only when a connect() to it is refused
 * (nobody listens: a stale socket left by a crash); a regular file, a
 * directory or a live socket is never touched.  The permissions are
 * applied between bind() and listen(), so no client can connect while the
 * socket still has the umask's mode.  The sockets we create are
 * remembered (path, device, inode) so mw_listen_cleanup() removes only
 * those, not a socket another instance has put there since.
 *
 * Inherited sockets (fd:N, systemd) must be listening SOCK_STREAM sockets;
 * they get FD_CLOEXEC like everything we open (SOCK_CLOEXEC).  Under
 * socket activation ($LISTEN_PID is ours), a unix: or tcp: spec takes the
 * passed socket bound to its address instead of binding one (systemd
 * already listens there), so one suspect.xml serves with or without the
 * .socket unit; the $LISTEN_* variables are then removed.
 *
 * mw_connect(): a non-blocking connect() and poll() bound the time, then
 * the socket is made blocking again.  A unix socket whose backlog is full
 * answers EAGAIN instead of "in progress"; that is retried until the
 * deadline.
 */
#include "clock.h"
#include "listen.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* A spec resolved to an address. */
typedef struct addr {
    struct sockaddr_storage ss;
    socklen_t len;
    bool is_unix;
} addr_t;

/* Unix sockets created by mw_listen_open(), for mw_listen_cleanup(). */
#define OWNED_MAX 16
static struct {
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    dev_t dev;
    ino_t ino;
} owned[OWNED_MAX];
static pthread_mutex_t owned_lock = PTHREAD_MUTEX_INITIALIZER;

static suspect_rc_t bad_spec(suspect_err_t *err, const char *spec,
                             const char *why)
{
    return suspect_err_set(err, SUSPECT_E_CONFIG, NULL, 0, "%s: %s", spec, why);
}

/* Fills a from "/path" of spec (the text after "unix:"). */
static suspect_rc_t parse_unix(const char *spec, const char *path, addr_t *a,
                               suspect_err_t *err)
{
    struct sockaddr_un *sun = (struct sockaddr_un *)&a->ss;
    size_t n = strlen(path);

    if (n == 0) {
        return bad_spec(err, spec, "empty socket path");
    }
    if (n >= sizeof(sun->sun_path)) {
        return bad_spec(err, spec, "socket path too long");
    }
    memset(sun, 0, sizeof(*sun));
    sun->sun_family = AF_UNIX;
    memcpy(sun->sun_path, path, n + 1);
    a->len = (socklen_t)sizeof(*sun);
    a->is_unix = true;
    return SUSPECT_OK;
}

/* Parses a decimal port (0 allowed only when allow_zero). */
static bool parse_port(const char *s, bool allow_zero, char *out, size_t size)
{
    unsigned long v = 0;
    size_t n = strlen(s);

    if (n == 0 || n > 5 || n >= size) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
        v = v * 10 + (unsigned long)(s[i] - '0');
    }
    if (v > 65535 || (v == 0 && !allow_zero)) {
        return false;
    }
    memcpy(out, s, n + 1);
    return true;
}

/* Splits "host:port" or "[v6]:port" into host and port (host may be at
 * most NI_MAXHOST bytes); *v6 tells the bracketed form. */
static suspect_rc_t split_host_port(const char *spec, const char *hp,
                                    bool allow_zero, char *host, char *port,
                                    bool *v6, suspect_err_t *err)
{
    const char *colon, *hend;

    *v6 = hp[0] == '[';
    if (*v6) {
        hend = strchr(hp, ']');
        if (hend == NULL || hend[1] != ':') {
            return bad_spec(err, spec, "expected [IPv6]:port");
        }
        colon = hend + 1;
        hp++;
    } else {
        colon = strrchr(hp, ':');
        if (colon == NULL) {
            return bad_spec(err, spec, "expected host:port");
        }
        if (memchr(hp, ':', (size_t)(colon - hp)) != NULL) {
            return bad_spec(err, spec, "IPv6 addresses need brackets");
        }
        hend = colon;
    }
    if (hend == hp) {
        return bad_spec(err, spec, "empty host");
    }
    if ((size_t)(hend - hp) >= NI_MAXHOST) {
        return bad_spec(err, spec, "host name too long");
    }
    memcpy(host, hp, (size_t)(hend - hp));
    host[hend - hp] = '\0';
    if (!parse_port(colon + 1, allow_zero, port, NI_MAXSERV)) {
        return bad_spec(err, spec, "bad port (1-65535)");
    }
    return SUSPECT_OK;
}

/* Fills a from "host:port" or "[v6]:port" (the text after "tcp:"),
 * resolving a name once and keeping the first address. */
static suspect_rc_t parse_tcp(const char *spec, const char *hp, bool passive,
                              addr_t *a, suspect_err_t *err)
{
    char host[NI_MAXHOST], port[NI_MAXSERV];
    struct addrinfo hints, *res = NULL;
    bool v6;
    int rc;

    if (split_host_port(spec, hp, passive, host, port, &v6, err) !=
        SUSPECT_OK) {
        return SUSPECT_E_CONFIG;
    }
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = v6 ? AF_INET6 : AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags =
        AI_NUMERICSERV | (v6 ? AI_NUMERICHOST : 0) | (passive ? AI_PASSIVE : 0);
    rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0 || res == NULL) {
        suspect_err_set(err, SUSPECT_E_CONFIG, NULL, 0, "%s: %s", spec,
                        rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
        if (res != NULL) {
            freeaddrinfo(res);
        }
        return SUSPECT_E_CONFIG;
    }
    memcpy(&a->ss, res->ai_addr, res->ai_addrlen);
    a->len = res->ai_addrlen;
    a->is_unix = false;
    freeaddrinfo(res);
    return SUSPECT_OK;
}

/* Resolves "unix:..." or "tcp:..." into a. */
static suspect_rc_t parse_spec(const char *spec, bool passive, addr_t *a,
                               suspect_err_t *err)
{
    memset(a, 0, sizeof(*a));
    if (strncmp(spec, "unix:", 5) == 0) {
        return parse_unix(spec, spec + 5, a, err);
    }
    if (strncmp(spec, "tcp:", 4) == 0) {
        return parse_tcp(spec, spec + 4, passive, a, err);
    }
    return bad_spec(err, spec,
                    passive ? "expected unix:PATH, tcp:HOST:PORT, fd:N or "
                              "systemd"
                            : "expected unix:PATH or tcp:HOST:PORT");
}

/* Whether a listener answers on the unix socket at a (a refused connect
 * means a stale socket). */
static bool unix_alive(const addr_t *a)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    bool alive;

    if (fd < 0) {
        return true; /* cannot tell: do not replace */
    }
    alive = connect(fd, (const struct sockaddr *)&a->ss, a->len) == 0 ||
            (errno != ECONNREFUSED && errno != ENOENT);
    close(fd);
    return alive;
}

/* After EADDRINUSE on a unix path: removes it when it is a stale socket,
 * else fails saying why it stays. */
static suspect_rc_t unix_replace(const char *spec, const addr_t *a,
                                 suspect_err_t *err)
{
    const char *path = ((const struct sockaddr_un *)&a->ss)->sun_path;
    struct stat st;

    if (lstat(path, &st) != 0) {
        return errno == ENOENT ? SUSPECT_OK
                               : suspect_err_sys(err, SUSPECT_E_IO, NULL,
                                                 "%s: lstat", spec);
    }
    if (!S_ISSOCK(st.st_mode)) {
        errno = EEXIST;
        return suspect_err_sys(err, SUSPECT_E_IO, NULL,
                               "%s: exists and is not a socket; not "
                               "replacing it",
                               spec);
    }
    if (unix_alive(a)) {
        errno = EADDRINUSE;
        return suspect_err_sys(err, SUSPECT_E_IO, NULL,
                               "%s: another server listens there", spec);
    }
    if (unlink(path) != 0 && errno != ENOENT) {
        return suspect_err_sys(err, SUSPECT_E_IO, NULL,
                               "%s: removing the stale socket", spec);
    }
    return SUSPECT_OK;
}

/* Remembers the socket just bound at path as ours. */
static void remember_owned(const char *path)
{
    struct stat st;

    if (lstat(path, &st) != 0) {
        return;
    }
    pthread_mutex_lock(&owned_lock);
    for (size_t i = 0; i < OWNED_MAX; i++) {
        if (owned[i].path[0] == '\0' || strcmp(owned[i].path, path) == 0) {
            snprintf(owned[i].path, sizeof(owned[i].path), "%s", path);
            owned[i].dev = st.st_dev;
            owned[i].ino = st.st_ino;
            break;
        }
    }
    pthread_mutex_unlock(&owned_lock);
}

/* Binds fd to the unix path of a, replacing a stale socket, and applies
 * mode before anyone can connect. */
static suspect_rc_t bind_unix(int fd, const char *spec, const addr_t *a,
                              unsigned mode, suspect_err_t *err)
{
    const char *path = ((const struct sockaddr_un *)&a->ss)->sun_path;
    int r = bind(fd, (const struct sockaddr *)&a->ss, a->len);

    if (r != 0 && errno == EADDRINUSE) {
        if (unix_replace(spec, a, err) != SUSPECT_OK) {
            return SUSPECT_E_IO;
        }
        r = bind(fd, (const struct sockaddr *)&a->ss, a->len);
    }
    if (r != 0) {
        return suspect_err_sys(err, SUSPECT_E_IO, NULL, "%s: bind", spec);
    }
    if (mode != 0 && chmod(path, (mode_t)(mode & 07777)) != 0) {
        suspect_err_sys(err, SUSPECT_E_IO, NULL, "%s: chmod %o", spec, mode);
        unlink(path);
        return SUSPECT_E_IO;
    }
    remember_owned(path);
    return SUSPECT_OK;
}

/* Options of a TCP listener: address reuse, and IPv6 only on IPv6. */
static suspect_rc_t tcp_options(int fd, const char *spec, const addr_t *a,
                                suspect_err_t *err)
{
    int one = 1;

    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0) {
        return suspect_err_sys(err, SUSPECT_E_IO, NULL, "%s: SO_REUSEADDR",
                               spec);
    }
    if (a->ss.ss_family == AF_INET6 &&
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) != 0) {
        return suspect_err_sys(err, SUSPECT_E_IO, NULL, "%s: IPV6_V6ONLY",
                               spec);
    }
    return SUSPECT_OK;
}

/* Opens a new listener for a unix or tcp spec. */
static suspect_rc_t open_new(const char *spec, int backlog, unsigned mode,
                             int *out, suspect_err_t *err)
{
    addr_t a;
    suspect_rc_t rc = parse_spec(spec, true, &a, err);
    int fd;

    if (rc != SUSPECT_OK) {
        return rc;
    }
    fd = socket(a.ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return suspect_err_sys(err, SUSPECT_E_IO, NULL, "%s: socket", spec);
    }
    if (a.is_unix) {
        rc = bind_unix(fd, spec, &a, mode, err);
    } else {
        rc = tcp_options(fd, spec, &a, err);
        if (rc == SUSPECT_OK &&
            bind(fd, (const struct sockaddr *)&a.ss, a.len) != 0) {
            rc = suspect_err_sys(err, SUSPECT_E_IO, NULL, "%s: bind", spec);
        }
    }
    if (rc == SUSPECT_OK && listen(fd, backlog > 0 ? backlog : 128) != 0) {
        rc = suspect_err_sys(err, SUSPECT_E_IO, NULL, "%s: listen", spec);
        if (a.is_unix) {
            mw_listen_cleanup(spec);
        }
    }
    if (rc != SUSPECT_OK) {
        close(fd);
        return rc;
    }
    *out = fd;
    return SUSPECT_OK;
}

/* Checks that inherited fd is a listening stream socket, sets CLOEXEC. */
static suspect_rc_t adopt(const char *spec, int fd, int *out,
                          suspect_err_t *err)
{
    int type = 0, acc = 0, flags = fcntl(fd, F_GETFD);
    socklen_t len = sizeof(type);

    if (flags < 0) {
        return suspect_err_sys(err, SUSPECT_E_IO, NULL,
                               "%s: descriptor %d is not open", spec, fd);
    }
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0) {
        return suspect_err_sys(err, SUSPECT_E_IO, NULL,
                               "%s: descriptor %d is not a socket", spec, fd);
    }
    len = sizeof(acc);
    if (type != SOCK_STREAM ||
        getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &len) != 0 ||
        acc == 0) {
        errno = EINVAL;
        return suspect_err_sys(err, SUSPECT_E_IO, NULL,
                               "%s: descriptor %d is not a listening stream "
                               "socket",
                               spec, fd);
    }
    if (fcntl(fd, F_SETFD, flags | FD_CLOEXEC) != 0) {
        return suspect_err_sys(err, SUSPECT_E_IO, NULL, "%s: FD_CLOEXEC", spec);
    }
    *out = fd;
    return SUSPECT_OK;
}

/* Parses a non-negative decimal int; -1 when s is not one. */
static int parse_nonneg(const char *s)
{
    long v = 0;

    if (s == NULL || *s == '\0' || strlen(s) > 10) {
        return -1;
    }
    for (const char *p = s; *p != '\0'; p++) {
        if (*p < '0' || *p > '9') {
            return -1;
        }
        v = v * 10 + (*p - '0');
    }
    return v > INT_MAX ? -1 : (int)v;
}

/* How many sockets systemd passed to this process ($LISTEN_PID is ours,
 * $LISTEN_FDS >= 1), or 0. */
static int passed_count(void)
{
    const char *pid_s = getenv("LISTEN_PID"), *fds_s = getenv("LISTEN_FDS");
    int pid = parse_nonneg(pid_s), nfds = parse_nonneg(fds_s);

    return pid > 0 && (pid_t)pid == getpid() && nfds > 0 ? nfds : 0;
}

/* The passed sockets are taken: like sd_listen_fds(1), so that nothing
 * started later believes they are its own. */
static void forget_passed(void)
{
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_FDNAMES");
}

/* Whether the socket fd is bound to the address of a. */
static bool bound_to(int fd, const addr_t *a)
{
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);

    memset(&ss, 0, sizeof(ss));
    if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0 ||
        ss.ss_family != a->ss.ss_family) {
        return false;
    }
    if (ss.ss_family == AF_UNIX) {
        return strcmp(((struct sockaddr_un *)&ss)->sun_path,
                      ((const struct sockaddr_un *)&a->ss)->sun_path) == 0;
    }
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *x = (const struct sockaddr_in *)&ss;
        const struct sockaddr_in *y = (const struct sockaddr_in *)&a->ss;

        return x->sin_port == y->sin_port &&
               x->sin_addr.s_addr == y->sin_addr.s_addr;
    }
    if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *x = (const struct sockaddr_in6 *)&ss;
        const struct sockaddr_in6 *y = (const struct sockaddr_in6 *)&a->ss;

        return x->sin6_port == y->sin6_port &&
               memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr)) == 0;
    }
    return false;
}

/* Socket activation for a unix: or tcp: spec: of the n sockets systemd
 * passed, the one bound to spec's address (so the same suspect.xml works
 * with and without the .socket unit).  Passed sockets on other addresses
 * are an error: the two files disagree, and serving on the wrong one would
 * hide it. */
static suspect_rc_t open_passed(const char *spec, int n, int *out,
                                suspect_err_t *err)
{
    addr_t a;
    suspect_rc_t rc = parse_spec(spec, true, &a, err);

    if (rc != SUSPECT_OK) {
        return rc;
    }
    for (int fd = 3; fd < 3 + n; fd++) {
        if (bound_to(fd, &a)) {
            rc = adopt(spec, fd, out, err);
            if (rc == SUSPECT_OK) {
                forget_passed();
            }
            return rc;
        }
    }
    return suspect_err_set(err, SUSPECT_E_CONFIG, NULL, 0,
                           "%s: systemd passed %d socket%s (socket "
                           "activation), none on this address: make the "
                           ".socket unit's ListenStream= and <Server listen> "
                           "name the same one, or use listen=\"systemd\"",
                           spec, n, n == 1 ? "" : "s");
}

/* The first socket passed by systemd ($LISTEN_PID, $LISTEN_FDS). */
static suspect_rc_t open_systemd(const char *spec, int *out, suspect_err_t *err)
{
    const char *pid_s = getenv("LISTEN_PID"), *fds_s = getenv("LISTEN_FDS");
    int pid = parse_nonneg(pid_s), nfds = parse_nonneg(fds_s);
    suspect_rc_t rc;

    if (pid_s == NULL || fds_s == NULL) {
        return bad_spec(err, spec,
                        "$LISTEN_PID or $LISTEN_FDS is not set (not "
                        "started by socket activation)");
    }
    if (pid < 0 || nfds < 0) {
        return bad_spec(err, spec,
                        "$LISTEN_PID or $LISTEN_FDS is not a "
                        "number");
    }
    if ((pid_t)pid != getpid()) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, NULL, 0,
                               "%s: $LISTEN_PID is %d, not this process (%d)",
                               spec, pid, (int)getpid());
    }
    if (nfds < 1) {
        return bad_spec(err, spec, "$LISTEN_FDS passes no socket");
    }
    rc = adopt(spec, 3, out, err);
    if (rc == SUSPECT_OK) {
        forget_passed();
    }
    return rc;
}

suspect_rc_t mw_listen_open(const char *spec, int backlog, unsigned mode,
                            int *fd, suspect_err_t *err)
{
    if (spec == NULL || fd == NULL) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "mw_listen_open: NULL argument");
    }
    if (strncmp(spec, "fd:", 3) == 0) {
        int n = parse_nonneg(spec + 3);

        if (n < 0) {
            return bad_spec(err, spec, "expected fd:N");
        }
        return adopt(spec, n, fd, err);
    }
    if (strcmp(spec, "systemd") == 0) {
        return open_systemd(spec, fd, err);
    }
    if (passed_count() > 0) {
        return open_passed(spec, passed_count(), fd, err);
    }
    return open_new(spec, backlog, mode, fd, err);
}

void mw_listen_cleanup(const char *spec)
{
    const char *path;
    struct stat st;

    if (spec == NULL || strncmp(spec, "unix:", 5) != 0) {
        return;
    }
    path = spec + 5;
    pthread_mutex_lock(&owned_lock);
    for (size_t i = 0; i < OWNED_MAX; i++) {
        if (owned[i].path[0] == '\0' || strcmp(owned[i].path, path) != 0) {
            continue;
        }
        if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode) &&
            st.st_dev == owned[i].dev && st.st_ino == owned[i].ino) {
            unlink(path);
        }
        owned[i].path[0] = '\0';
    }
    pthread_mutex_unlock(&owned_lock);
}

/* Milliseconds left until deadline (mono_ms() time), at least 0; -1 when
 * there is no deadline. */
static int left_ms(long long deadline)
{
    long long now;

    if (deadline < 0) {
        return -1;
    }
    now = mono_ms();
    return now >= deadline ? 0 : (int)(deadline - now);
}

/* Waits for a connect() in progress on fd; 0 connected, else -errno. */
static int connect_wait(int fd, long long deadline)
{
    struct pollfd p = {fd, POLLOUT, 0};
    int soerr = 0, r;
    socklen_t len = sizeof(soerr);

    do {
        r = poll(&p, 1, left_ms(deadline));
    } while (r < 0 && errno == EINTR);
    if (r < 0) {
        return -errno;
    }
    if (r == 0) {
        return -ETIMEDOUT;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0) {
        return -errno;
    }
    return -soerr;
}

/* Connects fd to a before deadline; 0 or -errno (-ETIMEDOUT). */
static int connect_by(int fd, const addr_t *a, long long deadline)
{
    unsigned pause_us = 500;

    for (;;) {
        if (connect(fd, (const struct sockaddr *)&a->ss, a->len) == 0) {
            return 0;
        }
        if (errno == EINPROGRESS || errno == EINTR) {
            return connect_wait(fd, deadline);
        }
        if (errno != EAGAIN || !a->is_unix) {
            return -errno;
        }
        /* A unix listener with a full backlog: try again shortly. */
        if (left_ms(deadline) == 0) {
            return -ETIMEDOUT;
        }
        usleep(pause_us);
        pause_us = pause_us < 8000 ? pause_us * 2 : pause_us;
    }
}

suspect_rc_t mw_connect(const char *address, unsigned timeout_ms, int *fd,
                        suspect_err_t *err)
{
    long long deadline = -1;
    addr_t a;
    int s, r, one = 1;

    if (address == NULL || fd == NULL) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "mw_connect: NULL argument");
    }
    if (parse_spec(address, false, &a, err) != SUSPECT_OK) {
        return SUSPECT_E_CONFIG;
    }
    if (timeout_ms > 0) {
        deadline = mono_ms() + timeout_ms;
    }
    s = socket(a.ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (s < 0) {
        return suspect_err_sys(err, SUSPECT_E_IO, NULL, "%s: socket", address);
    }
    r = connect_by(s, &a, deadline);
    if (r == 0 && fcntl(s, F_SETFL, fcntl(s, F_GETFL) & ~O_NONBLOCK) != 0) {
        r = -errno;
    }
    if (r != 0) {
        close(s);
        errno = -r;
        if (r == -ETIMEDOUT) {
            return suspect_err_set(err, SUSPECT_E_TIMEOUT, NULL, 0,
                                   "%s: connect timed out after %u ms", address,
                                   timeout_ms);
        }
        return suspect_err_sys(err, SUSPECT_E_IO, NULL, "%s: connect", address);
    }
    if (!a.is_unix) {
        setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    *fd = s;
    return SUSPECT_OK;
}
