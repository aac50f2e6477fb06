/*
 * logfile.h - a buffered log file for lines written by many threads: the
 * decision log's output.
 *
 * Lines are appended to a buffer in memory (a mutex held for a memcpy);
 * a thread of the log's own writes the buffer out every FLUSH_MS
 * (100 ms), or sooner when it is half full, with one write(2) for many
 * lines.  A writer that finds the buffer full writes it out itself.  So a
 * line costs a request about a memcpy, not a system call, and reaches the
 * file within 0.1 s; the daemon's stop and a reopen write out what is
 * buffered first, so nothing is lost but what a crash takes (at most
 * FLUSH_MS of lines).
 *
 * The file is opened O_APPEND (created 0640): lines of one write never mix
 * with another writer's.  mw_logfile_reopen() (SIGUSR1, after logrotate
 * moved the file) writes out the buffer, then opens the path again into
 * the same descriptor with dup3(), so a write in progress goes to the old
 * file or the new one, never to a closed descriptor.
 */
#ifndef MW_LOGFILE_H
#define MW_LOGFILE_H

#include <stddef.h>
#include <stdint.h>

#include "suspect_error.h"

typedef struct mw_logfile mw_logfile_t;

/* Opens path (NULL: standard error, never closed) and starts the writing
 * thread, all signals blocked in it.  SUSPECT_E_IO (errno),
 * SUSPECT_E_NOMEM. */
suspect_rc_t mw_logfile_open(const char *path, mw_logfile_t **out,
                             suspect_err_t *err);

/* Appends one whole line (n bytes, its newline included, n <= 8 KiB). */
void mw_logfile_append(mw_logfile_t *f, const char *line, size_t n);

/* Writes out what is buffered now. */
void mw_logfile_flush(mw_logfile_t *f);

/* Writes out the buffer, then opens the path again (no-op for stderr). */
suspect_rc_t mw_logfile_reopen(mw_logfile_t *f, suspect_err_t *err);

/* Lines written, and lines a write failed for. */
void mw_logfile_counts(const mw_logfile_t *f, uint64_t *written,
                       uint64_t *failed);

/* Stops the thread, writes out the buffer, closes the file and frees.
 * NULL is a no-op. */
void mw_logfile_close(mw_logfile_t *f);

#endif
