/*
 * test_e2e_abuse.c - suite "abuse": hostile traffic against the running
 * daemon, every process real (lighttpd or nginx, suspect-fcgi, the
 * example application).
 *
 * This file: floods.  A hundred thousand distinct identities straight to
 * suspect-fcgi's socket, in the FastCGI AUTHORIZER role on one kept
 * connection (no CGI runs, so a flood takes seconds), against the
 * lighttpd authorizer deployment of examples/ with the memory store
 * capped at ABUSE_CAP entries:
 * (the session tests allow two composes an hour: a session of one is a
 * counter below its limit, which eviction may take; a count at its limit
 * is held like a lock):
 *   - session ids rotated per request: the daemon's resident memory after
 *     the flood stays within a bound derived from the cap (measured in
 *     /proc/PID/status, after a warm-up that fills the store, so thread
 *     arenas and buffers are already there), the store forgot the first
 *     identities of the flood (one of them is allowed again: the cap is
 *     applied, not just the memory small) and remembers the last;
 *   - a session locked before the flood is still locked after it, with
 *     the Retry-After of its original lock (a lock is not extended, and
 *     not evicted by unlocked newcomers);
 *   - IPv6 client addresses rotated inside one /64 are one identity (two
 *     allowed, then the lock), inside a hundred thousand /64s a hundred
 *     thousand identities (all allowed), memory bounded the same way.
 *   - locked sessions fill the store: a flood of counters evicts counters,
 *     never a lock; once only live locks (and counts at their limit) are
 *     left, a new session is refused (503, "store full") and every lock
 *     still holds.
 * test_e2e_abuse_bytes.c has hostile values (64 KiB, NUL, CR/LF, many
 * cookies, a Cookie header of the PARAMS limit); test_e2e_abuse_parsers.c
 * where an application's parser could read another identity than
 * Suspect (PHP's cookie names, CGI.pm's form media types, forwarded
 * headers, two Cookie lines under nginx auth_request);
 * test_e2e_abuse_paths.c spellings of the script's path through nginx and
 * straight in FastCGI; test_e2e_abuse_env.c what FastCGI parameters can
 * put in a CGI program's environment; test_e2e_abuse_slow.c slow and idle
 * peers of the socket; test_e2e_abuse_target.c other names of the script
 * that runs (directory index, other scripts, links, rewrites);
 * test_e2e_abuse_cookies.c cookie names the application reads as another;
 * test_e2e_abuse_multipart.c logins and uploads posted as multipart;
 * test_e2e_abuse_reset.c a flood of fresh identities against a victim's
 * count (the memory store's eviction order).
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "helpers/e2e.h"
#include "suites.h"
#include "test_e2e_abuse.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"

#define ABUSE_CAP   2000
#define FLOOD       100000
#define WARMUP      5000
#define LOCK_S      600
#define MAX_VAR     256
#define ABUSE_TIMER 5000

/* Per request: at most this much memory may stay with the daemon for an
 * identity it still tracks (an entry is 64 bytes, its hits 8 each, plus
 * the hash bucket and malloc's overhead: about 130 in practice). */
#define BYTES_PER_ENTRY 512
/* Allocator and page noise allowed on top, in KiB. */
#define RSS_SLACK_KB 2048

/* The limits of the abuse tests: ComposeMessage and the login lock after
 * one and two hits (COMPOSE_LIMIT: the flood tests allow two, so that a
 * session of one hit is a counter below its limit, which eviction may
 * take), so that an evicted identity shows (it is allowed again) and a
 * lock is quick to set. */
#define COMPOSE_LIMIT "@COMPOSE@"
static const char limits_xml[] =
    "<ArrayOfSuspectUsageSettingEntity>\n"
    "  <SuspectUsageSettingEntity Action=\"ComposeMessage\" "
    "LimitCount=\"" COMPOSE_LIMIT
    "\" LimitDuration=\"3600\" BlockDuration=\"600\"/>\n"
    "  <SuspectUsageSettingEntity Action=\"SecureLoginForceForgotAccount\""
    " LimitCount=\"2\" LimitDuration=\"86400\" BlockDuration=\"600\"/>\n"
    "  <SuspectUsageSettingEntity Action=\"LoginVerificationResend\""
    " LimitCount=\"3\" LimitDuration=\"600\" BlockDuration=\"900\"/>\n"
    "  <SuspectUsageSettingEntity Action=\"SecureForgotAccount\""
    " LimitCount=\"3\" LimitDuration=\"1800\" BlockDuration=\"1800\"/>\n"
    "  <SuspectUsageSettingEntity Action=\"BankAccountUpdate\""
    " LimitCount=\"2\" LimitDuration=\"120\"/>\n"
    "  <SuspectUsageSettingEntity Action=\"PromoQuery\" LimitCount=\"10\""
    " LimitDuration=\"60\"/>\n"
    "</ArrayOfSuspectUsageSettingEntity>\n";

/* abuse_start_authorizer() with ComposeMessage allowing compose (1 or 2)
 * per hour. */
static int start_authorizer(int cap, int compose)
{
    char store[96], path[TEST_PATH_MAX], text[sizeof(limits_xml)];
    const char *edits[] = {"<Store type=\"memory\"/>", store,
                           "path=\"limits.xml\"", "path=\"abuse-limits.xml\"",
                           NULL};
    const char *at = strstr(limits_xml, COMPOSE_LIMIT);
    size_t head = (size_t)(at - limits_xml);

    snprintf(store, sizeof(store), "<Store type=\"memory\" maxEntries=\"%d\"/>",
             cap);
    snprintf(text, sizeof(text), "%.*s%d%s", (int)head, limits_xml, compose,
             at + strlen(COMPOSE_LIMIT));
    snprintf(path, sizeof(path), "%s/abuse-limits.xml", e2e.dir);
    if (test_write_file(path, text, strlen(text)) != 0) {
        return -1;
    }
    return e2e_start_authorizer(edits);
}

int abuse_start_authorizer(int cap)
{
    return start_authorizer(cap, 1);
}

int abuse_decide(int fd, int role, const char *const vars[], char *out,
                 size_t out_size)
{
    size_t len = 0, cap = 70000 * 2;
    char *params = malloc(cap);
    int rc = params != NULL ? 0 : -1;

    for (size_t i = 0; rc == 0 && vars[i] != NULL; i += 2) {
        rc = e2e_fcgi_pair(params, cap, &len, vars[i], vars[i + 1]);
    }
    if (rc == 0 && e2e_fcgi_exchange(fd, role, true, params, len, "", 0, out,
                                     out_size, ABUSE_TIMER) != 0) {
        rc = -1;
    }
    free(params);
    return rc == 0 ? e2e_cgi_status(out) : -1;
}

long abuse_retry_after(const char *text)
{
    const char *s = strstr(text, "Retry-After: ");

    return s != NULL ? strtol(s + 13, NULL, 10) : -1;
}

int abuse_post(const char *qs, const char *body, const char *cookie,
               const char *addr, char *out, size_t size)
{
    char script[TEST_PATH_MAX], uri[256], len[32], params[4096];
    const char *vars[] = {"REQUEST_METHOD",
                          "POST",
                          "REQUEST_URI",
                          uri,
                          "QUERY_STRING",
                          qs,
                          "SCRIPT_NAME",
                          "/app.cgi",
                          "SCRIPT_FILENAME",
                          script,
                          "REMOTE_ADDR",
                          addr,
                          "CONTENT_LENGTH",
                          len,
                          "CONTENT_TYPE",
                          "application/x-www-form-urlencoded",
                          "REDIRECT_STATUS",
                          "200",
                          "SERVER_PROTOCOL",
                          "HTTP/1.1",
                          cookie != NULL ? "HTTP_COOKIE" : NULL,
                          cookie,
                          NULL};
    size_t plen = 0;
    int fd = e2e_fcgi_connect();
    int rc;

    out[0] = '\0';
    if (fd < 0) {
        return -1;
    }
    snprintf(script, sizeof(script), "%s/app/app.cgi", e2e.dir);
    snprintf(uri, sizeof(uri), "/app.cgi?%s", qs);
    snprintf(len, sizeof(len), "%zu", strlen(body));
    for (size_t k = 0; vars[k] != NULL; k += 2) {
        e2e_fcgi_pair(params, sizeof(params), &plen, vars[k], vars[k + 1]);
    }
    rc = e2e_fcgi_exchange(fd, 1, false, params, plen, body, strlen(body), out,
                           size, test_scale_ms(10000));
    close(fd);
    return rc == 0 ? e2e_cgi_status(out) : -1;
}

int abuse_performed(const char *op, const char *who)
{
    char path[TEST_PATH_MAX], line[256];

    snprintf(path, sizeof(path), "%s/performed.log", e2e.app);
    snprintf(line, sizeof(line), "%s %s", op, who);
    return test_count_lines(path, line);
}

/* The variables of a POST /app.cgi?op=op from addr with the cookie. */
static void post_vars(const char *vars[], const char *op_uri, const char *op_qs,
                      const char *addr, const char *cookie)
{
    const char *v[] = {"REQUEST_METHOD",
                       "POST",
                       "REQUEST_URI",
                       op_uri,
                       "QUERY_STRING",
                       op_qs,
                       "SCRIPT_NAME",
                       "/app.cgi",
                       "REMOTE_ADDR",
                       addr,
                       "HTTP_COOKIE",
                       cookie,
                       NULL};

    memcpy(vars, v, sizeof(v));
}

/* The decision on one compose by session sid; its status, text in out. */
static int compose(int fd, const char *sid, char *out, size_t size)
{
    char cookie[MAX_VAR];
    const char *vars[13];

    snprintf(cookie, sizeof(cookie), "lang=en; SESSIONID=%s", sid);
    post_vars(vars, "/app.cgi?op=compose", "op=compose", "192.0.2.1", cookie);
    return abuse_decide(fd, 2, vars, out, size);
}

/* The decision on one login from addr; its status, text in out. */
static int login(int fd, const char *addr, char *out, size_t size)
{
    const char *vars[13];

    post_vars(vars, "/app.cgi?op=login", "op=login", addr, "");
    return abuse_decide(fd, 2, vars, out, size);
}

/* n composes by sessions "tag-first" .. "tag-(first+n-1)": how many were
 * allowed, or -1 when one got no answer.  When not all were allowed,
 * prints what the others got (429, 503, other) and the first of them, or
 * the session that got no answer. */
static long flood_sessions(int fd, const char *tag, unsigned first, unsigned n)
{
    char sid[64], out[2048];
    long allowed = 0, n429 = 0, n503 = 0, other = 0;
    long long first_bad = -1;

    for (unsigned i = first; i < first + n; i++) {
        int st;

        snprintf(sid, sizeof(sid), "%s-%u", tag, i);
        st = compose(fd, sid, out, sizeof(out));
        if (st < 0) {
            fprintf(stderr, "\n  flood %s: no answer to %s after %ld allowed ",
                    tag, sid, allowed);
            return -1;
        }
        allowed += st == 200;
        n429 += st == 429;
        n503 += st == 503;
        other += st != 200 && st != 429 && st != 503;
        first_bad = st != 200 && first_bad < 0 ? (long long)i : first_bad;
    }
    if (allowed != (long)n) {
        fprintf(stderr,
                "\n  flood %s: %ld allowed, %ld 429, %ld 503, %ld other "
                "(first: %s-%lld) ",
                tag, allowed, n429, n503, other, tag, first_bad);
    }
    return allowed;
}

/* How many times the daemon's log says "(store full)". */
static long store_full_lines(void)
{
    return test_count_text(e2e.log, "(store full)");
}

/* n logins from addresses of 2001:db8::/32, numbered from first: all in
 * 2001:db8:ffff:7::/64 when one_net, else each in a /64 of its own
 * (2001:db8:X:Y::/64, XY the number). */
static long flood_addrs(int fd, bool one_net, unsigned first, unsigned n)
{
    char addr[64], out[2048];
    long allowed = 0;

    for (unsigned i = first; i < first + n; i++) {
        int st;

        if (one_net) {
            snprintf(addr, sizeof(addr), "2001:db8:ffff:7:%x:%x::%x", i >> 16,
                     i & 0xffff, i % 7 + 1);
        } else {
            snprintf(addr, sizeof(addr), "2001:db8:%x:%x::1", i >> 16,
                     i & 0xffff);
        }
        st = login(fd, addr, out, sizeof(out));
        if (st < 0) {
            return -1;
        }
        allowed += st == 200;
    }
    return allowed;
}

/* Whether pid runs under AddressSanitizer or valgrind, whose quarantine
 * of freed blocks makes its resident memory grow with any allocation. */
static bool instrumented(pid_t pid)
{
    char path[64];
    char *maps;
    bool yes;

    snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
    maps = test_read_file(path, NULL);
    yes = maps != NULL && (strstr(maps, "libasan") != NULL ||
                           strstr(maps, "vgpreload") != NULL);
    free(maps);
    return yes;
}

/* Whether the daemon's resident memory grew by at most what cap tracked
 * identities may take; prints the figures.  Not judged for an
 * instrumented daemon (the eviction checks still show the cap). */
static bool rss_bounded(const char *what, long before_kb, long after_kb,
                        int cap)
{
    long bound = (long)cap * BYTES_PER_ENTRY / 1024 + RSS_SLACK_KB;
    bool inst = instrumented(e2e.fcgi.pid);

    fprintf(stderr, "\n  %s: RSS %ld -> %ld KiB (+%ld, bound +%ld%s) ", what,
            before_kb, after_kb, after_kb - before_kb, bound,
            inst ? ", not judged: instrumented" : "");
    return before_kb > 0 && after_kb > 0 &&
           (inst || after_kb - before_kb <= bound);
}

/* 100k session ids: memory bounded, the oldest forgotten, the newest
 * kept, a lock set before the flood intact with its original end. */
static void test_flood_sessions(void)
{
    char out[4096];
    long before, after, retry;
    long long t0;
    int fd;

    CU_ASSERT_FATAL(start_authorizer(ABUSE_CAP, 2) == 0);
    fd = e2e_fcgi_connect();
    CU_ASSERT_FATAL(fd >= 0);
    /* The victim: two composes allowed, the third locks it for 600 s. */
    t0 = mono_ms();
    CU_ASSERT_EQUAL(compose(fd, "victim", out, sizeof(out)), 200);
    CU_ASSERT_EQUAL(compose(fd, "victim", out, sizeof(out)), 200);
    CU_ASSERT_EQUAL(compose(fd, "victim", out, sizeof(out)), 429);
    CU_ASSERT_EQUAL(abuse_retry_after(out), LOCK_S);

    /* Warm-up past the cap: the store is full from here on. */
    CU_ASSERT_EQUAL(flood_sessions(fd, "warm", 0, WARMUP), WARMUP);
    before = e2e_rss_kb(e2e.fcgi.pid);
    CU_ASSERT_EQUAL(flood_sessions(fd, "flood", 0, FLOOD), FLOOD);
    after = e2e_rss_kb(e2e.fcgi.pid);
    CU_ASSERT(rss_bounded("100k sessions", before, after, ABUSE_CAP));

    /* Still locked, the lock not extended: its end is where it was. */
    CU_ASSERT_EQUAL(compose(fd, "victim", out, sizeof(out)), 429);
    retry = abuse_retry_after(out);
    CU_ASSERT(retry <= LOCK_S && retry >= LOCK_S - 1 - (mono_ms() - t0) / 1000);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "RateLimit-Policy: "
                                       "\"ComposeMessage\";q=2;w=3600"));
    /* The first of the flood was evicted (allowed twice again, its one
     * hit forgotten); the last is still counted (its third hit locks). */
    CU_ASSERT_EQUAL(compose(fd, "flood-0", out, sizeof(out)), 200);
    CU_ASSERT_EQUAL(compose(fd, "flood-0", out, sizeof(out)), 200);
    CU_ASSERT_EQUAL(compose(fd, "flood-99999", out, sizeof(out)), 200);
    CU_ASSERT_EQUAL(compose(fd, "flood-99999", out, sizeof(out)), 429);
    close(fd);
}

/* Addresses of one /64 are one client; of 100k /64s, 100k clients. */
static void test_flood_ipv6(void)
{
    char out[4096];
    long before, after, retry;
    long long t0;
    int fd;

    CU_ASSERT_FATAL(abuse_start_authorizer(ABUSE_CAP) == 0);
    fd = e2e_fcgi_connect();
    CU_ASSERT_FATAL(fd >= 0);
    /* 100k interface ids of 2001:db8:ffff:7::/64: two logins, then
     * locked. */
    t0 = mono_ms();
    CU_ASSERT_EQUAL(flood_addrs(fd, true, 0, FLOOD), 2);
    CU_ASSERT_EQUAL(login(fd, "2001:db8:ffff:7:abcd::1", out, sizeof(out)),
                    429);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"SecureLoginForceForgotAccount\""));
    /* Another /64 is another client. */
    CU_ASSERT_EQUAL(login(fd, "2001:db8:ffff:8::1", out, sizeof(out)), 200);

    /* Warm-up (other /64s), then 100k /64s: each a first login, all
     * allowed. */
    CU_ASSERT_EQUAL(flood_addrs(fd, false, 0x800000, WARMUP), WARMUP);
    before = e2e_rss_kb(e2e.fcgi.pid);
    CU_ASSERT_EQUAL(flood_addrs(fd, false, 0, FLOOD), FLOOD);
    after = e2e_rss_kb(e2e.fcgi.pid);
    CU_ASSERT(rss_bounded("100k /64s", before, after, ABUSE_CAP));
    /* The locked /64 kept its lock through the flood. */
    CU_ASSERT_EQUAL(login(fd, "2001:db8:ffff:7:1234::9", out, sizeof(out)),
                    429);
    /* (the lock's end has not moved: the flood's time has passed) */
    retry = abuse_retry_after(out);
    CU_ASSERT(retry <= LOCK_S && retry >= LOCK_S - 1 - (mono_ms() - t0) / 1000);
    close(fd);
}

/* Sessions "tag-first" .. "tag-(first+n-1)" compose three times each
 * (the third locks); locked[i - first] says which ones were locked (200,
 * 200, 429).  Counts the sessions by outcome: locked, refused with 503,
 * other. */
static void lock_sessions(int fd, const char *tag, unsigned first, unsigned n,
                          bool *locked, long *nlocked, long *n503, long *other)
{
    char sid[64], out[2048];

    for (unsigned i = first; i < first + n; i++) {
        int a, b, c;

        snprintf(sid, sizeof(sid), "%s-%u", tag, i);
        a = compose(fd, sid, out, sizeof(out));
        b = a == 200 ? compose(fd, sid, out, sizeof(out)) : a;
        c = b == 200 ? compose(fd, sid, out, sizeof(out)) : b;
        locked[i - first] = a == 200 && b == 200 && c == 429;
        *nlocked += locked[i - first];
        *n503 += a == 503;
        *other += !locked[i - first] && a != 503;
    }
}

/* How many of the sessions locked[] marks are no longer refused. */
static long locks_lost(int fd, const char *tag, unsigned n, const bool *locked)
{
    char sid[64], out[2048];
    long lost = 0;

    for (unsigned i = 0; i < n; i++) {
        if (locked[i]) {
            snprintf(sid, sizeof(sid), "%s-%u", tag, i);
            lost += compose(fd, sid, out, sizeof(out)) != 429;
        }
    }
    return lost;
}

/* Locked identities fill the store: counters go before any lock; once
 * only locks are left, a new identity is refused (503, "store full") and
 * every lock holds, the oldest included.
 *
 * FIRST: the locks before the flood of counters, spread by the store's
 * secret hash over its 64 shards of 32 entries.  A shard full of locks
 * refuses its share of the flood (503) while the store has room, so
 * FIRST stays where no shard fills by chance: of 1,001 locks a shard got
 * 32 or more in about 1 store in 100 (the flood or the locking then got
 * 503s); of 601, in about 1 in 4 million. */
static void test_flood_locks(void)
{
    enum { FIRST = ABUSE_CAP * 3 / 10, MORE = 3 * ABUSE_CAP };
    static bool first_locked[FIRST], more_locked[MORE];
    long nlocked = 0, n503 = 0, other = 0, lost, retry;
    char out[4096];
    long long t0;
    char *log;
    int fd;

    CU_ASSERT_FATAL(start_authorizer(ABUSE_CAP, 2) == 0);
    fd = e2e_fcgi_connect();
    CU_ASSERT_FATAL(fd >= 0);
    t0 = mono_ms();
    CU_ASSERT_EQUAL(compose(fd, "victim", out, sizeof(out)), 200);
    CU_ASSERT_EQUAL(compose(fd, "victim", out, sizeof(out)), 200);
    CU_ASSERT_EQUAL(compose(fd, "victim", out, sizeof(out)), 429);

    /* A third of the store locked, then a flood of counters: they evict each
     * other, never a lock (before, a shard whose 16 oldest entries were
     * locks evicted its oldest lock: the victim's among them). */
    lock_sessions(fd, "lock", 0, FIRST, first_locked, &nlocked, &n503, &other);
    if (nlocked != FIRST) {
        fprintf(stderr, "\n  %d lock attempts: %ld locked, %ld 503, %ld other ",
                FIRST, nlocked, n503, other);
    }
    CU_ASSERT_EQUAL(nlocked, FIRST);
    CU_ASSERT_EQUAL(flood_sessions(fd, "count", 0, 10 * ABUSE_CAP),
                    10 * ABUSE_CAP);
    lost = locks_lost(fd, "lock", FIRST, first_locked);
    fprintf(stderr,
            "\n  %d locks, %d counters: %ld locks lost, %ld store full ", FIRST,
            10 * ABUSE_CAP, lost, store_full_lines());
    CU_ASSERT_EQUAL(lost, 0);
    CU_ASSERT_EQUAL(compose(fd, "victim", out, sizeof(out)), 429);

    /* Three times the store's size in more locks: they take the
     * counters' room; past that, new identities are refused. */
    nlocked = n503 = other = 0;
    lock_sessions(fd, "more", 0, MORE, more_locked, &nlocked, &n503, &other);
    fprintf(stderr,
            "\n  %d more lock attempts (cap %d): %ld locked, %ld 503, "
            "%ld other ",
            MORE, ABUSE_CAP, nlocked, n503, other);
    CU_ASSERT(n503 > 0);
    CU_ASSERT_EQUAL(other, 0);
    CU_ASSERT(FIRST + 1 + nlocked <= ABUSE_CAP + 64);
    CU_ASSERT_EQUAL(compose(fd, "fresh", out, sizeof(out)), 503);

    /* Every lock holds, with its original end. */
    CU_ASSERT_EQUAL(locks_lost(fd, "lock", FIRST, first_locked), 0);
    CU_ASSERT_EQUAL(locks_lost(fd, "more", MORE, more_locked), 0);
    CU_ASSERT_EQUAL(compose(fd, "victim", out, sizeof(out)), 429);
    retry = abuse_retry_after(out);
    CU_ASSERT(retry <= LOCK_S && retry >= LOCK_S - 1 - (mono_ms() - t0) / 1000);
    close(fd);
    log = test_read_file(e2e.log, NULL);
    CU_ASSERT_PTR_NOT_NULL(log != NULL ? strstr(log, "(store full)") : NULL);
    free(log);
}

/* Registers the "abuse" suite. */
int register_abuse_suite(void)
{
    CU_pSuite s = CU_add_suite_with_setup_and_teardown("abuse", NULL, NULL,
                                                       e2e_setup, e2e_teardown);

    if (s == NULL ||
        CU_add_test(s, "100k sessions: memory bounded, lock kept",
                    test_flood_sessions) == NULL ||
        CU_add_test(s, "100k IPv6 addresses: /64 grouping, memory bounded",
                    test_flood_ipv6) == NULL ||
        CU_add_test(s, "locks fill the store: none evicted",
                    test_flood_locks) == NULL ||
        abuse_add_bytes_tests(s) != 0 || abuse_add_parser_tests(s) != 0 ||
        abuse_add_path_tests(s) != 0 || abuse_add_env_tests(s) != 0 ||
        abuse_add_slow_tests(s) != 0 || abuse_add_readings_tests(s) != 0 ||
        abuse_add_target_tests(s) != 0 || abuse_add_cookie_tests(s) != 0 ||
        abuse_add_multipart_tests(s) != 0 || abuse_add_reset_tests(s) != 0 ||
        abuse_add_cgipm_tests(s) != 0) {
        return -1;
    }
    return 0;
}
