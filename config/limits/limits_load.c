/*
 * limits_load.c - a limits file, from a file or from memory, into a new
 * snapshot (limits.c builds it, limits_xml.c walks the document).
 *
 * Reading the file: open (non-blocking, so a FIFO cannot hang us), fstat,
 * refuse anything that is not a regular file or is over the size cap before
 * reading a byte, then read at most cap + 1 bytes, so a file that grows
 * while we read is still caught (config_read_file()).
 */
#include "limits_internal.h"
#include "readfile.h"
#include "xmlsafe.h"

#include <stdlib.h>

/* The size cap of opts. */
static size_t opt_max_bytes(const suspect_limits_opts_t *opts)
{
    return opts != NULL && opts->max_bytes != 0 ? opts->max_bytes
                                                : SUSPECT_LIMITS_MAX_BYTES;
}

/*
 * Parses a limits document from memory.  On success *out is a new snapshot
 * with one reference for the caller; on failure *out is untouched and err
 * names the file (name, or "<memory>") and line.
 */
suspect_rc_t suspect_limits_parse(const char *buf, size_t len, const char *name,
                                  const suspect_limits_opts_t *opts,
                                  suspect_limits_t **out, suspect_err_t *err)
{
    size_t max_bytes = opt_max_bytes(opts);
    size_t max_rules = opts != NULL && opts->max_rules != 0
                           ? opts->max_rules
                           : SUSPECT_LIMITS_MAX_RULES;
    suspect_limits_t *lim;
    suspect_rc_t rc;

    if (name == NULL) {
        name = "<memory>";
    }
    if (out == NULL || (buf == NULL && len > 0)) {
        return suspect_err_set(err, SUSPECT_E_INVAL, name, 0,
                               "suspect_limits_parse: bad arguments");
    }
    if (len > max_bytes) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, name, 0,
                               "file is too large (%zu bytes, at most %zu)",
                               len, max_bytes);
    }
    if (xmlsafe_blank(buf, len)) {
        return suspect_err_set(err, SUSPECT_E_CONFIG, name, 0, "file is empty");
    }
    lim = limits_new(name);
    if (lim == NULL) {
        return suspect_err_set(err, SUSPECT_E_NOMEM, name, 0, "out of memory");
    }
    rc = limits_xml_parse(buf, len, max_rules, lim, err);
    if (rc == SUSPECT_OK && limits_finish(lim) != SUSPECT_OK) {
        rc = suspect_err_set(err, SUSPECT_E_NOMEM, name, 0, "out of memory");
    }
    if (rc != SUSPECT_OK) {
        limits_free(lim);
        return rc;
    }
    *out = lim;
    return SUSPECT_OK;
}

/* suspect_limits_load(), also returning the fstat() of what was read. */
suspect_rc_t limits_load_stat(const char *path,
                              const suspect_limits_opts_t *opts,
                              suspect_limits_t **out, struct stat *st,
                              suspect_err_t *err)
{
    size_t max = opt_max_bytes(opts), len = 0;
    char *buf = NULL;
    suspect_rc_t rc;

    if (path == NULL || out == NULL) {
        return suspect_err_set(err, SUSPECT_E_INVAL, NULL, 0,
                               "suspect_limits_load: bad arguments");
    }
    rc = config_read_file(path, max, 0, st, &buf, &len, err);
    if (rc != SUSPECT_OK) {
        return rc;
    }
    rc = suspect_limits_parse(buf, len, path, opts, out, err);
    free(buf);
    return rc;
}

/*
 * Reads and parses the limits file at path; see suspect_limits_parse() for
 * ownership.  Fails without reading when path is not a regular file or is
 * over the size cap.
 */
suspect_rc_t suspect_limits_load(const char *path,
                                 const suspect_limits_opts_t *opts,
                                 suspect_limits_t **out, suspect_err_t *err)
{
    return limits_load_stat(path, opts, out, NULL, err);
}
