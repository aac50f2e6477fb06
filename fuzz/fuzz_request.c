/*
 * fuzz_request.c - libFuzzer target for the request parsers of the
 * middleware (middleware/request/lookup.c, addr.c, and the Accept
 * header of middleware/response/accept.c): cookies, query strings and
 * urlencoded forms (with PHP's parameter naming), header variable names,
 * addresses, CIDR blocks, trusted proxy lists, X-Forwarded-For and Forwarded,
 * address identities, Accept.
 *
 * Input: one selector byte, then fields separated by '\n' (the last field
 * takes the rest, newlines included).  Each selector drives one parser
 * family and checks what the parsers promise each other:
 *   0 cookie   a small buffer gives SUSPECT_E_FULL exactly when the value
 *              is longer, with the same first bytes (both readings:
 *              mw_cookie_find(), CGI::Cookie's); the %uXXXX scan;
 *   1 params   find, match and ambiguous agree: the value find returns
 *              matches; when not ambiguous, no other value does; query and
 *              form lookups are find without ';';
 *   2 header   the variable name is upper case, "HTTP_" or CONTENT_*;
 *   3 address  parse, print (full prefix) and parse again give the same
 *              address; identities of any prefix hold only address bytes;
 *   4 cidr     a parsed block contains its own address; a proxy list
 *              holds at most MW_TRUST_MAX blocks;
 *   5 client   the client address behind trusted proxies: an untrusted
 *              REMOTE_ADDR is the answer whatever the headers say;
 *   6 accept   the body kind is one of the three.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "response/accept.h"
#include "request/lookup.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_request: check failed: %s\n", #cond);        \
            abort();                                                           \
        }                                                                      \
    } while (0)

#define NFIELDS 4
#define VALBUF  4096
#define SMALL   5

typedef struct field {
    const char *p;
    size_t n;
} field_t;

/* Splits data into NFIELDS fields at '\n'; the last one takes the rest. */
static void split(const char *p, size_t n, field_t *f)
{
    for (int i = 0; i < NFIELDS; i++) {
        const char *nl = i < NFIELDS - 1 ? memchr(p, '\n', n) : NULL;
        size_t k = nl != NULL ? (size_t)(nl - p) : n;

        f[i].p = p;
        f[i].n = k;
        p += nl != NULL ? k + 1 : k;
        n -= nl != NULL ? k + 1 : k;
    }
}

typedef suspect_rc_t (*find_fn)(const char *, size_t, const char *, size_t,
                                char *, size_t, size_t *);

/* fn with a big and a small buffer: FULL exactly when it does not fit. */
static suspect_rc_t find_both(find_fn fn, field_t s, field_t name, char *buf,
                              size_t *len)
{
    char small[SMALL];
    size_t slen = 0;
    suspect_rc_t rc = fn(s.p, s.n, name.p, name.n, buf, VALBUF, len);
    suspect_rc_t src = fn(s.p, s.n, name.p, name.n, small, SMALL, &slen);

    if (rc == SUSPECT_OK) {
        CHECK(*len <= VALBUF);
        CHECK(src == (*len <= SMALL ? SUSPECT_OK : SUSPECT_E_FULL));
        CHECK(slen == *len);
        CHECK(memcmp(small, buf, *len < SMALL ? *len : SMALL) == 0);
    } else if (rc == SUSPECT_E_FULL) {
        CHECK(*len > VALBUF && src == SUSPECT_E_FULL);
    } else {
        CHECK(src == rc);
    }
    return rc;
}

static void do_cookie(const field_t *f)
{
    static char buf[VALBUF];
    size_t len;

    find_both(mw_cookie_find, f[3], f[0], buf, &len);
    find_both(mw_cookie_find_cgi, f[3], f[0], buf, &len);
    (void)mw_has_u_escape(f[3].p, f[3].n);
}

static suspect_rc_t find_semi(const char *s, size_t n, const char *name,
                              size_t nl, char *buf, size_t size, size_t *len)
{
    return mw_param_find(s, n, MW_PARAM_SEMICOLON, name, nl, buf, size, len);
}

/* find, match and ambiguous over one parameter string. */
static void params_agree(field_t s, field_t name, unsigned flags)
{
    static char buf[VALBUF + 1];
    size_t len = 0;
    suspect_rc_t rc =
        find_both(flags ? find_semi : mw_query_find, s, name, buf, &len);
    suspect_rc_t any = mw_param_match(s.p, s.n, flags, name.p, name.n, NULL, 0);
    bool amb = mw_param_ambiguous(s.p, s.n, flags, name.p, name.n);

    if (rc == SUSPECT_E_INVAL) {
        CHECK(any == SUSPECT_E_INVAL && !amb);
        return;
    }
    CHECK((rc == SUSPECT_E_NOTFOUND) == (any == SUSPECT_E_NOTFOUND));
    CHECK(rc != SUSPECT_E_NOTFOUND || !amb);
    if (rc != SUSPECT_OK) {
        return;
    }
    CHECK(mw_param_match(s.p, s.n, flags, name.p, name.n, buf, len) ==
          SUSPECT_OK);
    buf[len] = 'x'; /* another value: found only when ambiguous */
    if (!amb) {
        CHECK(mw_param_match(s.p, s.n, flags, name.p, name.n, buf, len + 1) ==
              SUSPECT_E_NOTFOUND);
    }
}

static void do_params(const field_t *f)
{
    static char a[VALBUF], b[VALBUF];
    size_t la = 0, lb = 0;
    suspect_rc_t ra, rb;

    params_agree(f[3], f[0], 0);
    params_agree(f[3], f[0], MW_PARAM_SEMICOLON);
    ra = mw_form_find(f[3].p, f[3].n, f[0].p, f[0].n, a, VALBUF, &la);
    rb = mw_param_find(f[3].p, f[3].n, 0, f[0].p, f[0].n, b, VALBUF, &lb);
    CHECK(ra == rb);
    CHECK(ra != SUSPECT_OK || (la == lb && memcmp(a, b, la) == 0));
}

static void do_header(const field_t *f)
{
    char buf[128];
    size_t len = 0;

    if (mw_header_var(f[3].p, f[3].n, buf, sizeof(buf), &len) != SUSPECT_OK) {
        return;
    }
    CHECK(len < sizeof(buf) && buf[len] == '\0' && strlen(buf) == len);
    CHECK(strncmp(buf, "HTTP_", 5) == 0 || strcmp(buf, "CONTENT_TYPE") == 0 ||
          strcmp(buf, "CONTENT_LENGTH") == 0);
    for (size_t i = 0; i < len; i++) {
        CHECK(buf[i] != '-' && !(buf[i] >= 'a' && buf[i] <= 'z'));
    }
}

/* The identity text holds only what keys.c keeps as an address. */
static void check_identity(const mw_addr_t *a, unsigned v4, unsigned v6)
{
    char text[MW_ADDR_TEXT_MAX];
    size_t len;

    if (mw_addr_identity(a, v4, v6, text, &len) != SUSPECT_OK) {
        CHECK(v4 > 32 || v6 > 128);
        return;
    }
    CHECK(len < MW_ADDR_TEXT_MAX && strlen(text) == len);
    CHECK(strspn(text, "0123456789abcdefABCDEF:./") == len);
}

static void do_address(unsigned sel, const field_t *f)
{
    char text[MW_ADDR_TEXT_MAX];
    mw_addr_t a, b;
    size_t len;

    if (mw_addr_parse(f[3].p, f[3].n, &a) != SUSPECT_OK) {
        return;
    }
    CHECK(a.family == MW_AF_V4 || a.family == MW_AF_V6);
    CHECK(mw_addr_identity(&a, 32, 128, text, &len) == SUSPECT_OK);
    CHECK(mw_addr_parse(text, len, &b) == SUSPECT_OK);
    CHECK(a.family == b.family && memcmp(a.bytes, b.bytes, 16) == 0);
    check_identity(&a, sel % 40, sel % 140);
    check_identity(&a, 0, 0);
}

static void do_cidr(const field_t *f)
{
    static mw_trust_t t;
    mw_cidr_t c;
    mw_addr_t a;

    if (mw_cidr_parse(f[0].p, f[0].n, &c, NULL) == SUSPECT_OK) {
        CHECK(c.prefix <= (c.addr.family == MW_AF_V4 ? 32u : 128u));
        CHECK(mw_cidr_contains(&c, &c.addr));
        if (mw_addr_parse(f[1].p, f[1].n, &a) == SUSPECT_OK &&
            mw_cidr_contains(&c, &a)) {
            CHECK(a.family == c.addr.family);
        }
    }
    memset(&t, 0, sizeof(t));
    (void)mw_trust_parse(&t, f[3].p, f[3].n, NULL);
    CHECK(t.n <= MW_TRUST_MAX);
    for (size_t i = 0; i < t.n; i++) {
        CHECK(mw_trust_contains(&t, &t.cidr[i].addr));
    }
}

static void do_client(unsigned sel, const field_t *f)
{
    static mw_trust_t t;
    mw_client_src_t src;
    mw_addr_t out, remote;
    suspect_rc_t rc;

    memset(&t, 0, sizeof(t));
    (void)mw_trust_parse(&t, f[0].p, f[0].n, NULL);
    memset(&src, 0, sizeof(src));
    src.trust = (sel & 1) ? &t : NULL;
    src.remote = f[1].p;
    src.remote_len = f[1].n;
    if (sel & 2) {
        src.xff = f[2].p;
        src.xff_len = f[2].n;
    }
    if (sel & 4) {
        src.forwarded = f[3].p;
        src.forwarded_len = f[3].n;
    }
    rc = mw_client_addr(&src, &out);
    if (mw_addr_parse(f[1].p, f[1].n, &remote) != SUSPECT_OK) {
        CHECK(rc == SUSPECT_E_INVAL);
        return;
    }
    CHECK(rc == SUSPECT_OK);
    if (src.trust == NULL || !mw_trust_contains(&t, &remote)) {
        CHECK(out.family == remote.family &&
              memcmp(out.bytes, remote.bytes, 16) == 0);
    }
    check_identity(&out, 0, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    field_t f[NFIELDS];
    mw_body_kind_t k;

    if (size < 1) {
        return 0;
    }
    split((const char *)data + 1, size - 1, f);
    switch (data[0] & 7) {
    case 0:
        do_cookie(f);
        break;
    case 1:
        do_params(f);
        break;
    case 2:
        do_header(f);
        break;
    case 3:
        do_address(data[0] >> 3, f);
        break;
    case 4:
        do_cidr(f);
        break;
    case 5:
        do_client(data[0] >> 3, f);
        break;
    default:
        k = mw_accept_choose(f[3].p, f[3].n);
        CHECK(k == MW_BODY_HTML || k == MW_BODY_PROBLEM || k == MW_BODY_JSON);
        break;
    }
    return 0;
}
