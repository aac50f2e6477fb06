/*
 * conf_challenge.c - <Challenge> and the identities it answers for: when
 * a request is refused only because of an identity marked shared (an
 * address behind which an office, a school or a carrier's customers sit),
 * a browser gets a proof-of-work page instead of the plain 429, and a
 * solved challenge earns a pass counted apart from the address
 * (docs/suspect-xml.md, "Challenges for a shared address").
 *
 *   <Challenge key="..." oldKey="..." difficulty="17" lifetime="3600"
 *              path="/.suspect/challenge" name="suspect_pass"/>
 *   <Identity type="ClientIp" from="client-ip" shared="yes"/>
 *
 * key signs the challenges and the passes (at least 32 characters: a
 * short one lets anyone forge a pass); oldKey, the key before a
 * rotation, still verifies them, so rotating sends no one back to the
 * challenge.  difficulty is the leading zero bits the page's SHA-256 must
 * find, lifetime the pass's in seconds, path where the page posts the
 * solution (suspect-fcgi answers it itself), name the pass cookie's.
 *
 * Checked against the whole file in conf_challenges_check(): a shared
 * identity reads the client address alone (the pass binds an address),
 * needs a <Challenge>, and the page and its answer need forward mode.
 */
#include "conf_internal.h"

#include <stddef.h>
#include <string.h>

#define OFF(field)    offsetof(suspect_conf_t, field)
#define KEY_MIN       32
#define LIFETIME_DFLT 3600u
/* The default: about a second on a phone (docs/BENCHMARKS.md). */
#define DIFFICULTY_DFLT 17u

static const conf_num_t lifetime_range = {60, 86400, CONF_PLAIN, CONF_UNSIGNED};
static const conf_num_t difficulty_range = {1, 30, CONF_PLAIN, CONF_UNSIGNED};

/* path="/.suspect/challenge": an absolute path, no query. */
static suspect_rc_t set_path(conf_build_t *b, const conf_site_t *at, void *obj,
                             const conf_attr_t *a, const char *v, size_t n)
{
    suspect_conf_t *c = obj;
    const char *why;
    char *p;

    (void)a;
    if (n == 0) {
        return conf_empty_value(b, at);
    }
    if (memchr(v, '?', n) != NULL || memchr(v, '#', n) != NULL) {
        return conf_bad_value(b, at, v, n, "must not contain '?' or '#'");
    }
    p = conf_norm_path(b, v, n, CONF_NORM_DIR, &why);
    if (p == NULL) {
        return why != NULL ? conf_bad_value(b, at, v, n, why)
                           : conf_nomem(b, at->line);
    }
    if (strcmp(p, "/") == 0) {
        return conf_bad_value(b, at, v, n, "must not be the site's root");
    }
    c->challenge_path = p;
    return SUSPECT_OK;
}

static const conf_attr_t challenge_attrs[] = {
    {"key", conf_set_text, OFF(challenge_key), &conf_secret_text,
     CONF_REQUIRED},
    {"oldKey", conf_set_text, OFF(challenge_old_key), &conf_secret_text, 0},
    {"difficulty", conf_set_num, OFF(challenge_difficulty), &difficulty_range,
     0},
    {"lifetime", conf_set_num, OFF(challenge_lifetime_s), &lifetime_range, 0},
    {"path", set_path, 0, NULL, 0},
    {"name", conf_set_text, OFF(challenge_name), &conf_cookie_name_text, 0},
    {NULL, NULL, 0, NULL, 0}};

static suspect_rc_t challenge_end(conf_build_t *b, void *obj, uint32_t seen,
                                  int line)
{
    suspect_conf_t *c = obj;

    (void)seen;
    if (strlen(c->challenge_key) < KEY_MIN ||
        (c->challenge_old_key != NULL &&
         strlen(c->challenge_old_key) < KEY_MIN)) {
        return conf_fail(b, line,
                         "Challenge: key and oldKey must be at least %d "
                         "characters (a short key lets anyone forge a pass)",
                         KEY_MIN);
    }
    if (c->challenge_name == NULL) {
        c->challenge_name = "suspect_pass";
    }
    if (c->challenge_path == NULL) {
        c->challenge_path = "/.suspect/challenge";
    }
    if (c->challenge_difficulty == 0) {
        c->challenge_difficulty = DIFFICULTY_DFLT;
    }
    if (c->challenge_lifetime_s == 0) {
        c->challenge_lifetime_s = LIFETIME_DFLT;
    }
    return SUSPECT_OK;
}

const conf_elem_t conf_challenge_elem = {
    "Challenge",   challenge_attrs,     NULL,       NULL,
    challenge_end, OFF(challenge_line), CONF_SINGLE};

/* Whether identity id reads the client address and nothing else. */
static bool address_only(const suspect_conf_identity_t *id)
{
    for (size_t k = 0; k < id->nsources; k++) {
        if (id->source[k].kind != SUSPECT_SRC_CLIENT_IP) {
            return false;
        }
    }
    return id->nsources > 0 && id->nparts == 1;
}

suspect_rc_t conf_challenges_check(conf_build_t *b)
{
    const suspect_conf_t *c = b->conf;
    bool any = false;

    for (size_t i = 0; i < c->nroutes; i++) {
        const suspect_conf_route_t *r = &c->routes[i];

        for (size_t k = 0; k < r->nidentities; k++) {
            const suspect_conf_identity_t *id = &r->identities[k];

            if (!id->shared) {
                continue;
            }
            any = true;
            if (!address_only(id)) {
                return conf_fail(b, id->line,
                                 "Identity: shared=\"yes\" needs "
                                 "from=\"client-ip\" alone (a pass binds an "
                                 "address)");
            }
            if (c->challenge_key == NULL) {
                return conf_fail(b, id->line,
                                 "Identity: shared=\"yes\" but there is no "
                                 "<Challenge>");
            }
        }
    }
    if (c->challenge_key == NULL) {
        return SUSPECT_OK;
    }
    if (c->mode != SUSPECT_MODE_FORWARD) {
        return conf_fail(b, c->challenge_line,
                         "Challenge: needs mode=\"forward\" (suspect-fcgi "
                         "answers the page and its solution itself)");
    }
    if (!any) {
        return conf_warn(b, c->challenge_line,
                         "Challenge: no <Identity shared=\"yes\">: no "
                         "challenge is given");
    }
    return SUSPECT_OK;
}
