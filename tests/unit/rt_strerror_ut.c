// SPDX-License-Identifier: MIT
/* syshax_strerror(): sysHAX meanings, libc's for the rest, any sign. */
#include <errno.h>
#include <string.h>
#include <CUnit/Basic.h>

#include "syshax/rt.h"

static void t_syshax_meanings(void)
{
	CU_ASSERT_STRING_EQUAL(syshax_strerror(-EAGAIN),
			       "Job queue full: reap completions and retry");
	CU_ASSERT_STRING_EQUAL(syshax_strerror(-EPIPE),
			       "Engine went away while running the job");
	CU_ASSERT_STRING_EQUAL(syshax_strerror(-EBADF), "Unknown buffer handle");
}

static void t_sign(void)
{
	CU_ASSERT_PTR_EQUAL(syshax_strerror(-ERANGE), syshax_strerror(ERANGE));
	CU_ASSERT_PTR_EQUAL(syshax_strerror(-ENOMEM), syshax_strerror(ENOMEM));
}

static void t_libc_and_unknown(void)
{
	CU_ASSERT_STRING_EQUAL(syshax_strerror(-ENOMEM),
			       "Cannot allocate memory");
	CU_ASSERT_PTR_NOT_NULL(syshax_strerror(-99999));
	CU_ASSERT_STRING_EQUAL(syshax_strerror(-99999), "Unknown error");
}

int main(void)
{
	CU_pSuite s;
	unsigned int fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("strerror", NULL, NULL);
	CU_add_test(s, "sysHAX meanings", t_syshax_meanings);
	CU_add_test(s, "negative and positive alike", t_sign);
	CU_add_test(s, "libc text, unknown errors", t_libc_and_unknown);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return fails ? 1 : 0;
}
