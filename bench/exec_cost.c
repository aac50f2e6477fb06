/*
 * exec_cost.c - what one CGI request costs its process, without a web
 * server: for bench-cgi, which runs it after the wrk rounds.
 *
 *   exec-cost N CMD [ARG...] [-- CMD [ARG...]]...
 *
 * Runs each command N times, in turn (one run of each, then the next
 * round), as a web server runs a CGI program: a fork, an execv() with
 * this program's environment plus HTTP_X_MEMBER set to one of 100,000
 * values (so a counted request is a new identity, as bench/member.lua
 * makes them), standard output to /dev/null, and a wait.  Prints per
 * command the median wall time of a run and the mean CPU time (user +
 * system of the child and what it executed, from wait4()), then the CPU
 * each command costs over the first.  A command that fails (a status
 * other than 0) stops the run: a figure of a broken setup is worthless.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_CMDS 8
#define MEMBERS  100000

typedef struct cmd {
    char **argv;
    double *wall_us; /* one per run */
    double cpu_us;   /* the sum over the runs */
} cmd_t;

static double mono_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static double tv_us(struct timeval tv)
{
    return (double)tv.tv_sec * 1e6 + (double)tv.tv_usec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* One run of c as run number i; 0, or -1 when it did not exit 0. */
static int run_once(cmd_t *c, int i, int devnull)
{
    struct rusage ru;
    int status;
    char member[16];
    double t0;
    pid_t pid;

    snprintf(member, sizeof(member), "%d", rand() % MEMBERS);
    t0 = mono_us();
    pid = fork();
    if (pid == 0) {
        setenv("HTTP_X_MEMBER", member, 1);
        dup2(devnull, STDOUT_FILENO);
        execv(c->argv[0], c->argv);
        _exit(127);
    }
    if (pid < 0 || wait4(pid, &status, 0, &ru) != pid) {
        perror("exec-cost: fork/wait");
        return -1;
    }
    c->wall_us[i] = mono_us() - t0;
    c->cpu_us += tv_us(ru.ru_utime) + tv_us(ru.ru_stime);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "exec-cost: %s: status %d\n", c->argv[0], status);
        return -1;
    }
    return 0;
}

/* Splits argv at "--" into cmds; how many, or -1. */
static int parse(int argc, char **argv, cmd_t *cmds)
{
    int n = 0;

    for (int i = 0; i < argc; i++) {
        if (n == MAX_CMDS) {
            return -1;
        }
        cmds[n++].argv = &argv[i];
        while (i < argc && strcmp(argv[i], "--") != 0) {
            i++;
        }
        if (i < argc) {
            argv[i] = NULL;
        }
    }
    return n;
}

/* The command's words, each path by its last part, in buf. */
static const char *label(char **argv, char *buf, size_t size)
{
    size_t len = 0;

    buf[0] = '\0';
    for (char **a = argv; *a != NULL && len + 1 < size; a++) {
        const char *slash = strrchr(*a, '/');
        int w = snprintf(buf + len, size - len, "%s%s", len > 0 ? " " : "",
                         slash != NULL ? slash + 1 : *a);

        len += w > 0 ? (size_t)w : 0;
    }
    return buf;
}

int main(int argc, char **argv)
{
    cmd_t cmds[MAX_CMDS];
    int runs = argc > 2 ? atoi(argv[1]) : 0;
    int n = runs > 0 ? parse(argc - 2, argv + 2, cmds) : -1;
    int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);

    if (n <= 0 || devnull < 0) {
        fputs("usage: exec-cost N CMD [ARG...] [-- CMD [ARG...]]...\n", stderr);
        return 2;
    }
    for (int k = 0; k < n; k++) {
        cmds[k].wall_us = calloc((size_t)runs, sizeof(double));
        cmds[k].cpu_us = 0;
        if (cmds[k].wall_us == NULL) {
            return 1;
        }
    }
    for (int i = 0; i < runs; i++) {
        for (int k = 0; k < n; k++) {
            if (run_once(&cmds[k], i, devnull) != 0) {
                return 1;
            }
        }
    }
    for (int k = 0; k < n; k++) {
        double cpu = cmds[k].cpu_us / runs;
        char buf[256];

        qsort(cmds[k].wall_us, (size_t)runs, sizeof(double), cmp_double);
        printf("%-44.44s wall %5.0f us  cpu %5.0f us  (+%.0f)\n",
               label(cmds[k].argv, buf, sizeof(buf)), cmds[k].wall_us[runs / 2],
               cpu, cpu - cmds[0].cpu_us / runs);
    }
    return 0;
}
