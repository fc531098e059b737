// SPDX-License-Identifier: MIT
/* broker/cpl_check.h: completion validation, latency buckets, counters. */
#include <errno.h>
#include <string.h>
#include <CUnit/Basic.h>

#include "../t_cunit.h"

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

static void t_job_stats(void)
{
	struct syshax_job_stats s = { .engines = 2, .submitted = 5,
				      .fetched = 4, .cancelled = 1,
				      .queued = 1, .held = 3 };
	struct syshax_stats_args st;

	syshax_job_stats_end(&s, 0, 1500);
	syshax_job_stats_end(&s, -EIO, 1ULL << 40);
	memset(&st, 0xff, sizeof(st));
	syshax_job_stats_fill(&st, &s);
	CU_ASSERT_EQUAL(st.engines, 2);
	CU_ASSERT_EQUAL(st.jobs_submitted, 5);
	CU_ASSERT_EQUAL(st.jobs_fetched, 4);
	CU_ASSERT_EQUAL(st.jobs_completed, 1);
	CU_ASSERT_EQUAL(st.jobs_failed, 1);
	CU_ASSERT_EQUAL(st.jobs_cancelled, 1);
	CU_ASSERT_EQUAL(st.queue_depth, 1);
	CU_ASSERT_EQUAL(st.inflight, 1);
	for (unsigned int i = 0; i < SYSHAX_LAT_BUCKETS; i++)
		CU_ASSERT_EQUAL(st.lat_hist[i],
				i == 1 || i == SYSHAX_LAT_BUCKETS - 1);
}

int main(void)
{
	static const struct t_test tests[] = {
		{ "status and flags", t_cpl_check },
		{ "latency buckets", t_lat_bucket },
		{ "job counters", t_job_stats },
	};

	return T_RUN_SUITE("completion rules", NULL, NULL, tests);
}
