/*
 * bench.h - what the benches share: seconds of the monotonic clock as a
 * double, to the nanosecond, for timing runs (the project's mono_ms() in
 * clock.h counts whole milliseconds), and the resident set size, for
 * the memory rows.
 */
#ifndef SUSPECT_BENCH_H
#define SUSPECT_BENCH_H

#include <stdio.h>
#include <time.h>
#include <unistd.h>

static inline double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Resident set size in bytes, from /proc/self/statm (0 if unknown). */
static inline size_t rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, resident = 0;

    if (f == NULL) {
        return 0;
    }
    if (fscanf(f, "%lu %lu", &size, &resident) != 2) {
        resident = 0;
    }
    fclose(f);
    return resident * (size_t)sysconf(_SC_PAGESIZE);
}

#endif
