/*
 * test_conf.h - what the files of the "conf" suite share: small parse
 * helpers, and the functions that add each file's tests to the suite.
 */
#ifndef SUSPECT_TESTS_TEST_CONF_H
#define SUSPECT_TESTS_TEST_CONF_H

#include <CUnit/CUnit.h>
#include <stddef.h>

#include "clock.h"
#include "conf/suspect_conf.h"

/* The elements every valid file needs in forward mode. */
#define BASE "<Limits path='l.xml'/><Cgi root='/cgi'/>"

/* Parses a C string as "t.xml" in dir "/etc/suspect"; returns the code
 * and the formatted error in msg. */
suspect_rc_t conf_test_parse(const char *doc, const suspect_conf_t **out,
                             char *msg, size_t size);

/* Parses "<Suspect>" body "</Suspect>"; NULL (and a message on stderr)
 * when it fails. */
const suspect_conf_t *conf_test_body(const char *body);

/* Room for a conf_test_fail() message. */
#define CONF_TEST_MSG_MAX 512

/* The message of a body that must fail ("" when it loaded), written into
 * msg (the caller's). */
const char *conf_test_fail(char msg[CONF_TEST_MSG_MAX], const char *body);

/* True when s ends with tail. */
int conf_test_ends_with(const char *s, const char *tail);

/* Add the tests of test_conf_values.c and test_conf_files.c to s;
 * 0, or -1 when CUnit refused. */
int conf_add_value_tests(CU_pSuite s);
int conf_add_file_tests(CU_pSuite s);

#endif
