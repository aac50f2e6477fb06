/*
 * test_normalize_collate.c - the collate step against a real MariaDB
 * (suite "collate"): every code point of the Basic Multilingual Plane, a
 * sample past it, the 32 spellings WordPress logs alice in with and a
 * few thousand generated mixes (case, accents, fullwidth, circled,
 * ligatures, zero-width and direction marks, no-break spaces, Hangul,
 * expansions, trailing spaces) go into a table; MariaDB groups them by
 * equality under each collation (GROUP BY ... COLLATE), and every group
 * must have one key here.  The values MariaDB tells apart that share a
 * key here (the over-count the step accepts) are counted and printed.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request/normalize.h"
#include "helpers/mariadb.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"
#include "normalize_test.h"
#include "suites.h"

/* Longest generated value, in bytes. */
#define VAL_MAX 96

typedef struct values {
    char (*v)[VAL_MAX];
    size_t *len;
    size_t n, cap;
} values_t;

static void add_utf8(char *s, size_t *n, unsigned cp)
{
    if (cp < 0x80) {
        s[(*n)++] = (char)cp;
    } else if (cp < 0x800) {
        s[(*n)++] = (char)(0xc0 | cp >> 6);
        s[(*n)++] = (char)(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        s[(*n)++] = (char)(0xe0 | cp >> 12);
        s[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
        s[(*n)++] = (char)(0x80 | (cp & 0x3f));
    } else {
        s[(*n)++] = (char)(0xf0 | cp >> 18);
        s[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3f));
        s[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3f));
        s[(*n)++] = (char)(0x80 | (cp & 0x3f));
    }
}

static void push(values_t *vs, const char *s, size_t n)
{
    if (vs->n == vs->cap) {
        vs->cap = vs->cap ? 2 * vs->cap : 1024;
        vs->v = realloc(vs->v, vs->cap * VAL_MAX);
        vs->len = realloc(vs->len, vs->cap * sizeof(size_t));
        CU_ASSERT_FATAL(vs->v != NULL && vs->len != NULL);
    }
    memcpy(vs->v[vs->n], s, n);
    vs->len[vs->n++] = n;
}

static void push_cp(values_t *vs, unsigned cp)
{
    char s[4];
    size_t n = 0;

    add_utf8(s, &n, cp);
    push(vs, s, n);
}

/* The spellings of alice that WordPress logs in (before the database,
 * sanitize_user() has made them these; the collation merges the rest). */
static const char *const alices[] = {
    "alice",
    "ALICE",
    "Alice",
    "alice ",
    "alice  ",
    "\xef\xbd\x81\xef\xbd\x8c\xef\xbd\x89\xef\xbd\x83\xef\xbd\x85",
    "\xef\xbc\xa1\xef\xbc\xac\xef\xbc\xa9\xef\xbc\xa3\xef\xbc\xa5",
    "\xe2\x93\x90\xe2\x93\x9b\xe2\x93\x98\xe2\x93\x92\xe2\x93\x94",
    "\xe2\x92\xb6\xe2\x93\x81\xe2\x92\xbe\xe2\x92\xb8\xe2\x92\xba",
    "al\xe2\x80\x8bice",
    "al\xe2\x80\x8cice",
    "al\xe2\x80\x8dice",
    "al\xef\xbb\xbfice",
    "al\xe2\x81\xa0ice",
    "\xe2\x80\x8e"
    "alice",
    "al\xe2\x80\x8fice",
    "\xe2\x80\xaa"
    "alice\xe2\x80\xac",
    "al\xe2\x81\xa6ice\xe2\x81\xa9",
    "al\xc2\xadice",
    "\xc3\xa1lice",
    "a\xcc\x81lice",
    "\xc3\x81LICE",
    "al\xc3\xaf"
    "ce",
    "alic\xc3\xa9",
    "ALIC\xc3\x89",
    "\xc3\xa0l\xc3\xaf\xc3\xa7\xc3\xa8",
    "a\xe1\xb8\xb7ice",
    "\xf0\x9d\x90\x9a\xf0\x9d\x90\xa5\xf0\x9d\x90\xa2\xf0\x9d\x90\x9c\xf0\x9d"
    "\x90\x9e",
    "\xe1\xb4\xac\xe1\xb4\xb8\xe1\xb4\xb5\xe1\xb6\x9c\xe1\xb4\xb1",
    "\xc9\x91lice",
    "al\xc4\xb1"
    "ce",
    "al\xe2\x80\x8b\xe2\x80\x8e"
    "ice\xe2\x80\x8f ",
};

/* Spellings of one letter: each a UTF-8 string. */
static const char *const variants[][8] = {
    {"a", "A", "\xc3\xa1", "\xef\xbd\x81", "\xe2\x93\x90", "a\xcc\x81",
     "\xc3\xa5", "\xef\xbc\xa1"},
    {"l", "L", "\xc4\xba", "\xef\xbd\x8c", "\xe2\x93\x9b", "\xc5\x82",
     "l\xcc\xa7", "\xe2\x85\xac"},
    {"i", "I", "\xc3\xad", "\xef\xbd\x89", "\xe2\x93\x98", "\xc4\xb1",
     "\xe2\x85\xb0", "i\xcc\x88"},
    {"s", "S", "\xc5\x9b", "\xc3\x9f", "ss", "\xc5\xbf", "\xef\xbd\x93",
     "\xe2\x93\xa2"},
    {"ae", "\xc3\xa6", "\xc3\x86", "AE",
     "a\xe2\x80\x8b"
     "e",
     "\xe1\xb4\x81", "\xc3\xa4", "a\xcc\x88"},
    {"fi", "\xef\xac\x81", "FI", "f\xc3\xad", "\xef\xbd\x86i",
     "\xe2\x93\x95\xe2\x93\x98", "f\xe2\x80\x8ci", "\xef\xac\x80"},
    {"\xea\xb0\x80", "\xe1\x84\x80\xe1\x85\xa1", "\xea\xb0\x81",
     "\xe3\x84\xb1\xe3\x85\x8f", "\xef\xbe\xa1", "\xe1\x84\x81", "\xea\xb1\x80",
     "\xea\xb0\x80\xe2\x80\x8d"},
    {"oe", "\xc5\x93", "\xc5\x92", "\xc3\xb6", "o\xcc\x88", "\xc3\xb8", "OE",
     "\xe1\xb4\x94"},
};

/* Between letters, sometimes: ignorables, marks, spaces. */
static const char *const fillers[] = {
    "",
    "",
    "",
    "\xe2\x80\x8b",
    "\xe2\x80\x8c",
    "\xe2\x80\x8d",
    "\xe2\x80\x8e",
    "\xe2\x80\x8f",
    "\xe2\x80\xaa",
    "\xe2\x80\xae",
    "\xe2\x81\xa6",
    "\xc2\xad",
    "\xef\xbb\xbf",
    "\xc2\xa0",
    " ",
    "\xcc\x81",
    "\xcc\xa7",
    "\x01",
    "\xe3\x80\x80",
    "\xe1\xa0\x8e",
};

static unsigned rnd(unsigned *seed, unsigned n)
{
    *seed = *seed * 1103515245u + 12345u;
    return (*seed >> 16) % n;
}

/* A generated mix into s (room for VAL_MAX), its length. */
static size_t gen_mix(unsigned *seed, char *s)
{
    size_t n = 0;
    size_t letters = 1 + rnd(seed, 5);

    for (size_t i = 0; i < letters; i++) {
        const char *v = variants[rnd(seed, 8)][rnd(seed, 8)];
        const char *f = fillers[rnd(seed, 20)];
        memcpy(s + n, v, strlen(v));
        n += strlen(v);
        memcpy(s + n, f, strlen(f));
        n += strlen(f);
    }
    if (rnd(seed, 4) == 0) {
        s[n++] = ' ';
    }
    return n;
}

static void make_values(values_t *vs)
{
    unsigned seed = 5;

    for (unsigned cp = 0; cp < 0x10000; cp++) {
        if (cp < 0xd800 || cp > 0xdfff) {
            push_cp(vs, cp);
        }
    }
    for (unsigned cp = 0x10000; cp < 0x30000; cp += 61) {
        push_cp(vs, cp);
    }
    for (unsigned cp = 0x1d400; cp < 0x1d500; cp++) { /* math letters */
        push_cp(vs, cp);
    }
    for (size_t i = 0; i < sizeof(alices) / sizeof(alices[0]); i++) {
        push(vs, alices[i], strlen(alices[i]));
    }
    for (int i = 0; i < 4000; i++) {
        char s[VAL_MAX];
        size_t n = gen_mix(&seed, s);
        push(vs, s, n);
    }
}

/* The SQL that loads the values and prints MariaDB's groups of equal
 * values (ids, comma-separated, one group a line) under collation. */
static int write_sql(const char *path, const values_t *vs, const char *coll)
{
    FILE *f = fopen(path, "w");

    if (f == NULL) {
        return -1;
    }
    fprintf(f, "SET SESSION group_concat_max_len = 100000000;\n"
               "CREATE DATABASE IF NOT EXISTS c; USE c;\n"
               "DROP TABLE IF EXISTS t;\n"
               "CREATE TABLE t (id INT PRIMARY KEY, b VARBINARY(200));\n");
    for (size_t i = 0; i < vs->n; i++) {
        fprintf(f, "%s(%zu,X'", i % 500 == 0 ? "INSERT INTO t VALUES " : ",",
                i);
        for (size_t k = 0; k < vs->len[i]; k++) {
            fprintf(f, "%02x", (unsigned char)vs->v[i][k]);
        }
        fprintf(f, "')%s", i % 500 == 499 || i + 1 == vs->n ? ";\n" : "");
    }
    fprintf(f,
            "SELECT GROUP_CONCAT(id) FROM t GROUP BY CONVERT(b USING "
            "utf8mb4) COLLATE %s HAVING COUNT(*) > 1;\n",
            coll);
    return fclose(f);
}

/* The key of every value under spec, as NUL-terminated strings. */
static char **keys_of(const values_t *vs, const char *spec)
{
    char **keys = calloc(vs->n, sizeof(char *));
    size_t len;

    CU_ASSERT_FATAL(keys != NULL);
    for (size_t i = 0; i < vs->n; i++) {
        keys[i] = norm_test_apply(spec, vs->v[i], vs->len[i], &len);
        CU_ASSERT_FATAL(keys[i] != NULL);
    }
    return keys;
}

static const char *const *cmp_keys;

static int by_key(const void *a, const void *b)
{
    return strcmp(cmp_keys[*(const size_t *)a], cmp_keys[*(const size_t *)b]);
}

/* Pairs of values sharing a key that MariaDB tells apart (group[i]: the
 * MariaDB group of value i). */
static size_t merged_pairs(const values_t *vs, char **keys, const size_t *group)
{
    size_t *order = malloc(vs->n * sizeof(size_t));
    size_t pairs = 0;

    CU_ASSERT_FATAL(order != NULL);
    for (size_t i = 0; i < vs->n; i++) {
        order[i] = i;
    }
    cmp_keys = (const char *const *)keys;
    qsort(order, vs->n, sizeof(size_t), by_key);
    for (size_t i = 0; i < vs->n; i++) {
        for (size_t j = i + 1;
             j < vs->n && strcmp(keys[order[i]], keys[order[j]]) == 0; j++) {
            pairs += group[order[i]] != group[order[j]];
        }
    }
    free(order);
    return pairs;
}

/* Value i in hex, in a static buffer (for messages only). */
static const char *hex_of(const values_t *vs, size_t i)
{
    static char buf[2][2 * VAL_MAX + 1];
    static int which;
    char *b = buf[which ^= 1];

    for (size_t k = 0; k < vs->len[i]; k++) {
        snprintf(b + 2 * k, 3, "%02x", (unsigned char)vs->v[i][k]);
    }
    b[2 * vs->len[i]] = '\0';
    return b;
}

/* One collation: MariaDB's groups must each be one key under spec. */
static void check_collation(const char *dir, int port, const values_t *vs,
                            const char *coll, const char *spec)
{
    char sql[TEST_PATH_MAX], out[TEST_PATH_MAX];
    char **keys = keys_of(vs, spec);
    size_t *group = malloc(vs->n * sizeof(size_t));
    size_t groups = 0, split = 0;
    char *text, *line;

    CU_ASSERT_FATAL(group != NULL);
    for (size_t i = 0; i < vs->n; i++) {
        group[i] = vs->n + i; /* alone */
    }
    snprintf(sql, sizeof(sql), "%s/%s.sql", dir, coll);
    snprintf(out, sizeof(out), "%s/%s.out", dir, coll);
    CU_ASSERT_EQUAL_FATAL(write_sql(sql, vs, coll), 0);
    CU_ASSERT_EQUAL_FATAL(test_mariadb_run(dir, port, sql, out), 0);
    text = test_read_file(out, NULL);
    CU_ASSERT_FATAL(text != NULL);
    for (line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
        char *end;
        size_t first = strtoul(line, &end, 10);
        groups++;
        for (char *p = line; *p != '\0';) {
            size_t id = strtoul(p, &end, 10);
            CU_ASSERT_FATAL(end != p && id < vs->n);
            group[id] = groups;
            if (strcmp(keys[id], keys[first]) != 0 && split++ < 60) {
                fprintf(stderr, "%s: MariaDB: value %s = %s, keys differ\n",
                        coll, hex_of(vs, first), hex_of(vs, id));
            }
            p = *end == ',' ? end + 1 : end;
        }
    }
    CU_ASSERT(groups > 100);
    CU_ASSERT_EQUAL(split, 0);
    fprintf(stderr,
            "%s: %zu values, %zu groups of equal values in MariaDB, %zu "
            "split here, %zu pairs MariaDB tells apart merged here\n",
            coll, vs->n, groups, split, merged_pairs(vs, keys, group));
    for (size_t i = 0; i < vs->n; i++) {
        free(keys[i]);
    }
    free(keys);
    free(group);
    free(text);
}

static void test_against_mariadb(void)
{
    char *dir = test_mkdtemp();
    test_proc_t db;
    values_t vs = {0};
    int port = 0;

    CU_ASSERT_FATAL(dir != NULL);
    CU_ASSERT_EQUAL_FATAL(test_mariadb_start(&db, dir, &port), 0);
    make_values(&vs);
    check_collation(dir, port, &vs, "utf8mb4_unicode_ci",
                    "collate:mysql-unicode-ci");
    check_collation(dir, port, &vs, "utf8mb4_unicode_520_ci",
                    "collate:mysql-unicode-520-ci");
    check_collation(dir, port, &vs, "utf8mb4_uca1400_ai_ci",
                    "collate:mariadb-uca1400-ai-ci");
    test_proc_stop(&db, 0, test_scale_ms(30000));
    free(vs.v);
    free(vs.len);
    test_rmtree(dir);
    free(dir);
}

/* The step's own cases: keys, refusals, names. */
static void test_collate_cases(void)
{
    size_t a_len, b_len;
    char *a =
        norm_test_apply("collate:mysql-unicode-520-ci", "alice", 5, &a_len);
    char *b = norm_test_apply("collate:mysql-unicode-520-ci",
                              "\xef\xbc\xa1LICE  ", 9, &b_len);
    mw_norm_t *n = NULL;
    suspect_err_t err;
    char buf[64];
    const char *o;
    char *heap = NULL;
    size_t len;

    CU_ASSERT_FATAL(a != NULL && b != NULL);
    CU_ASSERT_STRING_EQUAL(a, b);
    CU_ASSERT(strspn(a, "0123456789abcdef") == a_len && a_len > 0);
    free(a);
    free(b);
    /* trailing spaces count in a NO PAD collation */
    a = norm_test_apply("collate:mysql-0900-ai-ci", "alice", 5, &a_len);
    b = norm_test_apply("collate:mysql-0900-ai-ci", "alice ", 6, &b_len);
    CU_ASSERT_FATAL(a != NULL && b != NULL);
    CU_ASSERT(strcmp(a, b) != 0);
    free(a);
    free(b);
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(mw_norm_compile("collate:utf8_bin", 16, &n, &err),
                    SUSPECT_E_CONFIG);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.text, "unknown collation"));
    CU_ASSERT_EQUAL(mw_norm_compile("collate", 7, &n, NULL), SUSPECT_E_CONFIG);
    CU_ASSERT_EQUAL_FATAL(
        mw_norm_compile("collate:mysql-unicode-ci", 24, &n, NULL), SUSPECT_OK);
    CU_ASSERT_EQUAL(
        mw_norm_apply(n, "al\xffice", 6, buf, sizeof(buf), &o, &len, &heap),
        SUSPECT_E_INVAL);
    mw_norm_free(n);
}

/* Nothing survives a failed assertion. */
static int collate_cleanup(void)
{
    test_procs_stop_all();
    return 0;
}

int register_collate_suite(void)
{
    CU_pSuite s = CU_add_suite("collate", NULL, collate_cleanup);

    if (s == NULL || CU_add_test(s, "cases", test_collate_cases) == NULL ||
        CU_add_test(s, "equal as in MariaDB", test_against_mariadb) == NULL) {
        return -1;
    }
    return 0;
}
