/*
 * deny.c - denial and fail-closed responses.
 *
 * A response is rendered by small writers into an out_t that, like
 * snprintf(), keeps counting after the buffer is full.  The body is
 * rendered twice: once into a counting-only out_t for Content-Length, then
 * for real after the header lines.  Every value inserted into a body is
 * escaped for its context (JSON string, HTML text, sf-string), numbers are
 * printed by us, and header values never come from the request, so no
 * input can inject a header or markup.
 *
 * The numbers: Retry-After = ceil(retry_after_ms / 1000), at least 1;
 * RateLimit t = ceil((restriction_end_ms - now_ms) / 1000), at least 1 (or
 * Retry-After when the end is not after now).  The HTML countdown runs to
 * restrictionEndTime but measures from the page's own load time (end - now
 * from the server), so a client whose clock is off still counts right,
 * and ends by offering to try again; the page names no action (a
 * template may, with {action}).
 */
#include "deny.h"
#include "text.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Longer waits are written as this (ten years), so no sum overflows. */
#define RETRY_MS_MAX (10LL * 366 * 86400 * 1000)

/* A bounded writer that counts past its end. */
typedef struct out {
    char *buf;
    size_t size;
    size_t len;
} out_t;

/* The values a response is made of. */
typedef struct facts {
    int status;
    const char *title;
    const char *action; /* NULL: none */
    int64_t now_ms;
    int64_t retry_s;
    int64_t retry_ms;
    int64_t end_ms;
    int64_t reset_s;
    uint32_t limit;
    uint32_t window_s;
    uint32_t remaining;
    uint32_t burst; /* a token bucket's capacity, 0 = not a bucket */
    bool ratelimit; /* RateLimit headers (denials, not 503) */
} facts_t;

static void put(out_t *o, const char *s, size_t n)
{
    if (o->len < o->size) {
        size_t room = o->size - o->len;
        memcpy(o->buf + o->len, s, n < room ? n : room);
    }
    o->len += n;
}

static void put_str(out_t *o, const char *s)
{
    put(o, s, strlen(s));
}

static void put_i64(out_t *o, int64_t v)
{
    char num[24];
    int n = snprintf(num, sizeof(num), "%" PRId64, v);

    put(o, num, (size_t)n);
}

/* s as a JSON string, quotes included. */
static void put_json(out_t *o, const char *s)
{
    put(o, "\"", 1);
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            put(o, esc, 2);
        } else if (c < 0x20 || c == '<' || c == '>' || c == '&') {
            char esc[6] = {
                '\\', 'u', '0', '0', hex_lower[c >> 4], hex_lower[c & 15]};
            put(o, esc, 6);
        } else {
            put(o, s, 1);
        }
    }
    put(o, "\"", 1);
}

/* s (n bytes) as HTML text or attribute content. */
static void put_html(out_t *o, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        switch (s[i]) {
        case '&':
            put_str(o, "&amp;");
            break;
        case '<':
            put_str(o, "&lt;");
            break;
        case '>':
            put_str(o, "&gt;");
            break;
        case '"':
            put_str(o, "&quot;");
            break;
        case '\'':
            put_str(o, "&#39;");
            break;
        default:
            put(o, s + i, 1);
        }
    }
}

/* s as an RFC 8941 sf-string: '"' and '\' escaped, other bytes outside
 * printable ASCII (never in a valid action name) written as '?'. */
static void put_sf_string(out_t *o, const char *s)
{
    put(o, "\"", 1);
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            char esc[2] = {'\\', (char)c};
            put(o, esc, 2);
        } else {
            put(o, c >= 0x20 && c < 0x7f ? s : "?", 1);
        }
    }
    put(o, "\"", 1);
}

static int64_t ceil_s(int64_t ms)
{
    return ms / 1000 + (ms % 1000 != 0);
}

/* ---- reason phrases ----------------------------------------------------- */

static const struct {
    int status;
    const char *reason;
} reasons[] = {
    {400, "Bad Request"},
    {401, "Unauthorized"},
    {403, "Forbidden"},
    {404, "Not Found"},
    {409, "Conflict"},
    {413, "Content Too Large"},
    {415, "Unsupported Media Type"},
    {423, "Locked"},
    {429, "Too Many Requests"},
    {431, "Request Header Fields Too Large"},
    {500, "Internal Server Error"},
    {502, "Bad Gateway"},
    {503, "Service Unavailable"},
    {504, "Gateway Timeout"},
};

const char *mw_status_reason(int status)
{
    for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++) {
        if (reasons[i].status == status) {
            return reasons[i].reason;
        }
    }
    return status >= 500 ? "Server Error" : "Client Error";
}

/* ---- bodies ------------------------------------------------------------- */

static void body_json(out_t *o, const facts_t *f)
{
    char detail[160];

    snprintf(detail, sizeof(detail),
             f->ratelimit ? "Too many requests for this action; retry after "
                            "%" PRId64 " second%s."
                          : "The service cannot decide on this request now; "
                            "retry after %" PRId64 " second%s.",
             f->retry_s, f->retry_s == 1 ? "" : "s");
    put_str(o, "{\"type\":\"about:blank\",\"title\":");
    put_json(o, f->title);
    put_str(o, ",\"status\":");
    put_i64(o, f->status);
    put_str(o, ",\"detail\":");
    put_json(o, detail);
    if (f->action != NULL) {
        put_str(o, ",\"action\":");
        put_json(o, f->action);
    }
    put_str(o, ",\"restrictionEndTime\":");
    put_i64(o, f->end_ms);
    put_str(o, ",\"retryAfterMs\":");
    put_i64(o, f->retry_ms);
    put_str(o, "}\n");
}

/* The page's look: inline (nothing is fetched), readable on a phone. */
static const char html_style[] =
    "<style>\n"
    "body{margin:0;min-height:100vh;display:flex;align-items:center;"
    "justify-content:center;background:#f3f4f6;color:#1f2937;"
    "font:16px/1.5 system-ui,-apple-system,\"Segoe UI\",Roboto,sans-serif}\n"
    "main{max-width:28rem;margin:1.5rem;padding:2rem 2.25rem;"
    "background:#fff;border-radius:12px;"
    "box-shadow:0 1px 3px rgba(0,0,0,.12),0 8px 24px rgba(0,0,0,.06)}\n"
    "h1{margin:0 0 .75rem;font-size:1.4rem;line-height:1.25}\n"
    "p{margin:.5rem 0}\n"
    "#wait{font-weight:600;font-variant-numeric:tabular-nums}\n"
    "button{margin-top:1rem;padding:.6rem 1.3rem;font:inherit;color:#fff;"
    "background:#2563eb;border:0;border-radius:8px;cursor:pointer}\n"
    "button:hover,button:focus{background:#1d4ed8}\n"
    "[hidden]{display:none}\n"
    "</style>\n";

/* The countdown: from the page's own load to the end, then the offer to
 * try again (a reload: the same request, a form's too). */
static const char html_script[] =
    "    var wait = document.getElementById(\"wait\");\n"
    "    var unit = document.getElementById(\"unit\");\n"
    "    var again = document.getElementById(\"again\");\n"
    "    again.onclick = function () { location.reload(); };\n"
    "    function tick() {\n"
    "        var s = Math.ceil((end - Date.now()) / 1000);\n"
    "        if (s > 0) {\n"
    "            wait.textContent = s;\n"
    "            unit.textContent = s === 1 ? \"second\" : \"seconds\";\n"
    "            setTimeout(tick, 1000);\n"
    "            return;\n"
    "        }\n"
    "        document.getElementById(\"later\").hidden = true;\n"
    "        document.getElementById(\"now\").hidden = false;\n"
    "        again.hidden = false;\n"
    "        again.focus();\n"
    "    }\n"
    "    tick();\n";

/* The built-in page for a person: what happened, how long to wait, a
 * countdown that ends by offering to try again.  No action name (it is
 * the operator's, not the visitor's; a template may show it). */
static void body_html(out_t *o, const facts_t *f)
{
    put_str(o, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
               "<meta charset=\"utf-8\">\n"
               "<meta name=\"viewport\" content=\"width=device-width, "
               "initial-scale=1\">\n"
               "<meta name=\"robots\" content=\"noindex\">\n<title>");
    put_i64(o, f->status);
    put_str(o, " ");
    put_html(o, f->title, strlen(f->title));
    put_str(o, "</title>\n");
    put_str(o, html_style);
    put_str(o, "</head>\n<body>\n<main>\n<h1>");
    put_str(o, f->ratelimit ? "Too many attempts" : "This service is busy");
    put_str(o, "</h1>\n<p>");
    put_str(o, f->ratelimit
                   ? "This was tried too often in a short time, so it is "
                     "paused for a moment."
                   : "It cannot take this request right now.");
    put_str(o, "</p>\n<p id=\"later\">Please try again in "
               "<span id=\"wait\">");
    put_i64(o, f->retry_s);
    put_str(o, "</span> <span id=\"unit\">");
    put_str(o, f->retry_s == 1 ? "second" : "seconds");
    put_str(o, "</span>.</p>\n"
               "<p id=\"now\" hidden>You can try again now.</p>\n"
               "<button id=\"again\" type=\"button\" hidden>Try "
               "again</button>\n</main>\n<script>\n(function () {\n"
               "    var end = ");
    put_i64(o, f->end_ms);
    put_str(o, " + (Date.now() - ");
    put_i64(o, f->now_ms);
    put_str(o, ");\n");
    put_str(o, html_script);
    put_str(o, "})();\n</script>\n</body>\n</html>\n");
}

/* True when [p, e) is exactly lit (placeholders are case-sensitive). */
static bool placeholder_is(const char *p, const char *e, const char *lit)
{
    return (size_t)(e - p) == strlen(lit) && memcmp(p, lit, strlen(lit)) == 0;
}

/* Writes the value of placeholder [p, e) HTML-escaped; false if unknown. */
static bool put_placeholder(out_t *o, const facts_t *f, const char *p,
                            const char *e)
{
    char num[24];
    int64_t v;

    if (placeholder_is(p, e, "action")) {
        const char *a = f->action != NULL ? f->action : "";
        put_html(o, a, strlen(a));
        return true;
    }
    if (placeholder_is(p, e, "retry_after")) {
        v = f->retry_s;
    } else if (placeholder_is(p, e, "retry_after_ms")) {
        v = f->retry_ms;
    } else if (placeholder_is(p, e, "restriction_end")) {
        v = f->end_ms;
    } else if (placeholder_is(p, e, "limit")) {
        v = f->limit;
    } else if (placeholder_is(p, e, "window")) {
        v = f->window_s;
    } else if (placeholder_is(p, e, "status")) {
        v = f->status;
    } else {
        return false;
    }
    snprintf(num, sizeof(num), "%" PRId64, v);
    put_html(o, num, strlen(num));
    return true;
}

static void body_template(out_t *o, const facts_t *f, const char *t, size_t len)
{
    const char *end = t + len;

    while (t < end) {
        const char *open = memchr(t, '{', (size_t)(end - t));
        const char *close;

        if (open == NULL) {
            put(o, t, (size_t)(end - t));
            return;
        }
        put(o, t, (size_t)(open - t));
        close = memchr(open, '}', (size_t)(end - open));
        if (close != NULL && close - open <= 16 &&
            put_placeholder(o, f, open + 1, close)) {
            t = close + 1;
        } else {
            put(o, "{", 1);
            t = open + 1;
        }
    }
}

static void render_body(out_t *o, const facts_t *f, const mw_deny_t *d,
                        mw_body_kind_t kind)
{
    if (kind != MW_BODY_HTML) {
        body_json(o, f);
    } else if (d->tmpl != NULL) {
        body_template(o, f, d->tmpl, d->tmpl_len);
    } else {
        body_html(o, f);
    }
}

/* ---- responses ---------------------------------------------------------- */

static const char *content_type(const mw_deny_t *d, mw_body_kind_t kind)
{
    if (kind == MW_BODY_PROBLEM) {
        return "application/problem+json";
    }
    if (kind == MW_BODY_JSON) {
        return "application/json";
    }
    if (d->tmpl != NULL && d->tmpl_type != NULL) {
        return d->tmpl_type;
    }
    return "text/html; charset=utf-8";
}

/* True when s can be a header value: printable ASCII and tabs. */
static bool header_safe(const char *s)
{
    for (; *s != '\0'; s++) {
        if (((unsigned char)*s < 0x20 && *s != '\t') || *s == 0x7f) {
            return false;
        }
    }
    return true;
}

static void put_header_num(out_t *o, const char *name, int64_t v)
{
    put_str(o, name);
    put_i64(o, v);
    put_str(o, "\r\n");
}

static void put_ratelimit(out_t *o, const facts_t *f)
{
    put_str(o, "RateLimit-Policy: ");
    put_sf_string(o, f->action);
    put_str(o, ";q=");
    put_i64(o, f->limit);
    put_str(o, ";w=");
    put_i64(o, f->window_s);
    if (f->burst != 0) {
        /* a token bucket: q tokens come back per w, burst at most */
        put_str(o, ";burst=");
        put_i64(o, f->burst);
    }
    put_str(o, "\r\nRateLimit: ");
    put_sf_string(o, f->action);
    put_str(o, ";r=");
    put_i64(o, f->remaining);
    put_str(o, ";t=");
    put_i64(o, f->reset_s);
    put_str(o, "\r\n");
}

static suspect_rc_t render(const mw_deny_t *d, const facts_t *f, char *buf,
                           size_t size, size_t *len)
{
    mw_body_kind_t kind = mw_accept_choose(d->accept, d->accept_len);
    out_t body = {NULL, 0, 0};
    out_t o = {buf, size, 0};

    if (buf == NULL && size > 0) {
        return SUSPECT_E_INVAL;
    }
    if (kind == MW_BODY_HTML && d->tmpl != NULL && d->tmpl_type != NULL &&
        !header_safe(d->tmpl_type)) {
        return SUSPECT_E_INVAL;
    }
    render_body(&body, f, d, kind);
    put_str(&o, "Status: ");
    put_i64(&o, f->status);
    put_str(&o, " ");
    put_str(&o, f->title);
    put_str(&o, "\r\n");
    put_header_num(&o, "Retry-After: ", f->retry_s);
    if (f->ratelimit) {
        put_ratelimit(&o, f);
    }
    put_str(&o, "Cache-Control: no-store\r\nContent-Type: ");
    put_str(&o, content_type(d, kind));
    put_str(&o, "\r\n");
    put_header_num(&o, "Content-Length: ", (int64_t)body.len);
    put_str(&o, "\r\n");
    render_body(&o, f, d, kind);
    *len = o.len;
    if (o.len < size) {
        buf[o.len] = '\0';
        return SUSPECT_OK;
    }
    if (size > 0) {
        buf[size - 1] = '\0';
    }
    return SUSPECT_E_FULL;
}

static bool action_ok(const suspect_rule_t *rule)
{
    return rule->action != NULL && rule->action[0] != '\0';
}

suspect_rc_t mw_deny_build(const mw_deny_t *d, char *buf, size_t size,
                           size_t *len)
{
    const suspect_decision_t *dec;
    facts_t f;

    if (d == NULL || len == NULL || d->rule == NULL || d->decision == NULL ||
        !action_ok(d->rule) ||
        (d->status != 0 && (d->status < 400 || d->status > 599))) {
        return SUSPECT_E_INVAL;
    }
    dec = d->decision;
    memset(&f, 0, sizeof(f));
    f.status = d->status != 0 ? d->status : MW_DENY_STATUS;
    f.title = mw_status_reason(f.status);
    f.action = d->rule->action;
    f.now_ms = d->now_ms;
    f.retry_ms = dec->retry_after_ms > 0 ? dec->retry_after_ms : 0;
    if (f.retry_ms > RETRY_MS_MAX) {
        f.retry_ms = RETRY_MS_MAX;
    }
    f.retry_s = f.retry_ms > 0 ? ceil_s(f.retry_ms) : 1;
    f.end_ms = dec->restriction_end_ms > 0 ? dec->restriction_end_ms
                                           : d->now_ms + f.retry_ms;
    f.reset_s = f.end_ms > d->now_ms ? ceil_s(f.end_ms - d->now_ms) : f.retry_s;
    f.limit = d->rule->limit_count;
    f.window_s = d->rule->window_s;
    f.remaining = dec->remaining;
    if (d->rule->algorithm == SUSPECT_ALGO_BUCKET) {
        f.burst = suspect_rule_capacity(d->rule);
    }
    f.ratelimit = true;
    return render(d, &f, buf, size, len);
}

suspect_rc_t mw_unavailable_build(const mw_deny_t *d, char *buf, size_t size,
                                  size_t *len)
{
    facts_t f;

    if (d == NULL || len == NULL || (d->rule != NULL && !action_ok(d->rule))) {
        return SUSPECT_E_INVAL;
    }
    memset(&f, 0, sizeof(f));
    f.status = 503;
    f.title = mw_status_reason(503);
    f.action = d->rule != NULL ? d->rule->action : NULL;
    f.now_ms = d->now_ms;
    f.retry_ms = 1000;
    f.retry_s = 1;
    f.end_ms = d->now_ms + 1000;
    f.reset_s = 1;
    if (d->rule != NULL) {
        f.limit = d->rule->limit_count;
        f.window_s = d->rule->window_s;
    }
    f.ratelimit = false;
    return render(d, &f, buf, size, len);
}
