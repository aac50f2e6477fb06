/*
 * test_guard_device.c - device cookies through the guard (device.c): a
 * cookie made for an account at a time is trusted for that account until
 * its expiry, and not a second after; not for another account, nor with
 * a byte changed; a key moved to oldKey still verifies, a dropped one
 * does not.  Trusted, the account is keyed as the device: a key of its
 * own beside the account's.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

#include "guard/guard_internal.h"
#include "helpers/fakereq.h"
#include "guard_test.h"

#define KEY_A "a-device-key-of-at-least-thirty-two-chars"
#define KEY_B "another-device-key-of-thirty-two-or-more"
#define LIFE  600u

/* A guard whose route /login counts by the response with form:u the
 * account, device cookies under key (and old_key, may be NULL). */
static int open_device(gt_fixture_t *f, const char *key, const char *old_key)
{
    static suspect_conf_outcome_t fail = {1, {401}, NULL, NULL, 4096,
                                          1, NULL,  NULL, NULL};
    static suspect_conf_identity_t id;
    static suspect_conf_route_t r;
    suspect_conf_t c;

    id = gt_ident("User", "form:u");
    id.account = true;
    r = gt_route("Many", "/login", &id, 1);
    r.count = SUSPECT_COUNT_FAILURES;
    r.outcomes = &fail;
    r.noutcomes = 1;
    c = gt_conf(&r, 1);
    c.mode = SUSPECT_MODE_FORWARD;
    c.device_key = key;
    c.device_old_key = old_key;
    c.device_name = "suspect_device";
    c.device_lifetime_s = LIFE;
    return gt_open(f, &c);
}

/* The resolution of a sign-in of user with cookie ("NAME=VALUE" or NULL)
 * at now_ms. */
static mw_resolution_t resolve(gt_fixture_t *f, const char *user,
                               const char *cookie, int64_t now_ms)
{
    char body[64], ck[300];
    const char *vars[] = {"REQUEST_METHOD=POST", "REQUEST_URI=/login",
                          "CONTENT_TYPE=application/x-www-form-urlencoded",
                          cookie != NULL ? ck : NULL, NULL};
    mw_resolution_t res;
    fakereq_t r;

    snprintf(body, sizeof(body), "u=%s", user);
    snprintf(ck, sizeof(ck), "HTTP_COOKIE=%s", cookie != NULL ? cookie : "");
    fakereq_init(&r, vars, body, strlen(body));
    CU_ASSERT_EQUAL_FATAL(
        mw_guard_resolve(f->g, f->lim, &r.req, now_ms, &res, NULL), SUSPECT_OK);
    fakereq_free(&r);
    return res;
}

/* The cookie ("NAME=VALUE") a success of user at now_ms earns, into out
 * (256 bytes). */
static void earn(gt_fixture_t *f, const char *user, int64_t now_ms, char *out)
{
    mw_resolution_t res = resolve(f, user, NULL, now_ms);
    const char *vars[] = {"REQUEST_METHOD=POST", NULL};
    char line[256];
    fakereq_t r;
    size_t n;

    CU_ASSERT_FATAL(res.device);
    fakereq_init(&r, vars, NULL, 0);
    n = mw_guard_device_cookie(f->g, &res, &r.req, now_ms, line, sizeof(line));
    fakereq_free(&r);
    CU_ASSERT_FATAL(n > 12);
    snprintf(out, 256, "%.*s", (int)strcspn(line + 12, ";"), line + 12);
}

static void test_expiry(void)
{
    gt_fixture_t f;
    char cookie[256];
    mw_resolution_t res;

    CU_ASSERT_FATAL(open_device(&f, KEY_A, NULL) == 0);
    earn(&f, "alice", GT_NOW, cookie);
    res = resolve(&f, "alice", cookie, GT_NOW + 1000);
    CU_ASSERT_TRUE(res.device_trusted);
    CU_ASSERT_EQUAL(res.nkeys, 1);
    CU_ASSERT_PTR_NOT_NULL(memmem(res.keys[0].buf, res.keys[0].window_len,
                                  "alice_%01device%3A", 18));
    res = resolve(&f, "alice", cookie, GT_NOW + (LIFE - 1) * 1000LL);
    CU_ASSERT_TRUE(res.device_trusted);
    res = resolve(&f, "alice", cookie, GT_NOW + LIFE * 1000LL + 1000);
    CU_ASSERT_FALSE(res.device_trusted); /* expired */
    res = resolve(&f, "bob", cookie, GT_NOW + 1000);
    CU_ASSERT_FALSE(res.device_trusted); /* another account */
    res = resolve(&f, "Alice", cookie, GT_NOW + 1000);
    CU_ASSERT_FALSE(res.device_trusted); /* another value: another account */
    gt_close(&f);
}

static void test_forged(void)
{
    gt_fixture_t f;
    char cookie[256], bad[300];
    size_t eq;

    CU_ASSERT_FATAL(open_device(&f, KEY_A, NULL) == 0);
    earn(&f, "alice", GT_NOW, cookie);
    eq = strcspn(cookie, "=") + 1;
    for (size_t i = eq; i < strlen(cookie); i += 7) {
        snprintf(bad, sizeof(bad), "%s", cookie);
        bad[i] = bad[i] == 'A' ? 'B' : 'A';
        if (resolve(&f, "alice", bad, GT_NOW + 1000).device_trusted) {
            CU_FAIL("a changed cookie is trusted");
        }
    }
    snprintf(bad, sizeof(bad), "__Host-%s", cookie); /* the HTTPS name */
    CU_ASSERT_TRUE(resolve(&f, "alice", bad, GT_NOW + 1000).device_trusted);
    snprintf(bad, sizeof(bad), "suspect_device_x%s", cookie + eq - 1);
    CU_ASSERT_FALSE(resolve(&f, "alice", bad, GT_NOW + 1000).device_trusted);
    gt_close(&f);
}

static void test_rotation(void)
{
    gt_fixture_t f;
    char cookie[256];

    CU_ASSERT_FATAL(open_device(&f, KEY_A, NULL) == 0);
    earn(&f, "alice", GT_NOW, cookie);
    gt_close(&f);
    CU_ASSERT_FATAL(open_device(&f, KEY_B, KEY_A) == 0);
    CU_ASSERT_TRUE(resolve(&f, "alice", cookie, GT_NOW + 1000).device_trusted);
    gt_close(&f);
    CU_ASSERT_FATAL(open_device(&f, KEY_B, NULL) == 0);
    CU_ASSERT_FALSE(resolve(&f, "alice", cookie, GT_NOW + 1000).device_trusted);
    gt_close(&f);
}

int guard_register_devices(CU_pSuite s)
{
    return CU_add_test(s, "device cookies: expiry, other accounts",
                       test_expiry) == NULL ||
                   CU_add_test(s, "device cookies: forged", test_forged) ==
                       NULL ||
                   CU_add_test(s, "device cookies: key rotation",
                               test_rotation) == NULL
               ? -1
               : 0;
}
