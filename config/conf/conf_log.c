/*
 * conf_log.c - <Log>: the decision log (which decisions, where) and the
 * key of the identities' hashes in it, and whole request targets or
 * paths only.  The daemon's own log has no element: it goes to stderr.
 */
#include "conf_internal.h"

#include <stddef.h>
#include <string.h>

#define OFF(field) offsetof(suspect_conf_t, field)

static const conf_enum_item_t decisions_items[] = {
    {"off", SUSPECT_DECISIONS_OFF},
    {"denials", SUSPECT_DECISIONS_DENIALS},
    {"all", SUSPECT_DECISIONS_ALL},
    {NULL, 0}};
static const conf_enum_t decisions_enum = {decisions_items, 0};

static const conf_enum_item_t uri_items[] = {
    {"path", 0}, {"full", 1}, {NULL, 0}};
static const conf_enum_t uri_enum = {uri_items, 1};

enum { LOG_DECISIONS, LOG_PATH, LOG_KEY, LOG_URI };

static const conf_attr_t log_attrs[] = {
    [LOG_DECISIONS] = {"decisions", conf_set_enum, OFF(decisions),
                       &decisions_enum, 0},
    [LOG_PATH] = {"path", conf_set_file, OFF(decision_path), NULL, 0},
    [LOG_KEY] = {"identityKey", conf_set_text, OFF(identity_key),
                 &conf_secret_text, 0},
    [LOG_URI] = {"requestUri", conf_set_enum, OFF(full_uri), &uri_enum, 0},
    {NULL, NULL, 0, NULL, 0}};

/* A key short enough to guess would let anyone with the log try values
 * until a hash matches: 16 characters at least.  No key: say what that
 * costs. */
static suspect_rc_t log_end(conf_build_t *b, void *obj, uint32_t seen, int line)
{
    const suspect_conf_t *c = obj;

    (void)seen;
    if (c->identity_key != NULL && strlen(c->identity_key) < 16) {
        return conf_fail(b, line,
                         "Log: identityKey must be at least 16 characters "
                         "(a short key lets a reader of the log find "
                         "identities by trying values)");
    }
    if (c->decisions != SUSPECT_DECISIONS_OFF && c->identity_key == NULL) {
        return conf_warn(b, line,
                         "Log: no identityKey: identities are hashed with a "
                         "key drawn at start, so their hashes differ across "
                         "restarts and servers");
    }
    return SUSPECT_OK;
}

const conf_elem_t conf_log_elem = {"Log",   log_attrs,     NULL,       NULL,
                                   log_end, OFF(log_line), CONF_SINGLE};
