/*
 * test_e2e_abuse_cookies.c - the "abuse" suite: a cookie name spelled so
 * that the application reads it and Suspect would not.
 *
 * The bank update counts a member by its cookie and by the client
 * address (2 per 120 s each).  From a new address each time (the load
 * balancer's X-Forwarded-For, trusted for the test), the attacker updates
 * member alice's account with the cookie's name carrying every white space
 * and control byte before or after it, percent-encoded or not, and '+'.
 * Through nginx to the Perl program (which trims names with \s, as
 * Python's http.cookies does) and to the PHP one (which drops leading
 * white space and files names its own way): whatever the application read
 * as alice, it must have updated at most twice.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "helpers/e2e.h"
#include "helpers/util.h"
#include "test_e2e_abuse.h"

/* Room for every spelling of "member". */
#define SPELLINGS 300

/* Lines "bank alice" in DIR/app/performed.log. */
static int updates_of_alice(void)
{
    char path[TEST_PATH_MAX];
    char *text, *p;
    int n = 0;

    snprintf(path, sizeof(path), "%s/performed.log", e2e.app);
    text = test_read_file(path, NULL);
    for (p = text; p != NULL && (p = strstr(p, "bank alice\n")) != NULL; p++) {
        n += p == text || p[-1] == '\n';
    }
    free(text);
    return n;
}

/* Every spelling of "member" to try, into names (the caller's strings of
 * 32 bytes); how many. */
static size_t spellings(char names[SPELLINGS][32])
{
    size_t n = 0;

    for (int b = 1; b <= 0x7f; b++) {
        if (b == '\n' || b == '\r' || (b > ' ' && b != 0x7f)) {
            continue; /* a header line cannot hold CR or LF */
        }
        snprintf(names[n++], 32, "member%c", b);
        snprintf(names[n++], 32, "%cmember", b);
        snprintf(names[n++], 32, "%cmember%c", b, b);
    }
    for (int b = 0; b <= 0x7f; b++) {
        if (b > ' ' && b != 0x7f) {
            continue;
        }
        snprintf(names[n++], 32, "member%%%02X", b);
        snprintf(names[n++], 32, "%%%02Xmember", b);
    }
    snprintf(names[n++], 32, "member+");
    snprintf(names[n++], 32, "+member");
    snprintf(names[n++], 32, "%%6Dember");
    snprintf(names[n++], 32, "member \t\v\f");
    return n;
}

/* Sends the bank update for alice under every spelling, each from a new
 * address; then checks the application's count. */
static void update_alice_everywhere(const char *target)
{
    static char names[SPELLINGS][32];
    size_t n = spellings(names);
    char url[E2E_URL], cookie[128], xff[64];

    e2e_url(url, target);
    for (size_t i = 0; i < n; i++) {
        int before = updates_of_alice();

        snprintf(cookie, sizeof(cookie), "Cookie: %.31s=alice", names[i]);
        snprintf(xff, sizeof(xff), "X-Forwarded-For: 198.51.%zu.%zu",
                 100 + i / 250, 1 + i % 250);
        e2e_status((const char *[]){"-H", cookie, "-H", xff, "-d", "account=1",
                                    url, NULL});
        if (updates_of_alice() > before && before >= 2) {
            fprintf(stderr, "\n  cookie name [");
            for (const char *p = names[i]; *p != '\0'; p++) {
                fprintf(stderr, *p > ' ' && *p < 0x7f ? "%c" : "\\x%02x",
                        (unsigned char)*p);
            }
            fprintf(stderr, "] updated alice uncounted");
        }
    }
    fprintf(stderr, " [%zu spellings: alice updated %d times]", n,
            updates_of_alice());
    CU_ASSERT(updates_of_alice() <= 2);
}

/* Creates DIR/app/performed.log. */
static int performed_start(void)
{
    char path[TEST_PATH_MAX];

    snprintf(path, sizeof(path), "%s/performed.log", e2e.app);
    return test_write_file(path, "", 0) == 0 ? chmod(path, 0666) : -1;
}

/* The load balancer in front of nginx: X-Forwarded-For believed. */
static const char *const trust_local[] = {
    "trustedProxies=\"10.0.0.0/8\"", "trustedProxies=\"127.0.0.1/32\"", NULL};

static void test_cookie_names_perl(void)
{
    CU_ASSERT_FATAL(e2e_start_cgi(trust_local) == 0);
    CU_ASSERT_FATAL(performed_start() == 0);
    update_alice_everywhere("/app.cgi?op=bank");
}

static void test_cookie_names_php(void)
{
    CU_ASSERT_FATAL(e2e_start_php(trust_local) == 0);
    CU_ASSERT_FATAL(performed_start() == 0);
    update_alice_everywhere("/index.php?op=bank");
}

int abuse_add_cookie_tests(CU_pSuite s)
{
    return CU_add_test(s, "cookie names: every white space, Perl app",
                       test_cookie_names_perl) == NULL ||
                   CU_add_test(s, "cookie names: every white space, PHP app",
                               test_cookie_names_php) == NULL
               ? -1
               : 0;
}
