/*
 * fcgi_proto.h - the FastCGI wire format, without I/O.
 *
 * Both sides of suspect-fcgi speak FastCGI: the server side that nginx,
 * lighttpd or Apache talk to, and the client side that forwards allowed
 * requests to php-cgi or php-fpm.  This module only encodes and decodes:
 * record headers, name-value pairs, BEGIN_REQUEST and END_REQUEST bodies.
 * Like hiredis's read.c it never touches a socket, so every malformed input
 * is tested from byte arrays.
 *
 * Record: 8-byte header (version 1, type, request id, content length,
 * padding length), content, padding.  Name-value pair: each length is one
 * byte when < 128, else four bytes big-endian with the high bit set.
 */
#ifndef MW_FCGI_PROTO_H
#define MW_FCGI_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "suspect_error.h"

#define FCGI_VERSION_1       1
#define FCGI_HEADER_LEN      8
#define FCGI_MAX_CONTENT     65535
#define FCGI_NULL_REQUEST_ID 0

/* Record types. */
#define FCGI_BEGIN_REQUEST     1
#define FCGI_ABORT_REQUEST     2
#define FCGI_END_REQUEST       3
#define FCGI_PARAMS            4
#define FCGI_STDIN             5
#define FCGI_STDOUT            6
#define FCGI_STDERR            7
#define FCGI_DATA              8
#define FCGI_GET_VALUES        9
#define FCGI_GET_VALUES_RESULT 10
#define FCGI_UNKNOWN_TYPE      11

/* Roles, and the BEGIN_REQUEST flag. */
#define FCGI_RESPONDER  1
#define FCGI_AUTHORIZER 2
#define FCGI_FILTER     3
#define FCGI_KEEP_CONN  1

/* END_REQUEST protocol status. */
#define FCGI_REQUEST_COMPLETE 0
#define FCGI_CANT_MPX_CONN    1
#define FCGI_OVERLOADED       2
#define FCGI_UNKNOWN_ROLE     3

typedef struct fcgi_header {
    uint8_t type;
    uint16_t request_id;
    uint16_t content_len;
    uint8_t padding_len;
} fcgi_header_t;

/*
 * Decodes the 8 bytes at p.  SUSPECT_E_PARSE when the version is not 1 or
 * the type is 0 (a peer that is not speaking FastCGI).
 */
suspect_rc_t fcgi_header_decode(const uint8_t *p, fcgi_header_t *out);

/* Writes the 8-byte header of a record; padding_len is chosen by the
 * caller (0 is always valid). */
void fcgi_header_encode(uint8_t *p, uint8_t type, uint16_t request_id,
                        uint16_t content_len, uint8_t padding_len);

/* BEGIN_REQUEST body (8 bytes): role and flags. */
suspect_rc_t fcgi_begin_decode(const uint8_t *p, size_t len, uint16_t *role,
                               uint8_t *flags);
void fcgi_begin_encode(uint8_t *p, uint16_t role, uint8_t flags);

/* END_REQUEST body (8 bytes): app status and protocol status. */
suspect_rc_t fcgi_end_decode(const uint8_t *p, size_t len, uint32_t *app_status,
                             uint8_t *proto_status);
void fcgi_end_encode(uint8_t *p, uint32_t app_status, uint8_t proto_status);

/* One decoded name-value pair; pointers into the decoded buffer. */
typedef struct fcgi_nv {
    const uint8_t *name;
    uint32_t name_len;
    const uint8_t *value;
    uint32_t value_len;
} fcgi_nv_t;

/*
 * Decodes the pair at p[*off .. len) and advances *off past it.  Returns
 * SUSPECT_OK, SUSPECT_E_NOTFOUND when *off == len (no more pairs), or
 * SUSPECT_E_PARSE when the pair is truncated or a length runs past len.
 * Lengths are checked against len before any pointer arithmetic, so a
 * hostile 0x7fffffff length is an error, never an overflow.
 */
suspect_rc_t fcgi_nv_decode(const uint8_t *p, size_t len, size_t *off,
                            fcgi_nv_t *out);

/* Bytes fcgi_nv_encode() writes for a pair of these lengths. */
size_t fcgi_nv_size(size_t name_len, size_t value_len);

/*
 * Encodes one pair at p (room for fcgi_nv_size() bytes) and returns the
 * bytes written.  Lengths must be < 2^31.
 */
size_t fcgi_nv_encode(uint8_t *p, const void *name, size_t name_len,
                      const void *value, size_t value_len);

#endif
