/*
 * conf_outcome.c - <Failure> and <Success> of a <Route>: counting only the
 * attempts the application's response says failed (a one-time code: lock
 * after three failed verifications).
 *
 * Each element is one pattern; it matches a response when every criterion
 * it gives holds: status (a list of 100..599), location (a path, and
 * maybe a query, the Location header names: a path from the root, never a
 * host; hosts= lists the hosts an absolute URL may name), header (a
 * response header present, or holding a text) and body (a text among
 * the first `within` bytes of the body, 4096 by default, at most 64 KiB).  A
 * route with <Failure> counts an attempt when one of them matches; a route with
 * <Success> counts it unless one matches, the form an attacker cannot dodge by
 * making a failed attempt look unusual.  A route has one kind or the other, at
 * most SUSPECT_CONF_MAX_OUTCOMES elements.
 *
 * What the patterns need is checked against the whole file in
 * conf_outcomes_check(): the response, which only forward mode sees.
 */
#include "conf_internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#define OOFF(field) offsetof(suspect_conf_outcome_t, field)
#define TEXT_MAX    256

/* status="401 403" (spaces or commas between). */
static suspect_rc_t set_statuses(conf_build_t *b, const conf_site_t *at,
                                 void *obj, const conf_attr_t *a, const char *v,
                                 size_t n)
{
    suspect_conf_outcome_t *o = obj;
    size_t i = 0;

    (void)a;
    o->nstatus = 0;
    while (i < n) {
        int code = 0;
        size_t digits = 0;

        while (i < n && (v[i] == ' ' || v[i] == ',' || v[i] == '\t')) {
            i++;
        }
        while (i < n && v[i] >= '0' && v[i] <= '9' && digits < 4) {
            code = code * 10 + (v[i++] - '0');
            digits++;
        }
        if (digits == 0 && i == n) {
            break;
        }
        if (digits != 3 || code < 100 || code > 599 ||
            (i < n && v[i] != ' ' && v[i] != ',' && v[i] != '\t')) {
            return conf_bad_value(b, at, v, n,
                                  "must be HTTP statuses 100 to 599, such as "
                                  "\"401 403\"");
        }
        if (o->nstatus == SUSPECT_CONF_MAX_STATUSES) {
            return conf_fail(b, at->line, "%s: more than %u statuses", at->elem,
                             SUSPECT_CONF_MAX_STATUSES);
        }
        o->status[o->nstatus++] = code;
    }
    if (o->nstatus == 0) {
        return conf_empty_value(b, at);
    }
    return SUSPECT_OK;
}

/* body="Invalid password": 1 to TEXT_MAX bytes, no control characters
 * (UTF-8 is fine: it is searched byte for byte). */
static suspect_rc_t set_body(conf_build_t *b, const conf_site_t *at, void *obj,
                             const conf_attr_t *a, const char *v, size_t n)
{
    char *s;

    (void)a;
    if (n == 0) {
        return conf_empty_value(b, at);
    }
    if (n > TEXT_MAX) {
        return conf_fail(b, at->line, "%s: %s is too long (at most %d bytes)",
                         at->elem, at->attr, TEXT_MAX);
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];

        if (c < 0x20 || c == 0x7f) {
            return conf_bad_value(b, at, v, n,
                                  "must be text without control characters");
        }
    }
    s = conf_strndup(b, v, n);
    if (s == NULL) {
        return conf_nomem(b, at->line);
    }
    ((suspect_conf_outcome_t *)obj)->body = s;
    return SUSPECT_OK;
}

static const conf_text_t location_text = {
    TEXT_MAX,
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    "-._~!$&'()*+,;=:@/?%[]",
    0,
    0,
    "/",
    NULL,
    "must be a path and maybe a query, such as \"/login?error\": a Location "
    "is compared by its path (an absolute URL's host by hosts=)"};

/* location="/account": a path from the root, not "//host" (which a
 * Location would read as a host). */
static suspect_rc_t set_location(conf_build_t *b, const conf_site_t *at,
                                 void *obj, const conf_attr_t *a, const char *v,
                                 size_t n)
{
    if (n >= 2 && v[0] == '/' && v[1] == '/') {
        return conf_bad_value(b, at, v, n, location_text.what);
    }
    return conf_set_text(b, at, obj, a, v, n);
}

static const conf_text_t hosts_text = {
    TEXT_MAX,
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.:[]",
    1,
    0,
    NULL,
    NULL,
    "must be host names, with a port where the Location gives one, "
    "separated by spaces, such as \"www.example.org example.org:8443\""};
static const conf_num_t within_range = {1, SUSPECT_CONF_WITHIN_MAX, CONF_BYTES,
                                        CONF_SIZE};

/* header="Set-Cookie" or header="Set-Cookie: %7C0%7C": a header name (an
 * HTTP token), then maybe ':' and a text its value must hold. */
static suspect_rc_t set_header(conf_build_t *b, const conf_site_t *at,
                               void *obj, const conf_attr_t *a, const char *v,
                               size_t n)
{
    suspect_conf_outcome_t *o = obj;
    const char *colon = memchr(v, ':', n);
    size_t nlen = colon != NULL ? (size_t)(colon - v) : n, tlen = 0;
    const char *text = colon != NULL ? colon + 1 : NULL;

    (void)a;
    if (text != NULL) {
        tlen = n - nlen - 1;
        while (tlen > 0 && *text == ' ') {
            text++;
            tlen--;
        }
    }
    if (!conf_is_token(v, nlen) || (text != NULL && tlen == 0) ||
        tlen > TEXT_MAX) {
        return conf_bad_value(b, at, v, n,
                              "must be a header name, maybe with ': ' and a "
                              "text its value holds, such as "
                              "\"Set-Cookie: %7C0%7C\"");
    }
    for (size_t i = 0; i < tlen; i++) {
        if ((unsigned char)text[i] < 0x20 || text[i] == 0x7f) {
            return conf_bad_value(b, at, v, n,
                                  "must be text without control characters");
        }
    }
    o->header = conf_strndup(b, v, nlen);
    o->header_text = text != NULL ? conf_strndup(b, text, tlen) : NULL;
    if (o->header == NULL || (text != NULL && o->header_text == NULL)) {
        return conf_nomem(b, at->line);
    }
    return SUSPECT_OK;
}

enum { OC_STATUS, OC_LOCATION, OC_BODY, OC_WITHIN, OC_HOSTS, OC_HEADER };

static const conf_attr_t outcome_attrs[] = {
    [OC_STATUS] = {"status", set_statuses, 0, NULL, 0},
    [OC_LOCATION] = {"location", set_location, OOFF(location), &location_text,
                     0},
    [OC_BODY] = {"body", set_body, 0, NULL, 0},
    [OC_WITHIN] = {"within", conf_set_num, OOFF(within), &within_range, 0},
    [OC_HOSTS] = {"hosts", conf_set_text, OOFF(hosts), &hosts_text, 0},
    [OC_HEADER] = {"header", set_header, 0, NULL, 0},
    {NULL, NULL, 0, NULL, 0}};

/* The next outcome entry of the current route, of kind count. */
static suspect_rc_t outcome_begin(conf_build_t *b, int line, void **obj,
                                  suspect_count_t count, const char *name)
{
    suspect_conf_route_t *r = *obj;
    suspect_conf_outcome_t *o;

    if (r->count != SUSPECT_COUNT_ALL && r->count != count) {
        return conf_fail(b, line,
                         "Route: <Failure> and <Success> exclude each other: "
                         "count failures, or everything but successes");
    }
    if (r->noutcomes == SUSPECT_CONF_MAX_OUTCOMES) {
        return conf_fail(b, line, "Route: more than %u <%s> elements",
                         SUSPECT_CONF_MAX_OUTCOMES, name);
    }
    if (r->outcomes == NULL) {
        r->outcomes =
            conf_alloc(b, SUSPECT_CONF_MAX_OUTCOMES * sizeof(*r->outcomes));
        if (r->outcomes == NULL) {
            return conf_nomem(b, line);
        }
    }
    r->count = count;
    o = (suspect_conf_outcome_t *)&r->outcomes[r->noutcomes++];
    o->within = SUSPECT_CONF_WITHIN_DEFAULT;
    *obj = o;
    return SUSPECT_OK;
}

static suspect_rc_t failure_begin(conf_build_t *b, int line, size_t nchildren,
                                  void **obj)
{
    (void)nchildren;
    return outcome_begin(b, line, obj, SUSPECT_COUNT_FAILURES, "Failure");
}

static suspect_rc_t success_begin(conf_build_t *b, int line, size_t nchildren,
                                  void **obj)
{
    (void)nchildren;
    return outcome_begin(b, line, obj, SUSPECT_COUNT_UNLESS_OK, "Success");
}

/* At least one criterion; within only with a body. */
static suspect_rc_t outcome_end(conf_build_t *b, void *obj, uint32_t seen,
                                int line)
{
    (void)obj;
    if ((seen & ((1u << OC_STATUS) | (1u << OC_LOCATION) | (1u << OC_BODY) |
                 (1u << OC_HEADER))) == 0) {
        return conf_fail(b, line,
                         "a <Failure> or <Success> needs status, location, "
                         "header or body: an empty one would match every "
                         "response");
    }
    if ((seen & (1u << OC_WITHIN)) && !(seen & (1u << OC_BODY))) {
        return conf_fail(b, line,
                         "within is the length of the body "
                         "searched: it needs a body");
    }
    if ((seen & (1u << OC_HOSTS)) && !(seen & (1u << OC_LOCATION))) {
        return conf_fail(b, line,
                         "hosts are those an absolute Location may name: "
                         "they need a location");
    }
    return SUSPECT_OK;
}

const conf_elem_t conf_failure_elem = {
    "Failure", outcome_attrs, NULL, failure_begin, outcome_end, OOFF(line), 0};

const conf_elem_t conf_success_elem = {
    "Success", outcome_attrs, NULL, success_begin, outcome_end, OOFF(line), 0};

/* A <Success> that a body text alone tells: a failure page that shows
 * what the client sent (the user name, a search) holds any text the
 * client chooses, so the attempt is read as a success. */
static suspect_rc_t warn_reflected(conf_build_t *b,
                                   const suspect_conf_route_t *r)
{
    for (size_t i = 0; i < r->noutcomes; i++) {
        const suspect_conf_outcome_t *o = &r->outcomes[i];

        if (o->body != NULL && o->location == NULL &&
            conf_warn(b, o->line,
                      "Success: a body text can be spelled by the client "
                      "when the failure page shows what it sent (a user "
                      "name \"%.40s\"): give it a status or a location "
                      "the failure never has, or use <Failure>",
                      o->body) != SUSPECT_OK) {
            return SUSPECT_E_NOMEM;
        }
    }
    return SUSPECT_OK;
}

suspect_rc_t conf_outcomes_check(conf_build_t *b)
{
    const suspect_conf_t *c = b->conf;

    for (size_t i = 0; i < c->nroutes; i++) {
        const suspect_conf_route_t *r = &c->routes[i];

        if (r->count == SUSPECT_COUNT_ALL) {
            continue;
        }
        if (r->count == SUSPECT_COUNT_UNLESS_OK &&
            warn_reflected(b, r) != SUSPECT_OK) {
            return SUSPECT_E_NOMEM;
        }
        if (c->mode != SUSPECT_MODE_FORWARD) {
            return conf_fail(b, r->line,
                             "Route: <%s> needs the response, which %s mode "
                             "never sees: use mode=\"forward\"",
                             r->count == SUSPECT_COUNT_FAILURES ? "Failure"
                                                                : "Success",
                             conf_mode_name(c->mode));
        }
    }
    return conf_devices_check(b); /* they need the response too */
}
