/*
 * meter_test.h - the metered scenarios the "redis" and "cluster" suites
 * share (meter_test.c): OTP sends per phone, requests of several costs and a
 * decision on two identities that gives back what the first one took
 * when the second denies, on any store that keeps meters.
 */
#ifndef SUSPECT_TESTS_METER_TEST_H
#define SUSPECT_TESTS_METER_TEST_H

#include "suspect_store.h"

/* A multiple of a minute: the caller's clock of these scenarios. */
#define MT_NOW 1710000000000LL

/* A token bucket of rate per per_s, capacity burst (0 = rate). */
suspect_rule_t mt_bucket(const char *action, uint32_t rate, uint32_t per_s,
                         uint32_t burst);

/* OTP sends on key: capacity 5, 5 per minute; a burst of 5, the 6th
 * refused with a 12 s wait, one more after 12 s, the one after refused. */
void mt_otp_sends(suspect_store_t *store, const suspect_key_t *key);

/* Requests of costs 1 and 5 on key: burst 10, 10 per minute. */
void mt_costs(suspect_store_t *store, const suspect_key_t *key);

/* keys[0] has room, keys[1] none: a decision on both is denied and
 * keys[0]'s meter is as it was (what it took is given back). */
void mt_gives_back(suspect_store_t *store, const suspect_key_t keys[2]);

#endif
