/*
 * rediscluster.h - a Redis Cluster as the store sees it (rediscluster.c):
 * the nodes it knows, and which node is master of each slot.  Read by
 * every request without a lock; changed by the answers of CLUSTER SHARDS
 * and by MOVED redirections.  No I/O: redisroute.c asks
 * the nodes.  Private to the library.
 */
#ifndef SUSPECT_REDISCLUSTER_H
#define SUSPECT_REDISCLUSTER_H

#include <hiredis/hiredis.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "redisslot.h"
#include "redisurl.h"
#include "suspect_error.h"

#define REDIS_MAX_NODES 512 /* masters and replicas ever seen */

typedef struct redis_cluster redis_cluster_t;

/* A map knowing only the seeds of addr (borrowed for the map's life). */
suspect_rc_t redis_cluster_new(const redis_addr_t *addr, redis_cluster_t **out,
                               suspect_err_t *err);
void redis_cluster_free(redis_cluster_t *c);

/* The id of the master of slot, -1 when none is known. */
int redis_cluster_slot_node(const redis_cluster_t *c, int slot);

/* Nodes known (ids 0 .. n-1; an id never changes meaning). */
size_t redis_cluster_nnodes(const redis_cluster_t *c);

/* The address of node id (< redis_cluster_nnodes()), fixed. */
const redis_endpoint_t *redis_cluster_node(const redis_cluster_t *c, int id);

/* The id of the node at host:port, added when new; -1 when the table is
 * full or host does not fit. */
int redis_cluster_node_add(redis_cluster_t *c, const char *host, size_t len,
                           int port);

/* Records that node id is the master of slot (a MOVED redirection). */
void redis_cluster_set_slot(redis_cluster_t *c, int slot, int id);

/*
 * Installs the map in r, the answer of CLUSTER SHARDS from node `asked`
 * (whose address stands for a node that announces none).  Slots the
 * answer does not cover get no master.  SUSPECT_E_STORE when r is not
 * such an answer, or covers no slot at all (the map is unchanged).
 */
suspect_rc_t redis_cluster_apply(redis_cluster_t *c, const redisReply *r,
                                 int asked, suspect_err_t *err);

/* True once a map was installed. */
bool redis_cluster_mapped(const redis_cluster_t *c);

/* Into ids[0..max): the distinct masters of the map, in slot order;
 * returns how many. */
size_t redis_cluster_masters(const redis_cluster_t *c, int *ids, size_t max);

#endif
