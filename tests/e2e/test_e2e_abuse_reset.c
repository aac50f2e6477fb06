/*
 * test_e2e_abuse_reset.c - the "abuse" suite: a flood of fresh identities
 * does not give an attacker his attempts back.
 *
 * The PHP shape of examples/ (nginx -> suspect-fcgi -> php-cgi running
 * index.php, which appends what it performed to performed.log), its
 * memory store capped at CAP entries, the limits of examples/limits.xml:
 * login 2 a day, then locked; forgot 3 per 30 minutes.  The attacker
 * spends part of a victim's limit (2 wrong passwords: the limit, not yet
 * a lock, which only a denied request sets; 2 password resets: one short
 * of it), then sends FLOOD promo queries, each a fresh identity of one
 * hit (four times the store: before, every shard's least recently used
 * counters went, the victim's among them), then tries again.  The
 * application must have performed no more than each limit: the count at
 * its limit is held like a lock, the count below it outlives counters
 * with fewer hits (docs/stores.md, "Bounds and eviction order").
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "helpers/e2e.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"
#include "test_e2e_abuse.h"

#define CAP   512
#define FLOOD (4 * CAP)

static int post(const char *op, const char *form)
{
    char url[E2E_URL], path[64];

    snprintf(path, sizeof(path), "/index.php?op=%s", op);
    e2e_url(url, path);
    return e2e_status((const char *[]){"-d", form, url, NULL});
}

/* FLOOD promo queries, each of a member and code never seen before,
 * through nginx on kept connections (one curl, 8 at a time); how many
 * were answered 200, or -1 when curl failed. */
static long flood(void)
{
    char cfg[TEST_PATH_MAX], log[TEST_PATH_MAX], url[E2E_URL];
    char path[96], max_time[16];
    const char *argv[] = {"curl",
                          "-q",
                          "-s",
                          "--no-progress-meter",
                          "--noproxy",
                          "*",
                          "-Z",
                          "--parallel-max",
                          "8",
                          "-w",
                          "%{http_code}\\n",
                          "--max-time",
                          max_time,
                          "-K",
                          cfg,
                          NULL};
    test_proc_t p;
    FILE *f;
    char *out, *line;
    long ok = 0;

    snprintf(cfg, sizeof(cfg), "%s/flood.cfg", e2e.dir);
    snprintf(log, sizeof(log), "%s/flood.out", e2e.dir);
    snprintf(max_time, sizeof(max_time), "%u", test_scale_ms(60000) / 1000);
    f = fopen(cfg, "w");
    if (f == NULL) {
        return -1;
    }
    for (int i = 0; i < FLOOD; i++) {
        snprintf(path, sizeof(path), "/index.php?op=promo&member=f%d&code=C%d",
                 i, i);
        fprintf(f, "url = \"%s\"\noutput = \"/dev/null\"\n",
                e2e_url(url, path));
    }
    fclose(f);
    if (test_proc_start(&p, argv, NULL, log) != 0 ||
        test_proc_wait(&p, test_scale_ms(120000)) != 0) {
        return -1;
    }
    out = test_read_file(log, NULL);
    for (line = out != NULL ? strtok(out, "\n") : NULL; line != NULL;
         line = strtok(NULL, "\n")) {
        ok += atoi(line) == 200;
        if (atoi(line) != 200) {
            fprintf(stderr, " [promo: %s]", line);
        }
    }
    free(out);
    return ok;
}

/* The PHP shape of examples/ (e2e_start_php()), its store capped at CAP,
 * with 8 php-cgi children: one php-cgi ends after 500 requests, its
 * parent starts another child. */
static int start_php(void)
{
    char store[64], src[TEST_PATH_MAX], app[TEST_PATH_MAX];
    const char *edits[] = {"<Store type=\"memory\"/>", store, NULL};
    const char *const env[] = {"PHP_FCGI_CHILDREN=8", NULL};

    snprintf(store, sizeof(store), "<Store type=\"memory\" maxEntries=\"%d\"/>",
             CAP);
    snprintf(app, sizeof(app), "%s/index.php", e2e.app);
    if (e2e_prepare("suspect-php.xml", edits) != 0 ||
        test_copy_file(e2e_src(src, "examples/app/index.php"), app, 0644) !=
            0 ||
        test_php_start(&e2e.php, e2e.dir, e2e.php_sock, env) != 0 ||
        e2e_start_suspect() != 0) {
        return -1;
    }
    snprintf(app, sizeof(app), "%s/performed.log", e2e.app);
    if (test_write_file(app, "", 0) != 0 || chmod(app, 0666) != 0) {
        return -1;
    }
    return e2e_start_nginx("nginx/suspect-php.conf");
}

static void test_flood_resets_nothing(void)
{
    long ok;

    CU_ASSERT_FATAL(start_php() == 0);
    CU_ASSERT_EQUAL(post("login", "member=victim&password=wrong"), 401);
    CU_ASSERT_EQUAL(post("login", "member=victim&password=wrong"), 401);
    CU_ASSERT_EQUAL(post("forgot", "account=victim"), 200);
    CU_ASSERT_EQUAL(post("forgot", "account=victim"), 200);

    ok = flood();
    fprintf(stderr, "\n  %d fresh identities into a store of %d: %ld allowed ",
            FLOOD, CAP, ok);
    CU_ASSERT_EQUAL(ok, FLOOD);

    CU_ASSERT_EQUAL(post("login", "member=victim&password=wrong"), 429);
    CU_ASSERT_EQUAL(post("login", "member=victim&password=wrong"), 429);
    CU_ASSERT_EQUAL(post("forgot", "account=victim"), 200);
    CU_ASSERT_EQUAL(post("forgot", "account=victim"), 429);
    fprintf(stderr, "\n  performed: %d logins (limit 2), %d resets (limit 3) ",
            abuse_performed("login", "victim"),
            abuse_performed("forgot", "victim"));
    CU_ASSERT_EQUAL(abuse_performed("login", "victim"), 2);
    CU_ASSERT_EQUAL(abuse_performed("forgot", "victim"), 3);
}

int abuse_add_reset_tests(CU_pSuite s)
{
    return CU_add_test(s, "a flood of fresh identities resets no count",
                       test_flood_resets_nothing) == NULL
               ? -1
               : 0;
}
