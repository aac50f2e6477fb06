/*
 * compiled_internal.h - what the encoder and the decoder of compiled
 * configurations share (compiled.h): the header layout and the field
 * tables, so both walk the same fields in the same order.
 *
 * Like the loader's element tables (conf_internal.h), each scalar or
 * string field of suspect_conf_t and suspect_conf_route_t is a row: its
 * kind, its offset, and for an enumeration the largest value.  What is
 * not a plain field (the template's bytes, routes, methods, identities,
 * rules) is coded by hand in both files, in the order written here.
 */
#ifndef SUSPECT_COMPILED_INTERNAL_H
#define SUSPECT_COMPILED_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "compiled.h"

#define COMPILED_MAGIC     "SUSPSNAP"
#define COMPILED_HEADER    40 /* magic 8, version 4, 0 4, length 8, sum 16 */
#define COMPILED_NULL_STR  0xffffffffu
#define COMPILED_MAX_RULES 1000000u /* far above any limits file's cap */
#define COMPILED_MAX_LEN   (COMPILED_MAX_BYTES - COMPILED_HEADER)

/* sum[0], sum[1]: the checksum of the n bytes at p, as the header holds
 * it (compiled.c).  Against damage, not forgery. */
void compiled_sum(const void *p, size_t n, uint64_t sum[2]);

typedef enum compiled_kind {
    COMPILED_STR = 1, /* const char *, may be NULL */
    COMPILED_STR_REQ, /* const char *, never NULL */
    COMPILED_UINT,    /* unsigned, u32 */
    COMPILED_INT,     /* int, u32 two's complement */
    COMPILED_SIZE,    /* size_t, u64 */
    COMPILED_BOOL,    /* bool, u32 0 or 1 */
    COMPILED_ENUM     /* an int-sized enum, u32 0 .. max */
} compiled_kind_t;

typedef struct compiled_field {
    compiled_kind_t kind; /* 0 ends a table */
    size_t offset;
    uint32_t max; /* COMPILED_ENUM: the largest value */
} compiled_field_t;

/* suspect_conf_t's fields, then the template's bytes, then the routes. */
extern const compiled_field_t compiled_conf_fields[];

/* suspect_conf_route_t's fields, then methods, then identities. */
extern const compiled_field_t compiled_route_fields[];

#endif
