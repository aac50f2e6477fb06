/*
 * bench_guard.c - what reading an identity as the application does costs
 * on the allowed path (`make bench-guard`).
 *
 * What: mw_guard_decide() on one thread, memory store, a login route whose
 * identity is a query parameter u, allowed every time (LimitCount far
 * above the hits): the allowed path of suspect-fcgi less its I/O.  Rows,
 * each against the first measured in the same run:
 *   default   no normalize (PHP's trim());
 *   login     normalize="login" (trim casefold), ASCII user names;
 *   dokuwiki  the DokuWiki recipe's normalize, ASCII names;
 *   dokuwiki, non-ASCII  the same with "Ä" in every name (libunistring's
 *             case folding and NFKD run);
 *   alternatives  from="form:u|query:u|auth-user:any" with the recipe's
 *             normalize (only the query is present);
 *   mediawiki  the MediaWiki recipe's normalize (html-entities ... only:)
 *             on "User:userNNNN", and on "J&ouml;rgNNNN" (an entity
 *             looked up in libxml2's table, then libunistring's steps);
 *   no list   the default row again, the peer of the two list rows (a
 *             machine that changes speed during the run moves both): they
 *             are printed against it, not against the first row;
 *   deny list  a <Deny file> of 100,000 address blocks (half IPv4 /24,
 *             half IPv6 /48, none the client's), looked up for every
 *             request;
 *   allow list  an <Allow file> of 100,000 blocks and 100,000 User=
 *             values, none the request's: a value lookup and an address
 *             lookup per request;
 *   form body, urlencoded  the login posted ("do=login&u=...&p=..."),
 *             form:u: the body prefetched and searched; the peer of the
 *             three rows after it;
 *   form body, ';' separators  the same with ';' between the fields,
 *             as CGI.pm reads them: the body searched split on '&' and
 *             split on '&' and ';';
 *   form body, multipart  the same fields posted as a browser posts
 *             multipart/form-data (WebKit's boundary): read as PHP reads
 *             them, then searched the same way;
 *   XML-RPC, 1 call  wp.getUsersBlogs(user, password) posted as text/xml,
 *             xmlrpc:wp.getUsersBlogs:1|xmlrpc:wp.*:2: the body
 *             prefetched and parsed by libxml2 (request/xmlrpc.c);
 *   XML-RPC, 20 calls  a system.multicall of twenty such calls, each for
 *             its own user: parsed, and twenty decisions (a store
 *             decision each, as twenty attempts are); like the upload,
 *             left out of the 3% target: it is twenty logins in one;
 *   JSON, 20-call batch  the same twenty as a JSON-RPC batch read by
 *             jansson, json:/params/username;
 *   the three are also printed as a ratio against the urlencoded
 *             reading measured in the same rounds;
 *   multipart, file after  the same, a 256 KiB file part after the
 *             fields: the first formMax (64 KiB) prefetched and read,
 *             and the check of the rest set up (it judges those 64 KiB
 *             at once).  An upload, not a login: left out of the 3%
 *             target, which is against a small allowed request;
 *   Failure route  <Failure status="401">, forward mode: a slot reserved
 *             and settled as a success per request (mw_guard_resolve,
 *             _finish, _settle); the peer of the two rows after it;
 *   device cookies, none sent  the same route with <DeviceCookie> and
 *             account="yes": the account's keyed hash (one HMAC) per
 *             request, no cookie to check;
 *   device cookies, a valid one  each request carries the cookie its
 *             user's sign-in earned: looked up, base64-decoded, its MAC
 *             and the account's hash checked (two HMACs), the key the
 *             device's (the 2% target of device cookies).
 * Each body row frees the request's prefetch buffer (and check) after
 * each decision, as a request's end does.  Then, apart: a 10 MiB upload
 * read to its end through the check the decision set up, against the
 * same bytes read without one (MB/s, best of ROUNDS, and the ratio).
 * The cost is printed as the extra time per request, as a share of the
 * time of its peer (the row named as such above, measured in the same
 * rounds) and, given the CPU time of a whole allowed request through
 * nginx -> suspect-fcgi -> php-cgi (argv[1], microseconds: bench-fcgi
 * measures it in the same run and passes it), as a share of that, the
 * target being <= 3%.
 *
 * How: 4096 user names "userNNNN" (hits spread over them, as a login
 * form's are), requests built once (their CGI variables), each decision
 * at a fake clock that moves 1 ms every 64 decisions; each row runs
 * RUN_MS of wall time, best of ROUNDS, the
 * rounds of all rows interleaved.
 *
 * Length.  One table of rows and the request builder every row shares
 * (its bodies: forms, multipart, XML-RPC, JSON): split in two, each half
 * would carry the other's fixture.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "conf/suspect_conf.h"
#include "guard/guard.h"
#include "limits/suspect_limits.h"
#include "request/normalize.h"
#include "request/xmlrpc.h"
#include "suspect_store.h"

/* The MediaWiki rows' html-entities step, linked as the loaders of
 * suspect.xml link it (request/normalize.h): this program builds its
 * guards itself. */
__attribute__((used)) static suspect_rc_t (*const html_step)(
    const char *, size_t, char *, size_t *) = mw_norm_html_decode;
/* The XML-RPC rows' reader, linked the same way (request/xmlrpc.h). */
__attribute__((used)) static suspect_rc_t (*const xmlrpc_reader)(
    const char *, size_t, size_t, mw_xmlrpc_t **,
    const char **) = mw_xmlrpc_read;

#define NAMES  4096
#define RUN_MS 200
#define ROUNDS 9

#define DOKU_NORM                                                              \
    "strip-controls casefold unaccent alnum "                                  \
    "map:ae=a,oe=o,ue=u,dh=d,th=t,\xce\xbc=u only:a-z0-9"
#define MW_NORM                                                                \
    "html-entities casefold unaccent alnum:: strip-prefix:user: only:a-z0-9"

typedef struct row {
    const char *name;
    const char *from;
    const char *normalize; /* NULL: none */
    const char *prefix;    /* of each user name */
    const char *list;      /* "Allow" or "Deny" with a file of LIST_SIZE
                              entries, or NULL */
    int body;              /* 0 none, else a BODY_* */
    int outcome;           /* 0 counts all, else an OUTCOME_* */
} row_t;

#define OUTCOME_FAILURE 1 /* <Failure status="401">: a slot, settled */
#define OUTCOME_DEVICE  2 /* the same with device cookies, none sent */
#define OUTCOME_COOKIE  3 /* the same, each request with its valid cookie */

#define BODY_FORM      1
#define BODY_MULTIPART 2
#define BODY_UPLOAD    3 /* multipart, a file part after the fields */
#define BODY_SEMI      4 /* urlencoded, ';' between the fields */
#define BODY_XMLRPC    5 /* an XML-RPC call */
#define BODY_MULTICALL 6 /* a system.multicall of CALLS calls */
#define BODY_JSON      7 /* a JSON-RPC batch of CALLS calls */
#define CALLS          20
#define XR_FROM        "xmlrpc:wp.getUsersBlogs:1|xmlrpc:wp.*:2"
#define UPLOAD_FILE    (256u << 10)
#define BIG_UPLOAD     (10u << 20)
#define WEBKIT         "----WebKitFormBoundary7MA4YWxkTrZu0gW"

#define LIST_SIZE  100000
#define DEVICE_KEY "a-bench-key-of-at-least-thirty-two-characters"

static char list_path[64]; /* the list file the list rows share */

static const row_t rows[] = {
    {"default (trim)", "query:u", NULL, "user", NULL, 0, 0},
    {"login (trim casefold)", "query:u", "login", "User", NULL, 0, 0},
    {"dokuwiki recipe, ASCII", "query:u", DOKU_NORM, "User.", NULL, 0, 0},
    {"dokuwiki recipe, non-ASCII", "query:u", DOKU_NORM, "%C3%84user", NULL, 0,
     0},
    {"alternatives + recipe", "form:u|query:u|auth-user:any", DOKU_NORM,
     "User.", NULL, 0, 0},
    {"mediawiki recipe, User: prefix", "query:u", MW_NORM, "User%3Auser", NULL,
     0, 0},
    {"mediawiki recipe, entity", "query:u", MW_NORM, "J%26ouml%3Brg", NULL, 0,
     0},
    {"no list (the default, again)", "query:u", NULL, "user", NULL, 0, 0},
    {"deny list, 100,000 blocks", "query:u", NULL, "user", "Deny", 0, 0},
    {"allow list, 200,000 entries", "query:u client-ip", NULL, "user", "Allow",
     0, 0},
    {"form body, urlencoded", "form:u", NULL, "user", NULL, BODY_FORM, 0},
    {"form body, ';' separators", "form:u", NULL, "user", NULL, BODY_SEMI, 0},
    {"form body, multipart", "form:u", NULL, "user", NULL, BODY_MULTIPART, 0},
    {"XML-RPC, 1 call", XR_FROM, NULL, "user", NULL, BODY_XMLRPC, 0},
    {"XML-RPC, 20 calls (multicall)", XR_FROM, NULL, "user", NULL,
     BODY_MULTICALL, 0},
    {"JSON, 20-call batch", "json:/params/username", NULL, "user", NULL,
     BODY_JSON, 0},
    {"multipart, 256 KiB file after", "form:u", NULL, "user", NULL, BODY_UPLOAD,
     0},
    {"Failure route, slot settled", "query:u", NULL, "user", NULL, 0,
     OUTCOME_FAILURE},
    {"device cookies, none sent", "query:u", NULL, "user", NULL, 0,
     OUTCOME_DEVICE},
    {"device cookies, a valid one", "query:u", NULL, "user", NULL, 0,
     OUTCOME_COOKIE},
};

/* Writes the list file: LIST_SIZE blocks (IPv4 /24 in 10.0.0.0/8 but not
 * the client's 192.0.2.0/24, IPv6 /48 in 2001:db8::/32), then LIST_SIZE
 * User= values none of the requests has.  false when it cannot. */
static bool write_list(void)
{
    FILE *f;
    int fd;

    snprintf(list_path, sizeof(list_path), "/tmp/bench-guard-XXXXXX");
    fd = mkstemp(list_path);
    if (fd < 0 || (f = fdopen(fd, "w")) == NULL) {
        return false;
    }
    for (unsigned i = 0; i < LIST_SIZE; i++) {
        if (i % 2 == 0) {
            fprintf(f, "10.%u.%u.0/24\n", (i / 2) >> 8 & 255, (i / 2) & 255);
        } else {
            fprintf(f, "2001:db8:%x::/48\n", i & 0xffff);
        }
    }
    for (unsigned i = 0; i < LIST_SIZE; i++) {
        fprintf(f, "User=listed%06u\n", i);
    }
    return fclose(f) == 0;
}

static const char limits_xml[] =
    "<ArrayOfSuspectUsageSettingEntity><SuspectUsageSettingEntity "
    "Action=\"Login\" LimitCount=\"1000000\" LimitDuration=\"60\"/>"
    "</ArrayOfSuspectUsageSettingEntity>";

/* A request: its CGI variables and body. */
typedef struct breq {
    mw_req_t req; /* first: the ops get the request back by a cast */
    mw_param_t params[8];
    char qs[64];
    char cookie[160]; /* HTTP_COOKIE: a device cookie, or "" */
    char clen[24];
    char *body; /* malloc'ed, or NULL */
    size_t body_len, off;
} breq_t;

static ssize_t body_read(mw_req_t *r, void *buf, size_t n, bool wait)
{
    breq_t *b = (breq_t *)r;
    size_t left = b->body_len - b->off;

    (void)wait;
    n = n < left ? n : left;
    memcpy(buf, b->body + b->off, n);
    b->off += n;
    return (ssize_t)n;
}

static int no_fd(mw_req_t *r)
{
    (void)r;
    return -1;
}

static int no_write(mw_req_t *r, const void *buf, size_t n)
{
    (void)r;
    (void)buf;
    (void)n;
    return 0;
}

static int no_flush(mw_req_t *r)
{
    (void)r;
    return 0;
}

static const mw_req_ops_t ops = {body_read, no_fd, no_write, no_flush};

static void set_param(mw_param_t *p, const char *name, const char *value)
{
    p->name = name;
    p->name_len = strlen(name);
    p->value = value;
    p->value_len = strlen(value);
    p->repeated = false;
}

/* Whether a body of kind carries calls (XML-RPC, JSON). */
static bool calls_body(int kind)
{
    return kind == BODY_XMLRPC || kind == BODY_MULTICALL || kind == BODY_JSON;
}

/* The login of user (and the CALLS - 1 users after it) as a body of
 * calls of kind; malloc'ed, *len. */
static char *make_calls(int kind, const char *user, size_t *len)
{
    static const char call[] =
        "<value><struct><member><name>methodName</name><value><string>"
        "wp.getUsersBlogs</string></value></member><member><name>params"
        "</name><value><array><data><value><string>%s%s</string></value>"
        "<value><string>secret</string></value></data></array></value>"
        "</member></struct></value>";
    char *b = malloc(CALLS * 320 + 512), *p = b;

    if (b == NULL) {
        return NULL;
    }
    if (kind == BODY_XMLRPC) {
        *len = (size_t)sprintf(
            b,
            "<?xml version=\"1.0\"?><methodCall><methodName>"
            "wp.getUsersBlogs</methodName><params><param><value><string>"
            "%s</string></value></param><param><value><string>secret"
            "</string></value></param></params></methodCall>",
            user);
        return b;
    }
    p += sprintf(p, kind == BODY_JSON
                        ? "["
                        : "<?xml version=\"1.0\"?><methodCall><methodName>"
                          "system.multicall</methodName><params><param>"
                          "<value><array><data>");
    for (int i = 0; i < CALLS; i++) {
        char n[8];

        snprintf(n, sizeof(n), "-%d", i);
        p += kind == BODY_JSON
                 ? sprintf(p,
                           "%s{\"jsonrpc\":\"2.0\",\"method\":\"login\","
                           "\"params\":{\"username\":\"%s%s\",\"password\":"
                           "\"secret\"},\"id\":%d}",
                           i > 0 ? "," : "", user, n, i)
                 : sprintf(p, call, user, n);
    }
    p += sprintf(p, kind == BODY_JSON
                        ? "]"
                        : "</data></array></value></param></params>"
                          "</methodCall>");
    *len = (size_t)(p - b);
    return b;
}

/* The login's fields as a body of kind (BODY_*), with file bytes of
 * a file part after them (multipart only); malloc'ed, *len. */
static char *make_body(int kind, const char *user, size_t file, size_t *len)
{
    static const char part[] = "--" WEBKIT "\r\nContent-Disposition: "
                               "form-data; name=\"%s\"\r\n\r\n%s\r\n";
    char *b, *p;

    if (calls_body(kind)) {
        return make_calls(kind, user, len);
    }
    b = malloc(file + 1024);
    if (b == NULL) {
        return NULL;
    }
    if (kind == BODY_FORM || kind == BODY_SEMI) {
        *len = (size_t)sprintf(b,
                               kind == BODY_FORM ? "do=login&u=%s&p=secret"
                                                 : "do=login;u=%s;p=secret",
                               user);
        return b;
    }
    p = b + sprintf(b, part, "do", "login");
    p += sprintf(p, part, "u", user);
    p += sprintf(p, part, "p", "secret");
    if (kind == BODY_UPLOAD) {
        p += sprintf(p, "--" WEBKIT "\r\nContent-Disposition: form-data; "
                        "name=\"file\"; filename=\"a.bin\"\r\n"
                        "Content-Type: application/octet-stream\r\n\r\n");
        for (size_t i = 0; i < file; i++) {
            p[i] = (char)(i * 2654435761u >> 13);
        }
        p += file;
        p += sprintf(p, "\r\n");
    }
    p += sprintf(p, "--" WEBKIT "--\r\n");
    *len = (size_t)(p - b);
    return b;
}

static void build_req(breq_t *b, const char *prefix, int i, int body)
{
    char user[32];

    memset(b, 0, sizeof(*b));
    snprintf(user, sizeof(user), "%s%04d", prefix, i);
    snprintf(b->qs, sizeof(b->qs), "do=login&u=%s", user);
    set_param(&b->params[0], "REQUEST_METHOD", body != 0 ? "POST" : "GET");
    set_param(&b->params[1], "REQUEST_URI", "/doku.php");
    set_param(&b->params[2], "SCRIPT_NAME", "/doku.php");
    set_param(&b->params[3], "QUERY_STRING", body != 0 ? "" : b->qs);
    set_param(&b->params[4], "REMOTE_ADDR", "192.0.2.1");
    b->req.ops = &ops;
    b->req.role = MW_ROLE_RESPONDER;
    b->req.params = b->params;
    b->req.nparams = 5;
    if (body != 0) {
        b->body = make_body(body, user, body == BODY_UPLOAD ? UPLOAD_FILE : 0,
                            &b->body_len);
        snprintf(b->clen, sizeof(b->clen), "%zu", b->body_len);
        set_param(&b->params[5], "CONTENT_TYPE",
                  body == BODY_FORM || body == BODY_SEMI
                      ? "application/x-www-form-urlencoded"
                  : body == BODY_JSON ? "application/json"
                  : calls_body(body)  ? "text/xml"
                                     : "multipart/form-data; boundary=" WEBKIT);
        set_param(&b->params[6], "CONTENT_LENGTH", b->clen);
        b->req.nparams = 7;
    }
}

/* Ready for its next decision: the body unread, nothing prefetched. */
static void reset_req(breq_t *b)
{
    if (b->body != NULL) {
        mw_req_release(&b->req);
        b->req.body_done = false;
        b->off = 0;
    }
}

/* The guard of one row, or NULL (the error printed). */
static mw_guard_t *row_guard(const row_t *r, const suspect_conf_t **conf)
{
    char xml[1024];
    mw_guard_t *g = NULL;
    suspect_err_t err;
    int n;

    char list[128] = "";

    if (r->list != NULL) {
        snprintf(list, sizeof(list), "<%s file=\"%s\"/>", r->list, list_path);
    }
    n = snprintf(
        xml, sizeof(xml),
        "<Suspect>%s<Limits path=\"limits.xml\"/><Cgi root=\"/srv\"/>%s"
        "%s<Route action=\"Login\" prefix=\"/\"%s>"
        "<Identity type=\"User\" from=\"%s\"%s%s%s%s/>%s</Route>"
        "</Suspect>",
        r->outcome != 0 ? "<Server mode=\"forward\"/>" : "",
        r->outcome >= OUTCOME_DEVICE ? "<DeviceCookie key=\"" DEVICE_KEY "\"/>"
                                     : "",
        list, calls_body(r->body) ? "" : " when=\"param:u\"", r->from,
        r->normalize != NULL ? " normalize=\"" : "",
        r->normalize != NULL ? r->normalize : "",
        r->normalize != NULL ? "\"" : "",
        r->outcome >= OUTCOME_DEVICE ? " account=\"yes\"" : "",
        r->outcome != 0 ? "<Failure status=\"401\"/>" : "");
    suspect_err_clear(&err);
    if (suspect_conf_parse(xml, (size_t)n, "bench.xml", "/tmp", conf, &err) !=
            SUSPECT_OK ||
        mw_guard_new(*conf, &g, &err) != SUSPECT_OK) {
        fprintf(stderr, "bench-guard: %s\n", err.text);
        return NULL;
    }
    return g;
}

/* Gives b the device cookie a sign-in of its user earned (g binds
 * one); false when none was made. */
static bool give_cookie(mw_guard_t *g, const suspect_limits_t *lim, breq_t *b)
{
    mw_resolution_t res;
    char line[256];
    size_t n;

    if (mw_guard_resolve(g, lim, &b->req, 1700000000000LL, &res, NULL) !=
            SUSPECT_OK ||
        (n = mw_guard_device_cookie(g, &res, &b->req, 1700000000000LL, line,
                                    sizeof(line))) == 0) {
        return false;
    }
    snprintf(b->cookie, sizeof(b->cookie), "%.*s", (int)strcspn(line + 12, ";"),
             line + 12); /* "Set-Cookie: " */
    set_param(&b->params[b->req.nparams++], "HTTP_COOKIE", b->cookie);
    return true;
}

/* A row ready to run: its guard and requests. */
typedef struct row_run {
    const suspect_conf_t *conf;
    mw_guard_t *g;
    breq_t *reqs; /* NAMES */
    double best;  /* decisions per second, best round so far */
} row_run_t;

/* Builds the guard and the requests of row r; false (said) on failure. */
static bool row_open(const row_t *r, row_run_t *rr, const suspect_limits_t *lim)
{
    rr->best = 0;
    rr->conf = NULL;
    rr->g = row_guard(r, &rr->conf);
    rr->reqs = calloc(NAMES, sizeof(*rr->reqs));
    if (rr->g == NULL || rr->reqs == NULL) {
        return false;
    }
    for (int i = 0; i < NAMES; i++) {
        build_req(&rr->reqs[i], r->prefix, i, r->body);
        if ((r->body != 0 && rr->reqs[i].body == NULL) ||
            (r->outcome == OUTCOME_COOKIE &&
             !give_cookie(rr->g, lim, &rr->reqs[i]))) {
            return false;
        }
    }
    return true;
}

static void row_close(row_run_t *rr)
{
    for (int i = 0; rr->reqs != NULL && i < NAMES; i++) {
        reset_req(&rr->reqs[i]);
        free(rr->reqs[i].body);
    }
    mw_guard_unref(rr->g);
    suspect_conf_unref(rr->conf);
    free(rr->reqs);
}

/* One allowed decision of b at at (mw_guard_decide()). */
static bool decided(mw_guard_t *g, const suspect_limits_t *lim,
                    suspect_store_t *store, breq_t *b, int64_t at)
{
    mw_verdict_t v;

    return mw_guard_decide(g, lim, store, &b->req, at, &v, NULL) ==
               SUSPECT_OK &&
           v.kind == MW_VERDICT_ALLOW;
}

/* One allowed decision of b at at on a route that counts by the response,
 * its slot settled as a success (what suspect-fcgi does around a sign-in
 * that worked). */
static bool settled(mw_guard_t *g, const suspect_limits_t *lim,
                    suspect_store_t *store, breq_t *b, int64_t at)
{
    mw_resolution_t res;
    mw_verdict_t v;

    if (mw_guard_resolve(g, lim, &b->req, at, &res, NULL) != SUSPECT_OK ||
        res.nkeys == 0) {
        return false;
    }
    mw_guard_finish(store, &res, &v);
    return v.kind == MW_VERDICT_ALLOW &&
           mw_guard_settle(store, &res, &v, false, at, NULL) == SUSPECT_OK;
}

/* One round of a row: RUN_MS of decisions on a new store; keeps the best
 * rate in rr. */
static void row_round(const row_t *r, row_run_t *rr,
                      const suspect_limits_t *lim)
{
    suspect_store_t *store = NULL;
    int64_t now_ms = 1700000000000LL;
    uint64_t n = 0, bad = 0;
    double t0 = now_s(), t;

    if (suspect_memstore_new(NULL, &store, NULL) != SUSPECT_OK) {
        return;
    }
    do {
        for (int k = 0; k < 256; k++, n++) {
            breq_t *b = &rr->reqs[n % NAMES];
            int64_t at = now_ms + (int64_t)(n / 64);

            bad += r->outcome != 0 ? !settled(rr->g, lim, store, b, at)
                                   : !decided(rr->g, lim, store, b, at);
            reset_req(b);
        }
        t = now_s() - t0;
    } while (t < RUN_MS / 1000.0);
    if (bad > 0) {
        fprintf(stderr, "bench-guard: %s: %llu not allowed\n", r->name,
                (unsigned long long)bad);
    }
    rr->best = (double)n / t > rr->best ? (double)n / t : rr->best;
    suspect_store_free(store);
}

/* Reads b's body to its end in 64 KiB reads; the bytes read. */
static size_t read_to_end(breq_t *b)
{
    static char buf[64 << 10];
    size_t n = 0;
    ssize_t k;

    while ((k = mw_req_read(&b->req, buf, sizeof(buf), true)) > 0) {
        n += (size_t)k;
    }
    return n;
}

/* A 10 MiB upload read through the check the decision sets up, and the
 * same bytes read without it. */
static void bench_upload(const row_run_t *rr, const suspect_limits_t *lim)
{
    suspect_store_t *store = NULL;
    breq_t b;
    double with = 0, without = 0;

    build_req(&b, "user", 1, BODY_UPLOAD);
    free(b.body);
    b.body = make_body(BODY_UPLOAD, "user0001", BIG_UPLOAD, &b.body_len);
    snprintf(b.clen, sizeof(b.clen), "%zu", b.body_len);
    set_param(&b.params[6], "CONTENT_LENGTH", b.clen);
    if (b.body == NULL ||
        suspect_memstore_new(NULL, &store, NULL) != SUSPECT_OK) {
        return;
    }
    for (int round = 0; round < ROUNDS; round++) {
        mw_verdict_t v;
        double t0 = now_s(), t;
        size_t n;

        if (mw_guard_decide(rr->g, lim, store, &b.req, 1700000000000LL, &v,
                            NULL) != SUSPECT_OK ||
            v.kind != MW_VERDICT_ALLOW) {
            reset_req(&b);
            break;
        }
        n = read_to_end(&b);
        t = now_s() - t0;
        if (n == b.body_len && b.req.filter != NULL &&
            (with == 0 || t < with)) {
            with = t;
        }
        reset_req(&b);
        t0 = now_s();
        n = read_to_end(&b);
        t = now_s() - t0;
        if (n == b.body_len && (without == 0 || t < without)) {
            without = t;
        }
        reset_req(&b);
    }
    if (with > 0 && without > 0) {
        printf("a %u MiB multipart upload (fields first) decided and read "
               "through the check: %.2f ms (%.0f MB/s); read without a "
               "check: %.2f ms (%.0f MB/s); check / none %.1fx\n",
               BIG_UPLOAD >> 20, with * 1e3, b.body_len / with / 1e6,
               without * 1e3, b.body_len / without / 1e6, with / without);
    } else {
        fprintf(stderr, "bench-guard: the upload did not read whole\n");
    }
    free(b.body);
    suspect_store_free(store);
}

int main(int argc, char **argv)
{
    double allowed_us = argc > 1 ? strtod(argv[1], NULL) : 0;
    suspect_limits_t *lim = NULL;
    suspect_err_t err;
    size_t nrows = sizeof(rows) / sizeof(rows[0]);
    row_run_t runs[sizeof(rows) / sizeof(rows[0])];
    double base = 0, urlencoded = 0;
    int worst_ok = 1;

    suspect_err_clear(&err);
    if (!write_list()) {
        fprintf(stderr, "bench-guard: cannot write a list file in /tmp\n");
        return 1;
    }
    if (suspect_limits_parse(limits_xml, sizeof(limits_xml) - 1, "limits.xml",
                             NULL, &lim, &err) != SUSPECT_OK) {
        fprintf(stderr, "bench-guard: %s\n", err.text);
        return 1;
    }
    for (size_t i = 0; i < nrows; i++) {
        if (!row_open(&rows[i], &runs[i], lim)) {
            fprintf(stderr, "bench-guard: %s: setup failed\n", rows[i].name);
            return 1;
        }
    }
    /* Rounds interleave the rows (A B C ... A B C ...), so a machine that
     * gets busier or quieter during the run weighs on every row alike. */
    for (int round = 0; round < ROUNDS; round++) {
        for (size_t i = 0; i < nrows; i++) {
            row_round(&rows[i], &runs[i], lim);
        }
    }
    printf("bench-guard: mw_guard_decide(), allowed, 1 thread, %d names, "
           "best of %d x %d ms\n",
           NAMES, ROUNDS, RUN_MS);
    printf("%-30s %12s %9s %10s %12s\n", "identity reading", "decisions/s",
           "us/req", "vs default", "of allowed");
    for (size_t i = 0; i < nrows; i++) {
        double rate = runs[i].best;
        double us = rate > 0 ? 1e6 / rate : 0;
        double extra;

        if (i == 0 || strncmp(rows[i].name, "no list", 7) == 0 ||
            strcmp(rows[i].name, "form body, urlencoded") == 0 ||
            rows[i].outcome == OUTCOME_FAILURE) {
            base = rate; /* the peer of the rows that follow */
        }
        if (rows[i].body == BODY_FORM) {
            urlencoded = rate;
        }
        extra = base > 0 && rate > 0 ? us - 1e6 / base : 0;
        printf("%-30s %12.0f %9.3f %+9.1f%% ", rows[i].name, rate, us,
               base > 0 ? 100.0 * extra / (1e6 / base) : 0);
        if (allowed_us > 0 && rows[i].body == BODY_UPLOAD) {
            /* Not a login: an upload, a request of its own weight. */
            printf("%12s\n", "(upload)");
        } else if (allowed_us > 0 && rows[i].body == BODY_MULTICALL) {
            printf("%12s\n", "(20 logins)");
        } else if (allowed_us > 0 && rows[i].body == BODY_JSON) {
            printf("%12s\n", "(20 logins)");
        } else if (allowed_us > 0) {
            printf("%+11.2f%%\n", 100.0 * extra / allowed_us);
            worst_ok &= 100.0 * extra / allowed_us <= 3.0;
        } else {
            printf("%12s\n", "-");
        }
    }
    if (allowed_us > 0) {
        printf("reading identities vs an allowed request (%.1f us of CPU, "
               "bench-fcgi): %s (target <= 3%%)\n",
               allowed_us, worst_ok ? "within" : "OVER");
    } else {
        printf("(bench-guard US: the share of an allowed request of US "
               "microseconds; make bench-fcgi passes the one it measures)\n");
    }
    for (size_t i = 0; i < nrows; i++) {
        if (calls_body(rows[i].body) && urlencoded > 0 && runs[i].best > 0) {
            printf("%s vs form body, urlencoded: %.2fx the time per request\n",
                   rows[i].name, urlencoded / runs[i].best);
        }
    }
    for (size_t i = 0; i < nrows; i++) {
        if (rows[i].body == BODY_UPLOAD) {
            bench_upload(&runs[i], lim); /* its guard: form:u */
            break;
        }
    }
    for (size_t i = 0; i < nrows; i++) {
        row_close(&runs[i]);
    }
    suspect_limits_unref(lim);
    remove(list_path);
    return 0;
}
