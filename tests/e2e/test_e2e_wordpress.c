/*
 * test_e2e_wordpress.c - suite "wordpress": one WordPress account under
 * every spelling WordPress logs it in with, counted once.
 *
 * examples/wordpress/suspect.xml as shipped: nginx -> suspect-fcgi ->
 * php-cgi running examples/wordpress/wp-login.php, which reads the login with
 * WordPress's own sanitize_user() and looks it up in a real MariaDB
 * wp_users table (utf8mb4_unicode_520_ci), then by e-mail address; the
 * alias table is written by examples/wordpress/wp-aliases from that
 * table.  First each spelling logs alice in with her password (the
 * application must say it is account 1: the spelling is real); then an
 * attacker cycles the spellings with wrong passwords: the application
 * must have checked alice's password no more than the limit (3), and bob
 * must still log in.  (With trim alone WordPress checks it 96 times,
 * without the collation 54, without the alias table 6.)  Not among the
 * spellings: "al<U+00AD>ice", which MariaDB's utf8mb4_unicode_520_ci
 * weighs (a soft hyphen) and ICU ignores: another account to WordPress,
 * the same counter here (an over-count, the direction allowed).
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "helpers/e2e.h"
#include "helpers/mariadb.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"
#include "suites.h"

/* The spellings of alice (raw; curl form-encodes them). */
static const char *const spellings[] = {
    "alice",
    "ALICE",
    "alice@example.org",
    "ALICE@Example.ORG",
    "\xef\xbd\x81\xef\xbd\x8c\xef\xbd\x89\xef\xbd\x83\xef\xbd\x85",
    "\xe2\x93\x90\xe2\x93\x9b\xe2\x93\x98\xe2\x93\x92\xe2\x93\x94",
    "al%41ice",
    "%%4141alice",
    "al&x;ice",
    "al<b>ice",
    " Alice ",
    "al\xe2\x80\x8bice",
    "al\xe2\x80\x8fice",
    "alice\xc2\xa0",
    "\xc3\xa1lice",
    "\xef\xbc\xa1\xef\xbc\xac\xef\xbc\xa9\xef\xbc\xa3\xef\xbc\xa5",
    "\xe2\x92\xb6\xe2\x93\x81\xe2\x92\xbe\xe2\x92\xb8\xe2\x92\xba",
    "\xef\xbd\x81\xef\xbd\x8c\xef\xbd\x89\xef\xbd\x83\xef\xbd\x85@example.org",
    "\xe2\x80\x8e"
    "alice",
    "al\xef\xbb\xbfice",
    "al\xe2\x81\xa0ice",
    "al\xe2\x80\x8cice",
    "\xe2\x80\xaa"
    "alice\xe2\x80\xac",
    "alice\xe3\x80\x80",
    "al<!--x-->ice",
    "al<script>x</script>ice",
    "AL&amp;ICE",
    "alice%20",
    "AL\xc4\xb0"
    "CE",
    "al\xc4\xb1"
    "ce",
    "a\xcc\x81lic\xc3\xa9",
    "<b>alice@example.org</b>",
};
#define NSPELL (sizeof(spellings) / sizeof(spellings[0]))

static const char users_sql[] =
    "CREATE DATABASE wordpress;\n"
    "USE wordpress;\n"
    "CREATE TABLE wp_users (ID BIGINT UNSIGNED PRIMARY KEY,\n"
    "  user_login VARCHAR(60) NOT NULL, user_pass VARCHAR(255) NOT NULL,\n"
    "  user_email VARCHAR(100) NOT NULL)\n"
    "  DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_unicode_520_ci;\n"
    "INSERT INTO wp_users VALUES\n"
    "  (1, 'alice', 'correct horse', 'alice@example.org'),\n"
    "  (2, 'bob', 'battery staple', 'bob@example.org');\n";

/* Runs examples/wordpress/wp-aliases against the server on port, into
 * out; 0 or -1. */
static int write_aliases(int port, const char *out)
{
    char script[TEST_PATH_MAX], opts[96], log[TEST_PATH_MAX];
    const char *const argv[] = {script, out, NULL};
    const char *const env[] = {opts, NULL};
    test_proc_t p;

    e2e_src(script, "examples/wordpress/wp-aliases");
    snprintf(opts, sizeof(opts),
             "MYSQL_OPTS=--no-defaults --host=127.0.0.1 --port=%d --user=root",
             port);
    e2e_path(log, "wp-aliases.log");
    if (test_proc_start(&p, argv, env, log) != 0 ||
        test_proc_wait(&p, test_scale_ms(30000)) != 0) {
        return -1;
    }
    return WIFEXITED(p.status) && WEXITSTATUS(p.status) == 0 ? 0 : -1;
}

/* Starts the database, the table, the stack; 0 or -1. */
static int start_wordpress(test_proc_t *db)
{
    char sql[TEST_PATH_MAX], out[TEST_PATH_MAX], aliases[TEST_PATH_MAX],
        app[TEST_PATH_MAX], src[TEST_PATH_MAX], env_port[48];
    const char *const env[] = {"PHP_FCGI_CHILDREN=4", env_port, NULL};
    const char *edits[] = {"/var/lib/suspect/wp-aliases.tsv", aliases, NULL};
    int port = 0;

    e2e_path(sql, "users.sql");
    e2e_path(out, "users.out");
    e2e_path(aliases, "wp-aliases.tsv");
    if (test_mariadb_start(db, e2e.dir, &port) != 0 ||
        test_write_file(sql, users_sql, strlen(users_sql)) != 0 ||
        test_mariadb_run(e2e.dir, port, sql, out) != 0 ||
        write_aliases(port, aliases) != 0 ||
        e2e_prepare("wordpress/suspect.xml", edits) != 0) {
        return -1;
    }
    snprintf(env_port, sizeof(env_port), "WP_DB_PORT=%d", port);
    snprintf(app, sizeof(app), "%s/wp-login.php", e2e.app);
    if (test_copy_file(e2e_src(src, "examples/wordpress/wp-login.php"), app,
                       0644) != 0 ||
        test_php_start(&e2e.php, e2e.dir, e2e.php_sock, env) != 0 ||
        e2e_start_suspect() != 0) {
        return -1;
    }
    return e2e_start_nginx("nginx/suspect-php.conf");
}

/* One login: its status. */
static int login(const char *name, const char *password)
{
    char url[E2E_URL], log[512], pwd[64];
    const char *const args[] = {"--data-urlencode",
                                log,
                                "--data-urlencode",
                                pwd,
                                e2e_url(url, "/wp-login.php"),
                                NULL};

    snprintf(log, sizeof(log), "log=%s", name);
    snprintf(pwd, sizeof(pwd), "pwd=%s", password);
    return e2e_status(args);
}

static void test_wordpress_spellings(void)
{
    char attempts[TEST_PATH_MAX];
    test_proc_t db;
    int reached = 0, denied = 0;

    CU_ASSERT_EQUAL_FATAL(start_wordpress(&db), 0);
    snprintf(attempts, sizeof(attempts), "%s/attempts.log", e2e.app);
    /* each spelling is alice to WordPress */
    for (size_t i = 0; i < NSPELL; i++) {
        int st = login(spellings[i], "correct horse");
        if (st != 302) {
            fprintf(stderr, "spelling %zu: %d\n", i, st);
        }
        CU_ASSERT_EQUAL(st, 302);
    }
    CU_ASSERT_EQUAL(test_count_lines(attempts, "login ok 1"), (int)NSPELL);
    /* an attacker cycles them */
    for (size_t i = 0; i < 3 * NSPELL; i++) {
        int st = login(spellings[i % NSPELL], "wrong");
        reached += st == 200;
        denied += st == 429;
    }
    fprintf(stderr,
            "wordpress: %zu guesses over %zu spellings: %d reached "
            "WordPress, %d denied; WordPress checked alice's password %d "
            "times\n",
            3 * NSPELL, NSPELL, reached, denied,
            test_count_lines(attempts, "login fail 1"));
    CU_ASSERT_EQUAL(test_count_lines(attempts, "login fail 1"), 3);
    CU_ASSERT_EQUAL(test_count_lines(attempts, "login fail -"), 0);
    CU_ASSERT_EQUAL(reached, 3);
    CU_ASSERT_EQUAL(denied, (int)(3 * NSPELL) - 3);
    CU_ASSERT_EQUAL(login("bob", "battery staple"), 302);
    test_proc_stop(&db, 0, test_scale_ms(30000));
}

int register_wordpress_suite(void)
{
    CU_pSuite s = CU_add_suite_with_setup_and_teardown("wordpress", NULL, NULL,
                                                       e2e_setup, e2e_teardown);

    if (s == NULL || CU_add_test(s, "one counter for every spelling",
                                 test_wordpress_spellings) == NULL) {
        return -1;
    }
    return 0;
}
