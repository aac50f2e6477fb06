/*
 * redisutil.c - the Redis store's helpers that need no hiredis (URLs
 * are redisurl.c's, hit ids the core's hitid.h).
 *
 * RESP: commands are encoded here into one buffer (lengths by hand, no
 * printf), and the answer of a decision, an array of integers, is decoded
 * here when it arrived whole in one read; anything else (errors, other
 * types, a reply split over reads) is left to hiredis's reader.
 *
 * Deadlines: CLOCK_MONOTONIC nanoseconds; what is left is handed to each
 * wait in milliseconds, rounded up (a wait may end up to 1 ms past the
 * deadline, never more), and a lock is waited for with
 * pthread_mutex_clocklock() on the same clock.
 */
#include "redisutil.h"

#include "clock.h"
#include "redisslot.h"
#include "text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- keys ------------------------------------------------------------------
 */

const char *redis_identity_of(size_t prefix_len, const suspect_key_t *k,
                              size_t *len)
{
    size_t start = prefix_len < k->window_len ? prefix_len : 0;
    size_t end = k->window_len;
    const char *colon;

    if (end - start >= 2 && k->buf[start] == '{' && k->buf[end - 1] == '}') {
        start++;
        end--;
    }
    colon = memchr(k->buf + start, ':', end - start);
    start = colon != NULL ? (size_t)(colon - k->buf) + 1 : start;
    *len = end - start;
    return k->buf + start;
}

/* ---- decide.lua's answer ------------------------------------------------
 */

static uint32_t clamp_u32(int64_t v)
{
    return v < 0 ? 0 : v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

void redis_decide_state(const int64_t *v, suspect_window_state_t *st)
{
    memset(st, 0, sizeof(*st));
    st->lock_until_ms = v[0];
    st->in_window = clamp_u32(v[1]);
    st->free_at_ms = v[2];
    st->pending = clamp_u32(v[4]);
    st->pending_end_ms = v[5];
    st->offences = clamp_u32(v[6]);
}

bool redis_decide_agrees(const suspect_plan_t *plan, size_t i, const int64_t *v)
{
    return plan->lock_until_ms[i] == v[3] && (int64_t)plan->offences[i] == v[7];
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

/* ---- deadlines ----------------------------------------------------------
 */

#define NS_PER_MS 1000000

redis_deadline_t redis_deadline_in(unsigned ms)
{
    return mono_ns() + (int64_t)ms * NS_PER_MS;
}

unsigned redis_left_ms(redis_deadline_t d, unsigned cap)
{
    int64_t left = d - mono_ns();

    if (left <= 0) {
        return 0;
    }
    left = (left + NS_PER_MS - 1) / NS_PER_MS;
    return left < (int64_t)cap ? (unsigned)left : cap;
}

bool redis_lock_by(pthread_mutex_t *mu, redis_deadline_t d)
{
    struct timespec at = ns_timespec(d);

    return pthread_mutex_clocklock(mu, CLOCK_MONOTONIC, &at) == 0;
}

void redis_more_keys(const suspect_key_t *k, redis_more_keys_t *m)
{
    memcpy(m->resv, k->buf, k->window_len);
    memcpy(m->resv + k->window_len, ":slots", 6);
    m->resv_len = k->window_len + 6;
    memcpy(m->offences, k->buf, k->window_len);
    memcpy(m->offences + k->window_len, ":offences", 9);
    m->offences_len = k->window_len + 9;
}

void redis_more_keys_apart(const suspect_key_t *k, redis_more_keys_t *m)
{
    int slot = redis_key_slot(k->buf, k->window_len);

    redis_more_keys(k, m);
    if (redis_key_slot(m->resv, m->resv_len) == slot) {
        return; /* the window key's own tag keeps them together */
    }
    m->resv[0] = '{';
    memcpy(m->resv + 1, k->buf, k->window_len);
    memcpy(m->resv + 1 + k->window_len, "}:slots", 7);
    m->resv_len = k->window_len + 8;
    m->offences[0] = '{';
    memcpy(m->offences + 1, k->buf, k->window_len);
    memcpy(m->offences + 1 + k->window_len, "}:offences", 10);
    m->offences_len = k->window_len + 11;
}

void redis_slot_id(uint64_t id, char out[REDIS_SLOT_ID_LEN + 1])
{
    for (int i = REDIS_SLOT_ID_LEN - 1; i >= 0; i--, id >>= 4) {
        out[i] = hex_lower[id & 15];
    }
    out[REDIS_SLOT_ID_LEN] = '\0';
}
