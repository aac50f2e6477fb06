/*
 * log.c - one line per call, one write(2) per line.
 *
 * The line is built in a stack buffer and written with a single write, so
 * concurrent threads never interleave within a line (writes to a pipe or a
 * file opened O_APPEND of up to PIPE_BUF bytes are atomic).
 *
 * The journal: systemd passes JOURNAL_STREAM="DEV:INO" for the stream it
 * connects to stdout and stderr.  It is believed only when stderr is that
 * very stream (fstat matches), since a child whose stderr was redirected
 * inherits the variable too; then each line starts "<N>", the syslog
 * priority journald takes for the entry.
 *
 * A sink (mw_log_sink()) takes the lines instead: the message alone,
 * defanged the same way; the caller frames it as its own log wants.
 */
#include "log.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"

#define LINE_MAX_BYTES 2048

static const char *prog = "suspect";
static atomic_int max_lvl = MW_LOG_NOTICE;

static int journal;

/* mw_log_sink()'s; NULL: stderr. */
static mw_log_sink_fn sink;
static void *sink_arg;

static const char *const level_names[] = {"error", "warning", "notice", "info",
                                          "debug"};

/* The syslog priorities of the levels (LOG_ERR .. LOG_DEBUG). */
static const int level_priority[] = {3, 4, 5, 6, 7};

/* Whether stderr is the stream JOURNAL_STREAM names. */
static int stderr_is_journal(void)
{
    const char *v = getenv("JOURNAL_STREAM");
    uintmax_t dev, ino;
    struct stat st;
    char tail;

    if (v == NULL ||
        sscanf(v, "%" SCNuMAX ":%" SCNuMAX "%c", &dev, &ino, &tail) != 2 ||
        fstat(STDERR_FILENO, &st) != 0) {
        return 0;
    }
    return (uintmax_t)st.st_dev == dev && (uintmax_t)st.st_ino == ino;
}

void mw_log_init(const char *progname, mw_log_level_t max_level)
{
    prog = progname;
    journal = stderr_is_journal();
    atomic_store(&max_lvl, (int)max_level);
}

int mw_log_journal(void)
{
    return journal;
}

const char *mw_log_uri(const char *uri, int full, int *len)
{
    size_t n;

    if (uri == NULL) {
        *len = 1;
        return "-";
    }
    n = full ? strlen(uri) : strcspn(uri, "?#");
    *len = n > 1024 ? 1024 : (int)n;
    return uri;
}

int mw_log_enabled(mw_log_level_t level)
{
    return (int)level <= atomic_load(&max_lvl);
}

/* Replaces control bytes (and DEL) in s[from..len) with '?'. */
static void defang(char *s, size_t from, size_t len)
{
    for (size_t i = from; i < len; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c < 0x20 || c == 0x7f) {
            s[i] = '?';
        }
    }
}

void mw_log_sink(mw_log_sink_fn fn, void *arg)
{
    sink = fn;
    sink_arg = arg;
}

/* The message alone, to the sink. */
static void vlog_sink(mw_log_level_t level, const char *fmt, va_list ap)
{
    char msg[LINE_MAX_BYTES];
    int k = vsnprintf(msg, sizeof(msg), fmt, ap);
    size_t n = k < 0 ? 0 : (size_t)k;

    if (n > sizeof(msg) - 1) {
        n = sizeof(msg) - 1;
    }
    defang(msg, 0, n);
    msg[n] = '\0';
    sink(sink_arg, level, msg);
}

void mw_vlog(mw_log_level_t level, const char *fmt, va_list ap)
{
    char line[LINE_MAX_BYTES];
    time_t sec;
    int64_t now_ms;
    struct tm tm;
    size_t n, head;
    int k;

    if (!mw_log_enabled(level)) {
        return;
    }
    if (sink != NULL) {
        vlog_sink(level, fmt, ap);
        return;
    }
    if (journal) {
        n = 0;
        k = snprintf(line, sizeof(line), "<%d>%s: ", level_priority[level],
                     level_names[level]);
    } else {
        now_ms = wall_ms();
        sec = (time_t)(now_ms / 1000);
        gmtime_r(&sec, &tm);
        n = strftime(line, sizeof(line), "%Y-%m-%dT%H:%M:%S", &tm);
        k = snprintf(line + n, sizeof(line) - n,
                     ".%03dZ %s[%ld]: %s: ", (int)(now_ms % 1000), prog,
                     (long)getpid(), level_names[level]);
    }
    head = n + (size_t)(k > 0 ? k : 0);
    if (head >= sizeof(line) - 2) {
        head = sizeof(line) - 2;
    }
    k = vsnprintf(line + head, sizeof(line) - head - 1, fmt, ap);
    n = head + (k < 0 ? 0 : (size_t)k);
    if (n > sizeof(line) - 2) {
        n = sizeof(line) - 2;
    }
    defang(line, head, n);
    line[n++] = '\n';
    if (write(STDERR_FILENO, line, n) < 0) {
        /* Nowhere left to report it. */
    }
}

void mw_log(mw_log_level_t level, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    mw_vlog(level, fmt, ap);
    va_end(ap);
}
