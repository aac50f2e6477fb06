/*
 * suspect_fcgi.c - suspect-fcgi: the FastCGI daemon in front of legacy apps.
 *
 *   suspect-fcgi -c suspect.xml [--listen SPEC] [--grace S] [-v]   run
 *   suspect-fcgi -c suspect.xml --check               validate and print
 *
 * Threads: main opens everything, blocks every signal (workers inherit the
 * mask, so no FastCGI read or write is ever cut by EINTR and CGI children
 * get a clean mask set by the spawner), starts the worker pool, then
 * becomes the signal thread: sigtimedwait() with the reload interval as
 * timeout.  SIGHUP reloads both files now; the timeout polls them;
 * SIGUSR1 opens the decision log's file again (logrotate).
 * SIGTERM or SIGINT stops accepting at once (mw_server_refuse_new(), and
 * only then the log line that says so), then mw_server_stop(), run by a
 * helper thread because it waits for the requests in flight, gives those
 * requests a grace period (--grace, 10 s); when it is over, or
 * at a second SIGTERM or SIGINT, every CGI still running is killed
 * (mw_cgi_shutdown()) and every request waiting for the upstream FastCGI
 * server is cancelled (mw_upstream_shutdown(): its connection closed),
 * each answered 504 or cut, so the workers can be joined.  Without that
 * bound a stop would wait for each program up to <Cgi timeout>, which may
 * be a day, or for a hung app up to <Upstream timeout>.  Then the unix socket
 * is removed and the exit status is 0.  SIGPIPE stays blocked: writes report
 * EPIPE.
 *
 * Inherited descriptors: first of all, every descriptor above stderr that
 * the daemon was started with and that is not a listening socket is
 * closed (and, with -v, said): a launcher's pipe (make's jobserver, a
 * script's command substitution) held open by a daemon keeps its reader
 * waiting for an end of file as long as the daemon lives.  Listening
 * sockets stay: they are what listen="fd:N" and socket activation
 * ($LISTEN_FDS, from fd 3) adopt.  Descriptors at or past the soft limit
 * are not looked at (valgrind keeps its own there).
 *
 * Descriptors: the soft limit is raised towards the hard one at start
 * (65536 at most), so the server can hold that many connections (the
 * front thread holds every waiting one, and its cap comes from this
 * limit); CGI programs get the limit the daemon was started with.
 *
 * It always runs in the foreground and logs to stderr: systemd, runit or
 * any supervisor keeps it running and keeps its log.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "forward/cgi.h"
#include "setup/check.h"
#include "fcgi/fcgi_server.h"
#include "fcgi/listen.h"
#include "log/log.h"
#include "handler.h"
#include "runtime.h"
#include "services.h"
#include "forward/upstream.h"

#define LISTEN_BACKLOG 4096
#define FD_LIMIT       65536 /* descriptors asked for at most */
/* How long a stop waits for requests in flight by default, and at most. */
#define GRACE_MS_DEFAULT 10000u
#define GRACE_MS_MAX     86400000u
/* How often the stop looks whether the requests have finished. */
#define DRAIN_SLICE_MS 20

typedef struct options {
    const char *conf;
    const char *listen;
    unsigned grace_ms;
    bool check;
    int verbose;
} options_t;

static void usage(FILE *f)
{
    fprintf(f, "usage: suspect-fcgi -c FILE [--listen SPEC] [--grace S] [-v] "
               "[--check]\n"
               "  -c, --config FILE   suspect.xml (default "
               "/etc/suspect/suspect.xml)\n"
               "  -l, --listen SPEC   override <Server listen>: unix:PATH,\n"
               "                      tcp:HOST:PORT, fd:N or systemd\n"
               "  -g, --grace SECONDS how long SIGTERM waits for requests in\n"
               "                      flight before it ends the CGI programs\n"
               "                      still running (default 10)\n"
               "  -t, --check         validate both files, print the routes "
               "and limits, exit\n"
               "  -v, --verbose       log each denial (twice: debug)\n"
               "  -f, --foreground    accepted for compatibility (always)\n"
               "  -V, --version       print the version\n");
}

/* Seconds (a decimal fraction allowed) into *ms; 0, or -1 when text is
 * not a number in 0..86400. */
static int parse_grace(const char *text, unsigned *ms)
{
    char *end;
    double s;

    errno = 0;
    s = strtod(text, &end);
    if (errno != 0 || end == text || *end != '\0' || !(s >= 0) ||
        s * 1000 > GRACE_MS_MAX) {
        return -1;
    }
    *ms = (unsigned)(s * 1000 + 0.5);
    return 0;
}

/* Parses argv; returns -1 to exit with 2, 1 to exit with 0. */
static int parse_args(int argc, char **argv, options_t *o)
{
    static const struct option longs[] = {
        {"config", required_argument, NULL, 'c'},
        {"listen", required_argument, NULL, 'l'},
        {"grace", required_argument, NULL, 'g'},
        {"check", no_argument, NULL, 't'},
        {"verbose", no_argument, NULL, 'v'},
        {"foreground", no_argument, NULL, 'f'},
        {"version", no_argument, NULL, 'V'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    int ch;

    memset(o, 0, sizeof(*o));
    o->conf = "/etc/suspect/suspect.xml";
    o->grace_ms = GRACE_MS_DEFAULT;
    while ((ch = getopt_long(argc, argv, "c:l:g:tvfVh", longs, NULL)) != -1) {
        switch (ch) {
        case 'c':
            o->conf = optarg;
            break;
        case 'l':
            o->listen = optarg;
            break;
        case 'g':
            if (parse_grace(optarg, &o->grace_ms) != 0) {
                fprintf(stderr,
                        "suspect-fcgi: --grace '%s': expected seconds, "
                        "0 to 86400\n",
                        optarg);
                return -1;
            }
            break;
        case 't':
            o->check = true;
            break;
        case 'v':
            o->verbose++;
            break;
        case 'f':
            break;
        case 'V':
            printf("suspect-fcgi %s\n", PACKAGE_VERSION);
            return 1;
        case 'h':
            usage(stdout);
            return 1;
        default:
            usage(stderr);
            return -1;
        }
    }
    if (optind != argc) {
        usage(stderr);
        return -1;
    }
    return 0;
}

static void log_err(const char *what, const suspect_err_t *err)
{
    char msg[600];

    suspect_err_format(err, msg, sizeof(msg));
    mw_log(MW_LOG_ERROR, "%s%s", what, msg);
}

/*
 * Waits for SIGHUP, SIGUSR1, SIGTERM and SIGINT until one of the last two,
 * and returns it, reloading on SIGHUP and whenever the reload interval has
 * passed, reopening the decision log on SIGUSR1.  The other signals stay
 * blocked and are never waited for: a SIGCHLD from every CGI exit must not keep
 * restarting the wait and starve the reloads.
 */
static int signal_loop(mw_runtime_t *rt)
{
    sigset_t set;
    int64_t next = mono_ms() + mw_runtime_reload_ms(rt);

    sigemptyset(&set);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGUSR1);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    for (;;) {
        int64_t left = next - mono_ms();
        int sig = -1;

        if (left > 0) {
            struct timespec ts = ns_timespec(left * 1000000);

            sig = sigtimedwait(&set, NULL, &ts);
        }
        if (sig == SIGTERM || sig == SIGINT) {
            return sig;
        }
        if (sig == SIGHUP) {
            mw_log(MW_LOG_NOTICE, "SIGHUP: reloading");
            mw_runtime_reload(rt, true, NULL);
        }
        if (sig == SIGUSR1) {
            mw_runtime_reopen_logs(rt);
        }
        if (mono_ms() >= next) {
            mw_runtime_reload(rt, false, NULL);
            next = mono_ms() + mw_runtime_reload_ms(rt);
        }
    }
}

/* What the stopping thread shares with main. */
typedef struct stopper {
    mw_server_t *srv;
    atomic_bool done;
} stopper_t;

static void *stopper_main(void *arg)
{
    stopper_t *s = arg;

    mw_server_stop(s->srv);
    atomic_store(&s->done, true);
    return NULL;
}

/* Waits until the stopper is done, grace_ms have passed, or a second
 * SIGTERM or SIGINT came; true when it is done. */
static bool wait_drained(stopper_t *s, unsigned grace_ms)
{
    int64_t end = mono_ms() + grace_ms;
    sigset_t set;

    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    while (!atomic_load(&s->done)) {
        int64_t left = end - mono_ms();
        struct timespec ts = {0, 0};

        if (left <= 0) {
            mw_log(MW_LOG_WARNING,
                   "still busy after the grace period (%u ms): ending the "
                   "CGI programs and upstream requests still running",
                   grace_ms);
            return false;
        }
        ts.tv_nsec =
            (long)(left < DRAIN_SLICE_MS ? left : DRAIN_SLICE_MS) * 1000000L;
        if (sigtimedwait(&set, NULL, &ts) >= 0) {
            mw_log(MW_LOG_WARNING, "stop signal again: ending the CGI "
                                   "programs and upstream requests still "
                                   "running now");
            return false;
        }
    }
    return true;
}

/* Ends every CGI run and upstream request still going. */
static void end_in_flight(void)
{
    mw_cgi_shutdown();
    mw_upstream_shutdown();
}

/*
 * Stops srv: it accepts nothing from now on; the requests in flight get
 * grace_ms to finish, then every CGI run and upstream request still going
 * is ended, and the workers are joined.
 */
static void drain(mw_server_t *srv, unsigned grace_ms)
{
    stopper_t s;
    pthread_t th;

    s.srv = srv;
    atomic_init(&s.done, false);
    if (pthread_create(&th, NULL, stopper_main, &s) != 0) {
        end_in_flight(); /* cannot wait for them: end them now */
        mw_server_stop(srv);
        return;
    }
    if (!wait_drained(&s, grace_ms)) {
        end_in_flight();
    }
    pthread_join(th, NULL);
}

/* Closes fd when it is not a listening socket; whether it did. */
static bool close_unless_listening(int fd)
{
    int v = 0;
    socklen_t len = sizeof(v);

    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &v, &len) == 0 && v != 0) {
        return false;
    }
    return close(fd) == 0;
}

/* Closes the inherited descriptors above stderr that are not listening
 * sockets (see the top of the file); how many, their numbers in list (the
 * first few, then "..."). */
static int close_inherited(char *list, size_t size)
{
    struct rlimit rl;
    long limit = 65536;
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    size_t used = 0;
    int closed = 0;

    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)limit) {
        limit = (long)rl.rlim_cur;
    }
    list[0] = '\0';
    /* without /proc, every number below the limit is tried */
    for (long fd = 3; d == NULL && fd < limit; fd++) {
        if (fcntl((int)fd, F_GETFD) >= 0 && close_unless_listening((int)fd)) {
            closed++;
            snprintf(list, size, "...");
        }
    }
    while (d != NULL && (e = readdir(d)) != NULL) {
        char *end;
        long fd = strtol(e->d_name, &end, 10);

        if (*end != '\0' || end == e->d_name || fd < 3 || fd >= limit ||
            fd == dirfd(d) || !close_unless_listening((int)fd)) {
            continue;
        }
        closed++;
        if (used + 24 < size) {
            used += (size_t)snprintf(list + used, size - used, "%s%ld",
                                     used > 0 ? " " : "", fd);
        } else if (used + 4 < size) {
            used += (size_t)snprintf(list + used, size - used, " ...");
            size = used; /* full */
        }
    }
    if (d != NULL) {
        closedir(d);
    }
    return closed;
}

/* Raises the soft descriptor limit towards the hard one (a stock service
 * gets 1024 of 524288), to FD_LIMIT at most; CGI programs start with the
 * limit the daemon was given, as they would under any web server. */
static void raise_fd_limit(void)
{
    struct rlimit rl;
    rlim_t was;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= FD_LIMIT ||
        rl.rlim_cur >= rl.rlim_max) {
        return;
    }
    was = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max < FD_LIMIT ? rl.rlim_max : FD_LIMIT;
    if (setrlimit(RLIMIT_NOFILE, &rl) == 0) {
        mw_cgi_limit_fds((unsigned long)was);
    }
}

/* Opens the socket, runs the workers and the signal loop; exit status. */
static int serve(mw_runtime_t *rt, unsigned grace_ms)
{
    const suspect_conf_t *c = mw_runtime_conf(rt);
    const char *listen = mw_runtime_listen(rt);
    mw_server_opts_t so;
    mw_server_t *srv = NULL;
    mw_services_t *svc = NULL;
    suspect_err_t err;
    sigset_t all;
    int fd = -1, sig;

    suspect_err_clear(&err);
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    raise_fd_limit();
    if (mw_listen_open(listen, LISTEN_BACKLOG, c->socket_mode, &fd, &err) !=
        SUSPECT_OK) {
        log_err("", &err);
        return 1;
    }
    memset(&so, 0, sizeof(so));
    so.listen_fd = fd;
    so.workers = c->workers;
    so.params_max = c->params_max;
    so.io_timeout_ms = c->io_timeout_ms;
    so.request_timeout_ms = c->request_timeout_ms;
    so.max_connections = c->max_connections;
    so.handler = mw_handler_request;
    so.answers_in_front = mw_handler_answers_in_front;
    so.arg = rt;
    if (mw_server_new(&so, &srv, &err) != SUSPECT_OK ||
        mw_server_start(srv, &err) != SUSPECT_OK ||
        mw_services_start(rt, srv, &svc, &err) != SUSPECT_OK) {
        log_err("", &err);
        mw_server_free(srv);
        close(fd);
        mw_listen_cleanup(listen);
        return 1;
    }
    mw_log(MW_LOG_NOTICE, "listening on %s, %u workers, %s store", listen,
           c->workers,
           c->store == SUSPECT_STORE_REDIS  ? "redis"
           : c->store == SUSPECT_STORE_LMDB ? "lmdb"
                                            : "memory");
    sig = signal_loop(rt);
    mw_server_refuse_new(srv);
    mw_services_stop(svc);
    mw_log(MW_LOG_NOTICE,
           "%s: no new requests; finishing those in flight, then exiting",
           strsignal(sig));
    drain(srv, grace_ms);
    mw_cgi_kill_all();
    mw_server_free(srv);
    close(fd);
    mw_listen_cleanup(listen);
    mw_log(MW_LOG_NOTICE, "stopped");
    return 0;
}

int main(int argc, char **argv)
{
    options_t o;
    mw_runtime_t *rt = NULL;
    suspect_err_t err;
    char strays[64];
    int closed = close_inherited(strays, sizeof(strays));
    int r = parse_args(argc, argv, &o);

    if (r != 0) {
        return r < 0 ? 2 : 0;
    }
    if (o.check) {
        return mw_check(o.conf, stdout, stderr);
    }
    mw_log_init("suspect-fcgi", o.verbose >= 2   ? MW_LOG_DEBUG
                                : o.verbose == 1 ? MW_LOG_INFO
                                                 : MW_LOG_NOTICE);
    if (closed > 0) {
        mw_log(MW_LOG_INFO,
               "closed %d descriptor%s inherited from the parent (%s): "
               "only listening sockets are kept",
               closed, closed == 1 ? "" : "s", strays);
    }
    suspect_err_clear(&err);
    if (mw_runtime_new(o.conf, o.listen, &rt, &err) != SUSPECT_OK) {
        log_err("", &err);
        return 1;
    }
    r = serve(rt, o.grace_ms);
    mw_runtime_free(rt);
    return r;
}
