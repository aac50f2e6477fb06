/*
 * test_keys.c - key formats, escaping of hostile values, the length cap and
 * SHA-256.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sha256.h"
#include "suites.h"
#include "suspect_policy.h"
#include "helpers/util.h"

/* The window key built for value (given with its length) under opts,
 * written into window (the caller's), or "<error>". */
static const char *window_of(char window[SUSPECT_KEY_MAX],
                             const suspect_keyopts_t *opts, const char *action,
                             const char *value, size_t len)
{
    suspect_key_t key;
    suspect_identity_t id = test_identity("MemberCode", "");
    id.part[0].ptr = value;
    id.part[0].len = len;
    if (suspect_key_build(opts, action, &id, &key, NULL) != SUSPECT_OK) {
        return "<error>";
    }
    memcpy(window, key.buf, key.window_len);
    window[key.window_len] = '\0';
    return window;
}

#define WINDOW(window, value)                                                  \
    window_of(window, NULL, "Login", value, strlen(value))

static void test_seed_format(void)
{
    char win[SUSPECT_KEY_MAX];
    suspect_key_t key = test_key("BankAccountUpdate", "192.168.1.1");
    CU_ASSERT_EQUAL(key.window_len, strlen("BankAccountUpdate:192.168.1.1"));
    CU_ASSERT_NSTRING_EQUAL(key.buf, "BankAccountUpdate:192.168.1.1",
                            key.window_len);
    CU_ASSERT_STRING_EQUAL(key.buf, "BankAccountUpdate:192.168.1.1:locked");
    CU_ASSERT_EQUAL(key.lock_len, key.window_len + 7);
    CU_ASSERT_STRING_EQUAL(WINDOW(win, "user123"), "Login:user123");
    CU_ASSERT_STRING_EQUAL(WINDOW(win, "會員A"), "Login:會員A");
}

static void test_addresses_kept_as_is(void)
{
    char win[SUSPECT_KEY_MAX];
    CU_ASSERT_STRING_EQUAL(WINDOW(win, "2001:db8::1"), "Login:2001:db8::1");
    CU_ASSERT_STRING_EQUAL(WINDOW(win, "2001:db8:1:2::/64"),
                           "Login:2001:db8:1:2::/64");
    CU_ASSERT_STRING_EQUAL(WINDOW(win, "10.0.0.0/8"), "Login:10.0.0.0/8");
}

static void test_typed_format_and_prefix(void)
{
    char win[SUSPECT_KEY_MAX];
    suspect_keyopts_t opts = {SUSPECT_KEYS_TYPED, "app1:", 0, false};
    CU_ASSERT_STRING_EQUAL(window_of(win, &opts, "Login", "10.0.0.1", 8),
                           "app1:Login:MemberCode:10.0.0.1");
    opts.format = SUSPECT_KEYS_SEED;
    CU_ASSERT_STRING_EQUAL(window_of(win, &opts, "Login", "u", 1),
                           "app1:Login:u");
}

/* Redis Cluster's hash tag: what follows the prefix in braces, braces in
 * values escaped (the tag ends where it was closed), none in the prefix;
 * a capped value keeps its tag too. */
static void test_hash_tag(void)
{
    char win[SUSPECT_KEY_MAX], big[600];
    suspect_keyopts_t opts = {SUSPECT_KEYS_SEED, "app1:", 0, true};
    suspect_identity_t id = test_identity("MemberCode", "x");
    suspect_key_t k;

    CU_ASSERT_STRING_EQUAL(window_of(win, &opts, "Login", "alice", 5),
                           "app1:{Login:alice}");
    CU_ASSERT_STRING_EQUAL(window_of(win, &opts, "Login", "a}b{c", 5),
                           "app1:{Login:a%7Db%7Bc}");
    opts.format = SUSPECT_KEYS_TYPED;
    CU_ASSERT_STRING_EQUAL(window_of(win, &opts, "Login", "10.0.0.1", 8),
                           "app1:{Login:MemberCode:10.0.0.1}");
    CU_ASSERT_EQUAL(suspect_key_build(&opts, "Login", &id, &k, NULL), 0);
    CU_ASSERT_STRING_EQUAL(k.buf, "app1:{Login:MemberCode:x}:locked");
    memset(big, 'v', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    id = test_identity("MemberCode", big);
    CU_ASSERT_EQUAL(suspect_key_build(&opts, "Login", &id, &k, NULL), 0);
    CU_ASSERT_EQUAL(k.buf[k.window_len - 1], '}');
    CU_ASSERT_PTR_NOT_NULL(strstr(k.buf, "%~"));
    opts.prefix = "app{1}:";
    CU_ASSERT_EQUAL(suspect_key_build(&opts, "Login", &id, &k, NULL),
                    SUSPECT_E_INVAL);
    opts.hash_tag = false;
    CU_ASSERT_EQUAL(suspect_key_build(&opts, "Login", &id, &k, NULL), 0);
}

static void test_composite_joins_with_underscore(void)
{
    suspect_identity_t a = test_identity("Promo", "M1");
    suspect_identity_t b = test_identity("Promo", "a_b");
    suspect_key_t ka, kb;

    a.nparts = 2;
    a.part[1].ptr = "P1";
    a.part[1].len = 2;
    CU_ASSERT_EQUAL(suspect_key_build(NULL, "PromoQuery", &a, &ka, NULL), 0);
    CU_ASSERT_STRING_EQUAL(ka.buf, "PromoQuery:M1_P1:locked");

    /* "a_b" + "c" and "a" + "b_c" must not share a key. */
    b.nparts = 2;
    b.part[1].ptr = "c";
    b.part[1].len = 1;
    a.part[0].ptr = "a";
    a.part[0].len = 1;
    a.part[1].ptr = "b_c";
    a.part[1].len = 3;
    CU_ASSERT_EQUAL(suspect_key_build(NULL, "PromoQuery", &a, &ka, NULL), 0);
    CU_ASSERT_EQUAL(suspect_key_build(NULL, "PromoQuery", &b, &kb, NULL), 0);
    CU_ASSERT_STRING_EQUAL(ka.buf, "PromoQuery:a_b%5Fc:locked");
    CU_ASSERT_STRING_EQUAL(kb.buf, "PromoQuery:a%5Fb_c:locked");
}

static void test_value_cannot_name_a_lock(void)
{
    char win[SUSPECT_KEY_MAX];
    suspect_key_t victim = test_key("Login", "alice");
    suspect_key_t attacker = test_key("Login", "alice:locked");
    CU_ASSERT_FALSE(attacker.window_len == victim.lock_len &&
                    memcmp(attacker.buf, victim.buf, victim.lock_len) == 0);
    CU_ASSERT_STRING_EQUAL(WINDOW(win, "alice:locked"), "Login:alice%3Alocked");
}

static void test_hostile_bytes_escaped(void)
{
    char win[SUSPECT_KEY_MAX];
    CU_ASSERT_STRING_EQUAL(window_of(win, NULL, "Login", "a\0b", 3),
                           "Login:a%00b");
    CU_ASSERT_STRING_EQUAL(WINDOW(win, "a\r\nSet-Cookie: x"),
                           "Login:a%0D%0ASet-Cookie%3A%20x");
    CU_ASSERT_STRING_EQUAL(WINDOW(win, "100%"), "Login:100%25");
    CU_ASSERT_STRING_EQUAL(WINDOW(win, "%3A"), "Login:%253A");
    CU_ASSERT_STRING_EQUAL(WINDOW(win, "\x7f"), "Login:%7F");
    CU_ASSERT_STRING_EQUAL(WINDOW(win, "\xff\xfe"), "Login:%FF%FE");
    CU_ASSERT_STRING_EQUAL(WINDOW(win, "\xc0\x80"),
                           "Login:%C0%80"); /* overlong */
    CU_ASSERT_STRING_EQUAL(WINDOW(win, "\xed\xa0\x80"), "Login:%ED%A0%80");
    CU_ASSERT_STRING_EQUAL(WINDOW(win, "\xf4\x90\x80\x80"),
                           "Login:%F4%90%80%80");
    CU_ASSERT_STRING_EQUAL(WINDOW(win, "\xe6\x9c"), "Login:%E6%9C"); /* cut */
}

/* True when every '%' in s starts "%XX" (hex) or is the "%~" tail. */
static int escapes_whole(const char *s)
{
    for (const char *p = strchr(s, '%'); p != NULL; p = strchr(p + 1, '%')) {
        int hex = strchr("0123456789ABCDEF", p[1]) != NULL && p[1] != '\0' &&
                  strchr("0123456789ABCDEF", p[2]) != NULL && p[2] != '\0';
        if (!hex && p[1] != '~') {
            return 0;
        }
    }
    return 1;
}

static void test_long_values_capped_distinctly(void)
{
    char win[SUSPECT_KEY_MAX];
    size_t len = 64 * 1024;
    char *a = malloc(len), *b = malloc(len);
    char ka[SUSPECT_KEY_MAX], kb[SUSPECT_KEY_MAX];

    memset(a, 'x', len);
    memcpy(b, a, len);
    b[len - 1] = 'y';
    snprintf(ka, sizeof(ka), "%s", window_of(win, NULL, "Login", a, len));
    snprintf(kb, sizeof(kb), "%s", window_of(win, NULL, "Login", b, len));
    CU_ASSERT_TRUE(strlen(ka) <= strlen("Login:") + 256);
    CU_ASSERT_PTR_NOT_NULL(strstr(ka, "%~"));
    CU_ASSERT_STRING_NOT_EQUAL(ka, kb);
    CU_ASSERT_STRING_EQUAL(ka, window_of(win, NULL, "Login", a, len));

    /* Escapes are never cut in half by the cap. */
    memset(a, ':', len);
    snprintf(ka, sizeof(ka), "%s", window_of(win, NULL, "Login", a, len));
    CU_ASSERT_TRUE(escapes_whole(ka));
    CU_ASSERT_TRUE(strlen(ka) <= strlen("Login:") + 256);

    /* A value exactly at the cap is kept whole. */
    memset(a, 'z', 256);
    snprintf(ka, sizeof(ka), "%s", window_of(win, NULL, "Login", a, 256));
    CU_ASSERT_EQUAL(strlen(ka), strlen("Login:") + 256);
    CU_ASSERT_PTR_NULL(strstr(ka, "%~"));
    free(a);
    free(b);
}

static void test_invalid_arguments(void)
{
    suspect_identity_t id = test_identity("MemberCode", "x");
    suspect_keyopts_t opts = {SUSPECT_KEYS_SEED, "bad prefix", 0, false};
    suspect_key_t key;
    suspect_err_t err;

    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(suspect_key_build(NULL, "bad action", &id, &key, &err),
                    SUSPECT_E_INVAL);
    CU_ASSERT_STRING_EQUAL(err.text, "key: invalid action name");
    CU_ASSERT_EQUAL(suspect_key_build(&opts, "Login", &id, &key, NULL),
                    SUSPECT_E_INVAL);
    opts.prefix = NULL;
    opts.max_value_len = 4096;
    CU_ASSERT_EQUAL(suspect_key_build(&opts, "Login", &id, &key, NULL),
                    SUSPECT_E_INVAL);
    opts.max_value_len = 0;
    opts.format = SUSPECT_KEYS_TYPED;
    id.type = NULL;
    CU_ASSERT_EQUAL(suspect_key_build(&opts, "Login", &id, &key, NULL),
                    SUSPECT_E_INVAL);
    id = test_identity("MemberCode", "");
    CU_ASSERT_EQUAL(suspect_key_build(NULL, "Login", &id, &key, NULL),
                    SUSPECT_E_INVAL);
    id = test_identity("MemberCode", "x");
    id.nparts = SUSPECT_MAX_PARTS + 1;
    CU_ASSERT_EQUAL(suspect_key_build(NULL, "Login", &id, &key, NULL),
                    SUSPECT_E_INVAL);
}

static void test_name_valid(void)
{
    CU_ASSERT_TRUE(suspect_name_valid("BankAccountUpdate", 17));
    CU_ASSERT_TRUE(suspect_name_valid("_x.y-z9", 7));
    CU_ASSERT_FALSE(suspect_name_valid("9lives", 6));
    CU_ASSERT_FALSE(suspect_name_valid("-x", 2));
    CU_ASSERT_FALSE(suspect_name_valid("a:b", 3));
    CU_ASSERT_FALSE(suspect_name_valid("", 0));
    CU_ASSERT_TRUE(suspect_name_valid(
        "a234567890123456789012345678901234567890123456789012345678901234",
        64));
    CU_ASSERT_FALSE(suspect_name_valid(
        "a2345678901234567890123456789012345678901234567890123456789012345",
        65));
}

/* Hex of the SHA-256 digest of data, written into hex (the caller's). */
static const char *sha_hex(char hex[65], const void *data, size_t len)
{
    uint8_t d[SUSPECT_SHA256_LEN];
    suspect_sha256(data, len, d);
    for (int i = 0; i < 32; i++) {
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    }
    return hex;
}

static void test_sha256_vectors(void)
{
    char hex[65];
    const char *two =
        "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    char *million = malloc(1000000);

    CU_ASSERT_STRING_EQUAL(
        sha_hex(hex, "", 0),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CU_ASSERT_STRING_EQUAL(
        sha_hex(hex, "abc", 3),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    CU_ASSERT_STRING_EQUAL(
        sha_hex(hex, two, strlen(two)),
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    memset(million, 'a', 1000000);
    CU_ASSERT_STRING_EQUAL(
        sha_hex(hex, million, 1000000),
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(million);
}

int register_keys_suite(void)
{
    CU_pSuite s = CU_add_suite("keys", NULL, NULL);
    if (s == NULL || !CU_add_test(s, "seed format", test_seed_format) ||
        !CU_add_test(s, "addresses kept", test_addresses_kept_as_is) ||
        !CU_add_test(s, "typed format and prefix",
                     test_typed_format_and_prefix) ||
        !CU_add_test(s, "composite", test_composite_joins_with_underscore) ||
        !CU_add_test(s, "hash tag", test_hash_tag) ||
        !CU_add_test(s, "value cannot name a lock",
                     test_value_cannot_name_a_lock) ||
        !CU_add_test(s, "hostile bytes escaped", test_hostile_bytes_escaped) ||
        !CU_add_test(s, "long values capped",
                     test_long_values_capped_distinctly) ||
        !CU_add_test(s, "invalid arguments", test_invalid_arguments) ||
        !CU_add_test(s, "name valid", test_name_valid) ||
        !CU_add_test(s, "sha256 vectors", test_sha256_vectors)) {
        return -1;
    }
    return 0;
}
