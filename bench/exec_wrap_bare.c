/*
 * exec_wrap_bare.c - exec-wrap without a C library, for bench-cgi's
 * exec-cost rows: it executes its first argument straight from _start, so
 * what it costs is one exec and nothing of a C library's start (on x86-64;
 * elsewhere it is exec-wrap again, with the C library).  The difference to
 * exec-wrap is what glibc's start costs one exec.
 *
 * Linked -nostdlib -static: no loader, no startup files, two pages.
 */
#if defined(__x86_64__)

#include <sys/syscall.h>

static long sys3(long n, long a, long b, long c)
{
    long r;

    __asm__ volatile("syscall"
                     : "=a"(r)
                     : "a"(n), "D"(a), "S"(b), "d"(c)
                     : "rcx", "r11", "memory");
    return r;
}

/* sp: the initial stack, argc then argv[] then envp[]. */
__attribute__((used)) static void bare_main(long *sp)
{
    long argc = sp[0];
    char **argv = (char **)(sp + 1);
    char **envp = argv + argc + 1;

    if (argc >= 2) {
        sys3(SYS_execve, (long)argv[1], (long)(argv + 1), (long)envp);
    }
    sys3(SYS_exit, 127, 0, 0);
}

__asm__(".globl _start\n"
        "_start:\n"
        "  mov %rsp, %rdi\n"
        "  and $-16, %rsp\n"
        "  call bare_main\n"
        "  hlt\n");

#else

#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc >= 2) {
        execv(argv[1], argv + 1);
    }
    return 127;
}

#endif
