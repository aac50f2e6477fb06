/*
 * libfcgi_null.c - the floor of a FastCGI responder: a libfcgi (Debian's
 * libfcgi-dev) application that does nothing but answer.
 *
 *   libfcgi-null SOCKET PROCESSES
 *
 * Opens the unix socket SOCKET (FCGX_OpenSocket, mode 0666) and forks
 * PROCESSES children, each a single-threaded FCGX_Accept_r loop, as a
 * pre-forked libfcgi application runs; every request gets "Status: 200 OK"
 * and an empty text/plain body.  bench-fcgi puts it behind the same nginx
 * as suspect-fcgi deciding alone: what suspect-fcgi spends per request,
 * decision included, is compared with what libfcgi spends saying nothing.
 * The parent waits for SIGTERM and takes its children with it.
 */
#include <fcgiapp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void serve(int fd)
{
    FCGX_Request r;

    if (FCGX_InitRequest(&r, fd, 0) != 0) {
        _exit(1);
    }
    while (FCGX_Accept_r(&r) >= 0) {
        FCGX_PutS("Status: 200 OK\r\nContent-Type: text/plain\r\n\r\n", r.out);
        FCGX_Finish_r(&r);
    }
    _exit(0);
}

int main(int argc, char **argv)
{
    int n = argc == 3 ? atoi(argv[2]) : 0, fd;
    sigset_t set;
    int sig;

    if (n < 1 || FCGX_Init() != 0) {
        fprintf(stderr, "usage: libfcgi-null SOCKET PROCESSES\n");
        return 2;
    }
    umask(0);
    fd = FCGX_OpenSocket(argv[1], 128);
    if (fd < 0) {
        fprintf(stderr, "libfcgi-null: cannot listen on %s\n", argv[1]);
        return 1;
    }
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigprocmask(SIG_BLOCK, &set, NULL);
    for (int i = 0; i < n; i++) {
        if (fork() == 0) {
            sigprocmask(SIG_UNBLOCK, &set, NULL);
            serve(fd);
        }
    }
    sigwait(&set, &sig);
    kill(0, SIGTERM);
    while (wait(NULL) > 0) {
    }
    return 0;
}
