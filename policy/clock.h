/*
 * clock.h - the two clocks, each by one name everywhere.
 *
 *   wall_ms()  milliseconds since the epoch (CLOCK_REALTIME): the time a
 *              decision is made at, windows, restriction ends, anything
 *              shown to a client or shared with another host;
 *   mono_ms()  milliseconds of CLOCK_MONOTONIC: deadlines, timeouts,
 *              intervals, anything measured within this process (it never
 *              jumps when the wall clock is set);
 *   mono_ns()  the same clock in nanoseconds, for latencies (metrics);
 *   wall_ns()  the wall clock in nanoseconds, for comparing with a file's
 *              times (st_mtim, st_ctim);
 *   ns_timespec(ns)  a moment of either clock, or a span, as the struct
 *              timespec that the waits take (pthread_cond_timedwait() on a
 *              condition made with CLOCK_MONOTONIC,
 *              pthread_mutex_clocklock(), sigtimedwait());
 *   mono_cond_init(cv)  a condition whose timed waits count on the
 *              monotonic clock, so setting the wall clock moves no wait.
 *
 * The policy itself takes the time as a parameter and reads no clock;
 * these are for its callers and for the stores' own timeouts.  Inline:
 * they are on every request's path, and a header costs no symbol.
 */
#ifndef SUSPECT_CLOCK_H
#define SUSPECT_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

static inline int64_t wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline int64_t mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline int64_t mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t wall_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline struct timespec ns_timespec(int64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};

    return ts;
}

/* 0, or the error number of pthread_condattr_*() / pthread_cond_init(). */
static inline int mono_cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t ca;
    int rc = pthread_condattr_init(&ca);

    if (rc != 0) {
        return rc;
    }
    rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    if (rc == 0) {
        rc = pthread_cond_init(cv, &ca);
    }
    pthread_condattr_destroy(&ca);
    return rc;
}

#endif
