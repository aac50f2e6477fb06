/*
 * test_suspect_cgi.c - suite "suspect-cgi": the built suspect-cgi run the
 * way a web server runs a CGI program (cgirun.h), once behind a real
 * lighttpd as examples/ deploy it, and its request I/O (wrap_io.h) in
 * process, for the sanitizers and valgrind.
 *
 * The program it wraps is a sh script that touches a marker file and
 * prints the environment it was executed with (/proc/$$/environ: exactly
 * what execve() gave it), the target of its fd 0 and of every descriptor
 * it has, its directory, its arguments and the body it reads: "the same
 * environment and body" is checked byte for byte, "the body was not
 * copied" by fd 0 being the original pipe, "no descriptor of the store"
 * by the list, and "never ran" by the marker's absence.  Counts live in
 * DIR/suspect.lmdb, so every run is a separate process sharing them.
 * No value a request carries reaches a log line.  The request I/O's own
 * tests are in test_wrap_io.c.
 *
 * Length.  About 900 lines: every test here runs the one wrapped script
 * and compares what it printed with what was sent (same_env(),
 * same_body(), fd0(), fds_without(), ran()); kept with those comparisons in one
 * file, each test reads as the request it sends and the bytes it expects.
 */
#include <CUnit/CUnit.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgi-wrapper/wrap_compiled.h"
#include "cgirun.h"
#include "clock.h"
#include "helpers/debian.h"
#include "helpers/e2e.h"
#include "helpers/redisserver.h"
#include "suites.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"

#define MIB (1024 * 1024)

static char echo[TEST_PATH_MAX + 16]; /* DIR/app/echo.cgi, resolved */
static char appdir[TEST_PATH_MAX];
static void (*old_pipe)(int);

static const char echo_script[] =
    "#!/bin/sh\n"
    "touch \"@DIR@/ran\"\n"
    "printf 'Content-Type: text/plain\\r\\n\\r\\n'\n"
    "tr '\\0' '\\n' < /proc/$$/environ\n"
    "echo \"--fd0 $(readlink /proc/$$/fd/0)\"\n"
    "echo \"--fds $(for f in /proc/$$/fd/*; do readlink $f; done)\" | "
    "tr '\\n' ' '; echo\n"
    "echo \"--cwd $(pwd)\"\n"
    "echo \"--args $*\"\n"
    "echo \"--body\"\n"
    "exec cat\n";

static const char limits[] =
    "<ArrayOfSuspectUsageSettingEntity>\n"
    "  <SuspectUsageSettingEntity Action=\"Hello\" LimitCount=\"2\""
    " LimitDuration=\"60\" />\n"
    "</ArrayOfSuspectUsageSettingEntity>\n";

/* @STORE@: extra elements; @CGI@: the attributes of <Cgi>. */
static const char conf_text[] =
    "<Suspect>\n"
    "  <Limits path=\"limits.xml\"/>\n"
    "  @STORE@\n"
    "  <Cgi @CGI@/>\n"
    "  <Route action=\"Hello\" method=\"POST\" path=\"/form\">\n"
    "    <Identity type=\"Member\" from=\"form:member\"/>\n"
    "  </Route>\n"
    "  <Route action=\"Hello\" path=\"/json\">\n"
    "    <Identity type=\"Member\" from=\"json:/member\"/>\n"
    "  </Route>\n"
    "  <Route action=\"Hello\" path=\"/hdr\">\n"
    "    <Identity type=\"Member\" from=\"header:X-Member\"/>\n"
    "  </Route>\n"
    "</Suspect>\n";

/* ---- fixture ------------------------------------------------------------ */

/* Writes text with @DIR@ replaced to DIR/name (mode 0755 when exec). */
static int write_dir_file(const char *name, const char *text, bool exec)
{
    const char *dirs[] = {"@DIR@", e2e.dir, NULL};
    char path[TEST_PATH_MAX];
    char *t = test_subst(text, dirs);
    int rc;

    snprintf(path, sizeof(path), "%s/%s", e2e.dir, name);
    rc = t != NULL ? test_write_file(path, t, strlen(t)) : -1;
    free(t);
    return rc == 0 && exec ? chmod(path, 0755) : rc;
}

/* Writes suspect.xml with store (extra elements) and cgi (<Cgi> attrs;
 * NULL: program = the echo script). */
static int write_conf(const char *store, const char *cgi)
{
    char prog[TEST_PATH_MAX + 32];
    const char *pairs[] = {"@STORE@", store, "@CGI@", cgi, NULL};
    char *text;
    int rc;

    snprintf(prog, sizeof(prog), "program=\"%s\"", echo);
    pairs[3] = cgi != NULL ? cgi : prog;
    text = test_subst(conf_text, pairs);
    rc = text != NULL ? write_dir_file("suspect.xml", text, false) : -1;
    free(text);
    return rc;
}

static void setup(void)
{
    e2e_setup();
    if (e2e.dir == NULL || realpath(e2e.app, appdir) == NULL) {
        return;
    }
    snprintf(echo, sizeof(echo), "%s/echo.cgi", appdir);
    if (e2e_write_cgi("echo.cgi", echo_script) != 0 ||
        test_write_file(e2e.limits, limits, strlen(limits)) != 0 ||
        write_conf("", NULL) != 0) {
        fprintf(stderr, "suspect-cgi: cannot write the fixture\n");
    }
}

static void teardown(void)
{
    e2e_teardown();
}

static int suite_init(void)
{
    old_pipe = signal(SIGPIPE, SIG_IGN); /* a refused body: EPIPE */
    if (cgirun_init() != 0) {
        fprintf(stderr, "suspect-cgi: %s is not built\n", cgirun_bin());
        return -1;
    }
    return 0;
}

static int suite_clean(void)
{
    signal(SIGPIPE, old_pipe);
    return 0;
}

/* ---- checks ------------------------------------------------------------- */

/* suspect-cgi -c DIR/suspect.xml with body (a C string) on a pipe. */
static void run_plain(cgi_out_t *r, const char *const vars[], const char *body)
{
    const char *argv[] = {cgirun_bin(), "-c", e2e.conf, NULL};

    cgirun(r, argv, vars, body, body != NULL ? strlen(body) : 0, false);
}

/* Whether the program ran since the last call (and forgets it). */
static bool ran(void)
{
    char path[TEST_PATH_MAX];

    snprintf(path, sizeof(path), "%s/ran", e2e.dir);
    return unlink(path) == 0;
}

/* Whether the echo script saw exactly the environment of vars. */
static bool same_env(const cgi_out_t *r, const char *const vars[])
{
    const char *env[CGIRUN_MAX_ENV];
    char want[8192] = "Content-Type: text/plain\r\n\r\n";

    cgirun_env(env, vars);
    for (size_t i = 0; env[i] != NULL; i++) {
        strcat(strcat(want, env[i]), "\n");
    }
    return cgirun_starts(r, strcat(want, "--fd0 "));
}

/* Whether the echo script read exactly body. */
static bool same_body(const cgi_out_t *r, const char *body, size_t len)
{
    const char *b = r->out != NULL ? strstr(r->out, "\n--body\n") : NULL;

    if (b == NULL) {
        return false;
    }
    b += 8;
    return r->out_len - (size_t)(b - r->out) == len &&
           memcmp(b, body, len) == 0;
}

/* What the echo script's fd 0 was ("--fd0 ..." line), written into line
 * (the caller's; "" when the script did not say). */
static const char *fd0(char line[TEST_PATH_MAX], const cgi_out_t *r)
{
    const char *p = r->out != NULL ? strstr(r->out, "\n--fd0 ") : NULL;

    line[0] = '\0';
    if (p != NULL) {
        snprintf(line, TEST_PATH_MAX, "%.*s", (int)strcspn(p + 7, "\n"), p + 7);
    }
    return line;
}

/* Whether the echo script listed its descriptors, none of them a file
 * whose name holds what or, with no_sockets, a socket. */
static bool fds_without(const cgi_out_t *r, const char *what, bool no_sockets)
{
    const char *p = r->out != NULL ? strstr(r->out, "\n--fds ") : NULL;
    size_t len = p != NULL ? strcspn(p + 1, "\n") : 0;
    char *line = p != NULL ? strndup(p + 1, len) : NULL;
    bool ok = line != NULL && strstr(line, what) == NULL &&
              (!no_sockets || strstr(line, "socket:") == NULL);

    free(line);
    return ok;
}

/* "member=NAME&pad=xxx..." of len bytes (malloc'ed). */
static char *form_body(const char *member, size_t len)
{
    char *b = malloc(len + 1);
    int n = snprintf(b, len + 1, "member=%s&pad=", member);

    memset(b + n, 'x', len - (size_t)n);
    b[len] = '\0';
    return b;
}

/* ---- runs --------------------------------------------------------------- */

/* No form source: the program gets the same environment, its stdin is
 * the original pipe (nothing copied), its directory is its own. */
static void test_allowed_untouched(void)
{
    char line[TEST_PATH_MAX];
    static const char body[] = "hello\0world";
    const char *vars[] = {"REQUEST_METHOD=POST",
                          "REQUEST_URI=/hdr",
                          "HTTP_X_MEMBER=m1",
                          "CONTENT_LENGTH=11",
                          "CONTENT_TYPE=application/octet-stream",
                          NULL};
    const char *argv[] = {cgirun_bin(), "-c", e2e.conf, NULL};
    char cwd[TEST_PATH_MAX + 8];
    cgi_out_t r;

    cgirun(&r, argv, vars, body, 11, false);
    CU_ASSERT(cgirun_exited_0(&r));
    CU_ASSERT(ran());
    CU_ASSERT(same_env(&r, vars));
    CU_ASSERT(same_body(&r, body, 11));
    CU_ASSERT_EQUAL(strncmp(fd0(line, &r), "pipe:", 5), 0);
    snprintf(cwd, sizeof(cwd), "--cwd %s", appdir);
    CU_ASSERT(cgirun_has_line(&r, cwd));
    CU_ASSERT(cgirun_has_line(&r, "--args "));
    CU_ASSERT_PTR_NULL(r.err);
    cgirun_free(&r);
}

/* suspect-cgi executes the program with its store still open (it frees
 * nothing first): the program gets no descriptor of it, LMDB's files or
 * Redis's connection, and the count was made in the store. */
static void test_no_store_descriptor(void)
{
    const char *vars[] = {"REQUEST_METHOD=GET", "REQUEST_URI=/hdr",
                          "HTTP_X_MEMBER=fd1", NULL};
    char store[TEST_PATH_MAX + 128];
    test_redis_t rs;
    cgi_out_t r;

    run_plain(&r, vars, NULL);
    CU_ASSERT(ran());
    CU_ASSERT(fds_without(&r, ".lmdb", false));
    CU_ASSERT(cgirun_has_line(&r, "--args "));
    cgirun_free(&r);
    memset(&rs, 0, sizeof(rs));
    CU_ASSERT_FATAL(test_redis_start(&rs, false, NULL) == 0);
    snprintf(store, sizeof(store), "<Store type=\"redis\" url=\"%s\"/>",
             rs.url);
    CU_ASSERT_FATAL(write_conf(store, NULL) == 0);
    run_plain(&r, vars, NULL);
    CU_ASSERT(ran());
    CU_ASSERT(fds_without(&r, ".lmdb", true));
    CU_ASSERT_EQUAL(test_redis_int(&rs, "ZCARD Hello:fd1"), 1);
    cgirun_free(&r);
    test_redis_stop(&rs);
}

/* A form source read a body from a pipe (60 KB, within the default 64K
 * formMax: a longer one is a 413): the program still gets all of it (a
 * memfd), and the form identity counts across processes. */
static void test_form_memfd(void)
{
    char line[TEST_PATH_MAX];
    char *body = form_body("f1", 60000);
    char clen[48];
    const char *vars[] = {"REQUEST_METHOD=POST", "REQUEST_URI=/form",
                          "CONTENT_TYPE=application/x-www-form-urlencoded",
                          clen, NULL};
    cgi_out_t r;

    snprintf(clen, sizeof(clen), "CONTENT_LENGTH=%zu", strlen(body));
    for (int i = 0; i < 2; i++) {
        run_plain(&r, vars, body);
        CU_ASSERT(ran());
        CU_ASSERT(same_env(&r, vars));
        CU_ASSERT(same_body(&r, body, strlen(body)));
        CU_ASSERT_PTR_NOT_NULL(strstr(fd0(line, &r), "memfd:"));
        cgirun_free(&r);
    }
    run_plain(&r, vars, body);
    CU_ASSERT(cgirun_starts(&r, "Status: 429"));
    CU_ASSERT(!ran());
    cgirun_free(&r);
    free(body);
}

/* A body the web server spooled to a file is sought back, not copied. */
static void test_form_spooled(void)
{
    char line[TEST_PATH_MAX];
    char *body = form_body("f2", 50000);
    char clen[48], want[TEST_PATH_MAX + 16];
    const char *vars[] = {"REQUEST_METHOD=POST", "REQUEST_URI=/form",
                          "CONTENT_TYPE=application/x-www-form-urlencoded",
                          clen, NULL};
    const char *argv[] = {cgirun_bin(), "-c", e2e.conf, NULL};
    char *dir = realpath(e2e.dir, NULL);
    cgi_out_t r;

    snprintf(clen, sizeof(clen), "CONTENT_LENGTH=%zu", strlen(body));
    snprintf(want, sizeof(want), "%s/body.in", dir != NULL ? dir : "");
    cgirun(&r, argv, vars, body, strlen(body), true);
    CU_ASSERT(ran());
    CU_ASSERT(same_body(&r, body, strlen(body)));
    CU_ASSERT_STRING_EQUAL(fd0(line, &r), want);
    cgirun_free(&r);
    free(body);
    free(dir);
}

/* A multipart upload (1 MiB file, past formMax), member before it and
 * note after, or the other way round when late (malloc'ed). */
static char *upload_body(bool late, size_t *len)
{
    static const char cd[] = "--b\r\nContent-Disposition: form-data; name=";
    const char *member = "\"member\"\r\n\r\nmp1", *note = "\"note\"\r\n\r\nhi";
    char *b = malloc(MIB + 1024);
    size_t n;

    CU_ASSERT_FATAL(b != NULL);
    n = (size_t)sprintf(b, "%s%s\r\n%s\"f\"; filename=\"f.bin\"\r\n\r\n", cd,
                        late ? note : member, cd);
    memset(b + n, 'a', MIB);
    *len = n + MIB +
           (size_t)sprintf(b + n + MIB, "\r\n%s%s\r\n--b--\r\n", cd,
                           late ? member : note);
    return b;
}

/* Multipart bodies past formMax: read whole through the check before the
 * program runs, on a pipe (a memfd) or spooled (sought back); a member
 * after the file is refused (413, one log line) and nothing runs. */
static void test_multipart(void)
{
    char clen[48];
    const char *vars[] = {"REQUEST_METHOD=POST", "REQUEST_URI=/form",
                          "CONTENT_TYPE=multipart/form-data; boundary=b", clen,
                          NULL};
    const char *argv[] = {cgirun_bin(), "-c", e2e.conf, NULL};

    for (int late = 0; late < 2; late++) {
        size_t len = 0;
        char *body = upload_body(late != 0, &len);

        snprintf(clen, sizeof(clen), "CONTENT_LENGTH=%zu", len);
        for (int spool = 0; spool < 2; spool++) {
            cgi_out_t r;

            cgirun(&r, argv, vars, body, len, spool != 0);
            CU_ASSERT(ran() == !late);
            CU_ASSERT(late || same_body(&r, body, len));
            CU_ASSERT(!late || cgirun_starts(&r, "Status: 413"));
            CU_ASSERT(!late || cgirun_one_log_line(&r, "field past formMax"));
            cgirun_free(&r);
        }
        free(body);
    }
}

/* A JSON batch through suspect-cgi (jansson linked statically): each
 * element one attempt: a batch of two for m5 runs, the next single call
 * for m5 is the third and is denied; a batch of three for m6 is denied
 * whole; a key given twice is refused, the program never runs. */
static void test_json_batch(void)
{
    char clen[48];
    const char *vars[] = {"REQUEST_METHOD=POST", "REQUEST_URI=/json",
                          "CONTENT_TYPE=application/json", clen, NULL};
    static const struct {
        const char *body;
        const char *status; /* NULL: the program runs */
    } steps[] = {
        {"[{\"member\":\"m5\"},{\"member\":\"m5\"}]", NULL},
        {"{\"member\":\"m5\"}", "Status: 429"},
        {"[{\"member\":\"m6\"},{\"member\":\"m6\"},{\"member\":\"m6\"}]",
         "Status: 429"},
        {"{\"member\":\"m7\",\"member\":\"m8\"}", "Status: 400"},
    };

    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        cgi_out_t r;

        snprintf(clen, sizeof(clen), "CONTENT_LENGTH=%zu",
                 strlen(steps[i].body));
        run_plain(&r, vars, steps[i].body);
        CU_ASSERT(ran() == (steps[i].status == NULL));
        CU_ASSERT(steps[i].status != NULL ||
                  same_body(&r, steps[i].body, strlen(steps[i].body)));
        CU_ASSERT(steps[i].status == NULL ||
                  cgirun_starts(&r, steps[i].status));
        cgirun_free(&r);
    }
}

/* The third request of an identity in 60 s gets the 429 from a separate
 * process (default store: lmdb at $SUSPECT_LMDB); the program never
 * runs; other identities still pass. */
static void test_denied(void)
{
    const char *vars[] = {"REQUEST_METHOD=GET", "REQUEST_URI=/hdr",
                          "HTTP_X_MEMBER=m2", NULL};
    const char *other[] = {"REQUEST_METHOD=GET", "REQUEST_URI=/hdr",
                           "HTTP_X_MEMBER=m3", NULL};
    char path[TEST_PATH_MAX];
    cgi_out_t r;

    for (int i = 0; i < 2; i++) {
        run_plain(&r, vars, NULL);
        CU_ASSERT(ran());
        cgirun_free(&r);
    }
    run_plain(&r, vars, NULL);
    CU_ASSERT(cgirun_exited_0(&r));
    CU_ASSERT(cgirun_starts(&r, "Status: 429 Too Many Requests\r\n"));
    CU_ASSERT(r.out != NULL && strstr(r.out, "\r\nRetry-After: ") != NULL);
    CU_ASSERT(!ran());
    CU_ASSERT_PTR_NULL(r.err);
    cgirun_free(&r);
    run_plain(&r, other, NULL);
    CU_ASSERT(ran());
    cgirun_free(&r);
    snprintf(path, sizeof(path), "%s/suspect.lmdb", e2e.dir);
    CU_ASSERT_EQUAL(access(path, F_OK), 0);
}

/* A compiled configuration reads through the WordPress steps, the
 * number step and an alias table (read at each start): alice, al%41ice
 * and her id 0027 are one counter. */
static void test_aliases(void)
{
    static const char *const names[] = {
        "HTTP_X_MEMBER=alice", "HTTP_X_MEMBER=al%41ice", "HTTP_X_MEMBER=0027"};
    const char *edit[] = {"from=\"header:X-Member\"/>",
                          "from=\"header:X-Member\" normalize=\"wordpress-user "
                          "number aliases:@DIR@/aliases.tsv\"/>",
                          NULL};
    char *text = test_read_file(e2e.conf, NULL);
    char *edited = text != NULL ? test_subst(text, edit) : NULL;
    cgi_out_t r;

    CU_ASSERT_FATAL(edited != NULL);
    CU_ASSERT_FATAL(write_dir_file("suspect.xml", edited, false) == 0);
    CU_ASSERT_FATAL(write_dir_file("aliases.tsv", "27\talice\n", false) == 0);
    for (size_t i = 0; i < 3; i++) {
        const char *vars[] = {"REQUEST_METHOD=GET", "REQUEST_URI=/hdr",
                              names[i], NULL};

        run_plain(&r, vars, NULL);
        CU_ASSERT(i < 2 ? ran() : !ran());
        CU_ASSERT(i < 2 || cgirun_starts(&r, "Status: 429"));
        cgirun_free(&r);
    }
    free(edited);
    free(text);
}

/* A 500 (the client learns nothing more) and one line for the log. */
static void expect_500(const char *conf, const char *log_text)
{
    const char *vars[] = {"REQUEST_METHOD=GET", "REQUEST_URI=/hdr",
                          "HTTP_X_MEMBER=m4", NULL};
    const char *argv[] = {cgirun_bin(), "-c", conf, NULL};
    cgi_out_t r;

    cgirun(&r, argv, vars, NULL, 0, false);
    CU_ASSERT(cgirun_exited_0(&r));
    CU_ASSERT(cgirun_starts(&r, "Status: 500 Internal Server Error\r\n"));
    CU_ASSERT(cgirun_one_log_line(&r, log_text));
    CU_ASSERT(!ran());
    cgirun_free(&r);
}

static void test_bad_config(void)
{
    static const char *const bad[][2] = {
        {"<Suspect><Limits path=\"limits.xml\"/>", "not well-formed"},
        {"<Suspect><Limits path=\"none.xml\"/>"
         "<Cgi program=\"/bin/true\"/></Suspect>",
         "none.xml"},
        {"<Suspect><Server mode=\"authorizer\"/>"
         "<Limits path=\"limits.xml\"/></Suspect>",
         "suspect.xml:1: Server: suspect-cgi runs the program itself"},
        {"<Suspect><Limits path=\"limits.xml\"/>"
         "<Upstream address=\"tcp:127.0.0.1:9\"/></Suspect>",
         "Upstream: suspect-cgi runs CGI programs"},
        {"<Suspect><Limits path=\"limits.xml\"/><Cgi root=\"/tmp\"/>\n"
         "<Route action=\"Hello\" path=\"/x\"><Identity type=\"M\"\n"
         " from=\"form:u\" normalize=\"html-entities only:a-z\"/>"
         "</Route></Suspect>",
         "suspect.xml:2: Identity: normalize html-entities needs the HTML "
         "entity table of an XML parser"},
        {"<Suspect><Limits path=\"limits.xml\"/><Cgi root=\"/tmp\"/>\n"
         "<Route action=\"Hello\" path=\"/x\"><Identity type=\"M\"\n"
         " from=\"xmlrpc:wp.*:2\"/></Route></Suspect>",
         "suspect.xml:2: Identity: xmlrpc: sources need an XML parser"},
        {"<Suspect><Limits path=\"limits.xml\"/><Cgi root=\"/tmp\"/>\n"
         "<Route action=\"Hello\" path=\"/x\"><Identity type=\"M\"\n"
         " from=\"form:u\" normalize=\"login collate:mysql-unicode-ci\"/>"
         "</Route></Suspect>",
         "suspect.xml:2: Identity: normalize collate needs ICU's collation "
         "tables"},
    };
    char missing[TEST_PATH_MAX];

    snprintf(missing, sizeof(missing), "%s/missing.xml", e2e.dir);
    expect_500(missing, "missing.xml");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CU_ASSERT_FATAL(write_dir_file("suspect.xml", bad[i][0], false) == 0);
        expect_500(e2e.conf, bad[i][1]);
    }
}

static void test_memory_store(void)
{
    CU_ASSERT_FATAL(write_conf("<Store type=\"memory\"/>", NULL) == 0);
    expect_500(e2e.conf, "suspect.xml:3: Store: type memory forgets every "
                         "count");
}

/* A store that cannot be opened: failMode decides, and only "open" runs
 * the program. */
static void test_store_fail_modes(void)
{
    static const char *const modes[][2] = {
        {"open", NULL}, {"closed", "Status: 503"}, {"local", "Status: 500"}};
    const char *vars[] = {"REQUEST_METHOD=GET", "REQUEST_URI=/hdr",
                          "HTTP_X_MEMBER=m5", NULL};
    char store[TEST_PATH_MAX];
    cgi_out_t r;

    for (size_t i = 0; i < 3; i++) {
        snprintf(store, sizeof(store),
                 "<Store type=\"lmdb\" path=\"@DIR@/none/x.lmdb\" "
                 "failMode=\"%s\"/>",
                 modes[i][0]);
        CU_ASSERT_FATAL(write_conf(store, NULL) == 0);
        run_plain(&r, vars, NULL);
        CU_ASSERT(cgirun_one_log_line(&r, "none/x.lmdb"));
        if (modes[i][1] == NULL) {
            CU_ASSERT(ran());
            CU_ASSERT(same_env(&r, vars));
        } else {
            CU_ASSERT(cgirun_starts(&r, modes[i][1]));
            CU_ASSERT(!ran());
        }
        cgirun_free(&r);
    }
}

/* The same store, failMode="local", with an action's own fail mode: the
 * action's wins (open runs the program, closed is a 503), and a route in
 * shadow mode lets the request through, logged as would-deny. */
static void test_store_fail_mode_per_action(void)
{
    static const struct {
        const char *action; /* the <Action> element */
        const char *status; /* NULL: the program runs */
        const char *log;    /* in the last log line */
    } cases[] = {
        {"<Action name=\"Hello\" failMode=\"open\"/>", NULL, "unchecked"},
        {"<Action name=\"Hello\" failMode=\"closed\"/>", "Status: 503",
         "none/x.lmdb"},
        {"<Action name=\"Hello\" failMode=\"closed\" shadow=\"yes\"/>", NULL,
         "would-deny /hdr action=Hello status=503 (store unusable)"},
    };
    const char *vars[] = {"REQUEST_METHOD=GET", "REQUEST_URI=/hdr",
                          "HTTP_X_MEMBER=m6", NULL};
    char store[TEST_PATH_MAX + 128];
    cgi_out_t r;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(store, sizeof(store),
                 "<Store type=\"lmdb\" path=\"@DIR@/none/x.lmdb\" "
                 "failMode=\"local\"/>%s",
                 cases[i].action);
        CU_ASSERT_FATAL(write_conf(store, NULL) == 0);
        run_plain(&r, vars, NULL);
        CU_ASSERT(r.err != NULL && strstr(r.err, cases[i].log) != NULL);
        if (cases[i].status == NULL) {
            CU_ASSERT(ran());
            CU_ASSERT(same_env(&r, vars));
        } else {
            CU_ASSERT(cgirun_starts(&r, cases[i].status));
            CU_ASSERT(!ran());
        }
        cgirun_free(&r);
    }
}

/* Whether r's log lines hold none of the request's values. */
static bool no_value_logged(const cgi_out_t *r)
{
    static const char *const markers[] = {"QSECRET41", "CSECRET43", "HSECRET44",
                                          "PSECRET45", NULL};

    for (size_t i = 0; markers[i] != NULL; i++) {
        if (r->err != NULL && strstr(r->err, markers[i]) != NULL) {
            fprintf(stderr, "\n  suspect-cgi logged %s: %s\n", markers[i],
                    r->err);
            return false;
        }
    }
    return true;
}

/* Values in the query, a cookie, the identity's header and a password
 * never reach the log: a denial at -v, a 503 at the default level. */
static void test_no_values_logged(void)
{
    const char *vars[] = {"REQUEST_METHOD=GET",
                          "REQUEST_URI=/hdr?token=QSECRET41",
                          "QUERY_STRING=token=QSECRET41",
                          "HTTP_X_MEMBER=HSECRET44",
                          "HTTP_COOKIE=session=CSECRET43",
                          "HTTP_AUTHORIZATION=Basic PSECRET45",
                          NULL};
    const char *verbose[] = {cgirun_bin(), "-v", "-c", e2e.conf, NULL};
    cgi_out_t r;

    for (int i = 0; i < 3; i++) {
        cgirun(&r, verbose, vars, NULL, 0, false);
        CU_ASSERT(no_value_logged(&r));
        if (i == 2) {
            CU_ASSERT(cgirun_starts(&r, "Status: 429"));
            CU_ASSERT(cgirun_one_log_line(&r, "deny /hdr action="));
        }
        cgirun_free(&r);
    }
    CU_ASSERT_FATAL(
        write_conf("<Store type=\"lmdb\" path=\"@DIR@/none/x.lmdb\" "
                   "failMode=\"closed\"/>",
                   NULL) == 0);
    run_plain(&r, vars, NULL);
    CU_ASSERT(cgirun_starts(&r, "Status: 503"));
    CU_ASSERT(r.err != NULL && no_value_logged(&r));
    cgirun_free(&r);
}

/* A #! wrapper: the kernel passes "-c CONF [PROGRAM]" as one argument,
 * then the wrapper's path, then the request's own arguments. */
static void test_shebang(void)
{
    static const char *const lines[][2] = {
        {"#!@BIN@ -c @CONF@ @ECHO@\n", "--args "},
        {"#!@BIN@ -v -c @CONF@\n# <Cgi program> names it\n", "--args word"},
    };
    const char *vars[] = {"REQUEST_METHOD=GET", "REQUEST_URI=/hdr",
                          "HTTP_X_MEMBER=m6", NULL};
    const char *pairs[] = {"@BIN@",  cgirun_bin(), "@CONF@", e2e.conf,
                           "@ECHO@", echo,         NULL};
    char wrapper[TEST_PATH_MAX];
    const char *argv[] = {wrapper, NULL, NULL};
    cgi_out_t r;

    snprintf(wrapper, sizeof(wrapper), "%s/wrapper.cgi", e2e.dir);
    for (size_t i = 0; i < 2; i++) {
        char *text = test_subst(lines[i][0], pairs);

        CU_ASSERT_FATAL(write_dir_file("wrapper.cgi", text, true) == 0);
        free(text);
        argv[1] = i == 1 ? "word" : NULL;
        cgirun(&r, argv, vars, NULL, 0, false);
        CU_ASSERT(ran());
        CU_ASSERT(same_env(&r, vars));
        CU_ASSERT(cgirun_has_line(&r, lines[i][1]));
        cgirun_free(&r);
    }
    /* No blank after -c: nothing to split, so the wrapper itself would be
     * the program, and would start suspect-cgi again. */
    {
        char *text = test_subst("#!@BIN@ -c@CONF@\n", pairs);

        CU_ASSERT_FATAL(write_dir_file("wrapper.cgi", text, true) == 0);
        free(text);
        argv[1] = NULL;
        cgirun(&r, argv, vars, NULL, 0, false);
        CU_ASSERT(cgirun_starts(&r, "Status: 500"));
        CU_ASSERT(cgirun_one_log_line(&r, "would start suspect-cgi again"));
        CU_ASSERT(!ran());
        cgirun_free(&r);
    }
}

/* <Cgi root>: SCRIPT_FILENAME, or a named program, must lie inside. */
static void test_cgi_root(void)
{
    char inside[TEST_PATH_MAX + 32], outside[TEST_PATH_MAX + 32];
    char missing[TEST_PATH_MAX + 32], other[TEST_PATH_MAX];
    const char *vars[] = {"REQUEST_METHOD=GET", "REQUEST_URI=/x", inside, NULL};
    const char *named[] = {cgirun_bin(), "-c", e2e.conf, other, NULL};
    cgi_out_t r;

    snprintf(inside, sizeof(inside), "SCRIPT_FILENAME=%s", echo);
    snprintf(outside, sizeof(outside), "SCRIPT_FILENAME=%s/other.cgi", e2e.dir);
    snprintf(missing, sizeof(missing), "SCRIPT_FILENAME=%s/none.cgi", appdir);
    snprintf(other, sizeof(other), "%s/other.cgi", e2e.dir);
    CU_ASSERT_FATAL(write_conf("", "root=\"@DIR@/app\"") == 0);
    CU_ASSERT_FATAL(write_dir_file("other.cgi", echo_script, true) == 0);
    run_plain(&r, vars, NULL);
    CU_ASSERT(ran());
    CU_ASSERT(same_env(&r, vars));
    cgirun_free(&r);
    vars[2] = outside;
    run_plain(&r, vars, NULL);
    CU_ASSERT(cgirun_starts(&r, "Status: 403"));
    CU_ASSERT(!ran());
    cgirun_free(&r);
    vars[2] = missing;
    run_plain(&r, vars, NULL);
    CU_ASSERT(cgirun_starts(&r, "Status: 404"));
    cgirun_free(&r);
    cgirun(&r, named, vars, NULL, 0, false);
    CU_ASSERT(cgirun_starts(&r, "Status: 500"));
    CU_ASSERT(cgirun_one_log_line(&r, "other.cgi"));
    CU_ASSERT(!ran());
    cgirun_free(&r);
}

/* Bodies suspect-cgi cannot hand on: over 16 MiB after a form read
 * (413), and one that ends before CONTENT_LENGTH (400). */
static void test_body_errors(void)
{
    char *body = form_body("f3", 70000);
    char clen[48] = "CONTENT_LENGTH=20000000";
    const char *vars[] = {"REQUEST_METHOD=POST", "REQUEST_URI=/form",
                          "CONTENT_TYPE=application/x-www-form-urlencoded",
                          clen, NULL};
    cgi_out_t r;

    run_plain(&r, vars, body);
    CU_ASSERT(cgirun_starts(&r, "Status: 413"));
    CU_ASSERT(!ran());
    cgirun_free(&r);
    snprintf(clen, sizeof(clen), "CONTENT_LENGTH=100");
    run_plain(&r, vars, "member=f3");
    CU_ASSERT(cgirun_starts(&r, "Status: 400"));
    CU_ASSERT(!ran());
    cgirun_free(&r);
    free(body);
}

/* ---- behind lighttpd ---------------------------------------------------- */

/* The example application in DIR/app, examples/suspect-cgi.xml and the
 * wrapper examples/lighttpd/app.cgi in the document root DIR/www, paths
 * moved into DIR, behind lighttpd (cgirun_start_lighttpd()). */
static int start_lighttpd(void)
{
    char etc[TEST_PATH_MAX], app[TEST_PATH_MAX], src[TEST_PATH_MAX];
    const char *edits[] = {"/usr/sbin/suspect-cgi",
                           cgirun_bin(),
                           "/etc/suspect/",
                           etc,
                           "/var/lib/suspect",
                           e2e.dir,
                           NULL};

    snprintf(etc, sizeof(etc), "%s/", e2e.dir);
    snprintf(app, sizeof(app), "%s/app.cgi", e2e.app);
    mkdir(e2e_path(src, "www"), 0755);
    if (test_copy_file(e2e_src(src, "examples/limits.xml"), e2e.limits, 0644) ||
        test_copy_file(e2e_src(src, "examples/app/app.cgi"), app, 0755) ||
        e2e_write_example("suspect-cgi.xml", "suspect-cgi.xml", edits) ||
        e2e_write_example("lighttpd/app.cgi", "www/app.cgi", edits) ||
        chmod(e2e_path(src, "www/app.cgi"), 0755) != 0) {
        return -1;
    }
    return cgirun_start_lighttpd();
}

/* The example application behind lighttpd and a #! wrapper: a form
 * identity (the body reaches the program intact: it signs the member
 * in), a cookie and the client address, the 429s, and nothing of
 * suspect-cgi in the server's error log. */
static void test_lighttpd(void)
{
    char login_url[E2E_URL], bank_url[E2E_URL], index_url[E2E_URL];
    const char *login[] = {"-d", "member=lx&password=demo", NULL, NULL};
    const char *bank[] = {"-b", "member=bx", "-d", "account=1", NULL, NULL};
    char log[TEST_PATH_MAX], abs[TEST_PATH_MAX], snap[TEST_PATH_MAX + 64];
    long long deadline, since;
    struct stat st;
    test_http_t r;
    ino_t ino;
    char *text;

    CU_ASSERT_FATAL(start_lighttpd() == 0);
    login[2] = e2e_url(login_url, "/app.cgi?op=login");
    bank[4] = e2e_url(bank_url, "/app.cgi?op=bank");
    /* Uncounted requests until the compiled configuration is saved (its
     * sources 100 ms old); from then on it is used, not written again. */
    snprintf(log, sizeof(log), "%s/suspect-cgi.xml", e2e.dir);
    CU_ASSERT_FATAL(
        cgi_snap_path(e2e.dir, log, abs, sizeof(abs), snap, sizeof(snap)) == 0);
    deadline = mono_ms() + test_scale_ms(5000);
    do {
        e2e_http(&r, (const char *[]){e2e_url(index_url, "/app.cgi"), NULL});
        CU_ASSERT(e2e_body_starts(&r, 200, "ok index"));
        test_http_free(&r);
    } while (stat(snap, &st) != 0 && mono_ms() < deadline);
    CU_ASSERT_FATAL(stat(snap, &st) == 0);
    ino = st.st_ino;
    since = mono_ms();
    for (int i = 0; i < 2; i++) {
        e2e_http(&r, login);
        CU_ASSERT(e2e_body_starts(&r, 200, "ok login: signed in as lx"));
        test_http_free(&r);
        CU_ASSERT_EQUAL(e2e_status(bank), 200);
    }
    e2e_http(&r, login);
    CU_ASSERT(e2e_is_denial(&r, "SecureLoginForceForgotAccount", 2, 86400,
                            e2e_retry_floor(86400, since), 86400));
    test_http_free(&r);
    e2e_http(&r, bank);
    CU_ASSERT(e2e_is_denial(&r, "BankAccountUpdate", 2, 120,
                            e2e_retry_floor(120, since), 120));
    test_http_free(&r);
    CU_ASSERT(stat(snap, &st) == 0 && st.st_ino == ino);
    /* Debian's lighttpd.conf sends CGI programs' stderr to its errorlog */
    text = test_read_file(e2e_path(log, "log/error.log"), NULL);
    CU_ASSERT(text != NULL && strstr(text, "suspect-cgi") == NULL &&
              strstr(text, "Sanitizer") == NULL);
    free(text);
}

int register_suspect_cgi_suite(void)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        {"allowed: same environment and body, stdin untouched",
         test_allowed_untouched},
        {"no descriptor of the store reaches the program",
         test_no_store_descriptor},
        {"form source: whole body through a memfd", test_form_memfd},
        {"form source: spooled body sought back", test_form_spooled},
        {"multipart: uploads checked before the program", test_multipart},
        {"denied across processes (lmdb)", test_denied},
        {"JSON batch: one attempt per call", test_json_batch},
        {"bad configuration: 500", test_bad_config},
        {"aliases and the WordPress steps, compiled", test_aliases},
        {"memory store: 500", test_memory_store},
        {"store unusable: fail modes", test_store_fail_modes},
        {"store unusable: an action's fail mode, shadow",
         test_store_fail_mode_per_action},
        {"no value in any log line", test_no_values_logged},
        {"#! wrapper", test_shebang},
        {"Cgi root", test_cgi_root},
        {"body errors: 413, 400", test_body_errors},
        {"lighttpd mod_cgi with a #! wrapper", test_lighttpd},
    };
    CU_pSuite s = CU_add_suite_with_setup_and_teardown(
        "suspect-cgi", suite_init, suite_clean, setup, teardown);

    if (s == NULL) {
        return -1;
    }
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return cgirun_add_io_tests(s) || cgirun_add_snap_tests(s) ||
                   cgirun_add_snap_run_tests(s) || cgirun_add_cgipm_tests(s) ||
                   cgirun_add_watched_tests(s)
               ? -1
               : 0;
}
