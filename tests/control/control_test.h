/*
 * control_test.h - what the files of the "control" suite share: each adds
 * its tests to the suite.
 */
#ifndef SUSPECT_TESTS_CONTROL_TEST_H
#define SUSPECT_TESTS_CONTROL_TEST_H

#include <CUnit/CUnit.h>

/* The codec, from byte arrays (test_control_proto.c). */
int control_add_proto_tests(CU_pSuite s);

/* The server: peers, bounds, timeouts (test_control.c). */
int control_add_server_tests(CU_pSuite s);

#endif
