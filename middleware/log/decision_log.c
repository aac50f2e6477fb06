/*
 * decision_log.c - the decision log's lines (decision_log.h).
 *
 * A line is built in a stack buffer of LINE_MAX bytes by appending
 * fields; every field is bounded (the path is cut at PATH_MAX_BYTES,
 * names come from the configuration), so a line always fits, and it is
 * handed whole to the buffered file (logfile.c), which writes many lines
 * with one write(2) within 0.1 s.
 */
#include "decision_log.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "logfile.h"
#include "sha256.h"
#include "suspect_policy.h"
#include "text.h"

#define LINE_MAX_BYTES 2048
#define PATH_MAX_BYTES 256
#define STR_MAX_BYTES  200 /* any other string */
/* What an identity's hash reads: a type, a NUL and a key's value. */
#define HASH_INPUT_MAX (SUSPECT_ACTION_MAX + 1 + SUSPECT_KEY_MAX)

struct mw_dlog {
    mw_logfile_t *file;
};

/* ---- the file ----------------------------------------------------------- */

suspect_rc_t mw_dlog_open(const char *path, mw_dlog_t **out, suspect_err_t *err)
{
    mw_dlog_t *d = suspect_calloc(1, sizeof(*d));
    suspect_rc_t rc;

    *out = NULL;
    if (d == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "decision log: out of memory");
    }
    rc = mw_logfile_open(path, &d->file, err);
    if (rc != SUSPECT_OK) {
        free(d);
        return rc;
    }
    *out = d;
    return SUSPECT_OK;
}

suspect_rc_t mw_dlog_reopen(mw_dlog_t *d, suspect_err_t *err)
{
    return d != NULL ? mw_logfile_reopen(d->file, err) : SUSPECT_OK;
}

void mw_dlog_close(mw_dlog_t *d)
{
    if (d == NULL) {
        return;
    }
    mw_logfile_close(d->file);
    free(d);
}

void mw_dlog_counts(const mw_dlog_t *d, uint64_t *written, uint64_t *failed)
{
    mw_logfile_counts(d != NULL ? d->file : NULL, written, failed);
}

/* ---- a line ------------------------------------------------------------- */

typedef struct line {
    char buf[LINE_MAX_BYTES];
    size_t len;
    bool first;
} line_t;

static void put(line_t *l, const char *s, size_t n)
{
    if (n > sizeof(l->buf) - 2 - l->len) {
        n = sizeof(l->buf) - 2 - l->len;
    }
    memcpy(l->buf + l->len, s, n);
    l->len += n;
}

/* "key": with the comma before it when needed. */
static void key(line_t *l, const char *k)
{
    put(l, l->first ? "\"" : ",\"", l->first ? 1 : 2);
    l->first = false;
    put(l, k, strlen(k));
    put(l, "\":", 2);
}

/* Whether c goes into a JSON string as it is. */
static bool plain(unsigned char c)
{
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
}

/* A JSON string of s[0..n), at most max bytes of it: printable ASCII as
 * it is (quotes and backslashes escaped), anything else U+FFFD.  Runs of
 * plain bytes are copied whole. */
static void str_n(line_t *l, const char *k, const char *s, size_t n, size_t max)
{
    size_t i = 0;

    if (s == NULL) {
        return;
    }
    key(l, k);
    put(l, "\"", 1);
    n = n < max ? n : max;
    while (i < n) {
        size_t run = i;
        unsigned char c;

        while (run < n && plain((unsigned char)s[run])) {
            run++;
        }
        put(l, s + i, run - i);
        if (run == n) {
            break;
        }
        c = (unsigned char)s[run];
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};

            put(l, esc, 2);
        } else {
            put(l, "\\ufffd", 6);
        }
        i = run + 1;
    }
    put(l, "\"", 1);
}

static void str(line_t *l, const char *k, const char *s)
{
    if (s != NULL) {
        str_n(l, k, s, strlen(s), STR_MAX_BYTES);
    }
}

/* The decimal digits of v in b (no terminator); their count.  By hand:
 * snprintf() took a fifth of a line's time. */
static size_t fmt_i64(char b[24], int64_t v)
{
    char t[24];
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    size_t n = 0, len = 0;

    do {
        t[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (v < 0) {
        b[len++] = '-';
    }
    while (n > 0) {
        b[len++] = t[--n];
    }
    return len;
}

static void num(line_t *l, const char *k, int64_t v)
{
    char b[24];
    size_t n = fmt_i64(b, v);

    key(l, k);
    put(l, b, n);
}

/* RFC 3339 UTC with milliseconds.  Each thread keeps the text of the
 * last second it formatted: a line usually falls in the same second as
 * the one before, and then costs no gmtime_r() and strftime(). */
static void time_field(line_t *l, int64_t ms)
{
    static _Thread_local time_t last_s = (time_t)-1;
    static _Thread_local char last[24];
    static _Thread_local size_t last_len;
    time_t s = (time_t)(ms / 1000);
    char b[40];

    if (s != last_s) {
        struct tm tm;

        gmtime_r(&s, &tm);
        last_len = strftime(last, sizeof(last), "%Y-%m-%dT%H:%M:%S", &tm);
        last_s = s;
    }
    memcpy(b, last, last_len);
    ms %= 1000;
    b[last_len] = '.';
    b[last_len + 1] = (char)('0' + ms / 100);
    b[last_len + 2] = (char)('0' + ms / 10 % 10);
    b[last_len + 3] = (char)('0' + ms % 10);
    b[last_len + 4] = 'Z';
    str_n(l, "time", b, last_len + 5, sizeof(b));
}

void mw_dlog_write(mw_dlog_t *d, const mw_dlog_entry_t *e)
{
    line_t l;
    char route[STR_MAX_BYTES + 16];

    l.len = 0;
    l.first = true;
    put(&l, "{", 1);
    time_field(&l, e->time_ms);
    str(&l, "action", e->action);
    if (e->algorithm != NULL) {
        str(&l, "algorithm", e->algorithm);
    }
    if (e->route_file != NULL) {
        size_t n = strnlen(e->route_file, STR_MAX_BYTES);

        memcpy(route, e->route_file, n);
        route[n++] = ':';
        n += fmt_i64(route + n, e->route_line);
        str_n(&l, "route", route, n, sizeof(route));
    }
    str(&l, "outcome", e->outcome);
    str(&l, "reason", e->reason);
    num(&l, "status", e->status);
    str(&l, "identity_type", e->identity_type);
    str(&l, "identity_hash", e->identity_hash);
    if (e->device) {
        key(&l, "device");
        put(&l, "true", 4);
    }
    if (e->pass) {
        key(&l, "pass");
        put(&l, "true", 4);
    }
    if (e->calls > 0) {
        num(&l, "calls", e->calls);
    }
    str(&l, "client", e->client);
    str(&l, "method", e->method);
    if (e->path != NULL) {
        str_n(&l, "path", e->path, e->path_len, PATH_MAX_BYTES);
    }
    if (e->restriction_end_ms != 0) {
        num(&l, "restriction_end_ms", e->restriction_end_ms);
    }
    str(&l, "store", e->store);
    num(&l, "latency_us", e->latency_us);
    l.buf[l.len++] = '}';
    l.buf[l.len++] = '\n';
    mw_logfile_append(d->file, l.buf, l.len);
}

/* ---- identities --------------------------------------------------------- */

void mw_dlog_hash(const suspect_siphash_key_t *k, const char *type,
                  const char *value, size_t len, char out[MW_DLOG_HASH_LEN])
{
    char buf[HASH_INPUT_MAX];
    size_t tlen = type != NULL ? strlen(type) : 0;
    uint64_t h[2];

    if (tlen + 1 + len > sizeof(buf)) {
        len = sizeof(buf) - tlen - 1; /* keys are shorter: never cut */
    }
    memcpy(buf, type != NULL ? type : "", tlen);
    buf[tlen] = '\0';
    memcpy(buf + tlen + 1, value, len);
    suspect_siphash128(k, buf, tlen + 1 + len, h);
    for (int i = 0; i < 16; i++) {
        out[i] = hex_lower[(h[0] >> (60 - 4 * i)) & 0xf];
    }
    out[16] = '\0';
}

/* The longest <Log identityKey> (config/conf/conf_elems.c). */
#define KEY_SETTING_MAX 256

void mw_dlog_key(const char *setting, suspect_siphash_key_t *out)
{
    static _Thread_local char last[KEY_SETTING_MAX + 1];
    static _Thread_local suspect_siphash_key_t last_key;
    size_t len = strlen(setting);
    uint8_t d[SUSPECT_SHA256_LEN];

    if (len <= KEY_SETTING_MAX && last[0] != '\0' &&
        strcmp(last, setting) == 0) {
        *out = last_key;
        return;
    }
    suspect_sha256(setting, len, d);
    memcpy(&out->k0, d, 8);
    memcpy(&out->k1, d + 8, 8);
    if (len <= KEY_SETTING_MAX) {
        memcpy(last, setting, len + 1);
        last_key = *out;
    }
}
