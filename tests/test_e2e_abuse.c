/*
 * test_e2e_abuse.c - the "abuse" suite (placeholder).
 */
#include <CUnit/CUnit.h>

#include "e2e.h"
#include "suites.h"

/* Registers the "abuse" suite. */
int register_abuse_suite(void)
{
    CU_pSuite s = CU_add_suite_with_setup_and_teardown("abuse", NULL, NULL,
                                                       e2e_setup, e2e_teardown);

    return s == NULL ? -1 : 0;
}
