/*
 * test_multipart.c - suite "multipart": the multipart/form-data reader
 * (middleware/request/multipart.c, multipart_head.c) on its own.
 *
 * Tables: boundaries of Content-Type values; bodies and the events read
 * from them, written as one line ("u=alice|file:f|END", "REFUSE");
 * every table body again fed in pieces of every size from one byte, with
 * and without values, which must give the same parts and the same end;
 * big bodies that must stay one linear pass.  The readings of real PHP,
 * CGI.pm and Python on these shapes are test_multipart_readers.c's.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "request/multipart.h"
#include "request_test.h"
#include "suites.h"

#define OUT_MAX 4096

/* ---- boundaries ------------------------------------------------------------
 */

static void test_boundary_table(void)
{
    static const struct {
        const char *type, *want; /* NULL: refused */
    } cases[] = {
        {"multipart/form-data; boundary=abc", "abc"},
        {"multipart/form-data;boundary=abc", "abc"},
        {"multipart/form-data; boundary=\"abc\"", "abc"},
        {"multipart/form-data; boundary=\"abc\" ; charset=utf-8", "abc"},
        {"multipart/form-data; charset=utf-8; boundary=abc", "abc"},
        {"multipart/form-data; boundary=----WebKitFormBoundaryx7Yq",
         "----WebKitFormBoundaryx7Yq"},
        {"multipart/form-data; boundary=a'()+_-./:=?Z9", "a'()+_-./:=?Z9"},
        {"multipart/form-data; boundary=abc; x=\"boundary=zz\"", "abc"},
        /* None, twice, another case, before it. */
        {"multipart/form-data", NULL},
        {"multipart/form-data; boundary=", NULL},
        {"multipart/form-data; boundary=a; boundary=b", NULL},
        {"multipart/form-data; Boundary=abc", NULL},
        {"multipart/form-data; x=\"boundary\"; boundary=abc", NULL},
        {"multipart/form-data; xboundary=a; boundary=abc", NULL},
        /* Blanks: PHP keeps them, others drop them. */
        {"multipart/form-data; boundary=abc ; charset=x", NULL},
        {"multipart/form-data; boundary = abc", NULL},
        {"multipart/form-data; boundary=\"ab c\"", NULL},
        /* ',' ends it for PHP and CGI.pm, not Python. */
        {"multipart/form-data; boundary=ab,c", NULL},
        {"multipart/form-data; boundary=\"ab,c\"", NULL},
        {"multipart/form-data, boundary=abc", NULL},
        /* Quotes and escapes. */
        {"multipart/form-data; boundary=\"abc", NULL},
        {"multipart/form-data; boundary=\"a\\\"bc\"", NULL},
        {"multipart/form-data; boundary=\"abc\"x", NULL},
        {"multipart/form-data; boundary*=utf-8''abc", NULL},
        {"multipart/form-data; boundary=abc;", NULL},
        {"multipart/form-data; boundary=a%c", NULL},
    };
    char buf[MW_MP_BOUNDARY_MAX + 1];
    char longer[MW_MP_BOUNDARY_MAX + 64];

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t n = 0;
        const char *why = NULL;
        suspect_rc_t rc =
            mw_mp_boundary(cases[i].type, strlen(cases[i].type), buf, &n, &why);

        if (cases[i].want == NULL) {
            CU_ASSERT(rc == SUSPECT_E_PARSE && why != NULL);
            if (rc == SUSPECT_OK) {
                fprintf(stderr, "\n  accepted: %s\n", cases[i].type);
            }
        } else {
            CU_ASSERT(rc == SUSPECT_OK && n == strlen(cases[i].want) &&
                      memcmp(buf, cases[i].want, n) == 0);
            if (rc != SUSPECT_OK) {
                fprintf(stderr, "\n  refused: %s (%s)\n", cases[i].type, why);
            }
        }
    }
    /* 200 bytes at most. */
    memcpy(longer, "multipart/form-data; boundary=", 30);
    memset(longer + 30, 'x', MW_MP_BOUNDARY_MAX);
    {
        size_t n = 0;
        const char *why = NULL;

        CU_ASSERT(mw_mp_boundary(longer, 30 + MW_MP_BOUNDARY_MAX, buf, &n,
                                 &why) == SUSPECT_OK &&
                  n == MW_MP_BOUNDARY_MAX);
        longer[30 + MW_MP_BOUNDARY_MAX] = 'x';
        CU_ASSERT(mw_mp_boundary(longer, 31 + MW_MP_BOUNDARY_MAX, buf, &n,
                                 &why) == SUSPECT_E_PARSE);
    }
}

/* ---- bodies -----------------------------------------------------------------
 */

/* Appends text to out. */
static void put(char *out, const char *text, size_t n)
{
    size_t len = strlen(out);

    if (len + n < OUT_MAX) {
        memcpy(out + len, text, n);
        out[len + n] = '\0';
    }
}

/* Appends one event to out ("|" between them). */
static void put_event(char *out, mw_mp_ev_t ev, const mw_mp_part_t *part,
                      bool values)
{
    if (out[0] != '\0') {
        put(out, "|", 1);
    }
    switch (ev) {
    case MW_MP_FIELD:
        put(out, part->name, part->name_len);
        if (values) {
            put(out, "=", 1);
            put(out, part->value, part->value_len);
        }
        break;
    case MW_MP_FILE:
        put(out, "file:", 5);
        if (part->name != NULL) {
            put(out, part->name, part->name_len);
        }
        break;
    case MW_MP_END:
        put(out, "END", 3);
        break;
    default:
        put(out, "REFUSE", 6);
        break;
    }
}

/*
 * Reads body[0..len) with boundary "b" (or boundary), handing the parser
 * at most `piece` new bytes per call (0: all at once) and keeping what it
 * did not consume, as a caller does; the events into out.
 */
static void read_body(const char *boundary, const char *body, size_t len,
                      size_t piece, bool values, char out[OUT_MAX])
{
    mw_mp_t p;
    size_t from = 0, have = 0;

    out[0] = '\0';
    mw_mp_init(&p, boundary, strlen(boundary), values);
    for (;;) {
        mw_mp_part_t part;
        size_t used = 0;
        bool at_end;
        mw_mp_ev_t ev;

        if (piece == 0) {
            have = len;
        }
        at_end = have == len;
        ev = mw_mp_next(&p, body + from, have - from, at_end, &used, &part);
        CU_ASSERT_FATAL(used <= have - from);
        from += used;
        if (ev == MW_MP_MORE) {
            CU_ASSERT_FATAL(!at_end);
            have = have + piece < len ? have + piece : len;
            continue;
        }
        put_event(out, ev, &part, values);
        if (ev == MW_MP_END || ev == MW_MP_REFUSE) {
            return;
        }
    }
}

static const struct {
    const char *body;
    const char *want;
} body_cases[] = {
    /* What browsers send. */
    {"--b\r\nContent-Disposition: form-data; name=\"u\"\r\n\r\nalice\r\n"
     "--b\r\nContent-Disposition: form-data; name=\"p\"\r\n\r\nx\r\n--b--\r\n",
     "u=alice|p=x|END"},
    {"--b\r\nContent-Disposition: form-data; name=\"u\"\r\n\r\nalice\r\n"
     "--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a.txt\""
     "\r\nContent-Type: text/plain\r\n\r\nfile\r\nbody\r\n--b--\r\n",
     "u=alice|file:f|END"},
    /* Empty values, empty file name (a file), values with line ends. */
    {"--b\r\nContent-Disposition: form-data; name=\"u\"\r\n\r\n\r\n--b--",
     "u=|END"},
    {"--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"\"\r\n"
     "\r\n\r\n--b--\r\n",
     "file:f|END"},
    {"--b\r\nContent-Disposition: form-data; name=\"u\"\r\n\r\na\r\nb\n\r"
     "\r\n\r\n--b--\r\n",
     "u=a\r\nb\n\r\r\n|END"},
    /* Preamble and epilogue; no delimiter at all. */
    {"hello\r\n--b\r\nContent-Disposition: form-data; name=\"u\"\r\n\r\nx\r\n"
     "--b--\r\nbye\r\n",
     "u=x|END"},
    {"no parts here", "END"},
    {"", "END"},
    /* Bare LF lines (PHP and Python read them; no CR anywhere then). */
    {"--b\nContent-Disposition: form-data; name=\"u\"\n\nalice\n--b--\n",
     "u=alice|END"},
    {"--b\nContent-Disposition: form-data; name=\"u\"\n\nal\rice\n--b--\n",
     "REFUSE"},
    {"x\r\n--b\nContent-Disposition: form-data; name=\"u\"\n\na\n--b--\n",
     "REFUSE"},
    {"--b\r\nContent-Disposition: form-data; name=\"u\"\n\na\r\n--b--\r\n",
     "REFUSE"},
    {"--b\r\nContent-Disposition: form-data; name=\"u\"\r\n\r\na\n--b--\r\n",
     "REFUSE"},
    /* Parts that are no field. */
    {"--b\r\nX-A: 1\r\n\r\nx\r\n--b\r\nContent-Disposition: form-data; "
     "name=\"u\"\r\n\r\ny\r\n--b--\r\n",
     "u=y|END"},
    {"--b\r\n\r\nx\r\n--b--\r\n", "END"},
    {"--b\r\nContent-Disposition: form-data\r\n\r\nx\r\n--b--\r\n", "END"},
    {"--b\r\nContent-Disposition: form-data; filename=\"a\"\r\n\r\nx\r\n--b--",
     "file:|END"},
    /* Content-Disposition spellings every parser reads alike. */
    {"--b\r\ncontent-disposition: form-data; NAME=u\r\n\r\nx\r\n--b--",
     "u=x|END"},
    {"--b\r\nContent-Disposition: attachment;name=\"u\"\t \r\n\r\nx\r\n--b--",
     "u=x|END"},
    {"--b\r\nContent-Disposition: form-data; name=\"u[]\"; x=\"a;b=c\"\r\n\r\n"
     "x\r\n--b--",
     "u[]=x|END"},
    {"--b\r\nContent-Disposition: form-data; name=\"a\\b\"\r\n\r\nx\r\n--b--",
     "a\\b=x|END"},
    {"--b\r\nContent-Disposition: form-data; name=\"u\"; filename*=x\r\n\r\nv"
     "\r\n--b--",
     "REFUSE"},
    {"--b\r\nContent-Disposition: form-data; filename=\"f\"; name=\"u\"\r\n\r\n"
     "v\r\n--b--",
     "file:u|END"},
    /* ... and those they read differently. */
    {"--b\r\nContent-Disposition: form-data; name=\"u\"; name=\"v\"\r\n\r\nx"
     "\r\n--b--",
     "REFUSE"},
    {"--b\r\nContent-Disposition: form-data; name='u'\r\n\r\nx\r\n--b--",
     "REFUSE"},
    {"--b\r\nContent-Disposition: form-data; name=\"u\\\"\"\r\n\r\nx\r\n--b--",
     "REFUSE"},
    {"--b\r\nContent-Disposition: form-data; name=\"u\\\\\"\r\n\r\nx\r\n--b--",
     "REFUSE"},
    {"--b\r\nContent-Disposition: form-data; name=\"u\";filename=\"f\"\r\n\r\n"
     "x\r\n--b--",
     "REFUSE"},
    {"--b\r\nContent-Disposition: form-data; name=\"u\"; filename=f\r\n\r\n"
     "x\r\n--b--",
     "REFUSE"},
    {"--b\r\nContent-Disposition: form-data; name=\"u\"; filename=\"\"; "
     "filename=\"f\"\r\n\r\nx\r\n--b--",
     "REFUSE"},
    {"--b\r\nContent-Disposition: form-data; x=\" name=\"; name=\"u\"\r\n\r\nx"
     "\r\n--b--",
     "REFUSE"},
    {"--b\r\nContent-Disposition: form-data; username=\"u\"\r\n\r\nx\r\n--b--",
     "REFUSE"},
    {"--b\r\nContent-Disposition: name=\"u\"\r\n\r\nx\r\n--b--", "REFUSE"},
    {"--b\r\nContent-Disposition: form-data; name = \"u\"\r\n\r\nx\r\n--b--",
     "REFUSE"},
    {"--b\r\nContent-Disposition: form-data; name=\"u\";\r\n\r\nx\r\n--b--",
     "REFUSE"},
    {"--b\r\nContent-Disposition: form-data; name=\"u\r\n\r\nx\r\n--b--",
     "REFUSE"},
    /* Header lines. */
    {"--b\r\nContent-Disposition:form-data; name=\"u\"\r\n\r\nx\r\n--b--",
     "REFUSE"},
    {"--b\r\nContent-Disposition : form-data; name=\"u\"\r\n\r\nx\r\n--b--",
     "REFUSE"},
    {"--b\r\nX-A:\r\nContent-Disposition: form-data; name=\"u\"\r\n\r\nx\r\n"
     "--b--",
     "REFUSE"},
    {"--b\r\nContent-Disposition: form-data;\r\n name=\"u\"\r\n\r\nx\r\n--b--",
     "REFUSE"},
    {"--b\r\nContent-Disposition: form-data; name=\"v\"\r\nContent-Disposition"
     ": form-data; name=\"u\"\r\n\r\nx\r\n--b--",
     "REFUSE"},
    {"--b\r\nContent-Disposition: form-data; name=\"u\"\r\nContent-Transfer-"
     "Encoding: base64\r\n\r\neA==\r\n--b--",
     "REFUSE"},
    {"--b\r\nContent-Disposition: form-data; name=\"u\"\r\nContent-Type: "
     "multipart/mixed; boundary=c\r\n\r\nx\r\n--b--",
     "REFUSE"},
    {"--b\r\nContent-Disposition: form-data; name=\"u\"\r\nX-A: a\rb\r\n\r\nx"
     "\r\n--b--",
     "REFUSE"},
    /* Delimiters anywhere else. */
    {"--b\r\nContent-Disposition: form-data; name=\"u\"\r\n\r\n--b\r\n"
     "Content-Disposition: form-data; name=\"v\"\r\n\r\nx\r\n--b--",
     "REFUSE"},
    {"--b\r\nContent-Disposition: form-data; name=\"u\"\r\n\r\nx--b\r\n--b--",
     "REFUSE"},
    {"--b\r\nContent-Disposition: form-data; name=\"u\"\r\n\r\nx\r\n--bz\r\n"
     "--b--",
     "u=x|REFUSE"},
    {"--b\r\nContent-Disposition: form-data; name=\"u\"\r\n\r\nx\r\n--b \r\n"
     "--b--",
     "u=x|REFUSE"},
    {"--b\r\nContent-Disposition: form-data; name=\"u\"\r\n\r\nx\r\n--b--\r\n"
     "--b\r\nContent-Disposition: form-data; name=\"v\"\r\n\r\ny\r\n--b--",
     "u=x|REFUSE"},
    {"--b\r\nX-A: --b\r\nContent-Disposition: form-data; name=\"u\"\r\n\r\nx"
     "\r\n--b--",
     "REFUSE"},
    {"x--b\r\nContent-Disposition: form-data; name=\"u\"\r\n\r\nx\r\n--b--",
     "REFUSE"},
    {"--b--\r\n", "REFUSE"},
    /* Cut short.  (Events before a refusal count for nothing: a field
     * is reported once its value ends, before its delimiter line is.) */
    {"--b\r\nContent-Disposition: form-data; name=\"u\"\r\n\r\nx\r\n--b",
     "u=x|REFUSE"},
    {"--b\r\nContent-Disposition: form-data; name=\"u\"\r\n\r\nx", "REFUSE"},
    {"--b\r\nContent-Disposition: form-data; name=\"u\"", "REFUSE"},
    {"--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a\"\r\n"
     "\r\nxyz",
     "file:f|REFUSE"},
};

static size_t case_len(size_t i)
{
    return strlen(body_cases[i].body);
}

static void test_body_table(void)
{
    for (size_t i = 0; i < sizeof(body_cases) / sizeof(body_cases[0]); i++) {
        char out[OUT_MAX];

        read_body("b", body_cases[i].body, case_len(i), 0, true, out);
        CU_ASSERT(strcmp(out, body_cases[i].want) == 0);
        if (strcmp(out, body_cases[i].want) != 0) {
            fprintf(stderr, "\n  case %zu: got %s, want %s\n", i, out,
                    body_cases[i].want);
        }
    }
}

/* Events without values: the names of out (values mode) only. */
static void names_of(const char *with_values, char *out)
{
    const char *p = with_values;

    out[0] = '\0';
    while (*p != '\0') {
        const char *bar = strchr(p, '|');
        size_t n = bar != NULL ? (size_t)(bar - p) : strlen(p);
        const char *eq = memchr(p, '=', n);

        if (out[0] != '\0') {
            put(out, "|", 1);
        }
        put(out, p,
            eq != NULL && strncmp(p, "file:", 5) != 0 ? (size_t)(eq - p) : n);
        p += bar != NULL ? n + 1 : n;
    }
}

/* Whether names-mode events out match the values-mode ones whole: the
 * same, except that a field whose content is refused was reported by
 * name before the refusal. */
static bool same_parts(const char *out, const char *whole_names)
{
    size_t n = strlen(whole_names);

    if (strcmp(out, whole_names) == 0) {
        return true;
    }
    if (n < 6 || strcmp(whole_names + n - 6, "REFUSE") != 0 ||
        strlen(out) < 6 || strcmp(out + strlen(out) - 6, "REFUSE") != 0) {
        return false;
    }
    return strncmp(out, whole_names, n - 6) == 0;
}

/* Every table body in pieces of every size, with and without values:
 * the same events. */
static void test_body_pieces(void)
{
    for (size_t i = 0; i < sizeof(body_cases) / sizeof(body_cases[0]); i++) {
        size_t len = case_len(i);
        char whole[OUT_MAX], names[OUT_MAX];

        read_body("b", body_cases[i].body, len, 0, true, whole);
        names_of(whole, names);
        for (size_t piece = 1; piece <= len + 1; piece++) {
            char out[OUT_MAX];

            read_body("b", body_cases[i].body, len, piece, true, out);
            CU_ASSERT(strcmp(out, whole) == 0);
            read_body("b", body_cases[i].body, len, piece, false, out);
            CU_ASSERT(same_parts(out, names));
            if (!same_parts(out, names)) {
                fprintf(stderr, "\n  case %zu piece %zu: %s, not %s\n", i,
                        piece, out, names);
                break;
            }
        }
    }
}

/* Bodies the table's C strings cannot hold: NUL bytes. */
static void test_body_nul(void)
{
    static const char ok[] = "--b\r\nContent-Disposition: form-data; "
                             "name=\"u\"\r\n\r\n\0alice\0\r\n--b--";
    static const char bad[] = "--b\r\nContent-Disposition: form-data; "
                              "name=\"u\"\r\n\r\nx\r\n--b\0\r\n--b--";
    static const char head[] = "--b\r\nContent-Disposition: form-data; "
                               "name=\"u\"\r\nX: a\0b\r\n\r\nx\r\n--b--";
    char out[OUT_MAX];

    mw_mp_t p;
    mw_mp_part_t part;
    size_t used = 0;

    mw_mp_init(&p, "b", 1, true);
    CU_ASSERT(mw_mp_next(&p, ok, sizeof(ok) - 1, true, &used, &part) ==
              MW_MP_FIELD);
    CU_ASSERT(part.value_len == 7 && memcmp(part.value, "\0alice\0", 7) == 0);
    read_body("b", bad, sizeof(bad) - 1, 0, true, out);
    CU_ASSERT_STRING_EQUAL(out, "u=x|REFUSE");
    read_body("b", head, sizeof(head) - 1, 0, true, out);
    CU_ASSERT_STRING_EQUAL(out, "REFUSE");
}

/* Boundaries that overlap themselves, and WebKit's. */
static void test_body_boundaries(void)
{
    static const struct {
        const char *boundary, *body, *want;
    } cases[] = {
        {"-",
         "---\r\nContent-Disposition: form-data; name=\"u\"\r\n\r\nx\r\n"
         "-----\r\n",
         "u=x|END"},
        {"-",
         "---\r\nContent-Disposition: form-data; name=\"u\"\r\n\r\nx-\r\n"
         "-----\r\n",
         "u=x-|END"},
        {"-",
         "---\r\nContent-Disposition: form-data; name=\"u\"\r\n\r\nx---"
         "\r\n-----\r\n",
         "REFUSE"},
        {"ab-ab",
         "--ab-ab\r\nContent-Disposition: form-data; name=\"u\"\r\n"
         "\r\n--ab-ab-ab\r\n--ab-ab--",
         "REFUSE"},
        {"----WebKitFormBoundaryQ1",
         "------WebKitFormBoundaryQ1\r\nContent-Disposition: form-data; "
         "name=\"u\"\r\n\r\nal------WebKitFormBoundaryQ\r\n"
         "------WebKitFormBoundaryQ1--\r\n",
         "u=al------WebKitFormBoundaryQ|END"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t len = strlen(cases[i].body);
        char out[OUT_MAX];

        for (size_t piece = 0; piece <= len; piece++) {
            read_body(cases[i].boundary, cases[i].body, len, piece, true, out);
            CU_ASSERT(strcmp(out, cases[i].want) == 0);
            if (strcmp(out, cases[i].want) != 0) {
                fprintf(stderr, "\n  case %zu piece %zu: %s\n", i, piece, out);
                break;
            }
        }
    }
}

/* A file of 16 MiB between two fields, and 100000 small fields: one
 * pass each (seconds on any machine; quadratic would be hours). */
static void test_body_big(void)
{
    size_t file = 16u << 20, n = 0;
    char *body = malloc(file + 4096);
    char out[OUT_MAX];

    CU_ASSERT_FATAL(body != NULL);
    n += (size_t)sprintf(body, "--b\r\nContent-Disposition: form-data; "
                               "name=\"u\"\r\n\r\nalice\r\n--b\r\n"
                               "Content-Disposition: form-data; name=\"f\"; "
                               "filename=\"big\"\r\n\r\n");
    for (size_t i = 0; i < file; i++) {
        body[n + i] = (char)((i % 251) == 0 ? '\n' : "-b\r"[i % 3]);
    }
    n += file;
    n += (size_t)sprintf(body + n, "\r\n--b\r\nContent-Disposition: form-data;"
                                   " name=\"p\"\r\n\r\nx\r\n--b--\r\n");
    read_body("b", body, n, 0, true, out);
    CU_ASSERT_STRING_EQUAL(out, "u=alice|file:f|p=x|END");
    read_body("b", body, n, 65536, false, out);
    CU_ASSERT_STRING_EQUAL(out, "u|file:f|p|END");
    free(body);

    body = malloc(100000 * 64);
    CU_ASSERT_FATAL(body != NULL);
    n = 0;
    for (int i = 0; i < 100000; i++) {
        n += (size_t)sprintf(body + n,
                             "--b\r\nContent-Disposition: form-data; "
                             "name=\"f%d\"\r\n\r\nv\r\n",
                             i % 10);
    }
    n += (size_t)sprintf(body + n, "--b--");
    {
        mw_mp_t p;
        size_t from = 0, fields = 0;
        mw_mp_ev_t ev;

        mw_mp_init(&p, "b", 1, true);
        do {
            mw_mp_part_t part;
            size_t used = 0;

            ev = mw_mp_next(&p, body + from, n - from, true, &used, &part);
            from += used;
            fields += ev == MW_MP_FIELD;
        } while (ev == MW_MP_FIELD);
        CU_ASSERT(ev == MW_MP_END && fields == 100000);
    }
    free(body);
}

/* Header blocks: 8 KiB at most. */
static void test_head_bound(void)
{
    char body[MW_MP_HEAD_MAX + 256], out[OUT_MAX];

    /* The first one's block is 8 KiB and some, the second's less. */
    size_t n = (size_t)sprintf(body, "--b\r\nX-Pad: ");
    size_t pad = MW_MP_HEAD_MAX;

    memset(body + n, 'a', pad);
    n += pad;
    n += (size_t)sprintf(body + n, "\r\nContent-Disposition: form-data; "
                                   "name=\"u\"\r\n\r\nx\r\n--b--");
    read_body("b", body, n, 0, true, out);
    CU_ASSERT_STRING_EQUAL(out, "REFUSE");
    read_body("b", body, n, 100, false, out);
    CU_ASSERT_STRING_EQUAL(out, "REFUSE");
    pad = MW_MP_HEAD_MAX - 256;
    n = (size_t)sprintf(body, "--b\r\nX-Pad: ");
    memset(body + n, 'a', pad);
    n += pad;
    n += (size_t)sprintf(body + n, "\r\nContent-Disposition: form-data; "
                                   "name=\"u\"\r\n\r\nx\r\n--b--");
    read_body("b", body, n, 0, true, out);
    CU_ASSERT_STRING_EQUAL(out, "u=x|END");
}

/* What mw_mp_done_to() says of a prefix. */
static void test_done_to(void)
{
    static const char body[] =
        "--b\r\nContent-Disposition: form-data; name=\"u\"\r\n\r\nalice\r\n"
        "--b\r\nContent-Disposition: form-data; name=\"p\"\r\n\r\nsecret\r\n"
        "--b--\r\n";
    const char *second = strstr(body + 1, "--b\r\n");
    size_t cut = (size_t)(strstr(body, "secret") - body) + 2;
    mw_mp_t p;
    mw_mp_part_t part;
    size_t used = 0, from = 0;

    mw_mp_init(&p, "b", 1, true);
    CU_ASSERT(mw_mp_next(&p, body, cut, false, &used, &part) == MW_MP_FIELD);
    from += used;
    CU_ASSERT(mw_mp_next(&p, body + from, cut - from, false, &used, &part) ==
              MW_MP_MORE);
    CU_ASSERT(mw_mp_done_to(&p) == (unsigned long long)(second - body));
}

int register_multipart_suite(void)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } tests[] = {
        {"boundary table", test_boundary_table},
        {"body table", test_body_table},
        {"body table in pieces", test_body_pieces},
        {"NUL bytes", test_body_nul},
        {"self-overlapping boundaries", test_body_boundaries},
        {"big bodies, one pass", test_body_big},
        {"header block bound", test_head_bound},
        {"parts still to come", test_done_to},
    };
    CU_pSuite s = CU_add_suite("multipart", NULL, NULL);

    if (s == NULL) {
        return -1;
    }
    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return multipart_add_reader_tests(s);
}
