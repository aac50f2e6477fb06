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

size_t suspect_conf_missing_actions(const suspect_conf_t *conf,
                                    const suspect_limits_t *lim,
                                    void (*fn)(void *arg, const char *msg),
                                    void *arg)
{
    size_t n = 0;

    for (size_t i = 0; conf != NULL && i < conf->nroutes; i++) {
        const suspect_conf_route_t *r = &conf->routes[i];
        char text[SUSPECT_ACTION_MAX * 2 + 128];
        char msg[sizeof(text) + SUSPECT_ERR_FILE_MAX + 16];

        if (suspect_limits_find(lim, r->action) != NULL) {
            continue;
        }
        n++;
        if (fn != NULL) {
            missing_text(conf, r, lim, text, sizeof(text));
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
        char text[SUSPECT_ACTION_MAX * 2 + 128];

        if (suspect_limits_find(lim, r->action) == NULL) {
            missing_text(conf, r, lim, text, sizeof(text));
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
