/*
 * redisutil.c - the Redis store's helpers that need no hiredis.
 *
 * URL forms (suspect_redis.h):
 *   redis://[[user]:password@]host[:port][/db]
 *   unix:///path/to.sock[?db=N][&password=P][&user=U]
 * user and password are %XX-decoded; a host in brackets is an IPv6
 * address.  Everything is copied into fixed buffers: a field that does not
 * fit is an error, never truncated.
 *
 * Hit ids: Redis sorted-set members must be unique or two hits in the same
 * millisecond collapse into one.  Each connection draws a random 64-bit salt
 * (getrandom) and counts; the id is salt and counter laid out like a GUID,
 * as the .NET code's members are.  Ids from one connection never repeat;
 * ids from two connections collide only if their salts are equal and their
 * counters meet, a 2^-64 event per pair.
 *
 * RESP: commands are encoded here into one buffer (lengths by hand, no
 * printf), and the answer of a decision, an array of integers, is decoded
 * here when it arrived whole in one read; anything else (errors, other
 * types, a reply split over reads) is left to hiredis's reader.
 */
#include "redisutil.h"
#include "text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

/* ---- the outage journal's identities ------------------------------------
 */

/* Rebuilds ident's key (window key, ":locked", NUL) as a suspect_key_t. */
void redis_carry_key(const redis_carry_ident_t *ident, suspect_key_t *out)
{
    size_t lock_len = ident->window_len + SUSPECT_LOCK_SUFFIX_LEN;

    out->window_len = ident->window_len;
    out->lock_len = lock_len;
    memcpy(out->buf, ident->key, lock_len + 1);
}

/* Copies s[0..len) into dst (size REDIS_FIELD_MAX), %XX-decoded when
 * decode; false when it does not fit or an escape is malformed. */
static bool copy_field(char *dst, const char *s, size_t len, bool decode)
{
    size_t o = 0;

    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (decode && c == '%') {
            int hi, lo;
            if (i + 2 >= len) {
                return false;
            }
            hi = hex_value(s[i + 1]);
            lo = hex_value(s[i + 2]);
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
                return false;
            }
            c = (char)(hi * 16 + lo);
            i += 2;
        }
        if (o + 1 >= REDIS_FIELD_MAX) {
            return false;
        }
        dst[o++] = c;
    }
    dst[o] = '\0';
    return true;
}

/* Parses the decimal number s[0..len) into *out, within lo..hi. */
static bool parse_int(const char *s, size_t len, int lo, int hi, int *out)
{
    long v = 0;

    if (len == 0 || len > 9) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
        v = v * 10 + (s[i] - '0');
    }
    if (v < lo || v > hi) {
        return false;
    }
    *out = (int)v;
    return true;
}

static suspect_rc_t bad_url(suspect_err_t *err, const char *why)
{
    return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0, "redis URL: %s", why);
}

/* Parses "[user]:password" (userinfo of a redis:// URL). */
static suspect_rc_t parse_userinfo(const char *s, size_t len, redis_addr_t *a,
                                   suspect_err_t *err)
{
    const char *colon = memchr(s, ':', len);

    if (colon == NULL) {
        return bad_url(err, "write the password as :password@");
    }
    if (!copy_field(a->user, s, (size_t)(colon - s), true) ||
        !copy_field(a->password, colon + 1, len - (size_t)(colon - s) - 1,
                    true)) {
        return bad_url(err, "bad or too long user or password");
    }
    return SUSPECT_OK;
}

/* Parses "host[:port]" or "[v6]:port". */
static suspect_rc_t parse_hostport(const char *s, size_t len, redis_addr_t *a,
                                   suspect_err_t *err)
{
    const char *end = s + len, *host = s, *hend, *port = NULL;

    if (len > 0 && s[0] == '[') {
        host = s + 1;
        hend = memchr(host, ']', len - 1);
        if (hend == NULL) {
            return bad_url(err, "unclosed '[' in host");
        }
        if (hend + 1 < end) {
            if (hend[1] != ':') {
                return bad_url(err, "junk after ']'");
            }
            port = hend + 2;
        }
    } else {
        hend = memchr(s, ':', len);
        if (hend != NULL) {
            port = hend + 1;
        } else {
            hend = end;
        }
    }
    if (hend == host ||
        !copy_field(a->host, host, (size_t)(hend - host), false)) {
        return bad_url(err, "missing or too long host");
    }
    if (port != NULL &&
        !parse_int(port, (size_t)(end - port), 1, 65535, &a->port)) {
        return bad_url(err, "port must be 1..65535");
    }
    return SUSPECT_OK;
}

static suspect_rc_t parse_tcp(const char *s, redis_addr_t *a,
                              suspect_err_t *err)
{
    size_t alen = strcspn(s, "/?#");
    const char *at = NULL, *rest = s + alen;
    suspect_rc_t rc;

    for (size_t i = 0; i < alen; i++) {
        at = s[i] == '@' ? s + i : at;
    }
    if (at != NULL) {
        rc = parse_userinfo(s, (size_t)(at - s), a, err);
        if (rc != SUSPECT_OK) {
            return rc;
        }
        alen -= (size_t)(at + 1 - s);
        s = at + 1;
    }
    rc = parse_hostport(s, alen, a, err);
    if (rc != SUSPECT_OK) {
        return rc;
    }
    if (*rest == '/' && rest[1] != '\0' &&
        !parse_int(rest + 1, strlen(rest + 1), 0, 1000000, &a->db)) {
        return bad_url(err, "db must be a number");
    }
    if (*rest != '\0' && *rest != '/') {
        return bad_url(err, "no query or fragment in redis:// URLs");
    }
    snprintf(a->name, sizeof(a->name), "%s:%d", a->host, a->port);
    return SUSPECT_OK;
}

/* Parses one "name=value" of a unix:// query. */
static suspect_rc_t parse_param(const char *s, size_t len, redis_addr_t *a,
                                suspect_err_t *err)
{
    const char *eq = memchr(s, '=', len);
    size_t nlen, vlen;
    const char *v;

    if (eq == NULL) {
        return bad_url(err, "query parameters are name=value");
    }
    nlen = (size_t)(eq - s);
    v = eq + 1;
    vlen = len - nlen - 1;
    if (nlen == 2 && memcmp(s, "db", 2) == 0) {
        return parse_int(v, vlen, 0, 1000000, &a->db)
                   ? SUSPECT_OK
                   : bad_url(err, "db must be a number");
    }
    if (nlen == 8 && memcmp(s, "password", 8) == 0) {
        return copy_field(a->password, v, vlen, true)
                   ? SUSPECT_OK
                   : bad_url(err, "bad or too long password");
    }
    if (nlen == 4 && memcmp(s, "user", 4) == 0) {
        return copy_field(a->user, v, vlen, true)
                   ? SUSPECT_OK
                   : bad_url(err, "bad or too long user");
    }
    return bad_url(err, "unknown query parameter (db, password, user)");
}

static suspect_rc_t parse_unix(const char *s, redis_addr_t *a,
                               suspect_err_t *err)
{
    size_t plen = strcspn(s, "?");
    const char *q = s + plen;
    suspect_rc_t rc = SUSPECT_OK;

    a->is_unix = true;
    if (plen < 2 || s[0] != '/' || !copy_field(a->host, s, plen, false)) {
        return bad_url(err, "unix:// needs an absolute socket path");
    }
    while (*q != '\0' && rc == SUSPECT_OK) {
        size_t len;
        q++;
        len = strcspn(q, "&");
        rc = parse_param(q, len, a, err);
        q += len;
    }
    snprintf(a->name, sizeof(a->name), "%s", a->host);
    return rc;
}

suspect_rc_t redis_addr_parse(const char *url, redis_addr_t *out,
                              suspect_err_t *err)
{
    memset(out, 0, sizeof(*out));
    out->port = 6379;
    if (url == NULL) {
        return bad_url(err, "none given");
    }
    if (strncmp(url, "redis://", 8) == 0) {
        return parse_tcp(url + 8, out, err);
    }
    if (strncmp(url, "unix://", 7) == 0) {
        return parse_unix(url + 7, out, err);
    }
    return bad_url(err, "must start with redis:// or unix://");
}

/* ---- hit ids -------------------------------------------------------------
 */

void redis_ids_init(redis_ids_t *ids)
{
    uint64_t salt = 0;

    if (getrandom(&salt, sizeof(salt), GRND_NONBLOCK) != sizeof(salt)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        salt = ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^
               ((uint64_t)(uintptr_t)ids << 16);
    }
    ids->salt = salt;
    ids->counter = 0;
}

/* Writes the low 4 * digits bits of v as hex digits at p. */
static char *put_hex(char *p, uint64_t v, int digits)
{
    for (int i = digits - 1; i >= 0; i--) {
        p[i] = hex_lower[v & 15];
        v >>= 4;
    }
    return p + digits;
}

void redis_ids_next(redis_ids_t *ids, char buf[REDIS_ID_LEN + 1])
{
    uint64_t s = ids->salt, c = ids->counter++;
    char *p = buf;

    /* 8-4-4-4-12 hex digits: the salt's 64 bits, then the counter's.
     * By hand: this runs on every decision. */
    p = put_hex(p, s >> 32, 8);
    *p++ = '-';
    p = put_hex(p, s >> 16, 4);
    *p++ = '-';
    p = put_hex(p, s, 4);
    *p++ = '-';
    p = put_hex(p, c >> 48, 4);
    *p++ = '-';
    p = put_hex(p, c, 12);
    *p = '\0';
}

size_t redis_fmt_i64(char *buf, int64_t v)
{
    char tmp[24];
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    size_t n = 0, len = 0;

    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (v < 0) {
        buf[len++] = '-';
    }
    while (n > 0) {
        buf[len++] = tmp[--n];
    }
    buf[len] = '\0';
    return len;
}

/* ---- RESP ----------------------------------------------------------------
 */

static size_t count_digits(size_t v)
{
    size_t d = 1;

    while (v >= 10) {
        v /= 10;
        d++;
    }
    return d;
}

/* Writes v in decimal at p; returns the end. */
static char *put_uint(char *p, size_t v)
{
    char tmp[24];
    size_t n = 0;

    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n > 0) {
        *p++ = tmp[--n];
    }
    return p;
}

size_t redis_resp_size(int argc, const size_t *len)
{
    size_t n = 1 + count_digits((size_t)argc) + 2;

    for (int i = 0; i < argc; i++) {
        n += 1 + count_digits(len[i]) + 2 + len[i] + 2;
    }
    return n;
}

void redis_resp_encode(char *out, int argc, const char *const *argv,
                       const size_t *len)
{
    char *p = out;

    /* By hand: hiredis formats every length with sprintf, which was half
     * of the client's instructions per decision. */
    *p++ = '*';
    p = put_uint(p, (size_t)argc);
    *p++ = '\r';
    *p++ = '\n';
    for (int i = 0; i < argc; i++) {
        *p++ = '$';
        p = put_uint(p, len[i]);
        *p++ = '\r';
        *p++ = '\n';
        if (len[i] > 0) {
            memcpy(p, argv[i], len[i]);
        }
        p += len[i];
        *p++ = '\r';
        *p++ = '\n';
    }
}

/* Reads "<integer>\r\n" at *pp (before end), at most 18 digits so it
 * cannot overflow; advances *pp past it. */
static bool resp_int_line(const char **pp, const char *end, int64_t *out)
{
    const char *p = *pp;
    bool neg = p < end && *p == '-';
    uint64_t u = 0;
    int nd = 0;

    p += neg;
    while (p < end && *p >= '0' && *p <= '9') {
        if (nd++ == 18) {
            return false;
        }
        u = u * 10 + (uint64_t)(*p++ - '0');
    }
    if (nd == 0 || end - p < 2 || p[0] != '\r' || p[1] != '\n') {
        return false;
    }
    *out = neg ? -(int64_t)u : (int64_t)u;
    *pp = p + 2;
    return true;
}

bool redis_resp_ints(const char *buf, size_t len, int64_t *v, size_t n)
{
    const char *p = buf, *end = buf + len;
    int64_t count;

    if (len == 0 || *p++ != '*' || !resp_int_line(&p, end, &count) ||
        count != (int64_t)n) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (p == end || *p++ != ':' || !resp_int_line(&p, end, &v[i])) {
            return false;
        }
    }
    return p == end;
}

/* ---- backoff ----------------------------------------------------------
 */

bool redis_backoff_ready(const redis_backoff_t *b, int64_t mono_ms)
{
    return mono_ms >= b->not_before_ms;
}

void redis_backoff_fail(redis_backoff_t *b, int64_t mono_ms)
{
    if (b->delay_ms == 0) {
        b->delay_ms = REDIS_BACKOFF_MIN_MS;
    } else if (b->delay_ms < REDIS_BACKOFF_MAX_MS) {
        b->delay_ms *= 2;
        if (b->delay_ms > REDIS_BACKOFF_MAX_MS) {
            b->delay_ms = REDIS_BACKOFF_MAX_MS;
        }
    }
    b->not_before_ms = mono_ms + b->delay_ms;
}

void redis_backoff_ok(redis_backoff_t *b)
{
    b->delay_ms = 0;
    b->not_before_ms = 0;
}

void redis_more_keys(const suspect_key_t *k, redis_more_keys_t *m)
{
    memcpy(m->slots, k->buf, k->window_len);
    memcpy(m->slots + k->window_len, ":slots", 6);
    m->slots_len = k->window_len + 6;
    memcpy(m->offences, k->buf, k->window_len);
    memcpy(m->offences + k->window_len, ":offences", 9);
    m->offences_len = k->window_len + 9;
}

void redis_slot_id(uint64_t id, char out[REDIS_SLOT_ID_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";

    for (int i = REDIS_SLOT_ID_LEN - 1; i >= 0; i--, id >>= 4) {
        out[i] = hex[id & 15];
    }
    out[REDIS_SLOT_ID_LEN] = '\0';
}
