/*
 * outcome.c - the response watcher (outcome.h).
 *
 * Headers.  Bytes go into head until the empty line that ends the CGI
 * header block (LF or CRLF line ends, as cgi_io.c accepts them); then the
 * block is parsed once: "Status:" and "Location:", names in any case,
 * values trimmed.  A block longer than MW_OUTCOME_HEAD_MAX is dropped and
 * the response judged UNKNOWN (it counts).
 *
 * Body.  After the block, the first `want` bytes are copied into a buffer
 * of that size; a text is searched there with memmem() when the outcome
 * is asked for, so a text split across two writes is found.
 *
 * Blind bodies.  A body text can only be searched in a body that holds
 * the text as the application wrote it.  HEAD asks for no body (PHP runs
 * the whole script, checks the password, and sends none), 204 and 304
 * have none, and a Content-Encoding other than identity (ob_gzhandler's
 * gzip when the client sends Accept-Encoding) hides it: the watcher notes
 * why (w->blind) and a pattern with a text is then undecided, never "no
 * match", however complete the response.  The forwarders keep the
 * client's Accept-Encoding from such routes (mw_req_t.plain_body), so a
 * legitimate client meets this only from an application that compresses
 * unasked.
 *
 * Judging.  One pattern matches when its statuses hold the status, the
 * Location names its location (location.c: the value parsed as a URI
 * reference, its path resolved and compared, an absolute URL only on the
 * site's own host for a <Success>, so "/login?failed=1&return=http://x/
 * account" never reads as "/account"), a header it names is there (and
 * holds its text: every line of that name is looked at), and its body
 * text is among the body bytes kept.  A pattern is undecided when the Location
 * cannot be read one way only, when it has a text that was not found and fewer
 * than its `within` bytes came from a response that was cut, or when it has a
 * text and the body is blind.
 * <Failure> routes: FAILED when a pattern matches, SUCCEEDED when every
 * pattern is decided and none matches.  <Success> routes: SUCCEEDED when
 * a pattern matches, FAILED when every pattern is decided and none
 * matches.  Anything else is UNKNOWN, which the caller counts: an
 * attacker never gains by cutting a response, nor by asking for a body
 * the text cannot be found in.
 *
 * Cost: a copy of the header block and of at most `want` body bytes per
 * request of such a route, one parse, one search per pattern; with a
 * text, one more scan of the block for Content-Encoding.
 */
#include "outcome.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "alloc.h"
#include "location.h"

bool mw_outcome_reads_body(const suspect_conf_route_t *route)
{
    for (size_t i = 0; i < route->noutcomes; i++) {
        if (route->outcomes[i].body != NULL) {
            return true;
        }
    }
    return false;
}

bool mw_watch_init(mw_watch_t *w, const suspect_conf_route_t *route,
                   const char *method, const char *host, const char *base)
{
    memset(w, 0, offsetof(mw_watch_t, head));
    w->route = route;
    w->host = host;
    w->base = base;
    for (size_t i = 0; i < route->noutcomes; i++) {
        const suspect_conf_outcome_t *o = &route->outcomes[i];

        if (o->body != NULL && o->within > w->want) {
            w->want = o->within;
        }
    }
    if (w->want > 0 && method != NULL && strcmp(method, "HEAD") == 0) {
        w->blind = "a HEAD request has no body";
    }
    if (w->want > 0) {
        w->body = suspect_malloc(w->want);
        return w->body != NULL;
    }
    return true;
}

void mw_watch_free(mw_watch_t *w)
{
    free(w->body);
    w->body = NULL;
}

/* The value of header name in the block head[0..len), trimmed. */
static const char *header_value(const char *head, size_t len, const char *name,
                                size_t *vlen)
{
    size_t nlen = strlen(name);
    const char *p = head, *end = head + len;

    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *line_end = eol != NULL ? eol : end;

        if ((size_t)(line_end - p) > nlen && p[nlen] == ':' &&
            strncasecmp(p, name, nlen) == 0) {
            const char *v = p + nlen + 1;

            while (v < line_end && (*v == ' ' || *v == '\t')) {
                v++;
            }
            while (line_end > v &&
                   (line_end[-1] == '\r' || line_end[-1] == ' ' ||
                    line_end[-1] == '\t')) {
                line_end--;
            }
            *vlen = (size_t)(line_end - v);
            return v;
        }
        p = line_end + 1;
    }
    return NULL;
}

/* Whether a Content-Encoding line of the block says other than identity
 * (every line is looked at: a second one would apply on top). */
static bool encoded(const char *head, size_t len)
{
    const char *p = head, *v;
    size_t n;

    while ((v = header_value(p, len - (size_t)(p - head), "Content-Encoding",
                             &n)) != NULL) {
        if (n > 0 && !(n == 8 && strncasecmp(v, "identity", 8) == 0)) {
            return true;
        }
        p = v + n;
    }
    return false;
}

/* Parses the finished header block. */
static void head_parse(mw_watch_t *w)
{
    size_t n = 0;
    const char *st = header_value(w->head, w->head_len, "Status", &n);

    w->location =
        header_value(w->head, w->head_len, "Location", &w->location_len);
    if (st != NULL && n >= 3 && st[0] >= '1' && st[0] <= '5' && st[1] >= '0' &&
        st[1] <= '9' && st[2] >= '0' && st[2] <= '9') {
        w->status = (st[0] - '0') * 100 + (st[1] - '0') * 10 + (st[2] - '0');
    } else {
        w->status = w->location != NULL ? 302 : 200;
    }
    if (w->blind != NULL || w->want == 0) {
        return; /* already blind, or no text to search */
    }
    if (w->status == 204 || w->status == 304) {
        w->blind = "a 204 or 304 response has no body";
    } else if (encoded(w->head, w->head_len)) {
        w->blind = "the body is encoded (Content-Encoding)";
    }
}

/* Scans header bytes; returns how many of p[0..n) belong to the block. */
static size_t head_feed(mw_watch_t *w, const char *p, size_t n)
{
    size_t i;

    for (i = 0; i < n && !w->head_done; i++) {
        char c = p[i];

        if (w->head_len < sizeof(w->head)) {
            w->head[w->head_len++] = c;
        } else {
            w->head_overflow = true;
        }
        if (c == '\n') {
            w->head_done = w->state != 2;
            w->state = 0;
        } else if (c == '\r' && w->state == 0) {
            w->state = 1;
        } else {
            w->state = 2;
        }
    }
    if (w->head_done && !w->head_overflow) {
        head_parse(w);
    }
    return i;
}

void mw_watch_feed(void *arg, const void *buf, size_t n)
{
    mw_watch_t *w = arg;
    const char *p = buf;
    size_t used = 0;

    if (!w->head_done) {
        used = head_feed(w, p, n);
    }
    if (w->head_done && used < n && w->body_len < w->want) {
        size_t take = n - used;

        take = take < w->want - w->body_len ? take : w->want - w->body_len;
        memcpy(w->body + w->body_len, p + used, take);
        w->body_len += take;
    }
}

/* Whether a header line named name holds text (NULL: is there at all);
 * every line of that name is looked at (Set-Cookie comes many times). */
static bool header_holds(const mw_watch_t *w, const char *name,
                         const char *text)
{
    const char *p = w->head, *v;
    size_t len = w->head_len, n;

    while ((v = header_value(p, len - (size_t)(p - w->head), name, &n)) !=
           NULL) {
        if (text == NULL || memmem(v, n, text, strlen(text)) != NULL) {
            return true;
        }
        p = v + n;
    }
    return false;
}

/* 1 when the Location names o's location, 0 when it does not (or there
 * is none), -1 when it cannot be told (location.c). */
static int location_matches(const mw_watch_t *w,
                            const suspect_conf_outcome_t *o)
{
    mw_location_ctx_t ctx = {w->host, o->hosts, w->base,
                             w->route->count == SUSPECT_COUNT_FAILURES};

    if (w->location == NULL) {
        return 0;
    }
    return mw_location_match(w->location, w->location_len, o->location, &ctx);
}

/* 1 when o matches, 0 when it does not, -1 when it cannot tell, -2 when
 * the Location cannot be read. */
static int pattern_matches(const mw_watch_t *w, const suspect_conf_outcome_t *o,
                           bool complete)
{
    bool status_ok = o->nstatus == 0;
    int loc = 1;
    size_t len;

    for (size_t i = 0; i < o->nstatus; i++) {
        status_ok |= o->status[i] == w->status;
    }
    if (o->location != NULL) {
        loc = location_matches(w, o);
    }
    if (!status_ok || loc == 0 ||
        (o->header != NULL && !header_holds(w, o->header, o->header_text))) {
        return 0;
    }
    if (loc < 0) {
        return -2;
    }
    if (o->body == NULL) {
        return 1;
    }
    if (w->blind != NULL) {
        return -1;
    }
    len = w->body_len < o->within ? w->body_len : o->within;
    if (memmem(w->body, len, o->body, strlen(o->body)) != NULL) {
        return 1;
    }
    return complete || len >= o->within ? 0 : -1;
}

mw_outcome_t mw_watch_outcome(const mw_watch_t *w, bool complete,
                              const char **why)
{
    bool failures = w->route->count == SUSPECT_COUNT_FAILURES;
    bool undecided = false, unread = false;
    const char *unused;

    why = why != NULL ? why : &unused;
    *why = NULL;
    if (!w->head_done || w->head_overflow) {
        *why = w->head_done ? "headers longer than 8 KiB"
                            : "the headers never ended";
        return MW_OUTCOME_UNKNOWN;
    }
    for (size_t i = 0; i < w->route->noutcomes; i++) {
        int m = pattern_matches(w, &w->route->outcomes[i], complete);

        if (m == 1) {
            return failures ? MW_OUTCOME_FAILED : MW_OUTCOME_SUCCEEDED;
        }
        undecided |= m < 0;
        unread |= m == -2;
    }
    if (undecided) {
        *why = unread             ? "a Location that cannot be read"
               : w->blind != NULL ? w->blind
                                  : "cut before a text's bound";
        return MW_OUTCOME_UNKNOWN;
    }
    return failures ? MW_OUTCOME_SUCCEEDED : MW_OUTCOME_FAILED;
}

const char *mw_outcome_name(mw_outcome_t o)
{
    switch (o) {
    case MW_OUTCOME_FAILED:
        return "failed";
    case MW_OUTCOME_SUCCEEDED:
        return "succeeded";
    default:
        return "unknown";
    }
}
