/*
 * redisha.c - a Sentinel set-up and a Redis Cluster for tests and benches
 * (redisha.h).
 *
 * Sentinel: the master and the replica are test_redis_t servers (unix
 * socket for the helpers, loopback TCP for replication and the store);
 * each sentinel gets a config file of its own in a temp dir (sentinels
 * rewrite it) and is ready when it answers PING and knows the replica
 * and the two other sentinels: before that a failover could not happen.
 *
 * Cluster: nodes are test_redis_t servers with cluster mode on and a bus
 * port of their own; the cluster is made by hand, as redis-cli --cluster
 * create would make it but without its one-second pauses: each master
 * takes its share of the 16384 slots and a config epoch of its own, node
 * 0 MEETs the others (again, while it does not list one: Redis drops a
 * handshake that took longer than the node timeout and never retries it),
 * replicas REPLICATE a master, then every node must
 * say cluster_state:ok and every replica have its link up.
 *
 * Waits poll every 10-20 ms up to a deadline scaled by test_scale_ms().
 */
#include "redisha.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util.h"
#include "vgwrap.h"

long long test_ha_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

long long test_ha_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void test_ha_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* How long (ms) the thread of sched_fd has waited in the run queue so
 * far (0 when the kernel does not say). */
static long long queued_ms(int sched_fd)
{
    char buf[96];
    ssize_t n = sched_fd >= 0 ? pread(sched_fd, buf, sizeof(buf) - 1, 0) : -1;
    char *p;

    if (n <= 0) {
        return 0;
    }
    buf[n] = '\0';
    strtoull(buf, &p, 10);                               /* on the CPU */
    return (long long)(strtoull(p, NULL, 10) / 1000000); /* waiting for it */
}

void test_ha_waits_join(test_ha_waits_t *w)
{
    int i = __atomic_fetch_add(&w->n, 1, __ATOMIC_RELAXED);
    int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);

    if (i < TEST_HA_MAX_THREADS) {
        __atomic_store_n(&w->fd1[i], fd + 1, __ATOMIC_RELEASE);
    } else if (fd >= 0) {
        close(fd);
    }
}

void test_ha_waits_read(test_ha_waits_t *w, long long *ms)
{
    for (int i = 0; i < TEST_HA_MAX_THREADS; i++) {
        int fd1 = __atomic_load_n(&w->fd1[i], __ATOMIC_ACQUIRE);
        ms[i] = fd1 > 0 ? queued_ms(fd1 - 1) : 0;
    }
}

long long test_ha_waits_since(test_ha_waits_t *w, const long long *ms)
{
    long long now[TEST_HA_MAX_THREADS], most = 0;

    test_ha_waits_read(w, now);
    for (int i = 0; i < TEST_HA_MAX_THREADS; i++) {
        most = now[i] - ms[i] > most ? now[i] - ms[i] : most;
    }
    return most;
}

void test_ha_waits_close(test_ha_waits_t *w)
{
    for (int i = 0; i < TEST_HA_MAX_THREADS; i++) {
        if (w->fd1[i] > 0) {
            close(w->fd1[i] - 1);
        }
        w->fd1[i] = 0;
    }
    w->n = 0;
}

/* A hiredis connection to 127.0.0.1:port, logged in with pw ("" or NULL:
 * none); NULL when it cannot be made. */
static redisContext *tcp_connect(int port, const char *pw)
{
    struct timeval tv = {2, 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    redisReply *r;

    if (c == NULL || c->err) {
        redisFree(c);
        return NULL;
    }
    redisSetTimeout(c, tv);
    if (pw != NULL && pw[0] != '\0') {
        r = redisCommand(c, "AUTH %s", pw);
        if (r == NULL || r->type == REDIS_REPLY_ERROR) {
            freeReplyObject(r);
            redisFree(c);
            return NULL;
        }
        freeReplyObject(r);
    }
    return c;
}

/* One command on 127.0.0.1:port (a connection of its own: a server may
 * kill its clients, as a sentinel demoting a master does, and hiredis
 * would then write to a closed socket: SIGPIPE). */
redisReply *test_ha_cmd(int port, const char *pw, const char *fmt, ...)
{
    redisContext *c = tcp_connect(port, pw);
    redisReply *r = NULL;
    va_list ap;

    if (c == NULL) {
        return NULL;
    }
    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    redisFree(c);
    return r;
}

long long test_ha_int(int port, const char *pw, const char *fmt, ...)
{
    redisContext *c = tcp_connect(port, pw);
    redisReply *r = NULL;
    long long v = LLONG_MIN;
    va_list ap;

    if (c == NULL) {
        return v;
    }
    va_start(ap, fmt);
    r = redisvCommand(c, fmt, ap);
    va_end(ap);
    if (r != NULL && r->type == REDIS_REPLY_INTEGER) {
        v = r->integer;
    }
    freeReplyObject(r);
    redisFree(c);
    return v;
}

/* True when the string reply r contains text. */
static bool reply_has(const redisReply *r, const char *text)
{
    return r != NULL &&
           (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) &&
           strstr(r->str, text) != NULL;
}

/* ---- Sentinel ------------------------------------------------------------
 */

/* Writes sentinel i's config and starts it. */
static int sentinel_spawn(test_sentinel_set_t *s, int i, unsigned down_ms)
{
    char path[600], log[600], conf[2048], pass[256] = "";
    pid_t pid;

    s->sentinel_port[i] = test_free_port();
    snprintf(path, sizeof(path), "%s/sentinel-%d.conf", s->dir, i);
    snprintf(log, sizeof(log), "%s/sentinel-%d.log", s->dir, i);
    if (s->sentinel_pw[0] != '\0') {
        snprintf(pass, sizeof(pass),
                 "requirepass %s\nsentinel sentinel-pass %s\n", s->sentinel_pw,
                 s->sentinel_pw);
    }
    snprintf(conf, sizeof(conf),
             "port %d\nbind 127.0.0.1\ndaemonize no\ndir %s\nlogfile %s\n"
             "sentinel monitor mymaster 127.0.0.1 %d 2\n"
             "sentinel down-after-milliseconds mymaster %u\n"
             "sentinel failover-timeout mymaster %u\n"
             "sentinel parallel-syncs mymaster 1\n"
             "sentinel auth-pass mymaster %s\n%s",
             s->sentinel_port[i], s->dir, log, s->master.port, down_ms,
             4 * down_ms + 1000, s->master_pw, pass);
    if (s->sentinel_port[i] < 0 ||
        test_write_file(path, conf, strlen(conf)) != 0) {
        return -1;
    }
    pid = fork();
    if (pid < 0) {
        return -1;
    }
    if (pid == 0) {
        closefrom(3); /* none of the runner's descriptors (see procs.c) */
        execlp("redis-sentinel", "redis-sentinel", path, (char *)NULL);
        fprintf(stderr,
                "test_sentinel: cannot run redis-sentinel (Debian: "
                "redis-sentinel): %s\n",
                strerror(errno));
        _exit(127);
    }
    s->sentinel_pid[i] = pid;
    return 0;
}

/* The number of entries of the array answer to cmd on sentinel i, -1. */
static long long sentinel_count(test_sentinel_set_t *s, int i, const char *cmd)
{
    redisReply *r = test_ha_cmd(s->sentinel_port[i], s->sentinel_pw,
                                "SENTINEL %s mymaster", cmd);
    long long n =
        r != NULL && r->type == REDIS_REPLY_ARRAY ? (long long)r->elements : -1;
    freeReplyObject(r);
    return n;
}

/* True when every sentinel is up and knows the replica and the others. */
static bool sentinels_ready(test_sentinel_set_t *s)
{
    redisReply *r = test_redis_cmd(&s->replica, "INFO replication");
    bool ok = reply_has(r, "master_link_status:up");

    freeReplyObject(r);
    for (int i = 0; i < TEST_SENTINELS && ok; i++) {
        ok = sentinel_count(s, i, "replicas") == 1 &&
             sentinel_count(s, i, "sentinels") == TEST_SENTINELS - 1;
    }
    return ok;
}

int test_sentinel_start(test_sentinel_set_t *s, const char *master_pw,
                        const char *sentinel_pw, unsigned down_ms)
{
    long long deadline;
    int n = 0;

    memset(s, 0, sizeof(*s));
    snprintf(s->master_pw, sizeof(s->master_pw), "%s", master_pw);
    snprintf(s->sentinel_pw, sizeof(s->sentinel_pw), "%s",
             sentinel_pw != NULL ? sentinel_pw : "");
    s->dir = test_mkdtemp();
    down_ms = test_scale_ms(down_ms);
    /* A replica syncs at once (the default waits 5 s for more). */
    s->extra[n++] = "--repl-diskless-sync-delay";
    s->extra[n++] = "0";
    s->extra[n++] = "--masterauth";
    s->extra[n++] = s->master_pw;
    s->extra[n] = NULL;
    if (s->dir == NULL ||
        test_redis_start_ex(&s->master, true, master_pw, s->extra) != 0) {
        goto fail;
    }
    snprintf(s->port_arg[0], sizeof(s->port_arg[0]), "%d", s->master.port);
    s->extra[n++] = "--replicaof";
    s->extra[n++] = "127.0.0.1";
    s->extra[n++] = s->port_arg[0];
    s->extra[n] = NULL;
    if (test_redis_start_ex(&s->replica, true, master_pw, s->extra) != 0) {
        goto fail;
    }
    /* The master's own arguments end before --replicaof. */
    s->extra[4] = NULL;
    for (int i = 0; i < TEST_SENTINELS; i++) {
        if (sentinel_spawn(s, i, down_ms) != 0) {
            goto fail;
        }
    }
    deadline = test_ha_mono_ms() + test_scale_ms(20000);
    while (!sentinels_ready(s)) {
        if (test_ha_mono_ms() > deadline) {
            fprintf(stderr, "test_sentinel: not ready within 20 s (see %s)\n",
                    s->dir);
            goto fail;
        }
        test_ha_sleep_ms(20);
    }
    n = snprintf(s->url, sizeof(s->url), "redis+sentinel://:%s@", master_pw);
    for (int i = 0; i < TEST_SENTINELS; i++) {
        n += snprintf(s->url + n, sizeof(s->url) - (size_t)n, "%s127.0.0.1:%d",
                      i > 0 ? "," : "", s->sentinel_port[i]);
    }
    snprintf(s->url + n, sizeof(s->url) - (size_t)n, "/mymaster%s%s",
             s->sentinel_pw[0] ? "?sentinelPassword=" : "", s->sentinel_pw);
    return 0;
fail:
    test_sentinel_stop(s);
    return -1;
}

void test_sentinel_stop(test_sentinel_set_t *s)
{
    for (int i = 0; i < TEST_SENTINELS; i++) {
        if (s->sentinel_pid[i] > 0) {
            kill(s->sentinel_pid[i], SIGKILL);
            waitpid(s->sentinel_pid[i], NULL, 0);
            s->sentinel_pid[i] = 0;
        }
    }
    test_redis_stop(&s->master);
    test_redis_stop(&s->replica);
    if (s->dir != NULL) {
        test_rmtree(s->dir);
        free(s->dir);
        s->dir = NULL;
    }
}

int test_sentinel_master_port(test_sentinel_set_t *s, int i)
{
    redisReply *r = test_ha_cmd(s->sentinel_port[i], s->sentinel_pw,
                                "SENTINEL get-master-addr-by-name mymaster");
    int port = -1;

    if (r != NULL && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[1]->type == REDIS_REPLY_STRING) {
        port = atoi(r->element[1]->str);
    }
    freeReplyObject(r);
    return port;
}

int test_sentinel_wait_master(test_sentinel_set_t *s, int port, unsigned ms)
{
    long long deadline = test_ha_mono_ms() + test_scale_ms(ms);

    for (;;) {
        redisReply *r = test_ha_cmd(port, s->master_pw, "ROLE");
        bool ok = r != NULL && r->type == REDIS_REPLY_ARRAY &&
                  r->elements > 0 &&
                  r->element[0]->type == REDIS_REPLY_STRING &&
                  strcmp(r->element[0]->str, "master") == 0;

        freeReplyObject(r);
        for (int i = 0; i < TEST_SENTINELS && ok; i++) {
            ok = s->sentinel_pid[i] <= 0 ||
                 test_sentinel_master_port(s, i) == port;
        }
        if (ok) {
            return 0;
        }
        if (test_ha_mono_ms() > deadline) {
            return -1;
        }
        test_ha_sleep_ms(20);
    }
}

/* ---- Cluster -------------------------------------------------------------
 */

static bool cluster_ok(test_redis_t *n)
{
    redisReply *r = test_redis_cmd(n, "CLUSTER INFO");
    bool ok = reply_has(r, "cluster_state:ok");

    freeReplyObject(r);
    return ok;
}

int test_cluster_node_id(test_cluster_t *c, int i, char id[41])
{
    redisReply *r = test_redis_cmd(&c->node[i], "CLUSTER MYID");
    int rc = -1;

    if (r != NULL && r->type == REDIS_REPLY_STRING && r->len == 40) {
        memcpy(id, r->str, 41);
        rc = 0;
    }
    freeReplyObject(r);
    return rc;
}

/* The number of nodes node i knows (lines of CLUSTER NODES) that are out
 * of the handshake. */
static int nodes_known(test_cluster_t *c, int i)
{
    redisReply *r = test_redis_cmd(&c->node[i], "CLUSTER NODES");
    int n = 0;

    if (r != NULL && r->type == REDIS_REPLY_STRING) {
        for (const char *p = r->str; (p = strchr(p, '\n')) != NULL; p++) {
            n++;
        }
        if (strstr(r->str, "handshake") != NULL ||
            strstr(r->str, "noaddr") != NULL) {
            n = -1;
        }
    }
    freeReplyObject(r);
    return n;
}

/* Starts node i. */
static int node_spawn(test_cluster_t *c, int i)
{
    const char **e = c->extra[i];
    int n = 0, bus = test_free_port();

    if (bus < 0) {
        return -1;
    }
    snprintf(c->bus_arg[i], sizeof(c->bus_arg[i]), "%d", bus);
    e[n++] = "--cluster-enabled";
    e[n++] = "yes";
    e[n++] = "--cluster-config-file";
    e[n++] = "nodes.conf";
    e[n++] = "--cluster-node-timeout";
    e[n++] = c->timeout_arg;
    e[n++] = "--cluster-port";
    e[n++] = c->bus_arg[i];
    e[n++] = "--repl-diskless-sync-delay";
    e[n++] = "0";
    e[n] = NULL;
    return test_redis_start_ex(&c->node[i], true, NULL, e);
}

/* Gives each master its share of the slots and an epoch of its own. */
static int assign_slots(test_cluster_t *c)
{
    for (int i = 0; i < c->masters; i++) {
        int lo = 16384 * i / c->masters, hi = 16384 * (i + 1) / c->masters - 1;
        redisReply *a =
            test_redis_cmd(&c->node[i], "CLUSTER ADDSLOTSRANGE %d %d", lo, hi);
        redisReply *b =
            test_redis_cmd(&c->node[i], "CLUSTER SET-CONFIG-EPOCH %d", i + 1);
        bool ok = a != NULL && a->type == REDIS_REPLY_STATUS && b != NULL &&
                  b->type == REDIS_REPLY_STATUS;
        freeReplyObject(a);
        freeReplyObject(b);
        if (!ok) {
            return -1;
        }
    }
    return 0;
}

/* Node 0 MEETs each node it does not list (not even in handshake). */
static void meet_missing(test_cluster_t *c)
{
    redisReply *r = test_redis_cmd(&c->node[0], "CLUSTER NODES");

    for (int i = 1; i < c->n && r != NULL && r->type == REDIS_REPLY_STRING;
         i++) {
        char addr[32];

        snprintf(addr, sizeof(addr), ":%d@", c->node[i].port);
        if (strstr(r->str, addr) == NULL) {
            freeReplyObject(test_redis_cmd(&c->node[0], "CLUSTER MEET %s %d %s",
                                           "127.0.0.1", c->node[i].port,
                                           c->bus_arg[i]));
        }
    }
    freeReplyObject(r);
}

/* MEETs the nodes from node 0, then polls until every node knows every
 * other and agrees; 0, or -1 at the deadline.  A handshake that does not
 * finish within the node timeout (a second at least) is dropped for good
 * by Redis, as a node starved of CPU on a loaded machine may let it be:
 * each poll MEETs again the nodes node 0 no longer lists. */
static int wait_formed(test_cluster_t *c, unsigned ms)
{
    long long deadline = test_ha_mono_ms() + test_scale_ms(ms);

    for (;;) {
        bool ok = true;

        meet_missing(c);
        for (int i = 0; i < c->n && ok; i++) {
            ok = nodes_known(c, i) == c->n;
        }
        if (ok) {
            return 0;
        }
        if (test_ha_mono_ms() > deadline) {
            return -1;
        }
        test_ha_sleep_ms(20);
    }
}

/* True when every node says ok and every replica's link is up. */
static bool cluster_ready(test_cluster_t *c)
{
    for (int i = 0; i < c->n; i++) {
        redisReply *r;
        bool up;

        if (!cluster_ok(&c->node[i])) {
            return false;
        }
        if (i < c->masters) {
            continue;
        }
        r = test_redis_cmd(&c->node[i], "INFO replication");
        up = reply_has(r, "master_link_status:up");
        freeReplyObject(r);
        if (!up) {
            return false;
        }
    }
    return true;
}

int test_cluster_start(test_cluster_t *c, int masters, int replicas,
                       unsigned node_timeout_ms)
{
    long long deadline;
    int n;

    memset(c, 0, sizeof(*c));
    c->masters = masters;
    c->n = masters * (1 + replicas);
    if (c->n > TEST_CLUSTER_MAX) {
        return -1;
    }
    snprintf(c->timeout_arg, sizeof(c->timeout_arg), "%u",
             test_scale_ms(node_timeout_ms));
    for (int i = 0; i < c->n; i++) {
        if (node_spawn(c, i) != 0) {
            goto fail;
        }
    }
    if (assign_slots(c) != 0) {
        goto fail;
    }
    /* 30 s: on a loaded machine a starved node can let handshakes drop
     * several times over before all meet; a formed cluster returns at
     * once */
    if (wait_formed(c, 30000) != 0) {
        fprintf(stderr, "test_cluster: nodes did not meet\n");
        goto fail;
    }
    for (int i = masters; i < c->n; i++) {
        char id[41];
        redisReply *r;
        bool ok;

        if (test_cluster_node_id(c, (i - masters) % masters, id) != 0) {
            goto fail;
        }
        r = test_redis_cmd(&c->node[i], "CLUSTER REPLICATE %s", id);
        ok = r != NULL && r->type == REDIS_REPLY_STATUS;
        freeReplyObject(r);
        if (!ok) {
            goto fail;
        }
    }
    deadline = test_ha_mono_ms() + test_scale_ms(20000);
    while (!cluster_ready(c)) {
        if (test_ha_mono_ms() > deadline) {
            fprintf(stderr, "test_cluster: not ok within 20 s\n");
            goto fail;
        }
        test_ha_sleep_ms(20);
    }
    n = snprintf(c->url, sizeof(c->url), "redis+cluster://");
    for (int i = 0; i < masters; i++) {
        n += snprintf(c->url + n, sizeof(c->url) - (size_t)n, "%s127.0.0.1:%d",
                      i > 0 ? "," : "", c->node[i].port);
    }
    return 0;
fail:
    test_cluster_stop(c);
    return -1;
}

void test_cluster_stop(test_cluster_t *c)
{
    for (int i = 0; i < c->n; i++) {
        test_redis_stop(&c->node[i]);
    }
}

int test_cluster_slot_owner(test_cluster_t *c, int ask, int slot)
{
    redisReply *r = test_redis_cmd(&c->node[ask], "CLUSTER SLOTS");
    int owner = -1;

    for (size_t i = 0; r != NULL && r->type == REDIS_REPLY_ARRAY &&
                       i < r->elements && owner < 0;
         i++) {
        const redisReply *e = r->element[i];
        if (e->elements < 3 || e->element[0]->integer > slot ||
            e->element[1]->integer < slot) {
            continue;
        }
        for (int k = 0; k < c->n; k++) {
            if (c->node[k].port == (int)e->element[2]->element[1]->integer) {
                owner = k;
            }
        }
    }
    freeReplyObject(r);
    return owner;
}

int test_cluster_wait_ok(test_cluster_t *c, int slot, int not, unsigned ms)
{
    long long deadline = test_ha_mono_ms() + test_scale_ms(ms);

    for (;;) {
        bool ok = true;
        for (int i = 0; i < c->n && ok; i++) {
            int owner;
            if (c->node[i].pid <= 0) {
                continue;
            }
            owner = test_cluster_slot_owner(c, i, slot);
            ok = cluster_ok(&c->node[i]) && owner >= 0 && owner != not ;
        }
        if (ok) {
            return 0;
        }
        if (test_ha_mono_ms() > deadline) {
            return -1;
        }
        test_ha_sleep_ms(20);
    }
}

int test_cluster_wait_fail(test_cluster_t *c, unsigned ms)
{
    long long deadline = test_ha_mono_ms() + test_scale_ms(ms);

    for (;;) {
        bool fail = true;
        for (int i = 0; i < c->n && fail; i++) {
            redisReply *r;
            if (c->node[i].pid <= 0) {
                continue;
            }
            r = test_redis_cmd(&c->node[i], "CLUSTER INFO");
            fail = reply_has(r, "cluster_state:fail");
            freeReplyObject(r);
        }
        if (fail) {
            return 0;
        }
        if (test_ha_mono_ms() > deadline) {
            return -1;
        }
        test_ha_sleep_ms(20);
    }
}
