/*
 * test_guard_target.c - suite "guard": the script that runs, whatever the
 * URL (middleware/guard/target.c).
 *
 * A directory read as the web server's index names, or refused for an
 * authorizer when none is named and a route lies under it; nginx's
 * auth_request subrequest without SCRIPT_NAME refused, with an empty one
 * (no script runs in that location) decided on its URL alone; the file a
 * pinned <Upstream scriptFilename> or a <Cgi root> program (through a
 * symbolic link) is, under the document root; a pinned file outside it
 * matched by the URL only.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "guard_test.h"
#include "helpers/fakereq.h"
#include "helpers/util.h"

/* One route, Many (1000 per 60 s) by client address, on path. */
static int open_one(gt_fixture_t *f, suspect_conf_identity_t *id,
                    suspect_conf_route_t *route, const char *path,
                    void (*edit)(suspect_conf_t *))
{
    suspect_conf_t conf;

    *id = gt_ident("Ip", "client-ip");
    *route = gt_route("Many", path, id, 1);
    conf = gt_conf(route, 1);
    if (edit != NULL) {
        edit(&conf);
    }
    return gt_open(f, &conf);
}

/* The verdict on vars in role. */
static mw_verdict_t decide_as(gt_fixture_t *f, const char *const *vars,
                              int role)
{
    fakereq_t r;
    mw_verdict_t v;

    fakereq_init(&r, vars, NULL, 0);
    r.req.role = role;
    CU_ASSERT_EQUAL(
        mw_guard_decide(f->g, f->lim, f->store, &r.req, GT_NOW, &v, NULL),
        SUSPECT_OK);
    fakereq_free(&r);
    return v;
}

static void authorizer_mode(suspect_conf_t *c)
{
    c->mode = SUSPECT_MODE_AUTHORIZER;
}

static void authorizer_index(suspect_conf_t *c)
{
    c->mode = SUSPECT_MODE_AUTHORIZER;
    c->index_files = "index.html app.cgi";
}

/* lighttpd and Apache ask before they choose a directory's index. */
static void test_directory_index(void)
{
    static const char *const root[] = {
        "REQUEST_METHOD=POST",       "REQUEST_URI=/?op=login",
        "SCRIPT_FILENAME=/srv/app/", "DOCUMENT_ROOT=/srv/app",
        "REMOTE_ADDR=192.0.2.1",     NULL};
    static const char *const sub[] = {
        "REQUEST_URI=/static/", "SCRIPT_FILENAME=/srv/app/static/",
        "DOCUMENT_ROOT=/srv/app", "REMOTE_ADDR=192.0.2.1", NULL};
    static const char *const file[] = {
        "REQUEST_URI=/app.cgi/x?op=login", "SCRIPT_FILENAME=/srv/app/app.cgi",
        "DOCUMENT_ROOT=/srv/app", "REMOTE_ADDR=192.0.2.1", NULL};
    suspect_conf_identity_t id;
    suspect_conf_route_t route;
    gt_fixture_t f;
    mw_verdict_t v;

    /* no index named: a directory with a route under it is refused */
    CU_ASSERT_FATAL(open_one(&f, &id, &route, "/app.cgi", authorizer_mode) ==
                    0);
    v = decide_as(&f, root, MW_ROLE_AUTHORIZER);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_REJECT);
    CU_ASSERT_EQUAL(v.status, 500);
    CU_ASSERT_PTR_NOT_NULL(strstr(v.why, "<Server index>"));
    /* one with no route under it, and a file, are decided as usual */
    CU_ASSERT_EQUAL(decide_as(&f, sub, MW_ROLE_AUTHORIZER).kind,
                    MW_VERDICT_PASS);
    CU_ASSERT_EQUAL(decide_as(&f, file, MW_ROLE_AUTHORIZER).kind,
                    MW_VERDICT_ALLOW);
    gt_close(&f);

    /* index named: "/" is read as /index.html and /app.cgi */
    CU_ASSERT_FATAL(open_one(&f, &id, &route, "/app.cgi", authorizer_index) ==
                    0);
    CU_ASSERT_EQUAL(decide_as(&f, root, MW_ROLE_AUTHORIZER).kind,
                    MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(decide_as(&f, sub, MW_ROLE_AUTHORIZER).kind,
                    MW_VERDICT_PASS);
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "192.0.2.1"), 1);
    gt_close(&f);
}

static void auth_request_mode(suspect_conf_t *c)
{
    c->mode = SUSPECT_MODE_AUTH_REQUEST;
    c->index_files = "index.php";
}

/* nginx's subrequest: SCRIPT_NAME says what the location runs. */
static void test_auth_request_script(void)
{
    static const char *const none[] = {"REQUEST_URI=/?op=login",
                                       "REMOTE_ADDR=192.0.2.1", NULL};
    static const char *const empty[] = {"REQUEST_URI=/?op=login",
                                        "SCRIPT_NAME=", "REMOTE_ADDR=192.0.2.1",
                                        NULL};
    static const char *const script[] = {"REQUEST_URI=/?op=login",
                                         "SCRIPT_NAME=/index.php",
                                         "REMOTE_ADDR=192.0.2.1", NULL};
    suspect_conf_identity_t id;
    suspect_conf_route_t route;
    gt_fixture_t f;
    mw_verdict_t v;

    CU_ASSERT_FATAL(
        open_one(&f, &id, &route, "/index.php", auth_request_mode) == 0);
    v = decide_as(&f, none, MW_ROLE_RESPONDER);
    CU_ASSERT_EQUAL(v.kind, MW_VERDICT_REJECT);
    CU_ASSERT_EQUAL(v.status, 500);
    CU_ASSERT_PTR_NOT_NULL(strstr(v.why, "SCRIPT_NAME"));
    /* no script in that location: its URL alone, no index reading (nginx
     * asks again where the index runs: counted once, there) */
    CU_ASSERT_EQUAL(decide_as(&f, empty, MW_ROLE_RESPONDER).kind,
                    MW_VERDICT_PASS);
    CU_ASSERT_EQUAL(decide_as(&f, script, MW_ROLE_RESPONDER).kind,
                    MW_VERDICT_ALLOW);
    CU_ASSERT_EQUAL(gt_count(&f, "Many", "192.0.2.1"), 1);
    gt_close(&f);
}

static void pinned_upstream(suspect_conf_t *c)
{
    c->mode = SUSPECT_MODE_FORWARD;
    c->has_upstream = true;
    c->upstream_address = "unix:/run/php.sock";
    c->upstream_script = "/srv/app/index.php";
}

/* <Upstream scriptFilename>: every path that reaches PHP runs it. */
static void test_pinned_script(void)
{
    static const char *const other[] = {"REQUEST_URI=/other.php?op=login",
                                        "SCRIPT_NAME=/other.php",
                                        "SCRIPT_FILENAME=/srv/app/other.php",
                                        "DOCUMENT_ROOT=/srv/app/",
                                        "REMOTE_ADDR=192.0.2.1",
                                        NULL};
    static const char *const outside[] = {
        "REQUEST_URI=/other.php?op=login", "SCRIPT_NAME=/other.php",
        "DOCUMENT_ROOT=/var/www", "REMOTE_ADDR=192.0.2.1", NULL};
    suspect_conf_identity_t id;
    suspect_conf_route_t route;
    gt_fixture_t f;

    CU_ASSERT_FATAL(open_one(&f, &id, &route, "/index.php", pinned_upstream) ==
                    0);
    CU_ASSERT_EQUAL(decide_as(&f, other, MW_ROLE_RESPONDER).kind,
                    MW_VERDICT_ALLOW);
    gt_close(&f);
    /* not under the document root: the URL only (docs/suspect-xml.md) */
    CU_ASSERT_FATAL(open_one(&f, &id, &route, "/index.php", pinned_upstream) ==
                    0);
    CU_ASSERT_EQUAL(decide_as(&f, outside, MW_ROLE_RESPONDER).kind,
                    MW_VERDICT_PASS);
    gt_close(&f);
}

static char *cgi_dir;

static void cgi_root(suspect_conf_t *c)
{
    c->mode = SUSPECT_MODE_FORWARD;
    c->has_cgi = true;
    c->cgi_root = cgi_dir;
}

/* <Cgi root>: the program that runs, links resolved. */
static void test_cgi_link(void)
{
    char prog[TEST_PATH_MAX], link[TEST_PATH_MAX], sf[TEST_PATH_MAX + 32];
    const char *vars[] = {"REQUEST_URI=/login.cgi?op=login",
                          "SCRIPT_NAME=/login.cgi", sf, "REMOTE_ADDR=192.0.2.1",
                          NULL};
    suspect_conf_identity_t id;
    suspect_conf_route_t route;
    gt_fixture_t f;

    cgi_dir = test_mkdtemp();
    CU_ASSERT_PTR_NOT_NULL_FATAL(cgi_dir);
    snprintf(prog, sizeof(prog), "%s/app.cgi", cgi_dir);
    snprintf(link, sizeof(link), "%s/login.cgi", cgi_dir);
    snprintf(sf, sizeof(sf), "SCRIPT_FILENAME=%s", link);
    CU_ASSERT_FATAL(test_write_file(prog, "#!/bin/sh\n", 10) == 0);
    CU_ASSERT_FATAL(chmod(prog, 0755) == 0 && symlink("app.cgi", link) == 0);
    CU_ASSERT_FATAL(open_one(&f, &id, &route, "/app.cgi", cgi_root) == 0);
    CU_ASSERT_EQUAL(decide_as(&f, vars, MW_ROLE_RESPONDER).kind,
                    MW_VERDICT_ALLOW);
    gt_close(&f);
    test_rmtree(cgi_dir);
    free(cgi_dir);
    cgi_dir = NULL;
}

int guard_register_targets(CU_pSuite s)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        {"target: the directory index", test_directory_index},
        {"target: nginx auth_request's SCRIPT_NAME", test_auth_request_script},
        {"target: a pinned script", test_pinned_script},
        {"target: a link to the CGI program", test_cgi_link},
    };

    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return 0;
}
