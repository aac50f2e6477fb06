/*
 * redisurl.h - where the Redis store's servers are, from its URL
 * (redisurl.c): one server, the sentinels that name a master, or the seed
 * nodes of a Redis Cluster, and the credentials of each.  Private to the
 * library; no hiredis.
 */
#ifndef SUSPECT_REDISURL_H
#define SUSPECT_REDISURL_H

#include <stdbool.h>
#include <stddef.h>

#include "suspect_error.h"

#define REDIS_FIELD_MAX 256
#define REDIS_MAX_HOSTS 16 /* sentinels or cluster seeds in one URL */

#define REDIS_SENTINEL_PORT 26379

/* What the URL names. */
typedef enum redis_kind {
    REDIS_SINGLE = 0,   /* redis://, unix:// */
    REDIS_SENTINEL = 1, /* redis+sentinel:// */
    REDIS_CLUSTER = 2   /* redis+cluster:// */
} redis_kind_t;

/* One server's address. */
typedef struct redis_endpoint {
    bool is_unix;
    char host[REDIS_FIELD_MAX]; /* host name or address, or socket path */
    int port;
    char name[REDIS_FIELD_MAX + 8]; /* "host:port" or the path, for errors */
} redis_endpoint_t;

typedef struct redis_addr {
    redis_kind_t kind;
    size_t nhosts; /* the server; the sentinels; the seeds */
    redis_endpoint_t hosts[REDIS_MAX_HOSTS];
    int db;
    char user[REDIS_FIELD_MAX];     /* "" = none (AUTH password only) */
    char password[REDIS_FIELD_MAX]; /* "" = no AUTH */
    char master[REDIS_FIELD_MAX];   /* sentinel: the master's name */
    char sentinel_user[REDIS_FIELD_MAX];
    char sentinel_password[REDIS_FIELD_MAX]; /* "" = no AUTH to sentinels */
    char name[REDIS_FIELD_MAX + 32];         /* for errors: "h:p", the path,
                                                "sentinel NAME", "cluster h:p" */
} redis_addr_t;

/*
 * Parses url into *out; SUSPECT_E_INVAL with a message on a bad one.
 * Forms:
 *   redis://[[user]:password@]host[:port][/db]
 *   unix:///path/to.sock[?db=N][&password=P][&user=U]
 *   redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/NAME
 *       [?db=N][&sentinelPassword=P][&sentinelUser=U]
 *   redis+cluster://[[user]:password@]host[:port][,host[:port]...]
 * user and password (those of the data nodes, the master's with Sentinel)
 * and query values may be %XX-escaped; a host in brackets is an IPv6
 * address.  Ports default to 6379, 26379 for sentinels.
 */
suspect_rc_t redis_addr_parse(const char *url, redis_addr_t *out,
                              suspect_err_t *err);

/* Sets ep to host:port (a TCP endpoint); false when host does not fit. */
bool redis_endpoint_set(redis_endpoint_t *ep, const char *host, size_t len,
                        int port);

/* True when a and b are the same address. */
bool redis_endpoint_same(const redis_endpoint_t *a, const redis_endpoint_t *b);

#endif
