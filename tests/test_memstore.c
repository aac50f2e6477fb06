#include <CUnit/CUnit.h>

#include "suites.h"

int register_memstore_suite(void)
{
    return CU_add_suite("memstore", NULL, NULL) == NULL ? -1 : 0;
}
