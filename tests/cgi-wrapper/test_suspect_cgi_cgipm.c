/*
 * test_suspect_cgi_cgipm.c - suite "suspect-cgi", part five: the built
 * suspect-cgi in front of a Perl CGI.pm 4.55 program, attacked in the
 * shapes only CGI.pm reads as its user.
 *
 * The program reads url_param('op'), param('member') and
 * cookie('member') and appends each login and bank update it performs,
 * with the member, to DIR/performed.log.  suspect.xml counts the login
 * by form:member (2 per day, missing="skip", as examples/suspect.xml)
 * and the bank update by cookie:member (2 per 120 s).  Each shape is
 * sent 6 times from as many addresses: ';' between parameters,
 * "%uXXXX" in a name, in op or in a cookie, and cookies CGI::Cookie
 * splits on ',' and '&'.  The program must never have performed more
 * than the limit for the victim; the shapes are first sent as op=view,
 * where the program must read the victim (the shape is real).
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgirun.h"
#include "helpers/e2e.h"
#include "helpers/procs.h"
#include "helpers/util.h"

static const char pm_limits[] =
    "<ArrayOfSuspectUsageSettingEntity>\n"
    "  <SuspectUsageSettingEntity Action=\"Login\" LimitCount=\"2\""
    " LimitDuration=\"86400\" BlockDuration=\"86400\" />\n"
    "  <SuspectUsageSettingEntity Action=\"Bank\" LimitCount=\"2\""
    " LimitDuration=\"120\" />\n"
    "</ArrayOfSuspectUsageSettingEntity>\n";

static const char pm_conf[] =
    "<Suspect>\n"
    "  <Limits path=\"limits.xml\"/>\n"
    "  <Cgi program=\"@DIR@/app/pm.cgi\"/>\n"
    "  <Route action=\"Login\" method=\"POST\" path=\"/app.cgi\""
    " param=\"op=login\" paramIn=\"query\" missing=\"skip\">\n"
    "    <Identity type=\"LoginId\" from=\"form:member\"/>\n"
    "  </Route>\n"
    "  <Route action=\"Bank\" method=\"POST\" path=\"/app.cgi\""
    " param=\"op=bank\" paramIn=\"query\">\n"
    "    <Identity type=\"MemberCode\" from=\"cookie:member\"/>\n"
    "  </Route>\n"
    "</Suspect>\n";

/* One shape: query, body, cookie (NULL: none), "@OP@" the op and "@N@"
 * the attempt's number in each; what the program prints for the victim. */
typedef struct shape {
    const char *qs, *body, *cookie, *reads;
} shape_t;

static const shape_t shapes[] = {
    {"op=@OP@", "member=victim;x=@N@", NULL, "p=victim "},
    {"op=@OP@", "x=@N@;member=victim", NULL, "p=victim "},
    {"op=@OP@", "%u006dember=victim&x=@N@", NULL, "p=victim "},
    {"op=@OP@", "x=@N@", "member=m2&@N@", "c=m2]"},
    {"op=@OP@", "x=@N@", "member=m2,x=@N@", "c=m2]"},
    {"op=@OP@", "x=@N@", "x=@N@, member=m2", "c=m2]"},
    {"op=@OP@", "x=@N@", "member=m%u0032;x=@N@", "c=m2]"},
};

/* fmt with "@OP@" and "@N@" filled in (malloc'ed). */
static char *fill(const char *fmt, const char *op, int i)
{
    char num[16];
    const char *pairs[] = {"@OP@", op, "@N@", num, NULL};

    snprintf(num, sizeof(num), "%d", i);
    return test_subst(fmt, pairs);
}

/* Runs suspect-cgi for shape s as op, attempt i: the program's output
 * in r. */
static void send_shape(cgi_out_t *r, const shape_t *s, const char *op, int i)
{
    char uri[300], qsv[300], clen[48], addr[48], ck[300];
    char *qs = fill(s->qs, op, i);
    char *body = fill(s->body, op, i);
    char *cookie = s->cookie != NULL ? fill(s->cookie, op, i) : NULL;
    const char *vars[] = {"REQUEST_METHOD=POST",
                          uri,
                          qsv,
                          "SCRIPT_NAME=/app.cgi",
                          "CONTENT_TYPE=application/x-www-form-urlencoded",
                          clen,
                          addr,
                          cookie != NULL ? ck : NULL,
                          NULL};
    const char *argv[] = {cgirun_bin(), "-c", e2e.conf, NULL};

    CU_ASSERT_FATAL(qs != NULL && body != NULL);
    snprintf(uri, sizeof(uri), "REQUEST_URI=/app.cgi?%s", qs);
    snprintf(qsv, sizeof(qsv), "QUERY_STRING=%s", qs);
    snprintf(clen, sizeof(clen), "CONTENT_LENGTH=%zu", strlen(body));
    snprintf(addr, sizeof(addr), "REMOTE_ADDR=198.51.100.%d", i % 250);
    if (cookie != NULL) {
        snprintf(ck, sizeof(ck), "HTTP_COOKIE=%s", cookie);
    }
    cgirun(r, argv, vars, body, strlen(body), false);
    free(qs);
    free(body);
    free(cookie);
}

static void test_cgipm(void)
{
    char path[TEST_PATH_MAX];
    cgi_out_t r;

    snprintf(path, sizeof(path), "%s", e2e.conf);
    CU_ASSERT_FATAL(e2e_write_cgi("pm.cgi", e2e_cgipm_app) == 0);
    CU_ASSERT_FATAL(test_write_file(e2e.limits, pm_limits, strlen(pm_limits)) ==
                    0);
    {
        const char *pairs[] = {"@DIR@", e2e.dir, NULL};
        char *conf = test_subst(pm_conf, pairs);

        CU_ASSERT_FATAL(conf != NULL);
        CU_ASSERT_FATAL(test_write_file(path, conf, strlen(conf)) == 0);
        free(conf);
    }
    for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
        const shape_t *s = &shapes[k];
        const char *op = s->cookie != NULL ? "bank" : "login";

        send_shape(&r, s, "view", (int)k);
        if (r.out == NULL || strstr(r.out, s->reads) == NULL) {
            CU_FAIL("CGI.pm does not read the shape as the victim");
            fprintf(stderr, "\n  shape %zu: %.300s\n", k,
                    r.out != NULL ? r.out : "");
        }
        cgirun_free(&r);
        for (int i = 0; i < 6; i++) {
            send_shape(&r, s, op, (int)(10 + 6 * k) + i);
            cgirun_free(&r);
        }
    }
    if (e2e_performed("login victim") > 2 || e2e_performed("bank m2") > 2) {
        fprintf(stderr, "\n  performed: login %d, bank %d (limits 2)\n",
                e2e_performed("login victim"), e2e_performed("bank m2"));
    }
    CU_ASSERT(e2e_performed("login victim") == 2);
    CU_ASSERT(e2e_performed("bank m2") == 2);
    /* "?op=%u006cogin" is CGI.pm's op=login: refused, never performed. */
    send_shape(&r, &(shape_t){"op=%u006cogin", "member=carol", NULL, ""}, "",
               1);
    CU_ASSERT(cgirun_starts(&r, "Status: 400"));
    cgirun_free(&r);
    CU_ASSERT_EQUAL(e2e_performed("login carol"), 0);
}

int cgirun_add_cgipm_tests(struct CU_Suite *s)
{
    return CU_add_test(s, "a CGI.pm program: ';', %uXXXX, CGI::Cookie",
                       test_cgipm) == NULL
               ? -1
               : 0;
}
