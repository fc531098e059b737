// SPDX-License-Identifier: MIT
/* libsyshax-rt job builders: what they write, checked against the shared
 * validation the brokers run. */
#include <errno.h>
#include <string.h>
#include <CUnit/Basic.h>

#include "../t_cunit.h"

#include "job_check.h"
#include "syshax/rt.h"

static struct syshax_buffer g_src = { .handle = 3, .size = 1 << 20 };
static struct syshax_buffer g_dst = { .handle = 5, .size = 1 << 20 };

/* Handles 3 and 5 exist, 1 MiB each, read-write. */
static int t_lookup(void *priv, __u64 handle, __u64 *size, __u32 *access)
{
	(void)priv;
	if (handle != 3 && handle != 5)
		return -EBADF;
	*size = 1 << 20;
	*access = SYSHAX_ACCESS_RW;
	return 0;
}

static void t_init_zeroes(void)
{
	struct syshax_job job;

	memset(&job, 0xa5, sizeof(job));
	syshax_job_init(&job, SYSHAX_OP_NOP, 0x1234);
	CU_ASSERT_EQUAL(job.op, SYSHAX_OP_NOP);
	CU_ASSERT_EQUAL(job.user_data, 0x1234);
	CU_ASSERT_EQUAL(job.flags, 0);
	CU_ASSERT_EQUAL(job.nr_refs, 0);
	CU_ASSERT_EQUAL(job.pad, 0);
	CU_ASSERT_EQUAL(job.reserved, 0);
	CU_ASSERT_EQUAL(job.refs[7].length, 0);
	CU_ASSERT_EQUAL(job.params[SYSHAX_JOB_PARAMS_SIZE - 1], 0);
	CU_ASSERT_EQUAL(syshax_job_check(&job, t_lookup, NULL), 0);
}

static void t_add_ref(void)
{
	struct syshax_job job;
	unsigned int i;

	syshax_job_init(&job, SYSHAX_OP_GEMM, 1);
	CU_ASSERT_EQUAL(syshax_job_add_ref(&job, &g_src, 4096, 512,
					   SYSHAX_ACCESS_READ), 0);
	CU_ASSERT_EQUAL(job.nr_refs, 1);
	CU_ASSERT_EQUAL(job.refs[0].buf, 3);
	CU_ASSERT_EQUAL(job.refs[0].offset, 4096);
	CU_ASSERT_EQUAL(job.refs[0].length, 512);
	CU_ASSERT_EQUAL(job.refs[0].access, SYSHAX_ACCESS_READ);
	for (i = 1; i < SYSHAX_JOB_MAX_REFS; i++)
		CU_ASSERT_EQUAL(syshax_job_add_ref(&job, &g_dst, 0, 8,
						   SYSHAX_ACCESS_RW), 0);
	CU_ASSERT_EQUAL(syshax_job_add_ref(&job, &g_dst, 0, 8,
					   SYSHAX_ACCESS_RW), -E2BIG);
	CU_ASSERT_EQUAL(job.nr_refs, SYSHAX_JOB_MAX_REFS);
	CU_ASSERT_EQUAL(syshax_job_check(&job, t_lookup, NULL), 0);
}

static void t_copy(void)
{
	struct syshax_job job;

	CU_ASSERT_EQUAL(syshax_job_copy(&job, &g_src, 100, &g_dst, 200, 300,
					77), 0);
	CU_ASSERT_EQUAL(job.op, SYSHAX_OP_COPY);
	CU_ASSERT_EQUAL(job.user_data, 77);
	CU_ASSERT_EQUAL(job.nr_refs, 2);
	CU_ASSERT_EQUAL(job.refs[0].buf, 3);
	CU_ASSERT_EQUAL(job.refs[0].offset, 100);
	CU_ASSERT_EQUAL(job.refs[0].access, SYSHAX_ACCESS_READ);
	CU_ASSERT_EQUAL(job.refs[1].buf, 5);
	CU_ASSERT_EQUAL(job.refs[1].offset, 200);
	CU_ASSERT_EQUAL(job.refs[1].length, 300);
	CU_ASSERT_EQUAL(job.refs[1].access, SYSHAX_ACCESS_WRITE);
	CU_ASSERT_EQUAL(syshax_job_check(&job, t_lookup, NULL), 0);
	/* A copy past the end is built as asked and refused by the check. */
	syshax_job_copy(&job, &g_src, (1 << 20) - 10, &g_dst, 0, 20, 78);
	CU_ASSERT_EQUAL(syshax_job_check(&job, t_lookup, NULL), -ERANGE);
}

/* NULL pointers: -EINVAL and the job untouched; init of NULL does nothing. */
static void t_null_args(void)
{
	struct syshax_job job;
	uint32_t p = 7;

	syshax_job_init(NULL, SYSHAX_OP_NOP, 1);
	syshax_job_init(&job, SYSHAX_OP_NOP, 1);
	CU_ASSERT_EQUAL(syshax_job_add_ref(NULL, &g_src, 0, 1,
					   SYSHAX_ACCESS_READ), -EINVAL);
	CU_ASSERT_EQUAL(syshax_job_add_ref(&job, NULL, 0, 1,
					   SYSHAX_ACCESS_READ), -EINVAL);
	CU_ASSERT_EQUAL(job.nr_refs, 0);
	CU_ASSERT_EQUAL(syshax_job_copy(NULL, &g_src, 0, &g_dst, 0, 1, 2),
			-EINVAL);
	CU_ASSERT_EQUAL(syshax_job_copy(&job, NULL, 0, &g_dst, 0, 1, 2),
			-EINVAL);
	CU_ASSERT_EQUAL(syshax_job_copy(&job, &g_src, 0, NULL, 0, 1, 2),
			-EINVAL);
	CU_ASSERT_EQUAL(job.op, SYSHAX_OP_NOP);
	CU_ASSERT_EQUAL(job.nr_refs, 0);
	CU_ASSERT_EQUAL(syshax_job_params(NULL, &p, sizeof(p)), -EINVAL);
	CU_ASSERT_EQUAL(syshax_job_params(&job, NULL, sizeof(p)), -EINVAL);
	/* No params at all is fine: they are zeroed. */
	CU_ASSERT_EQUAL(syshax_job_params(&job, &p, sizeof(p)), 0);
	CU_ASSERT_EQUAL(syshax_job_params(&job, NULL, 0), 0);
	CU_ASSERT_EQUAL(job.params[0], 0);
}

int main(void)
{
	static const struct t_test tests[] = {
		{ "init zeroes the job", t_init_zeroes },
		{ "add_ref fills refs, -E2BIG when full", t_add_ref },
		{ "copy builds a valid COPY", t_copy },
		{ "NULL arguments: -EINVAL", t_null_args },
	};

	return T_RUN_SUITE("job builders", NULL, NULL, tests);
}
