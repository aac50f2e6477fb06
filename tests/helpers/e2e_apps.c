/*
 * e2e_apps.c - application programs the e2e and suspect-cgi suites put
 * behind Suspect, and what they say they performed (declared in e2e.h).
 *
 * A program here is text for e2e_write_cgi() ("@DIR@" is the stack's
 * directory); each appends one line per operation it performs to
 * DIR/performed.log, so a test compares what ran with what was counted.
 * The text is static and only read; e2e_performed() owns nothing after
 * it returns.
 */
#include "e2e.h"

#include <stdio.h>

#include "util.h"

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
