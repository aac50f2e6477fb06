#include <CUnit/CUnit.h>

#include "suites.h"

int register_evaluate_suite(void)
{
    return CU_add_suite("evaluate", NULL, NULL) == NULL ? -1 : 0;
}
