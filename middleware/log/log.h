/*
 * log.h - the daemons' log: one line per event on stderr (journald, a
 * file, or the terminal), written with a single write() so lines from
 * different threads never mix.
 *
 * Line: "2026-11-21T10:00:00.123Z suspect-fcgi[pid]: level: message".
 * The library never logs; the binaries log once, at the boundary.
 */
#ifndef MW_LOG_H
#define MW_LOG_H

#include <stdarg.h>

typedef enum mw_log_level {
    MW_LOG_ERROR = 0,
    MW_LOG_WARNING,
    MW_LOG_NOTICE,
    MW_LOG_INFO,
    MW_LOG_DEBUG
} mw_log_level_t;

/* Sets the program name and the most verbose level written (default
 * MW_LOG_NOTICE).  Call before threads start. */
void mw_log_init(const char *progname, mw_log_level_t max_level);

/* Writes one line; a message longer than 2 KiB is cut.  Control bytes in
 * the message become '?', so a hostile value cannot forge log lines. */
void mw_log(mw_log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void mw_vlog(mw_log_level_t level, const char *fmt, va_list ap);

/* Whether level would be written (to skip building debug messages). */
int mw_log_enabled(mw_log_level_t level);

#endif
