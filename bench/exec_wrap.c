/*
 * exec_wrap.c - the cheapest CGI wrapper there can be, for bench-cgi: it
 * decides nothing and executes its first argument at once.  As the #!
 * interpreter of a wrapper ("#!/path/exec-wrap /path/program") it shows
 * what any program that runs before the real CGI program costs at the
 * least: one more exec.
 */
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fputs("usage: exec-wrap PROGRAM [ARG...]\n", stderr);
        return 2;
    }
    execv(argv[1], argv + 1);
    perror(argv[1]);
    return 1;
}
