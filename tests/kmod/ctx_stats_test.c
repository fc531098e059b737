// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * CTX_STATS on the module with raw ioctls (VM only; 77 without the
 * device): the caller's entry first and marked, the opener's pid, uid and
 * comm (a child that renamed itself before open), buffers and bytes per
 * context, jobs queued, in flight, submitted, completed and failed, an
 * engine's held and done, a short array, and the argument errors.
 */
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>

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

/* The entry of ctx_id (or of pid when ctx_id is 0); NULL when absent. */
static const struct syshax_ctx_stat *find(const struct syshax_ctx_stats_args *a,
					  uint32_t ctx_id, int pid)
{
	unsigned int i;

	for (i = 0; i < a->nr; i++)
		if (ctx_id ? v[i].ctx_id == ctx_id : v[i].pid == pid)
			return &v[i];
	return NULL;
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

static void t_version(void)
{
	struct syshax_version_args ver;
	int fd = t_fd();

	CU_ASSERT_EQUAL(t_ioctl(fd, SYSHAX_IOC_VERSION, &ver), 0);
	CU_ASSERT(ver.features & SYSHAX_FEAT_CTX_STATS);
	close(fd);
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

static void t_self_and_total(void)
{
	struct syshax_ctx_stats_args a;
	int fd1 = t_fd(), fd2 = t_fd(), fd3 = t_fd();
	uint32_t id1 = ctx_id_of(fd1), id3 = ctx_id_of(fd3);
	const struct syshax_ctx_stat *s;
	char comm[16];

	CU_ASSERT_NOT_EQUAL(id1, id3);
	CU_ASSERT_EQUAL_FATAL(ctx_stats(fd2, &a, MAX_CTX), 0);
	CU_ASSERT(a.total >= 3);
	CU_ASSERT_EQUAL(a.nr, a.total);
	CU_ASSERT(v[0].flags & SYSHAX_CTX_SELF);
	CU_ASSERT_EQUAL(v[0].pid, getpid());
	CU_ASSERT_EQUAL(v[0].uid, getuid());
	prctl(PR_GET_NAME, comm);
	CU_ASSERT_STRING_EQUAL(v[0].comm, comm);
	CU_ASSERT_EQUAL(v[0].reserved[0] | v[0].reserved[1] |
			v[0].reserved[2], 0);
	s = find(&a, id1, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_FALSE(s->flags & SYSHAX_CTX_SELF);
	CU_ASSERT_EQUAL(s->pid, getpid());
	CU_ASSERT_PTR_NOT_NULL(find(&a, id3, 0));
	/* A short array: the caller first, total still all of them. */
	CU_ASSERT_EQUAL(ctx_stats(fd1, &a, 2), 0);
	CU_ASSERT_EQUAL(a.nr, 2);
	CU_ASSERT(a.total >= 3);
	CU_ASSERT_EQUAL(v[0].ctx_id, id1);
	CU_ASSERT_EQUAL(v[2].ctx_id, 0xa5a5a5a5U);
	/* A closed context leaves the list. */
	close(fd3);
	CU_ASSERT_EQUAL(ctx_stats(fd1, &a, MAX_CTX), 0);
	CU_ASSERT_PTR_NULL(find(&a, id3, 0));
	close(fd1);
	close(fd2);
}

/* A child named "ctx_kid" opens the device and allocates two buffers. */
static void t_child_bufs(void)
{
	struct syshax_ctx_stats_args a;
	struct syshax_buf_alloc_args b[3];
	const struct syshax_ctx_stat *s;
	int go[2], ready[2], fd = t_fd(), status;
	uint64_t bytes = 0;
	pid_t kid;
	char c;

	CU_ASSERT_FATAL(!pipe(go) && !pipe(ready));
	kid = fork();
	CU_ASSERT_FATAL(kid >= 0);
	if (!kid) {
		int k = -1;

		close(go[1]);	/* else its read never sees EOF */
		close(ready[0]);
		prctl(PR_SET_NAME, "ctx_kid");
		k = t_open();
		if (k < 0 || t_small(k, &b[0]) || t_small(k, &b[1]))
			_exit(1);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		if (read(go[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	CU_ASSERT_EQUAL_FATAL(read(ready[0], &c, 1), 1);
	/* Ours: three buffers, then two. */
	for (int i = 0; i < 3; i++) {
		b[i] = t_buf(fd);
		bytes += b[i].size;
	}
	CU_ASSERT_EQUAL(ctx_stats(fd, &a, MAX_CTX), 0);
	CU_ASSERT_EQUAL(v[0].nr_bufs, 3);
	CU_ASSERT_EQUAL(v[0].buf_bytes, bytes);
	s = find(&a, 0, kid);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_STRING_EQUAL(s->comm, "ctx_kid");
	CU_ASSERT_EQUAL(s->uid, getuid());
	CU_ASSERT_EQUAL(s->nr_bufs, 2);
	CU_ASSERT_EQUAL(s->buf_bytes, 2ULL * T_BUF_SIZE);
	CU_ASSERT_EQUAL(s->flags, 0);
	CU_ASSERT_EQUAL(t_free(fd, b[1].handle), 0);
	CU_ASSERT_EQUAL(ctx_stats(fd, &a, MAX_CTX), 0);
	CU_ASSERT_EQUAL(v[0].nr_bufs, 2);
	CU_ASSERT_EQUAL(v[0].buf_bytes, bytes - b[1].size);
	close(go[1]);
	CU_ASSERT_EQUAL(waitpid(kid, &status, 0), kid);
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* Its context went with it. */
	CU_ASSERT_EQUAL(ctx_stats(fd, &a, MAX_CTX), 0);
	CU_ASSERT_PTR_NULL(find(&a, 0, kid));
	close(go[0]);
	close(ready[0]);
	close(ready[1]);
	close(fd);
}

static void t_jobs(void)
{
	struct syshax_ctx_stats_args a;
	struct syshax_engine_job ej[2];
	struct syshax_completion cpl[3];
	struct syshax_job jobs[3];
	const struct syshax_ctx_stat *s, *e;
	unsigned long long tok;
	int eng = t_engine(), fd = t_fd(), i;
	uint32_t cid = ctx_id_of(fd), eid = ctx_id_of(eng);

	for (i = 0; i < 3; i++)
		t_nop(&jobs[i], (unsigned long long)i);
	CU_ASSERT_EQUAL_FATAL(t_submit(fd, jobs, 3), 3);
	CU_ASSERT_EQUAL(ctx_stats(fd, &a, MAX_CTX), 0);
	s = find(&a, cid, 0);
	e = find(&a, eid, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_PTR_NOT_NULL_FATAL(e);
	CU_ASSERT_EQUAL(s->jobs_submitted, 3);
	CU_ASSERT_EQUAL(s->jobs_queued, 3);
	CU_ASSERT_EQUAL(s->jobs_inflight, 0);
	CU_ASSERT(e->flags & SYSHAX_CTX_ENGINE);
	CU_ASSERT_EQUAL(e->eng_held, 0);

	CU_ASSERT_EQUAL_FATAL(t_fetch(eng, ej, 1, 0), 1);
	CU_ASSERT_EQUAL(ctx_stats(fd, &a, MAX_CTX), 0);
	s = find(&a, cid, 0);
	e = find(&a, eid, 0);
	CU_ASSERT_EQUAL(s->jobs_queued, 2);
	CU_ASSERT_EQUAL(s->jobs_inflight, 1);
	CU_ASSERT_EQUAL(e->eng_held, 1);
	tok = ej[0].token;
	CU_ASSERT_EQUAL(t_complete(eng, &tok, 1, 0), 1);

	CU_ASSERT_EQUAL_FATAL(t_fetch(eng, ej, 2, 0), 2);
	tok = ej[0].token;
	CU_ASSERT_EQUAL(t_complete(eng, &tok, 1, -EIO), 1);
	CU_ASSERT_EQUAL(ctx_stats(fd, &a, MAX_CTX), 0);
	s = find(&a, cid, 0);
	e = find(&a, eid, 0);
	CU_ASSERT_EQUAL(s->jobs_queued, 0);
	CU_ASSERT_EQUAL(s->jobs_inflight, 1);
	CU_ASSERT_EQUAL(s->jobs_completed, 1);
	CU_ASSERT_EQUAL(s->jobs_failed, 1);
	CU_ASSERT_EQUAL(e->eng_held, 1);
	CU_ASSERT_EQUAL(e->eng_done, 2);
	tok = ej[1].token;
	CU_ASSERT_EQUAL(t_complete(eng, &tok, 1, 0), 1);
	CU_ASSERT_EQUAL(t_wait(fd, cpl, 3, 3, 1000000000LL), 3);
	CU_ASSERT_EQUAL(ctx_stats(fd, &a, MAX_CTX), 0);
	s = find(&a, cid, 0);
	e = find(&a, eid, 0);
	CU_ASSERT_EQUAL(s->jobs_inflight, 0);
	CU_ASSERT_EQUAL(s->jobs_completed, 2);
	CU_ASSERT_EQUAL(s->jobs_submitted, 3);
	CU_ASSERT_EQUAL(e->eng_held, 0);
	CU_ASSERT_EQUAL(e->eng_done, 3);
	close(fd);
	close(eng);
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
		{ "version has CTX_STATS", t_version },
		{ "argument errors, max 0", t_errors },
		{ "self first, total, short array, close", t_self_and_total },
		{ "a child's pid, comm and buffers", t_child_bufs },
		{ "jobs queued, in flight, done; engine", t_jobs },
		{ "syshax-top --json and --prometheus", t_syshax_top },
	};

	return T_MAIN("kmod_ctx_stats", "kmod CTX_STATS", NULL, NULL, tests);
}
