/*
 * path.c - the path a route is matched against.
 *
 * A client controls REQUEST_URI, so the path is put in the one form the web
 * server and the app resolve it to before it is compared: "/%6Cogin.cgi",
 * "//login.cgi", "/./login.cgi" and "/a/../login.cgi" must all be
 * "/login.cgi", or a rate limit is one spelling away from useless.
 *
 * Algorithm: one pass over the input, byte by byte.  In decode mode (a raw
 * request target) the input ends at the first literal '?' (the query) or
 * '#' (a fragment, which nginx also cuts), and %XX becomes its byte ('+'
 * stays: it is a space only in queries); a '%' without two hex digits stays
 * as it is, as the query parser does.  Every '/' decoded or literal ends a
 * segment; when a segment ends it is looked at: empty ("//") and "." are
 * dropped, ".." drops itself and the segment before it.  The output is
 * always "/" followed by the kept segments, and keeps a trailing '/' when
 * the input had one ("/dir/" stays "/dir/", "/dir/." becomes "/dir/").
 *
 * Refused (SUSPECT_E_INVAL): an empty path, one whose first byte is not a
 * literal '/', a decoded NUL byte, and ".." at the root.  A server answers
 * those with 400 itself, so refusing them costs a real client nothing.
 *
 * A path already in that form (no '%', no "//", no "/.") is copied in one
 * scan, which is what nearly every request takes.
 *
 * The paths of a request (guard_paths_build): a route may match any of
 * them, because what a client asked for and what the web server runs can
 * differ.  With nginx's "index index.php", try_files or a rewrite,
 * "POST /?op=login" runs /index.php, so REQUEST_URI's path ("/") alone
 * would miss a route for "/index.php".  So the request is matched by up to
 * four paths, each normalised the same way and kept once:
 *   REQUEST_URI's path (decoded here: the raw request target);
 *   SCRIPT_NAME + PATH_INFO (already decoded by the web server): the
 *     script that runs;
 *   DOCUMENT_URI (nginx's $document_uri, decoded, after rewrites);
 *   the file that runs, under the document root (target.c);
 * and each of them that is a directory, as each <Server index> name
 * (target.c says when).  A path that is present but unusable refuses the
 * request (400), whichever it is; none at all is the web server's
 * misconfiguration (500), and so is a request whose script cannot be
 * told (target.c).
 *
 * Invariant: the output never holds more bytes than the input consumed
 * plus one, so a buffer of len + 2 bytes is always big enough.
 */
#include "guard_internal.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "text.h"

/* A reader over the concatenation of two spans. */
typedef struct path_src {
    const char *p[2];
    size_t n[2];
    size_t part;
    size_t i;
    bool decode;
} path_src_t;

/* A bounded writer: size bytes, one kept for the NUL. */
typedef struct path_out {
    char *buf;
    size_t size;
    size_t len;
} path_out_t;

/* The raw byte at the reader's position, or -1 at the end. */
static int src_peek(const path_src_t *s, size_t ahead)
{
    size_t part = s->part;
    size_t i = s->i + ahead;

    while (part < 2 && i >= s->n[part]) {
        i -= s->n[part];
        part++;
    }
    return part < 2 ? (unsigned char)s->p[part][i] : -1;
}

static void src_skip(path_src_t *s, size_t k)
{
    s->i += k;
    while (s->part < 2 && s->i >= s->n[s->part]) {
        s->i -= s->n[s->part];
        s->part++;
    }
}

/* The next decoded byte, or -1 at the end of the path.  An encoded '/'
 * comes back as '/' and separates segments like a literal one. */
static int src_next(path_src_t *s)
{
    int c = src_peek(s, 0);

    if (c < 0 || (s->decode && (c == '?' || c == '#'))) {
        return -1;
    }
    if (s->decode && c == '%') {
        int c1 = src_peek(s, 1);
        int c2 = src_peek(s, 2);
        int h1 = c1 >= 0 ? hex_value((char)c1) : -1;
        int h2 = c2 >= 0 ? hex_value((char)c2) : -1;

        if (h1 >= 0 && h2 >= 0) {
            src_skip(s, 3);
            return h1 * 16 + h2;
        }
    }
    src_skip(s, 1);
    return c;
}

static bool out_put(path_out_t *o, char c)
{
    if (o->len + 1 >= o->size) {
        return false;
    }
    o->buf[o->len++] = c;
    return true;
}

/*
 * Ends the segment that starts at seg (just after a '/') in o: drops it
 * when it is empty or ".", drops it and the one before for "..".  Returns
 * false for ".." at the root.
 */
static bool segment_end(path_out_t *o, size_t seg)
{
    size_t n = o->len - seg;

    if (n == 1 && o->buf[seg] == '.') {
        o->len = seg;
    } else if (n == 2 && o->buf[seg] == '.' && o->buf[seg + 1] == '.') {
        if (seg == 1) {
            return false;
        }
        /* Back to just after the '/' that opened the previous segment. */
        o->len = seg - 1;
        while (o->buf[o->len - 1] != '/') {
            o->len--;
        }
    }
    return true;
}

/*
 * The length of p[0..n) up to its end ('?' or '#' when decoding) when that
 * is already in normal form, else 0: the common case, copied as it is.  A
 * '%' (when decoding), a NUL, "//" and "/." (a dot segment, or a name
 * starting with a dot) take the full pass.
 */
static size_t clean_len(const char *p, size_t n, bool decode)
{
    size_t i;

    if (n == 0 || p[0] != '/') {
        return 0;
    }
    for (i = 0; i < n; i++) {
        char c = p[i];

        if (decode && (c == '?' || c == '#')) {
            break;
        }
        if (c == '\0' || (decode && c == '%') ||
            (c == '/' && i + 1 < n && (p[i + 1] == '/' || p[i + 1] == '.'))) {
            return 0;
        }
    }
    return i;
}

suspect_rc_t guard_path_build(const char *a, size_t alen, const char *b,
                              size_t blen, bool decode, char *buf, size_t size,
                              size_t *out_len)
{
    path_src_t s = {
        {a, b}, {a != NULL ? alen : 0, b != NULL ? blen : 0}, 0, 0, decode};
    path_out_t o = {buf, size, 0};
    size_t seg;
    size_t clean = blen == 0 || b == NULL ? clean_len(a, alen, decode) : 0;
    int c;

    if (clean > 0 && buf != NULL) {
        if (clean >= size) {
            return SUSPECT_E_FULL;
        }
        memcpy(buf, a, clean);
        buf[clean] = '\0';
        *out_len = clean;
        return SUSPECT_OK;
    }
    src_skip(&s, 0);
    /* A literal '/': "%2Flogin" is not an absolute path to a server. */
    if (buf == NULL || size == 0 || src_peek(&s, 0) != '/') {
        return SUSPECT_E_INVAL;
    }
    src_skip(&s, 1);
    if (!out_put(&o, '/')) {
        return SUSPECT_E_FULL;
    }
    seg = o.len;
    while ((c = src_next(&s)) >= 0) {
        if (c == 0) {
            return SUSPECT_E_INVAL;
        }
        if (c != '/') {
            if (!out_put(&o, (char)c)) {
                return SUSPECT_E_FULL;
            }
            continue;
        }
        if (!segment_end(&o, seg)) {
            return SUSPECT_E_INVAL;
        }
        /* A kept segment gets its '/'; a dropped one left one already. */
        if (o.len > seg && !out_put(&o, '/')) {
            return SUSPECT_E_FULL;
        }
        seg = o.len;
    }
    if (!segment_end(&o, seg)) {
        return SUSPECT_E_INVAL;
    }
    buf[o.len] = '\0';
    *out_len = o.len;
    return SUSPECT_OK;
}

/* The normalised path of a raw request target: see the file comment. */
suspect_rc_t mw_path_normalize(const char *raw, size_t len, char *buf,
                               size_t size, size_t *out_len)
{
    size_t n = 0;
    suspect_rc_t rc;

    if (raw == NULL || out_len == NULL) {
        return SUSPECT_E_INVAL;
    }
    rc = guard_path_build(raw, len, NULL, 0, true, buf, size, &n);
    if (rc == SUSPECT_OK) {
        *out_len = n;
    }
    return rc;
}

/* ---- the paths of a request ---------------------------------------------- */

/* One path to build: a[0..alen) then b[0..blen), raw when decode. */
typedef struct path_in {
    const char *a;
    size_t alen;
    const char *b;
    size_t blen;
    bool decode;
} path_in_t;

/* The variable name of req, or NULL when missing or empty. */
static const char *var(const mw_req_t *req, const char *name, size_t *len)
{
    const char *v;

    *len = 0;
    v = mw_req_param(req, name, len);
    return v != NULL && *len > 0 ? v : NULL;
}

/* The paths req has (see the file comment) into in, file[0..file_len)
 * the one of target.c; how many. */
static size_t path_inputs(const mw_req_t *req, const char *file,
                          size_t file_len, path_in_t in[GUARD_BASE_PATHS])
{
    size_t n = 0;

    memset(in, 0, GUARD_BASE_PATHS * sizeof(*in));
    in[n].a = var(req, "REQUEST_URI", &in[n].alen);
    in[n].decode = true;
    n += in[n].a != NULL;
    in[n].a = var(req, "SCRIPT_NAME", &in[n].alen);
    in[n].b = var(req, "PATH_INFO", &in[n].blen);
    in[n].decode = false;
    n += in[n].a != NULL || in[n].b != NULL;
    in[n].a = var(req, "DOCUMENT_URI", &in[n].alen);
    in[n].b = NULL;
    in[n].blen = 0;
    in[n].decode = false;
    n += in[n].a != NULL;
    in[n].a = file_len > 0 ? file : NULL;
    in[n].alen = file_len;
    in[n].b = NULL;
    in[n].blen = 0;
    in[n].decode = false;
    n += in[n].a != NULL;
    return n;
}

/* True when p[0..len) is one of out's paths already. */
static bool path_seen(const guard_paths_t *out, const char *p, size_t len)
{
    for (size_t i = 0; i < out->n; i++) {
        if (out->len[i] == len && memcmp(out->path[i], p, len) == 0) {
            return true;
        }
    }
    return false;
}

/* A writer of paths into one buffer, NUL-separated. */
typedef struct path_buf {
    char *buf;
    size_t size;
    size_t used;
} path_buf_t;

/* Builds one input into b and adds it to out unless it is there; fails
 * as guard_path_build(). */
static suspect_rc_t add_path(guard_paths_t *out, path_buf_t *b,
                             const path_in_t *in)
{
    size_t len = 0;
    suspect_rc_t rc =
        b->size - b->used < 2
            ? SUSPECT_E_FULL
            : guard_path_build(in->a, in->alen, in->b, in->blen, in->decode,
                               b->buf + b->used, b->size - b->used, &len);

    if (rc == SUSPECT_OK && !path_seen(out, b->buf + b->used, len) &&
        out->n < GUARD_MAX_PATHS) {
        out->path[out->n] = b->buf + b->used;
        out->len[out->n++] = len;
        b->used += len + 1;
    }
    return rc;
}

/* Reads each directory among out's first base paths as each name of the
 * blank-separated list names (dir + name). */
static suspect_rc_t add_index(guard_paths_t *out, size_t base, path_buf_t *b,
                              const char *names)
{
    for (size_t i = 0; i < base; i++) {
        const char *dir = out->path[i];
        size_t dir_len = out->len[i];
        const char *p = names;

        if (dir_len == 0 || dir[dir_len - 1] != '/') {
            continue;
        }
        while (*p != '\0') {
            size_t n;
            path_in_t in = {dir, dir_len, NULL, 0, false};
            suspect_rc_t rc;

            p += strspn(p, " ");
            n = strcspn(p, " ");
            in.b = p;
            in.blen = n;
            rc = n > 0 ? add_path(out, b, &in) : SUSPECT_OK;
            if (rc != SUSPECT_OK) {
                return rc;
            }
            p += n;
        }
    }
    return SUSPECT_OK;
}

/* Builds in[0..n) (and the index readings when index is not NULL) into
 * buf[0..size); fails as guard_path_build(). */
static suspect_rc_t paths_fill(guard_paths_t *out, const path_in_t *in,
                               size_t n, const char *index, char *buf,
                               size_t size)
{
    path_buf_t b = {buf, size, 0};
    suspect_rc_t rc = SUSPECT_OK;

    out->n = 0;
    for (size_t i = 0; i < n && rc == SUSPECT_OK; i++) {
        rc = add_path(out, &b, &in[i]);
    }
    if (rc == SUSPECT_OK && index != NULL) {
        rc = add_index(out, out->n, &b, index);
    }
    return rc;
}

/* The normalised paths of req: see guard_internal.h. */
suspect_rc_t guard_paths_build(const mw_guard_t *g, const mw_req_t *req,
                               guard_paths_t *out)
{
    char file[PATH_MAX];
    size_t file_len = 0, n, need = 0;
    path_in_t in[GUARD_BASE_PATHS];
    guard_target_t t;
    const char *index;
    suspect_rc_t rc;

    out->n = 0;
    out->heap = NULL;
    out->unknown = NULL;
    rc = guard_target_file(g, req, file, sizeof(file), &file_len, &t);
    if (rc != SUSPECT_OK) {
        return SUSPECT_E_INVAL; /* a file path longer than PATH_MAX */
    }
    if (t.unknown != NULL) {
        out->unknown = t.unknown;
        return SUSPECT_OK;
    }
    index = guard_target_expand(g, req, &t) ? g->conf->index_files : NULL;
    n = path_inputs(req, file, file_len, in);
    if (n == 0) {
        return SUSPECT_E_NOTFOUND;
    }
    /* Each output fits in its input's length + 2 (see the invariant);
     * each index reading in its directory's and its name's. */
    for (size_t i = 0; i < n; i++) {
        need += (in[i].alen + in[i].blen + 2) *
                (1 + (index != NULL ? SUSPECT_CONF_MAX_INDEX : 0));
    }
    need += index != NULL ? n * strlen(index) : 0;
    if (need > sizeof(out->stack)) {
        out->heap = suspect_malloc(need);
        if (out->heap == NULL) {
            return SUSPECT_E_NOMEM;
        }
    }
    rc = paths_fill(out, in, n, index,
                    out->heap != NULL ? out->heap : out->stack,
                    out->heap != NULL ? need : sizeof(out->stack));
    if (rc == SUSPECT_OK) {
        out->unknown = guard_target_check(g, req, out);
    }
    return rc;
}

/* Frees what guard_paths_build() allocated. */
void guard_paths_free(guard_paths_t *p)
{
    free(p->heap);
    p->heap = NULL;
    p->n = 0;
}
