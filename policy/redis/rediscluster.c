/*
 * rediscluster.c - the slot map and node table of a Redis Cluster
 * (rediscluster.h).
 *
 * Nodes: an append-only table of addresses (masters and replicas, the
 * seeds first).  An id is an index into it and never changes meaning, so
 * a thread may keep a connection per id; a node that leaves the cluster
 * keeps its id, unused.  Entries are written under mu and published with
 * a release store of the count, so readers need no lock.
 *
 * Slots: 16384 16-bit entries, node id + 1 (0 = no master known), each
 * read and written atomically.  A new map (the answer of CLUSTER SHARDS,
 * Redis 7.0 and later) is built aside, then copied in
 * slot by slot: a reader may see some slots of the old map and some of
 * the new, which is harmless, since a node that no longer owns a slot
 * answers MOVED and the router follows.  A MOVED changes one slot at
 * once, before the whole map is asked again.
 *
 * Which address a node is reached at: CLUSTER SHARDS's "endpoint" (the
 * one the cluster prefers clients to use), else its "ip".  An empty one
 * means "the address you asked", as Redis documents; "?" (unknown) leaves
 * that node out, and its slots without a master until a later map.
 */
#include "rediscluster.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

struct redis_cluster {
    const redis_addr_t *addr;
    pthread_mutex_t mu; /* adding nodes, installing a map */
    redis_endpoint_t *nodes[REDIS_MAX_NODES];
    size_t nnodes;              /* atomic (release / acquire) */
    uint16_t slot[REDIS_SLOTS]; /* node id + 1; atomic */
    int mapped;                 /* atomic */
};

suspect_rc_t redis_cluster_new(const redis_addr_t *addr, redis_cluster_t **out,
                               suspect_err_t *err)
{
    redis_cluster_t *c = suspect_calloc(1, sizeof(*c));

    *out = NULL;
    if (c == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "redis: out of memory");
    }
    c->addr = addr;
    pthread_mutex_init(&c->mu, NULL);
    for (size_t i = 0; i < addr->nhosts; i++) {
        const redis_endpoint_t *h = &addr->hosts[i];
        if (redis_cluster_node_add(c, h->host, strlen(h->host), h->port) < 0) {
            redis_cluster_free(c);
            return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                                   "redis: out of memory");
        }
    }
    *out = c;
    return SUSPECT_OK;
}

void redis_cluster_free(redis_cluster_t *c)
{
    if (c == NULL) {
        return;
    }
    for (size_t i = 0; i < c->nnodes; i++) {
        free(c->nodes[i]);
    }
    pthread_mutex_destroy(&c->mu);
    free(c);
}

int redis_cluster_slot_node(const redis_cluster_t *c, int slot)
{
    return (int)__atomic_load_n(&c->slot[slot], __ATOMIC_RELAXED) - 1;
}

size_t redis_cluster_nnodes(const redis_cluster_t *c)
{
    return __atomic_load_n(&c->nnodes, __ATOMIC_ACQUIRE);
}

const redis_endpoint_t *redis_cluster_node(const redis_cluster_t *c, int id)
{
    return c->nodes[id];
}

bool redis_cluster_mapped(const redis_cluster_t *c)
{
    return __atomic_load_n(&c->mapped, __ATOMIC_ACQUIRE) != 0;
}

/* node_add under mu. */
static int node_add_locked(redis_cluster_t *c, const char *host, size_t len,
                           int port)
{
    redis_endpoint_t ep, *copy;

    if (!redis_endpoint_set(&ep, host, len, port)) {
        return -1;
    }
    for (size_t i = 0; i < c->nnodes; i++) {
        if (redis_endpoint_same(c->nodes[i], &ep)) {
            return (int)i;
        }
    }
    if (c->nnodes == REDIS_MAX_NODES ||
        (copy = suspect_malloc(sizeof(*copy))) == NULL) {
        return -1;
    }
    *copy = ep;
    c->nodes[c->nnodes] = copy;
    __atomic_store_n(&c->nnodes, c->nnodes + 1, __ATOMIC_RELEASE);
    return (int)c->nnodes - 1;
}

int redis_cluster_node_add(redis_cluster_t *c, const char *host, size_t len,
                           int port)
{
    int id;

    pthread_mutex_lock(&c->mu);
    id = node_add_locked(c, host, len, port);
    pthread_mutex_unlock(&c->mu);
    return id;
}

void redis_cluster_set_slot(redis_cluster_t *c, int slot, int id)
{
    __atomic_store_n(&c->slot[slot], (uint16_t)(id + 1), __ATOMIC_RELAXED);
}

size_t redis_cluster_masters(const redis_cluster_t *c, int *ids, size_t max)
{
    size_t n = 0;

    for (int s = 0; s < REDIS_SLOTS; s++) {
        int id = redis_cluster_slot_node(c, s);
        bool seen = id < 0;

        for (size_t i = 0; i < n && !seen; i++) {
            seen = ids[i] == id;
        }
        if (!seen && n < max) {
            ids[n++] = id;
        }
    }
    return n;
}

/* ---- reading the answers (under mu) ------------------------------------
 */

static bool is_str(const redisReply *r)
{
    return r != NULL &&
           (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS);
}

/* The node at host (len bytes; "" = the node asked) and port: its id,
 * -1 when it cannot be known or kept. */
static int node_of(redis_cluster_t *c, const char *host, size_t len, int port,
                   int asked)
{
    if (len == 1 && host[0] == '?') {
        return -1;
    }
    if (len == 0) {
        if (asked < 0) {
            return -1;
        }
        host = c->nodes[asked]->host;
        len = strlen(host);
    }
    return port > 0 && port <= 65535 ? node_add_locked(c, host, len, port) : -1;
}

/* The value of field name in a flat [name, value, ...] array, or NULL. */
static const redisReply *field(const redisReply *r, const char *name)
{
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        if (is_str(r->element[i]) && strcmp(r->element[i]->str, name) == 0) {
            return r->element[i + 1];
        }
    }
    return NULL;
}

/* One node of a CLUSTER SHARDS shard: its id (-1 when unusable), and
 * whether it is the master. */
static int shard_node(redis_cluster_t *c, const redisReply *n, int asked,
                      bool *master)
{
    const redisReply *ep, *ip, *port, *role;

    *master = false;
    if (n->type != REDIS_REPLY_ARRAY) {
        return -1;
    }
    ep = field(n, "endpoint");
    ip = field(n, "ip");
    port = field(n, "port");
    role = field(n, "role");
    *master = is_str(role) && strcmp(role->str, "master") == 0;
    if (is_str(ep) && ep->len > 0 && strcmp(ep->str, "?") != 0) {
        ip = ep;
    }
    if (!is_str(ip) || port == NULL || port->type != REDIS_REPLY_INTEGER) {
        return -1;
    }
    return node_of(c, ip->str, ip->len, (int)port->integer, asked);
}

/* One shard of CLUSTER SHARDS into map. */
static bool shard_apply(redis_cluster_t *c, const redisReply *s, int asked,
                        uint16_t *map)
{
    const redisReply *slots, *nodes;
    int master = -1;

    if (s->type != REDIS_REPLY_ARRAY) {
        return false;
    }
    slots = field(s, "slots");
    nodes = field(s, "nodes");
    if (slots == NULL || nodes == NULL || slots->type != REDIS_REPLY_ARRAY ||
        nodes->type != REDIS_REPLY_ARRAY || slots->elements % 2 != 0) {
        return false;
    }
    for (size_t i = 0; i < nodes->elements; i++) {
        bool is_master;
        int id = shard_node(c, nodes->element[i], asked, &is_master);
        master = is_master && id >= 0 ? id : master;
    }
    for (size_t i = 0; i < slots->elements; i += 2) {
        const redisReply *a = slots->element[i], *b = slots->element[i + 1];
        if (a->type != REDIS_REPLY_INTEGER || b->type != REDIS_REPLY_INTEGER ||
            a->integer < 0 || b->integer >= REDIS_SLOTS ||
            a->integer > b->integer) {
            return false;
        }
        for (long long k = a->integer; k <= b->integer && master >= 0; k++) {
            map[k] = (uint16_t)(master + 1);
        }
    }
    return true;
}

suspect_rc_t redis_cluster_apply(redis_cluster_t *c, const redisReply *r,
                                 int asked, suspect_err_t *err)
{
    uint16_t *map = suspect_calloc(REDIS_SLOTS, sizeof(*map));
    bool ok = r->type == REDIS_REPLY_ARRAY, covered = false;

    if (map == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "redis: out of memory");
    }
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; ok && i < r->elements; i++) {
        ok = shard_apply(c, r->element[i], asked, map);
    }
    for (int s = 0; ok && s < REDIS_SLOTS && !covered; s++) {
        covered = map[s] != 0;
    }
    /* A node that knows no slot (not in a cluster yet) is no guide. */
    ok = ok && covered;
    if (ok) {
        for (int s = 0; s < REDIS_SLOTS; s++) {
            __atomic_store_n(&c->slot[s], map[s], __ATOMIC_RELAXED);
        }
        __atomic_store_n(&c->mapped, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&c->mu);
    free(map);
    if (!ok) {
        return suspect_err_set(err, SUSPECT_E_STORE, NULL, 0,
                               "redis %s: CLUSTER SHARDS answered an "
                               "unexpected shape or no slot",
                               c->nodes[asked]->name);
    }
    return SUSPECT_OK;
}
