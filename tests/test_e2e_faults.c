/*
 * test_e2e_faults.c - the "faults" suite (placeholder).
 */
#include <CUnit/CUnit.h>

#include "e2e.h"
#include "suites.h"

/* Registers the "faults" suite. */
int register_faults_suite(void)
{
    CU_pSuite s = CU_add_suite_with_setup_and_teardown("faults", NULL, NULL,
                                                       e2e_setup, e2e_teardown);

    return s == NULL ? -1 : 0;
}
