/*
 * test_addr.c - suite "request", addresses: address parsing and
 * identity text, trusted proxy blocks and lists, and the client address
 * behind X-Forwarded-For and Forwarded (middleware/request/addr.c).
 * Most tests are tables: input, expected outcome.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request/lookup.h"
#include "request_test.h"

/* ---- addresses ---------------------------------------------------------- */

/* The identity text of address text s with prefixes v4, v6 (0 = default),
 * in buf (the caller's), or INVAL. */
static const char *ident(char buf[MW_ADDR_TEXT_MAX], const char *s, unsigned v4,
                         unsigned v6)
{
    mw_addr_t a;
    size_t len = 0;

    if (mw_addr_parse(s, strlen(s), &a) != SUSPECT_OK) {
        return INVAL;
    }
    if (mw_addr_identity(&a, v4, v6, buf, &len) != SUSPECT_OK) {
        return INVAL;
    }
    CU_ASSERT_EQUAL(len, strlen(buf));
    return buf;
}

static const struct {
    const char *in, *want;
} addr_cases[] = {
    {"192.0.2.1", "192.0.2.1"},
    {"0.0.0.0", "0.0.0.0"},
    {"255.255.255.255", "255.255.255.255"},
    {"::1", "::/64"},
    {"2001:DB8::1", "2001:db8::/64"},
    {"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
    {"::ffff:192.0.2.1", "192.0.2.1"},
    {"::FFFF:c000:0201", "192.0.2.1"},
    {"fe80::1%eth0", "fe80::/64"},
    {"", INVAL},
    {"1.2.3", INVAL},
    {"1.2.3.4.5", INVAL},
    {"256.1.1.1", INVAL},
    {"01.2.3.4", INVAL},
    {" 1.2.3.4", INVAL},
    {"1.2.3.4 ", INVAL},
    {"2001:db8::g", INVAL},
    {"fe80::1%", INVAL},
    {"[::1]", INVAL},
    {"1.2.3.4/8", INVAL},
    {"1.2.3.4:80", INVAL},
    {"unknown", INVAL},
    {"1:2:3:4:5:6:7:8:9", INVAL},
};

static void test_addr_parse_table(void)
{
    char text[MW_ADDR_TEXT_MAX];
    for (size_t i = 0; i < sizeof(addr_cases) / sizeof(addr_cases[0]); i++) {
        const char *got = ident(text, addr_cases[i].in, 0, 0);
        const char *want = addr_cases[i].want;
        if (strcmp(got, want) != 0) {
            fprintf(stderr, "\naddr case %zu [%s]: got [%s] want [%s]\n", i,
                    addr_cases[i].in, got, want);
        }
        CU_ASSERT_STRING_EQUAL(got, want);
    }
}

static void test_addr_parse_embedded_nul(void)
{
    mw_addr_t a;

    CU_ASSERT_EQUAL(mw_addr_parse("1.2.3.4\0x", 9, &a), SUSPECT_E_INVAL);
    CU_ASSERT_EQUAL(mw_addr_parse("1.2.3.4xx", 7, &a), SUSPECT_OK);
    CU_ASSERT_EQUAL(a.family, MW_AF_V4);
    CU_ASSERT_EQUAL(a.bytes[3], 4);
}

static void test_identity_grouping(void)
{
    char text[MW_ADDR_TEXT_MAX];
    CU_ASSERT_STRING_EQUAL(ident(text, "192.0.2.77", 24, 0), "192.0.2.0/24");
    CU_ASSERT_STRING_EQUAL(ident(text, "192.0.2.77", 32, 0), "192.0.2.77");
    CU_ASSERT_STRING_EQUAL(ident(text, "192.0.2.77", 1, 0), "128.0.0.0/1");
    CU_ASSERT_STRING_EQUAL(ident(text, "192.0.2.77", 33, 0), INVAL);
    CU_ASSERT_STRING_EQUAL(ident(text, "2001:db8:1:2:3:4:5:6", 0, 128),
                           "2001:db8:1:2:3:4:5:6");
    CU_ASSERT_STRING_EQUAL(ident(text, "2001:db8:1:2:3:4:5:6", 0, 48),
                           "2001:db8:1::/48");
    CU_ASSERT_STRING_EQUAL(ident(text, "2001:db8:1:2:3:4:5:6", 0, 56),
                           "2001:db8:1::/56");
    CU_ASSERT_STRING_EQUAL(ident(text, "2001:db8:1:2ff:3:4:5:6", 0, 60),
                           "2001:db8:1:2f0::/60");
    CU_ASSERT_STRING_EQUAL(ident(text, "2001:db8::1", 0, 129), INVAL);
    CU_ASSERT_STRING_EQUAL(ident(text, "::ffff:10.1.2.3", 8, 0), "10.0.0.0/8");
    CU_ASSERT_STRING_EQUAL(
        ident(text, "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 0, 127),
        "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe/127");
}

/* True when s holds only the bytes policy/keys.c keeps unescaped. */
static bool key_safe(const char *s)
{
    return s[0] != '\0' && strspn(s, "0123456789abcdefABCDEF:./") == strlen(s);
}

static void test_identity_key_safe(void)
{
    char text[MW_ADDR_TEXT_MAX];
    static const char *const in[] = {
        "192.0.2.1",    "::1",
        "2001:db8::1",  "::ffff:1.2.3.4",
        "fe80::1%eth0", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
        "::1.2.3.4",
    };
    for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
        CU_ASSERT_TRUE(key_safe(ident(text, in[i], 0, 0)));
        CU_ASSERT_TRUE(key_safe(ident(text, in[i], 8, 128)));
        CU_ASSERT_TRUE(key_safe(ident(text, in[i], 32, 1)));
    }
}

/* ---- trusted proxy blocks ----------------------------------------------- */

static const struct {
    const char *in;
    const char *want; /* "family/prefix addr", or a fragment of the error */
    bool ok;
} cidr_cases[] = {
    {"10.0.0.0/8", "4/8 10.0.0.0", true},
    {"::1/128", "6/128 ::1", true},
    {"127.0.0.1", "4/32 127.0.0.1", true},
    {"2001:db8::", "6/128 2001:db8::", true},
    {"0.0.0.0/0", "4/0 0.0.0.0", true},
    {"::/0", "6/0 ::", true},
    {"::ffff:10.0.0.0/104", "4/8 10.0.0.0", true},
    {"::ffff:10.0.0.1", "4/32 10.0.0.1", true},
    {"2001:db8::/32", "6/32 2001:db8::", true},
    {"10.0.0.0/08", "4/8 10.0.0.0", true},
    {"10.0.0.0/33", "prefix length 33 is longer than the address (32)", false},
    {"::/129", "prefix length 129 is longer than the address (128)", false},
    {"10.0.0.1/8", "bits are set after the prefix /8", false},
    {"2001:db8::1/64", "bits are set after the prefix /64", false},
    {"10.0.0.0/", "the prefix length after '/' is not a number", false},
    {"10.0.0.0/x", "the prefix length after '/' is not a number", false},
    {"10.0.0.0/-1", "the prefix length after '/' is not a number", false},
    {"10.0.0.0/8/9", "the prefix length after '/' is not a number", false},
    {"10.0.0.0/0008", "the prefix length after '/' is not a number", false},
    {"10.0.0/8", "not an IPv4 or IPv6 address", false},
    {"hello", "not an IPv4 or IPv6 address", false},
    {"/8", "not an IPv4 or IPv6 address", false},
    {"::ffff:10.0.0.0/95", "an IPv4-mapped block needs a prefix of at least 96",
     false},
    {"", "address block: empty", false},
};

static void test_cidr_table(void)
{
    for (size_t i = 0; i < sizeof(cidr_cases) / sizeof(cidr_cases[0]); i++) {
        const char *in = cidr_cases[i].in;
        suspect_err_t err;
        mw_cidr_t c;
        char got[SUSPECT_ERR_TEXT_MAX + 64];
        suspect_rc_t rc;

        suspect_err_clear(&err);
        rc = mw_cidr_parse(in, strlen(in), &c, &err);
        if (rc == SUSPECT_OK) {
            char text[MW_ADDR_TEXT_MAX];
            size_t len;
            mw_addr_identity(&c.addr, 32, 128, text, &len);
            snprintf(got, sizeof(got), "%d/%u %s", c.addr.family, c.prefix,
                     text);
        } else {
            CU_ASSERT_EQUAL(rc, SUSPECT_E_CONFIG);
            CU_ASSERT_EQUAL(err.code, SUSPECT_E_CONFIG);
            snprintf(got, sizeof(got), "%s", err.text);
        }
        CU_ASSERT_EQUAL(rc == SUSPECT_OK, cidr_cases[i].ok);
        if (strstr(got, cidr_cases[i].want) == NULL) {
            fprintf(stderr, "\ncidr case %zu [%s]: got [%s] want [%s]\n", i, in,
                    got, cidr_cases[i].want);
        }
        CU_ASSERT_PTR_NOT_NULL(strstr(got, cidr_cases[i].want));
        if (!cidr_cases[i].ok && in[0] != '\0') {
            /* the message names the input */
            CU_ASSERT_PTR_NOT_NULL(strstr(err.text, in));
        }
    }
}

static bool trusted(const mw_trust_t *t, const char *s)
{
    mw_addr_t a;

    CU_ASSERT_FATAL(mw_addr_parse(s, strlen(s), &a) == SUSPECT_OK);
    return mw_trust_contains(t, &a);
}

static void test_trust_list(void)
{
    const char *list = "10.0.0.0/8, ::1/128  127.0.0.1,,\n2001:db8:ff::/48";
    mw_trust_t t;
    suspect_err_t err;

    memset(&t, 0, sizeof(t));
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(mw_trust_parse(&t, list, strlen(list), &err), SUSPECT_OK);
    CU_ASSERT_EQUAL(t.n, 4);
    CU_ASSERT_TRUE(trusted(&t, "10.255.0.1"));
    CU_ASSERT_TRUE(trusted(&t, "::ffff:10.1.1.1"));
    CU_ASSERT_TRUE(trusted(&t, "::1"));
    CU_ASSERT_TRUE(trusted(&t, "127.0.0.1"));
    CU_ASSERT_TRUE(trusted(&t, "2001:db8:ff:1234::9"));
    CU_ASSERT_FALSE(trusted(&t, "127.0.0.2"));
    CU_ASSERT_FALSE(trusted(&t, "11.0.0.1"));
    CU_ASSERT_FALSE(trusted(&t, "::2"));
    CU_ASSERT_FALSE(trusted(&t, "2001:db8:fe::1"));
    CU_ASSERT_FALSE(mw_trust_contains(NULL, &t.cidr[0].addr));
    CU_ASSERT_EQUAL(mw_trust_parse(&t, NULL, 0, NULL), SUSPECT_OK);
    CU_ASSERT_EQUAL(mw_trust_parse(&t, NULL, 3, NULL), SUSPECT_E_INVAL);
    CU_ASSERT_EQUAL(t.n, 4);

    /* a bad block stops the list and names itself */
    memset(&t, 0, sizeof(t));
    list = "10.0.0.0/8, 192.168.0.0/33, ::1";
    CU_ASSERT_EQUAL(mw_trust_parse(&t, list, strlen(list), &err),
                    SUSPECT_E_CONFIG);
    CU_ASSERT_EQUAL(t.n, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "\"192.168.0.0/33\""));
}

static void test_trust_list_full(void)
{
    char list[MW_TRUST_MAX * 16 + 32];
    size_t n = 0;
    mw_trust_t t;
    suspect_err_t err;

    for (int i = 0; i <= MW_TRUST_MAX; i++) {
        n += (size_t)snprintf(list + n, sizeof(list) - n, "10.0.%d.0/24 ", i);
    }
    memset(&t, 0, sizeof(t));
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(mw_trust_parse(&t, list, n, &err), SUSPECT_E_FULL);
    CU_ASSERT_EQUAL(t.n, MW_TRUST_MAX);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "more than 64"));
}

/* ---- the client address ------------------------------------------------- */

static mw_trust_t proxies;

/* The trusted proxies of the client address tests. */
int request_addr_init(void)
{
    const char *list = "10.0.0.0/8, 2001:db8:ffff::/48, 127.0.0.1";

    memset(&proxies, 0, sizeof(proxies));
    return mw_trust_parse(&proxies, list, strlen(list), NULL) == SUSPECT_OK
               ? 0
               : -1;
}

/* The client identity (default grouping) for remote, XFF and Forwarded, in
 * buf (the caller's), or INVAL. */
static const char *client(char buf[MW_ADDR_TEXT_MAX], const char *remote,
                          const char *xff, const char *fwd)
{
    mw_client_src_t src;
    mw_addr_t a;
    size_t len;

    memset(&src, 0, sizeof(src));
    src.trust = &proxies;
    src.remote = remote;
    src.remote_len = strlen(remote);
    src.xff = xff;
    src.xff_len = xff != NULL ? strlen(xff) : 0;
    src.forwarded = fwd;
    src.forwarded_len = fwd != NULL ? strlen(fwd) : 0;
    if (mw_client_addr(&src, &a) != SUSPECT_OK ||
        mw_addr_identity(&a, 0, 128, buf, &len) != SUSPECT_OK) {
        return INVAL;
    }
    return buf;
}

static const struct {
    const char *remote, *xff, *fwd, *want;
} client_cases[] = {
    /* an untrusted peer: its forwarded headers are ignored (spoofing) */
    {"203.0.113.9", "1.2.3.4", NULL, "203.0.113.9"},
    {"203.0.113.9", NULL, "for=1.2.3.4", "203.0.113.9"},
    {"203.0.113.9", "10.0.0.5", NULL, "203.0.113.9"},
    {"10.0.0.1", NULL, NULL, "10.0.0.1"},
    {"127.0.0.1", "", NULL, "127.0.0.1"},
    {"127.0.0.1", "  ", NULL, "127.0.0.1"},
    {"10.0.0.1", "198.51.100.7", NULL, "198.51.100.7"},
    /* two trusted proxies */
    {"10.0.0.1", "198.51.100.7, 10.0.0.2", NULL, "198.51.100.7"},
    {"10.0.0.1", "198.51.100.7,10.0.0.2", NULL, "198.51.100.7"},
    /* whatever the client put on the left is not believed */
    {"10.0.0.1", "1.1.1.1, 198.51.100.7, 10.0.0.2", NULL, "198.51.100.7"},
    {"10.0.0.1", "10.9.9.9, 198.51.100.7", NULL, "198.51.100.7"},
    /* every hop trusted: the leftmost */
    {"10.0.0.1", "10.0.0.3, 10.0.0.2", NULL, "10.0.0.3"},
    /* garbage stops the walk at the last good address */
    {"10.0.0.1", "garbage, 10.0.0.2", NULL, "10.0.0.2"},
    {"10.0.0.1", "198.51.100.7, garbage", NULL, "10.0.0.1"},
    {"10.0.0.1", "unknown", NULL, "10.0.0.1"},
    {"10.0.0.1", "198.51.100.7, , 10.0.0.2", NULL, "10.0.0.2"},
    {"10.0.0.1", " , 198.51.100.7", NULL, "198.51.100.7"},
    {"10.0.0.1", "[2001:db8::1", NULL, "10.0.0.1"},
    {"10.0.0.1", "1.2.3.4:123456", NULL, "10.0.0.1"},
    {"10.0.0.1", "1.2.3.4:", NULL, "10.0.0.1"},
    {"10.0.0.1", "fe80::1%eth0", NULL, "10.0.0.1"},
    /* ports, brackets, IPv6, mapped */
    {"10.0.0.1", "198.51.100.7:4711", NULL, "198.51.100.7"},
    {"10.0.0.1", "[2001:db8::7]:443", NULL, "2001:db8::7"},
    {"10.0.0.1", "[2001:db8::7]", NULL, "2001:db8::7"},
    {"10.0.0.1", "2001:db8::7", NULL, "2001:db8::7"},
    {"10.0.0.1", "::ffff:198.51.100.7", NULL, "198.51.100.7"},
    {"10.0.0.1", "[::ffff:10.0.0.9]:80, 10.0.0.2", NULL, "10.0.0.9"},
    {"::ffff:10.0.0.1", "198.51.100.7", NULL, "198.51.100.7"},
    {"2001:db8:ffff::1", "203.0.113.5", NULL, "203.0.113.5"},
    {"2001:db8:ffff::1", "2001:db8:1::5, 2001:db8:ffff:1::1", NULL,
     "2001:db8:1::5"},
    /* Forwarded (RFC 7239) */
    {"10.0.0.1", NULL, "for=192.0.2.60;proto=http;by=203.0.113.43",
     "192.0.2.60"},
    {"10.0.0.1", NULL, "for=\"[2001:db8:cafe::17]:4711\"", "2001:db8:cafe::17"},
    {"10.0.0.1", NULL, "for=[2001:db8:cafe::17]:4711", "2001:db8:cafe::17"},
    {"10.0.0.1", NULL, "for=\"[2001:db8::1]\"", "2001:db8::1"},
    {"10.0.0.1", NULL, "for=\"[2001:db8::1]:_p1\"", "2001:db8::1"},
    {"10.0.0.1", NULL, "for=192.0.2.43, for=198.51.100.17", "198.51.100.17"},
    {"10.0.0.1", NULL, "for=198.51.100.17, for=10.0.0.2", "198.51.100.17"},
    {"10.0.0.1", NULL, "for=198.51.100.17;by=x, for=10.0.0.2;proto=https",
     "198.51.100.17"},
    {"10.0.0.1", NULL, "For=\"198.51.100.17:80\"", "198.51.100.17"},
    {"10.0.0.1", NULL, " for = 198.51.100.17 ", "198.51.100.17"},
    {"10.0.0.1", NULL, "for=unknown", "10.0.0.1"},
    {"10.0.0.1", NULL, "for=_hidden, for=10.0.0.2", "10.0.0.2"},
    {"10.0.0.1", NULL, "proto=https", "10.0.0.1"},
    {"10.0.0.1", NULL, "for=\"1.2.3.4;x\"", "10.0.0.1"},
    {"10.0.0.1", NULL, "for=\"1.2.3.4", "10.0.0.1"},
    {"10.0.0.1", NULL, "for=1.2.3.4;for=5.6.7.8", "10.0.0.1"},
    {"10.0.0.1", NULL, "for=", "10.0.0.1"},
    {"10.0.0.1", NULL, "by=\"a,b\";for=198.51.100.17", "198.51.100.17"},
    {"10.0.0.1", NULL, "for=\"\\1.2.3.4\"", "1.2.3.4"},
    /* both headers: Forwarded when it is not blank */
    {"10.0.0.1", "198.51.100.1", "for=198.51.100.2", "198.51.100.2"},
    {"10.0.0.1", "198.51.100.1", " ", "198.51.100.1"},
    /* REMOTE_ADDR must be an address */
    {"", NULL, NULL, INVAL},
    {"garbage", "1.2.3.4", NULL, INVAL},
    {"10.0.0.1:80", NULL, NULL, INVAL},
};

static void test_client_table(void)
{
    char text[MW_ADDR_TEXT_MAX];
    for (size_t i = 0; i < sizeof(client_cases) / sizeof(client_cases[0]);
         i++) {
        const char *got = client(text, client_cases[i].remote,
                                 client_cases[i].xff, client_cases[i].fwd);
        if (strcmp(got, client_cases[i].want) != 0) {
            fprintf(stderr, "\nclient case %zu: got [%s] want [%s]\n", i, got,
                    client_cases[i].want);
        }
        CU_ASSERT_STRING_EQUAL(got, client_cases[i].want);
    }
}

static void test_client_no_trust(void)
{
    mw_client_src_t src;
    mw_addr_t a;

    memset(&src, 0, sizeof(src));
    src.remote = "10.0.0.1";
    src.remote_len = 8;
    src.xff = "198.51.100.7";
    src.xff_len = 12;
    CU_ASSERT_EQUAL(mw_client_addr(&src, &a), SUSPECT_OK);
    CU_ASSERT_EQUAL(a.family, MW_AF_V4);
    CU_ASSERT_EQUAL(a.bytes[0], 10);
    CU_ASSERT_EQUAL(mw_client_addr(NULL, &a), SUSPECT_E_INVAL);
}

/* An XFF value: client, then hops trusted proxies. */
static char *chain(const char *first, int hops)
{
    size_t cap = 32 + (size_t)hops * 12;
    char *s = malloc(cap);
    size_t n;

    CU_ASSERT_FATAL(s != NULL);
    n = (size_t)snprintf(s, cap, "%s", first);
    for (int i = 0; i < hops; i++) {
        n += (size_t)snprintf(s + n, cap - n, ", 10.0.0.%d", i % 250 + 2);
    }
    return s;
}

static void test_client_hop_limit(void)
{
    char text[MW_ADDR_TEXT_MAX];
    char *s = chain("198.51.100.7", MW_HOPS_MAX - 1);

    /* the client is the MW_HOPS_MAX-th hop from the right: found */
    CU_ASSERT_STRING_EQUAL(client(text, "10.0.0.1", s, NULL), "198.51.100.7");
    free(s);
    /* one hop further: the walk stops at the last trusted hop it saw */
    s = chain("198.51.100.7", MW_HOPS_MAX);
    CU_ASSERT_STRING_EQUAL(client(text, "10.0.0.1", s, NULL), "10.0.0.2");
    free(s);
    /* a huge header costs one scan and gives the same answer */
    s = chain("198.51.100.7", 20000);
    CU_ASSERT_STRING_EQUAL(client(text, "10.0.0.1", s, NULL), "10.0.0.220");
    free(s);
    /* the same through Forwarded */
    s = malloc(20000 * 14 + 32);
    CU_ASSERT_FATAL(s != NULL);
    strcpy(s, "for=198.51.100.7");
    for (size_t i = 0, n = strlen(s); i < 20000; i++, n += 14) {
        memcpy(s + n, ", for=10.0.0.9", 15);
    }
    CU_ASSERT_STRING_EQUAL(client(text, "10.0.0.1", NULL, s), "10.0.0.9");
    strcpy(s, "for=198.51.100.7");
    for (int i = 0; i < MW_HOPS_MAX - 1; i++) {
        strcat(s, ", for=\"10.0.0.9:1\"");
    }
    CU_ASSERT_STRING_EQUAL(client(text, "10.0.0.1", NULL, s), "198.51.100.7");
    free(s);
}

static void test_client_v6_grouping(void)
{
    char text[MW_ADDR_TEXT_MAX];
    static const char *const same[] = {
        "2001:db8:1:2::1",
        "2001:db8:1:2:aaaa:bbbb:cccc:dddd",
        "[2001:db8:1:2:ffff:ffff:ffff:ffff]:1234",
        "2001:db8:1:2:0:0:0:9",
    };
    mw_client_src_t src;
    char first[MW_ADDR_TEXT_MAX] = "";

    memset(&src, 0, sizeof(src));
    src.trust = &proxies;
    src.remote = "10.0.0.1";
    src.remote_len = 8;
    /* addresses rotated inside one /64 are one identity */
    for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
        char buf[MW_ADDR_TEXT_MAX];
        mw_addr_t a;
        size_t len;
        src.xff = same[i];
        src.xff_len = strlen(same[i]);
        CU_ASSERT_EQUAL(mw_client_addr(&src, &a), SUSPECT_OK);
        CU_ASSERT_EQUAL(mw_addr_identity(&a, 0, 0, buf, &len), SUSPECT_OK);
        CU_ASSERT_STRING_EQUAL(buf, "2001:db8:1:2::/64");
        if (i == 0) {
            strcpy(first, buf);
        }
    }
    /* two /64s are two */
    CU_ASSERT_STRING_NOT_EQUAL(ident(text, "2001:db8:1:3::1", 0, 0), first);
    CU_ASSERT_STRING_EQUAL(ident(text, "2001:db8:1:3::1", 0, 0),
                           "2001:db8:1:3::/64");
    /* IPv4 clients keep their address by default */
    CU_ASSERT_STRING_EQUAL(ident(text, "198.51.100.7", 0, 0), "198.51.100.7");
    CU_ASSERT_STRING_NOT_EQUAL(ident(text, "198.51.100.7", 0, 0),
                               "198.51.100.8");
}

/* Adds the address tests to suite s. */
int request_register_addr(CU_pSuite s)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        {"address parse table", test_addr_parse_table},
        {"address with NUL", test_addr_parse_embedded_nul},
        {"identity grouping", test_identity_grouping},
        {"identity is key-safe", test_identity_key_safe},
        {"CIDR table", test_cidr_table},
        {"trusted list", test_trust_list},
        {"trusted list full", test_trust_list_full},
        {"client address table", test_client_table},
        {"client without trust", test_client_no_trust},
        {"client hop limit", test_client_hop_limit},
        {"client IPv6 /64", test_client_v6_grouping},
    };

    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return 0;
}
