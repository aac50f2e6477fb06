/*
 * request_test.h - what the files of the "request" suite share
 * (test_lookup.c: lookups; test_request_names.c: parameter names as PHP
 * files them; test_addr.c: addresses): the outcome
 * markers of the tables, the suite's init and the address tests'
 * registration.
 */
#ifndef SUSPECT_TESTS_REQUEST_TEST_H
#define SUSPECT_TESTS_REQUEST_TEST_H

#include <CUnit/CUnit.h>

#define NOTFOUND "<notfound>"
#define FULL     "<full>"
#define INVAL    "<inval>"

/* Room for a looked-up value or an address identity, as text. */
#define TEXT_MAX 4200

/* The suite's init: parses the trusted proxies of the address tests. */
int request_addr_init(void);

/* Adds the address tests to suite s; 0 or -1. */
int request_register_addr(CU_pSuite s);

/* Adds the address set tests (test_addrset.c) to s; 0 or -1. */
int request_register_addrset(CU_pSuite s);

/* Adds the PHP parameter name tests (test_request_names.c) to s; 0 or
 * -1. */
int request_register_names(CU_pSuite s);

/* Adds the tests of the multipart reader against PHP, CGI.pm and Python
 * (test_multipart_readers.c) to s; 0 or -1. */
int multipart_add_reader_tests(CU_pSuite s);

#endif
