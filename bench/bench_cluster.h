/*
 * bench_cluster.h - the cluster rows of bench-redis
 * (bench_redis_cluster.c), run after its single-Redis rounds.
 */
#ifndef SUSPECT_BENCH_CLUSTER_H
#define SUSPECT_BENCH_CLUSTER_H

/* Runs and prints the cluster rows: one Redis, a cluster of one master
 * and one of three, two workloads each, rounds rounds; 0 on success. */
int bench_cluster_rows(int clients, long requests, int rounds);

#endif
