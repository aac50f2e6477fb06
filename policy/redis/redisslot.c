/*
 * redisslot.c - the slot of a key and the meaning of an error reply, for
 * a Redis Cluster client (redisslot.h).
 *
 * Slot: Redis Cluster hashes a key with CRC16-XMODEM and keeps the low 14
 * bits.  When the key holds a '{' followed later by a '}' with at least
 * one byte between them, only those bytes (the first such pair) are hashed:
 * a "hash tag", which is how Suspect's tagged key layout puts an identity's
 * window and lock in one slot ("{A:I}" and "{A:I}:locked").  The CRC is
 * computed a byte at a time with a 256-entry table built from the
 * polynomial once, at compile time (the table below).
 *
 * Error replies: a router acts on the first word of an error reply
 * (MOVED, ASK, TRYAGAIN, CLUSTERDOWN, READONLY, MASTERDOWN, LOADING); a
 * redirection names a slot and "host:port", where the host may be an IPv6
 * address (the last ':' separates the port).
 */
#include "redisslot.h"

#include <string.h>

/* The CRC16-XMODEM table: crc16_table[b] is the CRC of the byte b. */
#define T0(c)  ((uint16_t)(((c) << 1) ^ (((c)&0x8000) ? 0x1021 : 0)))
#define T8(b)  T0(T0(T0(T0(T0(T0(T0(T0((uint16_t)((b) << 8)))))))))
#define R4(b)  T8(b), T8((b) + 1), T8((b) + 2), T8((b) + 3)
#define R16(b) R4(b), R4((b) + 4), R4((b) + 8), R4((b) + 12)
#define R64(b) R16(b), R16((b) + 16), R16((b) + 32), R16((b) + 48)

static const uint16_t crc16_table[256] = {R64(0), R64(64), R64(128), R64(192)};

uint16_t redis_crc16(const char *buf, size_t len)
{
    uint16_t crc = 0;

    for (size_t i = 0; i < len; i++) {
        crc = (uint16_t)((crc << 8) ^
                         crc16_table[((crc >> 8) ^ (uint8_t)buf[i]) & 0xff]);
    }
    return crc;
}

int redis_key_slot(const char *key, size_t len)
{
    const char *open = memchr(key, '{', len), *close;

    if (open != NULL) {
        size_t rest = len - (size_t)(open - key) - 1;
        close = memchr(open + 1, '}', rest);
        if (close != NULL && close > open + 1) {
            key = open + 1;
            len = (size_t)(close - key);
        }
    }
    return redis_crc16(key, len) & (REDIS_SLOTS - 1);
}

/* True when text starts with the word w (followed by a space or the
 * end). */
static bool first_word(const char *text, const char *w)
{
    size_t n = strlen(w);
    return strncmp(text, w, n) == 0 && (text[n] == ' ' || text[n] == '\0');
}

redis_errkind_t redis_error_kind(const char *text)
{
    static const struct {
        const char *word;
        redis_errkind_t kind;
    } words[] = {
        {"MOVED", REDIS_ERRK_MOVED},
        {"ASK", REDIS_ERRK_ASK},
        {"TRYAGAIN", REDIS_ERRK_TRYAGAIN},
        {"CLUSTERDOWN", REDIS_ERRK_CLUSTERDOWN},
        {"READONLY", REDIS_ERRK_READONLY},
        {"MASTERDOWN", REDIS_ERRK_MASTERDOWN},
        {"LOADING", REDIS_ERRK_LOADING},
    };

    if (text[0] == '\0') {
        return REDIS_ERRK_NONE;
    }
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        if (first_word(text, words[i].word)) {
            return words[i].kind;
        }
    }
    return REDIS_ERRK_OTHER;
}

/* Reads a decimal number of at most 5 digits at *p, up to end; advances
 * *p. */
static bool read_num(const char **p, const char *end, int max, int *out)
{
    int v = 0, nd = 0;

    while (*p < end && **p >= '0' && **p <= '9' && nd < 6) {
        v = v * 10 + (**p - '0');
        (*p)++;
        nd++;
    }
    if (nd == 0 || nd > 5 || v > max) {
        return false;
    }
    *out = v;
    return true;
}

bool redis_redirect_parse(const char *text, int *slot, const char **host,
                          size_t *host_len, int *port)
{
    const char *p = strchr(text, ' '), *end, *colon = NULL;

    if (p == NULL) {
        return false;
    }
    end = p + strlen(p);
    p++;
    if (!read_num(&p, end, REDIS_SLOTS - 1, slot) || p == end || *p != ' ') {
        return false;
    }
    p++;
    for (const char *q = p; q < end; q++) {
        colon = *q == ':' ? q : colon;
    }
    if (colon == NULL || colon == p) {
        return false;
    }
    *host = p;
    *host_len = (size_t)(colon - p);
    p = colon + 1;
    return read_num(&p, end, 65535, port) && p == end && *port > 0;
}
