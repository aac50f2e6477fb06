/*
 * jsonbody.h - the calls of a JSON request body, and a value in each by
 * JSON pointer (RFC 6901), read strictly, without I/O.
 *
 * A JSON object is one call; a top-level array (a JSON-RPC batch) is one
 * call per element, each read on its own, so the guard counts one
 * attempt per element for its own account.  See jsonbody.c for what is
 * refused.
 */
#ifndef MW_REQUEST_JSONBODY_H
#define MW_REQUEST_JSONBODY_H

#include <stdbool.h>
#include <stddef.h>

#include "suspect_error.h"

/* Bytes an integer value takes as text, with its NUL. */
#define MW_JSON_INT_TEXT 24

typedef struct mw_json mw_json_t;

/*
 * Parses body[0..len) into *out (owned: mw_json_free()).  SUSPECT_OK;
 * SUSPECT_E_PARSE (*why, static text: not JSON, an object with a key
 * given twice, a number too big for an integer, a NUL in a string);
 * SUSPECT_E_RANGE (a batch of more than max_calls elements);
 * SUSPECT_E_NOMEM.  *out is NULL but on SUSPECT_OK.
 */
suspect_rc_t mw_json_read(const char *body, size_t len, size_t max_calls,
                          mw_json_t **out, const char **why);

/* Frees j; NULL is a no-op. */
void mw_json_free(mw_json_t *j);

/* The calls of j: a batch's elements, else 1. */
size_t mw_json_ncalls(const mw_json_t *j);

/*
 * The value at pointer ptr[0..ptr_len) ("/user", "/params/0") in call i,
 * as text: a string as it came (valid while j lives), an integer in
 * decimal in buf.  SUSPECT_OK with *v, *len; SUSPECT_E_NOTFOUND (no such
 * value, or null); SUSPECT_E_INVAL (a real, a boolean, an object or an
 * array: PHP's string cast reads them another way).
 */
suspect_rc_t mw_json_value(const mw_json_t *j, size_t i, const char *ptr,
                           size_t ptr_len, char buf[MW_JSON_INT_TEXT],
                           const char **v, size_t *len);

#endif
