/*
 * lookup.h - identity values out of a CGI request, without I/O.
 *
 * The middleware resolves identities (suspect.xml: cookie:NAME, query:NAME,
 * form:NAME, header:NAME, client-ip) from CGI variables.  These parsers take
 * (pointer, length) strings that need not be NUL-terminated, never allocate
 * and write into caller buffers.  Lookups return:
 *   SUSPECT_OK          found; *len is the value's length, buf holds it;
 *   SUSPECT_E_NOTFOUND  no such name;
 *   SUSPECT_E_FULL      found, but longer than size: buf holds the first
 *                       size bytes and *len the full length, so the caller
 *                       can reject the request or retry with a bigger buffer;
 *   SUSPECT_E_INVAL     bad arguments (empty name, NULL buffers).
 * Values written to buf are not NUL-terminated (a decoded query value may
 * hold NUL bytes; policy/keys.c escapes them).
 *
 * lookup.c implements the lookups, addr.c the addresses.
 */
#ifndef MW_LOOKUP_H
#define MW_LOOKUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "suspect_error.h"

/* ---- cookie, query, form, header --------------------------------------- */

/*
 * Finds cookie name (case-sensitive) in an HTTP_COOKIE value: pairs
 * separated by ';', blanks around names and values ignored, a value in
 * double quotes unquoted, pairs without '=' skipped.  A pair names name
 * when its name is name byte for byte, or with any white space around it
 * ("member\v", as Perl's \s and Python's http.cookies trim it), or as PHP
 * files it (undecoded: "member.code" and "member code" are PHP's
 * "member_code"), or percent-decoded ("member%5Fcode", as Perl's
 * CGI::Cookie reads it), or decoded with white space around it
 * ("member%0B").  The
 * value is percent-decoded (%XX; '+' stays, as PHP decodes cookies), so
 * "sid=%61bc" is "abc".  The first pair that names it wins.  Linear in
 * hdr_len.
 */
suspect_rc_t mw_cookie_find(const char *hdr, size_t hdr_len, const char *name,
                            size_t name_len, char *buf, size_t size,
                            size_t *len);

/*
 * The values of a cookie Suspect itself sets as name (a device cookie, a
 * pass), under each name a browser sends it back with: name, then
 * "__Host-" name (on HTTPS), as mw_cookie_find() reads them.  vals[i]
 * (MW_OWN_COOKIE bytes each) and lens[i] for each found; how many (0 to
 * 2).  hdr may be NULL (no Cookie header).
 */
#define MW_OWN_COOKIE 256
size_t mw_cookie_find_own(const char *hdr, size_t hdr_len, const char *name,
                          char vals[2][MW_OWN_COOKIE], size_t lens[2]);

/*
 * True when the first pair naming cookie name byte for byte, the first
 * naming it as PHP files names and the first naming it percent-decoded
 * (mw_cookie_find()) do not all have the same decoded value: then which
 * cookie the app reads depends on its parser ("member.code=A;
 * member_code=B": PHP reads A, a byte-for-byte parser B).  The same name
 * repeated is not ambiguous (every parser takes the first).  Linear in
 * hdr_len; no buffer.
 */
bool mw_cookie_ambiguous(const char *hdr, size_t hdr_len, const char *name,
                         size_t name_len);

/*
 * Finds cookie name as Perl's CGI::Cookie (CGI.pm 4.55's cookie()) reads
 * it: pairs separated by ';' or ',', white space (C's isspace(), Perl's
 * \s) around each pair dropped, pairs without '=' skipped, the name
 * percent-decoded ('+' a space) and compared byte for byte, the first
 * pair so named wins, and its value is the first of its '&'-separated
 * values, percent-decoded with '+' a space: "x=1, member=m2&N" is "m2".
 * Quotes are kept, as CGI::Cookie keeps them.  Returns as
 * mw_cookie_find().  CGI.pm also decodes "%uXXXX", which this does not:
 * the guard refuses a Cookie header holding one (mw_has_u_escape()).
 */
suspect_rc_t mw_cookie_find_cgi(const char *hdr, size_t hdr_len,
                                const char *name, size_t name_len, char *buf,
                                size_t size, size_t *len);

/*
 * True when s holds "%u" followed by four hex digits, an escape CGI.pm's
 * unescape() decodes (to the character's UTF-8 bytes) in parameter names
 * and values and in cookies, while PHP, Python and the lookups here read
 * it as the six bytes it is.  No browser form sends one (JavaScript's
 * deprecated escape() does), so the guard refuses a source holding one
 * rather than read it two ways.  Linear in s_len.
 */
bool mw_has_u_escape(const char *s, size_t s_len);

/* Also split parameters on ';' (Perl CGI.pm style), not only on '&'. */
#define MW_PARAM_SEMICOLON 1u

/*
 * Finds parameter name in a QUERY_STRING or an
 * application/x-www-form-urlencoded body: parameters separated by '&' (and
 * ';' with MW_PARAM_SEMICOLON), name and value split at the first '=' (none:
 * the value is empty), '+' decoded as a space and %XX as a byte; a '%' not
 * followed by two hex digits is kept literally.  A parameter names name
 * when its decoded name is name, or when both come out the same (and not
 * empty) the way PHP files names: cut at a NUL, leading spaces dropped,
 * ' ' and '.' as '_', "n[...]" as n, a '[' without ']' as '_' (so "+op",
 * "op[]" and "op%00x" all name "op"; see lookup.c).  The decoded value is
 * written to buf.  The first match wins.  Linear in s_len.
 */
suspect_rc_t mw_param_find(const char *s, size_t s_len, unsigned flags,
                           const char *name, size_t name_len, char *buf,
                           size_t size, size_t *len);

/*
 * Whether parameter name occurs in s (split and named as by
 * mw_param_find()) with the decoded value value[0..value_len): ANY
 * occurrence, not only the first, since apps disagree on which one counts
 * (PHP takes the last, CGI.pm the first).  value NULL: the name only has to
 * occur (with any value, even none).  SUSPECT_OK, SUSPECT_E_NOTFOUND, or
 * SUSPECT_E_INVAL (empty name, NULL with a length).  Linear in s_len; no
 * buffer.
 */
suspect_rc_t mw_param_match(const char *s, size_t s_len, unsigned flags,
                            const char *name, size_t name_len,
                            const char *value, size_t value_len);

/*
 * True when parameter name occurs in s more than once (names compared as by
 * mw_param_find(): "member" and "+member" are one) and two occurrences
 * have different decoded values (a parameter without '=' has the empty
 * value): then which one the app reads depends on its parser, and a value
 * taken from it is not a reliable identity.  The same value repeated is not
 * ambiguous; bad arguments are not either.  Linear in s_len; no buffer.
 */
bool mw_param_ambiguous(const char *s, size_t s_len, unsigned flags,
                        const char *name, size_t name_len);

/*
 * True when the plain (not urlencoded) parameter name raw[0..raw_len), a
 * multipart field's, names parameter name as mw_param_find() compares
 * names: the same bytes, or the same non-empty PHP form.
 */
bool mw_param_name_is(const char *raw, size_t raw_len, const char *name,
                      size_t name_len);

/* mw_param_find() split on '&' and ';' (MW_PARAM_SEMICOLON). */
suspect_rc_t mw_param_find_semicolon(const char *s, size_t s_len,
                                     const char *name, size_t name_len,
                                     char *buf, size_t size, size_t *len);

/* mw_param_find() over QUERY_STRING, '&' only. */
suspect_rc_t mw_query_find(const char *qs, size_t qs_len, const char *name,
                           size_t name_len, char *buf, size_t size,
                           size_t *len);

/* mw_param_find() over a urlencoded body, '&' only. */
suspect_rc_t mw_form_find(const char *body, size_t body_len, const char *name,
                          size_t name_len, char *buf, size_t size, size_t *len);

/*
 * Writes the CGI variable of HTTP header name into buf, NUL-terminated:
 * "HTTP_" + the name in upper case with '-' as '_' (X-Member-Code ->
 * HTTP_X_MEMBER_CODE), except Content-Type and Content-Length, which CGI
 * passes as CONTENT_TYPE and CONTENT_LENGTH.  *len gets the length without
 * the NUL.  SUSPECT_E_INVAL when name is empty or not an HTTP token;
 * SUSPECT_E_FULL when buf cannot hold the result and its NUL.
 */
suspect_rc_t mw_header_var(const char *name, size_t name_len, char *buf,
                           size_t size, size_t *len);

/* ---- addresses and trusted proxies ------------------------------------- */

#define MW_AF_V4 4
#define MW_AF_V6 6

/* An address: family MW_AF_V4 (bytes[0..3]) or MW_AF_V6 (bytes[0..15]). */
typedef struct mw_addr {
    int family;
    uint8_t bytes[16];
} mw_addr_t;

/*
 * Parses an IPv4 (dotted quad) or IPv6 address, as REMOTE_ADDR holds it.
 * An IPv4-mapped IPv6 address (::ffff:a.b.c.d) becomes IPv4; an IPv6 zone
 * ("%eth0") is dropped.  SUSPECT_E_INVAL for anything else.
 */
suspect_rc_t mw_addr_parse(const char *s, size_t len, mw_addr_t *out);

/* An address block: addr with the bits after prefix zero. */
typedef struct mw_cidr {
    mw_addr_t addr;
    unsigned prefix;
} mw_cidr_t;

/*
 * Parses "10.0.0.0/8", "::1/128" or a bare address (a /32 or /128).  An
 * IPv4-mapped block of /96 or more becomes the IPv4 block.  Fails with
 * SUSPECT_E_CONFIG and a message naming the input: not an address, a
 * missing or bad prefix length, a prefix too long for the family, or bits
 * set after the prefix (a typo such as 10.0.0.1/8 is refused, not masked).
 */
suspect_rc_t mw_cidr_parse(const char *s, size_t len, mw_cidr_t *out,
                           suspect_err_t *err);

/* True when a lies inside c (same family, same first c->prefix bits). */
bool mw_cidr_contains(const mw_cidr_t *c, const mw_addr_t *a);

#define MW_TRUST_MAX 64

/* The trusted proxies: up to MW_TRUST_MAX blocks.  Zero it to start. */
typedef struct mw_trust {
    size_t n;
    mw_cidr_t cidr[MW_TRUST_MAX];
} mw_trust_t;

/*
 * Adds the blocks of list, separated by commas and/or blanks, to t.  Fails
 * as mw_cidr_parse(), or with SUSPECT_E_FULL past MW_TRUST_MAX blocks; on
 * failure t keeps the blocks added before the bad one.
 */
suspect_rc_t mw_trust_parse(mw_trust_t *t, const char *list, size_t len,
                            suspect_err_t *err);

/* True when a lies inside one of t's blocks. */
bool mw_trust_contains(const mw_trust_t *t, const mw_addr_t *a);

/* Forwarded hops looked at, counting from the right. */
#define MW_HOPS_MAX 32

/*
 * What the client address is resolved from.  xff and forwarded are the
 * X-Forwarded-For and Forwarded (RFC 7239) values, NULL when the operator
 * did not enable that header or the request has none.  When both are
 * given, Forwarded is used if it is not blank, else X-Forwarded-For.
 */
typedef struct mw_client_src {
    const mw_trust_t *trust; /* may be NULL: no proxy is trusted */
    const char *remote;      /* REMOTE_ADDR */
    size_t remote_len;
    const char *xff;
    size_t xff_len;
    const char *forwarded;
    size_t forwarded_len;
} mw_client_src_t;

/*
 * The client address.  When REMOTE_ADDR is not a trusted proxy, it is the
 * client and the forwarded headers are ignored entirely (anyone can send
 * them).  Otherwise the header's hops are walked from the right: while the
 * current hop is trusted, step left; the first untrusted hop is the client.
 * A hop that is not an address ("unknown", an obfuscated "_id", garbage, a
 * Forwarded element without for=) stops the walk at the last good address,
 * and so does running out of hops or passing MW_HOPS_MAX of them.  Only
 * SUSPECT_E_INVAL, when REMOTE_ADDR is not an address.
 */
suspect_rc_t mw_client_addr(const mw_client_src_t *src, mw_addr_t *out);

/* Room for any identity text: an IPv6 address, "/128" and a NUL. */
#define MW_ADDR_TEXT_MAX 52

/*
 * Writes the identity of address a into buf (MW_ADDR_TEXT_MAX bytes),
 * NUL-terminated, length in *len: the address masked to v4_prefix (IPv4) or
 * v6_prefix (IPv6) bits, in inet_ntop() form, followed by "/N" unless the
 * prefix is the whole address: 2001:db8:1:2::/64, 192.0.2.7.  A prefix of 0
 * means the default, 32 for IPv4 and 64 for IPv6.  The text holds only hex
 * digits, ':', '.' and '/', which policy/keys.c keeps unescaped.
 * SUSPECT_E_INVAL when a prefix is too long for its family.
 */
suspect_rc_t mw_addr_identity(const mw_addr_t *a, unsigned v4_prefix,
                              unsigned v6_prefix, char *buf, size_t *len);

#endif
