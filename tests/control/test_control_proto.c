/*
 * test_control_proto.c - suite "control": the control protocol's codec
 * (middleware/control/control_proto.c) from byte arrays: messages written
 * and read back, every byte value through an argument, incomplete input
 * asking for more, and malformed or oversized input refused with a
 * message that quotes nothing of it.
 */
#include <CUnit/CUnit.h>
#include <stdlib.h>
#include <string.h>

#include "control/control_proto.h"
#include "control_test.h"

/* Parses text (a C string) with the request bounds; the rc. */
static suspect_rc_t parse(const char *text, mw_ctl_msg_t *m, size_t *used,
                          char *why, size_t why_size)
{
    suspect_err_t err;
    suspect_rc_t rc;

    suspect_err_clear(&err);
    rc =
        mw_ctl_parse(text, strlen(text), &mw_ctl_request_limits, m, used, &err);
    suspect_err_format(&err, why, why_size);
    return rc;
}

static void test_round_trip(void)
{
    mw_ctl_out_t o;
    mw_ctl_msg_t m;
    char bytes[256];
    size_t used = 0, len;
    int64_t v;
    const char *s;

    for (int i = 0; i < 256; i++) {
        bytes[i] = (char)i;
    }
    memset(&o, 0, sizeof(o));
    mw_ctl_out_begin(&o);
    mw_ctl_out_field(&o, "command", "status");
    mw_ctl_out_line(&o, "key");
    mw_ctl_out_arg(&o, bytes, sizeof(bytes));
    mw_ctl_out_arg(&o, "a b%c", 5);
    mw_ctl_out_field_i64(&o, "until_ms", -1793705467000);
    mw_ctl_out_line(&o, "ok");
    CU_ASSERT_EQUAL_FATAL(mw_ctl_out_end(&o), SUSPECT_OK);
    CU_ASSERT_NSTRING_EQUAL(o.buf, "suspect-control 1\ncommand status\nkey ",
                            37);
    CU_ASSERT_EQUAL(o.buf[o.len - 1], '\n');
    CU_ASSERT_EQUAL(o.buf[o.len - 2], '\n');
    CU_ASSERT_EQUAL(
        mw_ctl_parse(o.buf, o.len, &mw_ctl_request_limits, &m, &used, NULL),
        SUSPECT_OK);
    CU_ASSERT_EQUAL(used, o.len);
    CU_ASSERT_EQUAL(m.version, MW_CTL_VERSION);
    CU_ASSERT_EQUAL_FATAL(m.nlines, 4);
    CU_ASSERT_STRING_EQUAL(mw_ctl_get_str(&m, "command", NULL), "status");
    s = mw_ctl_get_str(&m, "key", &len);
    CU_ASSERT_EQUAL(len, 256);
    CU_ASSERT(s != NULL && memcmp(s, bytes, 256) == 0);
    CU_ASSERT_EQUAL(mw_ctl_get(&m, "key")->nargs, 2);
    CU_ASSERT_STRING_EQUAL(mw_ctl_get(&m, "key")->arg[1].p, "a b%c");
    CU_ASSERT(mw_ctl_get_i64(&m, "until_ms", &v) && v == -1793705467000);
    CU_ASSERT_PTR_NOT_NULL(mw_ctl_get(&m, "ok"));
    CU_ASSERT_EQUAL(mw_ctl_get(&m, "ok")->nargs, 0);
    CU_ASSERT_PTR_NULL(mw_ctl_get(&m, "nothing"));
    mw_ctl_msg_free(&m);
    mw_ctl_out_free(&o);
}

/* A message arriving in pieces: more is asked for until the empty line;
 * what follows it is left for the next message. */
static void test_incomplete(void)
{
    const char *text = "suspect-control 1\ncommand stats\n\nsuspect-con";
    size_t full = strlen("suspect-control 1\ncommand stats\n\n"), used = 0;
    mw_ctl_msg_t m;

    for (size_t n = 0; n < full; n++) {
        CU_ASSERT_EQUAL(
            mw_ctl_parse(text, n, &mw_ctl_request_limits, &m, &used, NULL),
            SUSPECT_E_NOTFOUND);
    }
    CU_ASSERT_EQUAL(mw_ctl_parse(text, strlen(text), &mw_ctl_request_limits, &m,
                                 &used, NULL),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(used, full);
    mw_ctl_msg_free(&m);
}

/* Another version: its lines are not read, its version is said. */
static void test_other_version(void)
{
    mw_ctl_msg_t m;
    char why[300];
    size_t used;

    CU_ASSERT_EQUAL(parse("suspect-control 2\nwhat ever goes\n\n", &m, &used,
                          why, sizeof(why)),
                    SUSPECT_OK);
    CU_ASSERT_EQUAL(m.version, 2);
    CU_ASSERT_EQUAL(m.nlines, 0);
    mw_ctl_msg_free(&m);
}

static void test_malformed(void)
{
    static const struct {
        const char *text, *why;
    } cases[] = {
        {"hello\n\n", "the first line is not"},
        {"suspect-control 0\n\n", "the first line is not"},
        {"suspect-control 01\n\n", "the first line is not"},
        {"suspect-control 1x\n\n", "the first line is not"},
        {"\n\n", "the first line is not"},
        {"suspect-control 1\nCommand x\n\n", "line 2: a name is"},
        {"suspect-control 1\n9a x\n\n", "line 2: a name is"},
        {"suspect-control 1\n x\n\n", "line 2: a name is 1 to 32"},
        {"suspect-control 1\na x  y\n\n", "line 2: an empty argument"},
        {"suspect-control 1\na x \n\n", "line 2: an empty argument"},
        {"suspect-control 1\na\tx\n\n", "line 2: a name is"},
        {"suspect-control 1\na x\ty\n\n", "not escaped"},
        {"suspect-control 1\nok\na %4\n\n", "line 3: '%' is not"},
        {"suspect-control 1\na %zz\n\n", "'%' is not"},
        {"suspect-control 1\na 1 2 3 4 5 6 7 8 9\n\n", "more than 8"},
        {"suspect-control 1\naaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa x\n\n",
         "1 to 32"},
    };
    mw_ctl_msg_t m;
    char why[300];
    size_t used;

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        CU_ASSERT_EQUAL(parse(cases[i].text, &m, &used, why, sizeof(why)),
                        SUSPECT_E_PARSE);
        if (strstr(why, cases[i].why) == NULL) {
            fprintf(stderr, "\n  case %zu: '%s' lacks '%s'\n", i, why,
                    cases[i].why);
            CU_FAIL("message");
        }
        CU_ASSERT_PTR_NULL(m.lines);
        CU_ASSERT_PTR_NULL(m.text);
    }
}

/* Bounds: the request's 64 KiB and 64 lines, a line's 8 KiB, also when
 * the end never comes. */
static void test_bounds(void)
{
    size_t big = 70u << 10, used;
    char *text = malloc(big + 1);
    mw_ctl_msg_t m;
    char why[300];
    size_t n;

    CU_ASSERT_FATAL(text != NULL);
    n = (size_t)sprintf(text, "suspect-control 1\n");
    for (int i = 0; i < 65; i++) {
        n += (size_t)sprintf(text + n, "a %d\n", i);
    }
    strcpy(text + n, "\n");
    CU_ASSERT_EQUAL(parse(text, &m, &used, why, sizeof(why)), SUSPECT_E_PARSE);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "more than 64 lines"));
    /* one line of 9 KiB, complete or not */
    n = (size_t)sprintf(text, "suspect-control 1\na ");
    memset(text + n, 'x', 9000);
    text[n + 9000] = '\0';
    CU_ASSERT_EQUAL(parse(text, &m, &used, why, sizeof(why)), SUSPECT_E_PARSE);
    strcpy(text + n + 9000, "\n\n");
    CU_ASSERT_EQUAL(parse(text, &m, &used, why, sizeof(why)), SUSPECT_E_PARSE);
    /* lines of 4 KiB to 70 KiB, no end: refused at 64 KiB */
    n = (size_t)sprintf(text, "suspect-control 1\n");
    while (n + 4100 < big) {
        n += (size_t)sprintf(text + n, "a ");
        memset(text + n, 'y', 4000);
        n += 4000;
        text[n++] = '\n';
    }
    text[n] = '\0';
    CU_ASSERT_EQUAL(parse(text, &m, &used, why, sizeof(why)), SUSPECT_E_PARSE);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "over 65536 bytes"));
    free(text);
}

/* The writer refuses what cannot be read back, and says so once. */
static void test_writer_refuses(void)
{
    mw_ctl_out_t o;
    char big[5000];

    memset(&o, 0, sizeof(o));
    mw_ctl_out_begin(&o);
    mw_ctl_out_line(&o, "a");
    mw_ctl_out_arg(&o, "", 0);
    CU_ASSERT_EQUAL(mw_ctl_out_end(&o), SUSPECT_E_INVAL);
    mw_ctl_out_begin(&o);
    mw_ctl_out_line(&o, "Bad");
    CU_ASSERT_EQUAL(mw_ctl_out_end(&o), SUSPECT_E_INVAL);
    mw_ctl_out_begin(&o);
    memset(big, 0, sizeof(big));
    mw_ctl_out_line(&o, "a");
    mw_ctl_out_arg(&o, big, sizeof(big)); /* 15 KiB escaped */
    CU_ASSERT_EQUAL(mw_ctl_out_end(&o), SUSPECT_E_INVAL);
    mw_ctl_out_begin(&o);
    mw_ctl_out_field(&o, "ok", "fine");
    CU_ASSERT_EQUAL(mw_ctl_out_end(&o), SUSPECT_OK);
    mw_ctl_out_free(&o);
}

static void test_integers(void)
{
    mw_ctl_arg_t a;
    int64_t v;

    a = (mw_ctl_arg_t){"123", 3};
    CU_ASSERT(mw_ctl_arg_i64(&a, &v) && v == 123);
    a = (mw_ctl_arg_t){"-", 1};
    CU_ASSERT_FALSE(mw_ctl_arg_i64(&a, &v));
    a = (mw_ctl_arg_t){"12a", 3};
    CU_ASSERT_FALSE(mw_ctl_arg_i64(&a, &v));
    a = (mw_ctl_arg_t){"1234567890123456789", 19};
    CU_ASSERT_FALSE(mw_ctl_arg_i64(&a, &v));
    a = (mw_ctl_arg_t){"-999999999999999999", 19};
    CU_ASSERT(mw_ctl_arg_i64(&a, &v) && v == -999999999999999999LL);
}

int control_add_proto_tests(CU_pSuite s)
{
    if (!CU_add_test(s, "codec: round trip, every byte", test_round_trip) ||
        !CU_add_test(s, "codec: incomplete input", test_incomplete) ||
        !CU_add_test(s, "codec: another version", test_other_version) ||
        !CU_add_test(s, "codec: malformed input", test_malformed) ||
        !CU_add_test(s, "codec: bounds", test_bounds) ||
        !CU_add_test(s, "codec: the writer refuses", test_writer_refuses) ||
        !CU_add_test(s, "codec: integers", test_integers)) {
        return -1;
    }
    return 0;
}
