/*
 * bench_mix.h - the realistic rows of bench-redis (bench_redis_mix.c),
 * run after its single-identity rounds.
 */
#ifndef SUSPECT_BENCH_MIX_H
#define SUSPECT_BENCH_MIX_H

#include "helpers/redisserver.h"

/* Runs and prints the realistic rows on srv (the store through url, the
 * bare client through srv's unix socket, or TCP port when > 0), rounds
 * rounds each; 0 when every row ran and both sides did the same work. */
int bench_mix_rows(test_redis_t *srv, const char *url, int port, int clients,
                   long requests, int rounds);

#endif
