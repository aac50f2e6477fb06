/*
 * redisserver.c - a private redis-server per test suite or bench.
 *
 * The server is forked and exec'd with a generated command line: no
 * persistence, a unix socket in a fresh temp dir, TCP only on 127.0.0.1 and
 * only when asked.  Readiness is a PING answered over the socket, polled
 * every 10 ms up to a 10 s deadline; a server that exits meanwhile (or a
 * binary that cannot be exec'd) fails the start.  The owner kills and reaps
 * it; nothing is left running or listening.
 */
#include "redisserver.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "util.h"
#include "vgwrap.h"

#define START_DEADLINE_MS 10000

suspect_store_t *test_redis_store(const char *url, unsigned timeout_ms,
                                  suspect_redis_clock_t clock,
                                  const char *prefix)
{
    suspect_redis_opts_t opts = {url, timeout_ms, timeout_ms, clock, prefix};
    suspect_store_t *store = NULL;
    suspect_err_t err;

    suspect_err_clear(&err);
    if (suspect_redis_new(&opts, &store, &err) != SUSPECT_OK) {
        fprintf(stderr, "redis store: %s\n", err.text);
        return NULL;
    }
    return store;
}

suspect_store_t *test_redis_failover(const char *url, unsigned timeout_ms,
                                     const suspect_failover_opts_t *fopts)
{
    suspect_store_t *redis = test_redis_store(url, timeout_ms, 0, NULL);
    suspect_store_t *mem = NULL, *out = NULL;
    suspect_err_t err;

    if (redis == NULL) {
        return NULL;
    }
    suspect_err_clear(&err);
    if (suspect_memstore_new(NULL, &mem, &err) != SUSPECT_OK) {
        suspect_store_free(redis);
        fprintf(stderr, "memory store: %s\n", err.text);
        return NULL;
    }
    /* Takes both stores, also when it fails. */
    if (suspect_failover_new(redis, mem, fopts, &out, &err) != SUSPECT_OK) {
        fprintf(stderr, "failover store: %s\n", err.text);
        return NULL;
    }
    return out;
}

int test_free_port(void)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

    if (fd < 0) {
        return -1;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &len) == 0) {
        port = ntohs(sa.sin_port);
    }
    close(fd);
    return port;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* exec's redis-server in the child; never returns. */
static void exec_server(const test_redis_t *r)
{
    char port[16], log[700];
    const char *argv[64];
    int n = 0;

    snprintf(port, sizeof(port), "%d", r->port);
    snprintf(log, sizeof(log), "%s/redis.log", r->dir);
    argv[n++] = "redis-server";
    argv[n++] = "--port";
    argv[n++] = port;
    argv[n++] = "--bind";
    argv[n++] = "127.0.0.1";
    argv[n++] = "--unixsocket";
    argv[n++] = r->sock;
    argv[n++] = "--unixsocketperm";
    argv[n++] = "700";
    argv[n++] = "--save";
    argv[n++] = "";
    argv[n++] = "--appendonly";
    argv[n++] = "no";
    argv[n++] = "--dir";
    argv[n++] = r->dir;
    argv[n++] = "--logfile";
    argv[n++] = log;
    if (r->password[0] != '\0') {
        argv[n++] = "--requirepass";
        argv[n++] = r->password;
    }
    for (int i = 0; r->extra != NULL && r->extra[i] != NULL && n < 63; i++) {
        argv[n++] = r->extra[i];
    }
    argv[n] = NULL;
    closefrom(3); /* none of the runner's descriptors (see procs.c) */
    execvp("redis-server", (char *const *)argv);
    fprintf(stderr,
            "test_redis: cannot run redis-server (Debian: "
            "redis-server): %s\n",
            strerror(errno));
    _exit(127);
}

/* Connects the helpers' context (AUTH when needed), close-on-exec so that
 * a program a test runs gets no descriptor of the test's own; 0 on
 * success. */
static int helper_connect(test_redis_t *r)
{
    struct timeval tv = {5, 0};
    redisReply *rep;

    if (r->ctx != NULL) {
        redisFree(r->ctx);
    }
    r->ctx = redisConnectUnixWithTimeout(r->sock, tv);
    if (r->ctx == NULL || r->ctx->err) {
        return -1;
    }
    (void)fcntl(r->ctx->fd, F_SETFD, FD_CLOEXEC);
    redisSetTimeout(r->ctx, tv);
    if (r->password[0] == '\0') {
        return 0;
    }
    rep = redisCommand(r->ctx, "AUTH %s", r->password);
    if (rep == NULL || rep->type == REDIS_REPLY_ERROR) {
        freeReplyObject(rep);
        return -1;
    }
    freeReplyObject(rep);
    return 0;
}

/* Forks the server and waits for PING; 0 on success. */
static int spawn(test_redis_t *r)
{
    long long deadline_ms;
    int status;

    r->pid = fork();
    if (r->pid < 0) {
        r->pid = 0;
        return -1;
    }
    if (r->pid == 0) {
        exec_server(r);
    }
    deadline_ms = mono_ms() + test_scale_ms(START_DEADLINE_MS);
    for (;;) {
        redisReply *rep;
        if (waitpid(r->pid, &status, WNOHANG) == r->pid) {
            fprintf(stderr,
                    "test_redis: redis-server exited at start "
                    "(see %s/redis.log)\n",
                    r->dir);
            r->pid = 0;
            return -1;
        }
        if (helper_connect(r) == 0) {
            rep = redisCommand(r->ctx, "PING");
            if (rep != NULL && rep->type == REDIS_REPLY_STATUS) {
                freeReplyObject(rep);
                return 0;
            }
            freeReplyObject(rep);
        }
        if (mono_ms() >= deadline_ms) {
            break;
        }
        sleep_ms(10);
    }
    fprintf(stderr, "test_redis: no PING answer within %u ms\n",
            test_scale_ms(START_DEADLINE_MS));
    test_redis_kill9(r);
    return -1;
}

int test_redis_start(test_redis_t *r, bool tcp, const char *password)
{
    return test_redis_start_ex(r, tcp, password, NULL);
}

int test_redis_start_ex(test_redis_t *r, bool tcp, const char *password,
                        const char *const *extra)
{
    memset(r, 0, sizeof(*r));
    r->extra = extra;
    r->dir = test_mkdtemp();
    if (r->dir == NULL) {
        return -1;
    }
    snprintf(r->sock, sizeof(r->sock), "%s/redis.sock", r->dir);
    snprintf(r->password, sizeof(r->password), "%s",
             password != NULL ? password : "");
    snprintf(r->url, sizeof(r->url), "unix://%s%s%s", r->sock,
             r->password[0] ? "?password=" : "", r->password);
    r->port = tcp ? test_free_port() : 0;
    if (r->port < 0 || spawn(r) != 0) {
        test_redis_stop(r);
        return -1;
    }
    return 0;
}

void test_redis_kill9(test_redis_t *r)
{
    if (r->ctx != NULL) {
        redisFree(r->ctx);
        r->ctx = NULL;
    }
    if (r->pid > 0) {
        kill(r->pid, SIGKILL);
        waitpid(r->pid, NULL, 0);
        r->pid = 0;
    }
}

int test_redis_restart(test_redis_t *r)
{
    test_redis_kill9(r);
    unlink(r->sock);
    return spawn(r);
}

void test_redis_stop(test_redis_t *r)
{
    test_redis_kill9(r);
    if (r->dir != NULL) {
        test_rmtree(r->dir);
        free(r->dir);
        r->dir = NULL;
    }
}

static redisReply *vcmd(test_redis_t *r, const char *fmt, va_list ap)
{
    redisReply *rep;
    va_list copy;

    if (r->ctx == NULL && helper_connect(r) != 0) {
        return NULL;
    }
    va_copy(copy, ap);
    rep = redisvCommand(r->ctx, fmt, copy);
    va_end(copy);
    if (rep == NULL && helper_connect(r) == 0) {
        rep = redisvCommand(r->ctx, fmt, ap);
    }
    return rep;
}

redisReply *test_redis_cmd(test_redis_t *r, const char *fmt, ...)
{
    redisReply *rep;
    va_list ap;
    va_start(ap, fmt);
    rep = vcmd(r, fmt, ap);
    va_end(ap);
    return rep;
}

long long test_redis_int(test_redis_t *r, const char *fmt, ...)
{
    redisReply *rep;
    long long v = LLONG_MIN;
    va_list ap;

    va_start(ap, fmt);
    rep = vcmd(r, fmt, ap);
    va_end(ap);
    if (rep != NULL && rep->type == REDIS_REPLY_INTEGER) {
        v = rep->integer;
    }
    freeReplyObject(rep);
    return v;
}

long long test_redis_calls(test_redis_t *r, const char *command)
{
    redisReply *rep = test_redis_cmd(r, "INFO commandstats");
    char pat[64];
    const char *p;
    long long v = 0;

    if (rep == NULL || rep->type != REDIS_REPLY_STRING) {
        freeReplyObject(rep);
        return -1;
    }
    snprintf(pat, sizeof(pat), "cmdstat_%s:calls=", command);
    p = strstr(rep->str, pat);
    if (p != NULL) {
        v = strtoll(p + strlen(pat), NULL, 10);
    }
    freeReplyObject(rep);
    return v;
}
