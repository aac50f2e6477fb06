#include <CUnit/CUnit.h>

#include "suites.h"

int register_keys_suite(void)
{
    return CU_add_suite("keys", NULL, NULL) == NULL ? -1 : 0;
}
