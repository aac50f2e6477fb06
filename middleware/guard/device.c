/*
 * device.c - device cookies: a browser that signed in to an account is
 * counted apart from everyone else who tries that account (OWASP, "Slow
 * Down Online Guessing Attacks with Device Cookies"; docs/suspect-xml.md,
 * "Device cookies").
 *
 * The cookie.  When an attempt of a route with an <Identity
 * account="yes"> succeeds (its <Success>/<Failure> say so from the
 * response's head), the response gets one more header:
 *   Set-Cookie: NAME=VALUE; Path=/; Max-Age=LIFETIME; HttpOnly;
 *               SameSite=Lax[; Secure]
 * NAME is <DeviceCookie name>, "__Host-" before it on HTTPS (HTTPS=on,
 * or REQUEST_SCHEME=https).  VALUE is base64url (no padding) of
 *   version (1 byte, 1) | expiry (8 bytes, seconds, big-endian) |
 *   nonce (16 random bytes) | MAC (32 bytes)
 * with MAC = HMAC-SHA-256(key, 0x01 | the 25 bytes before it | account),
 * the account being its identity's normalised value, each part preceded
 * by its length (4 bytes): the cookie binds the account as a keyed hash,
 * never holds it, and one HMAC both proves the cookie was made here and
 * that it was made for this account.  libsodium computes the HMACs (the
 * keys' inner and outer states prepared once per guard), compares in
 * constant time and codes base64; the nonce is suspect_random_bytes()'s
 * (no cookie when it fails).
 *
 * Trust.  An attempt whose account identity has one reading (its value,
 * one way), and that carries a cookie (either name) not expired whose
 * MAC, for this account, verifies under key or oldKey, is a trusted
 * device's: the account identity is counted as the device (one more part
 * to its value, "\x01device:" and the nonce in hex), with the action's
 * limit and lock, so the account's own counter and lock do not apply to
 * it and a device over its limit is locked alone.  The other identities
 * of the route (an address) count as usual.  Anything else (no cookie, a
 * forged, cut, expired or other account's one) counts as the account, as
 * without device cookies.
 *
 * Cost on a counted request of such a route: a copy of the account's
 * value (at most MW_DEVICE_ACCT_MAX bytes; a longer one gets no device) and
 * a cookie lookup; with a cookie, a base64 decode and one or two HMACs of
 * one block each.  bench-guard measures it.
 */
#include "guard_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sodium.h>

#include "alloc.h"
#include "random.h"

#define VERSION     1
#define NONCE_LEN   16
#define PAYLOAD_LEN (1 + 8 + NONCE_LEN)
#define COOKIE_LEN  (PAYLOAD_LEN + crypto_auth_hmacsha256_BYTES)
#define B64_LEN     (((COOKIE_LEN * 4) + 2) / 3)
#define CONTEXT     0x01 /* the first byte MACed: what the MAC is for */

/* The keys' HMAC states after their key blocks: [0] key, [1] oldKey. */
struct guard_device {
    crypto_auth_hmacsha256_state st[2];
    size_t nkeys;
};

/* The MAC of payload and the account acct[0..n) under key k of d. */
static void mac_of(const guard_device_t *d, size_t k,
                   const uint8_t payload[PAYLOAD_LEN], const uint8_t *acct,
                   size_t n, uint8_t out[crypto_auth_hmacsha256_BYTES])
{
    crypto_auth_hmacsha256_state st = d->st[k];
    const uint8_t ctx = CONTEXT;

    crypto_auth_hmacsha256_update(&st, &ctx, 1);
    crypto_auth_hmacsha256_update(&st, payload, PAYLOAD_LEN);
    crypto_auth_hmacsha256_update(&st, acct, n);
    crypto_auth_hmacsha256_final(&st, out);
    sodium_memzero(&st, sizeof(st));
}

/* The account identity id as MACed (each part's length, 4 bytes, then
 * its bytes) into out (MW_DEVICE_ACCT_MAX); its length, 0 when too long. */
static size_t account_bytes(const suspect_identity_t *id,
                            uint8_t out[MW_DEVICE_ACCT_MAX])
{
    size_t n = 0;

    for (size_t i = 0; i < id->nparts; i++) {
        size_t len = id->part[i].len;

        if (n + 4 + len > MW_DEVICE_ACCT_MAX) {
            return 0;
        }
        out[n++] = (uint8_t)(len >> 24);
        out[n++] = (uint8_t)(len >> 16);
        out[n++] = (uint8_t)(len >> 8);
        out[n++] = (uint8_t)len;
        memcpy(out + n, id->part[i].ptr, len);
        n += len;
    }
    return n;
}

bool guard_is_https(const mw_req_t *req)
{
    const char *https = mw_req_param(req, "HTTPS", NULL);
    const char *scheme = mw_req_param(req, "REQUEST_SCHEME", NULL);

    return (https != NULL &&
            (strcasecmp(https, "on") == 0 || strcmp(https, "1") == 0)) ||
           (scheme != NULL && strcasecmp(scheme, "https") == 0);
}

/* Whether raw[0..n) is a cookie, valid at now_s, for the account
 * acct[0..alen); *nonce its nonce when it is. */
static bool cookie_valid(const guard_device_t *d, const char *raw, size_t n,
                         const uint8_t *acct, size_t alen, int64_t now_s,
                         uint8_t nonce[NONCE_LEN])
{
    uint8_t c[COOKIE_LEN + 1], mac[crypto_auth_hmacsha256_BYTES];
    size_t len = 0;
    uint64_t exp;

    if (n != B64_LEN ||
        sodium_base642bin(c, sizeof(c), raw, n, NULL, &len, NULL,
                          sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
        len != COOKIE_LEN || c[0] != VERSION) {
        return false;
    }
    exp = guard_get_be64(c + 1);
    if (exp <= (uint64_t)now_s) {
        return false;
    }
    for (size_t k = 0; k < d->nkeys; k++) {
        mac_of(d, k, c, acct, alen, mac);
        if (sodium_memcmp(mac, c + PAYLOAD_LEN, sizeof(mac)) == 0) {
            memcpy(nonce, c + 9, NONCE_LEN);
            return true;
        }
    }
    return false; /* forged, or another account's */
}

/* Whether the request carries a cookie valid for the account
 * acct[0..alen) (either name); *nonce its nonce when it does. */
static bool device_of(guard_call_t *c, const uint8_t *acct, size_t alen,
                      int64_t now_s, uint8_t nonce[NONCE_LEN])
{
    char vals[2][MW_OWN_COOKIE];
    size_t lens[2], hlen = 0;
    const char *hdr = mw_req_param(c->req, "HTTP_COOKIE", &hlen);
    size_t n =
        mw_cookie_find_own(hdr, hlen, c->g->conf->device_name, vals, lens);

    for (size_t i = 0; i < n; i++) {
        if (cookie_valid(c->g->device, vals[i], lens[i], acct, alen, now_s,
                         nonce)) {
            return true;
        }
    }
    return false;
}

void guard_device_apply(guard_call_t *c, const guard_route_t *r,
                        suspect_identity_t *ids, const size_t *from, size_t n,
                        mw_resolution_t *res, char part[GUARD_DEVICE_PART])
{
    uint8_t nonce[NONCE_LEN];
    size_t account = r->nids, at = n, readings = 0;

    res->device = false;
    res->device_trusted = false;
    for (size_t k = 0; k < r->nids; k++) {
        if (r->ids[k].conf->account) {
            account = k;
        }
    }
    for (size_t i = 0; i < n && account < r->nids; i++) {
        if (from[i] == account) {
            at = i;
            readings++;
        }
    }
    if (c->g->device == NULL || readings != 1 ||
        (res->device_acct_len = account_bytes(&ids[at], res->device_acct)) ==
            0) {
        return; /* none, missing, two readings, too long: the account */
    }
    res->device = true;
    if (ids[at].nparts == SUSPECT_MAX_PARTS ||
        !device_of(c, res->device_acct, res->device_acct_len,
                   res->verdict.now_ms / 1000, nonce)) {
        return;
    }
    memcpy(part,
           "\x01"
           "device:",
           8);
    sodium_bin2hex(part + 8, GUARD_DEVICE_PART - 8, nonce, NONCE_LEN);
    ids[at].part[ids[at].nparts].ptr = part;
    ids[at].part[ids[at].nparts].len = 8 + 2 * NONCE_LEN;
    ids[at].nparts++;
    res->device_trusted = true;
}

size_t mw_guard_device_cookie(const mw_guard_t *g, const mw_resolution_t *res,
                              const mw_req_t *req, int64_t now_ms, char *buf,
                              size_t size)
{
    const suspect_conf_t *conf = g->conf;
    uint8_t c[COOKIE_LEN];
    char b64[B64_LEN + 4];
    uint64_t exp;
    bool https = guard_is_https(req);
    int n;

    if (!res->device || g->device == NULL) {
        return 0;
    }
    exp = (uint64_t)(now_ms / 1000) + conf->device_lifetime_s;
    c[0] = VERSION;
    guard_put_be64(c + 1, exp);
    if (suspect_random_bytes(c + 9, NONCE_LEN, NULL) != SUSPECT_OK) {
        return 0;
    }
    mac_of(g->device, 0, c, res->device_acct, res->device_acct_len,
           c + PAYLOAD_LEN);
    sodium_bin2base64(b64, sizeof(b64), c, sizeof(c),
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    n = snprintf(buf, size,
                 "Set-Cookie: %s%s=%s; Path=/; Max-Age=%u; HttpOnly; "
                 "SameSite=Lax%s\r\n",
                 https ? "__Host-" : "", conf->device_name, b64,
                 conf->device_lifetime_s, https ? "; Secure" : "");
    return n > 0 && (size_t)n < size ? (size_t)n : 0;
}

suspect_rc_t guard_device_new(const suspect_conf_t *conf, guard_device_t **out)
{
    const char *keys[2] = {conf->device_key, conf->device_old_key};
    guard_device_t *d;

    *out = NULL;
    if (conf->device_key == NULL) {
        return SUSPECT_OK;
    }
    if (sodium_init() < 0) {
        return SUSPECT_E_IO;
    }
    d = suspect_malloc(sizeof(*d));
    if (d == NULL) {
        return SUSPECT_E_NOMEM;
    }
    d->nkeys = 0;
    for (size_t k = 0; k < 2 && keys[k] != NULL; k++) {
        crypto_auth_hmacsha256_init(&d->st[d->nkeys++],
                                    (const uint8_t *)keys[k], strlen(keys[k]));
    }
    *out = d;
    return SUSPECT_OK;
}

void guard_device_free(guard_device_t *d)
{
    if (d != NULL) {
        sodium_memzero(d, sizeof(*d));
        free(d);
    }
}
