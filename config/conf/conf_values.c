/*
 * conf_values.c - the setters of suspect.xml's attribute tables.
 *
 * One setter per kind of value (a number in some unit, a name from a list,
 * a path, an endpoint, a bounded text), never one per attribute: the table
 * row (conf_attr_t) says which field to fill (offset) and the setter's
 * argument (a range, a list of names).  Every setter receives the value
 * already trimmed of XML white space, as bytes that are not NUL-terminated,
 * and reports "Element: attribute 'value' what is wrong" at the element's
 * line.  Values are quoted through config_show() (show.h), so a message never
 * carries control bytes or an unbounded string.
 *
 * Numbers are parsed digit by digit with overflow checks: no sign, no base
 * prefix, no exponent, no inner space.  Durations are seconds with at most
 * three decimals ("0.5"), stored as whole milliseconds.
 *
 * One value is a file's content: <Response template>'s page, read into
 * the arena when the element ends (conf_read_template()).
 */
#include "conf_internal.h"
#include "show.h"
#include "readfile.h"
#include "xmlsafe.h"

#include <ctype.h>
#include <grp.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define UNIX_PATH_MAX 107 /* sun_path less its NUL */

/* The field at a->offset of obj. */
static void *field(void *obj, const conf_attr_t *a)
{
    return (char *)obj + a->offset;
}

/* Fails with "Elem: attr 'value' what", or "Elem: attr what (got
 * 'value')" for a rule ("must ..."). */
suspect_rc_t conf_bad_value(conf_build_t *b, const conf_site_t *at,
                            const char *v, size_t n, const char *what)
{
    char shown[CONFIG_SHOW_SIZE];

    config_show(shown, sizeof(shown), v, n);
    /* "path must start with '/' (got 'x')", "workers 'x' is not ..." */
    if (strncmp(what, "must ", 5) == 0) {
        return conf_fail(b, at->line, "%s: %s %s (got '%s')", at->elem,
                         at->attr, what, shown);
    }
    return conf_fail(b, at->line, "%s: %s '%s' %s", at->elem, at->attr, shown,
                     what);
}

/* Fails with "Elem: attr is empty". */
suspect_rc_t conf_empty_value(conf_build_t *b, const conf_site_t *at)
{
    return conf_fail(b, at->line, "%s: %s is empty", at->elem, at->attr);
}

/* Digits of base (8 or 10) into *out; 0, -1 (not digits), -2 (overflow). */
static int parse_digits(const char *p, size_t n, unsigned base, uint64_t *out)
{
    uint64_t v = 0;

    if (n == 0) {
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned d = (unsigned)(unsigned char)p[i] - '0';
        if (d >= base) {
            return -1;
        }
        if (v > (UINT64_MAX - d) / base) {
            for (size_t j = i + 1; j < n; j++) {
                if ((unsigned)(unsigned char)p[j] - '0' >= base) {
                    return -1;
                }
            }
            return -2;
        }
        v = v * base + d;
    }
    *out = v;
    return 0;
}

/* "1.25" seconds into 1250 ms; *why says what is wrong on -1. */
static int parse_seconds(const char *p, size_t n, uint64_t *ms,
                         const char **why)
{
    const char *dot = memchr(p, '.', n);
    size_t ilen = dot != NULL ? (size_t)(dot - p) : n;
    size_t flen = dot != NULL ? n - ilen - 1 : 0;
    uint64_t whole, frac = 0;
    int rc = parse_digits(p, ilen, 10, &whole);

    *why = "is not a number of seconds";
    if (rc == 0 && dot != NULL && parse_digits(dot + 1, flen, 10, &frac) != 0) {
        return -1;
    }
    if (rc != 0) {
        return rc;
    }
    if (flen > 3) {
        *why = "has more than 3 decimals (the unit is the millisecond)";
        return -1;
    }
    for (size_t i = flen; i < 3; i++) {
        frac *= 10;
    }
    if (whole > (UINT64_MAX - 999) / 1000) {
        return -2;
    }
    *ms = whole * 1000 + frac;
    return 0;
}

/* "64K" into 65536: digits, then an optional K, M or G (powers of 1024). */
static int parse_bytes(const char *p, size_t n, uint64_t *out)
{
    unsigned shift = 0;
    uint64_t v;
    int rc;

    if (n > 1) {
        switch (p[n - 1]) {
        case 'k':
        case 'K':
            shift = 10;
            break;
        case 'm':
        case 'M':
            shift = 20;
            break;
        case 'g':
        case 'G':
            shift = 30;
            break;
        default:
            break;
        }
    }
    rc = parse_digits(p, shift > 0 ? n - 1 : n, 10, &v);
    if (rc != 0) {
        return rc;
    }
    if (v > (UINT64_MAX >> shift)) {
        return -2;
    }
    *out = v << shift;
    return 0;
}

/* A range bound as the file writes it: ms as seconds, modes in octal,
 * whole KiB, MiB, GiB with their suffix. */
static const char *show_bound(char *buf, size_t size, uint64_t v,
                              conf_unit_t unit)
{
    static const char units[] = "GMK";

    if (unit == CONF_OCTAL) {
        snprintf(buf, size, "0%llo", (unsigned long long)v);
        return buf;
    }
    for (int i = 0; unit == CONF_BYTES && v > 0 && i < 3; i++) {
        unsigned shift = 30 - 10 * (unsigned)i;
        if (v % (1ull << shift) == 0) {
            snprintf(buf, size, "%llu%c", (unsigned long long)(v >> shift),
                     units[i]);
            return buf;
        }
    }
    if (unit == CONF_SECONDS && v % 1000 != 0) {
        int len =
            snprintf(buf, size, "%llu.%03llu", (unsigned long long)(v / 1000),
                     (unsigned long long)(v % 1000));
        while (len > 0 && buf[len - 1] == '0') {
            buf[--len] = '\0';
        }
    } else {
        snprintf(buf, size, "%llu",
                 (unsigned long long)(unit == CONF_SECONDS ? v / 1000 : v));
    }
    return buf;
}

/* Parses the value in the unit of r into *out; messages on failure. */
static suspect_rc_t parse_num(conf_build_t *b, const conf_site_t *at,
                              const conf_num_t *r, const char *v, size_t n,
                              uint64_t *out)
{
    const char *why = "is not a number";
    int rc;

    switch (r->unit) {
    case CONF_SECONDS:
        rc = parse_seconds(v, n, out, &why);
        break;
    case CONF_BYTES:
        rc = parse_bytes(v, n, out);
        why = "is not a size (bytes, or a number and K, M or G)";
        break;
    case CONF_OCTAL:
        rc = parse_digits(v, n, 8, out);
        why = "is not an octal mode";
        break;
    default:
        rc = parse_digits(v, n, 10, out);
        break;
    }
    if (rc == -1) {
        return n == 0 ? conf_empty_value(b, at)
                      : conf_bad_value(b, at, v, n, why);
    }
    if (rc == -2 || *out < r->min || *out > r->max) {
        char shown[CONFIG_SHOW_SIZE], lo[32], hi[32];
        return conf_fail(b, at->line, "%s: %s %s is out of range (%s to %s%s)",
                         at->elem, at->attr,
                         config_show(shown, sizeof(shown), v, n),
                         show_bound(lo, sizeof(lo), r->min, r->unit),
                         show_bound(hi, sizeof(hi), r->max, r->unit),
                         r->unit == CONF_SECONDS ? " seconds" : "");
    }
    return SUSPECT_OK;
}

/* A number within the conf_num_t range of a->arg, stored by its width. */
suspect_rc_t conf_set_num(conf_build_t *b, const conf_site_t *at, void *obj,
                          const conf_attr_t *a, const char *v, size_t n)
{
    const conf_num_t *r = a->arg;
    uint64_t val = 0;
    suspect_rc_t rc = parse_num(b, at, r, v, n, &val);

    if (rc != SUSPECT_OK) {
        return rc;
    }
    /* Ranges of the tables fit their widths: max <= UINT_MAX, INT_MAX or
     * SIZE_MAX. */
    switch (r->width) {
    case CONF_INT:
        *(int *)field(obj, a) = (int)val;
        break;
    case CONF_SIZE:
        *(size_t *)field(obj, a) = (size_t)val;
        break;
    default:
        *(unsigned *)field(obj, a) = (unsigned)val;
        break;
    }
    return SUSPECT_OK;
}

/* One of the names of a->arg (any case), stored as int or bool. */
suspect_rc_t conf_set_enum(conf_build_t *b, const conf_site_t *at, void *obj,
                           const conf_attr_t *a, const char *v, size_t n)
{
    const conf_enum_t *e = a->arg;
    char list[160], what[200];
    size_t used = 0;

    for (const conf_enum_item_t *it = e->items; it->name != NULL; it++) {
        if (strlen(it->name) == n && strncasecmp(it->name, v, n) == 0) {
            if (e->is_bool) {
                *(bool *)field(obj, a) = it->value != 0;
            } else {
                *(int *)field(obj, a) = it->value;
            }
            return SUSPECT_OK;
        }
        if (used < sizeof(list)) {
            int w = snprintf(list + used, sizeof(list) - used, "%s%s",
                             used > 0 ? ", " : "", it->name);
            used += w > 0 ? (size_t)w : 0;
        }
    }
    if (n == 0) {
        return conf_empty_value(b, at);
    }
    snprintf(what, sizeof(what), "is not one of: %s", list);
    return conf_bad_value(b, at, v, n, what);
}

/* <Server mode>: the names of suspect_conf_mode_t, for its table row and
 * for messages. */
static const conf_enum_item_t mode_items[] = {
    {"forward", SUSPECT_MODE_FORWARD},
    {"auth-request", SUSPECT_MODE_AUTH_REQUEST},
    {"authorizer", SUSPECT_MODE_AUTHORIZER},
    {NULL, 0}};
const conf_enum_t conf_mode_enum = {mode_items, 0};

const char *conf_mode_name(suspect_conf_mode_t mode)
{
    for (size_t i = 0; mode_items[i].name != NULL; i++) {
        if (mode_items[i].value == (int)mode) {
            return mode_items[i].name;
        }
    }
    return "?";
}

/* true/false, yes/no, on/off, 1/0 (any case) into a bool field. */
suspect_rc_t conf_set_bool(conf_build_t *b, const conf_site_t *at, void *obj,
                           const conf_attr_t *a, const char *v, size_t n)
{
    static const char *const yes[] = {"true", "yes", "on", "1"};
    static const char *const no[] = {"false", "no", "off", "0"};

    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strlen(yes[i]) == n && strncasecmp(yes[i], v, n) == 0) {
            *(bool *)field(obj, a) = true;
            return SUSPECT_OK;
        }
        if (strlen(no[i]) == n && strncasecmp(no[i], v, n) == 0) {
            *(bool *)field(obj, a) = false;
            return SUSPECT_OK;
        }
    }
    return n == 0 ? conf_empty_value(b, at)
                  : conf_bad_value(b, at, v, n, "is not true or false");
}

/* A valid action or identity type name, copied. */
suspect_rc_t conf_set_name(conf_build_t *b, const conf_site_t *at, void *obj,
                           const conf_attr_t *a, const char *v, size_t n)
{
    char what[128];
    char *s;

    if (n == 0) {
        return conf_empty_value(b, at);
    }
    if (!suspect_name_valid(v, n)) {
        snprintf(what, sizeof(what),
                 "is not a valid name (a letter or '_', then letters, "
                 "digits, '_', '-', '.'; at most %d)",
                 SUSPECT_ACTION_MAX);
        return conf_bad_value(b, at, v, n, what);
    }
    s = conf_strndup(b, v, n);
    if (s == NULL) {
        return conf_nomem(b, at->line);
    }
    *(const char **)field(obj, a) = s;
    return SUSPECT_OK;
}

/* True when the n bytes at p hold a control byte (or a NUL). */
static bool has_control(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (c < 0x20 || c == 0x7f) {
            return true;
        }
    }
    return false;
}

/* A file name relative to the snapshot's directory, stored absolute. */
suspect_rc_t conf_set_file(conf_build_t *b, const conf_site_t *at, void *obj,
                           const conf_attr_t *a, const char *v, size_t n)
{
    char *s;

    if (n == 0) {
        return conf_empty_value(b, at);
    }
    if (has_control(v, n)) {
        return conf_bad_value(b, at, v, n,
                              "must not contain control characters");
    }
    s = conf_resolve(b, v, n);
    if (s == NULL) {
        return conf_nomem(b, at->line);
    }
    *(const char **)field(obj, a) = s;
    return SUSPECT_OK;
}

/* Appends segment (p, n) to out at *len, with a leading '/'. */
static void put_segment(char *out, size_t *len, const char *p, size_t n)
{
    out[(*len)++] = '/';
    memcpy(out + *len, p, n);
    *len += n;
}

/* Rebuilds an absolute path segment by segment; see the header. */
char *conf_norm_path(conf_build_t *b, const char *p, size_t n, unsigned flags,
                     const char **why)
{
    size_t len = 0, i = 0;
    char *out;

    *why = NULL;
    if (n == 0 || p[0] != '/') {
        *why = "must start with '/'";
        return NULL;
    }
    if (has_control(p, n)) {
        *why = "must not contain control characters";
        return NULL;
    }
    out = conf_alloc(b, n + 1);
    if (out == NULL) {
        return NULL;
    }
    while (i < n) {
        size_t start, seg;
        while (i < n && p[i] == '/') {
            i++;
        }
        start = i;
        while (i < n && p[i] != '/') {
            i++;
        }
        seg = i - start;
        if (seg == 2 && p[start] == '.' && p[start + 1] == '.' &&
            !(flags & CONF_NORM_DOTDOT)) {
            *why = "must not contain '..' segments";
            return NULL;
        }
        if (seg > 0 && !(seg == 1 && p[start] == '.')) {
            put_segment(out, &len, p + start, seg);
        }
    }
    /* A trailing '/' (or "/." ending) stays for a prefix such as "/api/". */
    if (len == 0 ||
        (!(flags & CONF_NORM_DIR) &&
         (p[n - 1] == '/' || (n >= 2 && p[n - 1] == '.' && p[n - 2] == '/')))) {
        out[len++] = '/';
    }
    out[len] = '\0';
    return out;
}

/* An absolute path, normalised; a->arg non-NULL: a directory. */
suspect_rc_t conf_set_abspath(conf_build_t *b, const conf_site_t *at, void *obj,
                              const conf_attr_t *a, const char *v, size_t n)
{
    const char *why;
    char *s;

    if (n == 0) {
        return conf_empty_value(b, at);
    }
    s = conf_norm_path(b, v, n, a->arg != NULL ? CONF_NORM_DIR : 0, &why);
    if (s == NULL && why != NULL) {
        return conf_bad_value(b, at, v, n, why);
    }
    if (s == NULL) {
        return conf_nomem(b, at->line);
    }
    *(const char **)field(obj, a) = s;
    return SUSPECT_OK;
}

/* Checks "host:port" (host may be "[v6]"); NULL when good, else why. */
static const char *check_host_port(const char *p, size_t n)
{
    const char *colon;
    uint64_t port;
    size_t hlen;

    if (n > 0 && p[0] == '[') {
        const char *close = memchr(p, ']', n);
        if (close == NULL || close == p + 1) {
            return "has a bad IPv6 address (tcp:[addr]:port)";
        }
        for (const char *q = p + 1; q < close; q++) {
            if (!isxdigit((unsigned char)*q) && *q != ':' && *q != '.') {
                return "has a bad IPv6 address (tcp:[addr]:port)";
            }
        }
        colon = close + 1 < p + n && close[1] == ':' ? close + 1 : NULL;
    } else {
        colon = memrchr(p, ':', n);
        if (colon != NULL && memchr(p, ':', (size_t)(colon - p)) != NULL) {
            return "has an IPv6 address without brackets (tcp:[addr]:port)";
        }
    }
    hlen = colon != NULL ? (size_t)(colon - p) : n;
    if (colon == NULL || hlen == 0) {
        return "needs host:port after tcp:";
    }
    for (size_t i = 0; i < hlen; i++) {
        if (p[i] == ' ' || p[i] == '/' || p[i] == '@') {
            return "has a bad host name";
        }
    }
    if (parse_digits(colon + 1, (size_t)(p + n - colon - 1), 10, &port) != 0 ||
        port < 1 || port > 65535) {
        return "has a bad port (1 to 65535)";
    }
    return NULL;
}

/* Why the endpoint (v, n) is wrong, or NULL; fd:N and systemd only when
 * listening. */
static const char *check_endpoint(const char *v, size_t n, bool listening)
{
    uint64_t fd;

    if (n > 5 && strncmp(v, "unix:", 5) == 0) {
        if (v[5] != '/') {
            return "needs an absolute path after unix:";
        }
        return n - 5 > UNIX_PATH_MAX ? "has a unix socket path longer than "
                                       "107 bytes"
                                     : NULL;
    }
    if (n > 4 && strncmp(v, "tcp:", 4) == 0) {
        return check_host_port(v + 4, n - 4);
    }
    if (listening && n == 7 && memcmp(v, "systemd", 7) == 0) {
        return NULL;
    }
    if (listening && n > 3 && strncmp(v, "fd:", 3) == 0) {
        return parse_digits(v + 3, n - 3, 10, &fd) != 0 || fd > INT_MAX
                   ? "needs a descriptor number after fd:"
                   : NULL;
    }
    return listening ? "is not unix:/path, tcp:host:port, fd:N or systemd"
                     : "is not unix:/path or tcp:host:port";
}

/* A socket address (see check_endpoint), copied. */
suspect_rc_t conf_set_endpoint(conf_build_t *b, const conf_site_t *at,
                               void *obj, const conf_attr_t *a, const char *v,
                               size_t n)
{
    const char *why;
    char *s;

    if (n == 0) {
        return conf_empty_value(b, at);
    }
    why = has_control(v, n) ? "must not contain control characters"
                            : check_endpoint(v, n, a->arg != NULL);
    if (why != NULL) {
        return conf_bad_value(b, at, v, n, why);
    }
    s = conf_strndup(b, v, n);
    if (s == NULL) {
        return conf_nomem(b, at->line);
    }
    *(const char **)field(obj, a) = s;
    return SUSPECT_OK;
}

/* True when (v, n) starts with one of the '|'-separated prefixes. */
static bool has_prefix(const char *v, size_t n, const char *list)
{
    while (*list != '\0') {
        size_t len = strcspn(list, "|");
        if (len <= n && memcmp(v, list, len) == 0) {
            return true;
        }
        list += len + (list[len] == '|');
    }
    return false;
}

/* True when every byte of (v, n) is allowed by t. */
static bool text_bytes_ok(const conf_text_t *t, const char *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        bool ok = t->allowed != NULL ? c != '\0' && strchr(t->allowed, c)
                                     : c > 0x20 && c < 0x7f;
        if (!ok && !(t->spaces && c == ' ')) {
            return false;
        }
    }
    return true;
}

/* A bounded text (conf_text_t), copied; empty = NULL when allowed. */
suspect_rc_t conf_set_group(conf_build_t *b, const conf_site_t *at, void *obj,
                            const conf_attr_t *a, const char *v, size_t n)
{
    char name[64], buf[4096];
    struct group g, *found = NULL;
    bool number = n > 0;

    if (n == 0) {
        return conf_empty_value(b, at);
    }
    if (n >= sizeof(name) || memchr(v, '\0', n) != NULL) {
        return conf_bad_value(b, at, v, n, "is not a group name");
    }
    memcpy(name, v, n);
    name[n] = '\0';
    for (size_t i = 0; i < n; i++) {
        number = number && isdigit((unsigned char)name[i]);
    }
    if (number) {
        (void)getgrgid_r((gid_t)strtoul(name, NULL, 10), &g, buf, sizeof(buf),
                         &found);
    } else {
        (void)getgrnam_r(name, &g, buf, sizeof(buf), &found);
    }
    if (found == NULL || found->gr_gid > INT_MAX) {
        return conf_bad_value(b, at, v, n, "is not a group of this host");
    }
    *(int *)field(obj, a) = (int)found->gr_gid;
    return SUSPECT_OK;
}

suspect_rc_t conf_set_text(conf_build_t *b, const conf_site_t *at, void *obj,
                           const conf_attr_t *a, const char *v, size_t n)
{
    const conf_text_t *t = a->arg;
    char *s = NULL;

    if (n == 0 && !t->empty_ok) {
        return conf_empty_value(b, at);
    }
    if (n > t->max) {
        return conf_fail(b, at->line, "%s: %s is too long (at most %zu bytes)",
                         at->elem, at->attr, t->max);
    }
    if (!text_bytes_ok(t, v, n) ||
        (n > 0 && t->need != NULL && !has_prefix(v, n, t->need)) ||
        (n > 0 && t->contains != NULL &&
         memmem(v, n, t->contains, strlen(t->contains)) == NULL)) {
        return conf_bad_value(b, at, v, n, t->what);
    }
    if (n > 0 && (s = conf_strndup(b, v, n)) == NULL) {
        return conf_nomem(b, at->line);
    }
    *(const char **)field(obj, a) = s;
    return SUSPECT_OK;
}

/* Reads the template into the arena; its errors name suspect.xml's line. */
suspect_rc_t conf_read_template(conf_build_t *b, int line)
{
    suspect_conf_t *c = b->conf;
    suspect_err_t why;
    char *buf = NULL, *copy;
    size_t len = 0;
    suspect_rc_t rc;

    suspect_err_clear(&why);
    rc = config_read_file(c->template_path, SUSPECT_CONF_MAX_TEMPLATE, 0, NULL,
                          &buf, &len, &why);
    if (rc == SUSPECT_E_NOMEM) {
        return conf_nomem(b, line);
    }
    if (rc != SUSPECT_OK) {
        /* An unusable template is the configuration's fault. */
        rc = suspect_err_set(b->err, SUSPECT_E_CONFIG, c->file, line,
                             "Response: template '%s': %s", c->template_path,
                             why.text);
        if (b->err != NULL && b->err->sys_errno == 0) {
            b->err->sys_errno = why.sys_errno;
        }
        return rc;
    }
    copy = conf_strndup(b, buf, len);
    free(buf);
    if (copy == NULL) {
        return conf_nomem(b, line);
    }
    if (len == 0) {
        return conf_fail(b, line, "Response: template '%s' is empty",
                         c->template_path);
    }
    c->template_body = copy;
    c->template_len = len;
    return SUSPECT_OK;
}
