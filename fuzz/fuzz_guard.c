/*
 * fuzz_guard.c - libFuzzer target for a whole request decision
 * (middleware/guard/guard_decide.c, route.c, identity.c, guard_call.c,
 * path.c, guard_respond.c, and through them the request parsers and
 * policy/keys.c), with the in-memory request of tests/helpers/fakereq.c and a
 * memory store.
 *
 * Input: a control byte, then CGI variables as NAME=value lines; after the
 * first empty line, the request body.  The control byte picks one of
 * three guards compiled from fixed suspect.xml texts (forward mode with
 * X-Forwarded-For, forward mode with Forwarded and typed keys, auth-request
 * mode), which between them use every identity source, composite
 * identities, parameter conditions in the query, the form or either,
 * exact and prefix paths, and a small formMax; bit 2 makes the request an
 * authorizer's; bits 3-5 cut the body into reads of 1 to 8 bytes.
 *
 * The request is resolved (mw_guard_resolve), then decided against a
 * fresh memory store (mw_guard_decide), and any verdict that answers is
 * written (mw_guard_respond); an allowed request is decided once more,
 * and since every limit is 1, denied.  Oracles: a verdict with keys has a route
 * and rule; keys are well-formed window/lock pairs; a decision equals the
 * resolution it was made from; a written response starts with a Status
 * line (or the 403 of auth-request) and ends its header block; PASS and
 * ALLOW write nothing.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers/fakereq.h"
#include "guard/guard.h"
#include "log/log.h"
#include "suspect_store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_guard: check failed: %s\n", #cond);          \
            abort();                                                           \
        }                                                                      \
    } while (0)

#define ROUTES                                                                 \
    "<Route action=\"Login\" method=\"POST\" path=\"/app.cgi\" "               \
    "param=\"op=login\" paramIn=\"any\" missing=\"reject\">"                   \
    "<Identity type=\"LoginId\" from=\"form:member\"/>"                        \
    "<Identity type=\"ClientIp\" from=\"client-ip\"/></Route>"                 \
    "<Route action=\"Promo\" method=\"GET POST\" path=\"/app.cgi\" "           \
    "param=\"op=promo\" paramIn=\"query\">"                                    \
    "<Identity type=\"MemberPromo\" from=\"cookie:member query:code\"/>"       \
    "</Route>"                                                                 \
    "<Route action=\"Bank\" prefix=\"/api/\" param=\"acct\" "                  \
    "paramIn=\"form\" missing=\"allow\" status=\"403\">"                       \
    "<Identity type=\"Account\" from=\"header:X-Account-Id "                   \
    "env:REMOTE_USER\"/>"                                                      \
    "<Identity type=\"Session\" from=\"cookie:SESSIONID\"/></Route>"           \
    "<Route action=\"Login\" path=\"/index.php\">"                             \
    "<Identity type=\"ClientIp\" from=\"client-ip\"/></Route>"

static const char *const confs[3] = {
    "<Suspect><Server mode=\"forward\" formMax=\"1K\"/>"
    "<Limits path=\"limits.xml\"/><Cgi root=\"/srv\"/>"
    "<ClientIp trustedProxies=\"10.0.0.0/8 ::1\" header=\"x-forwarded-for\" "
    "ipv6Prefix=\"56\"/>" ROUTES "</Suspect>",
    "<Suspect><Server mode=\"forward\" formMax=\"1K\"/>"
    "<Limits path=\"limits.xml\"/><Upstream address=\"unix:/run/p.sock\"/>"
    "<Keys format=\"typed\" prefix=\"app1:\"/>"
    "<ClientIp trustedProxies=\"127.0.0.1 2001:db8::/32\" header=\"forwarded\" "
    "ipv4Prefix=\"24\"/>" ROUTES "</Suspect>",
    "<Suspect><Server mode=\"auth-request\"/><Limits path=\"limits.xml\"/>"
    "<Route action=\"Promo\" method=\"GET\" prefix=\"/\" param=\"op=promo\">"
    "<Identity type=\"MemberPromo\" from=\"cookie:member query:code\"/>"
    "</Route><Route action=\"Login\" path=\"/login\">"
    "<Identity type=\"ClientIp\" from=\"client-ip\"/></Route></Suspect>",
};

static const char limits_xml[] =
    "<ArrayOfSuspectUsageSettingEntity>"
    "<SuspectUsageSettingEntity Action=\"Login\" LimitCount=\"1\" "
    "LimitDuration=\"60\" BlockDuration=\"60\"/>"
    "<SuspectUsageSettingEntity Action=\"Promo\" LimitCount=\"1\" "
    "LimitDuration=\"60\"/>"
    "<SuspectUsageSettingEntity Action=\"Bank\" LimitCount=\"1\" "
    "LimitDuration=\"60\"/>"
    "</ArrayOfSuspectUsageSettingEntity>";

static mw_guard_t *guards[3];
static suspect_limits_t *limits;

static void setup(void)
{
    suspect_err_t err;

    mw_log_init("fuzz", MW_LOG_ERROR);
    CHECK(suspect_limits_parse(limits_xml, sizeof(limits_xml) - 1, "l.xml",
                               NULL, &limits, NULL) == SUSPECT_OK);
    for (int i = 0; i < 3; i++) {
        const suspect_conf_t *conf = NULL;

        memset(&err, 0, sizeof(err));
        if (suspect_conf_parse(confs[i], strlen(confs[i]), "suspect.xml",
                               "/tmp", &conf, &err) != SUSPECT_OK ||
            mw_guard_new(conf, &guards[i], &err) != SUSPECT_OK) {
            fprintf(stderr, "fuzz_guard: conf %d: %s:%d: %s\n", i, err.file,
                    err.line, err.text);
            abort();
        }
        suspect_conf_unref(conf);
    }
}

/* Fills r's variables from "NAME=value" lines of p[0..end), where *end
 * is a NUL; each value's '\n' becomes its NUL, as mw_param_t requires.
 * Returns where the body starts (after the first empty line), or end. */
static const char *parse_vars(fakereq_t *r, char *p, char *end)
{
    size_t n = 0;

    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *e = nl != NULL ? nl : end;
        const char *eq = memchr(p, '=', (size_t)(e - p));

        if (e == p) {
            r->req.nparams = n;
            return p + 1;
        }
        *e = '\0';
        if (eq != NULL && n < FAKEREQ_MAX_PARAMS) {
            r->params[n].name = p;
            r->params[n].name_len = (size_t)(eq - p);
            r->params[n].value = eq + 1;
            r->params[n].value_len = (size_t)(e - eq - 1);
            n++;
        }
        p = nl != NULL ? nl + 1 : end;
    }
    r->req.nparams = n;
    return end;
}

static void check_resolution(const mw_resolution_t *res)
{
    const mw_verdict_t *v = &res->verdict;

    CHECK(res->nkeys <= SUSPECT_MAX_IDENTITIES);
    if (res->nkeys == 0) {
        CHECK(v->kind == MW_VERDICT_PASS || v->kind == MW_VERDICT_REJECT);
        return;
    }
    CHECK(v->route != NULL && v->rule.action != NULL);
    for (size_t i = 0; i < res->nkeys; i++) {
        const suspect_key_t *k = &res->keys[i];

        CHECK(res->types[i] != NULL);
        CHECK(k->lock_len == k->window_len + SUSPECT_LOCK_SUFFIX_LEN);
        CHECK(strlen(k->buf) == k->lock_len);
        for (size_t j = 0; j < i; j++) {
            CHECK(res->keys[j].window_len != k->window_len ||
                  memcmp(res->keys[j].buf, k->buf, k->window_len) != 0);
        }
    }
}

static void check_response(const fakereq_t *r, const mw_verdict_t *v)
{
    if (v->kind == MW_VERDICT_PASS || v->kind == MW_VERDICT_ALLOW) {
        CHECK(r->out_len == 0);
        return;
    }
    CHECK(r->out_len > 0 && strncmp(r->out, "Status: ", 8) == 0);
    CHECK(strstr(r->out, "\r\n\r\n") != NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy, *end;
    mw_guard_t *g;
    mw_resolution_t res;
    mw_verdict_t v;
    suspect_store_t *store = NULL;
    fakereq_t r;
    const char *body;
    suspect_rc_t rc, rc2;

    if (size < 1) {
        return 0;
    }
    if (limits == NULL) {
        setup();
    }
    g = guards[data[0] % 3];
    copy = malloc(size);
    CHECK(copy != NULL);
    memcpy(copy, data + 1, size - 1);
    end = copy + size - 1;
    *end = '\0';
    fakereq_init(&r, NULL, NULL, 0);
    body = parse_vars(&r, copy, end);
    r.body = body;
    r.body_len = (size_t)(end - body);
    r.chunk = (data[0] >> 3) & 7 ? ((data[0] >> 3) & 7) : 0;
    if (data[0] & 4) {
        r.req.role = MW_ROLE_AUTHORIZER;
    }
    rc = mw_guard_resolve(g, limits, &r.req, 1000000, &res, NULL);
    if (rc == SUSPECT_OK) {
        check_resolution(&res);
        mw_resolution_release(&res);
    }
    CHECK(suspect_memstore_new(NULL, &store, NULL) == SUSPECT_OK);
    rc2 = mw_guard_decide(g, limits, store, &r.req, 1000000, &v, NULL);
    CHECK(rc2 == rc);
    if (rc2 == SUSPECT_OK) {
        CHECK(v.kind == (res.nkeys > 0 ? MW_VERDICT_ALLOW : res.verdict.kind));
        CHECK(v.route == res.verdict.route);
        if (v.kind != MW_VERDICT_PASS && v.kind != MW_VERDICT_ALLOW) {
            CHECK(mw_guard_respond(g, &r.req, &v) == 0);
        }
        check_response(&r, &v);
    }
    if (rc2 == SUSPECT_OK && v.kind == MW_VERDICT_ALLOW) {
        /* Every limit is 1: the same request again is denied. */
        CHECK(mw_guard_decide(g, limits, store, &r.req, 1000001, &v, NULL) ==
              SUSPECT_OK);
        CHECK(v.kind == MW_VERDICT_DENY);
        CHECK(mw_guard_respond(g, &r.req, &v) == 0);
        check_response(&r, &v);
    }
    suspect_store_free(store);
    fakereq_free(&r);
    free(copy);
    return 0;
}
