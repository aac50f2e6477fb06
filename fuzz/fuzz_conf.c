/*
 * fuzz_conf.c - libFuzzer target for the suspect.xml loader
 * (config/conf/conf.c, conf_xml.c, conf_values.c, conf_elems.c, conf_route.c)
 * and the guard compiler that takes its result (middleware/guard/guard.c:
 * trusted proxies, header names, route lengths).
 *
 * Input: the bytes of a suspect.xml, handed to suspect_conf_parse() with a
 * private directory that holds a small response template (429.html), so
 * relative paths and the template loader are exercised.  A snapshot that
 * loads is checked against the loader's promises (counts within their
 * caps, paths absolute, methods upper case, one forward target in forward
 * mode) and compiled into a guard, which is then asked which of its routes
 * name an action missing from a fixed limits snapshot.  A failure must
 * carry a message.  Any broken promise aborts.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "guard/guard.h"
#include "conf/suspect_conf.h"
#include "limits/suspect_limits.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz_conf: check failed: %s\n", #cond);           \
            abort();                                                           \
        }                                                                      \
    } while (0)

static const char limits_xml[] =
    "<ArrayOfSuspectUsageSettingEntity>"
    "<SuspectUsageSettingEntity Action=\"Login\" LimitCount=\"2\" "
    "LimitDuration=\"60\" BlockDuration=\"60\"/>"
    "<SuspectUsageSettingEntity Action=\"PromoQuery\" LimitCount=\"10\" "
    "LimitDuration=\"60\"/>"
    "</ArrayOfSuspectUsageSettingEntity>";

static char dir[64];
static char tmpl_path[96];
static suspect_limits_t *limits;

static void cleanup(void)
{
    unlink(tmpl_path);
    rmdir(dir);
    suspect_limits_unref(limits);
}

/* A private directory with a template, and the limits snapshot. */
static void setup(void)
{
    FILE *f;

    snprintf(dir, sizeof(dir), "/tmp/suspect-fuzz-conf.XXXXXX");
    CHECK(mkdtemp(dir) != NULL);
    snprintf(tmpl_path, sizeof(tmpl_path), "%s/429.html", dir);
    f = fopen(tmpl_path, "w");
    CHECK(f != NULL);
    fputs("<p>{action}: retry in {retry_after} s</p>\n", f);
    CHECK(fclose(f) == 0);
    CHECK(suspect_limits_parse(limits_xml, sizeof(limits_xml) - 1, "l.xml",
                               NULL, &limits, NULL) == SUSPECT_OK);
    atexit(cleanup);
}

static void check_route(const suspect_conf_route_t *r)
{
    CHECK(r->action != NULL && r->path != NULL && r->path[0] == '/');
    CHECK(r->nmethods <= SUSPECT_CONF_MAX_METHODS);
    for (size_t m = 0; m < r->nmethods; m++) {
        for (const char *p = r->methods[m]; *p != '\0'; p++) {
            CHECK(!islower((unsigned char)*p));
        }
    }
    CHECK(r->nidentities >= 1 && r->nidentities <= SUSPECT_MAX_IDENTITIES);
    for (size_t i = 0; i < r->nidentities; i++) {
        const suspect_conf_identity_t *id = &r->identities[i];

        CHECK(id->type != NULL);
        CHECK(id->nparts >= 1 && id->nparts <= SUSPECT_MAX_PARTS &&
              id->nsources >= id->nparts &&
              id->nsources <= SUSPECT_CONF_MAX_SOURCES);
        for (size_t s = 0; s < id->nsources; s++) {
            CHECK((id->source[s].name == NULL) ==
                  (id->source[s].kind == SUSPECT_SRC_CLIENT_IP));
            CHECK(suspect_src_kind_name(id->source[s].kind) != NULL);
        }
    }
    CHECK(r->status == 0 || (r->status >= 400 && r->status <= 599));
}

static void count_msg(void *arg, const char *msg)
{
    CHECK(msg != NULL && msg[0] != '\0');
    ++*(size_t *)arg;
}

static void check_conf(const suspect_conf_t *c)
{
    mw_guard_t *g = NULL;
    suspect_err_t err;

    CHECK(c->nroutes <= SUSPECT_CONF_MAX_ROUTES);
    CHECK(c->limits_path != NULL && c->limits_path[0] == '/');
    CHECK(c->template_path == NULL || c->template_body != NULL);
    CHECK(c->template_len <= SUSPECT_CONF_MAX_TEMPLATE);
    if (c->mode == SUSPECT_MODE_FORWARD) {
        CHECK(c->has_cgi != c->has_upstream);
    }
    for (size_t i = 0; i < c->nroutes; i++) {
        check_route(&c->routes[i]);
    }
    for (size_t i = 0; i < suspect_conf_warning_count(c); i++) {
        CHECK(suspect_conf_warning(c, i) != NULL);
    }
    memset(&err, 0, sizeof(err));
    if (mw_guard_new(c, &g, &err) == SUSPECT_OK) {
        size_t n = 0;

        CHECK(mw_guard_conf(g) == c);
        CHECK(suspect_conf_missing_actions(c, limits, count_msg, &n) == n);
        CHECK(n <= c->nroutes);
        mw_guard_unref(g);
    } else {
        CHECK(g == NULL && err.text[0] != '\0');
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const suspect_conf_t *conf = NULL;
    suspect_err_t err;
    suspect_rc_t rc;

    if (dir[0] == '\0') {
        setup();
    }
    memset(&err, 0, sizeof(err));
    rc = suspect_conf_parse((const char *)data, size, "suspect.xml", dir, &conf,
                            &err);
    if (rc == SUSPECT_OK) {
        CHECK(conf != NULL);
        check_conf(conf);
        CHECK(suspect_conf_ref(conf) == conf);
        suspect_conf_unref(conf);
        suspect_conf_unref(conf);
    } else {
        CHECK(conf == NULL && err.text[0] != '\0');
    }
    return 0;
}
