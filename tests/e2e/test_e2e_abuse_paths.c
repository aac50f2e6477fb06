/*
 * test_e2e_abuse_paths.c - the "abuse" suite, part four: spellings of the
 * protected script's path.
 *
 * The forgot-password form (SecureForgotAccount, here 1 per 30 min, then
 * locked) is posted under two dozen spellings of /app.cgi: dot segments
 * plain and percent-encoded, "%2F", "//", "/./", a trailing '/', a
 * PATH_INFO, ";jsessionid=", case changes (the file system is case
 * sensitive), NUL and blanks.  Each spelling uses an account of its own;
 * when the program ran (it answers "ok forgot"), the plain request for
 * that account must then be the 429: the spelled one was counted.  A
 * spelling that does not reach the program needs no count.  Once through
 * real nginx (examples/nginx/suspect-cgi.conf: nginx decodes and
 * normalises), once straight in FastCGI with the spelling left raw in
 * REQUEST_URI, SCRIPT_NAME, DOCUMENT_URI and SCRIPT_FILENAME (a front
 * end that normalises nothing).
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers/e2e.h"
#include "test_e2e_abuse.h"
#include "helpers/util.h"

static const char *const spellings[] = {
    "/app.cgi",
    "//app.cgi",
    "///app.cgi//",
    "/./app.cgi",
    "/x/../app.cgi",
    "/cgi-bin/../app.cgi",
    "/%61pp.cgi",
    "/app%2Ecgi",
    "/%2e/app.cgi",
    "/x/%2e%2e/app.cgi",
    "/x%2F..%2Fapp.cgi",
    "/x/..%2Fapp.cgi",
    "/%2Fapp.cgi",
    "/app.cgi/",
    "/app.cgi/extra",
    "/app.cgi%2F",
    "/app.cgi;jsessionid=1",
    "/app.cgi%3Bjsessionid=1",
    "/APP.cgi",
    "/app.CGI",
    "/App.cgi",
    "/app.cgi%00",
    "/app.cgi%20",
    "/app.cgi.",
    "/app.cgi%23x",
};

#define NSPELL (sizeof(spellings) / sizeof(spellings[0]))

/* Starts the CGI shape with examples/limits.xml, except forgot-password:
 * once per 30 min, then locked. */
static int start(void)
{
    static const char *const pairs[] = {
        "Action=\"SecureForgotAccount\" LimitCount=\"3\"",
        "Action=\"SecureForgotAccount\" LimitCount=\"1\"", NULL};
    const char *edits[] = {"path=\"limits.xml\"", "path=\"abuse-limits.xml\"",
                           NULL};
    char path[TEST_PATH_MAX], src[TEST_PATH_MAX];
    char *text = test_read_file(e2e_src(src, "examples/limits.xml"), NULL);
    char *edited = text != NULL ? test_subst(text, pairs) : NULL;
    int rc;

    snprintf(path, sizeof(path), "%s/abuse-limits.xml", e2e.dir);
    rc = edited != NULL && strcmp(edited, text) != 0
             ? test_write_file(path, edited, strlen(edited))
             : -1;
    free(text);
    free(edited);
    return rc == 0 ? e2e_start_cgi(edits) : -1;
}

/* POSTs account=acc to target (sent as it is) through nginx: whether the
 * program ran; *status gets the status. */
static bool post_nginx(const char *target, const char *acc, int *status)
{
    char url[E2E_URL], form[96];
    test_http_t r;
    bool ran;

    snprintf(form, sizeof(form), "%s?op=forgot", target);
    e2e_url(url, form);
    snprintf(form, sizeof(form), "account=%s", acc);
    e2e_http(&r, (const char *[]){"--path-as-is", "-d", form, url, NULL});
    ran = strncmp(r.body, "ok forgot", 9) == 0;
    *status = r.status;
    test_http_free(&r);
    return ran;
}

/* Checks the rule for spelling i, whose request ran or not: a run must
 * have been counted (the plain request for acc is then the 429). */
static void check_counted(size_t i, bool ran, int status, int plain)
{
    if (ran && plain != 429) {
        fprintf(stderr, "\n  %s ran the program (%d) uncounted (plain: %d)\n",
                spellings[i], status, plain);
    }
    CU_ASSERT(!ran || plain == 429);
}

/* Through nginx: every spelling that runs the program is counted. */
static void test_paths_nginx(void)
{
    char acc[32];
    size_t runs = 0;

    CU_ASSERT_FATAL(start() == 0);
    for (size_t i = 0; i < NSPELL; i++) {
        int status, plain;
        bool ran;

        snprintf(acc, sizeof(acc), "nginx-%zu", i);
        ran = post_nginx(spellings[i], acc, &status);
        post_nginx("/app.cgi", acc, &plain);
        check_counted(i, ran, status, plain);
        runs += ran;
    }
    /* Not a vacuous pass: nginx runs the program for many of them. */
    CU_ASSERT(runs >= 8);
}

/* Appends the variables of a POST of body to target, left raw, to
 * params: the script path is the target's path undecoded. */
static size_t raw_params(char *params, size_t cap, const char *target,
                         const char *body)
{
    char uri[256], script[TEST_PATH_MAX], file[TEST_PATH_MAX], clen[16];
    const char *vars[] = {"REQUEST_METHOD",
                          "POST",
                          "REQUEST_URI",
                          uri,
                          "QUERY_STRING",
                          "op=forgot",
                          "SCRIPT_NAME",
                          script,
                          "DOCUMENT_URI",
                          script,
                          "SCRIPT_FILENAME",
                          file,
                          "CONTENT_TYPE",
                          "application/x-www-form-urlencoded",
                          "CONTENT_LENGTH",
                          clen,
                          "REMOTE_ADDR",
                          "192.0.2.1",
                          NULL};
    size_t len = 0;

    snprintf(uri, sizeof(uri), "%s?op=forgot", target);
    snprintf(script, sizeof(script), "%s", target);
    snprintf(file, sizeof(file), "%s%s", e2e.app, target);
    snprintf(clen, sizeof(clen), "%zu", strlen(body));
    for (size_t k = 0; vars[k] != NULL; k += 2) {
        e2e_fcgi_pair(params, cap, &len, vars[k], vars[k + 1]);
    }
    return len;
}

/* POSTs account=acc to target straight in FastCGI: whether the program
 * ran; *status gets the status. */
static bool post_raw(const char *target, const char *acc, int *status)
{
    char params[4096], body[96], out[8192];
    size_t len;
    int fd = e2e_fcgi_connect();

    snprintf(body, sizeof(body), "account=%s", acc);
    len = raw_params(params, sizeof(params), target, body);
    *status =
        fd >= 0 && e2e_fcgi_exchange(fd, 1, false, params, len, body,
                                     strlen(body), out, sizeof(out), 5000) == 0
            ? e2e_cgi_status(out)
            : -1;
    if (fd >= 0) {
        close(fd);
    }
    return *status >= 0 && strstr(out, "ok forgot") != NULL;
}

/* Straight in FastCGI, nothing normalised: the same rule.  The
 * directories x and cgi-bin exist, so that "x/../app.cgi" is a file path
 * that runs the program. */
static void test_paths_raw(void)
{
    char acc[32], dir[TEST_PATH_MAX];
    size_t runs = 0;

    CU_ASSERT_FATAL(start() == 0);
    snprintf(dir, sizeof(dir), "%s/x", e2e.app);
    CU_ASSERT_FATAL(mkdir(dir, 0755) == 0);
    snprintf(dir, sizeof(dir), "%s/cgi-bin", e2e.app);
    CU_ASSERT_FATAL(mkdir(dir, 0755) == 0);
    for (size_t i = 0; i < NSPELL; i++) {
        int status, plain;
        bool ran;

        snprintf(acc, sizeof(acc), "raw-%zu", i);
        ran = post_raw(spellings[i], acc, &status);
        post_raw("/app.cgi", acc, &plain);
        check_counted(i, ran, status, plain);
        runs += ran;
    }
    CU_ASSERT(runs >= 5);
}

int abuse_add_path_tests(CU_pSuite s)
{
    if (CU_add_test(s, "path spellings through nginx", test_paths_nginx) ==
            NULL ||
        CU_add_test(s, "path spellings straight in FastCGI", test_paths_raw) ==
            NULL) {
        return -1;
    }
    return 0;
}
