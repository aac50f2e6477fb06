/*
 * test_e2e_abuse_cgipm.c - the "abuse" suite: a Perl CGI.pm program
 * attacked in the shapes only CGI.pm reads as its user.
 *
 * The CGI shape (examples/suspect.xml, suspect-fcgi running the program
 * in CGI mode) in front of a CGI.pm 4.55 program that reads
 * url_param('op'), param('member') and cookie('member') and appends
 * every operation it performs, with the member it performed it for, to a
 * log.  Each shape is sent to a route no one counts first (op=view: the
 * program must read the victim, so the shape is real), then as the
 * attack: ';' between parameters ("member=victim;x=N",
 * "x=N;member=victim"), "%uXXXX" in a parameter name or in op itself,
 * and cookies CGI::Cookie splits on ',' and '&' ("member=m2&N",
 * "member=m2,x=N", "x=N, member=m2") from as many addresses.  What the
 * program performed for the victim is then compared with the limits
 * (login 2 per day, bank update 2 per 120 s): never more.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helpers/e2e.h"
#include "helpers/procs.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"
#include "test_e2e_abuse.h"

/* One attack shape: the query, the body and the cookie (NULL: none),
 * "@OP@" in each the op, "@N@" the attempt's number; and what the
 * program prints when it reads the victim. */
typedef struct shape {
    const char *qs, *body, *cookie;
    const char *reads;
} shape_t;

/* fmt with "@OP@" and "@N@" filled in, into buf. */
static void fill(char *buf, size_t size, const char *fmt, const char *op, int i)
{
    char num[16];
    const char *pairs[] = {"@OP@", op, "@N@", num, NULL};
    char *t;

    snprintf(num, sizeof(num), "%d", i);
    t = test_subst(fmt, pairs);
    snprintf(buf, size, "%s", t != NULL ? t : "");
    free(t);
}

/* Sends s 6 times as op, each from its own address. */
static void attack(const shape_t *s, const char *op, int first)
{
    char qs[256], body[256], cookie[256], addr[32], out[8192];

    for (int i = first; i < first + 6; i++) {
        fill(qs, sizeof(qs), s->qs, op, i);
        fill(body, sizeof(body), s->body, op, i);
        fill(cookie, sizeof(cookie), s->cookie != NULL ? s->cookie : "", op, i);
        snprintf(addr, sizeof(addr), "198.51.100.%d", 10 + i);
        abuse_post(qs, body, s->cookie != NULL ? cookie : NULL, addr, out,
                   sizeof(out));
        if (strcmp(op, "view") == 0 && strstr(out, s->reads) == NULL) {
            CU_FAIL("CGI.pm does not read the shape as the victim");
            fprintf(stderr, "\n  %s | %s | %s: %.300s\n", qs, body, cookie,
                    out);
        }
    }
}

/* The shapes of one victim, sent as op=view (the program must read the
 * victim: the shape is real), then as op; what the program performed
 * (line) compared with limit. */
static void run(const shape_t *shapes, size_t n, const char *op,
                const char *line, int limit)
{
    for (size_t i = 0; i < n; i++) {
        attack(&shapes[i], "view", (int)(6 * i));
        attack(&shapes[i], op, (int)(100 + 6 * i));
    }
    if (e2e_performed(line) > limit) {
        fprintf(stderr, "\n  \"%s\" performed %d times, limit %d\n", line,
                e2e_performed(line), limit);
    }
    CU_ASSERT(e2e_performed(line) <= limit);
    CU_ASSERT(e2e_performed(line) > 0);
}

static void test_cgipm(void)
{
    static const shape_t login[] = {
        {"op=@OP@", "member=victim;x=@N@", NULL, "p=victim "},
        {"op=@OP@", "x=@N@;member=victim", NULL, "p=victim "},
        {"op=@OP@", "%u006dember=victim&x=@N@", NULL, "p=victim "},
        {"op=@OP@;x=@N@", "member=victim", NULL, "p=victim "},
    };
    static const shape_t bank[] = {
        {"op=@OP@", "x=@N@", "member=m2&@N@", "c=m2]"},
        {"op=@OP@", "x=@N@", "member=m2,x=@N@", "c=m2]"},
        {"op=@OP@", "x=@N@", "x=@N@, member=m2", "c=m2]"},
        {"op=@OP@", "x=@N@", "member=m%u0032;x=@N@", "c=m2]"},
    };
    char out[8192];

    CU_ASSERT_FATAL(e2e_start_cgi(NULL) == 0);
    CU_ASSERT_FATAL(e2e_write_cgi("app.cgi", e2e_cgipm_app) == 0);
    run(login, sizeof(login) / sizeof(login[0]), "login", "login victim", 2);
    run(bank, sizeof(bank) / sizeof(bank[0]), "bank", "bank m2", 2);
    /* "?op=%u006cogin" is CGI.pm's op=login: refused, never performed. */
    CU_ASSERT_EQUAL(abuse_post("op=%u006cogin", "member=carol", NULL,
                               "192.0.2.50", out, sizeof(out)),
                    400);
    CU_ASSERT_EQUAL(e2e_performed("login carol"), 0);
}

int abuse_add_cgipm_tests(CU_pSuite s)
{
    return CU_add_test(s, "a CGI.pm program: ';', %uXXXX, CGI::Cookie",
                       test_cgipm) == NULL
               ? -1
               : 0;
}
