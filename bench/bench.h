/*
 * bench.h - what the benches share: seconds of the monotonic clock as a
 * double, to the nanosecond, for timing runs (the project's mono_ms() in
 * clock.h counts whole milliseconds).
 */
#ifndef SUSPECT_BENCH_H
#define SUSPECT_BENCH_H

#include <time.h>

static inline double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#endif
