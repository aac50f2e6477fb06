/*
 * suspect_error.h - return codes and the error record of libsuspect.
 *
 * Every function that can fail returns a suspect_rc_t (SUSPECT_OK or a
 * negative code) and takes an optional suspect_err_t * last.  The error
 * record keeps the first error set on it: later failures on the same record
 * are ignored, so the innermost, most precise message survives.  Callers may
 * pass NULL when they only want the code.
 *
 * The library never logs and never exits: the binaries format the record
 * once, at the boundary, with suspect_err_format().
 */
#ifndef SUSPECT_ERROR_H
#define SUSPECT_ERROR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int suspect_rc_t;

enum {
    SUSPECT_OK = 0,
    SUSPECT_E_NOMEM = -1,    /* out of memory */
    SUSPECT_E_INVAL = -2,    /* bad argument from the caller */
    SUSPECT_E_IO = -3,       /* a system call failed; sys_errno is set */
    SUSPECT_E_PARSE = -4,    /* a file is not well-formed */
    SUSPECT_E_CONFIG = -5,   /* a file is well-formed but invalid */
    SUSPECT_E_NOTFOUND = -6, /* no such action, key or file */
    SUSPECT_E_STORE = -7,    /* the store failed (network, protocol) */
    SUSPECT_E_TIMEOUT = -8,  /* the store did not answer in time */
    SUSPECT_E_FULL = -9,     /* a bounded resource is exhausted */
    SUSPECT_E_RANGE = -10    /* more values than one decision takes */
};

#define SUSPECT_ERR_FILE_MAX 256
#define SUSPECT_ERR_TEXT_MAX 256

typedef struct suspect_err {
    suspect_rc_t code;               /* 0 while no error was set */
    int sys_errno;                   /* errno at the failure, or 0 */
    char file[SUSPECT_ERR_FILE_MAX]; /* file the error is about, or "" */
    int line;                        /* 1-based line in file, or 0 */
    int column;                      /* 1-based column, or 0 */
    char text[SUSPECT_ERR_TEXT_MAX]; /* what went wrong, one line */
} suspect_err_t;

/* Resets err to "no error".  err may be NULL. */
void suspect_err_clear(suspect_err_t *err);

/*
 * Records an error unless err is NULL or already holds one (the first error
 * wins).  file may be NULL; line 0 means "no line".  Returns code, so a
 * caller can write `return suspect_err_set(err, SUSPECT_E_INVAL, ...);`.
 */
suspect_rc_t suspect_err_set(suspect_err_t *err, suspect_rc_t code,
                             const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* As suspect_err_set, and also saves the current errno. */
suspect_rc_t suspect_err_sys(suspect_err_t *err, suspect_rc_t code,
                             const char *file, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/*
 * Writes "file:line: text" (or "file: text", or "text") into buf, always
 * NUL-terminated when size > 0.  Returns the length it wanted to write.
 */
size_t suspect_err_format(const suspect_err_t *err, char *buf, size_t size);

/* A short constant name for a code: "out of memory", "invalid config"... */
const char *suspect_rc_str(suspect_rc_t code);

#ifdef __cplusplus
}
#endif

#endif
