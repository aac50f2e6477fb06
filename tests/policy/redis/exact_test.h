/*
 * exact_test.h - the exactness check the "redis" and "cluster" suites
 * share: EX_PROCS processes of EX_THREADS threads, each process with a
 * store of its own on one URL, decide for EX_RUN_MS on a rule of EX_LIMIT
 * hits per second; no identity may have EX_LIMIT + 1 hits admitted within
 * one second.
 */
#ifndef SUSPECT_TESTS_EXACT_TEST_H
#define SUSPECT_TESTS_EXACT_TEST_H

#include <stddef.h>

#include "suspect_policy.h"

#define EX_LIMIT 10

/* A run: each thread decides pair[thread % npairs] (nkeys keys: 1 or 2)
 * on a store of url (the caller's clock) with rule (EX_LIMIT hits per
 * 1 s).  The first key of every pair is one identity (a member), the
 * second each pair's own (an IP). */
typedef struct ex_plan {
    const char *url;
    const suspect_rule_t *rule;
    size_t nkeys;
    int npairs;
    suspect_key_t pair[2][2];
} ex_plan_t;

/* Runs plan and asserts (CUnit) that no decision failed, no process
 * failed, no identity was over-admitted and the limit was reached (the
 * run tested something).  Fills admitted[0] with the hits admitted to the
 * first key, admitted[1 + i] with those of pair i's second key. */
void ex_check(const ex_plan_t *plan, size_t admitted[3]);

#endif
