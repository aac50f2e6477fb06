#include <CUnit/CUnit.h>

#include "suites.h"

int register_threads_suite(void)
{
    return CU_add_suite("threads", NULL, NULL) == NULL ? -1 : 0;
}
