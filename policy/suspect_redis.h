/*
 * suspect_redis.h - the Redis store: counts and locks shared by many hosts.
 *
 * A store backend (suspect_store.h) whose every decision is one EVALSHA of
 * lua/decide.lua, with the window and lock keys of every identity in KEYS,
 * so the decision is atomic in Redis.  The keys are the .NET system's (seed
 * 000): the window `{Action}:{Identity}` is a sorted set of hits (score =
 * epoch ms, member = a unique GUID-like id) whose TTL is the window plus 5 s,
 * and the lock `{Action}:{Identity}:locked` is a string with a TTL.  See
 * docs/redis.md for the data model, the URL forms and the clock choice.
 *
 * Connections: one hiredis connection per thread per store, opened on the
 * thread's first call, reconnected with backoff (10 ms doubling to 250 ms)
 * after any error, with the connect and command timeouts applied again on
 * each reconnect.  Sockets are close-on-exec.  Commands are written with
 * send(MSG_NOSIGNAL), so a dead server never raises SIGPIPE: programs need
 * not ignore it.
 *
 * Time: one operation (a decision, a status, a reset...) spends at most the
 * longer of the two timeouts in Redis, to the millisecond, whatever it
 * has to do there: wait for another thread's Sentinel lookup or Cluster
 * slot map, ask the sentinels, connect and log in, follow redirections,
 * wait out TRYAGAIN, run its commands.  Each connect waits at most the
 * connect timeout and each command the command timeout, and neither longer
 * than what is left; once nothing is left the call fails
 * (SUSPECT_E_TIMEOUT) and the caller's fail mode answers.  A decision of
 * the failover wrapper that first writes its outage journal back spends
 * the same time in all (suspect_failover.h).
 *
 * Errors: SUSPECT_E_TIMEOUT when Redis did not answer in time, SUSPECT_E_STORE
 * for anything else (refused, closed, protocol, a Redis error reply), with
 * text such as "redis 127.0.0.1:6399: connection refused" or
 * "redis: WRONGPASS invalid username-password pair".  The caller then
 * applies its fail mode (suspect_failover.h).
 */
#ifndef SUSPECT_REDIS_H
#define SUSPECT_REDIS_H

#include <stdint.h>

#include "suspect_store.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whose clock a decision uses. */
typedef enum suspect_redis_clock {
    /* The now_ms the caller passes (default): the same clock as every other
     * store and as the .NET code (the app host's clock), and testable with a
     * fake clock.  Hosts must keep their clocks in sync (NTP). */
    SUSPECT_REDIS_CLOCK_CALLER = 0,
    /* Redis TIME, read inside the script: one clock for every host, for
     * fleets whose clocks drift.  now_ms is then ignored by decide/status
     * (the decision's times are Redis's). */
    SUSPECT_REDIS_CLOCK_SERVER = 1
} suspect_redis_clock_t;

#define SUSPECT_REDIS_DEFAULT_URL        "redis://127.0.0.1:6379/0"
#define SUSPECT_REDIS_DEFAULT_TIMEOUT_MS 50

typedef struct suspect_redis_opts {
    /* Where Redis is; NULL = SUSPECT_REDIS_DEFAULT_URL.  Forms:
     *   redis://[[user]:password@]host[:port][/db]   (host may be [v6addr])
     *   unix:///path/to.sock[?db=N][&password=P][&user=U]
     * user and password may be %XX-escaped.  The port defaults to 6379,
     * the db to 0. */
    const char *url;
    unsigned connect_timeout_ms; /* 0 = 50: one connect */
    unsigned command_timeout_ms; /* 0 = 50: one command */
    suspect_redis_clock_t clock;
    /* The prefix of the key options the keys are built with (NULL = none):
     * the lock's value is the identity, i.e. the window key without the
     * prefix and the action. */
    const char *key_prefix;
} suspect_redis_opts_t;

/* Counters of one Redis store, summed over its connections. */
typedef struct suspect_redis_stats {
    uint64_t commands;     /* requests sent (EVALSHA, DEL, SET, ...) */
    uint64_t connects;     /* connections established */
    uint64_t connect_errs; /* connection attempts that failed */
    uint64_t errors;       /* calls that returned an error */
    uint64_t timeouts;     /* ...of which timeouts */
    uint64_t reloads;      /* NOSCRIPT answers, followed by SCRIPT LOAD */
    uint64_t redirects;    /* Cluster MOVED and ASK followed */
    uint64_t retries;      /* TRYAGAIN, CLUSTERDOWN, LOADING waited out */
    uint64_t lookups;      /* slot maps read, masters asked of sentinels */
    uint64_t switches;     /* master changes seen (Sentinel) */
    uint64_t cross_slot;   /* decisions whose keys span slots (Cluster) */
    uint64_t rollbacks;    /* hits reserved, then taken back (a denial) */
} suspect_redis_stats_t;

/*
 * Creates a Redis store.  Only checks and copies the options: nothing is
 * connected until a thread first uses the store (use suspect_redis_ping()
 * to check the server at start-up).  opts may be NULL for the defaults.
 * Returns an owned store in *out; SUSPECT_E_INVAL on a bad URL or option,
 * SUSPECT_E_NOMEM.
 */
suspect_rc_t suspect_redis_new(const suspect_redis_opts_t *opts,
                               suspect_store_t **out, suspect_err_t *err);

/*
 * Connects the calling thread (if needed), loads the scripts and PINGs.
 * Returns SUSPECT_OK, or the error a decision would have returned.  store
 * must be a Redis store.
 */
suspect_rc_t suspect_redis_ping(suspect_store_t *store, suspect_err_t *err);

/* Fills *out with the store's counters.  store must be a Redis store. */
void suspect_redis_stats(suspect_store_t *store, suspect_redis_stats_t *out);

/* True when store is a Redis store. */
bool suspect_store_is_redis(const suspect_store_t *store);

/*
 * Called by suspect_redis_foreach_locked() for each live lock: key is the
 * window key (the lock key without ":locked"), NUL-terminated, borrowed
 * for the call.  Return 0 to go on, nonzero to stop.  It must not call
 * the store.
 */
typedef int (*suspect_redis_locked_fn)(void *ud, const char *key,
                                       size_t key_len, int64_t lock_until_ms);

/*
 * Lists the identities locked at now_ms whose window key starts with match
 * (NULL or "" = any key), by SCAN MATCH <match>*:locked COUNT 500 and MGET:
 * incremental, so a large database never blocks Redis for long, but not a
 * snapshot (a lock set or dropped meanwhile may or may not be listed, and
 * SCAN may list a key twice).  A lock ends at the "|until=" of its value
 * (Suspect's locks), else at now + PTTL (the .NET system's), as
 * lua/status.lua reads it.  With SUSPECT_REDIS_CLOCK_SERVER, now is Redis
 * TIME.  Returns SUSPECT_OK (also when fn stopped), SUSPECT_E_INVAL when
 * store is not a Redis store, or the error of a command.
 */
suspect_rc_t suspect_redis_foreach_locked(suspect_store_t *store,
                                          const char *match, int64_t now_ms,
                                          suspect_redis_locked_fn fn, void *ud,
                                          suspect_err_t *err);

#ifdef __cplusplus
}
#endif

#endif
