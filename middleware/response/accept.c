/*
 * accept.c - content negotiation for Suspect's own responses: which body
 * kind (HTML, problem JSON, plain JSON) an Accept header asks for.
 *
 * The header is a comma-separated list of media ranges with optional
 * parameters; only q matters here.  Each range is weighed against the
 * three kinds: specificity 3 for type/subtype, 2 for type/ *, 1 for * / *;
 * a kind keeps the q of its most specific matching range (RFC 9110 12.5.1)
 * and the position of that range.  Malformed ranges and bad qvalues are
 * skipped, never an error: a client's odd header only gets it the HTML
 * page.  Pure (no allocation, no I/O); reads exactly len bytes.
 */
#include "accept.h"

#include <stdbool.h>
#include <string.h>
#include <strings.h>

/* One body kind's weight: q in thousandths, the range's specificity and
 * its position in the header. */
typedef struct weight {
    int q;
    int spec;
    size_t pos;
} weight_t;

static bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

static void trim(const char **p, const char **e)
{
    while (*p < *e && is_ows(**p)) {
        (*p)++;
    }
    while (*e > *p && is_ows((*e)[-1])) {
        (*e)--;
    }
}

/* Parses an RFC 9110 qvalue into thousandths; -1 when malformed. */
static int parse_q(const char *p, const char *e)
{
    int q;
    int scale = 100;

    if (p == e || (*p != '0' && *p != '1')) {
        return -1;
    }
    q = (*p - '0') * 1000;
    p++;
    if (p == e) {
        return q;
    }
    if (*p != '.' || e - p > 4) {
        return -1;
    }
    for (p++; p < e; p++, scale /= 10) {
        if (*p < '0' || *p > '9') {
            return -1;
        }
        q += (*p - '0') * scale;
    }
    return q > 1000 ? -1 : q;
}

/* The q of the parameters [p, e) of one media range; -1 when malformed. */
static int range_q(const char *p, const char *e)
{
    int q = 1000;

    while (p < e) {
        const char *pe = memchr(p, ';', (size_t)(e - p));
        const char *ke = pe != NULL ? pe : e;
        const char *eq = memchr(p, '=', (size_t)(ke - p));
        const char *k = p;
        const char *kend = eq != NULL ? eq : ke;

        trim(&k, &kend);
        if (kend - k == 1 && (*k == 'q' || *k == 'Q')) {
            const char *v = eq != NULL ? eq + 1 : ke;
            const char *vend = ke;
            trim(&v, &vend);
            q = parse_q(v, vend);
            if (q < 0) {
                return -1;
            }
        }
        p = pe != NULL ? pe + 1 : e;
    }
    return q;
}

static bool token_is(const char *p, const char *e, const char *lit)
{
    return (size_t)(e - p) == strlen(lit) &&
           strncasecmp(p, lit, strlen(lit)) == 0;
}

/* How specifically the range type/sub matches type_/sub_: 0 = not at all. */
static int match_spec(const char *t, const char *te, const char *s,
                      const char *se, const char *type_, const char *sub_)
{
    if (token_is(t, te, "*") && token_is(s, se, "*")) {
        return 1;
    }
    if (!token_is(t, te, type_)) {
        return 0;
    }
    if (token_is(s, se, "*")) {
        return 2;
    }
    return token_is(s, se, sub_) ? 3 : 0;
}

static const struct {
    const char *type;
    const char *sub;
} kinds[3] = {
    {"text", "html"},
    {"application", "problem+json"},
    {"application", "json"},
};

/* Weighs one media range [p, e) at position pos for the three kinds. */
static void weigh_range(const char *p, const char *e, size_t pos, weight_t w[3])
{
    const char *semi = memchr(p, ';', (size_t)(e - p));
    const char *me = semi != NULL ? semi : e;
    const char *slash;
    int q;

    trim(&p, &me);
    slash = memchr(p, '/', (size_t)(me - p));
    if (slash == NULL || slash == p || slash + 1 == me) {
        return;
    }
    q = semi != NULL ? range_q(semi + 1, e) : 1000;
    if (q < 0) {
        return;
    }
    for (int k = 0; k < 3; k++) {
        int spec =
            match_spec(p, slash, slash + 1, me, kinds[k].type, kinds[k].sub);
        if (spec > w[k].spec) {
            w[k].q = q;
            w[k].spec = spec;
            w[k].pos = pos;
        }
    }
}

/* True when a beats b: a higher q, or the same q from an earlier range. */
static bool prefer(const weight_t *a, const weight_t *b)
{
    return a->q > b->q || (a->q == b->q && a->spec > 0 && a->pos < b->pos);
}

mw_body_kind_t mw_accept_choose(const char *accept, size_t len)
{
    weight_t w[3] = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
    const char *p = accept;
    const char *end;
    size_t pos = 0;
    int json;

    if (accept == NULL) {
        return MW_BODY_HTML;
    }
    end = accept + len;
    while (p < end) {
        const char *c = memchr(p, ',', (size_t)(end - p));
        const char *e = c != NULL ? c : end;
        weigh_range(p, e, pos++, w);
        p = c != NULL ? c + 1 : end;
    }
    json = prefer(&w[MW_BODY_JSON], &w[MW_BODY_PROBLEM]) ? MW_BODY_JSON
                                                         : MW_BODY_PROBLEM;
    if (w[json].q > 0 && prefer(&w[json], &w[MW_BODY_HTML])) {
        return (mw_body_kind_t)json;
    }
    return MW_BODY_HTML;
}
