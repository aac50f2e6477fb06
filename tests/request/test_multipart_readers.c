/*
 * test_multipart_readers.c - suite "multipart", part two: the reader
 * against the real ones.
 *
 * Each body of the table goes as a CGI request to Debian's php-cgi (a
 * script printing $_POST and the names of $_FILES), to a CGI.pm program
 * (param(), uploads apart) and to Python's cgi.FieldStorage (the stdlib
 * reader of Debian 12's python3), and through mw_mp_next().  For a body
 * the reader accepts:
 *   - PHP's fields and files are the reader's, exactly (the table's names
 *     are plain and not repeated, so $_POST holds each field as it came);
 *   - Python's are the reader's, in order;
 *   - CGI.pm reads no field the reader does not, but for a file part
 *     with an empty filename="" (a field to CGI.pm: the guard refuses a
 *     file part named as a parameter it counts); it reads nothing of a
 *     body of bare LF lines.
 * Python and CGI.pm read a part without a name they understand as a
 * field named "", which no route counts: those are left out.
 * For a body the reader refuses, the table says which readers disagree:
 * each refusal in the table is one where a real reader reads a field the
 * others do not, or another value.
 */
#include <CUnit/CUnit.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"
#include "request/multipart.h"
#include "request_test.h"

#define LINES_MAX 32
#define LINE_MAX  600

/* What one reader read: "P name value" (hex) and "F name" lines. */
typedef struct reading {
    size_t n;
    char line[LINES_MAX][LINE_MAX];
} reading_t;

static const char php_dump[] =
    "<?php\n"
    "foreach ($_POST as $k => $v) { echo 'P ', bin2hex($k), ' ',"
    " is_array($v) ? 'array' : bin2hex($v), \"\\n\"; }\n"
    "foreach ($_FILES as $k => $v) { echo 'F ', bin2hex($k), \"\\n\"; }\n";

static const char perl_dump[] =
    "use strict; use CGI;\n"
    "my $q = CGI->new;\n"
    "print \"Content-Type: text/plain\\r\\n\\r\\n\";\n"
    "for my $n ($q->param) { for my $v ($q->multi_param($n)) {\n"
    "  if (ref $v) { print 'F ', unpack('H*', $n), \"\\n\"; }\n"
    "  else { print 'P ', unpack('H*', $n), ' ', unpack('H*', $v), "
    "\"\\n\"; } } }\n";

static const char python_dump[] =
    "import os, sys, warnings\n"
    "warnings.simplefilter('ignore')\n"
    "import cgi\n"
    "sys.stdout.write('Content-Type: text/plain\\r\\n\\r\\n')\n"
    "def b(s): return s.encode('utf-8', 'surrogateescape') if isinstance(s,"
    " str) else s\n"
    "f = cgi.FieldStorage(fp=sys.stdin.buffer, environ=os.environ,"
    " keep_blank_values=True)\n"
    "for it in f.list or []:\n"
    "    n = b(it.name or '').hex()\n"
    "    if it.filename is not None: sys.stdout.write('F ' + n + '\\n')\n"
    "    elif isinstance(it.value, list): sys.stdout.write('P ' + n +"
    " ' list\\n')\n"
    "    else: sys.stdout.write('P ' + n + ' ' + b(it.value).hex() + '\\n')\n";

static char *dir;

static int readers_init(void)
{
    char path[TEST_PATH_MAX];

    dir = test_mkdtemp();
    if (dir == NULL) {
        return -1;
    }
    snprintf(path, sizeof(path), "%s/dump.php", dir);
    if (test_write_file(path, php_dump, sizeof(php_dump) - 1) != 0) {
        return -1;
    }
    snprintf(path, sizeof(path), "%s/dump.pl", dir);
    if (test_write_file(path, perl_dump, sizeof(perl_dump) - 1) != 0) {
        return -1;
    }
    snprintf(path, sizeof(path), "%s/dump.py", dir);
    return test_write_file(path, python_dump, sizeof(python_dump) - 1);
}

static void readers_clean(void)
{
    if (dir != NULL) {
        test_rmtree(dir);
        free(dir);
        dir = NULL;
    }
}

/* Parses the response out[0..len) of a reader into r (lines after the
 * CGI header block). */
static void parse_reading(const char *out, size_t len, reading_t *r)
{
    const char *p = out, *end = out + len;
    const char *blank = NULL;

    for (const char *q = out; q + 1 < end; q++) {
        if (q[0] == '\n' &&
            (q[1] == '\n' || (q[1] == '\r' && q + 2 < end && q[2] == '\n'))) {
            blank = q + (q[1] == '\n' ? 2 : 3);
            break;
        }
    }
    r->n = 0;
    p = blank != NULL ? blank : out;
    while (p < end && r->n < LINES_MAX) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl != NULL ? (size_t)(nl - p) : (size_t)(end - p);

        if (n > 0 && (p[0] == 'P' || p[0] == 'F') && n < LINE_MAX) {
            memcpy(r->line[r->n], p, n);
            r->line[r->n][n] = '\0';
            r->n++;
        }
        p += nl != NULL ? n + 1 : n;
    }
}

/* Runs argv as a CGI program on body (Content-Type type); its reading. */
static void run_reader(const char *const argv[], const char *script,
                       const char *type, const char *body, size_t len,
                       reading_t *r)
{
    char in[TEST_PATH_MAX], outp[TEST_PATH_MAX], clen[48], ct[600], sf[600];
    char method[] = "REQUEST_METHOD=POST", gw[] = "GATEWAY_INTERFACE=CGI/1.1";
    char redirect[] = "REDIRECT_STATUS=200", path[] = "PATH=/usr/bin:/bin";
    char *envp[] = {method, gw, redirect, path, ct, clen, sf, NULL};
    int64_t deadline = mono_ms() + test_scale_ms(20000);
    char *out;
    size_t out_len = 0;
    int status = 0;
    pid_t pid;

    snprintf(in, sizeof(in), "%s/body", dir);
    snprintf(outp, sizeof(outp), "%s/out", dir);
    snprintf(clen, sizeof(clen), "CONTENT_LENGTH=%zu", len);
    snprintf(ct, sizeof(ct), "CONTENT_TYPE=%s", type);
    snprintf(sf, sizeof(sf), "SCRIPT_FILENAME=%s/%s", dir, script);
    CU_ASSERT_FATAL(test_write_file(in, body, len) == 0);
    pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        int i = open(in, O_RDONLY);
        int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open("/dev/null", O_WRONLY);

        if (i < 0 || o < 0 || e < 0 || dup2(i, 0) < 0 || dup2(o, 1) < 0 ||
            dup2(e, 2) < 0) {
            _exit(127);
        }
        execve(argv[0], (char *const *)argv, envp);
        _exit(127);
    }
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (mono_ms() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            break;
        }
        usleep(2000);
    }
    CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) != 127);
    out = test_read_file(outp, &out_len);
    parse_reading(out != NULL ? out : "", out != NULL ? out_len : 0, r);
    free(out);
}

/* Appends "P name value" or "F name" (hex) to r. */
static void add_line(reading_t *r, char kind, const char *name, size_t nlen,
                     const char *value, size_t vlen)
{
    static const char hex[] = "0123456789abcdef";
    char *l;
    size_t k = 0;

    if (r->n == LINES_MAX || 2 + 2 * (nlen + vlen) + 2 >= LINE_MAX) {
        return;
    }
    l = r->line[r->n++];
    l[k++] = kind;
    l[k++] = ' ';
    for (size_t i = 0; i < nlen; i++) {
        l[k++] = hex[(unsigned char)name[i] >> 4];
        l[k++] = hex[(unsigned char)name[i] & 15];
    }
    if (kind == 'P') {
        l[k++] = ' ';
        for (size_t i = 0; i < vlen; i++) {
            l[k++] = hex[(unsigned char)value[i] >> 4];
            l[k++] = hex[(unsigned char)value[i] & 15];
        }
    }
    l[k] = '\0';
}

/* The reader's reading of body; false when it refuses it. */
static bool our_reading(const char *type, const char *body, size_t len,
                        reading_t *r)
{
    char b[MW_MP_BOUNDARY_MAX];
    size_t blen = 0, from = 0;
    const char *why;
    mw_mp_t p;

    r->n = 0;
    if (mw_mp_boundary(type, strlen(type), b, &blen, &why) != SUSPECT_OK) {
        return false;
    }
    mw_mp_init(&p, b, blen, true);
    for (;;) {
        mw_mp_part_t part;
        size_t used = 0;
        mw_mp_ev_t ev =
            mw_mp_next(&p, body + from, len - from, true, &used, &part);

        from += used;
        if (ev == MW_MP_FIELD) {
            add_line(r, 'P', part.name, part.name_len, part.value,
                     part.value_len);
        } else if (ev == MW_MP_FILE && part.name != NULL) {
            add_line(r, 'F', part.name, part.name_len, NULL, 0);
        } else if (ev != MW_MP_FILE) {
            return ev == MW_MP_END;
        }
    }
}

static bool has_line(const reading_t *r, const char *line)
{
    for (size_t i = 0; i < r->n; i++) {
        if (strcmp(r->line[i], line) == 0) {
            return true;
        }
    }
    return false;
}

/* Whether a and b hold the same lines (order kept when ordered). */
static bool same(const reading_t *a, const reading_t *b, bool ordered)
{
    if (a->n != b->n) {
        return false;
    }
    for (size_t i = 0; i < a->n; i++) {
        if (ordered ? strcmp(a->line[i], b->line[i]) != 0
                    : !has_line(b, a->line[i])) {
            return false;
        }
    }
    return true;
}

/* Drops r's fields without a name (Python's and CGI.pm's reading of a
 * part without name=: never a parameter anything counts). */
static void drop_nameless(reading_t *r)
{
    size_t k = 0;

    for (size_t i = 0; i < r->n; i++) {
        if (strncmp(r->line[i], "P  ", 3) != 0) {
            memmove(r->line[k++], r->line[i], LINE_MAX);
        }
    }
    r->n = k;
}

/* Whether CGI.pm's reading perl reads nothing ours does not (see the
 * file comment). */
static bool perl_within(const reading_t *perl, const reading_t *ours)
{
    for (size_t i = 0; i < perl->n; i++) {
        const char *l = perl->line[i];
        char file[LINE_MAX];
        const char *sp = strchr(l + 2, ' ');
        size_t nlen = sp != NULL ? (size_t)(sp - l - 2) : strlen(l + 2);

        snprintf(file, sizeof(file), "F %.*s", (int)nlen, l + 2);
        if (has_line(ours, l) || (l[0] == 'P' && has_line(ours, file))) {
            continue;
        }
        return false;
    }
    return true;
}

#define CRLF(cd, v)                                                            \
    "--b\r\nContent-Disposition: " cd "\r\n\r\n" v "\r\n--b--\r\n"
#define TYPE "multipart/form-data; boundary=b"

static const struct {
    const char *type, *body;
    const char *differ; /* refused: which readers disagree ("php-perl") */
} cases[] = {
    /* Accepted. */
    {TYPE,
     "--b\r\nContent-Disposition: form-data; name=\"u\"\r\n\r\nalice\r\n"
     "--b\r\nContent-Disposition: form-data; name=\"f\"; filename=\"a.txt\""
     "\r\nContent-Type: text/plain\r\n\r\nline\r\n--b\r\nContent-"
     "Disposition: form-data; name=\"p\"\r\n\r\nx\r\ny\r\n--b--\r\n",
     NULL},
    {"multipart/form-data; boundary=----WebKitFormBoundaryK2x",
     "------WebKitFormBoundaryK2x\r\nContent-Disposition: form-data; "
     "name=\"u\"\r\n\r\n\xc3\xa1lice\r\n------WebKitFormBoundaryK2x--\r\n",
     NULL},
    {"multipart/form-data; boundary=\"b\"; charset=utf-8",
     CRLF("form-data; name=\"u\"", "alice"), NULL},
    {TYPE, CRLF("form-data; name=\"f\"; filename=\"\"", ""), NULL},
    {TYPE, CRLF("form-data; NAME=u", "x"), NULL},
    {TYPE, CRLF("attachment;name=\"u\"\t ", "x"), NULL},
    {TYPE, CRLF("form-data; name=\"a\\b\"", "x"), NULL},
    {TYPE, CRLF("form-data; filename=\"f\"; name=\"u\"", "x"), NULL},
    {TYPE, CRLF("form-data; name=\"u\"; x=\"a;b\"", "x"), NULL},
    {TYPE, CRLF("form-data; name=\"u\"", " alice\x01 \t"), NULL},
    {TYPE,
     "pre\r\n--b\r\ncontent-disposition: form-data; name=\"u\"\r\n\r\nx\r\n"
     "--b\r\nX-Other: 1\r\n\r\nskipped\r\n--b--\r\nepilogue",
     NULL},
    {TYPE, "--b\nContent-Disposition: form-data; name=\"u\"\n\nalice\n--b--\n",
     NULL},
    {TYPE,
     "--b\r\nCONTENT-DISPOSITION: form-data; name=\"u\"\r\n\r\nx\r\n--b--",
     NULL},
    /* Refused, and the readers disagree. */
    {TYPE, CRLF("form-data; name=\"u\"; name=\"v\"", "x"), "php-perl"},
    {TYPE, CRLF("form-data; name='u'", "x"), "php-perl"},
    {TYPE, CRLF("form-data; name=\"u\\\"\"", "x"), "php-perl"},
    {TYPE, CRLF("form-data; name=\"u\";filename=\"f\"", "x"), "php-perl"},
    {TYPE, CRLF("form-data; x=\" name=\"; name=\"u\"", "x"), "php-perl"},
    {TYPE, CRLF("name=\"u\"", "x"), "php-python"},
    {TYPE, CRLF("form-data; name = \"u\"", "x"), "php-python"},
    {TYPE, "--b\r\nContent-Disposition:form-data; name=\"u\"\r\n\r\nx\r\n--b--",
     "php-perl"},
    {TYPE,
     "--b\r\nX-A:\r\nContent-Disposition: form-data; name=\"u\"\r\n\r\nx\r\n"
     "--b--",
     "php-perl"},
    {TYPE,
     "--b\r\nContent-Disposition: form-data; name=\"v\"\r\n"
     "Content-Disposition: form-data; name=\"u\"\r\n\r\nx\r\n--b--",
     "php-perl"},
    {TYPE,
     "--b\r\nContent-Disposition: form-data; name=\"u\"\r\nContent-Type: "
     "application/x-www-form-urlencoded\r\n\r\nu=x\r\n--b--",
     "php-python"},
    {TYPE,
     "--b\r\nContent-Disposition: form-data; name=\"u\"\r\n\r\n--b\r\n"
     "Content-Disposition: form-data; name=\"v\"\r\n\r\nx\r\n--b--",
     "php-perl"},
    {TYPE,
     "--b\r\nContent-Disposition: form-data; name=\"u\"\r\n\r\nx\r\n--b--\r\n"
     "--b\r\nContent-Disposition: form-data; name=\"v\"\r\n\r\ny\r\n--b--",
     "php-perl"},
    {TYPE,
     "--b\r\nContent-Disposition: form-data; name=\"u\"\r\n\r\na\n--b\r\n"
     "Content-Disposition: form-data; name=\"v\"\r\n\r\ny\r\n--b--",
     "php-perl"},
    {TYPE,
     "--b\r\nContent-Disposition: form-data; name=\"u\"\r\n\r\nx\r\n--b  \r\n"
     "Content-Disposition: form-data; name=\"v\"\r\n\r\ny\r\n--b--",
     "php-python"},
    {TYPE, "--b\r\nContent-Disposition: form-data; name=\"u\"\r\n\r\nalice",
     "php-perl"},
    {"multipart/form-data; boundary=b ; x=y",
     CRLF("form-data; name=\"u\"", "x"), "php-python"},
    {"multipart/form-data; charset=\"boundary=c\"; boundary=b",
     CRLF("form-data; name=\"u\"", "x"), "php-python"},
};

/* Whether readers a and b ("php", "perl", "python") read differently. */
static bool differ(const reading_t *r, const char *a, const char *b)
{
    static const char *const names[] = {"php", "perl", "python"};
    size_t i = 0, j = 0;

    for (size_t k = 0; k < 3; k++) {
        i = strcmp(names[k], a) == 0 ? k : i;
        j = strcmp(names[k], b) == 0 ? k : j;
    }
    return !same(&r[i], &r[j], false);
}

static void test_readers(void)
{
    const char *php[] = {"/usr/bin/php-cgi", "-n", "-d", "display_errors=0",
                         NULL};
    const char *perl[] = {"/usr/bin/perl", NULL, NULL};
    const char *python[] = {"/usr/bin/python3", NULL, NULL};
    char pl[TEST_PATH_MAX], py[TEST_PATH_MAX];

    CU_ASSERT_FATAL(readers_init() == 0);
    snprintf(pl, sizeof(pl), "%s/dump.pl", dir);
    snprintf(py, sizeof(py), "%s/dump.py", dir);
    perl[1] = pl;
    python[1] = py;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        size_t len = strlen(cases[i].body);
        reading_t r[3], ours;
        bool ok = our_reading(cases[i].type, cases[i].body, len, &ours);
        bool lf = strstr(cases[i].body, "\r") == NULL;

        run_reader(php, "dump.php", cases[i].type, cases[i].body, len, &r[0]);
        run_reader(perl, "dump.pl", cases[i].type, cases[i].body, len, &r[1]);
        run_reader(python, "dump.py", cases[i].type, cases[i].body, len, &r[2]);
        drop_nameless(&r[1]);
        drop_nameless(&r[2]);
        if (cases[i].differ == NULL) {
            CU_ASSERT(ok);
            CU_ASSERT(same(&r[0], &ours, false));
            CU_ASSERT(same(&r[2], &ours, true));
            CU_ASSERT(lf ? r[1].n == 0 : perl_within(&r[1], &ours));
        } else {
            char a[8], b[8];

            CU_ASSERT(!ok);
            CU_ASSERT(sscanf(cases[i].differ, "%7[a-z]-%7[a-z]", a, b) == 2);
            CU_ASSERT(differ(r, a, b));
        }
        if (!ok != (cases[i].differ != NULL) ||
            (ok && (!same(&r[0], &ours, false) || !same(&r[2], &ours, true)))) {
            fprintf(stderr, "\n  case %zu: ours %s (%zu lines)\n", i,
                    ok ? "read" : "refused", ours.n);
            for (size_t k = 0; k < 3; k++) {
                for (size_t m = 0; m < r[k].n; m++) {
                    fprintf(stderr, "    %zu: %s\n", k, r[k].line[m]);
                }
            }
        }
    }
    readers_clean();
}

/* Adds the tests against real readers to the multipart suite s. */
int multipart_add_reader_tests(CU_pSuite s)
{
    return CU_add_test(s, "PHP, CGI.pm and Python read alike", test_readers) !=
                   NULL
               ? 0
               : -1;
}
