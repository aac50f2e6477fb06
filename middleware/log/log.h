/*
 * log.h - the daemons' log: one line per event on stderr (journald, a
 * file, or the terminal), written with a single write() so lines from
 * different threads never mix.
 *
 * Line: "2026-11-21T10:00:00.123Z suspect-fcgi[pid]: level: message".
 * When stderr is the journal (systemd sets JOURNAL_STREAM to the device
 * and inode of the stream it gives; they match stderr's), the line is
 * "<N>level: message" instead: N is the syslog priority of the level
 * (error 3, warning 4, notice 5, info 6, debug 7), which journald reads
 * as the entry's priority, and the time and pid are journald's own.
 * The library never logs; the binaries log once, at the boundary, and an
 * application that links the in-process guard takes the lines through a
 * sink of its own (mw_log_sink()).
 *
 * What a line may hold: never a value a client sent (a query string, a
 * form field, a cookie, a password); a request is named by its path
 * (mw_log_uri()).
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
 * MW_LOG_NOTICE), and looks whether stderr is the journal.  Call before
 * threads start. */
void mw_log_init(const char *progname, mw_log_level_t max_level);

/* Whether lines carry journald priority prefixes (stderr is the journal). */
int mw_log_journal(void);

/*
 * The part of a request target a log line may show: uri up to its '?'
 * (or '#'), so no query value reaches a log, unless full (the operator
 * asked for whole targets).  *len gets its length; "-" for a NULL uri.
 */
const char *mw_log_uri(const char *uri, int full, int *len);

/* Writes one line; a message longer than 2 KiB is cut.  Control bytes in
 * the message become '?', so a hostile value cannot forge log lines. */
void mw_log(mw_log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void mw_vlog(mw_log_level_t level, const char *fmt, va_list ap);

/* Whether level would be written (to skip building debug messages). */
int mw_log_enabled(mw_log_level_t level);

/*
 * Where lines go instead of stderr: fn gets each line's level and its
 * message alone (no time, program name nor newline; control bytes already
 * '?'), and arg.  fn NULL: stderr again.  Process-wide, like
 * mw_log_init(): set it before the threads that log start.  An
 * application that decides in-process takes the lines this way
 * (suspect_guard_set_log()).
 */
typedef void (*mw_log_sink_fn)(void *arg, mw_log_level_t level,
                               const char *msg);
void mw_log_sink(mw_log_sink_fn fn, void *arg);

#endif
