/*
 * conf_actions.c - suspect.xml and its limits file, checked together.
 *
 * A route names an action by name; the limits file gives the action its
 * numbers.  A route whose action the limits file lacks (a one-letter typo
 * on either side, a line deleted in a live edit) would count nothing, so
 * a pair of files with such a route is refused: suspect-fcgi and
 * suspect-cgi do not start on it, and a reload of either file keeps the
 * running pair.  The message names the route's line and, when one is near
 * (near.h), the action that was probably meant.
 *
 * An <Action> element the limits file lacks is refused alike.
 *
 * A route's cost= takes that many tokens (or hits) of its action per
 * request: only an action counted by a TokenBucket or a SlidingCounter
 * can take more than one, and none can take more than it holds (its
 * capacity: Burst, else LimitCount).  A pair that breaks either is
 * refused the same way, so a live edit of the limits file that turns a
 * bucket back into a sliding log keeps the running pair.
 *
 * Cost: one lookup per route, and a distance per action of the limits file
 * only for a route that is missing, which is refused anyway.
 */
#include "conf_internal.h"
#include "limits/suspect_limits.h"
#include "near.h"

#include <stdio.h>
#include <string.h>

/* The last component of path (for messages). */
static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');

    return slash != NULL ? slash + 1 : path;
}

/* The action of lim nearest to name, or NULL. */
static const char *near_action(const suspect_limits_t *lim, const char *name)
{
    const char *best = NULL;
    size_t best_d = CONFIG_NEAR_MAX + 1;

    for (size_t i = 0; i < suspect_limits_count(lim); i++) {
        const char *a = suspect_limits_at(lim, i)->action;

        if (config_near(name, &a, 1) != NULL) {
            size_t d = config_near_distance(name, a);

            if (d < best_d) {
                best = a;
                best_d = d;
            }
        }
    }
    return best;
}

/* The text of the message for route r (without file:line). */
static void missing_text(const suspect_conf_t *conf,
                         const suspect_conf_route_t *r,
                         const suspect_limits_t *lim, char *buf, size_t size)
{
    const char *near = near_action(lim, r->action);

    snprintf(buf, size, "route action '%s' is not in %s%s%s%s", r->action,
             conf->limits_path != NULL ? base_name(conf->limits_path)
                                       : "the limits file",
             near != NULL ? " (did you mean '" : "", near != NULL ? near : "",
             near != NULL ? "'?)" : "");
}

/* The text of the message when route r's cost does not fit its action's
 * rule (without file:line); false when it fits. */
static bool cost_text(const suspect_conf_t *conf, const suspect_conf_route_t *r,
                      const suspect_rule_t *rule, char *buf, size_t size)
{
    const char *file = conf->limits_path != NULL ? base_name(conf->limits_path)
                                                 : "the limits file";
    suspect_rule_t with = *rule;

    with.cost = r->cost;
    if (r->cost <= 1) {
        return false;
    }
    if (rule->algorithm != SUSPECT_ALGO_BUCKET &&
        rule->algorithm != SUSPECT_ALGO_COUNTER) {
        snprintf(buf, size,
                 "route cost %u: action '%s' is a %s in %s, which counts one "
                 "hit a request (give it Algorithm=\"TokenBucket\" or "
                 "\"SlidingCounter\")",
                 r->cost, r->action,
                 suspect_algorithm_name(rule->algorithm) != NULL
                     ? suspect_algorithm_name(rule->algorithm)
                     : "?",
                 file);
        return true;
    }
    if (suspect_rule_cost(&with) > suspect_rule_capacity(rule)) {
        snprintf(buf, size,
                 "route cost %u: action '%s' holds only %u in %s (its %s)",
                 r->cost, r->action, suspect_rule_capacity(rule), file,
                 rule->burst != 0 ? "Burst" : "LimitCount");
        return true;
    }
    return false;
}

size_t suspect_conf_missing_actions(const suspect_conf_t *conf,
                                    const suspect_limits_t *lim,
                                    void (*fn)(void *arg, const char *msg),
                                    void *arg)
{
    size_t n = 0;

    for (size_t i = 0; conf != NULL && i < conf->nroutes; i++) {
        const suspect_conf_route_t *r = &conf->routes[i];
        char text[SUSPECT_ACTION_MAX * 2 + 256];
        char msg[sizeof(text) + SUSPECT_ERR_FILE_MAX + 64];

        const suspect_rule_t *rule = suspect_limits_find(lim, r->action);

        if (r->refuse ||
            (rule != NULL && !cost_text(conf, r, rule, text, sizeof(text)))) {
            continue;
        }
        n++;
        if (fn != NULL) {
            if (rule == NULL) {
                missing_text(conf, r, lim, text, sizeof(text));
            }
            snprintf(msg, sizeof(msg), "%s:%d: %s",
                     conf->file != NULL ? conf->file : "suspect.xml", r->line,
                     text);
            fn(arg, msg);
        }
    }
    for (size_t i = 0; conf != NULL && i < conf->nactions; i++) {
        const suspect_conf_action_t *a = &conf->actions[i];
        char msg[SUSPECT_ACTION_MAX * 2 + SUSPECT_ERR_FILE_MAX + 64];

        if (suspect_limits_find(lim, a->name) != NULL) {
            continue;
        }
        n++;
        if (fn != NULL) {
            snprintf(msg, sizeof(msg), "%s:%d: <Action> '%s' is not in %s",
                     conf->file != NULL ? conf->file : "suspect.xml", a->line,
                     a->name,
                     conf->limits_path != NULL ? base_name(conf->limits_path)
                                               : "the limits file");
            fn(arg, msg);
        }
    }
    return n;
}

suspect_rc_t suspect_conf_check_actions(const suspect_conf_t *conf,
                                        const suspect_limits_t *lim,
                                        suspect_err_t *err)
{
    for (size_t i = 0; conf != NULL && i < conf->nroutes; i++) {
        const suspect_conf_route_t *r = &conf->routes[i];
        const suspect_rule_t *rule = suspect_limits_find(lim, r->action);
        char text[SUSPECT_ACTION_MAX * 2 + 256];

        if (r->refuse) {
            continue;
        }
        if (rule == NULL) {
            missing_text(conf, r, lim, text, sizeof(text));
        }
        if (rule == NULL || cost_text(conf, r, rule, text, sizeof(text))) {
            return suspect_err_set(err, SUSPECT_E_CONFIG, conf->file, r->line,
                                   "%s", text);
        }
    }
    for (size_t i = 0; conf != NULL && i < conf->nactions; i++) {
        const suspect_conf_action_t *a = &conf->actions[i];

        if (suspect_limits_find(lim, a->name) == NULL) {
            return suspect_err_set(err, SUSPECT_E_CONFIG, conf->file, a->line,
                                   "<Action> '%s' is not in %s", a->name,
                                   conf->limits_path != NULL
                                       ? base_name(conf->limits_path)
                                       : "the limits file");
        }
    }
    return SUSPECT_OK;
}
