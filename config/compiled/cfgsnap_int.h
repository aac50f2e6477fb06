/*
 * cfgsnap_int.h - what the encoder and the decoder of compiled
 * configurations share (cfgsnap.h): the header layout and the field
 * tables, so both walk the same fields in the same order.
 *
 * Like the loader's element tables (conf_internal.h), each scalar or
 * string field of suspect_conf_t and suspect_conf_route_t is a row: its
 * kind, its offset, and for an enumeration the largest value.  What is
 * not a plain field (the template's bytes, routes, methods, identities,
 * rules) is coded by hand in both files, in the order written here.
 */
#ifndef SUSPECT_CFGSNAP_INT_H
#define SUSPECT_CFGSNAP_INT_H

#include <stddef.h>
#include <stdint.h>

#include "cfgsnap.h"
#include "siphash.h"

#define CFGSNAP_MAGIC     "SUSPSNAP"
#define CFGSNAP_HEADER    40 /* magic 8, version 4, 0 4, length 8, sum 16 */
#define CFGSNAP_NULL_STR  0xffffffffu
#define CFGSNAP_MAX_RULES 1000000u /* far above any limits file's cap */
#define CFGSNAP_MAX_LEN   (CFGSNAP_MAX_BYTES - CFGSNAP_HEADER)

/* The checksum key: fixed and public (corruption, not forgery). */
#define CFGSNAP_SUM_KEY                                                        \
    {                                                                          \
        0x5355535043464731ull, 0x736e617073686f74ull                           \
    }

typedef enum cfgsnap_kind {
    CFGSNAP_STR = 1, /* const char *, may be NULL */
    CFGSNAP_STR_REQ, /* const char *, never NULL */
    CFGSNAP_UINT,    /* unsigned, u32 */
    CFGSNAP_INT,     /* int, u32 two's complement */
    CFGSNAP_SIZE,    /* size_t, u64 */
    CFGSNAP_BOOL,    /* bool, u32 0 or 1 */
    CFGSNAP_ENUM     /* an int-sized enum, u32 0 .. max */
} cfgsnap_kind_t;

typedef struct cfgsnap_field {
    cfgsnap_kind_t kind; /* 0 ends a table */
    size_t offset;
    uint32_t max; /* CFGSNAP_ENUM: the largest value */
} cfgsnap_field_t;

/* suspect_conf_t's fields, then the template's bytes, then the routes. */
extern const cfgsnap_field_t cfgsnap_conf_fields[];

/* suspect_conf_route_t's fields, then methods, then identities. */
extern const cfgsnap_field_t cfgsnap_route_fields[];

#endif
