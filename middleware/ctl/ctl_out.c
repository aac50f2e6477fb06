/*
 * ctl_out.c - suspectctl's output: failure reports, local times and a
 * small JSON writer.
 *
 * Every command prints one JSON object with --json, success or failure
 * (its "ok" and "exit" say which),
 * so a script can always parse stdout; the human message of a failure
 * goes to stderr in both modes.  The writer keeps, per nesting level,
 * whether a value was written (for the commas) and the closing bracket,
 * so cj_finish() can close whatever is open.  Strings are escaped as
 * RFC 8259 requires; bytes that are not valid UTF-8 become U+FFFD, so the
 * output is valid JSON whatever a request or a store held.
 */
#include "ctl_internal.h"
#include "text.h"

#include <stdarg.h>
#include <string.h>
#include <time.h>

/* ---- JSON --------------------------------------------------------------- */

/* Writes s[0..len) as a JSON string. */
static void json_string(FILE *f, const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;

    fputc('"', f);
    for (size_t i = 0; i < len;) {
        size_t n = utf8_len(p + i, len - i);

        if (n == 0) {
            fputs("\\ufffd", f);
            i++;
        } else if (n > 1) {
            fwrite(p + i, 1, n, f);
            i += n;
        } else {
            if (p[i] == '"' || p[i] == '\\') {
                fprintf(f, "\\%c", p[i]);
            } else if (p[i] == '\n') {
                fputs("\\n", f);
            } else if (p[i] == '\t') {
                fputs("\\t", f);
            } else if (p[i] < 0x20 || p[i] == 0x7f) {
                fprintf(f, "\\u%04x", p[i]);
            } else {
                fputc(p[i], f);
            }
            i++;
        }
    }
    fputc('"', f);
}

/* The comma and the key before a value. */
static void json_key(ctl_json_t *j, const char *key)
{
    if (j->more[j->depth]) {
        fputc(',', j->f);
    }
    j->more[j->depth] = true;
    if (key != NULL) {
        json_string(j->f, key, strlen(key));
        fputc(':', j->f);
    }
}

static void json_open(ctl_json_t *j, const char *key, char open, char close)
{
    json_key(j, key);
    fputc(open, j->f);
    /* Deeper levels are not used; the writer stays balanced anyway. */
    if (j->depth + 1 < CTL_JSON_DEPTH) {
        j->depth++;
        j->more[j->depth] = false;
        j->close[j->depth] = close;
    }
}

/* Starts the top object: {"command":..,"ok":..,"exit":.. */
void cj_begin(ctl_json_t *j, const ctl_t *c, int exit)
{
    memset(j, 0, sizeof(*j));
    j->f = c->out;
    fputc('{', j->f);
    j->close[0] = '}';
    cj_str(j, "command", c->command);
    cj_bool(j, "ok", exit == 0);
    cj_int(j, "exit", exit);
    if (c->via != NULL && exit == 0) {
        cj_str(j, "via", c->via);
    }
}

/* Closes everything still open and ends the line. */
void cj_finish(ctl_json_t *j)
{
    while (j->depth > 0) {
        cj_end(j);
    }
    fputc(j->close[0], j->f);
    fputc('\n', j->f);
}

/* Opens a nested object. */
void cj_obj(ctl_json_t *j, const char *key)
{
    json_open(j, key, '{', '}');
}

/* Opens a nested array. */
void cj_arr(ctl_json_t *j, const char *key)
{
    json_open(j, key, '[', ']');
}

/* Closes the innermost nested object or array. */
void cj_end(ctl_json_t *j)
{
    if (j->depth > 0) {
        fputc(j->close[j->depth], j->f);
        j->depth--;
    }
}

/* A string value, or null. */
void cj_str(ctl_json_t *j, const char *key, const char *s)
{
    cj_strn(j, key, s, s != NULL ? strlen(s) : 0);
}

/* A string value of len bytes, or null when s is NULL. */
void cj_strn(ctl_json_t *j, const char *key, const char *s, size_t len)
{
    json_key(j, key);
    if (s == NULL) {
        fputs("null", j->f);
    } else {
        json_string(j->f, s, len);
    }
}

/* An integer value. */
void cj_int(ctl_json_t *j, const char *key, int64_t v)
{
    json_key(j, key);
    fprintf(j->f, "%lld", (long long)v);
}

/* A boolean value. */
void cj_bool(ctl_json_t *j, const char *key, bool v)
{
    json_key(j, key);
    fputs(v ? "true" : "false", j->f);
}

/* "<key>_ms": ms, and "<key>": its local time or null when 0. */
void cj_time(ctl_json_t *j, const char *key, int64_t ms)
{
    char name[64], buf[48];

    snprintf(name, sizeof(name), "%s_ms", key);
    cj_int(j, name, ms);
    cj_str(j, key, ms != 0 ? ctl_time(ms, buf) : NULL);
}

/* ---- messages ----------------------------------------------------------- */

/* Formats epoch ms in local time, to the second, with the UTC offset. */
const char *ctl_time(int64_t ms, char buf[48])
{
    time_t t = (time_t)(ms / 1000);
    struct tm tm;

    if (localtime_r(&t, &tm) == NULL ||
        strftime(buf, 48, "%Y-%m-%d %H:%M:%S %z", &tm) == 0) {
        snprintf(buf, 48, "@%lld", (long long)(ms / 1000));
    }
    return buf;
}

static int fail_msg(ctl_t *c, int code, const char *msg)
{
    fprintf(c->errs, "suspectctl: %s\n", msg);
    if (c->json) {
        ctl_json_t j;

        cj_begin(&j, c, code);
        cj_str(&j, "error", msg);
        cj_finish(&j);
    }
    return code;
}

/* Reports a failure on errs (and as JSON on out); returns code. */
int ctl_fail(ctl_t *c, int code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return fail_msg(c, code, msg);
}

/* Reports a library error prefixed with what; returns code. */
int ctl_fail_err(ctl_t *c, int code, const char *what, const suspect_err_t *err)
{
    char msg[600];

    suspect_err_format(err, msg, sizeof(msg));
    return ctl_fail(c, code, "%s%s%s", what != NULL ? what : "",
                    what != NULL ? ": " : "", msg);
}

/* Reports a usage error with the command's synopsis; returns CTL_USAGE. */
int ctl_usage(ctl_t *c, const char *synopsis)
{
    return ctl_fail(c, CTL_USAGE,
                    "usage: suspectctl [-c FILE] [--json] %s (see "
                    "suspectctl --help)",
                    synopsis);
}
