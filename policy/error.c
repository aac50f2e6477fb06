/*
 * error.c - the error record: first error wins, "file:line: text" format.
 */
#include "suspect_error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void suspect_err_clear(suspect_err_t *err)
{
    if (err != NULL) {
        memset(err, 0, sizeof(*err));
    }
}

/* Fills err unless it already holds an error; keeps errno as given. */
static void err_vset(suspect_err_t *err, suspect_rc_t code, int sys_errno,
                     const char *file, int line, const char *fmt, va_list ap)
{
    if (err == NULL || err->code != 0) {
        return;
    }
    err->code = code;
    err->sys_errno = sys_errno;
    snprintf(err->file, sizeof(err->file), "%s", file != NULL ? file : "");
    err->line = line;
    err->column = 0;
    vsnprintf(err->text, sizeof(err->text), fmt, ap);
}

suspect_rc_t suspect_err_set(suspect_err_t *err, suspect_rc_t code,
                             const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_vset(err, code, 0, file, line, fmt, ap);
    va_end(ap);
    return code;
}

suspect_rc_t suspect_err_sys(suspect_err_t *err, suspect_rc_t code,
                             const char *file, const char *fmt, ...)
{
    int saved = errno;
    va_list ap;
    va_start(ap, fmt);
    err_vset(err, code, saved, file, 0, fmt, ap);
    va_end(ap);
    if (err != NULL && err->sys_errno == saved && saved != 0) {
        size_t used = strlen(err->text);
        snprintf(err->text + used, sizeof(err->text) - used, ": %s",
                 strerror(saved));
    }
    errno = saved;
    return code;
}

size_t suspect_err_format(const suspect_err_t *err, char *buf, size_t size)
{
    int n;
    if (err->file[0] != '\0' && err->line > 0) {
        n = snprintf(buf, size, "%s:%d: %s", err->file, err->line, err->text);
    } else if (err->file[0] != '\0') {
        n = snprintf(buf, size, "%s: %s", err->file, err->text);
    } else {
        n = snprintf(buf, size, "%s", err->text);
    }
    return n < 0 ? 0 : (size_t)n;
}

const char *suspect_rc_str(suspect_rc_t code)
{
    switch (code) {
    case SUSPECT_OK:
        return "ok";
    case SUSPECT_E_NOMEM:
        return "out of memory";
    case SUSPECT_E_INVAL:
        return "invalid argument";
    case SUSPECT_E_IO:
        return "input/output error";
    case SUSPECT_E_PARSE:
        return "parse error";
    case SUSPECT_E_CONFIG:
        return "invalid configuration";
    case SUSPECT_E_NOTFOUND:
        return "not found";
    case SUSPECT_E_STORE:
        return "store failure";
    case SUSPECT_E_TIMEOUT:
        return "timeout";
    case SUSPECT_E_FULL:
        return "full";
    case SUSPECT_E_RANGE:
        return "too many values";
    default:
        return "unknown error";
    }
}
