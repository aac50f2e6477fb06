/*
 * keys.c - identity values to store keys, safely.
 *
 * Key formats (the seed's .NET keys by default):
 *   seed:   {prefix}{Action}:{Value}          lock: ...:locked
 *   typed:  {prefix}{Action}:{Type}:{Value}   lock: ...:locked
 * With the hash tag (Redis Cluster), what follows the prefix is put in
 * braces, "{prefix}{{Action}:{Value}}" and "...}:locked", so that Redis
 * Cluster hashes only that part: an identity's window and lock share a
 * slot, and one script holds both.  Braces in values are then escaped
 * too, and refused in the prefix, so the tag always ends where it was
 * closed.
 * A composite identity's value is its parts joined with '_'.
 *
 * Values come from clients, so they are escaped to make the mapping
 * value -> key injective and to keep a window key from ever equalling a lock
 * key (a value ending in ":locked" would otherwise name another identity's
 * lock):
 *   - a part made only of hex digits, ':', '.' and '/' (an IP address or a
 *     prefix, as Suspect itself formats them) is kept as it is, so keys of
 *     IPv6 clients match the .NET system's; such a part has no '%' and never
 *     ends in ":locked";
 *   - any other part keeps printable ASCII and valid UTF-8, and writes
 *     '%', ':', bytes below 0x21, 0x7f and bytes that are not valid UTF-8 as
 *     %XX; inside a composite, '_' too, so parts cannot slide into each other.
 * So in an escaped value every '%' starts a %XX escape, and:
 *   - a value longer than the cap once escaped keeps its head (never cut
 *     inside an escape or a UTF-8 sequence) and ends with "%~" and 32 hex
 *     digits of a SHA-256 digest of the raw parts.  "%~" appears in no
 *     escaped value, so capped values never equal uncapped ones, and the
 *     digest separates capped values from each other.
 */
#include "suspect_policy.h"

#include <string.h>

#include "sha256.h"
#include "text.h"

#define DEFAULT_VALUE_CAP 256
#define MAX_VALUE_CAP     512
#define MAX_PREFIX        128
#define DIGEST_HEX        32
#define DIGEST_TAIL       (2 + DIGEST_HEX) /* "%~" + hex */

bool suspect_name_valid(const char *name, size_t len)
{
    if (name == NULL || len == 0 || len > SUSPECT_ACTION_MAX) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        bool alpha = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
        bool more = c == '_' ||
                    (i > 0 && ((c >= '0' && c <= '9') || c == '-' || c == '.'));
        if (!alpha && !more) {
            return false;
        }
    }
    return true;
}

/* True when every byte of p is a hex digit, ':', '.' or '/'. */
static bool part_is_address(const unsigned char *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = p[i];
        if (hex_value((char)c) < 0 && c != ':' && c != '.' && c != '/') {
            return false;
        }
    }
    return true;
}

/* An output buffer that counts what it could not hold; units (a byte, an
 * escape, a UTF-8 sequence) are written whole or not at all. */
typedef struct sink {
    char *buf;
    size_t room;    /* bytes buf may take */
    size_t used;    /* bytes written */
    size_t total;   /* bytes the whole value needs */
    bool truncated; /* a unit did not fit; nothing is written after it */
} sink_t;

static void sink_put(sink_t *s, const char *unit, size_t len)
{
    s->total += len;
    if (s->truncated || s->used + len > s->room) {
        s->truncated = true;
        return;
    }
    memcpy(s->buf + s->used, unit, len);
    s->used += len;
}

static void sink_escape(sink_t *s, unsigned char c)
{
    char unit[3] = {'%', hex_upper[c >> 4], hex_upper[c & 15]};
    sink_put(s, unit, 3);
}

/* Writes one escaped part into s (braces too when tagged: the hash tag
 * must end where Suspect closed it). */
static void escape_part(sink_t *s, const unsigned char *p, size_t len,
                        bool composite, bool tagged)
{
    if (part_is_address(p, len)) {
        for (size_t i = 0; i < len; i++) {
            sink_put(s, (const char *)p + i, 1);
        }
        return;
    }
    for (size_t i = 0; i < len;) {
        unsigned char c = p[i];
        if (c >= 0x80) {
            size_t seq = utf8_len(p + i, len - i);
            if (seq > 0) {
                sink_put(s, (const char *)p + i, seq);
                i += seq;
                continue;
            }
            sink_escape(s, c);
        } else if (c < 0x21 || c == 0x7f || c == '%' || c == ':' ||
                   (composite && c == '_') ||
                   (tagged && (c == '{' || c == '}'))) {
            sink_escape(s, c);
        } else {
            sink_put(s, (const char *)p + i, 1);
        }
        i++;
    }
}

/* Writes the escaped value of id (parts joined by '_') into s. */
static void escape_value(sink_t *s, const suspect_identity_t *id, bool tagged)
{
    for (size_t i = 0; i < id->nparts; i++) {
        if (i > 0) {
            sink_put(s, "_", 1);
        }
        escape_part(s, (const unsigned char *)id->part[i].ptr, id->part[i].len,
                    id->nparts > 1, tagged);
    }
}

/* Appends "%~" and 32 hex digits naming the raw parts of id to s: the
 * SHA-256 of the one part, or of the parts' digests for a composite. */
static void append_digest(sink_t *s, const suspect_identity_t *id)
{
    uint8_t digests[SUSPECT_MAX_PARTS][SUSPECT_SHA256_LEN];
    uint8_t d[SUSPECT_SHA256_LEN];
    char hex[DIGEST_HEX];

    for (size_t i = 0; i < id->nparts; i++) {
        suspect_sha256(id->part[i].ptr, id->part[i].len, digests[i]);
    }
    if (id->nparts == 1) {
        memcpy(d, digests[0], sizeof(d));
    } else {
        suspect_sha256(digests, id->nparts * SUSPECT_SHA256_LEN, d);
    }
    for (int i = 0; i < DIGEST_HEX / 2; i++) {
        hex[2 * i] = hex_upper[d[i] >> 4];
        hex[2 * i + 1] = hex_upper[d[i] & 15];
    }
    sink_put(s, "%~", 2);
    sink_put(s, hex, DIGEST_HEX);
}

/* Checks what the caller gave; returns SUSPECT_OK or SUSPECT_E_INVAL. */
static suspect_rc_t check_args(const suspect_keyopts_t *opts,
                               const char *action, const suspect_identity_t *id,
                               size_t prefix_len, size_t cap,
                               suspect_err_t *err)
{
    if (action == NULL || !suspect_name_valid(action, strlen(action))) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "key: invalid action name");
    }
    if (id == NULL || id->nparts == 0 || id->nparts > SUSPECT_MAX_PARTS) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "key: an identity has 1 to %d values",
                               SUSPECT_MAX_PARTS);
    }
    for (size_t i = 0; i < id->nparts; i++) {
        if (id->part[i].ptr == NULL || id->part[i].len == 0) {
            return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                                   "key: empty identity value");
        }
    }
    if (opts->format == SUSPECT_KEYS_TYPED &&
        (id->type == NULL || !suspect_name_valid(id->type, strlen(id->type)))) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "key: invalid identity type name");
    }
    if (prefix_len > MAX_PREFIX || cap < DIGEST_TAIL + 8 ||
        cap > MAX_VALUE_CAP) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "key: prefix longer than %d or value cap "
                               "outside %d..%d",
                               MAX_PREFIX, DIGEST_TAIL + 8, MAX_VALUE_CAP);
    }
    for (size_t i = 0; i < prefix_len; i++) {
        unsigned char c = (unsigned char)opts->prefix[i];
        if (c < 0x21 || c >= 0x7f) {
            return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                                   "key: prefix must be printable ASCII "
                                   "without spaces");
        }
        if (opts->hash_tag && (c == '{' || c == '}')) {
            return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                                   "key: a prefix with '{' or '}' would move "
                                   "the hash tag");
        }
    }
    return SUSPECT_OK;
}

suspect_rc_t suspect_key_build(const suspect_keyopts_t *opts,
                               const char *action, const suspect_identity_t *id,
                               suspect_key_t *out, suspect_err_t *err)
{
    static const suspect_keyopts_t defaults = {SUSPECT_KEYS_SEED, NULL, 0,
                                               false};
    size_t prefix_len, cap, head;
    sink_t s;
    suspect_rc_t rc;

    opts = opts != NULL ? opts : &defaults;
    prefix_len = opts->prefix != NULL ? strlen(opts->prefix) : 0;
    cap = opts->max_value_len != 0 ? opts->max_value_len : DEFAULT_VALUE_CAP;
    rc = check_args(opts, action, id, prefix_len, cap, err);
    if (rc != SUSPECT_OK) {
        return rc;
    }

    /* Sizes are bounded above, so the head always fits in out->buf. */
    memset(&s, 0, sizeof(s));
    s.buf = out->buf;
    s.room = sizeof(out->buf);
    sink_put(&s, opts->prefix != NULL ? opts->prefix : "", prefix_len);
    if (opts->hash_tag) {
        sink_put(&s, "{", 1);
    }
    sink_put(&s, action, strlen(action));
    sink_put(&s, ":", 1);
    if (opts->format == SUSPECT_KEYS_TYPED) {
        sink_put(&s, id->type, strlen(id->type));
        sink_put(&s, ":", 1);
    }
    head = s.used;

    s.room = head + cap;
    escape_value(&s, id, opts->hash_tag);
    if (s.truncated) {
        s.used = head;
        s.total = head;
        s.truncated = false;
        s.room = head + cap - DIGEST_TAIL;
        escape_value(&s, id, opts->hash_tag);
        s.truncated = false;
        s.room = head + cap;
        append_digest(&s, id);
    }
    if (opts->hash_tag) {
        s.room = head + cap + 1;
        sink_put(&s, "}", 1);
    }
    out->window_len = s.used;
    memcpy(out->buf + s.used, SUSPECT_LOCK_SUFFIX, SUSPECT_LOCK_SUFFIX_LEN + 1);
    out->lock_len = s.used + SUSPECT_LOCK_SUFFIX_LEN;
    return SUSPECT_OK;
}
