// SPDX-License-Identifier: MIT
/* NOP and COPY round trips. */
#include <errno.h>
#include <string.h>

#include "t.h"

#define BUF_SIZE	(2u << 20)

static void t_nop_round_trip(void)
{
	struct syshax *sh = t_open();
	struct syshax_completion c;
	struct syshax_job job;

	if (!sh)
		return;
	syshax_job_init(&job, SYSHAX_OP_NOP, 0xfeedf00dcafeULL);
	CU_ASSERT_EQUAL(syshax_submit(sh, &job, 1), 1);
	memset(&c, 0xa5, sizeof(c));
	CU_ASSERT_EQUAL_FATAL(syshax_wait(sh, &c, 1, 1, 5 * T_SEC), 1);
	CU_ASSERT_EQUAL(c.user_data, 0xfeedf00dcafeULL);
	CU_ASSERT_EQUAL(c.status, 0);
	CU_ASSERT_EQUAL(c.flags, 0);
	CU_ASSERT_EQUAL(c.result, 0);
	/* Exactly one completion. */
	CU_ASSERT_EQUAL(syshax_wait(sh, &c, 1, 1, 50 * T_MS), -ETIMEDOUT);
	syshax_close(sh);
}

static void t_nop_batch(void)
{
	enum { N = 64 };
	struct syshax *sh = t_open();
	struct syshax_job jobs[N];
	unsigned char seen[N] = { 0 };
	struct t_tally tally = { 0 };
	int i;

	if (!sh)
		return;
	for (i = 0; i < N; i++)
		syshax_job_init(&jobs[i], SYSHAX_OP_NOP, 1000 + i);
	CU_ASSERT_EQUAL(syshax_submit(sh, jobs, N), N);
	CU_ASSERT_EQUAL(t_reap(sh, 1000, N, seen, N, 10 * T_SEC, &tally), N);
	CU_ASSERT_EQUAL(tally.ok, N);
	for (i = 0; i < N; i++)
		CU_ASSERT_EQUAL(seen[i], 1);
	syshax_close(sh);
}

static void t_copy(void)
{
	const uint64_t soff = 4096 + 5, doff = 8192 + 3, len = 100000;
	struct syshax *sh = t_open();
	struct syshax_buffer src, dst;
	struct syshax_completion c;
	struct syshax_job job;
	unsigned char *s, *d;
	uint64_t i;

	if (!sh)
		return;
	CU_ASSERT_EQUAL_FATAL(syshax_buf_alloc(sh, BUF_SIZE, -1,
					       SYSHAX_BUF_ALLOW_SMALL, &src), 0);
	CU_ASSERT_EQUAL_FATAL(syshax_buf_alloc(sh, BUF_SIZE, -1,
					       SYSHAX_BUF_ALLOW_SMALL, &dst), 0);
	CU_ASSERT_EQUAL_FATAL(syshax_buf_map(sh, &src), 0);
	CU_ASSERT_EQUAL_FATAL(syshax_buf_map(sh, &dst), 0);
	s = src.addr;
	d = dst.addr;
	for (i = 0; i < BUF_SIZE; i++) {
		s[i] = (unsigned char)(i * 7 + 3);
		/* New buffers are zeroed. */
		if (d[i])
			break;
	}
	CU_ASSERT_EQUAL(i, BUF_SIZE);

	CU_ASSERT_EQUAL(syshax_job_copy(&job, &src, soff, &dst, doff, len, 77),
			0);
	CU_ASSERT_EQUAL(syshax_submit(sh, &job, 1), 1);
	CU_ASSERT_EQUAL_FATAL(syshax_wait(sh, &c, 1, 1, 5 * T_SEC), 1);
	CU_ASSERT_EQUAL(c.user_data, 77);
	CU_ASSERT_EQUAL(c.status, 0);
	CU_ASSERT_EQUAL(c.result, len);
	/* The engine moved the bytes through the shared pages. */
	CU_ASSERT_EQUAL(memcmp(d + doff, s + soff, len), 0);
	CU_ASSERT_EQUAL(d[doff - 1], 0);
	CU_ASSERT_EQUAL(d[doff + len], 0);

	/* Unequal lengths copy the shorter one: the result says how much. */
	syshax_job_init(&job, SYSHAX_OP_COPY, 78);
	CU_ASSERT_EQUAL(syshax_job_add_ref(&job, &src, 0, 4096,
					   SYSHAX_ACCESS_READ), 0);
	CU_ASSERT_EQUAL(syshax_job_add_ref(&job, &dst, BUF_SIZE - 1000, 1000,
					   SYSHAX_ACCESS_WRITE), 0);
	CU_ASSERT_EQUAL(syshax_submit(sh, &job, 1), 1);
	CU_ASSERT_EQUAL_FATAL(syshax_wait(sh, &c, 1, 1, 5 * T_SEC), 1);
	CU_ASSERT_EQUAL(c.user_data, 78);
	CU_ASSERT_EQUAL(c.status, 0);
	CU_ASSERT_EQUAL(c.result, 1000);
	CU_ASSERT_EQUAL(memcmp(d + BUF_SIZE - 1000, s, 1000), 0);

	CU_ASSERT_EQUAL(syshax_buf_free(sh, &src), 0);
	CU_ASSERT_EQUAL(syshax_buf_free(sh, &dst), 0);
	syshax_close(sh);
}

int t_add_basic(void)
{
	CU_pSuite s = CU_add_suite("round trip", NULL, NULL);

	if (!s || !CU_add_test(s, "NOP round trip", t_nop_round_trip) ||
	    !CU_add_test(s, "64 NOPs in one submit", t_nop_batch) ||
	    !CU_add_test(s, "COPY between two buffers", t_copy))
		return -1;
	return 0;
}
