/*
 * clock.h - the two clocks, each by one name everywhere.
 *
 *   wall_ms()  milliseconds since the epoch (CLOCK_REALTIME): the time a
 *              decision is made at, windows, restriction ends, anything
 *              shown to a client or shared with another host;
 *   mono_ms()  milliseconds of CLOCK_MONOTONIC: deadlines, timeouts,
 *              intervals, anything measured within this process (it never
 *              jumps when the wall clock is set);
 *   mono_ns()  the same clock in nanoseconds, for latencies (metrics).
 *
 * The policy itself takes the time as a parameter and reads no clock;
 * these are for its callers and for the stores' own timeouts.  Inline:
 * they are on every request's path, and a header costs no symbol.
 */
#ifndef SUSPECT_CLOCK_H
#define SUSPECT_CLOCK_H

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

#endif
