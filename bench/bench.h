/*
 * bench.h - what the benches share: seconds of the monotonic clock as a
 * double, to the nanosecond, for timing runs (the project's mono_ms() in
 * clock.h counts whole milliseconds), the resident set size, for
 * the memory rows, and a memory store to decide on.
 */
#ifndef SUSPECT_BENCH_H
#define SUSPECT_BENCH_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "suspect_store.h"

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

/* A memory store of max_entries (default shards); exits with a line
 * naming the bench (who) when it cannot be made. */
static inline suspect_store_t *bench_memstore(size_t max_entries,
                                              const char *who)
{
    suspect_memstore_opts_t opts = {max_entries, 0};
    suspect_store_t *store = NULL;

    if (suspect_memstore_new(&opts, &store, NULL) != SUSPECT_OK) {
        fprintf(stderr, "%s: cannot make a memory store\n", who);
        exit(1);
    }
    return store;
}

#endif
