// SPDX-License-Identifier: MIT
/* broker/cpl_check.h: completion validation and latency buckets. */
#include <errno.h>
#include <CUnit/Basic.h>

#include "cpl_check.h"

static void t_cpl_check(void)
{
	struct syshax_engine_cpl c = { .status = 0 };

	CU_ASSERT_EQUAL(syshax_cpl_check(&c), 0);
	c.status = -EPIPE;
	c.flags = SYSHAX_CPL_DEFERRED;
	CU_ASSERT_EQUAL(syshax_cpl_check(&c), 0);
	c.status = -SYSHAX_CPL_MAX_ERRNO;
	CU_ASSERT_EQUAL(syshax_cpl_check(&c), 0);
	c.status = -SYSHAX_CPL_MAX_ERRNO - 1;
	CU_ASSERT_EQUAL(syshax_cpl_check(&c), -EINVAL);
	c.status = 1;
	CU_ASSERT_EQUAL(syshax_cpl_check(&c), -EINVAL);
	c.status = 0;
	c.flags = 1U << 1;
	CU_ASSERT_EQUAL(syshax_cpl_check(&c), -EINVAL);
}

static void t_lat_bucket(void)
{
	CU_ASSERT_EQUAL(syshax_lat_bucket(0), 0);
	CU_ASSERT_EQUAL(syshax_lat_bucket(1023), 0);
	CU_ASSERT_EQUAL(syshax_lat_bucket(1024), 1);
	CU_ASSERT_EQUAL(syshax_lat_bucket(2047), 1);
	CU_ASSERT_EQUAL(syshax_lat_bucket(2048), 2);
	/* Bucket 22 ends at 2^32 ns; all longer ones share the last. */
	CU_ASSERT_EQUAL(syshax_lat_bucket((1ULL << 32) - 1), 22);
	CU_ASSERT_EQUAL(syshax_lat_bucket(1ULL << 32), SYSHAX_LAT_BUCKETS - 1);
	CU_ASSERT_EQUAL(syshax_lat_bucket(~0ULL), SYSHAX_LAT_BUCKETS - 1);
}

int main(void)
{
	CU_pSuite s;
	unsigned int fails;

	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("completion rules", NULL, NULL);
	CU_add_test(s, "status and flags", t_cpl_check);
	CU_add_test(s, "latency buckets", t_lat_bucket);
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	fails = CU_get_number_of_failures();
	CU_cleanup_registry();
	return fails ? 1 : 0;
}
