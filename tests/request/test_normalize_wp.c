/*
 * test_normalize_wp.c - the steps of WordPress's sanitize_user() and of
 * Request Tracker's numeric names (middleware/request/normalize_wp.c),
 * in the "normalize" suite: a table, then the wordpress-user preset
 * against the real sanitize_user() of Debian's wordpress package, run by
 * php-cgi over a few thousand generated values.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request/normalize.h"
#include "helpers/util.h"
#include "normalize_test.h"

/* WordPress's formatting.php, from Debian's wordpress package. */
#define WP_FORMATTING "/usr/share/wordpress/wp-includes/formatting.php"

static const struct {
    const char *spec;
    const char *in;
    const char *want;
} cases[] = {
    /* preg_replace('|%([a-fA-F0-9][a-fA-F0-9])|', '', ...): one pass */
    {"strip-octets", "al%41ice", "alice"},
    {"strip-octets", "al%4gice%", "al%4gice%"},
    {"strip-octets", "%%4141", "%41"},
    {"strip-octets", "%aF%Fa", ""},
    /* preg_replace('/&.+?;/', '', ...): lazy, ';' may be the first */
    {"strip-entities", "al&x;ice", "alice"},
    {"strip-entities", "al&;ice", "al&;ice"},
    {"strip-entities", "a&;x;b", "ab"},
    {"strip-entities", "a&b\n;c", "a&b\n;c"},
    {"strip-entities", "a&&b;;c", "a;c"},
    /* wp_strip_all_tags()'s script and style elements */
    {"strip-scripts", "al<script>x</script>ice", "alice"},
    {"strip-scripts", "al<STYLE a>x<b></style>ice", "alice"},
    {"strip-scripts", "al<script>x</style>ice", "al<script>x</style>ice"},
    {"strip-scripts", "al<scriptx</script>ice", "al<scriptx</script>ice"},
    {"strip-scripts", "<script>", "<script>"},
    /* Request Tracker: an all-digit name is an id */
    {"number", "0027", "27"},
    {"number", "000", "0"},
    {"number", "27", "27"},
    {"number", "0a27", "0a27"},
    {"number", "", ""},
    /* the spellings WordPress logs alice in with */
    {"wordpress-user", "  al<b>ice ", "alice"},
    {"wordpress-user", "al%41ice", "alice"},
    {"wordpress-user", "al&x;ice", "alice"},
    {"wordpress-user", "%%4141alice", "alice"},
    {"wordpress-user", "al\t\n ice", "al ice"},
    {"wordpress-user", "\xc3\xa1lice", "alice"},
};

static void test_wp_cases(void)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t len = 0;
        char *got = norm_test_apply(cases[i].spec, cases[i].in,
                                    strlen(cases[i].in), &len);

        CU_ASSERT_PTR_NOT_NULL_FATAL(got);
        if (len != strlen(cases[i].want) ||
            memcmp(got, cases[i].want, len) != 0) {
            fprintf(stderr, "wp case %zu (%s): got '%s'\n", i, cases[i].spec,
                    got);
            CU_FAIL("wordpress step");
        }
        free(got);
    }
}

/* Pieces of the generated values: what sanitize_user() looks at, and
 * letters remove_accents() rewrites. */
static const char *const pieces[] = {
    "a",        "L",        "%",         "4",
    "1",        "f",        "G",         "&",
    ";",        "<",        ">",         "</",
    "script",   "STYLE",    " ",         "\t",
    "\n",       "\v",       "!--",       "b",
    "\xc3\xa9", "\xc5\x81", "\xc3\x9f",  "\xc3\x86",
    "\xc3\xb8", "\xc3\xbe", "\xc4\xb3",  "\xc5\xbf",
    "\xc3\x85", "\xc7\xbb", "e\xcc\x81", "\xe1\xba\x9e",
    "\xc3\x90", "\xc2\xaa", "@",         ".",
};

/* A value of 1..8 pieces into v (room for 64), its length. */
static size_t gen_value(unsigned *seed, char *v)
{
    size_t n = 0;
    size_t k = 1 + (*seed = *seed * 1103515245u + 12345u) % 8;

    for (size_t i = 0; i < k; i++) {
        const char *p;
        *seed = *seed * 1103515245u + 12345u;
        p = pieces[(*seed >> 16) % (sizeof(pieces) / sizeof(pieces[0]))];
        memcpy(v + n, p, strlen(p));
        n += strlen(p);
    }
    return n;
}

/* hex into bytes (out: room for strlen(hex) / 2), the length. */
static size_t unhex(const char *hex, char *out)
{
    size_t n = 0;

    for (; hex[0] != '\0' && hex[1] != '\0'; hex += 2) {
        unsigned b = 0;
        sscanf(hex, "%2x", &b);
        out[n++] = (char)b;
    }
    return n;
}

/* The wordpress-user key of v[0..len) (a new string the caller frees,
 * *out_len its length), or NULL when the preset refuses the value. */
static char *wp_key(const mw_norm_t *n, const char *v, size_t len,
                    size_t *out_len)
{
    char buf[64];
    const char *o = NULL;
    char *heap = NULL;
    char *copy;

    if (mw_norm_apply(n, v, len, buf, sizeof(buf), &o, out_len, &heap) !=
        SUSPECT_OK) {
        return NULL;
    }
    copy = malloc(*out_len + 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(copy);
    memcpy(copy, o, *out_len);
    copy[*out_len] = '\0';
    free(heap);
    return copy;
}

/* Compares the wordpress-user key of one value with the key of what
 * sanitize_user() twice made of it (wp, hex): equal, or a login WordPress
 * reads as one account would be counted apart.  ASCII values must come
 * out byte for byte as WordPress's. */
static void compare_one(const mw_norm_t *n, const char *v, size_t len,
                        const char *wp_hex, int *exact, int *refused)
{
    char wp[128];
    size_t wp_len = unhex(wp_hex, wp);
    size_t a_len = 0, b_len = 0;
    char *a = wp_key(n, v, len, &a_len);
    char *b = wp_key(n, wp, wp_len, &b_len);
    bool ascii = true;

    for (size_t i = 0; i < len; i++) {
        ascii = ascii && (unsigned char)v[i] < 0x80;
    }
    if (a == NULL) { /* strip-tags refuses a tag PHP reads its own way */
        (*refused)++;
        free(b);
        return;
    }
    CU_ASSERT_FATAL(b != NULL);
    if (a_len != b_len || memcmp(a, b, a_len) != 0) {
        CU_FAIL("wordpress-user counts apart a login WordPress merges");
        fprintf(stderr, "value '%.*s': wordpress '%.*s', key '%s' vs '%s'\n",
                (int)len, v, (int)wp_len, wp, a, b);
    }
    if (a_len == wp_len && memcmp(a, wp, wp_len) == 0) {
        (*exact)++;
    } else if (ascii) {
        CU_FAIL("wordpress-user reads an ASCII login other than WordPress");
        fprintf(stderr, "value '%.*s': wordpress '%.*s', ours '%s'\n", (int)len,
                v, (int)wp_len, wp, a);
    }
    free(a);
    free(b);
}

/* The preset against sanitize_user(sanitize_user()) of real WordPress. */
static void test_wp_as_php(void)
{
    enum { VALUES = 4000 };
    char *dir = test_mkdtemp(), in[TEST_PATH_MAX], out[TEST_PATH_MAX],
         script[TEST_PATH_MAX], cmd[3 * TEST_PATH_MAX];
    char(*vals)[64] = calloc(VALUES, 64);
    size_t lens[VALUES];
    unsigned seed = 11;
    FILE *f;
    char *text, *line;
    int exact = 0, refused = 0;
    mw_norm_t *n = NULL;
    size_t i;

    CU_ASSERT_FATAL(dir != NULL && vals != NULL);
    snprintf(in, sizeof(in), "%s/values", dir);
    snprintf(out, sizeof(out), "%s/sanitized", dir);
    f = fopen(in, "w");
    CU_ASSERT_FATAL(f != NULL);
    for (i = 0; i < VALUES; i++) {
        lens[i] = gen_value(&seed, vals[i]);
        for (size_t k = 0; k < lens[i]; k++) {
            fprintf(f, "%02x", (unsigned char)vals[i][k]);
        }
        fputc('\n', f);
    }
    fclose(f);
    /* formatting.php wants these of WordPress's other files. */
    snprintf(cmd, sizeof(cmd),
             "<?php function apply_filters($t, $v) { return $v; }\n"
             "function get_locale() { return 'en_US'; }\n"
             "function mbstring_binary_safe_encoding($r = false) {}\n"
             "function reset_mbstring_encoding() {}\n"
             "require '%s';\n"
             "foreach (file('%s') as $l) echo bin2hex(sanitize_user("
             "sanitize_user(hex2bin(trim($l))))), \"\\n\";\n",
             WP_FORMATTING, in);
    snprintf(script, sizeof(script), "%s/wp.php", dir);
    CU_ASSERT_FATAL(test_write_file(script, cmd, strlen(cmd)) == 0);
    snprintf(cmd, sizeof(cmd), "php-cgi -q %s > %s", script, out);
    CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
    text = test_read_file(out, NULL);
    CU_ASSERT_FATAL(text != NULL);
    CU_ASSERT_EQUAL_FATAL(mw_norm_compile("wordpress-user", 14, &n, NULL),
                          SUSPECT_OK);
    line = text;
    for (i = 0; i < VALUES && line != NULL; i++) {
        char *eol = strchr(line, '\n');
        if (eol != NULL) {
            *eol = '\0';
        }
        compare_one(n, vals[i], lens[i], line, &exact, &refused);
        line = eol != NULL ? eol + 1 : NULL;
    }
    CU_ASSERT_EQUAL(i, VALUES);
    fprintf(stderr,
            "wordpress-user: %d of %d values read as WordPress, %d "
            "refused\n",
            exact, VALUES, refused);
    CU_ASSERT(exact > VALUES / 2);
    mw_norm_free(n);
    free(text);
    free(vals);
    test_rmtree(dir);
    free(dir);
}

int normalize_register_wp(CU_pSuite s)
{
    if (CU_add_test(s, "wordpress and rt steps", test_wp_cases) == NULL ||
        CU_add_test(s, "wordpress-user reads as sanitize_user()",
                    test_wp_as_php) == NULL) {
        return -1;
    }
    return 0;
}
