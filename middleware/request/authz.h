/*
 * authz.h - the user name in an Authorization header, read as
 * applications read it, without I/O.
 *
 * PHP fills PHP_AUTH_USER from "Basic " (any case) followed by base64 of
 * "user:password", and many PHP applications decode the header
 * themselves, scheme-blind: base64_decode(substr($h, 6)), the user up to
 * the first ':', so "Bearer", "Xxxxxx" or any six bytes work as well as
 * "Basic".  Both decode as PHP's base64_decode() does by default: bytes
 * outside the alphabet and '=' anywhere are skipped, a last lone sextet
 * is dropped (Perl's decode_base64 is as lenient).
 */
#ifndef MW_AUTHZ_H
#define MW_AUTHZ_H

#include <stdbool.h>
#include <stddef.h>

#include "suspect_error.h"

/*
 * The user name of Authorization value hdr[0..len) into buf (size bytes,
 * not NUL-terminated; the user is never longer than len).  any: the
 * scheme-blind reading (the first 6 bytes skipped, whatever they are; no
 * ':' means the whole decoded text is the user); else the Basic scheme as
 * PHP_AUTH_USER (the scheme "basic " in any case, and a ':' required).
 * SUSPECT_OK with *out_len (possibly 0), SUSPECT_E_NOTFOUND when the
 * reading finds no user, SUSPECT_E_FULL when size is below len - 6 (then
 * *out_len is the size needed).
 */
suspect_rc_t mw_authz_user(const char *hdr, size_t len, bool any, char *buf,
                           size_t size, size_t *out_len);

#endif
