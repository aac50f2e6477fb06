/*
 * decision_log.c - the decision log's lines (decision_log.h).
 *
 * A line is built in a stack buffer of LINE_MAX bytes by appending
 * fields; every field is bounded (the path is cut at PATH_MAX_BYTES,
 * names come from the configuration), so a line always fits, and it is
 * written with one write(2).  Counters of lines written and failed are
 * atomics, read by the metrics.
 */
#include "decision_log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "sha256.h"
#include "suspect_policy.h"

#define LINE_MAX_BYTES 2048
#define PATH_MAX_BYTES 256
#define STR_MAX_BYTES  200 /* any other string */
/* What an identity's hash reads: a type, a NUL and a key's value. */
#define HASH_INPUT_MAX (SUSPECT_ACTION_MAX + 1 + SUSPECT_KEY_MAX)

struct mw_dlog {
    char *path; /* NULL: stderr */
    int fd;
    atomic_uint_fast64_t written, failed;
};

/* ---- the file ----------------------------------------------------------- */

static int open_file(const char *path)
{
    return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY,
                0640);
}

suspect_rc_t mw_dlog_open(const char *path, mw_dlog_t **out, suspect_err_t *err)
{
    mw_dlog_t *d = suspect_calloc(1, sizeof(*d));

    *out = NULL;
    if (d == NULL ||
        (path != NULL && (d->path = suspect_strdup(path)) == NULL)) {
        free(d);
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "decision log: out of memory");
    }
    d->fd = path != NULL ? open_file(path) : STDERR_FILENO;
    if (d->fd < 0) {
        suspect_err_sys(err, SUSPECT_E_IO, path, "decision log: cannot open");
        free(d->path);
        free(d);
        return SUSPECT_E_IO;
    }
    *out = d;
    return SUSPECT_OK;
}

suspect_rc_t mw_dlog_reopen(mw_dlog_t *d, suspect_err_t *err)
{
    int fd;

    if (d == NULL || d->path == NULL) {
        return SUSPECT_OK;
    }
    fd = open_file(d->path);
    if (fd < 0) {
        return suspect_err_sys(err, SUSPECT_E_IO, d->path,
                               "decision log: cannot reopen");
    }
    if (dup3(fd, d->fd, O_CLOEXEC) < 0) {
        suspect_err_sys(err, SUSPECT_E_IO, d->path, "decision log: dup3");
        close(fd);
        return SUSPECT_E_IO;
    }
    close(fd);
    return SUSPECT_OK;
}

void mw_dlog_close(mw_dlog_t *d)
{
    if (d == NULL) {
        return;
    }
    if (d->path != NULL) {
        close(d->fd);
    }
    free(d->path);
    free(d);
}

void mw_dlog_counts(const mw_dlog_t *d, uint64_t *written, uint64_t *failed)
{
    *written = d != NULL ? atomic_load(&d->written) : 0;
    *failed = d != NULL ? atomic_load(&d->failed) : 0;
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

/* A JSON string of s[0..n), at most max bytes of it: printable ASCII as
 * it is (quotes and backslashes escaped), anything else U+FFFD. */
static void str_n(line_t *l, const char *k, const char *s, size_t n, size_t max)
{
    if (s == NULL) {
        return;
    }
    key(l, k);
    put(l, "\"", 1);
    for (size_t i = 0; i < n && i < max; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};

            put(l, esc, 2);
        } else if (c >= 0x20 && c < 0x7f) {
            put(l, (const char *)&c, 1);
        } else {
            put(l, "\\ufffd", 6);
        }
    }
    put(l, "\"", 1);
}

static void str(line_t *l, const char *k, const char *s)
{
    if (s != NULL) {
        str_n(l, k, s, strlen(s), STR_MAX_BYTES);
    }
}

static void num(line_t *l, const char *k, int64_t v)
{
    char b[24];
    int n = snprintf(b, sizeof(b), "%" PRId64, v);

    key(l, k);
    put(l, b, (size_t)n);
}

/* RFC 3339 UTC with milliseconds. */
static void time_field(line_t *l, int64_t ms)
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    char b[40];
    size_t n;

    gmtime_r(&s, &tm);
    n = strftime(b, sizeof(b), "%Y-%m-%dT%H:%M:%S", &tm);
    n += (size_t)snprintf(b + n, sizeof(b) - n, ".%03dZ", (int)(ms % 1000));
    str_n(l, "time", b, n, sizeof(b));
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
    if (e->route_file != NULL) {
        snprintf(route, sizeof(route), "%.*s:%d", STR_MAX_BYTES, e->route_file,
                 e->route_line);
        str(&l, "route", route);
    }
    str(&l, "outcome", e->outcome);
    str(&l, "reason", e->reason);
    num(&l, "status", e->status);
    str(&l, "identity_type", e->identity_type);
    str(&l, "identity_hash", e->identity_hash);
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
    if (write(d->fd, l.buf, l.len) == (ssize_t)l.len) {
        atomic_fetch_add_explicit(&d->written, 1, memory_order_relaxed);
    } else {
        atomic_fetch_add_explicit(&d->failed, 1, memory_order_relaxed);
    }
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
    snprintf(out, MW_DLOG_HASH_LEN, "%016" PRIx64, h[0]);
}

void mw_dlog_key(const char *setting, suspect_siphash_key_t *out)
{
    uint8_t d[SUSPECT_SHA256_LEN];

    suspect_sha256(setting, strlen(setting), d);
    memcpy(&out->k0, d, 8);
    memcpy(&out->k1, d + 8, 8);
}
