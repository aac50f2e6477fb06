/*
 * setup_load.c - loading what a program stands on (setup.h): suspect.xml,
 * the guard compiled from it, its limits file, in that order and as the
 * daemon loads them, so that --check and suspectctl judge exactly what
 * suspect-fcgi would run.
 */
#include "setup.h"

#include "request/normalize.h"
#include "request/xmlrpc.h"

/* Links the normaliser's html-entities step (libxml2) and collate step
 * (ICU) wherever suspect.xml is loaded: see request/normalize.h. */
__attribute__((used)) static suspect_rc_t (*const html_step)(
    const char *, size_t, char *, size_t *) = mw_norm_html_decode;
__attribute__((used)) static suspect_rc_t (*const collate_step)(
    const char *, size_t, void **) = mw_norm_collate_open;

/* Links the XML-RPC reader (libxml2) wherever suspect.xml is loaded: see
 * request/xmlrpc.h. */
__attribute__((used)) static suspect_rc_t (*const xmlrpc_reader)(
    const char *, size_t, size_t, mw_xmlrpc_t **,
    const char **) = mw_xmlrpc_read;

suspect_rc_t mw_setup_load(mw_setup_t *s, const char *conf_path,
                           suspect_err_t *err)
{
    suspect_rc_t rc = suspect_conf_load(conf_path, &s->conf, err);

    if (rc == SUSPECT_OK) {
        rc = mw_guard_new(s->conf, &s->guard, err);
    }
    if (rc == SUSPECT_OK) {
        rc = suspect_limits_load(s->conf->limits_path, NULL, &s->limits, err);
    }
    return rc;
}
