/*
 * cluster_parts.h - tests of the "cluster" suite that live in a file of
 * their own, and the helpers they share with test_cluster.c.
 */
#ifndef SUSPECT_TESTS_CLUSTER_PARTS_H
#define SUSPECT_TESTS_CLUSTER_PARTS_H

#include <CUnit/CUnit.h>

#include "helpers/redisha.h"

/* The hash-tagged key of value for action (aborts on failure). */
suspect_key_t cluster_key(const char *action, const char *value);

/* The slot of key (CLUSTER KEYSLOT on a live node), -1. */
int cluster_key_slot(test_cluster_t *c, const char *key, size_t len);

/* A value stem<N> whose tagged key for action lives on master `node`
 * (into out); its slot, -1 when none was found. */
int cluster_value_on(test_cluster_t *c, int node, const char *action,
                     const char *stem, char *out, size_t size);

/* FLUSHALL on every live master of c. */
void cluster_flush(test_cluster_t *c);

/* test_cluster_meter.c: token buckets on both key layouts, a decision
 * across slots that gives back. */
int cluster_meter_register(CU_pSuite s, test_cluster_t *c);

/* test_cluster_load.c: exactness, a slot moved, a master killed, the
 * states without a master (kills nodes: the suite's last tests). */
int cluster_load_register(CU_pSuite s, test_cluster_t *c);

#endif
