/*
 * test_e2e_abuse_readings.c - the "abuse" suite: one account, spelled as
 * each language's application reads it.
 *
 * The CGI shape (examples/suspect.xml: the login route counts form:member,
 * 2 per day, then locked) in front of three login programs, each reading
 * member the way its language's applications commonly do: PHP
 * (trim($_POST['member']), php-cgi), Perl (CGI.pm's param(), then
 * s/^\s+|\s+$//g) and Python (urllib.parse.parse_qs(), then
 * str.strip()).  Each program prints the user it would look up.  For each
 * language, spellings its program reads as one user (NUL, \v, \f, 0x1F,
 * U+00A0, U+3000 at an end) are first sent where no route counts (the
 * program must print that user: the spelling is real), then to the login:
 * the first two reach the program, every other one is denied, so no
 * spelling is a fresh counter in any of the three languages.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers/e2e.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"
#include "test_e2e_abuse.h"

static const char php_app[] =
    "#!/usr/bin/php-cgi\n"
    "<?php header('Content-Type: text/plain');\n"
    "echo '[' . bin2hex(trim($_POST['member'] ?? '')) . ']';\n";

static const char perl_app[] =
    "#!/usr/bin/perl\n"
    "use strict; use CGI;\n"
    "my $u = CGI->new->param('member') // '';\n"
    "$u =~ s/^\\s+|\\s+$//g;\n"
    "print \"Content-Type: text/plain\\r\\n\\r\\n[\" . unpack('H*', $u) . "
    "\"]\";\n";

static const char python_app[] =
    "#!/usr/bin/python3\n"
    "import os, sys, urllib.parse\n"
    "n = int(os.environ.get('CONTENT_LENGTH') or 0)\n"
    "body = sys.stdin.buffer.read(n).decode('latin-1')\n"
    "q = urllib.parse.parse_qs(body, keep_blank_values=True)\n"
    "u = q.get('member', [''])[-1].strip()\n"
    "sys.stdout.write('Content-Type: text/plain\\r\\n\\r\\n[' + "
    "u.encode('utf-8').hex() + ']')\n";

typedef struct lang {
    const char *name;
    const char *app;
    const char *user;           /* what every spelling is read as */
    const char *spelling[6][2]; /* before and after the user */
} lang_t;

static const lang_t langs[] = {
    {"PHP",
     php_app,
     "alicephp",
     {{"", ""},
      {"+", ""},
      {"%00", ""},
      {"", "%00"},
      {"%0B", "%0D%0A"},
      {"", "%09"}}},
    {"Perl",
     perl_app,
     "aliceperl",
     {{"", ""}, {"+", ""}, {"", "%0A"}, {"%0C", ""}, {"%0B", ""}, {"", "%0D"}}},
    {"Python",
     python_app,
     "alicepy",
     {{"", ""},
      {"+", ""},
      {"%C2%A0", ""},
      {"", "%1F"},
      {"%E3%80%80", ""},
      {"", "%0B"}}},
};

/* POST /app.cgi?op=OP with body from 192.0.2.9: the status, the
 * response text in out. */
static int post(const char *op, const char *body, char *out, size_t size)
{
    char qs[32];

    snprintf(qs, sizeof(qs), "op=%s", op);
    return abuse_post(qs, body, NULL, "192.0.2.9", out, size);
}

/* Whether out's body is "[hex of user]". */
static bool read_as(const char *out, const char *user)
{
    char want[128];
    size_t k = 0;

    want[k++] = '[';
    for (const char *p = user; *p != '\0' && k + 3 < sizeof(want); p++) {
        k += (size_t)snprintf(want + k, sizeof(want) - k, "%02x",
                              (unsigned char)*p);
    }
    snprintf(want + k, sizeof(want) - k, "]");
    return strstr(out, want) != NULL;
}

static void run_lang(const lang_t *l)
{
    char body[128], out[8192];
    int reached = 0, denied = 0;

    CU_ASSERT_FATAL(e2e_write_cgi("app.cgi", l->app) == 0);
    for (size_t i = 0; i < 6; i++) {
        snprintf(body, sizeof(body), "member=%s%s%s", l->spelling[i][0],
                 l->user, l->spelling[i][1]);
        /* No route counts op=view: the program shows its reading. */
        CU_ASSERT_EQUAL(post("view", body, out, sizeof(out)), 200);
        if (!read_as(out, l->user)) {
            CU_FAIL("a spelling the program does not read as the user");
            fprintf(stderr, "\n  %s: %s read as %.300s\n", l->name, body, out);
        }
    }
    for (size_t i = 0; i < 6; i++) {
        int st;

        snprintf(body, sizeof(body), "member=%s%s%s", l->spelling[i][0],
                 l->user, l->spelling[i][1]);
        st = post("login", body, out, sizeof(out));
        if (st == 200 && read_as(out, l->user)) {
            reached++;
        } else if (st == 429) {
            denied++;
        } else {
            fprintf(stderr, "\n  %s: %s: %d %.300s\n", l->name, body, st, out);
        }
    }
    if (reached != 2 || denied != 4) {
        fprintf(stderr, "\n  %s: %d logins reached the program, %d denied\n",
                l->name, reached, denied);
    }
    CU_ASSERT_EQUAL(reached, 2);
    CU_ASSERT_EQUAL(denied, 4);
}

static void test_languages(void)
{
    CU_ASSERT_FATAL(e2e_start_cgi(NULL) == 0);
    for (size_t i = 0; i < sizeof(langs) / sizeof(langs[0]); i++) {
        run_lang(&langs[i]);
    }
}

int abuse_add_readings_tests(CU_pSuite s)
{
    return CU_add_test(s, "one account in PHP, Perl and Python spellings",
                       test_languages) == NULL
               ? -1
               : 0;
}
