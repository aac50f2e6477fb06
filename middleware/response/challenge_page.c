/*
 * challenge_page.c - the challenge page: what a browser behind a shared
 * address that is over its limit gets instead of the plain 429 (see
 * middleware/guard/challenge.c for the tokens and the pass).
 *
 * The page is self-contained: one inline script and one inline style, no
 * third party, no external script, style, image or font, so it works
 * offline and under
 *   Content-Security-Policy: default-src 'none'; script-src 'sha256-S';
 *     style-src 'sha256-C'; connect-src 'self'; base-uri 'none';
 *     form-action 'none'; frame-ancestors 'none'
 * with S and C the hashes of the script and the style (mw_challenge_csp(),
 * computed once per configuration with libsodium).  The values the page
 * carries (token, action, difficulty, path, method) sit in data-*
 * attributes of one element, so the script is the same bytes on every
 * page and its hash holds.
 *
 * The script computes SHA-256 in plain JavaScript rather than WebCrypto:
 * crypto.subtle exists only on HTTPS pages (a site on plain HTTP would
 * get no challenge at all) and costs a promise per hash.  It looks for
 * the first counter c, from 0, for which SHA-256(token ":" c in decimal)
 * starts with difficulty zero bits, 20,000 tries per turn of the event
 * loop so the page stays responsive and shows its progress; then it
 * POSTs "t=TOKEN&a=ACTION&c=C&ms=MS" (MS: how long it took, for the log)
 * to the challenge path and, once accepted, loads the page again: a GET
 * is reloaded, a refused POST becomes a GET of the same URL, since
 * replaying a body the person may not want sent twice is not ours to
 * decide: the person submits the form again.  Without JavaScript the
 * page says when to try again, as the plain 429 does.
 */
#include "challenge_page.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "deny.h"

/* The page's one script and one style; their hashes go in the CSP. */
static const char page_js[] =
    "(function () {\n"
    "  \"use strict\";\n"
    "  var K = new Int32Array([\n"
    "    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, "
    "0x59f111f1,\n"
    "    0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, "
    "0x550c7dc3,\n"
    "    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, "
    "0xefbe4786,\n"
    "    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, "
    "0x76f988da,\n"
    "    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, "
    "0xd5a79147,\n"
    "    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, "
    "0x53380d13,\n"
    "    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, "
    "0xa81a664b,\n"
    "    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, "
    "0x106aa070,\n"
    "    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, "
    "0x4ed8aa4a,\n"
    "    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, "
    "0x8cc70208,\n"
    "    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2]);\n"
    "  var W = new Int32Array(64);\n"
    "  function first(b, n) {\n"
    "    var L = ((n + 72) >> 6) << 6, bits = n * 8, i, o;\n"
    "    var h0 = 0x6a09e667, h1 = 0xbb67ae85 | 0, h2 = 0x3c6ef372,\n"
    "        h3 = 0xa54ff53a | 0, h4 = 0x510e527f, h5 = 0x9b05688c | 0,\n"
    "        h6 = 0x1f83d9ab, h7 = 0x5be0cd19;\n"
    "    b.fill(0, n, L);\n"
    "    b[n] = 0x80;\n"
    "    b[L - 1] = bits & 255;\n"
    "    b[L - 2] = (bits >>> 8) & 255;\n"
    "    b[L - 3] = (bits >>> 16) & 255;\n"
    "    for (o = 0; o < L; o += 64) {\n"
    "      var a = h0, c = h1, d = h2, e = h3, f = h4, g = h5, h = h6, k = "
    "h7;\n"
    "      for (i = 0; i < 16; i++) {\n"
    "        W[i] = b[o + 4 * i] << 24 | b[o + 4 * i + 1] << 16 |\n"
    "               b[o + 4 * i + 2] << 8 | b[o + 4 * i + 3];\n"
    "      }\n"
    "      for (i = 16; i < 64; i++) {\n"
    "        var x = W[i - 15], y = W[i - 2];\n"
    "        W[i] = (((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^\n"
    "                (x >>> 3)) + W[i - 16] +\n"
    "               (((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^\n"
    "                (y >>> 10)) + W[i - 7] | 0;\n"
    "      }\n"
    "      for (i = 0; i < 64; i++) {\n"
    "        var t1 = k + (((f >>> 6) | (f << 26)) ^ ((f >>> 11) | (f << 21)) "
    "^\n"
    "                      ((f >>> 25) | (f << 7))) + ((f & g) ^ (~f & h)) +\n"
    "                 K[i] + W[i] | 0;\n"
    "        var t2 = (((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^\n"
    "                  ((a >>> 22) | (a << 10))) + ((a & c) ^ (a & d) ^ (c & "
    "d)) | 0;\n"
    "        k = h; h = g; g = f; f = e + t1 | 0;\n"
    "        e = d; d = c; c = a; a = t1 + t2 | 0;\n"
    "      }\n"
    "      h0 = h0 + a | 0; h1 = h1 + c | 0; h2 = h2 + d | 0; h3 = h3 + e | "
    "0;\n"
    "      h4 = h4 + f | 0; h5 = h5 + g | 0; h6 = h6 + h | 0; h7 = h7 + k | "
    "0;\n"
    "    }\n"
    "    return h0;\n"
    "  }\n"
    "  var el = document.getElementById(\"c\"), st = "
    "document.getElementById(\"s\");\n"
    "  var t = el.getAttribute(\"data-t\"), a = el.getAttribute(\"data-a\");\n"
    "  var d = +el.getAttribute(\"data-d\"), p = el.getAttribute(\"data-p\");\n"
    "  var m = el.getAttribute(\"data-m\"), pre = [], n0, buf, ctr = 0;\n"
    "  for (var i = 0; i < t.length; i++) {\n"
    "    pre.push(t.charCodeAt(i) & 127);\n"
    "  }\n"
    "  pre.push(58);\n"
    "  n0 = pre.length;\n"
    "  buf = new Uint8Array(n0 + 16 + 72);\n"
    "  buf.set(pre);\n"
    "  var t0 = Date.now();\n"
    "  function send() {\n"
    "    st.textContent = \"Checking\\u2026\";\n"
    "    fetch(p, {method: \"POST\", credentials: \"same-origin\",\n"
    "              headers: {\"Content-Type\": "
    "\"application/x-www-form-urlencoded\"},\n"
    "              body: \"t=\" + encodeURIComponent(t) + \"&a=\" +\n"
    "                    encodeURIComponent(a) + \"&c=\" + ctr + \"&ms=\" +\n"
    "                    (Date.now() - t0)}).then(function (r) {\n"
    "      if (!r.ok) {\n"
    "        st.textContent = \"The check failed (\" + r.status +\n"
    "                         \"): reload the page to try again.\";\n"
    "      } else if (m === \"GET\") {\n"
    "        location.reload();\n"
    "      } else {\n"
    "        location.replace(location.href);\n"
    "      }\n"
    "    }, function () {\n"
    "      st.textContent = \"The check could not be sent: reload the "
    "page.\";\n"
    "    });\n"
    "  }\n"
    "  function step() {\n"
    "    for (var end = ctr + 20000; ctr < end; ctr++) {\n"
    "      var s = \"\" + ctr, n = n0;\n"
    "      for (var j = 0; j < s.length; j++) {\n"
    "        buf[n++] = s.charCodeAt(j);\n"
    "      }\n"
    "      if ((first(buf, n) >>> (32 - d)) === 0) {\n"
    "        send();\n"
    "        return;\n"
    "      }\n"
    "    }\n"
    "    st.textContent = \"Checking your browser\\u2026 \" + ctr;\n"
    "    setTimeout(step, 0);\n"
    "  }\n"
    "  setTimeout(step, 0);\n"
    "})();\n";

static const char page_css[] =
    "body{font-family:sans-serif;max-width:36em;margin:3em auto;"
    "padding:0 1em;color:#222}h1{font-size:1.3em}";

/* Page parts around the values (all checked to need no escaping: the
 * token is base64url, the action a name, the path a normalised one). */
static const char page_head[] =
    "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
    "<meta name=\"viewport\" content=\"width=device-width\">"
    "<title>One moment</title><style>";

/* "sha256-" and the base64 of SHA-256(s) into out (64 bytes). */
static void csp_hash(const char *s, char out[64])
{
    uint8_t h[crypto_hash_sha256_BYTES];

    crypto_hash_sha256(h, (const uint8_t *)s, strlen(s));
    memcpy(out, "sha256-", 7);
    sodium_bin2base64(out + 7, 64 - 7, h, sizeof(h),
                      sodium_base64_VARIANT_ORIGINAL);
}

size_t mw_challenge_csp(char *buf, size_t size)
{
    char js[64], css[64];
    int n;

    csp_hash(page_js, js);
    csp_hash(page_css, css);
    n = snprintf(buf, size,
                 "Content-Security-Policy: default-src 'none'; "
                 "script-src '%s'; style-src '%s'; connect-src 'self'; "
                 "base-uri 'none'; form-action 'none'; "
                 "frame-ancestors 'none'\r\n",
                 js, css);
    return n > 0 && (size_t)n < size ? (size_t)n : 0;
}

/* Appends the n bytes at s to buf (size bytes) at *len; false when full. */
static bool put(char *buf, size_t size, size_t *len, const char *s, size_t n)
{
    if (*len + n >= size) {
        return false;
    }
    memcpy(buf + *len, s, n);
    *len += n;
    buf[*len] = '\0';
    return true;
}

static bool putf(char *buf, size_t size, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static bool putf(char *buf, size_t size, size_t *len, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (*len >= size) {
        return false;
    }
    va_start(ap, fmt);
    n = vsnprintf(buf + *len, size - *len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= size - *len) {
        return false;
    }
    *len += (size_t)n;
    return true;
}

/* Whether s holds only bytes that need no escaping in an attribute. */
static bool plain(const char *s)
{
    return s != NULL && s[strspn(s, "abcdefghijklmnopqrstuvwxyz"
                                    "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                    "0123456789-_./~")] == '\0';
}

suspect_rc_t mw_challenge_page_build(const mw_challenge_page_t *p, char **out,
                                     size_t *len)
{
    size_t bsize = sizeof(page_js) + 2048, blen = 0, hlen = 0;
    int64_t retry_s = p->retry_s < 1 ? 1 : p->retry_s;
    char head[1024];
    char *buf;

    if (!plain(p->token) || !plain(p->action) || !plain(p->path)) {
        return SUSPECT_E_INVAL;
    }
    buf = malloc(bsize + sizeof(head));
    if (buf == NULL) {
        return SUSPECT_E_NOMEM;
    }
    buf[0] = '\0';
    if (!(put(buf, bsize, &blen, page_head, sizeof(page_head) - 1) &&
          put(buf, bsize, &blen, page_css, sizeof(page_css) - 1) &&
          putf(buf, bsize, &blen,
               "</style></head><body><h1>One moment</h1>"
               "<p>Many requests came from your network, so this page "
               "checks that a browser is asking.  It takes a second or "
               "two, and then brings you back.</p>"
               "<p id=\"s\">Checking your browser\xe2\x80\xa6</p>"
               "<noscript><p>Without JavaScript, please try again in %" PRId64
               " seconds.</p></noscript>"
               "<div id=\"c\" data-t=\"%s\" data-a=\"%s\" data-d=\"%u\" "
               "data-p=\"%s\" data-m=\"%s\"></div><script>",
               retry_s, p->token, p->action, p->difficulty, p->path,
               p->get ? "GET" : "POST") &&
          put(buf, bsize, &blen, page_js, sizeof(page_js) - 1) &&
          put(buf, bsize, &blen, "</script></body></html>\n", 24) &&
          putf(head, sizeof(head), &hlen,
               "Status: %d %s\r\nContent-Type: text/html; charset=utf-8\r\n"
               "Cache-Control: no-store\r\nRetry-After: %" PRId64 "\r\n"
               "%sX-Content-Type-Options: nosniff\r\n"
               "Content-Length: %zu\r\n\r\n",
               p->status, mw_status_reason(p->status), retry_s, p->csp,
               blen))) {
        free(buf);
        return SUSPECT_E_INVAL;
    }
    /* the head before the body, in the one buffer */
    memmove(buf + hlen, buf, blen);
    memcpy(buf, head, hlen);
    *out = buf;
    *len = hlen + blen;
    return SUSPECT_OK;
}
