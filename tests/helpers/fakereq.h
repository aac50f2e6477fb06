/*
 * fakereq.h - an in-memory mw_req_t for tests of what sits above the
 * request I/Os (guard, CGI spawner, upstream client): variables from
 * "NAME=value" strings, a body from memory, the output collected.
 */
#ifndef SUSPECT_TESTS_FAKEREQ_H
#define SUSPECT_TESTS_FAKEREQ_H

#include <stddef.h>

#include "request/request.h"

#define FAKEREQ_MAX_PARAMS 64

typedef struct fakereq {
    mw_req_t req; /* first: a fakereq_t * is an mw_req_t * */
    mw_param_t params[FAKEREQ_MAX_PARAMS];
    const char *body; /* borrowed */
    size_t body_len;
    size_t body_off;
    size_t chunk;   /* most bytes one read returns; 0 = any */
    int read_error; /* when set, reads fail with -read_error */
    char *out;      /* what was written (malloc'ed, NUL-terminated) */
    size_t out_len;
    size_t out_cap;
    size_t reads; /* read calls that returned data */
} fakereq_t;

/*
 * Sets up r with role MW_ROLE_RESPONDER and the NULL-terminated list of
 * "NAME=value" variables (borrowed: they must outlive r) and a body
 * (borrowed; NULL = none).
 */
void fakereq_init(fakereq_t *r, const char *const *vars, const char *body,
                  size_t body_len);

/* Frees what r allocated (output, prefetch buffer). */
void fakereq_free(fakereq_t *r);

#endif
