/*
 * test_conf_values.c - suite "conf": the syntax of values (durations,
 * sizes, modes, booleans, names, endpoints, texts), of routes (paths,
 * methods, parameters, sources), the route and identity caps, line numbers
 * and the warning cap.  Shared helpers live here (test_conf.h).
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "conf/suspect_conf.h"
#include "show.h"
#include "suspect_failover.h"
#include "test_conf.h"

/* Parses a C string as "t.xml" in dir "/etc/suspect"; returns the code
 * and the formatted error in msg. */
suspect_rc_t conf_test_parse(const char *doc, const suspect_conf_t **out,
                             char *msg, size_t size)
{
    suspect_err_t err;
    suspect_rc_t rc;

    suspect_err_clear(&err);
    rc = suspect_conf_parse(doc, strlen(doc), "t.xml", "/etc/suspect", out,
                            &err);
    msg[0] = '\0';
    if (rc != SUSPECT_OK) {
        suspect_err_format(&err, msg, size);
    }
    return rc;
}

/* Parses "<Suspect>" body "</Suspect>"; NULL (and a message on stderr)
 * when it fails. */
const suspect_conf_t *conf_test_body(const char *body)
{
    char doc[16384], msg[512];
    const suspect_conf_t *c = NULL;

    snprintf(doc, sizeof(doc), "<Suspect>%s</Suspect>", body);
    if (conf_test_parse(doc, &c, msg, sizeof(msg)) != SUSPECT_OK) {
        fprintf(stderr, "\n  %s\n", msg);
        return NULL;
    }
    return c;
}

const char *conf_test_fail(char msg[CONF_TEST_MSG_MAX], const char *body)
{
    char doc[16384];
    const suspect_conf_t *c = NULL;

    snprintf(doc, sizeof(doc), "<Suspect>%s</Suspect>", body);
    if (conf_test_parse(doc, &c, msg, CONF_TEST_MSG_MAX) == SUSPECT_OK) {
        suspect_conf_unref(c);
        msg[0] = '\0';
    }
    return msg;
}

/* True when s ends with tail. */
int conf_test_ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), t = strlen(tail);
    return n >= t && strcmp(s + n - t, tail) == 0;
}

/* The value syntaxes: durations, sizes, modes, booleans, names, cases. */
static void test_values(void)
{
    char msg[CONF_TEST_MSG_MAX];
    const suspect_conf_t *c;

    c = conf_test_body("<Limits path='l.xml' reload=' 2.25 '/><Cgi root='/c' "
                       "timeout='0.001'/><Server ioTimeout='0.5' formMax='2m' "
                       "paramsMax='4k' socketMode='660' workers='001' "
                       "mode='FORWARD'/><Store type='LMDB' path='db/x.mdb' "
                       "mapSize='1G' noSync='Yes' failMode='Open'/>");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(c->reload_ms, 2250);
    CU_ASSERT_EQUAL(c->cgi_timeout_ms, 1);
    CU_ASSERT_EQUAL(c->io_timeout_ms, 500);
    CU_ASSERT_EQUAL(c->form_max, 2u << 20);
    CU_ASSERT_EQUAL(c->params_max, 4096);
    CU_ASSERT_EQUAL(c->socket_mode, 0660);
    CU_ASSERT_EQUAL(c->workers, 1);
    CU_ASSERT_EQUAL(c->store, SUSPECT_STORE_LMDB);
    CU_ASSERT_STRING_EQUAL(c->lmdb_path, "/etc/suspect/db/x.mdb");
    CU_ASSERT_EQUAL(c->lmdb_map_size, (size_t)1 << 30);
    CU_ASSERT(c->lmdb_no_sync);
    CU_ASSERT_EQUAL(c->lmdb_mode, 0600);
    CU_ASSERT_EQUAL(c->lmdb_group, -1);
    CU_ASSERT_EQUAL(c->fail_mode, SUSPECT_FAIL_OPEN);
    suspect_conf_unref(c);

    /* The LMDB files' mode and group, by name or number. */
    c = conf_test_body("<Limits path='l.xml'/><Cgi root='/c'/><Store "
                       "type='lmdb' path='/x.mdb' mode='660' group='root'/>");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(c->lmdb_mode, 0660);
    CU_ASSERT_EQUAL(c->lmdb_group, 0);
    suspect_conf_unref(c);
    c = conf_test_body("<Limits path='l.xml'/><Cgi root='/c'/><Store "
                       "type='lmdb' path='/x.mdb' mode='0640' group='0'/>");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(c->lmdb_mode, 0640);
    CU_ASSERT_EQUAL(c->lmdb_group, 0);
    suspect_conf_unref(c);

    /* Bounds are inclusive; one past them is refused. */
    c = conf_test_body("<Limits path='/l.xml' reload='86400'/>"
                       "<Upstream address='tcp:[::1]:65535' maxIdle='0' "
                       "connectTimeout='60' timeout='86400'/>"
                       "<Server workers='1024' socketMode='0777' "
                       "listen='fd:3'/><ClientIp ipv4Prefix='1' "
                       "ipv6Prefix='128' trustedProxies='10.0.0.0/8,::1'/>");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_STRING_EQUAL(c->limits_path, "/l.xml");
    CU_ASSERT_EQUAL(c->upstream_max_idle, 0);
    CU_ASSERT_EQUAL(c->upstream_connect_timeout_ms, 60000);
    CU_ASSERT_EQUAL(c->upstream_timeout_ms, 86400000);
    CU_ASSERT_STRING_EQUAL(c->listen, "fd:3");
    suspect_conf_unref(c);
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg, BASE "<Server workers='1025'/>"),
        "t.xml:1: Server: workers 1025 is out of range (1 to 1024)");
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg, BASE "<Server ioTimeout='3600.001'/>"),
        "t.xml:1: Server: ioTimeout 3600.001 is out of range (0.001 to 3600 "
        "seconds)");
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg, BASE "<Server socketMode='01000'/>"),
        "t.xml:1: Server: socketMode 01000 is out of range (00 to 0777)");
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg, BASE "<Server formMax='99999999999999999999999'/>"),
        "t.xml:1: Server: formMax 99999999999999999999999 is out of range "
        "(1K to 16M)");
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg, BASE "<Server formMax='17G'/>"),
        "t.xml:1: Server: formMax 17G is out of range (1K to 16M)");
    CU_ASSERT_STRING_EQUAL(conf_test_fail(msg, BASE "<Server workers='-1'/>"),
                           "t.xml:1: Server: workers '-1' is not a number");
    CU_ASSERT_STRING_EQUAL(conf_test_fail(msg, BASE "<Server workers=''/>"),
                           "t.xml:1: Server: workers is empty");
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg, BASE "<Server ioTimeout='.5'/>"),
        "t.xml:1: Server: ioTimeout '.5' is not a number of seconds");
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg, BASE "<Server ioTimeout='1.'/>"),
        "t.xml:1: Server: ioTimeout '1.' is not a number of seconds");
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg,
                       BASE "<Server listen='unix:/"
                            "0123456789012345678901234567"
                            "89012345678901234567890123456789012345678901234567"
                            "890123456789012345678901234567890'/>"),
        "t.xml:1: Server: listen 'unix:/0123456789012345678901234567890123..."
        "' has a unix socket path longer than 107 bytes");
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg, BASE "<Server listen='tcp::9000'/>"),
        "t.xml:1: Server: listen 'tcp::9000' needs "
        "host:port after tcp:");
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg, BASE "<Upstream address='fd:3'/>"),
        "t.xml:1: Upstream: address 'fd:3' is not "
        "unix:/path or tcp:host:port");
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg, BASE "<Store type='lmdb' path='x' noSync=''/>"),
        "t.xml:1: Store: noSync is empty");
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg,
                       BASE "<Server workers='99999999999999999999999x'/>"),
        "t.xml:1: Server: workers '99999999999999999999999x' is not a number");
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg, BASE "<Server ioTimeout='18446744073709552'/>"),
        "t.xml:1: Server: ioTimeout 18446744073709552 is out of range (0.001 "
        "to 3600 seconds)");
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg, BASE
                       "<Store type='lmdb' path='x' mapSize='17179869184G'/>"),
        "t.xml:1: Store: mapSize 17179869184G is out of range (1M to 1024G)");
    CU_ASSERT_STRING_EQUAL(conf_test_fail(msg, BASE "<Server listen=''/>"),
                           "t.xml:1: Server: listen is empty");
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg, BASE "<Server listen='tcp:[]:1'/>"),
        "t.xml:1: Server: listen 'tcp:[]:1' has a bad IPv6 "
        "address (tcp:[addr]:port)");
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg, BASE "<Server listen='tcp:[::g]:1'/>"),
        "t.xml:1: Server: listen 'tcp:[::g]:1' has a bad "
        "IPv6 address (tcp:[addr]:port)");
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg, BASE "<Server listen='tcp:a b:1'/>"),
        "t.xml:1: Server: listen 'tcp:a b:1' has a bad host "
        "name");
    CU_ASSERT_STRING_EQUAL(conf_test_fail(msg, BASE "<Server listen='fd:x'/>"),
                           "t.xml:1: Server: listen 'fd:x' needs a descriptor "
                           "number after fd:");
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg, BASE "<Server listen='unix:/a&#10;b'/>"),
        "t.xml:1: Server: listen must not contain control "
        "characters (got 'unix:/a?b')");
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg, BASE "<Store type='redis' url=''/>"),
        "t.xml:1: Store: url is empty");
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg, BASE
                       "<Keys prefix='0123456789012345678901234567890123456789"
                       "0123456789012345678901234567890123456789012345678901"
                       "23456789012345678901234567890123456789'/>"),
        "t.xml:1: Keys: prefix is too long (at most 128 bytes)");
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg, "<Cgi root='/c'/><Limits path='a&#127;'/>"),
        "t.xml:1: Limits: path must not contain control characters (got "
        "'a?')");
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg, "<Limits path='l'/><Cgi program=''/>"),
        "t.xml:1: Cgi: program is empty");
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg, "<Limits path='l'/><Cgi program='/a&#127;'/>"),
        "t.xml:1: Cgi: program must not contain control characters (got "
        "'/a?')");
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg, BASE "<Route action='' path='/'/>"),
        "t.xml:1: Route: action is empty");
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg,
                       "<Limits path='l'/><Cgi root='/c'/><Server mode=''/>"),
        "t.xml:1: Server: mode is empty");
    c = conf_test_body(BASE "<Server listen='systemd'/><Store type='lmdb' "
                            "path='x' noSync='OFF'/><Keys prefix=''/>");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_STRING_EQUAL(c->listen, "systemd");
    CU_ASSERT(!c->lmdb_no_sync);
    CU_ASSERT_PTR_NULL(c->key_prefix);
    suspect_conf_unref(c);
    /* Control bytes never reach a message. */
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg, BASE "<Keys prefix='a&#9;b'/>"),
        "t.xml:1: Keys: prefix must be printable ASCII without spaces (got "
        "'a?b')");
}

/* Paths, methods, parameters and sources of routes. */
static void test_routes(void)
{
    char msg[CONF_TEST_MSG_MAX];
    const suspect_conf_t *c;
    const suspect_conf_route_t *r;

    c = conf_test_body(
        BASE "<Route action='A' path='//a/./b//c.cgi' method=' get  "
             "Post\tpurge '><Identity type='T' from='header:X-A'/>"
             "</Route><Route action='B' prefix='/api/.'><Identity "
             "type='T' from=' env:REMOTE_USER   cookie:s '/></Route>"
             "<Route action='C' prefix='/' param='op=' paramIn='form'>"
             "<Identity type='T' from='form:m'/><Identity type='U' "
             "from='query:%E2'/></Route>");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL_FATAL(c->nroutes, 3);
    r = &c->routes[0];
    CU_ASSERT_STRING_EQUAL(r->path, "/a/b/c.cgi");
    CU_ASSERT_EQUAL_FATAL(r->nmethods, 3);
    CU_ASSERT_STRING_EQUAL(r->methods[0], "GET");
    CU_ASSERT_STRING_EQUAL(r->methods[1], "POST");
    CU_ASSERT_STRING_EQUAL(r->methods[2], "PURGE");
    CU_ASSERT_STRING_EQUAL(r->identities[0].source[0].name, "X-A");
    r = &c->routes[1];
    CU_ASSERT_STRING_EQUAL(r->path, "/api/");
    CU_ASSERT(r->prefix);
    CU_ASSERT_EQUAL_FATAL(r->identities[0].nsources, 2);
    CU_ASSERT_EQUAL(r->identities[0].source[0].kind, SUSPECT_SRC_ENV);
    CU_ASSERT_EQUAL(r->identities[0].source[1].kind, SUSPECT_SRC_COOKIE);
    r = &c->routes[2];
    CU_ASSERT_STRING_EQUAL(r->path, "/");
    CU_ASSERT_STRING_EQUAL(r->param_name, "op");
    CU_ASSERT_STRING_EQUAL(r->param_value, "");
    CU_ASSERT_EQUAL(r->param_in, SUSPECT_PARAM_FORM);
    CU_ASSERT_EQUAL(r->nidentities, 2);
    suspect_conf_unref(c);

    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg, BASE "<Route action='A' path='/a' method=' '/>"),
        "t.xml:1: Route: method is empty");
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg, BASE "<Route action='A' path=''/>"),
        "t.xml:1: Route: path is empty");
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg, BASE "<Route action='A' path='/a&#9;b'/>"),
        "t.xml:1: Route: path must not contain control characters (got "
        "'/a?b')");
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg, BASE "<Route action='A' path='/a' param=''/>"),
        "t.xml:1: Route: param is empty");
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg,
                       BASE "<Route action='A' path='/a' param='a=&#10;b'/>"),
        "t.xml:1: Route: param must not contain control characters (got "
        "'a=?b')");
    /* An attribute in a namespace is not ours: a warning. */
    c = conf_test_body(BASE "<Route xmlns:x='urn:x' x:action='B' action='A' "
                            "path='/a'><Identity type='T' from='client-ip'/>"
                            "</Route>");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL_FATAL(suspect_conf_warning_count(c), 1);
    CU_ASSERT_STRING_EQUAL(suspect_conf_warning(c, 0),
                           "t.xml:1: warning: Route: unknown attribute "
                           "'x:action' ignored");
    suspect_conf_unref(c);

    /* paramIn's default: "any" in forward mode (the body is at hand, and
     * $_REQUEST or CGI.pm's param() read either), "query" in the deciding
     * modes, where "any" stays an error. */
    c = conf_test_body(BASE "<Route action='A' path='/a' param='op=x'>"
                            "<Identity type='T' from='client-ip'/></Route>"
                            "<Route action='B' path='/b' param='op' "
                            "paramIn='query'><Identity type='T' "
                            "from='client-ip'/></Route>");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(c->routes[0].param_in, SUSPECT_PARAM_ANY);
    CU_ASSERT_EQUAL(c->routes[1].param_in, SUSPECT_PARAM_QUERY);
    suspect_conf_unref(c);
    c = conf_test_body("<Limits path='l.xml'/><Route action='A' path='/a' "
                       "param='op=x'><Identity type='T' from='client-ip'/>"
                       "</Route><Server mode='auth-request'/>");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(c->routes[0].param_in, SUSPECT_PARAM_QUERY);
    suspect_conf_unref(c);
    c = conf_test_body("<Server mode='authorizer'/><Limits path='l.xml'/>"
                       "<Route action='A' path='/a' param='op=x'><Identity "
                       "type='T' from='client-ip'/></Route>");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(c->routes[0].param_in, SUSPECT_PARAM_QUERY);
    suspect_conf_unref(c);
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg,
                       "<Server mode='authorizer'/><Limits path='l.xml'/>"
                       "<Route action='A' path='/a' param='op' paramIn='any'>"
                       "<Identity type='T' from='client-ip'/></Route>"),
        "t.xml:1: Route: paramIn=\"any\" reads the request body, which "
        "authorizer mode never gets; use paramIn=\"query\"");

    /* Two identities may share sources, not types; a composite is one. */
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg,
                       BASE "<Route action='A' path='/a'><Identity type='T' "
                            "from='client-ip'/>\n<Identity type='T' "
                            "from='cookie:x'/></Route>"),
        "t.xml:2: Identity: type 'T' duplicates line 1");
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg,
                       BASE "<Route action='A' path='/a'><Identity type='T' "
                            "from='client-ip client-ip'/></Route>"),
        "t.xml:1: Identity: from source 'client-ip' is given twice");
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg, BASE
                       "<Route action='A' path='/a'><Identity type='T' "
                       "from='cookie:a'/><Identity type='T' from='cookie:a "
                       "query:b'/></Route>"),
        "t.xml:1: Identity: type 'T' duplicates line 1");
}

/* SUSPECT_CONF_MAX_ROUTES routes load, one more does not; likewise
 * SUSPECT_MAX_IDENTITIES identities. */
static void test_caps(void)
{
    size_t cap = 200 + SUSPECT_CONF_MAX_ROUTES * 100, used = 0;
    char *doc = malloc(cap), msg[512];
    const suspect_conf_t *c = NULL;

    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    used = (size_t)snprintf(doc, cap, "<Suspect>" BASE "\n");
    for (unsigned i = 0; i < SUSPECT_CONF_MAX_ROUTES; i++) {
        used += (size_t)snprintf(doc + used, cap - used,
                                 "<Route action='A%u' path='/%u'><Identity "
                                 "type='T' from='client-ip'/></Route>\n",
                                 i, i);
    }
    snprintf(doc + used, cap - used, "</Suspect>");
    CU_ASSERT_EQUAL_FATAL(conf_test_parse(doc, &c, msg, sizeof(msg)),
                          SUSPECT_OK);
    CU_ASSERT_EQUAL(c->nroutes, SUSPECT_CONF_MAX_ROUTES);
    CU_ASSERT_STRING_EQUAL(c->routes[999].path, "/999");
    suspect_conf_unref(c);
    snprintf(doc + used, cap - used,
             "<Route action='B' path='/b'><Identity type='T' "
             "from='client-ip'/></Route></Suspect>");
    CU_ASSERT_EQUAL(conf_test_parse(doc, &c, msg, sizeof(msg)),
                    SUSPECT_E_CONFIG);
    CU_ASSERT_STRING_EQUAL(msg, "t.xml:1002: more than 1000 <Route> "
                                "elements");
    free(doc);

    c = conf_test_body(BASE "<Route action='A' path='/a'>"
                            "<Identity type='T1' from='client-ip'/>"
                            "<Identity type='T2' from='client-ip'/>"
                            "<Identity type='T3' from='client-ip'/>"
                            "<Identity type='T4' from='client-ip'/>"
                            "<Identity type='T5' from='client-ip'/>"
                            "<Identity type='T6' from='client-ip'/>"
                            "<Identity type='T7' from='client-ip'/>"
                            "<Identity type='T8' from='cookie:a query:b "
                            "header:c env:D'/></Route>");
    CU_ASSERT_PTR_NOT_NULL_FATAL(c);
    CU_ASSERT_EQUAL(c->routes[0].nidentities, SUSPECT_MAX_IDENTITIES);
    CU_ASSERT_EQUAL(c->routes[0].identities[7].nsources, SUSPECT_MAX_PARTS);
    suspect_conf_unref(c);
}

/* <Keys hashTag>: auto is yes with a Cluster, no otherwise; a prefix
 * with braces cannot keep the tag. */
static void test_hash_tag(void)
{
    static const struct {
        const char *store, *keys;
        int tag;
    } cases[] = {
        {"", "", 0},
        {"<Store type='redis' url='redis://h'/>", "", 0},
        {"<Store type='redis' url='redis+sentinel://h/m'/>", "", 0},
        {"<Store type='redis' url='redis+cluster://h:7000'/>", "", 1},
        {"<Store type='redis' url='redis+cluster://h:7000'/>",
         "<Keys hashTag='no'/>", 0},
        {"<Store type='redis' url='redis://h'/>", "<Keys hashTag='yes'/>", 1},
        {"<Store type='redis' url='redis+cluster://h:7000'/>",
         "<Keys prefix='a{b}' hashTag='no'/>", 0},
    };
    char body[512], msg[CONF_TEST_MSG_MAX];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const suspect_conf_t *c;

        snprintf(body, sizeof(body), BASE "%s%s", cases[i].store,
                 cases[i].keys);
        c = conf_test_body(body);
        CU_ASSERT_PTR_NOT_NULL_FATAL(c);
        CU_ASSERT_EQUAL(c->key_hash_tag, cases[i].tag);
        suspect_conf_unref(c);
    }
    CU_ASSERT_STRING_EQUAL(
        conf_test_fail(msg, BASE "<Store type='redis' "
                                 "url='redis+cluster://h:7000'/>\n"
                                 "<Keys prefix='app{1}:'/>"),
        "t.xml:2: Keys: prefix 'app{1}:' holds '{' or '}', which would move "
        "the hash tag (hashTag=\"no\", or another prefix)");
    CU_ASSERT_PTR_NOT_NULL(
        strstr(conf_test_fail(msg, BASE "<Keys hashTag='maybe'/>"), "hashTag"));
}

/* Past 100 warnings, one closing line counts the rest. */
static void test_many_warnings(void)
{
    size_t cap = 64 * 1024, used;
    char *doc = malloc(cap), msg[512];
    const suspect_conf_t *c = NULL;

    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    used = (size_t)snprintf(doc, cap, "<Suspect xmlns:x='urn:x'");
    for (int i = 0; i < 150; i++) {
        used += (size_t)snprintf(doc + used, cap - used, " x:a%d='1'", i);
    }
    snprintf(doc + used, cap - used, ">" BASE "</Suspect>");
    CU_ASSERT_EQUAL_FATAL(conf_test_parse(doc, &c, msg, sizeof(msg)),
                          SUSPECT_OK);
    CU_ASSERT_EQUAL(suspect_conf_warning_count(c), 101);
    CU_ASSERT_STRING_EQUAL(suspect_conf_warning(c, 0),
                           "t.xml:1: warning: Suspect: unknown attribute "
                           "'x:a0' ignored");
    CU_ASSERT_STRING_EQUAL(suspect_conf_warning(c, 100),
                           "t.xml: warning: 51 more warnings not shown");
    suspect_conf_unref(c);
    free(doc);
}

/* An element over several lines is reported at its first line, also
 * past line 65535. */
static void test_lines(void)
{
    size_t blank = 70000, used;
    char *doc = malloc(blank + 512), msg[512];
    const suspect_conf_t *c = NULL;

    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    used = (size_t)snprintf(doc, 512, "<Suspect>" BASE);
    memset(doc + used, '\n', blank);
    used += blank;
    snprintf(doc + used, 512,
             "<Server\nworkers='2'\n/><Route action='A'\npath='/a'>"
             "<Identity type='T'\nfrom='x'/></Route></Suspect>");
    CU_ASSERT_EQUAL(conf_test_parse(doc, &c, msg, sizeof(msg)),
                    SUSPECT_E_CONFIG);
    CU_ASSERT_STRING_EQUAL(msg, "t.xml:70004: Identity: from source 'x' is "
                                "not header:NAME, cookie:NAME, query:NAME, "
                                "form:NAME, param:NAME, request:NAME, "
                                "env:NAME, xmlrpc:METHOD:POS, "
                                "json:/POINTER, auth-user:basic, "
                                "auth-user:any or client-ip");
    snprintf(doc + used, 512,
             "<Server\nworkers='2'\n/><Route action='A'\npath='/a'>"
             "<Identity type='T'\nfrom='client-ip'/></Route></Suspect>");
    CU_ASSERT_EQUAL_FATAL(conf_test_parse(doc, &c, msg, sizeof(msg)),
                          SUSPECT_OK);
    CU_ASSERT_EQUAL(c->server_line, 70001);
    CU_ASSERT_EQUAL(c->routes[0].line, 70003);
    CU_ASSERT_EQUAL(c->routes[0].identities[0].line, 70004);
    suspect_conf_unref(c);
    free(doc);
}

/* A bad value as both loaders quote it: bounded, controls as '?', and a
 * buffer smaller than CONFIG_SHOW_SIZE is never overrun. */
static void test_show(void)
{
    char buf[CONFIG_SHOW_SIZE], small[8];
    char big[100];

    CU_ASSERT_STRING_EQUAL(config_show(buf, sizeof(buf), "a\nb\x7f", 4),
                           "a?b?");
    memset(big, 'x', sizeof(big));
    config_show(buf, sizeof(buf), big, sizeof(big));
    CU_ASSERT_EQUAL(strlen(buf), CONFIG_SHOW_MAX + 3);
    CU_ASSERT_STRING_EQUAL(buf + CONFIG_SHOW_MAX, "...");
    CU_ASSERT_STRING_EQUAL(config_show(small, sizeof(small), big, 10),
                           "xxxx...");
    CU_ASSERT_STRING_EQUAL(config_show(small, 3, big, 10), "..");
    CU_ASSERT_STRING_EQUAL(config_show(small, sizeof(small), "abc", 3), "abc");
}

/* Adds this file's tests to the suite. */
int conf_add_value_tests(CU_pSuite s)
{
    static const struct {
        const char *name;
        CU_TestFunc fn;
    } tests[] = {
        {"values", test_values},
        {"routes", test_routes},
        {"route and identity caps", test_caps},
        {"many warnings", test_many_warnings},
        {"hash tag", test_hash_tag},
        {"lines", test_lines},
        {"bad values quoted", test_show},
    };

    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return 0;
}
