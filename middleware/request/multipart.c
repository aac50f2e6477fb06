/*
 * multipart.c - the body of a multipart form, one event at a time
 * (multipart.h; the header grammar is multipart_head.c's).
 *
 * States, in body order:
 *   PREAMBLE  up to the first "--boundary" (D below) at a line start; its
 *             line end (CRLF or bare LF) sets the body's line end;
 *   HEAD      a part's delimiter line and header block, up to its empty
 *             line, read whole (at most MW_MP_HEAD_MAX bytes) by
 *             mp_head_read(), and consumed only then: a part's first
 *             byte is never consumed before the part is reported;
 *   CONTENT   a part's content up to the next D: skipped (files, parts
 *             that are no field, fields without values), consumed as it
 *             goes but for the last bytes a D could start in;
 *   VALUE     a field's content with values: nothing consumed until its
 *             D is found, then the field is reported;
 *   DELIM     D at the start: its line end starts the next part, "--"
 *             ends the body;
 *   EPILOGUE  after the closing delimiter, up to the end;
 *   END, REFUSED  for good.
 * Every occurrence of D is found with memmem() (overlapping ones too) and
 * must be a delimiter: at a line start (after CRLF, or a bare LF in a body
 * of bare LF lines), not the content's first byte, in CONTENT or VALUE,
 * followed by the line end or "--"; anywhere else the body is refused
 * (multipart.h says why).  So PHP's two readers, its lines (find_boundary)
 * and its values ("\n" D, multipart_buffer_read), both stop at exactly
 * these delimiters, whatever its settings make it read which way.
 *
 * Invariant for the incremental search: no D starts before scan_to (a
 * body offset); bytes are consumed only up to scan_to - 2, so the line
 * end before any D still to be found is in the caller's next buffer.  In
 * a bare LF body, no CR lies before cr_to.
 */
#include <string.h>

#include "multipart.h"
#include "multipart_internal.h"

enum {
    ST_PREAMBLE,
    ST_HEAD,
    ST_CONTENT,
    ST_VALUE,
    ST_DELIM,
    ST_EPILOGUE,
    ST_END,
    ST_REFUSED
};

#define EOL_LF   1
#define EOL_CRLF 2

void mw_mp_init(mw_mp_t *p, const char *boundary, size_t len, bool values)
{
    memset(p, 0, sizeof(*p));
    if (len > MW_MP_BOUNDARY_MAX) {
        len = MW_MP_BOUNDARY_MAX;
    }
    p->delim[0] = '-';
    p->delim[1] = '-';
    memcpy(p->delim + 2, boundary, len);
    p->dlen = len + 2;
    p->values = values;
    p->state = ST_PREAMBLE;
}

const char *mw_mp_why(const mw_mp_t *p)
{
    return p->state == ST_REFUSED ? p->why : NULL;
}

unsigned long long mw_mp_done_to(const mw_mp_t *p)
{
    return p->state == ST_HEAD || p->state == ST_VALUE ? p->start : p->off;
}

/* Refuses the body for good. */
static mw_mp_ev_t refuse(mw_mp_t *p, const char *why)
{
    p->state = ST_REFUSED;
    p->why = why;
    return MW_MP_REFUSE;
}

/* One state's step over b[0..n) (body offset base): the event, or -1 when
 * the state changed and the loop goes on; *k bytes consumed. */
typedef int step_fn(mw_mp_t *p, const char *b, size_t n,
                    unsigned long long base, bool at_end, size_t *k,
                    mw_mp_part_t *part);

/*
 * The first D in b[0..n) at or after scan_to, as a body offset in *at;
 * false when none, after moving scan_to past every position where one
 * can no longer start.  With crs (a bare LF body, or before the first
 * delimiter), *cr says whether a CR lies among the bytes searched.
 */
static bool find_delim(mw_mp_t *p, const char *b, size_t n,
                       unsigned long long base, bool crs,
                       unsigned long long *at, bool *cr)
{
    size_t from = p->scan_to > base ? (size_t)(p->scan_to - base) : 0;
    const char *d =
        from < n ? memmem(b + from, n - from, p->delim, p->dlen) : NULL;
    size_t upto = d != NULL ? (size_t)(d - b) : n;

    *cr = false;
    if (crs) {
        size_t c = p->cr_to > base ? (size_t)(p->cr_to - base) : 0;

        *cr = c < upto && memchr(b + c, '\r', upto - c) != NULL;
        if (upto > c) {
            p->cr_to = base + upto;
        }
    }
    if (d != NULL) {
        *at = base + (size_t)(d - b);
        p->scan_to = *at + 1; /* overlapping ones: after this one */
        return true;
    }
    if (n + 1 >= p->dlen && base + n + 1 - p->dlen > p->scan_to) {
        p->scan_to = base + n + 1 - p->dlen;
    }
    return false;
}

/* Bytes of b (offset base) that may be consumed while searching. */
static size_t consumable(const mw_mp_t *p, unsigned long long base)
{
    return p->scan_to >= base + 2 ? (size_t)(p->scan_to - 2 - base) : 0;
}

/* ---- before the first delimiter ----------------------------------------- */

static int st_preamble(mw_mp_t *p, const char *b, size_t n,
                       unsigned long long base, bool at_end, size_t *k,
                       mw_mp_part_t *part)
{
    unsigned long long at;
    bool cr;
    size_t i, rest;

    (void)part;
    if (!find_delim(p, b, n, base, true, &at, &cr)) {
        p->cr_seen |= cr;
        if (at_end) {
            p->state = ST_END;
            return MW_MP_END;
        }
        *k = consumable(p, base);
        return MW_MP_MORE;
    }
    p->cr_seen |= cr;
    i = (size_t)(at - base);
    if (at > 0 && b[i - 1] != '\n') {
        return refuse(p, "multipart boundary inside a line");
    }
    rest = n - i - p->dlen;
    if (rest < 2 && !at_end) {
        *k = i > 2 ? i - 2 : 0;
        p->scan_to = at; /* find it again next time */
        return MW_MP_MORE;
    }
    if (rest >= 2 && b[i + p->dlen] == '\r' && b[i + p->dlen + 1] == '\n') {
        p->eol = EOL_CRLF;
    } else if (rest >= 1 && b[i + p->dlen] == '\n') {
        if (p->cr_seen) {
            return refuse(p, "CR in a multipart body of bare LF lines");
        }
        p->eol = EOL_LF;
    } else {
        return refuse(p, "first multipart boundary not a delimiter line");
    }
    *k = i; /* the delimiter line goes with its part's headers */
    p->head_off = p->dlen + (size_t)p->eol;
    p->start = at;
    p->head_scan = 0;
    p->state = ST_HEAD;
    return -1;
}

/* ---- a part's headers --------------------------------------------------- */

/* The length of the header block at b (its empty line included), or 0
 * when it is not all in b[0..n) yet (head_scan remembers how far it was
 * searched). */
static size_t head_end(mw_mp_t *p, const char *b, size_t n)
{
    size_t i = p->head_scan;

    while (i < n) {
        const char *nl;

        /* i starts a line: is it empty? */
        if (b[i] == '\n') {
            return i + 1;
        }
        if (b[i] == '\r' && i + 1 < n && b[i + 1] == '\n') {
            return i + 2;
        }
        if (b[i] == '\r' && i + 1 == n) {
            break;
        }
        nl = memchr(b + i, '\n', n - i);
        if (nl == NULL) {
            break;
        }
        i = (size_t)(nl - b) + 1;
    }
    p->head_scan = i;
    return 0;
}

/* b starts with the part's delimiter line (head_off bytes), then its
 * header block. */
static int st_head(mw_mp_t *p, const char *b, size_t n, unsigned long long base,
                   bool at_end, size_t *k, mw_mp_part_t *part)
{
    const char *hb = b + p->head_off;
    size_t hn = n - p->head_off;
    size_t blk = head_end(p, hb, hn > MW_MP_HEAD_MAX ? MW_MP_HEAD_MAX : hn);
    mp_head_t h;
    const char *why;

    if (blk == 0) {
        if (hn >= MW_MP_HEAD_MAX) {
            return refuse(p, "multipart part headers over 8 KiB");
        }
        return at_end ? refuse(p, "multipart body cut in a part's headers")
                      : MW_MP_MORE;
    }
    if (memmem(hb, blk, p->delim, p->dlen) != NULL) {
        return refuse(p, "multipart boundary inside a part's headers");
    }
    if (p->eol == EOL_LF && memchr(hb, '\r', blk) != NULL) {
        return refuse(p, "CR in a multipart body of bare LF lines");
    }
    if (mp_head_read(hb, blk, p->eol == EOL_CRLF, &h, &why) != SUSPECT_OK) {
        return refuse(p, why);
    }
    blk += p->head_off;
    p->content = base + blk;
    p->scan_to = p->content;
    p->cr_to = p->content;
    part->start = p->start;
    part->name = h.has_name ? hb + h.name_off : NULL;
    part->name_len = h.has_name ? h.name_len : 0;
    part->value = NULL;
    part->value_len = 0;
    if (h.kind == MP_FIELD && p->values) {
        p->head_len = blk;
        p->name_off = p->head_off + h.name_off;
        p->name_len = h.name_len;
        p->state = ST_VALUE;
        return -1;
    }
    *k = blk;
    p->state = ST_CONTENT;
    return h.kind == MP_FIELD  ? MW_MP_FIELD
           : h.kind == MP_FILE ? MW_MP_FILE
                               : -1;
}

/* ---- contents ----------------------------------------------------------- */

/* Whether the D at body offset at (b's offset base) ends the current
 * part's content: NULL, or why the body is refused. */
static const char *delim_check(const mw_mp_t *p, const char *b,
                               unsigned long long base, unsigned long long at)
{
    unsigned long long rel = at - p->content;
    size_t i = (size_t)(at - base);

    if (p->eol == EOL_CRLF) {
        if (rel >= 2 && b[i - 1] == '\n' && b[i - 2] == '\r') {
            return NULL;
        }
        return rel >= 1 && b[i - 1] == '\n'
                   ? "bare LF in a multipart body of CRLF lines"
                   : "multipart boundary inside a part";
    }
    return rel >= 1 && b[i - 1] == '\n' ? NULL
                                        : "multipart boundary inside a part";
}

static int st_content(mw_mp_t *p, const char *b, size_t n,
                      unsigned long long base, bool at_end, size_t *k,
                      mw_mp_part_t *part)
{
    size_t skip = p->state == ST_VALUE ? p->head_len : 0;
    unsigned long long at;
    const char *why;
    bool cr;

    if (!find_delim(p, b + skip, n - skip, base + skip, p->eol == EOL_LF, &at,
                    &cr)) {
        if (cr) {
            return refuse(p, "CR in a multipart body of bare LF lines");
        }
        if (at_end) {
            return refuse(p, "multipart body without its closing boundary");
        }
        *k = p->state == ST_VALUE ? 0 : consumable(p, base);
        return MW_MP_MORE;
    }
    why = cr ? "CR in a multipart body of bare LF lines"
             : delim_check(p, b, base, at);
    if (why != NULL) {
        return refuse(p, why);
    }
    *k = (size_t)(at - base);
    if (p->state == ST_CONTENT) {
        p->state = ST_DELIM;
        return -1;
    }
    p->state = ST_DELIM;
    part->start = p->start;
    part->name = b + p->name_off;
    part->name_len = p->name_len;
    part->value = b + p->head_len;
    part->value_len = (size_t)(at - p->content) - (size_t)p->eol;
    return MW_MP_FIELD;
}

/* ---- delimiters and the end --------------------------------------------- */

static int st_delim(mw_mp_t *p, const char *b, size_t n,
                    unsigned long long base, bool at_end, size_t *k,
                    mw_mp_part_t *part)
{
    const char *e = b + p->dlen;
    size_t rest = n - p->dlen;

    (void)part;
    if (rest < 2 && !at_end) {
        return MW_MP_MORE;
    }
    if (rest >= 2 && e[0] == '-' && e[1] == '-') {
        *k = p->dlen + 2;
        p->scan_to = base + *k;
        p->cr_to = p->scan_to;
        p->state = ST_EPILOGUE;
        return -1;
    }
    if ((p->eol == EOL_CRLF && rest >= 2 && e[0] == '\r' && e[1] == '\n') ||
        (p->eol == EOL_LF && rest >= 1 && e[0] == '\n')) {
        p->head_off = p->dlen + (size_t)p->eol; /* kept with the headers */
        p->start = base;
        p->head_scan = 0;
        p->state = ST_HEAD;
        return -1;
    }
    return refuse(p, "multipart boundary not alone on its line");
}

static int st_epilogue(mw_mp_t *p, const char *b, size_t n,
                       unsigned long long base, bool at_end, size_t *k,
                       mw_mp_part_t *part)
{
    unsigned long long at;
    bool cr;

    (void)part;
    if (find_delim(p, b, n, base, p->eol == EOL_LF, &at, &cr)) {
        return refuse(p, "multipart boundary after the closing one");
    }
    if (cr) {
        return refuse(p, "CR in a multipart body of bare LF lines");
    }
    if (at_end) {
        p->state = ST_END;
        return MW_MP_END;
    }
    *k = consumable(p, base);
    return MW_MP_MORE;
}

/* The next event: see multipart.h. */
mw_mp_ev_t mw_mp_next(mw_mp_t *p, const char *buf, size_t len, bool at_end,
                      size_t *used, mw_mp_part_t *part)
{
    static step_fn *const steps[] = {st_preamble, st_head,  st_content,
                                     st_content,  st_delim, st_epilogue};
    size_t pos = 0;
    int ev = -1;

    while (ev < 0 && p->state < ST_END) {
        size_t k = 0;

        ev = steps[p->state](p, buf + pos, len - pos, p->off + pos, at_end, &k,
                             part);
        pos += k;
    }
    if (ev < 0) {
        ev = p->state == ST_END ? MW_MP_END : MW_MP_REFUSE;
    }
    p->off += pos;
    *used = pos;
    return (mw_mp_ev_t)ev;
}
