/*
 * multipart_head.c - the header grammar of multipart.h: the boundary
 * parameter of CONTENT_TYPE and the header block of one part.
 *
 * Both are "value *(OWS ";" OWS key "=" value)" texts, read by one
 * parameter reader that accepts what PHP's getword()/getword_conf(),
 * Python's parse_header() and email parser, and CGI.pm's regular
 * expressions read alike: keys are tokens without '*' (RFC 2231
 * parameters: Python's email decodes them, PHP and CGI.pm do not) or
 * '\'' (PHP quotes with it); values are tokens or quoted strings with no
 * '"' inside and no "\\" or "\"" (PHP and Python unescape them, CGI.pm
 * does not, and PHP's getword() skips \" where Python ends the string at
 * the '"' of \\"); OWS then ';' or the end follows each.  A lone
 * backslash is a byte like any other to all of them.
 *
 * A header line is "token: value", at least one blank after the colon
 * (CGI.pm's /token:\s+(.*)/ needs one, and matches across the line end
 * when the value is empty), the value not empty, no control byte but
 * HTAB, no line folding.  PHP looks headers up case-insensitively and
 * takes the first of a name, CGI.pm the last: a second
 * Content-Disposition is refused.  In the Content-Disposition, CGI.pm
 * takes the first /[\s;]name=/ and the first / filename=/i, and treats a
 * part as a file only then: every "name=" (any case) must be the name=
 * parameter's key or the end of filename='s, and filename= must follow a
 * space and be quoted.  With that, the name PHP reads is the name every
 * parser reads; only whether an empty filename="" makes a file differs
 * (CGI.pm reads a field), which the guard settles by refusing file parts
 * named as parameters it counts.
 */
#include <string.h>

#include "multipart.h"
#include "multipart_internal.h"

/* RFC 9110 tchar. */
static bool is_tchar(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
           (c >= 'A' && c <= 'Z') ||
           (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* A token byte of a parameter: tchar but '\'' (and '*' for keys). */
static bool is_ptok(unsigned char c, bool key)
{
    return is_tchar(c) && c != '\'' && !(key && c == '*');
}

static bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

/* RFC 2046 bcharsnospace, without ',' (PHP and CGI.pm end it there). */
static bool is_bchar(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
           (c >= 'A' && c <= 'Z') ||
           (c != '\0' && strchr("'()+_-./:=?", c) != NULL);
}

/* True when s[0..n) is lit (lower case) in any case. */
static bool ieq(const char *s, size_t n, const char *lit)
{
    size_t i = 0;

    for (; i < n && lit[i] != '\0'; i++) {
        char c = s[i];

        if (c >= 'A' && c <= 'Z') {
            c = (char)(c + 32);
        }
        if (c != lit[i]) {
            return false;
        }
    }
    return i == n && lit[i] == '\0';
}

/* Where lit (lower case) first occurs in s[0..n) in any case, or n. */
static size_t ifind(const char *s, size_t n, const char *lit)
{
    size_t m = strlen(lit);

    for (size_t i = 0; i + m <= n; i++) {
        if (ieq(s + i, m, lit)) {
            return i;
        }
    }
    return n;
}

/* One key=value parameter: offsets into the text read. */
typedef struct param {
    size_t key, key_len;
    size_t val, val_len; /* without the quotes */
    bool quoted;
    bool ows_after; /* blanks follow the value */
} param_t;

/* The value of a parameter at s[*k] (unquoted: a token, or bchars for
 * a boundary): NULL with *k past it, or why it is refused. */
static const char *value_read(const char *s, size_t len, size_t *k, bool bchars,
                              param_t *p)
{
    size_t i = *k;

    p->quoted = i < len && s[i] == '"';
    if (i < len && s[i] == '\'') {
        return "multipart parameter in single quotes (PHP unquotes it)";
    }
    if (!p->quoted) {
        p->val = i;
        while (i < len && (bchars ? is_bchar((unsigned char)s[i])
                                  : is_ptok((unsigned char)s[i], false))) {
            i++;
        }
        p->val_len = i - p->val;
        *k = i;
        return p->val_len > 0 ? NULL : "multipart parameter without a value";
    }
    p->val = ++i;
    while (i < len && s[i] != '"') {
        unsigned char c = (unsigned char)s[i];

        if ((c < 0x20 && c != '\t') || c == 0x7f) {
            return "control byte in a multipart parameter";
        }
        if (c == '\\' && i + 1 < len && (s[i + 1] == '"' || s[i + 1] == '\\')) {
            return "escape in a quoted multipart parameter";
        }
        i++;
    }
    if (i == len) {
        return "unterminated quoted multipart parameter";
    }
    p->val_len = i - p->val;
    *k = i + 1;
    return NULL;
}

/*
 * Reads "key=value" at s[*i] (just past a ';' and its blanks), then the
 * blanks after it: *i ends at the next ';' or at len.  NULL, or why the
 * parameter is refused.
 */
static const char *param_read(const char *s, size_t len, size_t *i, param_t *p)
{
    size_t k = *i;
    const char *why;

    p->key = k;
    while (k < len && is_ptok((unsigned char)s[k], true)) {
        k++;
    }
    p->key_len = k - p->key;
    if (p->key_len == 0 || k == len || s[k] != '=') {
        return k < len && (s[k] == '*' || s[k] == '\'')
                   ? "RFC 2231 or quoted multipart parameter name"
                   : "multipart parameter not key=value";
    }
    k++;
    why = value_read(s, len, &k, ieq(s + p->key, p->key_len, "boundary"), p);
    if (why != NULL) {
        return why;
    }
    p->ows_after = k < len && is_ows(s[k]);
    while (k < len && is_ows(s[k])) {
        k++;
    }
    if (k < len && s[k] != ';') {
        return "junk after a multipart parameter";
    }
    *i = k;
    return NULL;
}

/* Past the ';' at s[*i] and the blanks after it; false at the end. */
static bool next_param(const char *s, size_t len, size_t *i)
{
    if (*i >= len) {
        return false;
    }
    (*i)++; /* the ';' param_read() stopped at */
    while (*i < len && is_ows(s[*i])) {
        (*i)++;
    }
    return true;
}

/* ---- the boundary -------------------------------------------------------- */

/* The boundary: see multipart.h. */
suspect_rc_t mw_mp_boundary(const char *type, size_t len, char *buf,
                            size_t *blen, const char **why)
{
    size_t i = 0;
    param_t b = {0, 0, 0, 0, false, false};
    bool found = false;

    *why = "multipart type without a boundary";
    while (i < len && type[i] != ';') {
        i++;
    }
    while (next_param(type, len, &i)) {
        param_t p;
        const char *w = param_read(type, len, &i, &p);

        if (w != NULL) {
            *why = w;
            return SUSPECT_E_PARSE;
        }
        if (ieq(type + p.key, p.key_len, "boundary")) {
            if (found || memcmp(type + p.key, "boundary", 8) != 0) {
                *why = "multipart boundary given twice or not in lower case";
                return SUSPECT_E_PARSE;
            }
            found = true;
            b = p;
        }
    }
    if (!found) {
        return SUSPECT_E_PARSE;
    }
    /* PHP takes the first "boundary" of the type, in any case. */
    if (ifind(type, b.key, "boundary") != b.key) {
        *why = "\"boundary\" before the multipart boundary";
        return SUSPECT_E_PARSE;
    }
    /* Unquoted, PHP keeps the blanks up to ';' in the boundary. */
    if (b.val_len < 1 || b.val_len > MW_MP_BOUNDARY_MAX ||
        (!b.quoted && b.ows_after)) {
        *why = "multipart boundary empty, too long or followed by blanks";
        return SUSPECT_E_PARSE;
    }
    for (size_t k = 0; k < b.val_len; k++) {
        if (!is_bchar((unsigned char)type[b.val + k])) {
            *why = "multipart boundary with a byte RFC 2046 does not allow";
            return SUSPECT_E_PARSE;
        }
    }
    memcpy(buf, type + b.val, b.val_len);
    *blen = b.val_len;
    *why = NULL;
    return SUSPECT_OK;
}

/* ---- a part's headers ------------------------------------------------------
 */

/* Reads the Content-Disposition value s[0..len) into h. */
static const char *disposition_read(const char *s, size_t len, size_t at,
                                    mp_head_t *h)
{
    size_t i = 0, name_key = len, file_key = len;
    bool has_file = false;

    while (i < len && is_ptok((unsigned char)s[i], false)) {
        i++;
    }
    if (i == 0) {
        return "Content-Disposition without a type";
    }
    while (i < len && is_ows(s[i])) {
        i++;
    }
    if (i < len && s[i] != ';') {
        return "Content-Disposition without a type";
    }
    while (next_param(s, len, &i)) {
        param_t p;
        const char *why = param_read(s, len, &i, &p);

        if (why != NULL) {
            return why;
        }
        if (ieq(s + p.key, p.key_len, "name")) {
            if (h->has_name) {
                return "name= given twice in a Content-Disposition";
            }
            h->has_name = true;
            h->name_off = at + p.val;
            h->name_len = p.val_len;
            name_key = p.key;
        } else if (ieq(s + p.key, p.key_len, "filename")) {
            if (has_file || !p.quoted || s[p.key - 1] != ' ') {
                return "filename= twice, unquoted or not after a space";
            }
            has_file = true;
            file_key = p.key;
        }
    }
    /* CGI.pm's regular expressions take the first name= anywhere. */
    for (size_t k = 0; k + 5 <= len; k++) {
        if (ieq(s + k, 5, "name=") && k != name_key && k != file_key + 4) {
            return "name= inside another Content-Disposition parameter";
        }
    }
    h->kind = has_file ? MP_FILE : h->has_name ? MP_FIELD : MP_SKIP;
    return NULL;
}

/* Checks the line blk[i..e) ("key: value") and says where its key and
 * value are. */
static const char *line_read(const char *blk, size_t i, size_t e, size_t *key,
                             size_t *v)
{
    size_t k = i;

    while (k < e && is_tchar((unsigned char)blk[k])) {
        k++;
    }
    if (k == i || k == e || blk[k] != ':') {
        return "multipart header line not \"name: value\"";
    }
    *key = k - i;
    if (++k == e || !is_ows(blk[k])) {
        return "multipart header without a blank after its colon";
    }
    while (k < e && is_ows(blk[k])) {
        k++;
    }
    if (k == e) {
        return "empty multipart header";
    }
    *v = k;
    for (; k < e; k++) {
        unsigned char c = (unsigned char)blk[k];

        if ((c < 0x20 && c != '\t') || c == 0x7f) {
            return "control byte in a multipart header";
        }
    }
    return NULL;
}

/* Whether a part's Content-Type makes parsers read fields in it. */
static bool nested_type(const char *s, size_t len)
{
    size_t n = 0;

    while (n < len && s[n] != ';' && !is_ows(s[n])) {
        n++;
    }
    return (n >= 10 && ieq(s, 10, "multipart/")) ||
           ieq(s, n, "application/x-www-form-urlencoded");
}

/* Reads one part's header block: see multipart_internal.h. */
suspect_rc_t mp_head_read(const char *blk, size_t len, bool crlf, mp_head_t *h,
                          const char **why)
{
    size_t i = 0, cd = 0, cd_end = 0;
    bool has_cd = false;

    memset(h, 0, sizeof(*h));
    *why = NULL;
    while (*why == NULL && i < len) {
        const char *nl = memchr(blk + i, '\n', len - i);
        size_t e = nl != NULL ? (size_t)(nl - blk) : len;
        size_t key = 0, v = 0;

        if (crlf && (e == i || blk[e - 1] != '\r')) {
            *why = "bare LF in a multipart body of CRLF lines";
            break;
        }
        e -= crlf ? 1 : 0;
        if (e == i) {
            break; /* the empty line: the end of the block */
        }
        *why = line_read(blk, i, e, &key, &v);
        if (*why != NULL) {
            break;
        }
        if (ieq(blk + i, key, "content-disposition")) {
            *why = has_cd ? "Content-Disposition given twice" : NULL;
            has_cd = true;
            cd = v;
            cd_end = e;
        } else if (ieq(blk + i, key, "content-transfer-encoding")) {
            *why = "Content-Transfer-Encoding in a multipart part";
        } else if (ieq(blk + i, key, "content-type") &&
                   nested_type(blk + v, e - v)) {
            *why = "multipart part of a form or multipart type";
        }
        i = e + (crlf ? 2 : 1);
    }
    if (*why == NULL && has_cd) {
        *why = disposition_read(blk + cd, cd_end - cd, cd, h);
    }
    return *why == NULL ? SUSPECT_OK : SUSPECT_E_PARSE;
}
