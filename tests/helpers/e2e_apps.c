/*
 * e2e_apps.c - application programs the e2e and suspect-cgi suites put
 * behind Suspect, and what they say they performed (declared in e2e.h).
 *
 * A program here is text for e2e_write_cgi() ("@DIR@" is the stack's
 * directory); each appends one line per operation it performs to
 * DIR/performed.log, so a test compares what ran with what was counted.
 * e2e_check_escalation() is what a repeat offender meets, the same
 * through every front (suspect-cgi, suspect-fcgi).
 * The text is static and only read; e2e_performed() owns nothing after
 * it returns.
 */
#include "e2e.h"

#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/wait.h>

#include "clock.h"
#include "util.h"
#include "vgwrap.h"

const char e2e_cgipm_app[] =
    "#!/usr/bin/perl\n"
    "use strict; use CGI;\n"
    "my $q = CGI->new;\n"
    "my $op = $q->url_param('op') // '';\n"
    "my $p = $q->param('member') // '';\n"
    "my $c = $q->cookie('member') // '';\n"
    "if ($op eq 'login' || $op eq 'bank') {\n"
    "  open(my $f, '>>', '@DIR@/performed.log') or die;\n"
    "  print $f ($op eq 'bank' ? \"bank $c\\n\" : \"login $p\\n\");\n"
    "  close $f;\n"
    "}\n"
    "print \"Content-Type: text/plain\\r\\n\\r\\n[$op p=$p c=$c]\";\n";

int e2e_performed(const char *line)
{
    char path[TEST_PATH_MAX];

    snprintf(path, sizeof(path), "%s/performed.log", e2e.dir);
    return test_count_lines(path, line);
}

void e2e_check_escalation(long (*attempt)(int *st), int pass, unsigned s)
{
    for (int k = 0; k < 3; k++) {
        int st = 0;
        long ms;

        /* the attempt that counts (waiting out the last lock first) */
        for (long long end = mono_ms() + test_scale_ms(10000);;) {
            (void)attempt(&st);
            if (st != 429 || mono_ms() >= end) {
                break;
            }
            usleep(50000);
        }
        CU_ASSERT_EQUAL(st, pass);
        /* the next one makes the lock: its countdown is its length */
        ms = attempt(&st);
        CU_ASSERT_EQUAL(st, 429);
        CU_ASSERT_EQUAL(ms, 1000L * s << k);
    }
}

int e2e_ctl(char **out, const char *const args[])
{
    char bin[TEST_PATH_MAX], log[TEST_PATH_MAX];
    const char *argv[16];
    test_proc_t p;
    size_t n = 0;
    const char *bd = getenv("SUSPECT_BUILDDIR");

    snprintf(bin, sizeof(bin), "%s/suspectctl", bd != NULL ? bd : ".");
    argv[n++] = bin;
    argv[n++] = "-c";
    argv[n++] = e2e.conf;
    for (size_t i = 0; args[i] != NULL && n < 15; i++) {
        argv[n++] = args[i];
    }
    argv[n] = NULL;
    e2e_path(log, "ctl.out");
    unlink(log);
    *out = NULL;
    if (test_proc_start(&p, argv, NULL, log) != 0 ||
        test_proc_wait(&p, test_scale_ms(10000)) != 0) {
        return -1;
    }
    *out = test_read_file(log, NULL);
    return WIFEXITED(p.status) ? WEXITSTATUS(p.status) : -1;
}
