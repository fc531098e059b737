// SPDX-License-Identifier: MIT
/* Bad jobs: the documented errno, and nothing queued. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "t.h"

#define SZ	(2u << 20)
#define R	SYSHAX_ACCESS_READ
#define W	SYSHAX_ACCESS_WRITE

static struct syshax *g_sh, *g_other;
static struct syshax_buffer g_a, g_b;	/* the caller's */
static struct syshax_buffer g_f;	/* another context's */

static int badref_init(void)
{
	struct syshax_buffer extra[3];
	int i, ret;

	if (syshax_open(&g_sh, NULL) || syshax_open(&g_other, NULL))
		return -1;
	if (syshax_buf_alloc(g_sh, SZ, -1, SYSHAX_BUF_ALLOW_SMALL, &g_a) ||
	    syshax_buf_alloc(g_sh, SZ, -1, SYSHAX_BUF_ALLOW_SMALL, &g_b))
		return -1;
	/* A foreign buffer whose handle the caller does not also hold. */
	for (i = 0; i < 3; i++) {
		ret = syshax_buf_alloc(g_other, SZ, -1, SYSHAX_BUF_ALLOW_SMALL,
				       &extra[i]);
		if (ret)
			return -1;
		if (extra[i].handle != g_a.handle &&
		    extra[i].handle != g_b.handle) {
			g_f = extra[i];
			return 0;
		}
	}
	return -1;
}

static int badref_clean(void)
{
	/* Mappings outlive a close (they hold the buffer and, on the module,
	 * the context): free what was mapped first. */
	syshax_buf_free(g_sh, &g_a);
	syshax_buf_free(g_sh, &g_b);
	syshax_buf_free(g_other, &g_f);
	syshax_close(g_sh);
	syshax_close(g_other);
	return 0;
}

/* A valid COPY a -> b, for the cases to spoil. */
static void good_copy(struct syshax_job *job)
{
	syshax_job_init(job, SYSHAX_OP_COPY, 1);
	job->nr_refs = 2;
	t_set_ref(job, 0, g_a.handle, R, 0, 4096);
	t_set_ref(job, 1, g_b.handle, W, 0, 4096);
}

/* Submits job, expects err, and checks nothing was queued. */
static void expect(const struct syshax_job *job, int err, const char *what)
{
	struct syshax_stats_args before, after;
	int ret;

	CU_ASSERT_EQUAL_FATAL(t_stats(&before), 0);
	ret = syshax_submit(g_sh, job, 1);
	if (ret != err)
		fprintf(stderr, "\n  %s: got %d, want %d\n", what, ret, err);
	CU_ASSERT_EQUAL(ret, err);
	CU_ASSERT_EQUAL_FATAL(t_stats(&after), 0);
	CU_ASSERT_EQUAL(after.jobs_submitted, before.jobs_submitted);
}

/* After a case list: no completion ever comes for them. */
static void expect_no_completion(void)
{
	struct syshax_completion c;

	CU_ASSERT_EQUAL(syshax_wait(g_sh, &c, 1, 1, 200 * T_MS), -ETIMEDOUT);
	CU_ASSERT_EQUAL(t_stats_until(t_no_jobs, NULL, 0), 0);
}

static void t_good_is_good(void)
{
	struct syshax_completion c;
	struct syshax_job job;

	good_copy(&job);
	/* The last byte of the buffer is in range. */
	job.refs[1].offset = SZ - 4096;
	CU_ASSERT_EQUAL(syshax_submit(g_sh, &job, 1), 1);
	CU_ASSERT_EQUAL_FATAL(syshax_wait(g_sh, &c, 1, 1, 5 * T_SEC), 1);
	CU_ASSERT_EQUAL(c.status, 0);
	CU_ASSERT_EQUAL(c.result, 4096);
}

static void t_foreign(void)
{
	struct syshax_buffer gone;
	struct syshax_job job;

	good_copy(&job);
	job.refs[0].buf = g_f.handle;
	expect(&job, -EBADF, "another context's handle");
	good_copy(&job);
	job.refs[1].buf = g_f.handle;
	expect(&job, -EBADF, "another context's handle (dst)");
	if (g_f.id != g_a.handle && g_f.id != g_b.handle) {
		good_copy(&job);
		job.refs[0].buf = g_f.id;
		expect(&job, -EBADF, "another context's global id");
	}
	good_copy(&job);
	job.refs[0].buf = 0xffffffffULL;
	expect(&job, -EBADF, "a handle never given");
	good_copy(&job);
	job.refs[0].buf = 1ULL << 40;
	expect(&job, -EBADF, "a handle beyond 32 bits");

	CU_ASSERT_EQUAL_FATAL(syshax_buf_alloc(g_sh, SZ, -1,
					       SYSHAX_BUF_ALLOW_SMALL, &gone), 0);
	CU_ASSERT_EQUAL_FATAL(syshax_buf_free(g_sh, &gone), 0);
	good_copy(&job);
	job.refs[0].buf = gone.handle;
	expect(&job, -EBADF, "a freed handle");
	expect_no_completion();
}

static void t_range(void)
{
	struct syshax_job job;

	good_copy(&job);
	job.refs[0].offset = UINT64_MAX - 15;
	job.refs[0].length = 32;
	expect(&job, -ERANGE, "offset + length overflows");
	good_copy(&job);
	job.refs[0].offset = 16;
	job.refs[0].length = UINT64_MAX;
	expect(&job, -ERANGE, "length overflows");
	good_copy(&job);
	job.refs[0].length = SZ + 1;
	expect(&job, -ERANGE, "length past the end");
	good_copy(&job);
	job.refs[1].offset = SZ - 10;
	job.refs[1].length = 11;
	expect(&job, -ERANGE, "one byte past the end");
	good_copy(&job);
	job.refs[1].offset = SZ;
	job.refs[1].length = 1;
	expect(&job, -ERANGE, "offset at the end");
	expect_no_completion();
}

static void t_access(void)
{
	struct syshax_job job;

	good_copy(&job);
	job.refs[1].access = R;
	expect(&job, -EACCES, "write through a read-only ref");
	good_copy(&job);
	job.refs[0].access = W;
	expect(&job, -EACCES, "read through a write-only ref");
	good_copy(&job);
	job.refs[0].access = 0;
	expect(&job, -EINVAL, "access 0");
	good_copy(&job);
	job.refs[0].access = 1u << 2;
	expect(&job, -EINVAL, "unknown access bit");
	good_copy(&job);
	job.refs[0].length = 0;
	expect(&job, -EINVAL, "length 0");
	expect_no_completion();
}

static void t_refs_count(void)
{
	struct syshax_job job;
	unsigned int i;

	syshax_job_init(&job, SYSHAX_OP_NOP, 1);
	job.nr_refs = 1;
	t_set_ref(&job, 0, g_a.handle, R, 0, 64);
	expect(&job, -EINVAL, "NOP with a ref");
	good_copy(&job);
	job.nr_refs = 3;
	t_set_ref(&job, 2, g_a.handle, R, 0, 64);
	expect(&job, -EINVAL, "COPY with 3 refs");
	good_copy(&job);
	job.nr_refs = 1;
	job.refs[1] = (struct syshax_buf_ref){ 0 };
	expect(&job, -EINVAL, "COPY with 1 ref");
	syshax_job_init(&job, SYSHAX_OP_GEMM, 1);
	for (i = 0; i < SYSHAX_JOB_MAX_REFS; i++)
		t_set_ref(&job, i, g_a.handle, R, 0, 64);
	job.nr_refs = SYSHAX_JOB_MAX_REFS + 1;
	expect(&job, -EINVAL, "more refs than SYSHAX_JOB_MAX_REFS");
	job.nr_refs = 0xffffffffu;
	expect(&job, -EINVAL, "nr_refs 2^32-1");
	expect_no_completion();
}

static void t_op_and_reserved(void)
{
	static const uint32_t bad_ops[] = { SYSHAX_OP_MAX, 2, 15, 0xffffffffu };
	struct syshax_job job;
	unsigned int i;

	for (i = 0; i < sizeof(bad_ops) / sizeof(bad_ops[0]); i++) {
		syshax_job_init(&job, bad_ops[i], 1);
		expect(&job, -EINVAL, "unknown op");
	}
	syshax_job_init(&job, SYSHAX_OP_NOP, 1);
	job.flags = 1u << 7;
	expect(&job, -EINVAL, "unknown job flag");
	syshax_job_init(&job, SYSHAX_OP_NOP, 1);
	job.pad = 1;
	expect(&job, -EINVAL, "job pad");
	syshax_job_init(&job, SYSHAX_OP_NOP, 1);
	job.reserved = 1;
	expect(&job, -EINVAL, "job reserved");
	good_copy(&job);
	job.refs[0].pad = 1;
	expect(&job, -EINVAL, "ref pad");
	good_copy(&job);
	job.refs[5].offset = 1;
	expect(&job, -EINVAL, "unused ref not zero");
	syshax_job_init(&job, SYSHAX_OP_NOP, 1);
	job.refs[SYSHAX_JOB_MAX_REFS - 1].buf = g_a.handle;
	expect(&job, -EINVAL, "unused ref of a NOP not zero");
	expect_no_completion();
}

/* The one way to name another context's buffer: import an fd it exported. */
static void t_imported(void)
{
	struct syshax_buffer imp;
	struct syshax_completion c;
	struct syshax_job job;
	unsigned char *f, *b;
	int fd;

	CU_ASSERT_EQUAL_FATAL(syshax_buf_map(g_other, &g_f), 0);
	CU_ASSERT_EQUAL_FATAL(syshax_buf_map(g_sh, &g_b), 0);
	f = g_f.addr;
	b = g_b.addr;
	memset(f, 0xc3, 4096);
	fd = syshax_buf_export(g_other, &g_f, SYSHAX_EXPORT_CLOEXEC);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL_FATAL(syshax_buf_import(g_sh, fd, &imp), 0);
	close(fd);
	CU_ASSERT_EQUAL(imp.id, g_f.id);
	CU_ASSERT_EQUAL(syshax_job_copy(&job, &imp, 0, &g_b, 0, 4096, 301), 0);
	CU_ASSERT_EQUAL(syshax_submit(g_sh, &job, 1), 1);
	CU_ASSERT_EQUAL_FATAL(syshax_wait(g_sh, &c, 1, 1, 5 * T_SEC), 1);
	CU_ASSERT_EQUAL(c.user_data, 301);
	CU_ASSERT_EQUAL(c.status, 0);
	CU_ASSERT_EQUAL(c.result, 4096);
	CU_ASSERT_EQUAL(b[0], 0xc3);
	CU_ASSERT_EQUAL(b[4095], 0xc3);
	CU_ASSERT_EQUAL(syshax_buf_free(g_sh, &imp), 0);
}

static void t_partial(void)
{
	struct syshax_job jobs[3];
	struct syshax_completion c[3];

	syshax_job_init(&jobs[0], SYSHAX_OP_NOP, 501);
	good_copy(&jobs[1]);
	jobs[1].refs[1].access = R;
	syshax_job_init(&jobs[2], SYSHAX_OP_NOP, 503);
	/* Stops at the bad one: the first is queued, the third is not. */
	CU_ASSERT_EQUAL(syshax_submit(g_sh, jobs, 3), 1);
	CU_ASSERT_EQUAL_FATAL(syshax_wait(g_sh, c, 1, 3, 5 * T_SEC), 1);
	CU_ASSERT_EQUAL(c[0].user_data, 501);
	CU_ASSERT_EQUAL(c[0].status, 0);
	/* The bad job first: its errno, nothing queued. */
	CU_ASSERT_EQUAL(syshax_submit(g_sh, jobs + 1, 2), -EACCES);
	CU_ASSERT_EQUAL(syshax_submit(g_sh, jobs, 0), -EINVAL);
	expect_no_completion();
}

int t_add_badref(void)
{
	CU_pSuite s = CU_add_suite("bad jobs", badref_init, badref_clean);

	if (!s || !CU_add_test(s, "a valid job at the edge", t_good_is_good) ||
	    !CU_add_test(s, "foreign or unknown handle: -EBADF", t_foreign) ||
	    !CU_add_test(s, "outside the buffer: -ERANGE", t_range) ||
	    !CU_add_test(s, "access: -EACCES / -EINVAL", t_access) ||
	    !CU_add_test(s, "ref count: -EINVAL", t_refs_count) ||
	    !CU_add_test(s, "op, flags, reserved: -EINVAL", t_op_and_reserved) ||
	    !CU_add_test(s, "an imported buffer is the caller's",
			 t_imported) ||
	    !CU_add_test(s, "stops at the first bad job", t_partial))
		return -1;
	return 0;
}
