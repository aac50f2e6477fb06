/*
 * redisha.h - Redis past one server, for tests and benches: a Sentinel
 * set-up (a master, a replica, three sentinels) and a Redis Cluster (N
 * masters, with replicas when asked), all on 127.0.0.1, free ports, temp
 * dirs, started by the test and stopped after.
 *
 * Every wait has a deadline scaled by test_scale_ms(); a server missing
 * from the machine (redis-sentinel, redis-cli) is an error, never a skip.
 */
#ifndef SUSPECT_TESTS_REDISHA_H
#define SUSPECT_TESTS_REDISHA_H

#include <stdbool.h>
#include <sys/types.h>

#include "redisserver.h"

#define TEST_SENTINELS 3

typedef struct test_sentinel_set {
    test_redis_t master, replica; /* as started: a failover swaps roles */
    pid_t sentinel_pid[TEST_SENTINELS];
    int sentinel_port[TEST_SENTINELS];
    char *dir;             /* the sentinels' configs and logs */
    char master_pw[32];    /* the data nodes' requirepass */
    char sentinel_pw[32];  /* the sentinels' requirepass, "" = none */
    char url[700];         /* redis+sentinel://...: the store's URL */
    const char *extra[16]; /* the data nodes' extra arguments */
    char port_arg[2][16];
} test_sentinel_set_t;

/*
 * Starts a master, its replica and three sentinels watching it as
 * "mymaster" (quorum 2, down-after down_ms, both scaled), the data nodes
 * with password master_pw, the sentinels with sentinel_pw (NULL = none).
 * Returns once the replica is in sync and every sentinel knows the
 * replica and the other sentinels: 0, else -1 with a message on stderr.
 */
int test_sentinel_start(test_sentinel_set_t *s, const char *master_pw,
                        const char *sentinel_pw, unsigned down_ms);

/* Stops every process and removes the directories. */
void test_sentinel_stop(test_sentinel_set_t *s);

/* The port sentinel i names as mymaster's master, -1 when it cannot say. */
int test_sentinel_master_port(test_sentinel_set_t *s, int i);

/* Waits (deadline ms, scaled) until every live sentinel names port as the
 * master and that server says ROLE master: 0, else -1. */
int test_sentinel_wait_master(test_sentinel_set_t *s, int port, unsigned ms);

#define TEST_CLUSTER_MAX 8

typedef struct test_cluster {
    int n; /* nodes: masters first, then replicas */
    int masters;
    test_redis_t node[TEST_CLUSTER_MAX];
    const char *extra[TEST_CLUSTER_MAX][16];
    char bus_arg[TEST_CLUSTER_MAX][16];
    char timeout_arg[16];
    char url[700]; /* redis+cluster://...: the store's URL (all masters) */
} test_cluster_t;

/*
 * Starts `masters` cluster nodes and `replicas` replicas for each, with
 * cluster-node-timeout node_timeout_ms (scaled), creates the cluster with
 * redis-cli --cluster create, and waits until every node says
 * cluster_state:ok.  0, else -1 with a message on stderr.
 */
int test_cluster_start(test_cluster_t *c, int masters, int replicas,
                       unsigned node_timeout_ms);

/* Stops every node and removes their directories. */
void test_cluster_stop(test_cluster_t *c);

/* The node (index into c->node) that is master of slot now, by CLUSTER
 * SHARDS asked of node `ask`; -1 when none. */
int test_cluster_slot_owner(test_cluster_t *c, int ask, int slot);

/* A node's cluster id (40 hex digits) into id[41]; 0, else -1. */
int test_cluster_node_id(test_cluster_t *c, int i, char id[41]);

/* Waits (ms, scaled) until every live node says cluster_state:ok and
 * agrees that slot has a master other than node `not`: 0, else -1. */
int test_cluster_wait_ok(test_cluster_t *c, int slot, int not, unsigned ms);

/* Waits (ms, scaled) until every live node says cluster_state:fail: 0,
 * else -1. */
int test_cluster_wait_fail(test_cluster_t *c, unsigned ms);

/* One command on 127.0.0.1:port, logged in with pw (NULL = none), on a
 * connection of its own (a demoted master's clients are killed: a kept
 * connection would raise SIGPIPE); the reply is the caller's, NULL. */
redisReply *test_ha_cmd(int port, const char *pw, const char *fmt, ...);

/* As test_ha_cmd for an integer answer; LLONG_MIN on failure. */
long long test_ha_int(int port, const char *pw, const char *fmt, ...);

/* The Redis Cluster kinds of the shared scenario suites (hash-tagged
 * keys, and the seed's), on a cluster of three masters
 * (tests/policy/redis/test_cluster.c). */
extern const test_store_kind_t test_cluster_kind;
extern const test_store_kind_t test_cluster_seed_kind;

/* Milliseconds of CLOCK_MONOTONIC, and of CLOCK_REALTIME. */
long long test_ha_mono_ms(void);
long long test_ha_wall_ms(void);

/* Sleeps ms milliseconds (not scaled). */
void test_ha_sleep_ms(long ms);

#define TEST_HA_MAX_THREADS 8

/*
 * The waits for a CPU of the threads that make requests in a test (each
 * one's run-queue time, /proc/thread-self/schedstat).  A request's time
 * less the longest any of them waited for a CPU meanwhile is what the code
 * under test waited for: on a loaded machine a thread may wait for a CPU
 * longer than any timeout, and a request may wait for a lock whose holder
 * waits for one (its own waits do not show that).
 */
typedef struct test_ha_waits {
    int fd1[TEST_HA_MAX_THREADS]; /* atomic: the file + 1; 0: none (yet) */
    int n;                        /* atomic: slots taken */
} test_ha_waits_t;

/* Adds the calling thread to w (at most TEST_HA_MAX_THREADS; w starts
 * zeroed). */
void test_ha_waits_join(test_ha_waits_t *w);

/* Each thread's waits so far (ms) into ms[TEST_HA_MAX_THREADS]. */
void test_ha_waits_read(test_ha_waits_t *w, long long *ms);

/* The longest any thread of w waited for a CPU (ms) since ms[] was read. */
long long test_ha_waits_since(test_ha_waits_t *w, const long long *ms);

/* Closes w's files, once its threads are done. */
void test_ha_waits_close(test_ha_waits_t *w);

#endif
