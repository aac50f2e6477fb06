/*
 * test_suspect_cgi_watched.c - suite "suspect-cgi", part six: the built
 * suspect-cgi on a route that counts only what failed (<Success>), where
 * it runs the program as its child and reads its answer, with device
 * cookies.
 *
 * The program is a sh sign-in: the right password is a 303 to /welcome,
 * anything else a 401, each attempt appended to DIR/performed.log.  The
 * route allows 3 failures in 600 s, then locks for 600 s.  The owner
 * signs in six times (more than the limit): none counts, each gets a
 * device cookie; wrong passwords lock the account after 3 reached the
 * program; her browser's cookie still gets her in, a request without it
 * gets 429.  Counts live in DIR/suspect.lmdb: every run is a process.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cgirun.h"
#include "helpers/e2e.h"
#include "helpers/procs.h"
#include "helpers/util.h"

static const char w_limits[] =
    "<ArrayOfSuspectUsageSettingEntity>\n"
    "  <SuspectUsageSettingEntity Action=\"Login\" LimitCount=\"3\""
    " LimitDuration=\"600\" BlockDuration=\"600\" />\n"
    "</ArrayOfSuspectUsageSettingEntity>\n";

static const char w_conf[] =
    "<Suspect>\n"
    "  <Limits path=\"limits.xml\"/>\n"
    "  <Store type=\"lmdb\" path=\"@DIR@/suspect.lmdb\"/>\n"
    "  <Cgi program=\"@DIR@/app/signin.cgi\"/>\n"
    "  <DeviceCookie key=\"a-key-of-at-least-thirty-two-characters\"/>\n"
    "  <Route action=\"Login\" method=\"POST\" path=\"/signin\">\n"
    "    <Identity type=\"User\" from=\"form:user\" account=\"yes\"/>\n"
    "    <Success status=\"303\" location=\"/welcome\"/>\n"
    "  </Route>\n"
    "</Suspect>\n";

static const char w_app[] =
    "#!/bin/sh\n"
    "body=$(head -c \"$CONTENT_LENGTH\")\n"
    "case \"$body\" in\n"
    "*password=right*)\n"
    "  echo 'login ok' >>'@DIR@/performed.log'\n"
    "  printf 'Status: 303 See Other\\r\\nLocation: /welcome\\r\\n\\r\\n' ;;\n"
    "*)\n"
    "  echo 'login fail' >>'@DIR@/performed.log'\n"
    "  printf 'Status: 401 Unauthorized\\r\\nContent-Type: text/plain\\r\\n"
    "\\r\\nno\\n' ;;\n"
    "esac\n";

/* One sign-in with body and cookie (NULL: none); its status line's
 * number, and the device cookie it was given into set (256 bytes, ""
 * when none). */
static int sign_in(const char *body, const char *cookie, char *set)
{
    char clen[48], ck[300];
    const char *vars[] = {"REQUEST_METHOD=POST",
                          "REQUEST_URI=/signin",
                          "SCRIPT_NAME=/signin",
                          "HTTP_HOST=shop.example",
                          "CONTENT_TYPE=application/x-www-form-urlencoded",
                          clen,
                          cookie != NULL ? ck : NULL,
                          NULL};
    const char *argv[] = {cgirun_bin(), "-c", e2e.conf, NULL};
    const char *sc, *st;
    cgi_out_t r;
    int status = 0;

    snprintf(clen, sizeof(clen), "CONTENT_LENGTH=%zu", strlen(body));
    snprintf(ck, sizeof(ck), "HTTP_COOKIE=%s", cookie != NULL ? cookie : "");
    cgirun(&r, argv, vars, body, strlen(body), false);
    st = r.out == NULL                        ? NULL
         : strncmp(r.out, "Status: ", 8) == 0 ? r.out
                                              : strstr(r.out, "\nStatus: ");
    if (st != NULL) {
        status = atoi(st + (st[0] == '\n' ? 9 : 8));
    }
    sc = r.out != NULL ? strstr(r.out, "Set-Cookie: suspect_device=") : NULL;
    if (set != NULL) {
        snprintf(set, 256, "%.*s", sc != NULL ? (int)strcspn(sc + 12, ";") : 0,
                 sc != NULL ? sc + 12 : "");
    }
    cgirun_free(&r);
    return status;
}

static void test_watched(void)
{
    const char *pairs[] = {"@DIR@", e2e.dir, NULL};
    char *conf = test_subst(w_conf, pairs), set[256], cookie[256] = "";
    int denied = 0;

    CU_ASSERT_FATAL(conf != NULL && e2e_write_cgi("signin.cgi", w_app) == 0);
    CU_ASSERT_FATAL(test_write_file(e2e.conf, conf, strlen(conf)) == 0);
    CU_ASSERT_FATAL(test_write_file(e2e.limits, w_limits, strlen(w_limits)) ==
                    0);
    free(conf);
    /* six right sign-ins: none counts, each gets a device cookie */
    for (int i = 0; i < 6; i++) {
        CU_ASSERT_EQUAL(sign_in("user=alice&password=right", NULL, set), 303);
        CU_ASSERT(set[0] != '\0');
        if (i == 0) {
            snprintf(cookie, sizeof(cookie), "%s", set);
        }
    }
    /* an attacker: 3 reach the program, then the account is locked */
    for (int i = 0; i < 8; i++) {
        denied += sign_in("user=alice&password=guess", NULL, NULL) == 429;
    }
    CU_ASSERT_EQUAL(denied, 5);
    CU_ASSERT_EQUAL(e2e_performed("login fail"), 3);
    /* alice's browser still gets in; another one does not */
    CU_ASSERT_EQUAL(sign_in("user=alice&password=right", cookie, NULL), 303);
    CU_ASSERT_EQUAL(sign_in("user=alice&password=right", NULL, NULL), 429);
    CU_ASSERT_EQUAL(e2e_performed("login ok"), 7);
}

int cgirun_add_watched_tests(struct CU_Suite *s)
{
    return CU_add_test(s,
                       "a route that counts by the response: the child's "
                       "answer read, device cookies",
                       test_watched) == NULL
               ? -1
               : 0;
}
