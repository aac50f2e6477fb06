/*
 * redis_parts.h - tests of the "redis" and "failover" suites that live in
 * files of their own; each suite's registration adds them, with the
 * suite's redis-server (started by the suite's init).
 */
#ifndef SUSPECT_TESTS_REDIS_PARTS_H
#define SUSPECT_TESTS_REDIS_PARTS_H

#include <CUnit/CUnit.h>

#include "helpers/redisserver.h"

/* test_redis_wire.c: errors and the wire (refused, wrong password or db,
 * a peer that is not Redis or never answers, answers split over reads). */
int redis_wire_register(CU_pSuite s, test_redis_t *srv);

/* test_redis_meter.c: token buckets and sliding counters. */
int redis_meter_register(CU_pSuite s, test_redis_t *srv);

/* test_failover_redis.c: the lock cache's zero traffic, kill -9 under
 * load in each fail mode (kills and restarts srv). */
int failover_redis_register(CU_pSuite s, test_redis_t *srv);

/* test_failover_carry.c: local decisions carried back after an outage
 * (kills and restarts srv). */
int failover_carry_register(CU_pSuite s, test_redis_t *srv);

/* test_failover_meter.c: meters through the wrapper, carried back after
 * an outage (kills and restarts srv; starts a local server of its own). */
int failover_meter_register(CU_pSuite s, test_redis_t *srv);

#endif
