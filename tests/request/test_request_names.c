/*
 * test_request_names.c - suite "request", parameter names compared the
 * way PHP files them (middleware/request/lookup.c): a NUL ends a name, leading
 * spaces go, ' ' and '.' are '_', "name[...]" is name, a '[' without ']'
 * is '_'.  Tables of lookups, matches and ambiguous repeats, and a long
 * input that must stay one linear pass.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request/lookup.h"
#include "request_test.h"

/* The value of name in s ('&' only; in text, the caller's), NOTFOUND, or
 * INVAL. */
static const char *find(char text[TEXT_MAX], const char *s, const char *name)
{
    size_t len = 0;
    suspect_rc_t rc = mw_param_find(s, strlen(s), 0, name, strlen(name), text,
                                    TEXT_MAX - 1, &len);

    if (rc == SUSPECT_E_NOTFOUND) {
        return NOTFOUND;
    }
    if (rc != SUSPECT_OK) {
        return INVAL;
    }
    text[len] = '\0';
    return text;
}

static const struct {
    const char *s, *name, *want;
} name_cases[] = {
    /* Leading spaces ('+' and %20 decode to one) are dropped. */
    {"+op=forgot", "op", "forgot"},
    {"%20op=forgot", "op", "forgot"},
    {"++%20op=x", "op", "x"},
    {"%09op=x", "op", NOTFOUND},
    /* A NUL ends the name. */
    {"op%00junk=x", "op", "x"},
    {"op%00=x", "op", "x"},
    /* An index makes an array of the name before it. */
    {"op[]=x", "op", "x"},
    {"op[k]=x", "op", "x"},
    {"op%5B%5D=x", "op", "x"},
    {"op[a][b]=x", "op", "x"},
    {"op[a]junk=x", "op", "x"},
    /* ' ' and '.' are '_', on either side. */
    {"o.p=x", "o_p", "x"},
    {"o+p=x", "o_p", "x"},
    {"o_p=x", "o.p", "x"},
    {"o.p=x", "o p", "x"},
    {"op_=x", "op.", "x"},
    {"+o.p[1]=x", "o_p", "x"},
    /* A '[' without ']' is '_', and so is every later ' ', '.', '['. */
    {"op[a=x", "op_a", "x"},
    {"a[b.c=1", "a_b_c", "1"},
    {"a[b[c=1", "a_b_c", "1"},
    {"a[b=1&a_b=2", "a_b", "1"},
    {"op[=x", "op", NOTFOUND},
    /* Not the same name to PHP either. */
    {"op_=x", "op", NOTFOUND},
    {"Op=x", "op", NOTFOUND},
    {"op]=x", "op", NOTFOUND},
    {"xop=x", "op", NOTFOUND},
    {"o-p=x", "o_p", NOTFOUND},
    /* A name PHP drops ("[op]" is empty to it) is still itself. */
    {"[op]=x", "op", NOTFOUND},
    {"[op]=x", "[op]", "x"},
    {"%20=x", "_", NOTFOUND},
    /* The configured name is read the same way. */
    {"op=x", "op[]", "x"},
    {"op=x", "+op", NOTFOUND}, /* a configured '+' is a '+' */
    {"%2Bop=x", "+op", "x"},
};

static void test_name_table(void)
{
    char text[TEXT_MAX];
    for (size_t i = 0; i < sizeof(name_cases) / sizeof(name_cases[0]); i++) {
        const char *got = find(text, name_cases[i].s, name_cases[i].name);
        if (strcmp(got, name_cases[i].want) != 0) {
            fprintf(stderr, "\nname case %zu [%s] %s: got [%s] want [%s]\n", i,
                    name_cases[i].s, name_cases[i].name, got,
                    name_cases[i].want);
        }
        CU_ASSERT_STRING_EQUAL(got, name_cases[i].want);
    }
}

static const struct {
    const char *s, *value;
    suspect_rc_t want;
} match_cases[] = {
    {"+op=forgot", "forgot", SUSPECT_OK},
    {"op=view&+op=forgot", "forgot", SUSPECT_OK},
    {"op[]=forgot", "forgot", SUSPECT_OK},
    {"op%00x=forgot", NULL, SUSPECT_OK},
    {"op_=forgot", "forgot", SUSPECT_E_NOTFOUND},
    {"%5Bop%5D=forgot", NULL, SUSPECT_E_NOTFOUND},
};

static void test_name_match(void)
{
    for (size_t i = 0; i < sizeof(match_cases) / sizeof(match_cases[0]); i++) {
        const char *v = match_cases[i].value;
        suspect_rc_t rc =
            mw_param_match(match_cases[i].s, strlen(match_cases[i].s), 0, "op",
                           2, v, v != NULL ? strlen(v) : 0);
        if (rc != match_cases[i].want) {
            fprintf(stderr, "\nname match case %zu [%s]: got %d\n", i,
                    match_cases[i].s, rc);
        }
        CU_ASSERT_EQUAL(rc, match_cases[i].want);
    }
}

static const struct {
    const char *s;
    bool want;
} ambiguous_cases[] = {
    {"member=rN&+member=victim", true},
    {"member=rN&member[]=victim", true},
    {"member=rN&member%5Bx%5D=victim", true},
    {"member=rN&member%00x=victim", true},
    {"+member=rN&%20member=victim", true},
    {"member=rN&+member=rN", false},
    {"member=rN&member[]=rN", false},
    {"member=rN&member_=victim", false},
    {"member=rN&Member=victim", false},
};

static void test_name_ambiguous(void)
{
    for (size_t i = 0; i < sizeof(ambiguous_cases) / sizeof(ambiguous_cases[0]);
         i++) {
        bool got = mw_param_ambiguous(
            ambiguous_cases[i].s, strlen(ambiguous_cases[i].s), 0, "member", 6);
        if (got != ambiguous_cases[i].want) {
            fprintf(stderr, "\nname ambiguous case %zu [%s]: got %d\n", i,
                    ambiguous_cases[i].s, got);
        }
        CU_ASSERT_EQUAL(got, ambiguous_cases[i].want);
    }
}

/* Long names that make the reader look ahead for a ']' or skip leading
 * spaces: each name is read once, so 20000 of them stay fast, and the
 * one real parameter at the end is found. */
static void test_name_long_input(void)
{
    size_t reps = 20000, one = 64;
    char *qs = malloc(reps * one + 64);
    size_t n = 0;
    char buf[8];
    size_t len = 0;

    CU_ASSERT_FATAL(qs != NULL);
    for (size_t i = 0; i < reps; i++) {
        /* "member[" then no ']': the whole rest is looked at once. */
        memcpy(qs + n, i % 2 ? "member[" : "+++++++", 7);
        memset(qs + n + 7, i % 2 ? 'x' : '+', one - 10);
        memcpy(qs + n + one - 3, "=1&", 3);
        n += one;
    }
    memcpy(qs + n, "+member=ok", 10);
    n += 10;
    CU_ASSERT_EQUAL(
        mw_param_find(qs, n, 0, "member", 6, buf, sizeof(buf), &len),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(len, 2);
    CU_ASSERT_NSTRING_EQUAL(buf, "ok", 2);
    CU_ASSERT_FALSE(mw_param_ambiguous(qs, n, 0, "member", 6));
    CU_ASSERT_EQUAL(mw_param_match(qs, n, 0, "member", 6, "no", 2),
                    SUSPECT_E_NOTFOUND);
    free(qs);
}

int request_register_names(CU_pSuite s)
{
    return CU_add_test(s, "PHP name table", test_name_table) == NULL ||
                   CU_add_test(s, "PHP names in matches", test_name_match) ==
                       NULL ||
                   CU_add_test(s, "PHP names in repeats",
                               test_name_ambiguous) == NULL ||
                   CU_add_test(s, "PHP names, long input",
                               test_name_long_input) == NULL
               ? -1
               : 0;
}
