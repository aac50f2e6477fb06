/*
 * test_e2e_abuse_multipart.c - suite "abuse": logins and uploads posted
 * as multipart/form-data, every process real.
 *
 * PHP: nginx -> suspect-fcgi -> php-cgi running examples/app/login.php
 * (examples/suspect-login.xml: a failed login counts, 3 then locked) and
 * an upload script on a route counting form:user.  The application logs
 * every password it checks (attempts.log), so each spelling of a login is
 * compared with what was counted:
 *   - every spelling PHP reads as the user (curl -F, fields in another
 *     order, repeated, a quoted boundary, an unquoted name, bare LF
 *     lines, a preamble, a leading space in the name, WebKit's boundary,
 *     a file part first) is one counter with the urlencoded login: one
 *     multipart failure and two urlencoded ones lock the account;
 *   - spellings readers read differently (PHP reads the user there too)
 *     are refused, 415 or 400, and never reach the application;
 *   - the user hidden after a big file part (past formMax), alone or
 *     after a decoy, is refused 413 and never checked;
 *   - a 10 MiB upload on the counted route arrives byte for byte.
 * CGI: nginx -> suspect-fcgi -> a CGI.pm program (the login route of
 * examples/suspect.xml, 2 a day): multipart logins counted and locked,
 * a repeated field refused, a 10 MiB upload byte for byte, a member
 * hidden after a file refused (the program, killed, records nothing).
 */
#include <CUnit/CUnit.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "helpers/e2e.h"
#include "helpers/util.h"
#include "sha256.h"
#include "test_e2e_abuse.h"

#define BIG   (256u << 10) /* past formMax (64K) */
#define HUGE_ (10u << 20)  /* an ordinary upload */

static const char upload_php[] =
    "<?php\n"
    "$f = $_FILES['file'] ?? null;\n"
    "$ok = $f !== null && $f['error'] === UPLOAD_ERR_OK;\n"
    "$line = sprintf(\"upload %s %s %d\\n\",\n"
    "    preg_replace('/[^A-Za-z0-9_.-]/', '?', (string)($_POST['user'] ??"
    " '')),\n"
    "    $ok ? hash_file('sha256', $f['tmp_name']) : 'error',\n"
    "    $ok ? $f['size'] : -1);\n"
    "file_put_contents(__DIR__ . '/uploads.log', $line, FILE_APPEND |"
    " LOCK_EX);\n"
    "header('Content-Type: text/plain');\n"
    "echo $line;\n";

static const char cgipm_app[] =
    "#!/usr/bin/perl\n"
    "use strict; use warnings; use CGI; use Digest::SHA;\n"
    "$CGI::POST_MAX = 64 * 1024 * 1024;\n"
    "my $q = CGI->new;\n"
    "my $m = $q->param('member') // '';\n"
    "my ($sum, $size) = ('-', -1);\n"
    "if (my $fh = $q->upload('file')) {\n"
    "    my $d = Digest::SHA->new(256); binmode $fh; $size = 0;\n"
    "    while (read($fh, my $buf, 65536)) { $d->add($buf); $size += length"
    " $buf; }\n"
    "    $sum = $d->hexdigest;\n"
    "}\n"
    "$m =~ s/[^A-Za-z0-9_.-]/?/g;\n"
    "open(my $log, '>>', '@DIR@/performed.log') or die;\n"
    "print $log \"login $m $sum $size\\n\"; close $log;\n"
    "print \"Content-Type: text/plain\\r\\n\\r\\nok $m $sum $size\\n\";\n";

/* Lines of DIR/app/name (or DIR/name: in) holding text. */
static int lines_with(const char *in, const char *name, const char *text)
{
    char path[TEST_PATH_MAX];
    char *all, *p;
    int n = 0;

    snprintf(path, sizeof(path), "%s/%s", in, name);
    all = test_read_file(path, NULL);
    for (p = all; p != NULL && *p != '\0';) {
        char *eol = strchr(p, '\n');

        if (eol != NULL) {
            *eol = '\0';
        }
        n += strstr(p, text) != NULL;
        p = eol != NULL ? eol + 1 : p + strlen(p);
    }
    free(all);
    return n;
}

/* "login fail USER" lines of login.php's log. */
static int fails(const char *user)
{
    char line[128];

    snprintf(line, sizeof(line), "login fail %s", user);
    return lines_with(e2e.app, "attempts.log", line);
}

/* POSTs body[0..len) of type to path; the response in r (freed by the
 * caller). */
static void post_raw(test_http_t *r, const char *path, const char *type,
                     const char *body, size_t len)
{
    char file[TEST_PATH_MAX], at[TEST_PATH_MAX + 1], h[600], url[E2E_URL];

    snprintf(file, sizeof(file), "%s/body", e2e.dir);
    snprintf(at, sizeof(at), "@%s", file);
    snprintf(h, sizeof(h), "Content-Type: %s", type);
    CU_ASSERT_FATAL(test_write_file(file, body, len) == 0);
    e2e_http(r, (const char *[]){"-H", h, "--data-binary", at,
                                 e2e_url(url, path), NULL});
}

/* The status of a multipart POST of body (with "@U@" as user) to path. */
static int post_as(const char *path, const char *type, const char *body,
                   const char *user)
{
    const char *pairs[] = {"@U@", user, NULL};
    char *text = test_subst(body, pairs);
    test_http_t r;
    int status;

    CU_ASSERT_FATAL(text != NULL);
    post_raw(&r, path, type, text, strlen(text));
    status = r.status;
    test_http_free(&r);
    free(text);
    return status;
}

/* The status of an urlencoded POST of body to path. */
static int post_form(const char *path, const char *body)
{
    char url[E2E_URL];

    return e2e_status((const char *[]){"-d", body, e2e_url(url, path), NULL});
}

/* A file of n bytes of every value in DIR/name; its SHA-256 in hex. */
static void write_blob(const char *name, size_t n, char hex[65])
{
    char path[TEST_PATH_MAX];
    unsigned char *b = malloc(n), sum[32];
    uint32_t x = 2463534242u;

    CU_ASSERT_FATAL(b != NULL);
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        b[i] = (unsigned char)x;
    }
    suspect_sha256(b, n, sum);
    for (int i = 0; i < 32; i++) {
        sprintf(hex + 2 * i, "%02x", sum[i]);
    }
    snprintf(path, sizeof(path), "%s/%s", e2e.dir, name);
    CU_ASSERT_FATAL(test_write_file(path, (const char *)b, n) == 0);
    free(b);
}

/* ---- PHP ---------------------------------------------------------------- */

/* The login stack, with upload.php counted by form:user (ComposeMessage:
 * 5 per 1800 s), uploads of up to 64 MiB in nginx and PHP. */
static int start_php(void)
{
    static const char *const conf[] = {
        "</Suspect>",
        "  <Route action=\"ComposeMessage\" method=\"POST\" "
        "path=\"/upload.php\">\n"
        "    <Identity type=\"Uploader\" from=\"form:user\"/>\n"
        "  </Route>\n</Suspect>",
        NULL};
    static const char *const site[] = {"client_max_body_size 8m",
                                       "client_max_body_size 64m", NULL};
    static const char ini[] = "post_max_size = 64M\n"
                              "upload_max_filesize = 64M\n";
    char src[TEST_PATH_MAX], path[TEST_PATH_MAX], scan[TEST_PATH_MAX + 32];
    const char *env[] = {"PHP_FCGI_CHILDREN=4", scan, NULL};

    snprintf(path, sizeof(path), "%s/php.d", e2e.dir);
    if (e2e_prepare("suspect-login.xml", conf) != 0 || mkdir(path, 0700) != 0) {
        return -1;
    }
    /* ":" first: Debian's own scan directory, then ours. */
    snprintf(scan, sizeof(scan), "PHP_INI_SCAN_DIR=:%s", path);
    snprintf(path, sizeof(path), "%s/php.d/uploads.ini", e2e.dir);
    if (test_write_file(path, ini, sizeof(ini) - 1) != 0) {
        return -1;
    }
    snprintf(path, sizeof(path), "%s/upload.php", e2e.app);
    if (test_write_file(path, upload_php, sizeof(upload_php) - 1) != 0) {
        return -1;
    }
    snprintf(path, sizeof(path), "%s/login.php", e2e.app);
    if (test_copy_file(e2e_src(src, "examples/app/login.php"), path, 0644) !=
            0 ||
        test_php_start(&e2e.php, e2e.dir, e2e.php_sock, env) != 0 ||
        e2e_start_suspect() != 0) {
        return -1;
    }
    return e2e_start_nginx_edits("nginx/suspect-php.conf", site);
}

#define CT                "multipart/form-data; boundary=b"
#define CDN               "Content-Disposition: form-data; name="
#define PART(name, value) "--b\r\n" CDN name "\r\n\r\n" value "\r\n"
#define LOGIN             "/login.php?op=login"

/* Spellings of "user=@U@&password=no" PHP reads as that user. */
static const struct {
    const char *type, *body;
} spellings[] = {
    {CT, PART("\"user\"", "@U@") PART("\"password\"", "no") "--b--\r\n"},
    {CT, PART("\"password\"", "no") PART("\"user\"", "@U@") "--b--\r\n"},
    {CT, PART("\"user\"", "@U@") PART("\"password\"", "no")
             PART("\"user\"", "@U@") "--b--\r\n"},
    {"multipart/form-data; boundary=\"b\"",
     PART("\"user\"", "@U@") PART("\"password\"", "no") "--b--\r\n"},
    {CT, PART("user", "@U@") PART("password", "no") "--b--\r\n"},
    {CT, "--b\n" CDN "\"user\"\n\n@U@\n--b\n" CDN "\"password\"\n\nno\n"
         "--b--\n"},
    {CT,
     "preamble\r\n--b\r\nX-Note: 1\r\n\r\nuser=bob\r\n" PART("\"user\"", "@U@")
         PART("\"password\"", "no") "--b--\r\nepilogue\r\n"},
    {CT, PART("\" user\"", "@U@") PART("\"password\"", "no") "--b--\r\n"},
    {"multipart/form-data; charset=UTF-8; boundary=----WebKitFormBoundaryQ",
     "------WebKitFormBoundaryQ\r\n" CDN "\"user\"\r\n\r\n@U@\r\n"
     "------WebKitFormBoundaryQ\r\n" CDN "\"password\"\r\n\r\nno\r\n"
     "------WebKitFormBoundaryQ--\r\n"},
    {CT, "--b\r\n" CDN "\"avatar\"; filename=\"@U@.png\"\r\nContent-Type: "
         "image/png\r\n\r\n\x89PNG\r\n\x1a\n\r\n" PART("\"user\"", "@U@")
             PART("\"password\"", "no") "--b--\r\n"},
};

/* Each spelling is the account's counter: its failure and two
 * urlencoded ones lock it; the app checked each. */
static void test_php_spellings(void)
{
    char user[32], form[64], url[E2E_URL];

    CU_ASSERT_FATAL(start_php() == 0);
    for (size_t i = 0; i < sizeof(spellings) / sizeof(spellings[0]); i++) {
        snprintf(user, sizeof(user), "probe%zu", i);
        snprintf(form, sizeof(form), "user=%s&password=no", user);
        CU_ASSERT_EQUAL(
            post_as(LOGIN, spellings[i].type, spellings[i].body, user), 401);
        CU_ASSERT_EQUAL(fails(user), 1); /* PHP read the user */
        CU_ASSERT_EQUAL(post_form(LOGIN, form), 401);
        CU_ASSERT_EQUAL(post_form(LOGIN, form), 401);
        CU_ASSERT_EQUAL(post_form(LOGIN, form), 429);
        CU_ASSERT_EQUAL(fails(user), 3);
        if (fails(user) != 3) {
            fprintf(stderr, "\n  spelling %zu: %d checks\n", i, fails(user));
        }
    }
    /* curl -F, as browsers send a form: counted and locked the same. */
    e2e_url(url, LOGIN);
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL(e2e_status((const char *[]){"-F", "user=curly", "-F",
                                                    "password=no", url, NULL}),
                        i < 3 ? 401 : 429);
    }
    CU_ASSERT_EQUAL(fails("curly"), 3);
}

/* Spellings readers read differently: refused, PHP never asked. */
static void test_php_refused(void)
{
    static const struct {
        const char *type, *body;
        int status;
    } cases[] = {
        {CT,
         "--b\r\n" CDN
         "'user'\r\n\r\n@U@\r\n" PART("\"password\"", "no") "--b--\r\n",
         415},
        {CT,
         PART("\"user\"", "decoy") PART("\"user\"", "@U@")
             PART("\"password\"", "no") "--b--\r\n",
         400},
        {CT,
         PART("\"password\"", "no") "--b\r\n" CDN "\"user\"; "
                                    "filename=\"@U@\"\r\n\r\nx\r\n--b--\r\n",
         400},
        {CT,
         PART("\"password\"", "no") "--b--\r\n" PART("\"user\"",
                                                     "@U@") "--b--\r\n",
         415},
        {CT,
         PART("\"password\"", "no") "--b\r\n" CDN "\"x\"\r\n\r\n" PART(
             "\"user\"", "@U@") "--b--\r\n",
         415},
        {CT,
         "--b\r\nContent-Disposition:form-data; name=\"user\"\r\n\r\n@U@"
         "\r\n" PART("\"password\"", "no") "--b--\r\n",
         415},
        {CT, PART("\"password\"", "no") PART("\"user\"", "@U@") "--b", 415},
        {"multipart/form-data; boundary=b ; x=y",
         PART("\"user\"", "@U@") PART("\"password\"", "no") "--b--\r\n", 415},
    };
    char user[32];

    CU_ASSERT_FATAL(start_php() == 0);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(user, sizeof(user), "victim%zu", i);
        CU_ASSERT_EQUAL(post_as(LOGIN, cases[i].type, cases[i].body, user),
                        cases[i].status);
        CU_ASSERT_EQUAL(fails(user), 0);
    }
    CU_ASSERT_EQUAL(fails("decoy"), 0);
    /* One line each, with the reason. */
    CU_ASSERT_EQUAL(lines_with(e2e.dir, "suspect.log", "status=415 (multipart"),
                    6);
    CU_ASSERT_EQUAL(lines_with(e2e.dir, "suspect.log", "status=400 ("), 2);
}

/* The user hidden after a big file part: refused, never checked; and a
 * 10 MiB upload on the counted route arrives whole. */
static void test_php_uploads(void)
{
    char big[TEST_PATH_MAX + 8], huge[TEST_PATH_MAX + 8], sum[65], bsum[65];
    char url[E2E_URL], want[200];
    test_http_t r;

    CU_ASSERT_FATAL(start_php() == 0);
    write_blob("big.bin", BIG, bsum);
    write_blob("huge.bin", HUGE_, sum);
    snprintf(big, sizeof(big), "file=@%s/big.bin", e2e.dir);
    snprintf(huge, sizeof(huge), "file=@%s/huge.bin", e2e.dir);
    e2e_url(url, LOGIN);
    CU_ASSERT_EQUAL(
        e2e_status((const char *[]){"-F", "password=no", "-F", big, "-F",
                                    "user=victim", url, NULL}),
        413);
    CU_ASSERT_EQUAL(
        e2e_status((const char *[]){"-F", "user=decoy", "-F", "password=no",
                                    "-F", big, "-F", "user=victim", url, NULL}),
        413);
    CU_ASSERT_EQUAL(fails("victim"), 0);
    CU_ASSERT_EQUAL(lines_with(e2e.dir, "suspect.log",
                               "status=413 (multipart field past formMax)"),
                    2);
    /* Fields before the file, as forms send them: it passes. */
    CU_ASSERT_EQUAL(
        e2e_status((const char *[]){"-F", "user=early", "-F", "password=no",
                                    "-F", big, url, NULL}),
        401);
    CU_ASSERT_EQUAL(fails("early"), 1);
    e2e_url(url, "/upload.php");
    e2e_http(&r,
             (const char *[]){"-F", "user=uploader", "-F", huge, url, NULL});
    snprintf(want, sizeof(want), "upload uploader %s %u", sum, HUGE_);
    CU_ASSERT_EQUAL(r.status, 200);
    CU_ASSERT_PTR_NOT_NULL(r.body != NULL ? strstr(r.body, want) : NULL);
    if (r.body == NULL || strstr(r.body, want) == NULL) {
        fprintf(stderr, "\n  upload: %d %.200s\n", r.status,
                r.body != NULL ? r.body : "");
    }
    test_http_free(&r);
    /* After the file: refused, nothing uploaded. */
    CU_ASSERT_EQUAL(e2e_status((const char *[]){"-F", huge, "-F",
                                                "user=latecomer", url, NULL}),
                    413);
    /* (PHP may run the script on the body cut before the late part: it
     * then reads no user, as the decision did.) */
    CU_ASSERT_EQUAL(lines_with(e2e.app, "uploads.log", "latecomer"), 0);
    CU_ASSERT_EQUAL(lines_with(e2e.app, "uploads.log", "upload uploader "), 1);
}

/* ---- CGI (CGI.pm) ----------------------------------------------------- */

static int start_cgi(void)
{
    static const char *const conf[] = {"path=\"/app.cgi\" param=\"op=login\"",
                                       "path=\"/mp.cgi\" param=\"op=login\"",
                                       NULL};
    static const char *const site[] = {"client_max_body_size 8m",
                                       "client_max_body_size 64m", NULL};

    if (e2e_prepare_backend("suspect.xml", conf) != 0 ||
        e2e_write_cgi("mp.cgi", cgipm_app) != 0 || e2e_start_suspect() != 0) {
        return -1;
    }
    return e2e_start_nginx_edits("nginx/suspect-cgi.conf", site);
}

static void test_cgi(void)
{
    char huge[TEST_PATH_MAX + 8], big[TEST_PATH_MAX + 8], sum[65], bsum[65];
    char url[E2E_URL], want[200];
    test_http_t r;

    CU_ASSERT_FATAL(start_cgi() == 0);
    write_blob("huge.bin", HUGE_, sum);
    write_blob("big.bin", BIG, bsum);
    snprintf(huge, sizeof(huge), "file=@%s/huge.bin", e2e.dir);
    snprintf(big, sizeof(big), "file=@%s/big.bin", e2e.dir);
    e2e_url(url, "/mp.cgi?op=login");
    /* Two logins of m1 (one of them bare LF, which CGI.pm does not read
     * but PHP would), then it is locked. */
    CU_ASSERT_EQUAL(e2e_status((const char *[]){"-F", "member=m1", url, NULL}),
                    200);
    CU_ASSERT_EQUAL(post_as("/mp.cgi?op=login", CT,
                            "--b\n" CDN "\"member\"\n\n@U@\n--b--\n", "m1"),
                    200);
    CU_ASSERT_EQUAL(post_as("/mp.cgi?op=login", CT,
                            PART("\"member\"", "@U@") "--b--\r\n", "m1"),
                    429);
    CU_ASSERT_EQUAL(lines_with(e2e.dir, "performed.log", "login m1 "), 1);
    /* CGI.pm reads the first copy, PHP the last: refused. */
    CU_ASSERT_EQUAL(post_as("/mp.cgi?op=login", CT,
                            PART("\"member\"", "m2")
                                PART("\"member\"", "@U@") "--b--\r\n",
                            "m3"),
                    400);
    /* 10 MiB with the member first: whole. */
    e2e_http(&r, (const char *[]){"-F", "member=m4", "-F", huge, url, NULL});
    snprintf(want, sizeof(want), "ok m4 %s %u", sum, HUGE_);
    CU_ASSERT_EQUAL(r.status, 200);
    CU_ASSERT_PTR_NOT_NULL(r.body != NULL ? strstr(r.body, want) : NULL);
    test_http_free(&r);
    /* The member after a file: refused, and the program records nothing
     * (killed before the end of its input). */
    CU_ASSERT_EQUAL(
        e2e_status((const char *[]){"-F", big, "-F", "member=m5", url, NULL}),
        413);
    CU_ASSERT_EQUAL(lines_with(e2e.dir, "performed.log", "login m5 "), 0);
    /* m1, the bare LF body (CGI.pm read no member), m4. */
    CU_ASSERT_EQUAL(lines_with(e2e.dir, "performed.log", "login "), 3);
}

int abuse_add_multipart_tests(CU_pSuite s)
{
    if (CU_add_test(s, "multipart logins (PHP)", test_php_spellings) == NULL ||
        CU_add_test(s, "multipart readings refused (PHP)", test_php_refused) ==
            NULL ||
        CU_add_test(s, "multipart uploads (PHP)", test_php_uploads) == NULL ||
        CU_add_test(s, "multipart logins and uploads (CGI.pm)", test_cgi) ==
            NULL) {
        return -1;
    }
    return 0;
}
