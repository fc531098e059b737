// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * CTX_STATS on the module with raw ioctls (VM only; 77 without the
 * device): what the library cannot send (flags, reserved, an unwritable
 * array -> -EFAULT, max 0 with the array untouched) and syshax-top on the
 * module. The semantics both backends share (self first, pid/uid/comm,
 * total, short array, buffers, jobs, an engine's held/done) are in the
 * conformance suite, tests/conformance/ctx_stats.c.
 */
#include <sys/prctl.h>

#include "t_jobs.h"

#define MAX_CTX	256

static struct syshax_ctx_stat v[MAX_CTX];

static int ctx_stats(int fd, struct syshax_ctx_stats_args *a,
		     unsigned int max)
{
	memset(a, 0, sizeof(*a));
	memset(v, 0xa5, sizeof(v));
	a->ctxs = (unsigned long)v;
	a->max = max;
	return t_ioctl(fd, SYSHAX_IOC_CTX_STATS, a);
}

/* The context id of fd, from its own entry. */
static uint32_t ctx_id_of(int fd)
{
	struct syshax_ctx_stats_args a;

	CU_ASSERT_EQUAL_FATAL(ctx_stats(fd, &a, 1), 0);
	CU_ASSERT_EQUAL_FATAL(a.nr, 1);
	CU_ASSERT(v[0].flags & SYSHAX_CTX_SELF);
	return v[0].ctx_id;
}

static void t_errors(void)
{
	struct syshax_ctx_stats_args a;
	int fd = t_fd();

	memset(&a, 0, sizeof(a));
	a.ctxs = (unsigned long)v;
	a.max = 4;
	a.flags = 1;
	CU_ASSERT_EQUAL(t_ioctl(fd, SYSHAX_IOC_CTX_STATS, &a), -EINVAL);
	a.flags = 0;
	a.reserved[1] = 1;
	CU_ASSERT_EQUAL(t_ioctl(fd, SYSHAX_IOC_CTX_STATS, &a), -EINVAL);
	a.reserved[1] = 0;
	a.ctxs = 8;	/* not writable */
	CU_ASSERT_EQUAL(t_ioctl(fd, SYSHAX_IOC_CTX_STATS, &a), -EFAULT);
	/* max 0: only the count. */
	CU_ASSERT_EQUAL(ctx_stats(fd, &a, 0), 0);
	CU_ASSERT_EQUAL(a.nr, 0);
	CU_ASSERT(a.total >= 1);
	CU_ASSERT_EQUAL(v[0].ctx_id, 0xa5a5a5a5U);	/* untouched */
	close(fd);
}

/* Up to len - 1 bytes of cmd's output; -1 when it failed. */
static int run(const char *cmd, char *buf, size_t len)
{
	FILE *p = popen(cmd, "r");
	size_t n = 0, k;

	if (!p)
		return -1;
	while (n + 1 < len && (k = fread(buf + n, 1, len - 1 - n, p)) > 0)
		n += k;
	buf[n] = 0;
	return pclose(p) ? -1 : (int)n;
}

/* syshax-top (in the guest's /bin with make vm-check) on the module: its
 * --json and --prometheus show our context with our buffers. */
static void t_syshax_top(void)
{
	static char out[1 << 17];
	const char *top = "/bin/syshax-top";
	struct syshax_buf_alloc_args b[2];
	char want[256], comm[16];
	const char *at;
	int fd = t_fd();
	uint32_t id = ctx_id_of(fd);
	uint64_t bytes;

	if (access(top, X_OK)) {
		printf("\n  (no %s here: make vm-check copies it)\n", top);
		close(fd);
		return;
	}
	prctl(PR_GET_NAME, comm);
	b[0] = t_buf(fd);
	b[1] = t_buf(fd);
	bytes = b[0].size + b[1].size;
	CU_ASSERT_FATAL(run("/bin/syshax-top --device /dev/syshax --json "
			    "--interval 0.1", out, sizeof(out)) > 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"kind\":\t\"module\""));
	snprintf(want, sizeof(want), "\"ctx_id\":\t%u,", id);
	at = strstr(out, want);
	CU_ASSERT_PTR_NOT_NULL_FATAL(at);
	snprintf(want, sizeof(want), "\"pid\":\t%d,", getpid());
	CU_ASSERT_PTR_NOT_NULL(strstr(at, want));
	snprintf(want, sizeof(want), "\"comm\":\t\"%s\"", comm);
	CU_ASSERT_PTR_NOT_NULL(strstr(at, want));
	snprintf(want, sizeof(want), "\"nr_bufs\":\t2,");
	CU_ASSERT_PTR_NOT_NULL(strstr(at, want));
	snprintf(want, sizeof(want), "\"buf_bytes\":\t%llu,",
		 (unsigned long long)bytes);
	CU_ASSERT_PTR_NOT_NULL(strstr(at, want));
	CU_ASSERT_FATAL(run("/bin/syshax-top --device /dev/syshax --prometheus "
			    "--interval 0.1", out, sizeof(out)) > 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "syshax_info{backend=\"module\""));
	snprintf(want, sizeof(want),
		 "syshax_ctx_buffer_bytes{ctx=\"%u\",pid=\"%d\",comm=\"%s\"} %llu\n",
		 id, getpid(), comm, (unsigned long long)bytes);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
	close(fd);
}

int main(void)
{
	static const struct t_test tests[] = {
		{ "raw argument errors, max 0", t_errors },
		{ "syshax-top --json and --prometheus", t_syshax_top },
	};

	return T_MAIN("kmod_ctx_stats", "kmod CTX_STATS", NULL, NULL, tests);
}
