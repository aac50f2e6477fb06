/*
 * conf_device.c - <DeviceCookie> and what it asks of the routes: a
 * browser that signed in to an account carries a cookie that lets its
 * next attempts for that account be counted apart from everyone else's
 * (OWASP's device cookies; docs/suspect-xml.md, "Device cookies").
 *
 *   <DeviceCookie key="..." oldKey="..." name="suspect_device"
 *                 lifetime="7776000"/>
 *
 * key signs and binds new cookies (at least 32 characters: a key short
 * enough to guess lets anyone forge a trusted device); oldKey, the key
 * before a rotation, still verifies the cookies it signed, so rotating
 * logs no one out.  lifetime is in seconds (90 days by default).
 *
 * The account is an <Identity account="yes"> of a route that counts by
 * the response (<Success> or <Failure>), judged from the response's head
 * (status, location, header: no body text), since the cookie is added
 * to the application's headers when the attempt succeeded; at most one
 * per route.  Checked against the whole file in conf_devices_check().
 */
#include "conf_internal.h"

#include <stddef.h>
#include <string.h>

#define OFF(field)    offsetof(suspect_conf_t, field)
#define KEY_MIN       32
#define LIFETIME_MAX  (400u * 86400u) /* browsers cap Max-Age at 400 days */
#define LIFETIME_DFLT (90u * 86400u)

static const conf_num_t lifetime_range = {60, LIFETIME_MAX, CONF_PLAIN,
                                          CONF_UNSIGNED};

static const conf_attr_t device_attrs[] = {
    {"key", conf_set_text, OFF(device_key), &conf_secret_text, CONF_REQUIRED},
    {"oldKey", conf_set_text, OFF(device_old_key), &conf_secret_text, 0},
    {"name", conf_set_text, OFF(device_name), &conf_cookie_name_text, 0},
    {"lifetime", conf_set_num, OFF(device_lifetime_s), &lifetime_range, 0},
    {NULL, NULL, 0, NULL, 0}};

static suspect_rc_t device_end(conf_build_t *b, void *obj, uint32_t seen,
                               int line)
{
    suspect_conf_t *c = obj;

    (void)seen;
    if (strlen(c->device_key) < KEY_MIN ||
        (c->device_old_key != NULL && strlen(c->device_old_key) < KEY_MIN)) {
        return conf_fail(b, line,
                         "DeviceCookie: key and oldKey must be at least %d "
                         "characters (a short key lets anyone forge a "
                         "trusted device)",
                         KEY_MIN);
    }
    if (c->device_name == NULL) {
        c->device_name = "suspect_device";
    }
    if (c->device_lifetime_s == 0) {
        c->device_lifetime_s = LIFETIME_DFLT;
    }
    return SUSPECT_OK;
}

const conf_elem_t conf_device_elem = {
    "DeviceCookie", device_attrs,     NULL,       NULL,
    device_end,     OFF(device_line), CONF_SINGLE};

/* Why route r cannot bind a device cookie, or NULL. */
static const char *route_unfit(const suspect_conf_route_t *r)
{
    if (r->count == SUSPECT_COUNT_ALL) {
        return "needs <Success> or <Failure>: the cookie is given when an "
               "attempt succeeded";
    }
    for (size_t i = 0; i < r->noutcomes; i++) {
        if (r->outcomes[i].body != NULL) {
            return "needs <Success>/<Failure> told by status, location or "
                   "header, not body: the cookie goes into the response's "
                   "headers";
        }
    }
    return NULL;
}

suspect_rc_t conf_devices_check(conf_build_t *b)
{
    const suspect_conf_t *c = b->conf;
    bool any = false;

    for (size_t i = 0; i < c->nroutes; i++) {
        const suspect_conf_route_t *r = &c->routes[i];
        size_t accounts = 0;
        const char *why;

        for (size_t k = 0; k < r->nidentities; k++) {
            accounts += r->identities[k].account;
        }
        if (accounts == 0) {
            continue;
        }
        any = true;
        why = accounts > 1 ? "has more than one account=\"yes\" identity"
              : c->device_key == NULL
                  ? "has an account=\"yes\" identity but there is no "
                    "<DeviceCookie>"
                  : route_unfit(r);
        if (why != NULL) {
            return conf_fail(b, r->line, "Route: %s", why);
        }
    }
    if (c->device_key != NULL && !any) {
        return conf_warn(b, c->device_line,
                         "DeviceCookie: no <Identity account=\"yes\">: no "
                         "cookie is given");
    }
    return SUSPECT_OK;
}
