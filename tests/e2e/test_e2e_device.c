/*
 * test_e2e_device.c - device cookies through a real web server and a
 * real application: nginx -> suspect-fcgi -> php-cgi running
 * examples/app/login.php with examples/suspect-login.xml, whose Login
 * route binds a device cookie to the account (3 failures in 600 s, then
 * locked 600 s).
 *
 * The owner's side: alice signs in once from her browser (a cookie jar)
 * and gets a device cookie; an attacker then locks her account with wrong
 * passwords; her browser still gets in, during the attack and after it,
 * while a browser without the cookie is locked out as before.  The
 * attacker's side: a forged, truncated, another account's or a cookie
 * replayed for another account is counted as the account (locked); a
 * device is held to the action's limit of its own; a key moved to oldKey
 * still lets alice in.  The application logs what it performed, and the
 * test compares: it checked at most 3 of the attacker's passwords.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers/e2e.h"
#include "helpers/redisserver.h"
#include "helpers/vgwrap.h"
#include "helpers/procs.h"
#include "helpers/util.h"

#define ALICE "user=alice&password=correct+horse"
#define BOB   "user=bob&password=battery+staple"

/* One sign-in POST of body with the cookie jar jar (NULL: none) and
 * extra curl args (NULL-terminated, may be NULL); its status, and in
 * set_cookie (when not NULL, the caller's, 256 bytes) the device cookie
 * it was given, "" when none. */
static int sign_in(const char *jar, const char *body, const char *cookie,
                   char *set_cookie)
{
    char url[E2E_URL], path[TEST_PATH_MAX];
    const char *args[10];
    test_http_t r;
    const char *sc;
    int n = 0, status;

    e2e_url(url, "/login.php?op=login");
    if (jar != NULL) {
        e2e_path(path, jar);
        args[n++] = "-c";
        args[n++] = path;
        args[n++] = "-b";
        args[n++] = path;
    }
    if (cookie != NULL) {
        args[n++] = "-H";
        args[n++] = cookie;
    }
    args[n++] = "-d";
    args[n++] = body;
    args[n++] = url;
    args[n] = NULL;
    CU_ASSERT_FATAL(e2e_http(&r, args) == 0);
    status = r.status;
    sc = test_http_header(&r, "set-cookie");
    if (set_cookie != NULL) {
        snprintf(set_cookie, 256, "%s",
                 sc != NULL && strncmp(sc, "suspect_device=", 15) == 0 ? sc
                                                                       : "");
    }
    test_http_free(&r);
    return status;
}

/* Lines of the application's attempts.log that are line. */
static int performed(const char *line)
{
    char path[TEST_PATH_MAX];

    snprintf(path, sizeof(path), "%s/attempts.log", e2e.app);
    return test_count_lines(path, line);
}

/* "Cookie: suspect_device=VALUE" of a Set-Cookie line, into out (256). */
static void cookie_of(const char *set_cookie, char *out)
{
    size_t n = strcspn(set_cookie, ";");

    snprintf(out, 256, "Cookie: %.*s", (int)n, set_cookie);
}

/* The attacker's wrong passwords for alice, from no browser: how many
 * were answered 429. */
static int attack(int n)
{
    char body[64];
    int denied = 0;

    for (int i = 0; i < n; i++) {
        snprintf(body, sizeof(body), "user=alice&password=guess%d", i);
        denied += sign_in(NULL, body, NULL, NULL) == 429;
    }
    return denied;
}

/* Alice signs in, is attacked, and her browser still gets in; another
 * browser, without the cookie, does not. */
static void test_owner_gets_in(void)
{
    char set[256], with[256], url[E2E_URL], dlog[TEST_PATH_MAX];
    const char *edits[] = {"</Suspect>", with, NULL};
    int mport = test_free_port();
    test_http_t r;

    snprintf(with, sizeof(with),
             "  <Metrics listen=\"tcp:127.0.0.1:%d\"/>\n"
             "  <Log decisions=\"all\" path=\"decisions.log\"/>\n</Suspect>",
             mport);
    CU_ASSERT_FATAL(e2e_start_login(edits) == 0);
    CU_ASSERT_EQUAL(sign_in("alice.jar", ALICE, NULL, set), 200);
    CU_ASSERT_PTR_NOT_NULL(strstr(set, "HttpOnly"));
    CU_ASSERT_PTR_NOT_NULL(strstr(set, "SameSite=Lax"));
    CU_ASSERT_PTR_NULL(strstr(set, "alice")); /* the account never in clear */
    CU_ASSERT_EQUAL(attack(10), 7);
    /* during the attack: locked for everyone but alice's browser */
    CU_ASSERT_EQUAL(sign_in("alice.jar", ALICE, NULL, NULL), 200);
    CU_ASSERT_EQUAL(sign_in("other.jar", ALICE, NULL, NULL), 429);
    CU_ASSERT_EQUAL(attack(10), 10);
    CU_ASSERT_EQUAL(sign_in("alice.jar", ALICE, NULL, NULL), 200);
    CU_ASSERT_EQUAL(performed("login fail alice"), 3);
    CU_ASSERT_EQUAL(performed("login ok alice"), 3);
    /* counted and logged as a device: her two sign-ins under attack */
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/metrics", mport);
    CU_ASSERT_FATAL(e2e_http(&r, (const char *[]){url, NULL}) == 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(
        r.body, "suspect_device_decisions_total{outcome=\"allowed\"} 2\n"));
    test_http_free(&r);
    e2e_path(dlog, "decisions.log");
    CU_ASSERT_EQUAL(
        test_wait_file_text(dlog, "\"device\":true", test_scale_ms(5000)), 0);
}

/* Cookies an attacker can make: each counts as the account (locked). */
static void test_cookies_forged(void)
{
    char set[256], good[256], bad[300];
    size_t len;

    CU_ASSERT_FATAL(e2e_start_login(NULL) == 0);
    CU_ASSERT_EQUAL(sign_in("bob.jar", BOB, NULL, set), 200);
    CU_ASSERT_FATAL(set[0] != '\0');
    CU_ASSERT_EQUAL(attack(5), 2); /* alice locked */
    /* bob's device cookie, for alice: another account's */
    cookie_of(set, good);
    CU_ASSERT_EQUAL(sign_in(NULL, ALICE, good, NULL), 429);
    /* a character of it changed, cut, doubled, nothing */
    len = strlen(good);
    snprintf(bad, sizeof(bad), "%s", good);
    bad[len / 2] = bad[len / 2] == 'A' ? 'B' : 'A';
    CU_ASSERT_EQUAL(sign_in(NULL, ALICE, bad, NULL), 429);
    snprintf(bad, sizeof(bad), "%.*s", (int)len - 4, good);
    CU_ASSERT_EQUAL(sign_in(NULL, ALICE, bad, NULL), 429);
    snprintf(bad, sizeof(bad), "%s%s", good, good + 23);
    CU_ASSERT_EQUAL(sign_in(NULL, ALICE, bad, NULL), 429);
    CU_ASSERT_EQUAL(sign_in(NULL, ALICE, "Cookie: suspect_device=", NULL), 429);
    /* bob's own cookie still lets bob in */
    CU_ASSERT_EQUAL(sign_in(NULL, BOB, good, NULL), 200);
    CU_ASSERT_EQUAL(performed("login fail alice"), 3);
    CU_ASSERT_EQUAL(performed("login ok alice"), 0);
}

/* A device is held to the action's limit on its own: three wrong
 * passwords from alice's browser lock that browser, not her account;
 * suspectctl lists it with the account's locks and unblocks it. */
static void test_device_locked_alone(void)
{
    char set[256], cookie[256], *out = NULL, *out2 = NULL, *key;

    CU_ASSERT_FATAL(e2e_start_login(NULL) == 0);
    CU_ASSERT_EQUAL(sign_in(NULL, ALICE, NULL, set), 200);
    cookie_of(set, cookie);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(sign_in(NULL, "user=alice&password=typo", cookie, NULL),
                        401);
    }
    CU_ASSERT_EQUAL(sign_in(NULL, ALICE, cookie, NULL), 429);
    /* the account itself counted none of them: another browser gets in */
    CU_ASSERT_EQUAL(sign_in(NULL, ALICE, NULL, NULL), 200);
    CU_ASSERT_EQUAL(performed("login fail alice"), 3);
    /* suspectctl lists the locked device under its account, and lifts
     * the lock by its key */
    CU_ASSERT_EQUAL(e2e_ctl(&out, (const char *[]){"locked", "Login", NULL}),
                    0);
    key = out != NULL ? strstr(out, "Login:alice_%01device%3A") : NULL;
    CU_ASSERT_PTR_NOT_NULL_FATAL(key);
    key[strcspn(key, " ")] = '\0';
    CU_ASSERT_EQUAL(
        e2e_ctl(&out2, (const char *[]){"-k", key, "unblock", NULL}), 0);
    free(out);
    free(out2);
    CU_ASSERT_EQUAL(sign_in(NULL, ALICE, cookie, NULL), 200);
}

/* Rotation: the key moved to oldKey and a new key: alice's cookie still
 * lets her in, and she is given one of the new key; once oldKey is gone,
 * her old cookie is a stranger's. */
static void test_key_rotation(void)
{
    static const char old_key[] =
        "<DeviceCookie key=\"change-this-to-a-long-random-secret-of-32-or-"
        "more\"/>";
    const char *rotated[] = {
        old_key,
        "<DeviceCookie key=\"a-new-key-of-at-least-thirty-two-characters\" "
        "oldKey=\"change-this-to-a-long-random-secret-of-32-or-more\"/>",
        NULL};
    const char *dropped[] = {
        old_key,
        "<DeviceCookie key=\"a-new-key-of-at-least-thirty-two-characters\"/>",
        NULL};
    char set[256], cookie[256];

    CU_ASSERT_FATAL(e2e_start_login(NULL) == 0);
    CU_ASSERT_EQUAL(sign_in(NULL, ALICE, NULL, set), 200);
    cookie_of(set, cookie);
    e2e_stop();
    CU_ASSERT_FATAL(e2e_start_login(rotated) == 0);
    CU_ASSERT_EQUAL(attack(5), 2);
    CU_ASSERT_EQUAL(sign_in(NULL, ALICE, cookie, set), 200);
    CU_ASSERT(set[0] != '\0');
    e2e_stop();
    CU_ASSERT_FATAL(e2e_start_login(dropped) == 0);
    CU_ASSERT_EQUAL(attack(5), 2);
    CU_ASSERT_EQUAL(sign_in(NULL, ALICE, cookie, NULL), 429);
}

int e2e_add_device_tests(CU_pSuite s)
{
    return CU_add_test(s, "device: the owner's browser gets in",
                       test_owner_gets_in) == NULL ||
                   CU_add_test(s, "device: forged and borrowed cookies",
                               test_cookies_forged) == NULL ||
                   CU_add_test(s, "device: a device locked alone",
                               test_device_locked_alone) == NULL ||
                   CU_add_test(s, "device: key rotation", test_key_rotation) ==
                       NULL
               ? -1
               : 0;
}
