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
 *   nonce (16 random bytes) | account tag (16 bytes) | MAC (32 bytes)
 * with tag = HMAC-SHA-256(key, "suspect-device-account" NUL account)
 * cut to 16 bytes (the account is never in the cookie, only this keyed
 * hash of its normalised value, each part preceded by its length), and
 * MAC = HMAC-SHA-256(key, "suspect-device-cookie" NUL the 41 bytes
 * before it).  libsodium computes the HMACs, draws the nonce, compares in
 * constant time and codes base64.
 *
 * Trust.  An attempt whose account identity has one reading (its value,
 * one way), and that carries a cookie (either name) whose MAC verifies
 * under key or oldKey, not expired, whose tag is that account's under
 * the same key, is a trusted device's: the account identity is counted
 * as the device (one more part to its value, "\x01device:" and the
 * nonce in hex), with the action's limit and lock, so the account's own
 * counter and lock do not apply to it and a device over its limit is
 * locked alone.  The other identities of the route (an address) count
 * as usual.  Anything else (no cookie, a forged, expired or other
 * account's one) counts as the account, as without device cookies.
 *
 * Cost on a counted request of such a route: one cookie lookup, one HMAC
 * for the tag and, with a cookie, one base64 decode and one or two
 * HMACs; none on other routes.
 */
#include "guard_internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <sodium.h>

#define VERSION     1
#define TAG_LEN     16
#define NONCE_LEN   16
#define PAYLOAD_LEN (1 + 8 + NONCE_LEN + TAG_LEN)
#define COOKIE_LEN  (PAYLOAD_LEN + crypto_auth_hmacsha256_BYTES)
#define B64_LEN     (((COOKIE_LEN * 4) + 2) / 3)

static const char account_ctx[] = "suspect-device-account";
static const char cookie_ctx[] = "suspect-device-cookie";

/* HMAC-SHA-256 under key of ctx (with its NUL) and then data[0..n). */
static void hmac(const char *key, const char *ctx, const uint8_t *data,
                 size_t n, uint8_t out[crypto_auth_hmacsha256_BYTES])
{
    crypto_auth_hmacsha256_state st;

    crypto_auth_hmacsha256_init(&st, (const uint8_t *)key, strlen(key));
    crypto_auth_hmacsha256_update(&st, (const uint8_t *)ctx, strlen(ctx) + 1);
    crypto_auth_hmacsha256_update(&st, data, n);
    crypto_auth_hmacsha256_final(&st, out);
    sodium_memzero(&st, sizeof(st));
}

/* The tag of account id under key. */
static void account_tag(const char *key, const suspect_identity_t *id,
                        uint8_t tag[TAG_LEN])
{
    crypto_auth_hmacsha256_state st;
    uint8_t full[crypto_auth_hmacsha256_BYTES];

    crypto_auth_hmacsha256_init(&st, (const uint8_t *)key, strlen(key));
    crypto_auth_hmacsha256_update(&st, (const uint8_t *)account_ctx,
                                  sizeof(account_ctx));
    for (size_t i = 0; i < id->nparts; i++) {
        uint8_t len[4] = {
            (uint8_t)(id->part[i].len >> 24), (uint8_t)(id->part[i].len >> 16),
            (uint8_t)(id->part[i].len >> 8), (uint8_t)id->part[i].len};

        crypto_auth_hmacsha256_update(&st, len, sizeof(len));
        crypto_auth_hmacsha256_update(&st, (const uint8_t *)id->part[i].ptr,
                                      id->part[i].len);
    }
    crypto_auth_hmacsha256_final(&st, full);
    memcpy(tag, full, TAG_LEN);
    sodium_memzero(&st, sizeof(st));
}

bool guard_is_https(const mw_req_t *req)
{
    const char *https = mw_req_param(req, "HTTPS", NULL);
    const char *scheme = mw_req_param(req, "REQUEST_SCHEME", NULL);

    return (https != NULL &&
            (strcasecmp(https, "on") == 0 || strcmp(https, "1") == 0)) ||
           (scheme != NULL && strcasecmp(scheme, "https") == 0);
}

/* Whether raw[0..n) is a cookie, valid at now_s, for the account whose
 * identity is id; *nonce its nonce when it is. */
static bool cookie_valid(const suspect_conf_t *conf, const char *raw, size_t n,
                         const suspect_identity_t *id, int64_t now_s,
                         uint8_t nonce[NONCE_LEN])
{
    const char *keys[2] = {conf->device_key, conf->device_old_key};
    uint8_t c[COOKIE_LEN + 1], mac[crypto_auth_hmacsha256_BYTES];
    uint8_t tag[TAG_LEN];
    size_t len = 0;
    uint64_t exp = 0;

    if (n != B64_LEN ||
        sodium_base642bin(c, sizeof(c), raw, n, NULL, &len, NULL,
                          sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
        len != COOKIE_LEN || c[0] != VERSION) {
        return false;
    }
    for (int i = 1; i <= 8; i++) {
        exp = exp << 8 | c[i];
    }
    if (exp <= (uint64_t)now_s) {
        return false;
    }
    for (size_t k = 0; k < 2 && keys[k] != NULL; k++) {
        hmac(keys[k], cookie_ctx, c, PAYLOAD_LEN, mac);
        if (sodium_memcmp(mac, c + PAYLOAD_LEN, sizeof(mac)) != 0) {
            continue;
        }
        account_tag(keys[k], id, tag);
        if (sodium_memcmp(tag, c + 9 + NONCE_LEN, TAG_LEN) != 0) {
            return false; /* another account's device */
        }
        memcpy(nonce, c + 9, NONCE_LEN);
        return true;
    }
    return false;
}

/* Whether the request carries a cookie valid for account id (either
 * name); *nonce its nonce when it does. */
static bool device_of(guard_call_t *c, const suspect_identity_t *id,
                      int64_t now_s, uint8_t nonce[NONCE_LEN])
{
    const suspect_conf_t *conf = c->g->conf;
    const char *hdr = mw_req_param(c->req, "HTTP_COOKIE", NULL);
    char name[80], val[B64_LEN + 8];

    for (int host = 0; host < 2 && hdr != NULL; host++) {
        size_t len = 0;

        snprintf(name, sizeof(name), "%s%s", host ? "__Host-" : "",
                 conf->device_name);
        if (mw_cookie_find(hdr, strlen(hdr), name, strlen(name), val,
                           sizeof(val), &len) == SUSPECT_OK &&
            cookie_valid(conf, val, len, id, now_s, nonce)) {
            return true;
        }
    }
    return false;
}

void guard_device_apply(guard_call_t *c, const guard_route_t *r,
                        suspect_identity_t *ids, const size_t *from, size_t n,
                        mw_resolution_t *res, char part[GUARD_DEVICE_PART])
{
    const suspect_conf_t *conf = c->g->conf;
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
    if (conf->device_key == NULL || readings != 1) {
        return; /* none, missing, or two readings: the account counts */
    }
    res->device = true;
    account_tag(conf->device_key, &ids[at], res->device_tag);
    if (ids[at].nparts == SUSPECT_MAX_PARTS ||
        !device_of(c, &ids[at], res->verdict.now_ms / 1000, nonce)) {
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

    if (!res->device || conf->device_key == NULL) {
        return 0;
    }
    exp = (uint64_t)(now_ms / 1000) + conf->device_lifetime_s;
    c[0] = VERSION;
    for (int i = 8; i >= 1; i--) {
        c[i] = (uint8_t)exp;
        exp >>= 8;
    }
    randombytes_buf(c + 9, NONCE_LEN);
    memcpy(c + 9 + NONCE_LEN, res->device_tag, TAG_LEN);
    hmac(conf->device_key, cookie_ctx, c, PAYLOAD_LEN, c + PAYLOAD_LEN);
    sodium_bin2base64(b64, sizeof(b64), c, sizeof(c),
                      sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    n = snprintf(buf, size,
                 "Set-Cookie: %s%s=%s; Path=/; Max-Age=%u; HttpOnly; "
                 "SameSite=Lax%s\r\n",
                 https ? "__Host-" : "", conf->device_name, b64,
                 conf->device_lifetime_s, https ? "; Secure" : "");
    return n > 0 && (size_t)n < size ? (size_t)n : 0;
}

bool guard_device_init(void)
{
    return sodium_init() >= 0;
}
