/*
 * compiled_load.c - a compiled configuration from the XML (compiled.h):
 * both loaders, and the identity of each file exactly as it was read.
 *
 * suspect.xml and the limits file are read through a descriptor whose
 * fstat() is the identity recorded, so what the snapshot says it came
 * from is what was parsed.  The template is read by the suspect.xml
 * loader; its identity is a stat() taken afterwards, which can only be
 * newer than what was read: then the ctime is recent and compiled_racy()
 * keeps such a result from being saved.
 */
#include "compiled.h"
#include "conf/conf_internal.h"
#include "readfile.h"
#include "xmlsafe.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

/* The limits file at path into *out, and the fstat() of what was read. */
static suspect_rc_t limits_load(const char *path, suspect_limits_t **out,
                                struct stat *st, suspect_err_t *err)
{
    char *buf = NULL;
    size_t len = 0;
    suspect_rc_t rc;

    if (path == NULL) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "suspect_limits_load: bad arguments");
    }
    rc = config_read_file(path, SUSPECT_LIMITS_MAX_BYTES, 0, st, &buf, &len,
                          err);
    if (rc == SUSPECT_OK) {
        rc = suspect_limits_parse(buf, len, path, NULL, out, err);
        free(buf);
    }
    return rc;
}

/* The template's identity into id (none: left zero). */
static suspect_rc_t template_id(const suspect_conf_t *c, file_id_t *id,
                                suspect_err_t *err)
{
    struct stat st;

    if (c->template_path == NULL) {
        return SUSPECT_OK;
    }
    if (stat(c->template_path, &st) != 0) {
        return suspect_err_sys(err, SUSPECT_E_IO, c->template_path, "stat");
    }
    *id = file_id_of(&st);
    return SUSPECT_OK;
}

/* Both loaders, with the identity of each file as read. */
suspect_rc_t compiled_load(const char *conf, compiled_t *out,
                           suspect_err_t *err)
{
    char abs[PATH_MAX];
    struct stat cst, lst;
    suspect_rc_t rc;

    memset(out, 0, sizeof(*out));
    if (compiled_abs_path(conf, abs, sizeof(abs)) != 0) {
        return suspect_err_sys(err, SUSPECT_E_IO, conf,
                               "cannot make the path absolute");
    }
    out->conf_path = suspect_strdup(abs);
    if (out->conf_path == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, conf, 0, "out of memory");
    }
    rc = conf_load_stat(conf, &out->conf, &cst, err);
    if (rc == SUSPECT_OK) {
        out->id[COMPILED_SRC_CONF] = file_id_of(&cst);
        rc = limits_load(out->conf->limits_path, &out->limits, &lst, err);
    }
    if (rc == SUSPECT_OK) {
        rc = suspect_conf_check_actions(out->conf, out->limits, err);
    }
    if (rc == SUSPECT_OK) {
        out->id[COMPILED_SRC_LIMITS] = file_id_of(&lst);
        rc = template_id(out->conf, &out->id[COMPILED_SRC_TEMPLATE], err);
    }
    if (rc != SUSPECT_OK) {
        compiled_clear(out);
    }
    return rc;
}
