// SPDX-License-Identifier: MIT
/* syshaxd's op execution (daemon/exec.c): NOP, COPY, bounds, unknown ops. */
#include <errno.h>
#include <string.h>
#include <CUnit/Basic.h>

#include "../t_cunit.h"

#include "exec.h"
#include "syshax_ops.h"

#define SZ	8192

static unsigned char g_a[SZ], g_b[SZ];
static const struct shxd_mapping g_ma = { 1, g_a, SZ }, g_mb = { 2, g_b, SZ };

static void copy_job(struct syshax_job *job, uint64_t soff, uint64_t slen,
		     uint64_t doff, uint64_t dlen)
{
	memset(job, 0, sizeof(*job));
	job->op = SYSHAX_OP_COPY;
	job->nr_refs = 2;
	job->refs[0] = (struct syshax_buf_ref){ 1, SYSHAX_ACCESS_READ, 0,
						soff, slen };
	job->refs[1] = (struct syshax_buf_ref){ 2, SYSHAX_ACCESS_WRITE, 0,
						doff, dlen };
}

static void t_nop(void)
{
	struct syshax_job job = { .op = SYSHAX_OP_NOP };
	__u64 result = 99;

	CU_ASSERT_EQUAL(shxd_exec(&job, NULL, &result), 0);
	CU_ASSERT_EQUAL(result, 0);
}

static void t_copy(void)
{
	const struct shxd_mapping *maps[2] = { &g_ma, &g_mb };
	struct syshax_job job;
	__u64 result;
	int i;

	for (i = 0; i < SZ; i++) {
		g_a[i] = (unsigned char)(i * 13 + 1);
		g_b[i] = 0;
	}
	copy_job(&job, 100, 1000, 5000, 3000);
	CU_ASSERT_EQUAL(shxd_exec(&job, maps, &result), 0);
	/* The shorter ref decides. */
	CU_ASSERT_EQUAL(result, 1000);
	CU_ASSERT_EQUAL(memcmp(g_b + 5000, g_a + 100, 1000), 0);
	CU_ASSERT_EQUAL(g_b[4999], 0);
	CU_ASSERT_EQUAL(g_b[6000], 0);

	/* Overlapping refs into one buffer. */
	maps[1] = &g_ma;
	memcpy(g_b, g_a, SZ);
	copy_job(&job, 0, 4096, 10, 4096);
	CU_ASSERT_EQUAL(shxd_exec(&job, maps, &result), 0);
	CU_ASSERT_EQUAL(result, 4096);
	CU_ASSERT_EQUAL(memcmp(g_a + 10, g_b, 4096), 0);
}

static void t_bounds(void)
{
	const struct shxd_mapping *maps[2] = { &g_ma, &g_mb };
	struct syshax_job job;
	__u64 result;

	copy_job(&job, SZ - 10, 11, 0, 11);
	CU_ASSERT_EQUAL(shxd_exec(&job, maps, &result), -ERANGE);
	copy_job(&job, 0, 16, SZ + 1, 16);
	CU_ASSERT_EQUAL(shxd_exec(&job, maps, &result), -ERANGE);
	copy_job(&job, UINT64_MAX - 3, 8, 0, 8);
	CU_ASSERT_EQUAL(shxd_exec(&job, maps, &result), -ERANGE);
	copy_job(&job, 0, SZ, 0, SZ);
	CU_ASSERT_EQUAL(shxd_exec(&job, maps, &result), 0);
	CU_ASSERT_EQUAL(result, SZ);
	job.nr_refs = 1;
	CU_ASSERT_EQUAL(shxd_exec(&job, maps, &result), -EINVAL);
}

static void t_unknown(void)
{
	struct syshax_job job = { .op = SYSHAX_OP_GEMM };
	__u64 result;

	CU_ASSERT_EQUAL(shxd_exec(&job, NULL, &result), -EOPNOTSUPP);
	job.op = 12345;
	CU_ASSERT_EQUAL(shxd_exec(&job, NULL, &result), -EOPNOTSUPP);
}

int main(void)
{
	static const struct t_test tests[] = {
		{ "NOP", t_nop },
		{ "COPY", t_copy },
		{ "COPY outside the mapping", t_bounds },
		{ "ops not implemented", t_unknown },
	};

	return T_RUN_SUITE("shxd_exec", NULL, NULL, tests);
}
