/*
 * test_e2e_challenge.c - a challenge for a shared address through a real
 * web server, a real application and a real browser: nginx ->
 * suspect-fcgi -> examples/app/app.cgi with examples/suspect.xml, whose
 * PromoQuery route (10 per minute) also counts the client address,
 * marked shared, and a <Challenge> at its default difficulty.
 *
 * An attacker locks the address (everyone here is 127.0.0.1).  Then:
 *  - curl from the same address stays 429, with or without Accept:
 *    text/html (the page's script never runs);
 *  - a real browser (Debian's chromium, headless) solves the page and
 *    reaches the application: the DOM it dumps is the application's;
 *  - a scripted solver (libsodium's SHA-256) earns passes, paying the
 *    work for each, and each pass is held to the route's limit; a
 *    replayed solution, a forged pass get nothing.
 * The time to solve is measured (the browser's from the page's report in
 * suspect-fcgi's log, the solver's with the monotonic clock) and printed
 * for docs/BENCHMARKS.md.
 */
#include <CUnit/CUnit.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "helpers/e2e.h"
#include "helpers/procs.h"
#include "helpers/redisserver.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"

#define APP       "/app.cgi"
#define KEY       "a-challenge-key-of-at-least-thirty-two-chars"
#define TOKEN_MAX 128

/* The PromoQuery route counts the address too, shared; the <Challenge>
 * at its defaults. */
static const char *const edits[] = {
    "    <Identity type=\"MemberPromo\" from=\"query:member query:code\"/>",
    "    <Identity type=\"MemberPromo\" from=\"query:member query:code\"/>\n"
    "    <Identity type=\"ClientIp\" from=\"client-ip\" shared=\"yes\"/>",
    "</Suspect>", "  <Challenge key=\"" KEY "\"/>\n</Suspect>", NULL};

/* Starts the stack, with tail in place of the <Challenge> line (NULL:
 * edits' own). */
static int start_with(const char *tail)
{
    const char *const with[] = {edits[0], edits[1], edits[2],
                                tail != NULL ? tail : edits[3], NULL};
    char path[TEST_PATH_MAX];

    if (e2e_start_cgi(with) != 0) {
        return -1;
    }
    snprintf(path, sizeof(path), "%s/performed.log", e2e.app);
    return test_write_file(path, "", 0);
}

static int start(void)
{
    return start_with(NULL);
}

/* Promotions the application looked up. */
static int promos(void)
{
    char path[TEST_PATH_MAX];

    snprintf(path, sizeof(path), "%s/performed.log", e2e.app);
    return test_count_text(path, "promo ");
}

/* A GET of a promotion for member, with Accept (NULL: curl's) and a
 * Cookie header line (NULL: none): the response in r. */
static void promo(test_http_t *r, const char *member, const char *accept,
                  const char *cookie)
{
    char url[E2E_URL], path[256], acc[128];
    const char *args[8];
    int n = 0;

    snprintf(path, sizeof(path), APP "?op=promo&member=%s&code=SPRING24",
             member);
    if (accept != NULL) {
        snprintf(acc, sizeof(acc), "Accept: %s", accept);
        args[n++] = "-H";
        args[n++] = acc;
    }
    if (cookie != NULL) {
        args[n++] = "-H";
        args[n++] = cookie;
    }
    args[n++] = e2e_url(url, path);
    args[n] = NULL;
    CU_ASSERT_FATAL(e2e_http(r, args) == 0);
}

static int promo_status(const char *member, const char *cookie)
{
    test_http_t r;
    int st;

    promo(&r, member, NULL, cookie);
    st = r.status;
    test_http_free(&r);
    return st;
}

/* The attacker: many members from one address, until it is refused. */
static void lock_address(void)
{
    char m[32];
    int denied = 0;

    for (int i = 0; i < 11; i++) {
        snprintf(m, sizeof(m), "bot%d", i);
        denied += promo_status(m, NULL) == 429;
    }
    CU_ASSERT_EQUAL_FATAL(denied, 1);
}

/* The value of data-NAME="..." in page into out (TOKEN_MAX). */
static bool page_attr(const char *page, const char *name, char *out)
{
    char pat[32];
    const char *p;
    size_t n;

    snprintf(pat, sizeof(pat), "data-%s=\"", name);
    p = page != NULL ? strstr(page, pat) : NULL;
    if (p == NULL) {
        return false;
    }
    p += strlen(pat);
    n = strcspn(p, "\"");
    snprintf(out, TOKEN_MAX, "%.*s", (int)n, p);
    return n > 0 && n < TOKEN_MAX;
}

/* Leading zero bits of SHA-256(token ":" c). */
static unsigned work(const char *token, unsigned long long c)
{
    uint8_t h[crypto_hash_sha256_BYTES];
    char msg[TOKEN_MAX + 32];
    int n = snprintf(msg, sizeof(msg), "%s:%llu", token, c);
    unsigned bits = 0;

    crypto_hash_sha256(h, (const uint8_t *)msg, (size_t)n);
    for (size_t i = 0; i < sizeof(h); i++) {
        if (h[i] != 0) {
            for (uint8_t b = h[i]; (b & 0x80) == 0; b <<= 1) {
                bits++;
            }
            break;
        }
        bits += 8;
    }
    return bits;
}

/* The scripted solver: a challenge page for member, solved, posted.  The
 * "Cookie: ..." line of the pass into cookie (256 bytes; "" when none
 * was given); in *body the solution posted (512 bytes), *ms and *tries
 * what solving cost. */
static void earn_pass(const char *member, char *cookie, char *body,
                      long long *ms, unsigned long long *tries)
{
    char token[TOKEN_MAX], action[TOKEN_MAX], d[TOKEN_MAX], url[E2E_URL];
    unsigned long long c = 0;
    const char *sc;
    long long t0;
    test_http_t r;

    cookie[0] = '\0';
    promo(&r, member, "text/html,application/xhtml+xml,*/*;q=0.8", NULL);
    CU_ASSERT_EQUAL(r.status, 429);
    CU_ASSERT_FATAL(page_attr(r.body, "t", token) &&
                    page_attr(r.body, "a", action) &&
                    page_attr(r.body, "d", d));
    test_http_free(&r);
    t0 = mono_ms();
    while (work(token, c) < (unsigned)atoi(d)) {
        c++;
    }
    *ms = mono_ms() - t0;
    *tries = c + 1;
    snprintf(body, 512, "t=%s&a=%s&c=%llu", token, action, c);
    CU_ASSERT_FATAL(e2e_http(&r, (const char *[]){"-d", body,
                                                  e2e_url(url, "/.suspect/"
                                                               "challenge"),
                                                  NULL}) == 0);
    CU_ASSERT_EQUAL(r.status, 200);
    sc = test_http_header(&r, "set-cookie");
    if (sc != NULL && strncmp(sc, "suspect_pass=", 13) == 0) {
        snprintf(cookie, 256, "Cookie: %.*s", (int)strcspn(sc, ";"), sc);
    }
    test_http_free(&r);
}

/* Without JavaScript: curl stays refused, whatever it accepts. */
static void test_curl_refused(void)
{
    test_http_t r;

    CU_ASSERT_FATAL(start() == 0);
    lock_address();
    CU_ASSERT_EQUAL(promo_status("alice", NULL), 429);
    promo(&r, "alice", "application/json", NULL);
    CU_ASSERT_EQUAL(r.status, 429);
    CU_ASSERT_PTR_NULL(strstr(r.body, "data-t="));
    test_http_free(&r);
    /* a browser's Accept: the challenge page, still a 429 */
    promo(&r, "alice", "text/html", NULL);
    CU_ASSERT_EQUAL(r.status, 429);
    CU_ASSERT_PTR_NOT_NULL(r.body != NULL ? strstr(r.body, "data-t=") : NULL);
    CU_ASSERT_PTR_NOT_NULL(test_http_header(&r, "retry-after"));
    CU_ASSERT_PTR_NOT_NULL(test_http_header(&r, "content-security-policy"));
    CU_ASSERT_PTR_NULL(r.body != NULL ? strstr(r.body, "http") : NULL);
    test_http_free(&r);
    /* nothing reached the application after the lock */
    CU_ASSERT_EQUAL(promos(), 10);
}

/* Milliseconds of the day of the log line at line (its timestamp,
 * "YYYY-MM-DDTHH:MM:SS.mmmZ"), -1 when it has none. */
static long long line_ms(const char *line)
{
    int h, m, s, ms;

    if (sscanf(line, "%*d-%*d-%*dT%d:%d:%d.%dZ", &h, &m, &s, &ms) != 4) {
        return -1;
    }
    return ((h * 60LL + m) * 60 + s) * 1000 + ms;
}

/* From suspect-fcgi's log: the time from the last challenge page served
 * (its "deny" line) to the solution that earned a pass, printed for
 * docs/BENCHMARKS.md with the hashes the browser computed. */
static void report_browser_time(void)
{
    char *log = test_read_file(e2e.log, NULL);
    char *solved = log != NULL ? strstr(log, "challenge solved") : NULL;
    const char *deny = NULL, *start;

    CU_ASSERT_PTR_NOT_NULL_FATAL(solved);
    for (start = solved; start > log && start[-1] != '\n'; start--) {
    }
    for (const char *p = strstr(log, "deny /app.cgi"); p != NULL && p < solved;
         p = strstr(p + 1, "deny /app.cgi")) {
        deny = p;
    }
    CU_ASSERT_PTR_NOT_NULL_FATAL(deny);
    while (deny > log && deny[-1] != '\n') {
        deny--;
    }
    fprintf(stderr, "\n    chromium: page served to solution: %lld ms; %.*s\n",
            line_ms(start) - line_ms(deny), (int)strcspn(solved, "\n"), solved);
    free(log);
}

/* A real browser behind the locked address gets through. */
static void test_browser_gets_in(void)
{
    char url[E2E_URL], dir[TEST_PATH_MAX], log[TEST_PATH_MAX];
    char arg[TEST_PATH_MAX + 32];
    test_proc_t p;
    char *out;

    CU_ASSERT_FATAL(start() == 0);
    lock_address();
    e2e_path(dir, "chromium");
    e2e_path(log, "chromium.out");
    snprintf(arg, sizeof(arg), "--user-data-dir=%s", dir);
    e2e_url(url, APP "?op=promo&member=carol&code=SPRING24");
    CU_ASSERT_FATAL(
        test_proc_start(&p,
                        (const char *[]){"chromium", "--headless",
                                         "--disable-gpu", "--no-sandbox",
                                         "--no-first-run", arg,
                                         "--virtual-time-budget=30000",
                                         "--dump-dom", url, NULL},
                        NULL, log) == 0);
    if (test_proc_wait(&p, test_scale_ms(60000)) != 0) {
        test_proc_stop(&p, 0, 1000);
        CU_FAIL("chromium did not finish");
    }
    out = test_read_file(log, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(out);
    if (strstr(out, "ok promo: the code is valid") == NULL) {
        fprintf(stderr, "\nchromium printed:\n%s\n", out);
        CU_FAIL("the browser did not reach the application");
    }
    free(out);
    CU_ASSERT_EQUAL(promos(), 11);
    report_browser_time();
    /* curl, from the same address, without the browser's pass */
    CU_ASSERT_EQUAL(promo_status("carol", NULL), 429);
}

/* A scripted solver pays for each pass, and each is held to the limit. */
static void test_solver_held(void)
{
    char cookie[256], body[512], bad[300], url[E2E_URL];
    char tail[256], metrics[64];
    unsigned long long tries;
    long long ms;
    test_http_t r;
    int mport = test_free_port();

    snprintf(tail, sizeof(tail),
             "  <Challenge key=\"" KEY "\"/>\n"
             "  <Metrics listen=\"tcp:127.0.0.1:%d\"/>\n</Suspect>",
             mport);
    CU_ASSERT_FATAL(start_with(tail) == 0);
    lock_address();
    for (int pass = 0; pass < 2; pass++) {
        int ok = 0, denied = 0;
        char m[32];

        earn_pass("bot", cookie, body, &ms, &tries);
        CU_ASSERT_FATAL(cookie[0] != '\0');
        fprintf(stderr, "\n    native solver: pass %d: %llu hashes, %lld ms",
                pass + 1, tries, ms);
        for (int i = 0; i < 12; i++) {
            snprintf(m, sizeof(m), "p%dbot%d", pass, i);
            int st = promo_status(m, cookie);
            ok += st == 200;
            denied += st == 429;
        }
        /* the route's limit, 10 a minute, for each pass */
        CU_ASSERT_EQUAL(ok, 10);
        CU_ASSERT_EQUAL(denied, 2);
        /* the same solution again: no second pass */
        CU_ASSERT_EQUAL(
            e2e_status((const char *[]){
                "-d", body, e2e_url(url, "/.suspect/challenge"), NULL}),
            403);
    }
    CU_ASSERT_EQUAL(promos(), 30);
    /* a forged pass counts as the address: refused */
    snprintf(bad, sizeof(bad), "%s", cookie);
    bad[30] = bad[30] == 'A' ? 'B' : 'A';
    CU_ASSERT_EQUAL(promo_status("dave", bad), 429);
    /* the challenge path answers only POSTs of solutions */
    CU_ASSERT_EQUAL(
        e2e_status((const char *[]){e2e_url(url, "/.suspect/challenge"), NULL}),
        405);
    CU_ASSERT_EQUAL(
        e2e_status((const char *[]){"-d", "t=x&a=PromoQuery&c=1",
                                    e2e_url(url, "/.suspect/challenge"), NULL}),
        403);
    /* the metrics: two pages served and solved, 20 requests let in on
     * passes and 4 refused, the refused solutions */
    snprintf(metrics, sizeof(metrics), "http://127.0.0.1:%d/metrics", mport);
    CU_ASSERT_FATAL(e2e_http(&r, (const char *[]){metrics, NULL}) == 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(
        r.body, "suspect_pass_decisions_total{outcome=\"allowed\"} 20\n"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(r.body, "suspect_pass_decisions_total{outcome=\"denied\"} 4\n"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(r.body, "suspect_challenges_total{outcome=\"served\"} 2\n"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(r.body, "suspect_challenges_total{outcome=\"solved\"} 2\n"));
    CU_ASSERT_PTR_NOT_NULL(
        strstr(r.body, "suspect_challenges_total{outcome=\"refused\"} 4\n"));
    test_http_free(&r);
}

/* suspect.xml with the <Challenge> line challenge, reloaded (SIGHUP);
 * waits for the reload to be the n-th. */
static void reload_with(const char *challenge, int n)
{
    const char *const rotated[] = {edits[0], edits[1], edits[2], challenge,
                                   NULL};
    long long end = mono_ms() + test_scale_ms(10000);

    CU_ASSERT_FATAL(e2e_write_example("suspect.xml", "suspect.xml", rotated) ==
                    0);
    CU_ASSERT_FATAL(test_proc_signal(&e2e.fcgi, SIGHUP) == 0);
    while (test_count_text(e2e.log, "suspect.xml: reloaded") < n &&
           mono_ms() < end) {
        (void)poll(NULL, 0, 20);
    }
    CU_ASSERT_FATAL(test_count_text(e2e.log, "suspect.xml: reloaded") >= n);
}

/* Keys rotate without sending anyone back to the challenge: the key
 * moved to oldKey still verifies the passes it signed; once oldKey is
 * dropped, they count as the address again. */
static void test_key_rotation(void)
{
    char cookie[256], fresh[256], body[512];
    unsigned long long tries;
    long long ms;

    CU_ASSERT_FATAL(start() == 0);
    lock_address();
    earn_pass("erin", cookie, body, &ms, &tries);
    CU_ASSERT_FATAL(cookie[0] != '\0');
    CU_ASSERT_EQUAL(promo_status("erin", cookie), 200);
    reload_with("  <Challenge key=\"a-new-challenge-key-of-thirty-two-chars\" "
                "oldKey=\"" KEY "\"/>\n</Suspect>",
                1);
    CU_ASSERT_EQUAL(promo_status("erin", cookie), 200);
    CU_ASSERT_EQUAL(promo_status("erin", NULL), 429); /* still locked */
    earn_pass("frank", fresh, body, &ms, &tries);
    CU_ASSERT_EQUAL(promo_status("frank", fresh), 200);
    reload_with("  <Challenge key=\"a-new-challenge-key-of-thirty-two-chars\"/>"
                "\n</Suspect>",
                2);
    CU_ASSERT_EQUAL(promo_status("erin", cookie), 429);
    CU_ASSERT_EQUAL(promo_status("frank", fresh), 200);
}

int e2e_add_challenge_tests(CU_pSuite s)
{
    return CU_add_test(s, "challenge: curl stays refused", test_curl_refused) ==
                       NULL ||
                   CU_add_test(s, "challenge: a browser gets in",
                               test_browser_gets_in) == NULL ||
                   CU_add_test(s, "challenge: each pass held to the limit",
                               test_solver_held) == NULL ||
                   CU_add_test(s, "challenge: key rotation",
                               test_key_rotation) == NULL
               ? -1
               : 0;
}
