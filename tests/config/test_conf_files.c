/*
 * test_conf_files.c - suite "conf": what touches files.  Relative paths
 * resolved against the file's directory whatever the current one, the
 * response template (cap, missing, empty, not regular, huge and unread),
 * DTDs and entities refused before a declaration is read (inotify proves
 * the external file is never opened), and the size cap checked before
 * reading.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "conf/suspect_conf.h"
#include "dtd_test.h"
#include "test_conf.h"
#include "helpers/util.h"
#include "helpers/vgwrap.h"

/* Relative paths resolve against the file's directory, made absolute
 * whatever the current directory; absolute ones are kept. */
static void test_relative_paths(void)
{
    static const char doc[] = "<Suspect><Limits path='rules/limits.xml'/>"
                              "<Store type='lmdb' path='../var/db.mdb'/>"
                              "<Cgi program='/usr/lib/cgi-bin//app.cgi'/>"
                              "<Response template='./t/429.html'/></Suspect>";
    char *dir = test_mkdtemp(), sub[4096], path[4200], want[4300], cwd[4096];
    const suspect_conf_t *c = NULL;
    suspect_err_t err;

    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    CU_ASSERT_PTR_NOT_NULL_FATAL(getcwd(cwd, sizeof(cwd)));
    snprintf(sub, sizeof(sub), "%s/etc", dir);
    CU_ASSERT_EQUAL_FATAL(mkdir(sub, 0700), 0);
    snprintf(path, sizeof(path), "%s/t", sub);
    CU_ASSERT_EQUAL_FATAL(mkdir(path, 0700), 0);
    snprintf(path, sizeof(path), "%s/t/429.html", sub);
    CU_ASSERT_EQUAL_FATAL(test_write_file(path, "<p>{action}</p>", 15), 0);
    snprintf(path, sizeof(path), "%s/suspect.xml", sub);
    CU_ASSERT_EQUAL_FATAL(test_write_file(path, doc, strlen(doc)), 0);

    /* By absolute path. */
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL_FATAL(suspect_conf_load(path, &c, &err), SUSPECT_OK);
    CU_ASSERT_STRING_EQUAL(c->dir, sub);
    snprintf(want, sizeof(want), "%s/rules/limits.xml", sub);
    CU_ASSERT_STRING_EQUAL(c->limits_path, want);
    snprintf(want, sizeof(want), "%s/../var/db.mdb", sub);
    CU_ASSERT_STRING_EQUAL(c->lmdb_path, want);
    CU_ASSERT_STRING_EQUAL(c->cgi_program, "/usr/lib/cgi-bin/app.cgi");
    CU_ASSERT_PTR_NULL(c->cgi_root);
    snprintf(want, sizeof(want), "%s/./t/429.html", sub);
    CU_ASSERT_STRING_EQUAL(c->template_path, want);
    CU_ASSERT_STRING_EQUAL(c->template_body, "<p>{action}</p>");
    suspect_conf_unref(c);

    /* By a path relative to the current directory, and by a bare name. */
    CU_ASSERT_EQUAL_FATAL(chdir(dir), 0);
    c = NULL;
    CU_ASSERT_EQUAL(suspect_conf_load("./etc//suspect.xml", &c, &err),
                    SUSPECT_OK);
    if (c != NULL) {
        CU_ASSERT_STRING_EQUAL(c->file, "./etc//suspect.xml");
        CU_ASSERT_STRING_EQUAL(c->dir, sub);
        snprintf(want, sizeof(want), "%s/rules/limits.xml", sub);
        CU_ASSERT_STRING_EQUAL(c->limits_path, want);
        suspect_conf_unref(c);
    }
    CU_ASSERT_EQUAL_FATAL(chdir(sub), 0);
    c = NULL;
    CU_ASSERT_EQUAL(suspect_conf_load("suspect.xml", &c, &err), SUSPECT_OK);
    if (c != NULL) {
        CU_ASSERT_STRING_EQUAL(c->dir, sub);
        suspect_conf_unref(c);
    }
    /* From memory: dir NULL is the current directory; relative is
     * joined to it. */
    c = NULL;
    CU_ASSERT_EQUAL(suspect_conf_parse(doc, strlen(doc), NULL, NULL, &c, &err),
                    SUSPECT_OK);
    if (c != NULL) {
        CU_ASSERT_STRING_EQUAL(c->file, "<memory>");
        CU_ASSERT_STRING_EQUAL(c->dir, sub);
        suspect_conf_unref(c);
    }
    CU_ASSERT_EQUAL_FATAL(chdir(dir), 0);
    c = NULL;
    CU_ASSERT_EQUAL(suspect_conf_parse(doc, strlen(doc), "m", "etc/", &c, &err),
                    SUSPECT_OK);
    if (c != NULL) {
        CU_ASSERT_STRING_EQUAL(c->dir, sub);
        suspect_conf_unref(c);
    }
    CU_ASSERT_EQUAL(chdir(cwd), 0);
    test_rmtree(dir);
    free(dir);
}

/* Writes a template of len bytes ('x') at dir/name. */
static void write_template(const char *dir, const char *name, size_t len)
{
    char path[4200], *data = malloc(len + 1);

    CU_ASSERT_PTR_NOT_NULL_FATAL(data);
    memset(data, 'x', len);
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    CU_ASSERT_EQUAL(test_write_file(path, data, len), 0);
    free(data);
}

/* Parses a Response template=name in dir; the message in msg. */
static suspect_rc_t load_template(const char *dir, const char *name,
                                  const suspect_conf_t **c, char *msg,
                                  size_t size)
{
    char doc[512];
    suspect_err_t err;
    suspect_rc_t rc;

    snprintf(doc, sizeof(doc),
             "<Suspect>\n" BASE "\n<Response template='%s'/></Suspect>", name);
    suspect_err_clear(&err);
    rc = suspect_conf_parse(doc, strlen(doc), "t.xml", dir, c, &err);
    msg[0] = '\0';
    if (rc != SUSPECT_OK) {
        suspect_err_format(&err, msg, size);
    }
    return rc;
}

/* The template is read with the snapshot, within its cap, or the load
 * fails naming suspect.xml's line and the template's path. */
static void test_template(void)
{
    char *dir = test_mkdtemp(), msg[8600], want[8600], path[4200];
    const suspect_conf_t *c = NULL;
    double t0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    write_template(dir, "max.html", SUSPECT_CONF_MAX_TEMPLATE);
    CU_ASSERT_EQUAL_FATAL(load_template(dir, "max.html", &c, msg, sizeof(msg)),
                          SUSPECT_OK);
    CU_ASSERT_EQUAL(c->template_len, SUSPECT_CONF_MAX_TEMPLATE);
    CU_ASSERT_EQUAL(strlen(c->template_body), SUSPECT_CONF_MAX_TEMPLATE);
    suspect_conf_unref(c);

    write_template(dir, "big.html", SUSPECT_CONF_MAX_TEMPLATE + 1);
    CU_ASSERT_EQUAL(load_template(dir, "big.html", &c, msg, sizeof(msg)),
                    SUSPECT_E_CONFIG);
    snprintf(want, sizeof(want),
             "t.xml:3: Response: template '%s/big.html': file is too large "
             "(65537 bytes, at most 65536)",
             dir);
    CU_ASSERT_STRING_EQUAL(msg, want);

    CU_ASSERT_EQUAL(load_template(dir, "none.html", &c, msg, sizeof(msg)),
                    SUSPECT_E_CONFIG);
    snprintf(want, sizeof(want),
             "t.xml:3: Response: template '%s/none.html': cannot open: No "
             "such file or directory",
             dir);
    CU_ASSERT_STRING_EQUAL(msg, want);

    write_template(dir, "empty.html", 0);
    CU_ASSERT_EQUAL(load_template(dir, "empty.html", &c, msg, sizeof(msg)),
                    SUSPECT_E_CONFIG);
    snprintf(want, sizeof(want),
             "t.xml:3: Response: template '%s/empty.html' is empty", dir);
    CU_ASSERT_STRING_EQUAL(msg, want);

    CU_ASSERT_EQUAL(load_template(dir, ".", &c, msg, sizeof(msg)),
                    SUSPECT_E_CONFIG);
    snprintf(want, sizeof(want),
             "t.xml:3: Response: template '%s/.': not a regular file", dir);
    CU_ASSERT_STRING_EQUAL(msg, want);

    /* A huge (sparse) template is refused by its size, unread. */
    snprintf(path, sizeof(path), "%s/huge.html", dir);
    CU_ASSERT_EQUAL_FATAL(test_write_file(path, "x", 1), 0);
    if (truncate(path, (off_t)8 << 30) == 0) {
        t0 = mono_ms();
        CU_ASSERT_EQUAL(load_template(dir, "huge.html", &c, msg, sizeof(msg)),
                        SUSPECT_E_CONFIG);
        CU_ASSERT(mono_ms() - t0 < test_scale_ms(100));
        CU_ASSERT(conf_test_ends_with(
            msg, "huge.html': file is too large (8589934592 "
                 "bytes, at most 65536)"));
    }
    test_rmtree(dir);
    free(dir);
}

/* 1 when doc is refused with "DTD not allowed" at line 2. */
static int dtd_refused(const char *doc)
{
    const suspect_conf_t *c = NULL;
    char msg[512];

    if (conf_test_parse(doc, &c, msg, sizeof(msg)) != SUSPECT_E_PARSE) {
        suspect_conf_unref(c);
        return 0;
    }
    return strcmp(msg, "t.xml:2: DTD not allowed") == 0;
}

/* DTDs are refused before a declaration is read: an external entity's
 * file is never opened (inotify), billion laughs fails at once. */
static void test_dtd_refused(void)
{
    static const char *const forms[][2] = {
        {"<?xml version='1.0'?>\n<!DOCTYPE r [ <!ENTITY xxe SYSTEM 'file://",
         "'> ]>\n<Suspect><Limits path='&xxe;'/></Suspect>"},
        {"<?xml version='1.0'?>\n<!DOCTYPE Suspect SYSTEM '", "'>\n<Suspect/>"},
        {"<?xml version='1.0'?>\n<!DOCTYPE r [ <!ENTITY % p SYSTEM '",
         "'> %p; ]>\n<Suspect/>"},
    };
    dtd_test_external(forms, sizeof(forms) / sizeof(forms[0]), dtd_refused);
    dtd_test_laughs("<Suspect><Limits path='&l30;'/></Suspect>\n", dtd_refused);
}

/* The size cap holds from memory and from a file, which is not read. */
static void test_size_cap(void)
{
    size_t len = SUSPECT_CONF_MAX_BYTES + 1;
    char *doc = malloc(len), *dir = test_mkdtemp(), path[4200], msg[512];
    const suspect_conf_t *c = NULL;
    suspect_err_t err;
    double t0;

    CU_ASSERT_PTR_NOT_NULL_FATAL(doc);
    CU_ASSERT_PTR_NOT_NULL_FATAL(dir);
    memset(doc, ' ', len);
    memcpy(doc, "<Suspect>", 9);
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(suspect_conf_parse(doc, len, "c.xml", "/", &c, &err),
                    SUSPECT_E_CONFIG);
    suspect_err_format(&err, msg, sizeof(msg));
    CU_ASSERT_STRING_EQUAL(msg, "c.xml: file is too large (1048577 bytes, at "
                                "most 1048576)");

    snprintf(path, sizeof(path), "%s/c.xml", dir);
    CU_ASSERT_EQUAL_FATAL(test_write_file(path, doc, len), 0);
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(suspect_conf_load(path, &c, &err), SUSPECT_E_CONFIG);
    CU_ASSERT_STRING_EQUAL(err.text, "file is too large (1048577 bytes, at "
                                     "most 1048576)");
    if (truncate(path, (off_t)8 << 30) == 0) {
        suspect_err_clear(&err);
        t0 = mono_ms();
        CU_ASSERT_EQUAL(suspect_conf_load(path, &c, &err), SUSPECT_E_CONFIG);
        CU_ASSERT(mono_ms() - t0 < test_scale_ms(100));
        CU_ASSERT_STRING_EQUAL(err.text, "file is too large (8589934592 "
                                         "bytes, at most 1048576)");
    }
    /* Not a file: refused without blocking (a FIFO would hang a read). */
    snprintf(path, sizeof(path), "%s/fifo.xml", dir);
    CU_ASSERT_EQUAL_FATAL(mkfifo(path, 0600), 0);
    suspect_err_clear(&err);
    CU_ASSERT_EQUAL(suspect_conf_load(path, &c, &err), SUSPECT_E_IO);
    CU_ASSERT_STRING_EQUAL(err.text, "not a regular file");
    snprintf(path, sizeof(path), "%s/none.xml", dir);
    CU_ASSERT_EQUAL(suspect_conf_load(path, &c, &err), SUSPECT_E_NOTFOUND);
    CU_ASSERT_PTR_NULL(c);
    test_rmtree(dir);
    free(dir);
    free(doc);
}

/* Adds this file's tests to the suite. */
int conf_add_file_tests(CU_pSuite s)
{
    static const struct {
        const char *name;
        CU_TestFunc fn;
    } tests[] = {
        {"relative paths", test_relative_paths},
        {"template", test_template},
        {"DTD refused unread", test_dtd_refused},
        {"size cap", test_size_cap},
    };

    for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) {
        if (CU_add_test(s, tests[i].name, tests[i].fn) == NULL) {
            return -1;
        }
    }
    return 0;
}
