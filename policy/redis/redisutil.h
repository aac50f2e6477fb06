/*
 * redisutil.h - the parts of the Redis store that need no hiredis: the
 * reconnect backoff, the RESP encoding of commands and decoding of integer
 * arrays (the decision's hot path), decide.lua's answer, deadlines.  Hit
 * ids are the core's (hitid.h), URLs redisurl.h's.  Private to the
 * library.
 */
#ifndef SUSPECT_REDISUTIL_H
#define SUSPECT_REDISUTIL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "suspect_error.h"
#include "suspect_policy.h"

/* Writes v in decimal and a NUL into buf (at least 21 bytes); returns the
 * length.  snprintf is measurably slow on the decision path. */
size_t redis_fmt_i64(char *buf, int64_t v);

/* ---- RESP, the Redis protocol (no I/O) ---- */

/* Bytes the RESP encoding of a command of argc arguments of lengths len[]
 * takes. */
size_t redis_resp_size(int argc, const size_t *len);

/* Writes that encoding (redis_resp_size() bytes, no NUL) at out. */
void redis_resp_encode(char *out, int argc, const char *const *argv,
                       const size_t *len);

/* True when buf[0..len) is exactly one RESP array of n integers (v gets
 * them); false for anything else: another type, an error, a reply not
 * complete yet, trailing bytes (the caller then lets hiredis parse it). */
bool redis_resp_ints(const char *buf, size_t len, int64_t *v, size_t n);

/* ---- keys ---- */

/* The identity part of key k (after a prefix of prefix_len bytes and
 * "Action:", inside the hash tag's braces of the Cluster layout): the
 * lock's value, as the .NET code writes it; *len gets its length.  Points
 * into k. */
const char *redis_identity_of(size_t prefix_len, const suspect_key_t *k,
                              size_t *len);

/* ---- decide.lua's answer ---- */

/* Integers decide.lua answers per identity, after now and allowed: lock
 * end, hits, free_at, new lock, reservations, their earliest end,
 * offences, new offences. */
#define REDIS_DECIDE_PER 8

/* The state of one identity from its REDIS_DECIDE_PER integers v (the
 * new lock and offences are v[3] and v[7], not states). */
void redis_decide_state(const int64_t *v, suspect_window_state_t *st);

/* True when the plan's writes for identity i are what its integers v say
 * the script wrote (the new lock, the new offence count). */
bool redis_decide_agrees(const suspect_plan_t *plan, size_t i,
                         const int64_t *v);

/* ---- carrying the failover wrapper's journal back (rediscarry.c) ---- */

/* Identities written back per Redis command (4 arguments each). */
#define REDIS_CARRY_CHUNK 7

/* Reconnect backoff: 0 until the first failure, then 10 ms doubling up to
 * REDIS_BACKOFF_MAX_MS (short: a returning Redis is used again at once, and
 * the failover wrapper's breaker keeps a dead one from costing time); reset by
 * a success. */
#define REDIS_BACKOFF_MIN_MS 10
#define REDIS_BACKOFF_MAX_MS 250

typedef struct redis_backoff {
    unsigned delay_ms;
    int64_t not_before_ms; /* monotonic */
} redis_backoff_t;

bool redis_backoff_ready(const redis_backoff_t *b, int64_t mono_ms);
void redis_backoff_fail(redis_backoff_t *b, int64_t mono_ms);
void redis_backoff_ok(redis_backoff_t *b);

/* ---- deadlines ---- */

/* A moment of CLOCK_MONOTONIC, in nanoseconds (mono_ns()).  One store
 * operation (a decision, a status...) runs against one: each of its waits
 * (a lock, a connect, a command, a pause before a retry) is given the time
 * left, and none starts once it is spent. */
typedef int64_t redis_deadline_t;

/* The deadline ms milliseconds from now. */
redis_deadline_t redis_deadline_in(unsigned ms);

/* Milliseconds left before d, rounded up, at most cap; 0 once d passed.
 * Rounded up so that an operation's first wait gets its whole timeout,
 * the figure its socket already has (no system call to change it). */
unsigned redis_left_ms(redis_deadline_t d, unsigned cap);

/* Locks mu, waiting no later than d: true when locked. */
bool redis_lock_by(pthread_mutex_t *mu, redis_deadline_t d);

/* The reservations and offences keys of an identity: its window key
 * followed by ":slots" and ":offences" (suffixes with letters no hex value
 * holds, so no identity's window key is another's; after a hash tag, so one
 * slot of a cluster holds them all). */
typedef struct redis_more_keys {
    char resv[SUSPECT_KEY_MAX + 16];
    char offences[SUSPECT_KEY_MAX + 16];
    size_t resv_len, offences_len;
} redis_more_keys_t;

void redis_more_keys(const suspect_key_t *k, redis_more_keys_t *m);

/* As redis_more_keys, for a window whose lock lives in another slot of a
 * Redis Cluster (the seed's keys there): the two keys must still share the
 * window's slot, so when the window key holds no hash tag they are named
 * "{<window>}:slots" and "{<window>}:offences". */
void redis_more_keys_apart(const suspect_key_t *k, redis_more_keys_t *m);

/* A slot's id in its member: a ticket's 64 bits in hex, NUL-terminated. */
#define REDIS_SLOT_ID_LEN 16

void redis_slot_id(uint64_t id, char out[REDIS_SLOT_ID_LEN + 1]);

#endif
