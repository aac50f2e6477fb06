/*
 * logfile.c - a buffered log file (logfile.h).
 *
 * Two buffers: `buf` takes lines under `mu`; a flush swaps it with
 * `spare` under `mu` and writes the spare out with the mutex released, so
 * writers never wait for the disk.  `flush_mu` lets one flush run at a
 * time (the spare is in use until its write is done).  The writing thread
 * waits on `cv` for FLUSH_MS, or for a signal when the buffer is half
 * full, or for the stop.
 *
 * Counting: each buffer carries how many lines it holds; a write that
 * fails (or writes short) counts them all as failed, never retried.
 */
#include "logfile.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"
#include "clock.h"

/* 1 MiB (two: 2 MiB a log): at "all" on a busy daemon (some 7 MB of
 * lines a second) the writer wakes every 0.07 s rather than every 5 ms;
 * on 2 CPUs each wake-up preempts a worker, which 64 KiB made measurable
 * (bench-fcgi row 6, docs/BENCHMARKS.md). */
#define BUF_BYTES (1u << 20)
#define FLUSH_MS  100

struct mw_logfile {
    char *path; /* NULL: stderr */
    int fd;
    pthread_mutex_t mu;       /* buf, len, lines, stop */
    pthread_mutex_t flush_mu; /* one flush at a time: spare */
    pthread_cond_t cv;
    char *buf, *spare;
    size_t len, lines;
    bool stop;
    bool started;
    pthread_t thread;
    atomic_uint_fast64_t written, failed;
};

static int open_file(const char *path)
{
    return open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOCTTY,
                0640);
}

/* Writes n bytes holding lines lines; counts them. */
static void write_out(mw_logfile_t *f, const char *p, size_t n, size_t lines)
{
    size_t off = 0;

    while (off < n) {
        ssize_t r = write(f->fd, p + off, n - off);

        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            atomic_fetch_add(&f->failed, lines);
            return;
        }
        off += (size_t)r;
    }
    atomic_fetch_add(&f->written, lines);
}

void mw_logfile_flush(mw_logfile_t *f)
{
    size_t n, lines;
    char *full;

    pthread_mutex_lock(&f->flush_mu);
    pthread_mutex_lock(&f->mu);
    full = f->buf;
    f->buf = f->spare;
    f->spare = full;
    n = f->len;
    lines = f->lines;
    f->len = 0;
    f->lines = 0;
    pthread_mutex_unlock(&f->mu);
    if (n > 0) {
        write_out(f, full, n, lines);
    }
    pthread_mutex_unlock(&f->flush_mu);
}

void mw_logfile_append(mw_logfile_t *f, const char *line, size_t n)
{
    bool wake;

    pthread_mutex_lock(&f->mu);
    while (f->len + n > BUF_BYTES) {
        /* Full: the writing thread is behind; write it out here. */
        pthread_mutex_unlock(&f->mu);
        mw_logfile_flush(f);
        pthread_mutex_lock(&f->mu);
    }
    memcpy(f->buf + f->len, line, n);
    f->len += n;
    f->lines++;
    wake = f->len > BUF_BYTES / 2 && f->len - n <= BUF_BYTES / 2;
    pthread_mutex_unlock(&f->mu);
    if (wake) {
        pthread_cond_signal(&f->cv);
    }
}

static void *writer_main(void *arg)
{
    mw_logfile_t *f = arg;
    sigset_t all;
    bool stop = false;

    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    while (!stop) {
        struct timespec until = ns_timespec(mono_ns() + FLUSH_MS * 1000000LL);

        pthread_mutex_lock(&f->mu);
        if (!f->stop && f->len <= BUF_BYTES / 2) {
            pthread_cond_timedwait(&f->cv, &f->mu, &until);
        }
        stop = f->stop;
        pthread_mutex_unlock(&f->mu);
        mw_logfile_flush(f);
    }
    return NULL;
}

static void logfile_free(mw_logfile_t *f)
{
    if (f->path != NULL && f->fd >= 0) {
        close(f->fd);
    }
    pthread_cond_destroy(&f->cv);
    pthread_mutex_destroy(&f->flush_mu);
    pthread_mutex_destroy(&f->mu);
    free(f->buf);
    free(f->spare);
    free(f->path);
    free(f);
}

suspect_rc_t mw_logfile_open(const char *path, mw_logfile_t **out,
                             suspect_err_t *err)
{
    mw_logfile_t *f = suspect_calloc(1, sizeof(*f));

    *out = NULL;
    if (f == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "log file: out of memory");
    }
    f->fd = -1;
    pthread_mutex_init(&f->mu, NULL);
    pthread_mutex_init(&f->flush_mu, NULL);
    mono_cond_init(&f->cv);
    f->buf = suspect_malloc(BUF_BYTES);
    f->spare = suspect_malloc(BUF_BYTES);
    if (f->buf == NULL || f->spare == NULL ||
        (path != NULL && (f->path = suspect_strdup(path)) == NULL)) {
        logfile_free(f);
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "log file: out of memory");
    }
    f->fd = path != NULL ? open_file(path) : STDERR_FILENO;
    if (f->fd < 0) {
        suspect_err_sys(err, SUSPECT_E_IO, path, "cannot open");
        logfile_free(f);
        return SUSPECT_E_IO;
    }
    if (pthread_create(&f->thread, NULL, writer_main, f) != 0) {
        logfile_free(f);
        return suspect_err_set(err, SUSPECT_E_IO, path, 0,
                               "cannot start its writing thread");
    }
    f->started = true;
    *out = f;
    return SUSPECT_OK;
}

suspect_rc_t mw_logfile_reopen(mw_logfile_t *f, suspect_err_t *err)
{
    int fd;

    if (f == NULL || f->path == NULL) {
        return SUSPECT_OK;
    }
    mw_logfile_flush(f);
    fd = open_file(f->path);
    if (fd < 0) {
        return suspect_err_sys(err, SUSPECT_E_IO, f->path, "cannot reopen");
    }
    if (dup3(fd, f->fd, O_CLOEXEC) < 0) {
        suspect_err_sys(err, SUSPECT_E_IO, f->path, "dup3");
        close(fd);
        return SUSPECT_E_IO;
    }
    close(fd);
    return SUSPECT_OK;
}

void mw_logfile_counts(const mw_logfile_t *f, uint64_t *written,
                       uint64_t *failed)
{
    *written = f != NULL ? atomic_load(&f->written) : 0;
    *failed = f != NULL ? atomic_load(&f->failed) : 0;
}

void mw_logfile_close(mw_logfile_t *f)
{
    if (f == NULL) {
        return;
    }
    if (f->started) {
        pthread_mutex_lock(&f->mu);
        f->stop = true;
        pthread_mutex_unlock(&f->mu);
        pthread_cond_signal(&f->cv);
        pthread_join(f->thread, NULL);
    }
    mw_logfile_flush(f);
    logfile_free(f);
}
