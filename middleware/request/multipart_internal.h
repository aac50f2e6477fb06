/*
 * multipart_internal.h - what the two halves of multipart.h's reader share:
 * multipart.c (the body's state machine) hands each part's header block
 * to multipart_head.c, which says what the part is.
 */
#ifndef MW_MULTIPART_INTERNAL_H
#define MW_MULTIPART_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "suspect_error.h"

/* What a part is to PHP. */
typedef enum mp_kind {
    MP_SKIP,  /* no Content-Disposition, or neither name= nor filename= */
    MP_FIELD, /* name= and no filename=: $_POST */
    MP_FILE   /* filename=: $_FILES */
} mp_kind_t;

typedef struct mp_head {
    mp_kind_t kind;
    bool has_name;
    size_t name_off; /* the name= value (unquoted) in the block */
    size_t name_len;
} mp_head_t;

/*
 * Reads the header block blk[0..len) of one part: its lines, each ending
 * with "\r\n" (crlf) or "\n", the last one empty.  SUSPECT_OK with *h, or
 * SUSPECT_E_PARSE with *why (a static text) for a block parsers read
 * differently (multipart.h).
 */
suspect_rc_t mp_head_read(const char *blk, size_t len, bool crlf, mp_head_t *h,
                          const char **why);

#endif
