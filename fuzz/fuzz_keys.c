/*
 * fuzz_keys.c - libFuzzer target for identity values to store keys
 * (policy/keys.c: suspect_key_build()).
 *
 * Input: a control byte (bit 0: typed format; bits 1-2: number of parts
 * - 1; bits 3-4: the value cap: default, the smallest, 100, the largest;
 * bit 5: a key prefix), then each part as one length byte and its bytes.
 * Oracles, which together make the mapping value -> key injective:
 *   - the key is head + value, the lock key the same + ":locked", NUL
 *     after it; the window key never ends in ":locked";
 *   - the key holds no control byte, space or DEL, and is valid UTF-8;
 *   - an uncapped value splits at '_' into exactly the parts (composite),
 *     and each piece, with %XX undone, is its part again;
 *   - a capped value fits the cap and ends in "%~" and 32 hex digits,
 *     and "%~" appears nowhere else.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suspect_policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_keys: check failed: %s\n", #cond);           \
            abort();                                                           \
        }                                                                      \
    } while (0)

static int hex(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    return c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Length of the valid UTF-8 sequence at p (1 for ASCII), 0 if none. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
    unsigned cp;
    size_t need;

    if (p[0] < 0x80) {
        return 1;
    }
    need = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc0 ? 2 : 0;
    if (need == 0 || n < need) {
        return 0;
    }
    cp = p[0] & (0x7f >> need);
    for (size_t i = 1; i < need; i++) {
        if ((p[i] & 0xc0) != 0x80) {
            return 0;
        }
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    if ((need == 2 && cp < 0x80) || (need == 3 && cp < 0x800) ||
        (need == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
        (cp >= 0xd800 && cp <= 0xdfff)) {
        return 0;
    }
    return need;
}

/* Undoes the escapes of v[0..n) into out; false when v is not escaped. */
static bool unescape(const char *v, size_t n, char *out, size_t *len)
{
    size_t o = 0;

    for (size_t i = 0; i < n; i++) {
        if (v[i] != '%') {
            out[o++] = v[i];
            continue;
        }
        if (i + 2 >= n) {
            return false;
        }
        if (hex(v[i + 1]) < 0 || hex(v[i + 2]) < 0) {
            return false;
        }
        out[o++] = (char)(hex(v[i + 1]) * 16 + hex(v[i + 2]));
        i += 2;
    }
    *len = o;
    return true;
}

static void check_key(const suspect_key_t *k, size_t head,
                      const suspect_identity_t *id, size_t cap)
{
    const char *v = k->buf + head;
    size_t vlen = k->window_len - head;
    const char *tilde;

    CHECK(k->lock_len == k->window_len + SUSPECT_LOCK_SUFFIX_LEN);
    CHECK(strcmp(k->buf + k->window_len, SUSPECT_LOCK_SUFFIX) == 0);
    CHECK(vlen <= cap && vlen > 0);
    CHECK(vlen < SUSPECT_LOCK_SUFFIX_LEN ||
          memcmp(v + vlen - SUSPECT_LOCK_SUFFIX_LEN, SUSPECT_LOCK_SUFFIX,
                 SUSPECT_LOCK_SUFFIX_LEN) != 0);
    for (size_t i = 0; i < k->lock_len;) {
        size_t u = utf8_len((const unsigned char *)k->buf + i, k->lock_len - i);

        CHECK(u > 0);
        CHECK((unsigned char)k->buf[i] > 0x20 && k->buf[i] != 0x7f);
        i += u;
    }
    tilde = memmem(v, vlen, "%~", 2);
    if (tilde != NULL) {
        CHECK(tilde == v + vlen - 34);
        for (size_t i = 2; i < 34; i++) {
            CHECK(hex(tilde[i]) >= 0);
        }
        return;
    }
    for (size_t i = 0, start = 0, part = 0; i <= vlen; i++) {
        char raw[1024];
        size_t rlen = 0;

        if (i < vlen && (v[i] != '_' || id->nparts == 1)) {
            continue;
        }
        CHECK(part < id->nparts);
        CHECK(unescape(v + start, i - start, raw, &rlen));
        CHECK(rlen == id->part[part].len &&
              memcmp(raw, id->part[part].ptr, rlen) == 0);
        part++;
        start = i + 1;
        if (i == vlen) {
            CHECK(part == id->nparts);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t caps[4] = {0, 42, 100, 512};
    suspect_keyopts_t opts;
    suspect_identity_t id;
    suspect_key_t key;
    size_t off = 1, head, cap;
    suspect_rc_t rc;

    if (size < 1) {
        return 0;
    }
    memset(&opts, 0, sizeof(opts));
    memset(&id, 0, sizeof(id));
    opts.format = (data[0] & 1) ? SUSPECT_KEYS_TYPED : SUSPECT_KEYS_SEED;
    opts.max_value_len = caps[(data[0] >> 3) & 3];
    opts.prefix = (data[0] & 0x20) ? "app1:" : NULL;
    id.type = "MemberCode";
    id.nparts = ((data[0] >> 1) & 3) + 1;
    for (size_t i = 0; i < id.nparts; i++) {
        size_t n = off < size ? data[off] : 0;

        off += off < size;
        if (n > size - off) {
            n = size - off;
        }
        id.part[i].ptr = (const char *)data + off;
        id.part[i].len = n;
        off += n;
    }
    rc = suspect_key_build(&opts, "Login", &id, &key, NULL);
    for (size_t i = 0; i < id.nparts; i++) {
        if (id.part[i].len == 0) {
            CHECK(rc == SUSPECT_E_INVAL);
            return 0;
        }
    }
    CHECK(rc == SUSPECT_OK);
    head = (opts.prefix ? 5 : 0) + 6 + (opts.format ? 11 : 0);
    CHECK(memcmp(key.buf, opts.prefix ? "app1:Login:" : "Login:",
                 opts.prefix ? 11 : 6) == 0);
    cap = opts.max_value_len ? opts.max_value_len : 256;
    check_key(&key, head, &id, cap);
    return 0;
}
