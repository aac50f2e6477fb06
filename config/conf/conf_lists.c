/*
 * conf_lists.c - <Allow> and <Deny>, for every request (children of
 * <Suspect>) or for one route (children of <Route>): client address blocks
 * (ip=), identity values (identity="Type=value ...") and a file of their
 * own (file=, one entry per line, '#' comments), which is read with the
 * snapshot so that a bad or missing file fails the load (a reload keeps
 * the running configuration) and the snapshot records what it read for
 * suspect_conf_lists_changed().
 *
 * Entries are not parsed here: the middleware compiles them (its address
 * parser), naming this element's line or the file's own line on an error.
 */
#include "conf_internal.h"
#include "file_id.h"
#include "readfile.h"
#include "xmlsafe.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define LOFF(field) offsetof(suspect_conf_list_t, field)
#define TEXT_MAX    SUSPECT_CONF_MAX_LIST_TEXT

static const conf_text_t ip_text = {
    TEXT_MAX,
    "0123456789abcdefABCDEF:./, \t\r\n",
    1,
    0,
    NULL,
    NULL,
    "must be address blocks such as \"10.0.0.0/8 2001:db8::/32\""};
static const conf_text_t identity_text = {
    TEXT_MAX,
    NULL,
    1,
    0,
    NULL,
    "=",
    "must be Type=value entries separated by spaces"};
static const conf_num_t deny_status = {400, 599, CONF_PLAIN, CONF_INT};

enum { LS_IP, LS_IDENTITY, LS_FILE, LS_STATUS };

static const conf_attr_t allow_attrs[] = {
    [LS_IP] = {"ip", conf_set_text, LOFF(ip), &ip_text, 0},
    [LS_IDENTITY] = {"identity", conf_set_text, LOFF(identity), &identity_text,
                     0},
    [LS_FILE] = {"file", conf_set_file, LOFF(file), NULL, 0},
    {NULL, NULL, 0, NULL, 0}};

static const conf_attr_t deny_attrs[] = {
    [LS_IP] = {"ip", conf_set_text, LOFF(ip), &ip_text, 0},
    [LS_IDENTITY] = {"identity", conf_set_text, LOFF(identity), &identity_text,
                     0},
    [LS_FILE] = {"file", conf_set_file, LOFF(file), NULL, 0},
    [LS_STATUS] = {"status", conf_set_num, LOFF(status), &deny_status, 0},
    {NULL, NULL, 0, NULL, 0}};

/* A new list, hung on the parent: the route being read, or the root. */
static suspect_rc_t list_begin(conf_build_t *b, int line, void **obj, bool deny)
{
    suspect_conf_list_t *l = conf_alloc(b, sizeof(*l));
    const suspect_conf_list_t **place;

    if (l == NULL) {
        return conf_nomem(b, line);
    }
    if (*obj == (void *)b->conf) {
        place = deny ? &b->conf->deny : &b->conf->allow;
    } else {
        suspect_conf_route_t *r = *obj;
        place = deny ? &r->deny : &r->allow;
    }
    if (*place != NULL) {
        return conf_fail(b, line, "<%s> given twice here (line %d)",
                         deny ? "Deny" : "Allow", (*place)->line);
    }
    *place = l;
    *obj = l;
    return SUSPECT_OK;
}

static suspect_rc_t allow_begin(conf_build_t *b, int line, size_t nchildren,
                                void **obj)
{
    (void)nchildren;
    return list_begin(b, line, obj, false);
}

static suspect_rc_t deny_begin(conf_build_t *b, int line, size_t nchildren,
                               void **obj)
{
    (void)nchildren;
    return list_begin(b, line, obj, true);
}

/* At least one source; the file read now, whole, within the cap. */
static suspect_rc_t list_end(conf_build_t *b, void *obj, uint32_t seen,
                             int line)
{
    suspect_conf_list_t *l = obj;
    struct stat st;
    suspect_err_t why;
    char *buf = NULL, *copy;
    size_t len = 0;
    suspect_rc_t rc;
    file_id_t id;

    if ((seen & ((1u << LS_IP) | (1u << LS_IDENTITY) | (1u << LS_FILE))) == 0) {
        return conf_fail(b, line,
                         "an <Allow> or <Deny> needs ip, identity "
                         "or file");
    }
    if (l->file == NULL) {
        return SUSPECT_OK;
    }
    suspect_err_clear(&why);
    rc = config_read_file(l->file, SUSPECT_CONF_MAX_LIST_BYTES, 0, &st, &buf,
                          &len, &why);
    if (rc == SUSPECT_E_NOMEM) {
        return conf_nomem(b, line);
    }
    if (rc != SUSPECT_OK) {
        return conf_fail(b, line, "list file '%s': %s", l->file, why.text);
    }
    copy = conf_strndup(b, buf, len);
    free(buf);
    if (copy == NULL) {
        return conf_nomem(b, line);
    }
    id = file_id_of(&st);
    l->file_text = copy;
    l->file_len = len;
    l->file_id[0] = id.dev;
    l->file_id[1] = id.ino;
    l->file_id[2] = id.size;
    l->file_id[3] = (uint64_t)id.mtime_ns;
    l->file_id[4] = (uint64_t)id.ctime_ns;
    return SUSPECT_OK;
}

const conf_elem_t conf_allow_elem = {"Allow",  allow_attrs, NULL, allow_begin,
                                     list_end, LOFF(line),  0};
const conf_elem_t conf_deny_elem = {"Deny",   deny_attrs, NULL, deny_begin,
                                    list_end, LOFF(line), 0};

/* Mixes one list file's state now into *sig; true when it differs from
 * what l read. */
static bool list_changed(const suspect_conf_list_t *l, uint64_t *sig)
{
    struct stat st;
    file_id_t id;
    uint64_t now[5];
    bool changed;

    if (l == NULL || l->file == NULL) {
        return false;
    }
    if (stat(l->file, &st) != 0) {
        memset(&st, 0, sizeof(st));
    }
    id = file_id_of(&st);
    now[0] = id.dev;
    now[1] = id.ino;
    now[2] = id.size;
    now[3] = (uint64_t)id.mtime_ns;
    now[4] = (uint64_t)id.ctime_ns;
    changed = memcmp(now, l->file_id, sizeof(now)) != 0;
    for (size_t i = 0; i < 5; i++) {
        *sig = (*sig ^ now[i]) * 0x100000001b3ULL;
    }
    return changed;
}

bool suspect_conf_lists_changed(const suspect_conf_t *conf, uint64_t *sig)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    bool changed = false;

    if (conf != NULL) {
        changed |= list_changed(conf->allow, &h);
        changed |= list_changed(conf->deny, &h);
        for (size_t i = 0; i < conf->nroutes; i++) {
            changed |= list_changed(conf->routes[i].allow, &h);
            changed |= list_changed(conf->routes[i].deny, &h);
        }
    }
    if (sig != NULL) {
        *sig = h;
    }
    return changed;
}
