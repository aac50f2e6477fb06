/*
 * test_redis_scan.c - the redis-scan suite: suspect_redis_foreach_locked()
 * against a private redis-server: Suspect's locks and the .NET system's,
 * expired and foreign keys left out, the prefix filter with glob
 * characters taken literally, more keys than one SCAN page and one MGET
 * batch, early stop, the server clock, and errors.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "helpers/redisserver.h"
#include "suites.h"
#include "suspect_redis.h"
#include "helpers/util.h"

#define MANY 1200

static test_redis_t srv;

typedef struct seen {
    size_t n;
    size_t stop_after; /* 0 = never stop */
    char keys[16][128];
    int64_t until[16];
    unsigned char many[MANY]; /* how often "p:Many:<i>" was listed */
} seen_t;

static int collect(void *ud, const char *key, size_t key_len, int64_t until)
{
    seen_t *s = ud;
    int i;

    CU_ASSERT_EQUAL(strlen(key), key_len);
    if (sscanf(key, "p:Many:%d", &i) == 1 && i >= 0 && i < MANY) {
        s->many[i]++;
    } else if (s->n < 16) {
        snprintf(s->keys[s->n], sizeof(s->keys[0]), "%s", key);
        s->until[s->n] = until;
    }
    s->n++;
    return s->stop_after != 0 && s->n >= s->stop_after;
}

/* The lock end listed for key, or -1 when it was not listed. */
static int64_t listed(const seen_t *s, const char *key)
{
    for (size_t i = 0; i < s->n && i < 16; i++) {
        if (strcmp(s->keys[i], key) == 0) {
            return s->until[i];
        }
    }
    return -1;
}

static suspect_store_t *store_new(suspect_redis_clock_t clock)
{
    suspect_store_t *s = test_redis_store(srv.url, 1000, clock, "p:");

    CU_ASSERT_PTR_NOT_NULL(s);
    return s;
}

static void redis_do(const char *fmt, const char *key, const char *value)
{
    freeReplyObject(test_redis_cmd(&srv, fmt, key, value));
}

static int suite_init(void)
{
    return test_redis_start(&srv, false, NULL);
}

static int suite_clean(void)
{
    test_redis_stop(&srv);
    return 0;
}

static void test_lists_locks(void)
{
    suspect_store_t *s = store_new(SUSPECT_REDIS_CLOCK_CALLER);
    suspect_keyopts_t ko = {SUSPECT_KEYS_SEED, "p:", 0, false};
    suspect_identity_t id = test_identity("MemberCode", "42");
    int64_t now = wall_ms();
    suspect_key_t k;
    seen_t seen;
    char past[64];

    redis_do("FLUSHALL", NULL, NULL);
    CU_ASSERT_EQUAL_FATAL(suspect_key_build(&ko, "Login", &id, &k, NULL),
                          SUSPECT_OK);
    CU_ASSERT_EQUAL(suspect_store_block(s, &k, now, now + 60000, NULL),
                    SUSPECT_OK);
    snprintf(past, sizeof(past), "old|until=%lld", (long long)(now - 1000));
    redis_do("SET %s %s PX 60000", "p:Login:old:locked", past);
    redis_do("SET %s %s EX 100", "p:Login:net:locked", "net");
    redis_do("SET %s %s", "p:Login:forever:locked", "forever");
    redis_do("ZADD %s 1 %s", "p:Login:zset:locked", "m");
    redis_do("ZADD %s 1 %s", "p:Login:42", "m");
    redis_do("SET %s %s", "Login:noprefix:locked", "x");
    memset(&seen, 0, sizeof(seen));
    CU_ASSERT_EQUAL(
        suspect_redis_foreach_locked(s, "p:", now, collect, &seen, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(seen.n, 3);
    CU_ASSERT_EQUAL(listed(&seen, "p:Login:42"), now + 60000);
    CU_ASSERT_TRUE(listed(&seen, "p:Login:net") >= now + 98000 &&
                   listed(&seen, "p:Login:net") <= now + 100000);
    CU_ASSERT_EQUAL(listed(&seen, "p:Login:forever"), now + 31536000000LL);
    /* NULL lists every lock key, whatever its prefix. */
    memset(&seen, 0, sizeof(seen));
    CU_ASSERT_EQUAL(
        suspect_redis_foreach_locked(s, NULL, now, collect, &seen, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(seen.n, 4);
    CU_ASSERT_TRUE(listed(&seen, "Login:noprefix") > now);
    suspect_store_free(s);
}

static void test_match_literal(void)
{
    suspect_store_t *s = store_new(SUSPECT_REDIS_CLOCK_CALLER);
    int64_t now = wall_ms();
    char value[64];
    seen_t seen;

    redis_do("FLUSHALL", NULL, NULL);
    snprintf(value, sizeof(value), "1|until=%lld", (long long)(now + 5000));
    redis_do("SET %s %s", "a*[b]:Login:1:locked", value);
    redis_do("SET %s %s", "aXXb:Login:1:locked", value);
    redis_do("SET %s %s", "p:Other:1:locked", value);
    memset(&seen, 0, sizeof(seen));
    CU_ASSERT_EQUAL(
        suspect_redis_foreach_locked(s, "a*[b]:", now, collect, &seen, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(seen.n, 1);
    CU_ASSERT_EQUAL(listed(&seen, "a*[b]:Login:1"), now + 5000);
    memset(&seen, 0, sizeof(seen));
    CU_ASSERT_EQUAL(
        suspect_redis_foreach_locked(s, "p:Login:", now, collect, &seen, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(seen.n, 0);
    suspect_store_free(s);
}

/* More keys than a SCAN page (500) and an MGET batch; and an early stop. */
static void test_many_and_stop(void)
{
    suspect_store_t *s = store_new(SUSPECT_REDIS_CLOCK_CALLER);
    seen_t *seen = calloc(1, sizeof(*seen));
    int64_t now = wall_ms();
    char key[64], value[64];
    bool once = true;

    CU_ASSERT_PTR_NOT_NULL_FATAL(seen);
    redis_do("FLUSHALL", NULL, NULL);
    snprintf(value, sizeof(value), "x|until=%lld", (long long)(now + 60000));
    for (int i = 0; i < MANY; i++) {
        snprintf(key, sizeof(key), "p:Many:%d:locked", i);
        redis_do("SET %s %s", key, value);
    }
    CU_ASSERT_EQUAL(
        suspect_redis_foreach_locked(s, "p:", now, collect, seen, NULL),
        SUSPECT_OK);
    for (int i = 0; i < MANY; i++) {
        once = once && seen->many[i] >= 1;
    }
    CU_ASSERT_TRUE(once);
    CU_ASSERT_TRUE(seen->n >= MANY);
    memset(seen, 0, sizeof(*seen));
    seen->stop_after = 3;
    CU_ASSERT_EQUAL(
        suspect_redis_foreach_locked(s, "p:", now, collect, seen, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(seen->n, 3);
    free(seen);
    suspect_store_free(s);
}

/* With the server clock, "now" is Redis TIME, not the caller's. */
static void test_server_clock(void)
{
    suspect_store_t *caller = store_new(SUSPECT_REDIS_CLOCK_CALLER);
    suspect_store_t *server = store_new(SUSPECT_REDIS_CLOCK_SERVER);
    int64_t later = wall_ms() + 3600 * 1000;
    char value[64];
    seen_t seen;

    redis_do("FLUSHALL", NULL, NULL);
    snprintf(value, sizeof(value), "1|until=%lld",
             (long long)(wall_ms() + 60000));
    redis_do("SET %s %s", "p:Login:1:locked", value);
    memset(&seen, 0, sizeof(seen));
    CU_ASSERT_EQUAL(
        suspect_redis_foreach_locked(caller, "p:", later, collect, &seen, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(seen.n, 0);
    CU_ASSERT_EQUAL(
        suspect_redis_foreach_locked(server, "p:", later, collect, &seen, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(seen.n, 1);
    suspect_store_free(caller);
    suspect_store_free(server);
}

static void test_errors(void)
{
    suspect_store_t *mem = NULL, *dead = NULL, *s;
    suspect_redis_opts_t o = {NULL, 100, 100, SUSPECT_REDIS_CLOCK_CALLER, NULL};
    char url[64], longm[3000];
    suspect_err_t err;
    seen_t seen;

    memset(&seen, 0, sizeof(seen));
    CU_ASSERT_EQUAL(suspect_memstore_new(NULL, &mem, NULL), SUSPECT_OK);
    CU_ASSERT_EQUAL(
        suspect_redis_foreach_locked(mem, NULL, 0, collect, &seen, NULL),
        SUSPECT_E_INVAL);
    CU_ASSERT_EQUAL(
        suspect_redis_foreach_locked(NULL, NULL, 0, collect, &seen, NULL),
        SUSPECT_E_INVAL);
    s = store_new(SUSPECT_REDIS_CLOCK_CALLER);
    CU_ASSERT_EQUAL(suspect_redis_foreach_locked(s, NULL, 0, NULL, NULL, NULL),
                    SUSPECT_E_INVAL);
    memset(longm, 'a', sizeof(longm) - 1);
    longm[sizeof(longm) - 1] = '\0';
    CU_ASSERT_EQUAL(
        suspect_redis_foreach_locked(s, longm, 0, collect, &seen, NULL),
        SUSPECT_E_INVAL);
    snprintf(url, sizeof(url), "redis://127.0.0.1:%d/0", test_free_port());
    o.url = url;
    CU_ASSERT_EQUAL_FATAL(suspect_redis_new(&o, &dead, NULL), SUSPECT_OK);
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(
        suspect_redis_foreach_locked(dead, NULL, 0, collect, &seen, &err),
        SUSPECT_E_STORE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "refused"));
    CU_ASSERT_EQUAL(seen.n, 0);
    suspect_store_free(dead);
    suspect_store_free(s);
    suspect_store_free(mem);
}

int register_redis_scan_suite(void)
{
    CU_pSuite s = CU_add_suite("redis-scan", suite_init, suite_clean);

    if (s == NULL ||
        !CU_add_test(s, "lists live locks, .NET's too", test_lists_locks) ||
        !CU_add_test(s, "prefix is literal", test_match_literal) ||
        !CU_add_test(s, "many keys, early stop", test_many_and_stop) ||
        !CU_add_test(s, "server clock", test_server_clock) ||
        !CU_add_test(s, "errors", test_errors)) {
        return -1;
    }
    return 0;
}
