/*
 * control_proto.c - the control protocol's codec (control_proto.h).
 *
 * Parsing: find the empty line that ends the message (memchr from newline
 * to newline, never past the bound), check the header, count the field
 * lines, then decode each into one text block: a name, a NUL, each
 * argument unescaped, a NUL.  A decoded line is never longer than its
 * encoded form (a name ends at a space or the newline, an escape shrinks
 * from three bytes to one, each NUL takes a separator's place), so the
 * text block is the message's length, allocated once, with the line
 * array; nothing else is allocated.
 *
 * Writing: the writer appends to a growing buffer, escaping as it goes,
 * and checks each line's length when the line ends; the first failure is
 * kept and returned by mw_ctl_out_end(), so a caller writes a whole reply
 * without checking each call.
 */
#include "control_proto.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "text.h"

const mw_ctl_limits_t mw_ctl_request_limits = {64u << 10, 64};
const mw_ctl_limits_t mw_ctl_reply_limits = {8u << 20, 100000};

/* A byte written as itself inside an argument. */
static bool plain(unsigned char c)
{
    return c > 0x20 && c < 0x7f && c != '%';
}

static bool name_char(char c, bool first)
{
    return (c >= 'a' && c <= 'z') ||
           (!first && ((c >= '0' && c <= '9') || c == '_'));
}

/* ---- parsing ------------------------------------------------------------ */

/* The length of the message at buf (through its empty line), 0 when it is
 * not there yet; *lines gets its newlines.  -1 when a bound is passed. */
static long long find_end(const char *buf, size_t len,
                          const mw_ctl_limits_t *lim, size_t *lines)
{
    size_t off = 0, scan = len < lim->max_bytes ? len : lim->max_bytes;

    *lines = 0;
    while (off < scan) {
        const char *nl = memchr(buf + off, '\n', scan - off);
        size_t line_len;

        if (nl == NULL) {
            return scan - off >= MW_CTL_LINE_MAX || len >= lim->max_bytes ? -1
                                                                          : 0;
        }
        line_len = (size_t)(nl - (buf + off)) + 1;
        if (line_len > MW_CTL_LINE_MAX) {
            return -1;
        }
        ++*lines;
        if (line_len == 1 && off > 0) {
            return (long long)(off + 1);
        }
        off += line_len;
    }
    return len >= lim->max_bytes ? -1 : 0;
}

/* The header line p[0..n) (no newline): its version, 0 when it is not one. */
static unsigned header_version(const char *p, size_t n)
{
    size_t m = sizeof(MW_CTL_MAGIC) - 1;
    unsigned v = 0;

    if (n < m + 2 || n > m + 4 || memcmp(p, MW_CTL_MAGIC, m) != 0 ||
        p[m] != ' ' || p[m + 1] == '0') {
        return 0;
    }
    for (size_t i = m + 1; i < n; i++) {
        if (p[i] < '0' || p[i] > '9') {
            return 0;
        }
        v = v * 10 + (unsigned)(p[i] - '0');
    }
    return v;
}

/* Decodes the field line p[0..n) (no newline) into l, its text at *t
 * (advanced); NULL, or what is wrong with it. */
static const char *decode_line(const char *p, size_t n, mw_ctl_line_t *l,
                               char **t)
{
    size_t i = 0;

    memset(l, 0, sizeof(*l));
    l->name = *t;
    while (i < n && p[i] != ' ') {
        if (!name_char(p[i], i == 0)) {
            return "a name is [a-z][a-z0-9_]*";
        }
        *(*t)++ = p[i++];
    }
    if (i == 0 || i > MW_CTL_NAME_MAX) {
        return "a name is 1 to 32 bytes";
    }
    *(*t)++ = '\0';
    while (i < n) {
        mw_ctl_arg_t *a = &l->arg[l->nargs];

        if (l->nargs == MW_CTL_ARGS_MAX) {
            return "more than 8 arguments";
        }
        i++; /* the space */
        a->p = *t;
        while (i < n && p[i] != ' ') {
            unsigned char c = (unsigned char)p[i];

            if (c == '%') {
                int hi = i + 2 < n ? hex_value(p[i + 1]) : -1;
                int lo = hi >= 0 ? hex_value(p[i + 2]) : -1;

                if (lo < 0) {
                    return "'%' is not followed by two hex digits";
                }
                *(*t)++ = (char)(hi * 16 + lo);
                i += 3;
                continue;
            }
            if (!plain(c)) {
                return "a byte outside '!'..'~' is not escaped";
            }
            *(*t)++ = (char)c;
            i++;
        }
        a->len = (size_t)(*t - a->p);
        if (a->len == 0) {
            return "an empty argument";
        }
        *(*t)++ = '\0';
        l->nargs++;
    }
    return NULL;
}

/* Decodes the field lines of the message buf[0..end) after its header
 * (which ends at hdr) into m. */
static suspect_rc_t decode_lines(const char *buf, size_t hdr, size_t end,
                                 mw_ctl_msg_t *m, suspect_err_t *err)
{
    char *t = m->text;
    size_t off = hdr;

    while (off < end - 1) {
        const char *nl = memchr(buf + off, '\n', end - off);
        const char *why = decode_line(buf + off, (size_t)(nl - (buf + off)),
                                      &m->lines[m->nlines], &t);

        if (why != NULL) {
            return suspect_err_set(err, SUSPECT_E_PARSE, NULL, 0,
                                   "control message: line %zu: %s",
                                   m->nlines + 2, why);
        }
        m->nlines++;
        off = (size_t)(nl - buf) + 1;
    }
    return SUSPECT_OK;
}

suspect_rc_t mw_ctl_parse(const char *buf, size_t len,
                          const mw_ctl_limits_t *lim, mw_ctl_msg_t *out,
                          size_t *used, suspect_err_t *err)
{
    size_t lines, hdr;
    long long end = find_end(buf, len, lim, &lines);
    const char *nl;
    suspect_rc_t rc;

    memset(out, 0, sizeof(*out));
    if (end < 0) {
        return suspect_err_set(err, SUSPECT_E_PARSE, NULL, 0,
                               "control message: over %zu bytes or a line "
                               "over %d bytes",
                               lim->max_bytes, MW_CTL_LINE_MAX);
    }
    if (end == 0) {
        return SUSPECT_E_NOTFOUND;
    }
    nl = memchr(buf, '\n', (size_t)end);
    hdr = (size_t)(nl - buf) + 1;
    out->version = header_version(buf, hdr - 1);
    if (out->version == 0) {
        return suspect_err_set(err, SUSPECT_E_PARSE, NULL, 0,
                               "control message: the first line is not "
                               "\"" MW_CTL_MAGIC " VERSION\"");
    }
    *used = (size_t)end;
    if (out->version != MW_CTL_VERSION) {
        return SUSPECT_OK;
    }
    if (lines - 2 > lim->max_lines) {
        out->version = 0;
        return suspect_err_set(err, SUSPECT_E_PARSE, NULL, 0,
                               "control message: more than %zu lines",
                               lim->max_lines);
    }
    out->lines = suspect_calloc(lines - 2 + 1, sizeof(*out->lines));
    out->text = suspect_malloc((size_t)end);
    if (out->lines == NULL || out->text == NULL) {
        mw_ctl_msg_free(out);
        return suspect_err_set(err, SUSPECT_E_NOMEM, NULL, 0,
                               "control message: out of memory");
    }
    rc = decode_lines(buf, hdr, (size_t)end, out, err);
    if (rc != SUSPECT_OK) {
        mw_ctl_msg_free(out);
    }
    return rc;
}

void mw_ctl_msg_free(mw_ctl_msg_t *m)
{
    free(m->lines);
    free(m->text);
    memset(m, 0, sizeof(*m));
}

const mw_ctl_line_t *mw_ctl_get(const mw_ctl_msg_t *m, const char *name)
{
    for (size_t i = 0; i < m->nlines; i++) {
        if (strcmp(m->lines[i].name, name) == 0) {
            return &m->lines[i];
        }
    }
    return NULL;
}

const char *mw_ctl_get_str(const mw_ctl_msg_t *m, const char *name, size_t *len)
{
    const mw_ctl_line_t *l = mw_ctl_get(m, name);

    if (l == NULL || l->nargs == 0) {
        return NULL;
    }
    if (len != NULL) {
        *len = l->arg[0].len;
    }
    return l->arg[0].p;
}

bool mw_ctl_arg_i64(const mw_ctl_arg_t *a, int64_t *v)
{
    size_t i = a->len > 0 && a->p[0] == '-' ? 1 : 0;
    int64_t x = 0;

    if (a->len == i || a->len - i > 18) {
        return false;
    }
    for (; i < a->len; i++) {
        if (a->p[i] < '0' || a->p[i] > '9') {
            return false;
        }
        x = x * 10 + (a->p[i] - '0');
    }
    *v = a->p[0] == '-' ? -x : x;
    return true;
}

bool mw_ctl_get_i64(const mw_ctl_msg_t *m, const char *name, int64_t *v)
{
    const mw_ctl_line_t *l = mw_ctl_get(m, name);

    return l != NULL && l->nargs > 0 && mw_ctl_arg_i64(&l->arg[0], v);
}

/* ---- writing ------------------------------------------------------------ */

/* Room for n more bytes; false (rc set) when there is none. */
static bool out_room(mw_ctl_out_t *o, size_t n)
{
    size_t cap = o->cap == 0 ? 1024 : o->cap;
    char *nb;

    if (o->rc != SUSPECT_OK) {
        return false;
    }
    while (cap - o->len < n) {
        cap *= 2;
    }
    if (cap != o->cap) {
        nb = suspect_realloc(o->buf, cap);
        if (nb == NULL) {
            o->rc = SUSPECT_E_NOMEM;
            return false;
        }
        o->buf = nb;
        o->cap = cap;
    }
    return true;
}

static void out_bytes(mw_ctl_out_t *o, const char *p, size_t n)
{
    if (out_room(o, n)) {
        memcpy(o->buf + o->len, p, n);
        o->len += n;
    }
}

/* Ends the line being written, if any. */
static void out_end_line(mw_ctl_out_t *o)
{
    if (!o->in_line) {
        return;
    }
    out_bytes(o, "\n", 1);
    o->in_line = false;
    if (o->rc == SUSPECT_OK && o->len - o->line_start > MW_CTL_LINE_MAX) {
        o->rc = SUSPECT_E_INVAL;
    }
}

void mw_ctl_out_begin(mw_ctl_out_t *o)
{
    char head[32];
    int n =
        snprintf(head, sizeof(head), "%s %u\n", MW_CTL_MAGIC, MW_CTL_VERSION);

    o->len = 0;
    o->in_line = false;
    o->rc = SUSPECT_OK;
    out_bytes(o, head, (size_t)n);
}

void mw_ctl_out_line(mw_ctl_out_t *o, const char *name)
{
    size_t n = strlen(name);

    out_end_line(o);
    o->line_start = o->len;
    o->in_line = true;
    for (size_t i = 0; i < n; i++) {
        if (!name_char(name[i], i == 0)) {
            n = 0;
        }
    }
    if (n == 0 || n > MW_CTL_NAME_MAX) {
        o->rc = o->rc == SUSPECT_OK ? SUSPECT_E_INVAL : o->rc;
        return;
    }
    out_bytes(o, name, n);
}

void mw_ctl_out_arg(mw_ctl_out_t *o, const void *p, size_t len)
{
    const unsigned char *s = p;

    if (len == 0 || !o->in_line) {
        o->rc = o->rc == SUSPECT_OK ? SUSPECT_E_INVAL : o->rc;
        return;
    }
    if (!out_room(o, 1 + 3 * len)) {
        return;
    }
    o->buf[o->len++] = ' ';
    for (size_t i = 0; i < len; i++) {
        if (plain(s[i])) {
            o->buf[o->len++] = (char)s[i];
        } else {
            o->buf[o->len++] = '%';
            o->buf[o->len++] = hex_upper[s[i] >> 4];
            o->buf[o->len++] = hex_upper[s[i] & 15];
        }
    }
}

void mw_ctl_out_str(mw_ctl_out_t *o, const char *s)
{
    mw_ctl_out_arg(o, s, strlen(s));
}

void mw_ctl_out_i64(mw_ctl_out_t *o, int64_t v)
{
    char num[24];
    int n = snprintf(num, sizeof(num), "%" PRId64, v);

    mw_ctl_out_arg(o, num, (size_t)n);
}

void mw_ctl_out_field(mw_ctl_out_t *o, const char *name, const char *s)
{
    mw_ctl_out_line(o, name);
    mw_ctl_out_str(o, s);
}

void mw_ctl_out_field_i64(mw_ctl_out_t *o, const char *name, int64_t v)
{
    mw_ctl_out_line(o, name);
    mw_ctl_out_i64(o, v);
}

void mw_ctl_out_append(mw_ctl_out_t *o, const mw_ctl_out_t *from)
{
    const char *nl = from->len > 0 ? memchr(from->buf, '\n', from->len) : NULL;
    size_t head = nl != NULL ? (size_t)(nl - from->buf) + 1 : from->len;

    if (from->rc != SUSPECT_OK) {
        o->rc = o->rc == SUSPECT_OK ? from->rc : o->rc;
        return;
    }
    out_end_line(o);
    out_bytes(o, from->buf + head, from->len - head);
    if (from->in_line) {
        o->in_line = true;
        o->line_start = o->len - (from->len - from->line_start);
    }
}

suspect_rc_t mw_ctl_out_end(mw_ctl_out_t *o)
{
    out_end_line(o);
    out_bytes(o, "\n", 1);
    return o->rc;
}

void mw_ctl_out_free(mw_ctl_out_t *o)
{
    free(o->buf);
    memset(o, 0, sizeof(*o));
}
