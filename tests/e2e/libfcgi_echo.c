/*
 * libfcgi_echo.c - a FastCGI application built on libfcgi (Debian's
 * libfcgi-dev, fcgiapp.h), the library legacy applications are built
 * with: the upstream the "libfcgi" suite puts suspect-fcgi in front of.
 *
 *   libfcgi-echo SOCKET LOG
 *
 * Listens on the unix socket SOCKET (FCGX_OpenSocket) with four threads,
 * each in its own FCGX_InitRequest / FCGX_Accept_r loop, as libfcgi's
 * threaded applications do (one idle kept connection pins one thread, so
 * one thread would wait on it while a new connection queues).  For each
 * request it appends "METHOD URI" to LOG (what the application performed,
 * for the tests to compare with what was counted), writes
 * "libfcgi-echo: served URI" to the FastCGI error stream, and answers
 * 200 text/plain: "kept=1" when the request came on the connection the
 * thread kept from its previous request (FCGI_KEEP_CONN; the same socket
 * inode), else "kept=0";
 * every CGI variable as NAME=value; "body-length=N"; "--body--"; the
 * body itself.  Signals are blocked in the workers (libfcgi's reads do not
 * retry EINTR); the main thread waits for SIGTERM and exits.  (libfcgi's
 * FCGX_FPrintF knows no %zu: sizes go out as unsigned long.)
 */
#include <fcgiapp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define THREADS 4

static int listen_fd;
static const char *log_path;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

/* Appends "METHOD URI" to the log. */
static void performed(FCGX_Request *r)
{
    const char *m = FCGX_GetParam("REQUEST_METHOD", r->envp);
    const char *u = FCGX_GetParam("REQUEST_URI", r->envp);
    FILE *f;

    pthread_mutex_lock(&log_lock);
    f = fopen(log_path, "a");
    if (f != NULL) {
        fprintf(f, "%s %s\n", m != NULL ? m : "-", u != NULL ? u : "-");
        fclose(f);
    }
    pthread_mutex_unlock(&log_lock);
}

/* Reads the whole body; malloc'ed (NULL when out of memory), *len set. */
static char *read_body(FCGX_Request *r, size_t *len)
{
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    int got;

    while (buf != NULL &&
           (got = FCGX_GetStr(buf + n, (int)(cap - n), r->in)) > 0) {
        n += (size_t)got;
        if (n == cap) {
            char *more = realloc(buf, cap * 2);

            if (more == NULL) {
                free(buf);
                return NULL;
            }
            buf = more;
            cap *= 2;
        }
    }
    *len = n;
    return buf;
}

static void serve(FCGX_Request *r, int kept)
{
    const char *uri = FCGX_GetParam("REQUEST_URI", r->envp);
    size_t len = 0;
    char *body = read_body(r, &len);

    performed(r);
    FCGX_FPrintF(r->err, "libfcgi-echo: served %s\n", uri != NULL ? uri : "-");
    FCGX_FPrintF(r->out,
                 "Status: 200 OK\r\nContent-Type: text/plain\r\n\r\n"
                 "kept=%d\n",
                 kept);
    for (char **e = r->envp; *e != NULL; e++) {
        FCGX_FPrintF(r->out, "%s\n", *e);
    }
    FCGX_FPrintF(r->out, "body-length=%lu\n--body--\n", (unsigned long)len);
    if (body != NULL) {
        FCGX_PutStr(body, (int)len, r->out);
    }
    free(body);
}

static void *worker(void *arg)
{
    FCGX_Request r;
    ino_t last = 0; /* the previous request's connection, 0: closed */

    (void)arg;
    FCGX_InitRequest(&r, listen_fd, 0);
    for (;;) {
        struct stat st;
        int kept;

        if (FCGX_Accept_r(&r) != 0) {
            break;
        }
        /* The same socket as the previous request's (sockets get inodes
         * never reused): the connection was kept.  A kept one the peer
         * closed meanwhile is replaced under the same descriptor, which
         * the inode tells apart. */
        kept = fstat(r.ipcFd, &st) == 0 && last != 0 && st.st_ino == last;
        last = st.st_ino;
        serve(&r, kept);
        if (!r.keepConnection) {
            last = 0;
        }
        FCGX_Finish_r(&r);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t th[THREADS];
    sigset_t all;
    int sig;

    if (argc != 3) {
        fprintf(stderr, "usage: libfcgi-echo SOCKET LOG\n");
        return 2;
    }
    log_path = argv[2];
    if (FCGX_Init() != 0) {
        return 1;
    }
    listen_fd = FCGX_OpenSocket(argv[1], 64);
    if (listen_fd < 0) {
        return 1;
    }
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    for (int i = 0; i < THREADS; i++) {
        if (pthread_create(&th[i], NULL, worker, NULL) != 0) {
            return 1;
        }
    }
    sigemptyset(&all);
    sigaddset(&all, SIGTERM);
    sigaddset(&all, SIGINT);
    sigwait(&all, &sig);
    return 0;
}
