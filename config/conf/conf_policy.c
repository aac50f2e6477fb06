/*
 * conf_policy.c - how a route's decisions are applied: shadow (decided and
 * counted as enforced, never refused) and the fail mode when the store is
 * unreachable, set on a <Route> or for every route of an action with
 * <Action name="..."/>.
 *
 * Both are live (a reload changes them): an operator rolls a new limit
 * out with shadow="yes", watches the would-deny lines, then enforces it by
 * editing that one attribute.  A route's own attribute wins over its
 * action's; conf_actions_apply() writes the action's settings into the
 * routes once the file is read, so the middleware (and suspect-cgi's
 * compiled configuration) sees each route's effective values only.
 */
#include "conf_internal.h"

#include <stddef.h>
#include <string.h>

#define AOFF(field) offsetof(suspect_conf_action_t, field)

static const conf_enum_item_t shadow_items[] = {{"yes", SUSPECT_SHADOW_ON},
                                                {"true", SUSPECT_SHADOW_ON},
                                                {"no", SUSPECT_SHADOW_OFF},
                                                {"false", SUSPECT_SHADOW_OFF},
                                                {NULL, 0}};
const conf_enum_t conf_shadow_enum = {shadow_items, 0};

static const conf_enum_item_t fail_items[] = {
    {"local", SUSPECT_RULE_FAIL_LOCAL},
    {"open", SUSPECT_RULE_FAIL_OPEN},
    {"closed", SUSPECT_RULE_FAIL_CLOSED},
    {NULL, 0}};
const conf_enum_t conf_rule_fail_enum = {fail_items, 0};

static const conf_attr_t action_attrs[] = {
    {"name", conf_set_name, AOFF(name), NULL, CONF_REQUIRED},
    {"shadow", conf_set_enum, AOFF(shadow), &conf_shadow_enum, 0},
    {"failMode", conf_set_enum, AOFF(fail_mode), &conf_rule_fail_enum, 0},
    {NULL, NULL, 0, NULL, 0}};

/* The next action entry: the array is sized on the first one for the
 * root's child elements, an upper bound. */
static suspect_rc_t action_begin(conf_build_t *b, int line, size_t nchildren,
                                 void **obj)
{
    (void)nchildren;
    if (b->actions == NULL) {
        b->actions_cap = SUSPECT_CONF_MAX_ROUTES;
        b->actions = conf_alloc(b, b->actions_cap * sizeof(*b->actions));
        if (b->actions == NULL) {
            return conf_nomem(b, line);
        }
        b->conf->actions = b->actions;
    }
    if (b->conf->nactions == b->actions_cap) {
        return conf_fail(b, line, "more than %zu <Action> elements",
                         b->actions_cap);
    }
    *obj = &b->actions[b->conf->nactions++];
    return SUSPECT_OK;
}

/* An <Action> that sets nothing is a mistake, not a no-op. */
static suspect_rc_t action_end(conf_build_t *b, void *obj, uint32_t seen,
                               int line)
{
    (void)obj;
    if ((seen & ~1u) == 0) {
        return conf_fail(b, line, "Action: shadow or failMode is required");
    }
    return SUSPECT_OK;
}

const conf_elem_t conf_action_elem = {
    "Action", action_attrs, NULL, action_begin, action_end, AOFF(line), 0};

suspect_rc_t conf_actions_apply(conf_build_t *b)
{
    const suspect_conf_t *c = b->conf;

    for (size_t i = 0; i < c->nactions; i++) {
        const suspect_conf_action_t *a = &c->actions[i];

        for (size_t j = 0; j < i; j++) {
            if (strcmp(c->actions[j].name, a->name) == 0) {
                return conf_fail(b, a->line, "Action: '%s' duplicates line %d",
                                 a->name, c->actions[j].line);
            }
        }
        for (size_t r = 0; r < c->nroutes; r++) {
            suspect_conf_route_t *route = &b->routes[r];

            if (strcmp(route->action, a->name) != 0) {
                continue;
            }
            if (route->shadow == SUSPECT_SHADOW_UNSET) {
                route->shadow = a->shadow;
            }
            if (route->fail_mode == SUSPECT_RULE_FAIL_STORE) {
                route->fail_mode = a->fail_mode;
            }
        }
    }
    return SUSPECT_OK;
}
