/*
 * test_conf.c - the "conf" suite: loading and checking suspect.xml.
 *
 * Most invalid input is data: tests/data/conf/invalid/<case>.xml beside
 * <case>.err, the exact "file:line: message" expected, with the file as its
 * basename.  An .err ending in '*' is a prefix, for messages that hold
 * libxml2's wording or an absolute path of this machine.  The suite fails if
 * the directory holds fewer than MIN_INVALID cases, so the corpus cannot
 * silently vanish; every valid/ file and every example must load.
 *
 * This file also checks a file giving every attribute (each field), the
 * defaults of a minimal file, warnings, every allocation failing in turn
 * and references shared by threads.  test_conf_values.c covers value and
 * route syntax, test_conf_files.c what touches files (paths, the template,
 * DTDs, the size cap).
 */
#include <CUnit/CUnit.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "helpers/corpus.h"
#include "suites.h"
#include "conf/suspect_conf.h"
#include "suspect_failover.h"
#include "suspect_redis.h"
#include "test_conf.h"
#include "helpers/util.h"

#define MIN_INVALID 40

/* Loads suspect.xml at path for the corpus runner (corpus.h). */
static suspect_rc_t load_conf(const char *path, suspect_err_t *err)
{
    const suspect_conf_t *c = NULL;
    suspect_rc_t rc = suspect_conf_load(path, &c, err);

    suspect_conf_unref(c);
    return rc != SUSPECT_OK && c != NULL ? SUSPECT_OK : rc;
}

static void test_invalid_corpus(void)
{
    test_corpus_invalid("conf/invalid", load_conf, MIN_INVALID);
}

static void test_valid_corpus(void)
{
    test_corpus_valid("conf/valid", load_conf, 7);
}

/* The files of examples/ load without a warning: the reference's
 * examples are what operators copy. */
static void test_examples(void)
{
    char data[TEST_PATH_MAX];
    static const char *const files[] = {"suspect.xml", "suspect-php.xml",
                                        "suspect-auth-request.xml",
                                        "suspect-authorizer.xml"};
    const char *src = getenv("SUSPECT_SRCDIR");
    char path[4096], msg[512];

    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        const suspect_conf_t *c = NULL;
        suspect_err_t err;
        if (src != NULL) {
            snprintf(path, sizeof(path), "%s/examples/%s", src, files[i]);
        } else {
            snprintf(path, sizeof(path), "%s/../../examples/%s",
                     test_data_path(data, ""), files[i]);
        }
        suspect_err_clear(&err);
        if (suspect_conf_load(path, &c, &err) != SUSPECT_OK) {
            suspect_err_format(&err, msg, sizeof(msg));
            fprintf(stderr, "\n  %s\n", msg);
            CU_FAIL("an example did not load");
            continue;
        }
        CU_ASSERT(c->nroutes > 0);
        CU_ASSERT_EQUAL(suspect_conf_warning_count(c), 0);
        suspect_conf_unref(c);
    }
}

/* True when the two paths name the same existing file. */
static int same_file(const char *a, const char *b)
{
    char ra[PATH_MAX], rb[PATH_MAX];
    return realpath(a, ra) != NULL && realpath(b, rb) != NULL &&
           strcmp(ra, rb) == 0;
}

/* valid/full.xml: every attribute, none at its default. */
static void test_full_file(void)
{
    const suspect_conf_t *c = NULL;
    const suspect_conf_route_t *r;
    char path[TEST_PATH_MAX], tmpl[TEST_PATH_MAX];
    suspect_err_t err;
    char *body;

    test_data_path(path, "conf/valid/full.xml");
    test_data_path(tmpl, "conf/valid/429.html");
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL_FATAL(suspect_conf_load(path, &c, &err), SUSPECT_OK);
    CU_ASSERT_STRING_EQUAL(c->file, path);
    CU_ASSERT(c->dir[0] == '/' && conf_test_ends_with(c->dir, "/conf/valid"));
    CU_ASSERT_EQUAL(suspect_conf_warning_count(c), 0);

    CU_ASSERT_STRING_EQUAL(c->listen, "tcp:127.0.0.1:9000");
    CU_ASSERT_EQUAL(c->socket_mode, 0600);
    CU_ASSERT_EQUAL(c->workers, 8);
    CU_ASSERT_EQUAL(c->mode, SUSPECT_MODE_FORWARD);
    CU_ASSERT_EQUAL(c->io_timeout_ms, 2500);
    CU_ASSERT_EQUAL(c->form_max, 32u << 10);
    CU_ASSERT_EQUAL(c->params_max, 262144);
    CU_ASSERT_EQUAL(c->server_line, 4);

    CU_ASSERT(c->limits_path[0] == '/' &&
              conf_test_ends_with(c->limits_path, "/conf/valid/limits.xml"));
    CU_ASSERT_EQUAL(c->reload_ms, 500);
    CU_ASSERT_EQUAL(c->limits_line, 6);

    CU_ASSERT_EQUAL(c->store, SUSPECT_STORE_REDIS);
    CU_ASSERT_EQUAL(c->memory_max_entries, 5000);
    CU_ASSERT_STRING_EQUAL(c->redis_url, "redis://10.1.2.3:6380/2");
    CU_ASSERT_EQUAL(c->redis_timeout_ms, 75);
    CU_ASSERT(c->redis_server_clock);
    CU_ASSERT_EQUAL(c->fail_mode, SUSPECT_FAIL_CLOSED);
    CU_ASSERT_PTR_NULL(c->lmdb_path);
    CU_ASSERT_EQUAL(c->store_line, 7);

    CU_ASSERT_EQUAL(c->key_format, SUSPECT_KEYS_TYPED);
    CU_ASSERT_STRING_EQUAL(c->key_prefix, "app1:");

    CU_ASSERT(!c->has_cgi);
    CU_ASSERT(c->has_upstream);
    CU_ASSERT_STRING_EQUAL(c->upstream_address, "unix:/run/php/php-cgi.sock");
    CU_ASSERT_STRING_EQUAL(c->upstream_script, "/srv/app/index.php");
    CU_ASSERT_STRING_EQUAL(c->upstream_pass_params, "APP_* UNIQUE_ID");
    CU_ASSERT_EQUAL(c->upstream_timeout_ms, 60000);
    CU_ASSERT_EQUAL(c->upstream_connect_timeout_ms, 250);
    CU_ASSERT_EQUAL(c->upstream_max_idle, 4);
    CU_ASSERT_EQUAL(c->upstream_line, 10);

    CU_ASSERT_STRING_EQUAL(c->trusted_proxies, "127.0.0.1 ::1 10.0.0.0/8");
    CU_ASSERT_EQUAL(c->fwd_header, SUSPECT_FWD_XFF);
    CU_ASSERT_EQUAL(c->ipv4_prefix, 24);
    CU_ASSERT_EQUAL(c->ipv6_prefix, 56);
    CU_ASSERT_EQUAL(c->client_ip_line, 13);

    CU_ASSERT_EQUAL(c->format, SUSPECT_FORMAT_HTML);
    CU_ASSERT(same_file(c->template_path, tmpl));
    CU_ASSERT(c->template_path[0] == '/');
    body = test_read_file(tmpl, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(body);
    CU_ASSERT_EQUAL(c->template_len, strlen(body));
    CU_ASSERT_STRING_EQUAL(c->template_body, body);
    free(body);
    CU_ASSERT_STRING_EQUAL(c->template_type, "text/html; charset=iso-8859-1");
    CU_ASSERT_EQUAL(c->response_line, 15);

    CU_ASSERT_EQUAL_FATAL(c->nroutes, 2);
    r = &c->routes[0];
    CU_ASSERT_STRING_EQUAL(r->action, "SecureForgotAccount");
    CU_ASSERT_EQUAL(r->nmethods, 2);
    CU_ASSERT_STRING_EQUAL(r->methods[0], "POST");
    CU_ASSERT_STRING_EQUAL(r->methods[1], "GET");
    CU_ASSERT_STRING_EQUAL(r->path, "/cgi-bin/app.cgi");
    CU_ASSERT(!r->prefix);
    CU_ASSERT_STRING_EQUAL(r->param_name, "op");
    CU_ASSERT_STRING_EQUAL(r->param_value, "forgot");
    CU_ASSERT_EQUAL(r->param_in, SUSPECT_PARAM_ANY);
    CU_ASSERT_EQUAL(r->missing, SUSPECT_MISSING_REJECT);
    CU_ASSERT_EQUAL(r->status, 403);
    CU_ASSERT_EQUAL(r->line, 17);
    CU_ASSERT_EQUAL_FATAL(r->nidentities, 2);
    CU_ASSERT_STRING_EQUAL(r->identities[0].type, "MemberCode");
    CU_ASSERT_EQUAL(r->identities[0].nsources, 1);
    CU_ASSERT_EQUAL(r->identities[0].source[0].kind, SUSPECT_SRC_FORM);
    CU_ASSERT_STRING_EQUAL(r->identities[0].source[0].name, "member");
    CU_ASSERT_EQUAL(r->identities[0].line, 20);
    CU_ASSERT_STRING_EQUAL(r->identities[1].type, "ClientIp");
    CU_ASSERT_EQUAL(r->identities[1].source[0].kind, SUSPECT_SRC_CLIENT_IP);
    CU_ASSERT_PTR_NULL(r->identities[1].source[0].name);

    r = &c->routes[1];
    CU_ASSERT_STRING_EQUAL(r->action, "PromoQuery");
    CU_ASSERT_EQUAL(r->nmethods, 0);
    CU_ASSERT_STRING_EQUAL(r->path, "/api/promo/");
    CU_ASSERT(r->prefix);
    CU_ASSERT_STRING_EQUAL(r->param_name, "promo");
    CU_ASSERT_PTR_NULL(r->param_value);
    /* Not given, in forward mode: the query or the body. */
    CU_ASSERT_EQUAL(r->param_in, SUSPECT_PARAM_ANY);
    CU_ASSERT_EQUAL(r->missing, SUSPECT_MISSING_ALLOW);
    CU_ASSERT_EQUAL(r->status, 0);
    CU_ASSERT_EQUAL_FATAL(r->nidentities, 1);
    CU_ASSERT_STRING_EQUAL(r->identities[0].type, "MemberPromo");
    CU_ASSERT_EQUAL_FATAL(r->identities[0].nsources, 4);
    CU_ASSERT_EQUAL(r->identities[0].source[0].kind, SUSPECT_SRC_COOKIE);
    CU_ASSERT_STRING_EQUAL(r->identities[0].source[0].name, "member");
    CU_ASSERT_EQUAL(r->identities[0].source[1].kind, SUSPECT_SRC_QUERY);
    CU_ASSERT_STRING_EQUAL(r->identities[0].source[1].name, "promo");
    CU_ASSERT_EQUAL(r->identities[0].source[2].kind, SUSPECT_SRC_HEADER);
    CU_ASSERT_STRING_EQUAL(r->identities[0].source[2].name, "X-Promo-Code");
    CU_ASSERT_EQUAL(r->identities[0].source[3].kind, SUSPECT_SRC_ENV);
    CU_ASSERT_STRING_EQUAL(r->identities[0].source[3].name, "REMOTE_USER");
    suspect_conf_unref(c);
}

/* A file giving only what is required: every default. */
static void test_defaults(void)
{
    char data[TEST_PATH_MAX];
    const suspect_conf_t *c = NULL;
    suspect_err_t err;

    suspect_err_clear(&err);
    CU_ASSERT_EQUAL_FATAL(
        suspect_conf_load(test_data_path(data, "conf/valid/minimal.xml"), &c,
                          &err),
        SUSPECT_OK);
    CU_ASSERT_STRING_EQUAL(c->listen, "unix:/run/suspect/fcgi.sock");
    CU_ASSERT_EQUAL(c->socket_mode, 0660);
    CU_ASSERT_EQUAL(c->workers, 16);
    CU_ASSERT_EQUAL(c->mode, SUSPECT_MODE_FORWARD);
    CU_ASSERT_EQUAL(c->io_timeout_ms, 30000);
    CU_ASSERT_EQUAL(c->form_max, 65536);
    CU_ASSERT_EQUAL(c->params_max, 131072);
    CU_ASSERT_EQUAL(c->server_line, 0);
    CU_ASSERT_EQUAL(c->reload_ms, 1000);
    CU_ASSERT_EQUAL(c->limits_line, 2);
    CU_ASSERT_EQUAL(c->store, SUSPECT_STORE_MEMORY);
    CU_ASSERT_EQUAL(c->memory_max_entries, 0);
    CU_ASSERT_PTR_NULL(c->lmdb_path);
    CU_ASSERT_EQUAL(c->lmdb_map_size, 0);
    CU_ASSERT(!c->lmdb_no_sync);
    CU_ASSERT_PTR_NULL(c->redis_url);
    CU_ASSERT_EQUAL(c->redis_timeout_ms, 0);
    CU_ASSERT(!c->redis_server_clock);
    CU_ASSERT_EQUAL(c->fail_mode, SUSPECT_FAIL_LOCAL);
    CU_ASSERT_EQUAL(c->key_format, SUSPECT_KEYS_SEED);
    CU_ASSERT_PTR_NULL(c->key_prefix);
    CU_ASSERT(c->has_cgi);
    CU_ASSERT_STRING_EQUAL(c->cgi_root, "/usr/lib/cgi-bin");
    CU_ASSERT_PTR_NULL(c->cgi_program);
    CU_ASSERT_EQUAL(c->cgi_timeout_ms, 30000);
    CU_ASSERT_EQUAL(c->cgi_line, 3);
    CU_ASSERT(!c->has_upstream);
    CU_ASSERT_PTR_NULL(c->upstream_address);
    CU_ASSERT_EQUAL(c->upstream_timeout_ms, 30000);
    CU_ASSERT_EQUAL(c->upstream_connect_timeout_ms, 1000);
    CU_ASSERT_EQUAL(c->upstream_max_idle, 16);
    CU_ASSERT_PTR_NULL(c->trusted_proxies);
    CU_ASSERT_EQUAL(c->fwd_header, SUSPECT_FWD_NONE);
    CU_ASSERT_EQUAL(c->ipv4_prefix, 32);
    CU_ASSERT_EQUAL(c->ipv6_prefix, 64);
    CU_ASSERT_EQUAL(c->format, SUSPECT_FORMAT_AUTO);
    CU_ASSERT_PTR_NULL(c->template_path);
    CU_ASSERT_PTR_NULL(c->template_body);
    CU_ASSERT_EQUAL(c->template_len, 0);
    CU_ASSERT_PTR_NULL(c->template_type);
    CU_ASSERT(c->control_on);
    CU_ASSERT_PTR_NULL(c->control_path);
    CU_ASSERT_EQUAL(c->control_mode, 0660);
    CU_ASSERT_PTR_NULL(c->control_group);
    CU_ASSERT_PTR_NULL(c->metrics_listen);
    CU_ASSERT_EQUAL(c->decisions, SUSPECT_DECISIONS_OFF);
    CU_ASSERT_PTR_NULL(c->decision_path);
    CU_ASSERT_PTR_NULL(c->identity_key);
    CU_ASSERT(!c->full_uri);
    CU_ASSERT_EQUAL(c->nroutes, 0);
    CU_ASSERT_EQUAL_FATAL(suspect_conf_warning_count(c), 1);
    CU_ASSERT(
        conf_test_ends_with(suspect_conf_warning(c, 0),
                            "minimal.xml:1: warning: no <Route>: no request is "
                            "counted"));

    /* The control socket: beside a unix listen socket by default. */
    {
        char buf[200];

        CU_ASSERT_STRING_EQUAL(suspect_conf_control_path(c, buf, sizeof(buf)),
                               "/run/suspect/control.sock");
        suspect_conf_unref(c);
        c = conf_test_body(BASE "<Server listen='unix:/tmp/x/f.sock'/>");
        CU_ASSERT_STRING_EQUAL(suspect_conf_control_path(c, buf, sizeof(buf)),
                               "/tmp/x/control.sock");
        CU_ASSERT_PTR_NULL(suspect_conf_control_path(c, buf, 10));
        suspect_conf_unref(c);
        c = conf_test_body(BASE "<Server listen='tcp:127.0.0.1:9000'/>"
                                "<Control socket='ctl/c.sock' mode='0600'/>");
        CU_ASSERT_STRING_EQUAL(suspect_conf_control_path(c, buf, sizeof(buf)),
                               "/etc/suspect/ctl/c.sock");
        CU_ASSERT_EQUAL(c->control_mode, 0600);
        suspect_conf_unref(c);
        c = conf_test_body(BASE "<Server listen='tcp:127.0.0.1:9000'/>");
        CU_ASSERT_STRING_EQUAL(suspect_conf_control_path(c, buf, sizeof(buf)),
                               "/run/suspect/control.sock");
        suspect_conf_unref(c);
        c = conf_test_body(BASE "<Control enabled='no'/>");
        CU_ASSERT_PTR_NULL(suspect_conf_control_path(c, buf, sizeof(buf)));
        suspect_conf_unref(c);
        /* A decision log without a key works, and says what it costs. */
        c = conf_test_body(BASE "<Log decisions='denials'/>");
        CU_ASSERT_EQUAL(c->decisions, SUSPECT_DECISIONS_DENIALS);
        CU_ASSERT(conf_test_ends_with(
            suspect_conf_warning(c, 0),
            "t.xml:1: warning: Log: no identityKey: identities are hashed "
            "with a key drawn at start, so their hashes differ across "
            "restarts and servers"));
    }
    suspect_conf_unref(c);

    /* A Store of type redis without url gets the library's default. */
    c = conf_test_body(BASE "<Store type='redis'/>");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_STRING_EQUAL(c->redis_url, SUSPECT_REDIS_DEFAULT_URL);
    CU_ASSERT_EQUAL(c->fail_mode, SUSPECT_FAIL_LOCAL);
    suspect_conf_unref(c);
}

/* Attributes in another namespace, ignored attributes and dubious
 * combinations are warnings, "file:line: warning: text", in document
 * order (an unknown name of ours is an error: the invalid corpus). */
static void test_warnings(void)
{
    char data[TEST_PATH_MAX];
    static const char *const want[] = {
        "warnings.xml:2: warning: Suspect: unknown attribute "
        "'xsi:noNamespaceSchemaLocation' ignored",
        "warnings.xml:5: warning: Store: noSync does not apply to type "
        "memory; ignored",
        "warnings.xml:5: warning: Store: url does not apply to type memory; "
        "ignored",
        "warnings.xml:7: warning: ClientIp: header is only believed from "
        "trustedProxies, which is empty; it is never read",
        "warnings.xml:8: warning: Response: templateType without template; "
        "ignored",
        "warnings.xml:9: warning: Route: paramIn without param; ignored",
        "warnings.xml:6: warning: Cgi: ignored in auth-request mode",
    };
    size_t n = sizeof(want) / sizeof(want[0]);
    const suspect_conf_t *c = NULL;
    suspect_err_t err;

    suspect_err_clear(&err);
    CU_ASSERT_EQUAL_FATAL(
        suspect_conf_load(test_data_path(data, "conf/valid/warnings.xml"), &c,
                          &err),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(suspect_conf_warning_count(c), n);
    for (size_t i = 0; i < n && i < suspect_conf_warning_count(c); i++) {
        const char *got = suspect_conf_warning(c, i);
        if (!conf_test_ends_with(got, want[i])) {
            fprintf(stderr, "\n  want: %s\n   got: %s\n", want[i], got);
            CU_FAIL("warning text");
        }
    }
    CU_ASSERT_PTR_NULL(suspect_conf_warning(c, n));
    /* What was ignored does not linger in the snapshot. */
    CU_ASSERT(!c->has_cgi);
    CU_ASSERT_PTR_NULL(c->redis_url);
    CU_ASSERT(!c->lmdb_no_sync);
    CU_ASSERT_PTR_NULL(c->template_type);
    CU_ASSERT_EQUAL(c->reload_ms, 1000);
    CU_ASSERT_EQUAL(c->nroutes, 1);
    suspect_conf_unref(c);
}

/* Every allocation of a load fails in turn: each attempt either works or
 * says out of memory, and (under ASan/valgrind) leaks nothing. */
static void oom_loop(const char *rel, suspect_rc_t final)
{
    char data[TEST_PATH_MAX];
    suspect_rc_t rc = SUSPECT_E_NOMEM;
    int bad = 0;
    long n;

    for (n = 1; n < 100000 && rc == SUSPECT_E_NOMEM; n++) {
        const suspect_conf_t *c = NULL;
        suspect_err_t err;
        suspect_err_clear(&err);
        suspect_test_fail_alloc_after(n);
        rc = suspect_conf_load(test_data_path(data, rel), &c, &err);
        suspect_test_fail_alloc_after(-1);
        bad += rc != SUSPECT_E_NOMEM && rc != final;
        bad += rc == SUSPECT_E_NOMEM && (err.code != rc || c != NULL);
        suspect_conf_unref(c);
    }
    CU_ASSERT_EQUAL(rc, final);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(n > 3);
}

static void test_out_of_memory(void)
{
    oom_loop("conf/valid/full.xml", SUSPECT_OK);
    oom_loop("conf/valid/warnings.xml", SUSPECT_OK);
    oom_loop("conf/valid/cgi.xml", SUSPECT_OK);
    oom_loop("conf/invalid/identity_dup_type.xml", SUSPECT_E_CONFIG);
}

/* Threads share one snapshot: the last unref frees it, once. */
static void *ref_worker(void *arg)
{
    const suspect_conf_t *c = arg;

    for (int i = 0; i < 10000; i++) {
        const suspect_conf_t *mine = suspect_conf_ref(c);
        if (mine->nroutes != 2) {
            return (void *)1;
        }
        suspect_conf_unref(mine);
    }
    suspect_conf_unref(c);
    return NULL;
}

static void test_refcount_and_args(void)
{
    const suspect_conf_t *c = NULL, *again;
    pthread_t th[4];
    long bad = 0;
    char msg[512];

    c = conf_test_body(BASE "<Route action='A' path='/a'><Identity type='T' "
                            "from='client-ip'/></Route><Route action='B' "
                            "path='/b'><Identity type='T' from='client-ip'/>"
                            "</Route>");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    again = suspect_conf_ref(c);
    CU_ASSERT_PTR_EQUAL(again, c);
    suspect_conf_unref(c);
    CU_ASSERT_STRING_EQUAL(again->routes[1].action, "B");
    for (int i = 0; i < 4; i++) {
        CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, ref_worker,
                                             (void *)suspect_conf_ref(again)),
                              0);
    }
    for (int i = 0; i < 4; i++) {
        void *ret;
        pthread_join(th[i], &ret);
        bad += (long)ret;
    }
    CU_ASSERT_EQUAL(bad, 0);
    suspect_conf_unref(again);

    suspect_conf_unref(NULL);
    CU_ASSERT_PTR_NULL(suspect_conf_ref(NULL));
    CU_ASSERT_EQUAL(suspect_conf_warning_count(NULL), 0);
    CU_ASSERT_PTR_NULL(suspect_conf_warning(NULL, 0));
    CU_ASSERT_EQUAL(suspect_conf_parse("x", 1, "n", NULL, NULL, NULL),
                    SUSPECT_E_INVAL);
    CU_ASSERT_EQUAL(suspect_conf_parse(NULL, 1, "n", NULL, &c, NULL),
                    SUSPECT_E_INVAL);
    CU_ASSERT_EQUAL(suspect_conf_load(NULL, &c, NULL), SUSPECT_E_INVAL);
    CU_ASSERT_EQUAL(suspect_conf_load("x", NULL, NULL), SUSPECT_E_INVAL);
    CU_ASSERT_EQUAL(conf_test_parse("  \n", &c, msg, sizeof(msg)),
                    SUSPECT_E_CONFIG);
    CU_ASSERT_STRING_EQUAL(msg, "t.xml: file is empty");
    CU_ASSERT_EQUAL(conf_test_parse("<Suspect>", &c, msg, sizeof(msg)),
                    SUSPECT_E_PARSE);
    CU_ASSERT_EQUAL(strncmp(msg, "t.xml:1: not well-formed XML: ", 30), 0);

    CU_ASSERT_STRING_EQUAL(suspect_src_kind_name(SUSPECT_SRC_HEADER), "header");
    CU_ASSERT_STRING_EQUAL(suspect_src_kind_name(SUSPECT_SRC_COOKIE), "cookie");
    CU_ASSERT_STRING_EQUAL(suspect_src_kind_name(SUSPECT_SRC_QUERY), "query");
    CU_ASSERT_STRING_EQUAL(suspect_src_kind_name(SUSPECT_SRC_FORM), "form");
    CU_ASSERT_STRING_EQUAL(suspect_src_kind_name(SUSPECT_SRC_ENV), "env");
    CU_ASSERT_STRING_EQUAL(suspect_src_kind_name(SUSPECT_SRC_CLIENT_IP),
                           "client-ip");
    CU_ASSERT_STRING_EQUAL(suspect_src_kind_name((suspect_src_kind_t)0),
                           "unknown");
}

/* <Action> settings reach every route of the action that gives none of its
 * own; a route's own wins. */
static void test_action_settings(void)
{
    static const char xml[] =
        "<Suspect><Server mode=\"auth-request\"/>"
        "<Limits path=\"limits.xml\"/>"
        "<Response shadowHeader=\"X-Suspect-Shadow\"/>"
        "<Action name=\"Login\" shadow=\"yes\" failMode=\"closed\"/>"
        "<Route action=\"Login\" path=\"/a\" failMode=\"open\">"
        "<Identity type=\"T\" from=\"client-ip\"/></Route>"
        "<Route action=\"Login\" path=\"/b\" shadow=\"no\">"
        "<Identity type=\"T\" from=\"client-ip\"/></Route>"
        "<Route action=\"Other\" path=\"/c\">"
        "<Identity type=\"T\" from=\"client-ip\"/></Route>"
        "</Suspect>";
    const suspect_conf_t *c = NULL;
    suspect_err_t err;

    suspect_err_clear(&err);
    CU_ASSERT_EQUAL_FATAL(
        suspect_conf_parse(xml, sizeof(xml) - 1, "s.xml", "/etc", &c, &err),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(c->nactions, 1);
    CU_ASSERT_STRING_EQUAL(c->shadow_header, "X-Suspect-Shadow");
    CU_ASSERT_EQUAL(c->routes[0].shadow, SUSPECT_SHADOW_ON);
    CU_ASSERT_EQUAL(c->routes[0].fail_mode, SUSPECT_RULE_FAIL_OPEN);
    CU_ASSERT_EQUAL(c->routes[1].shadow, SUSPECT_SHADOW_OFF);
    CU_ASSERT_EQUAL(c->routes[1].fail_mode, SUSPECT_RULE_FAIL_CLOSED);
    CU_ASSERT_EQUAL(c->routes[2].shadow, SUSPECT_SHADOW_UNSET);
    CU_ASSERT_EQUAL(c->routes[2].fail_mode, SUSPECT_RULE_FAIL_STORE);
    suspect_conf_unref(c);
}

int register_conf_suite(void)
{
    static const struct {
        const char *name;
        CU_TestFunc fn;
    } tests[] = {
        {"invalid corpus", test_invalid_corpus},
        {"valid corpus", test_valid_corpus},
        {"examples", test_examples},
        {"full file", test_full_file},
        {"defaults", test_defaults},
        {"warnings", test_warnings},
        {"out of memory", test_out_of_memory},
        {"refcount and arguments", test_refcount_and_args},
        {"action settings", test_action_settings},
    };
    CU_pSuite s = CU_add_suite("conf", NULL, NULL);

    if (s == NULL) {
        return -1;
    }
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return conf_add_value_tests(s) == 0 && conf_add_file_tests(s) == 0 ? 0 : -1;
}
