// SPDX-License-Identifier: MIT
/*
 * Module-only job broker tests with raw ioctls on /dev/syshax: engine
 * permissions, fetch timeouts, bad tokens, ENGINE_MAP, queue limits and the
 * lifetime rules (engine close -> -EPIPE, client close -> cancelled, refs
 * released, pinned bytes back). The shared conformance suite covers the
 * rest through libsyshax-rt. Runs as root in the test VM; exits 77 without
 * /dev/syshax.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include "syshax.h"
#include "syshax_ops.h"

#define DEV		"/dev/syshax"
#define PARAMS		"/sys/module/syshax/parameters/"
#define BUF_SIZE	(64 << 10)
#define NOBODY		65534

static int t_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? -errno : 0;
}

/* ioctls that return a count. */
static int t_count(int fd, unsigned long cmd, void *arg)
{
	int ret = ioctl(fd, cmd, arg);

	return ret < 0 ? -errno : ret;
}

static int t_open(void)
{
	int fd = open(DEV, O_RDWR | O_CLOEXEC);

	CU_ASSERT_FATAL(fd >= 0);
	return fd;
}

static int t_engine(void)
{
	struct syshax_engine_attach_args a = { .node = -1 };
	int fd = t_open();

	CU_ASSERT_EQUAL_FATAL(t_ioctl(fd, SYSHAX_IOC_ENGINE_ATTACH, &a), 0);
	return fd;
}

static struct syshax_stats_args t_stats(int fd)
{
	struct syshax_stats_args st;

	memset(&st, 0, sizeof(st));
	CU_ASSERT_EQUAL(t_ioctl(fd, SYSHAX_IOC_STATS, &st), 0);
	return st;
}

static struct syshax_buf_alloc_args t_alloc(int fd)
{
	struct syshax_buf_alloc_args a = {
		.size = BUF_SIZE, .node = -1,
		.flags = SYSHAX_BUF_ALLOW_SMALL | SYSHAX_BUF_ALLOW_REMOTE,
	};

	CU_ASSERT_EQUAL_FATAL(t_ioctl(fd, SYSHAX_IOC_BUF_ALLOC, &a), 0);
	return a;
}

static void t_free(int fd, unsigned int handle)
{
	struct syshax_buf_free_args f = { .handle = handle };

	CU_ASSERT_EQUAL(t_ioctl(fd, SYSHAX_IOC_BUF_FREE, &f), 0);
}

static void t_nop(struct syshax_job *j, unsigned long long user_data)
{
	memset(j, 0, sizeof(*j));
	j->op = SYSHAX_OP_NOP;
	j->user_data = user_data;
}

static void t_copy(struct syshax_job *j, unsigned int src, unsigned int dst,
		   unsigned long long user_data)
{
	memset(j, 0, sizeof(*j));
	j->op = SYSHAX_OP_COPY;
	j->user_data = user_data;
	j->nr_refs = 2;
	j->refs[0] = (struct syshax_buf_ref){
		.buf = src, .access = SYSHAX_ACCESS_READ, .length = 4096 };
	j->refs[1] = (struct syshax_buf_ref){
		.buf = dst, .access = SYSHAX_ACCESS_WRITE, .length = 4096 };
}

static int t_submit(int fd, struct syshax_job *jobs, unsigned int nr)
{
	struct syshax_submit_args s = {
		.jobs = (unsigned long)jobs, .nr = nr };

	return t_count(fd, SYSHAX_IOC_SUBMIT, &s);
}

static int t_wait(int fd, struct syshax_completion *c, unsigned int min,
		  unsigned int max, long long timeout_ns)
{
	struct syshax_wait_args w = {
		.cpls = (unsigned long)c, .max = max, .min = min,
		.timeout_ns = timeout_ns };

	return t_count(fd, SYSHAX_IOC_WAIT, &w);
}

static int t_fetch(int fd, struct syshax_engine_job *jobs, unsigned int max,
		   long long timeout_ns)
{
	struct syshax_engine_fetch_args f = {
		.jobs = (unsigned long)jobs, .max = max,
		.timeout_ns = timeout_ns };

	return t_count(fd, SYSHAX_IOC_ENGINE_FETCH, &f);
}

static int t_complete(int fd, const unsigned long long *tokens,
		      unsigned int nr, int status)
{
	struct syshax_engine_cpl c[16];
	struct syshax_engine_complete_args a = {
		.cpls = (unsigned long)c, .nr = nr };
	unsigned int i;

	memset(c, 0, sizeof(c));
	for (i = 0; i < nr; i++) {
		c[i].token = tokens[i];
		c[i].status = status;
		c[i].result = 1000 + i;
	}
	return t_count(fd, SYSHAX_IOC_ENGINE_COMPLETE, &a);
}

static double t_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Reads a module parameter into buf; 0 or -errno. */
static int t_param_get(const char *name, char *buf, size_t len)
{
	char path[128];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), PARAMS "%s", name);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	ok = fgets(buf, len, f) != NULL;
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return ok ? 0 : -EIO;
}

static int t_param_set(const char *name, const char *val)
{
	char path[128];
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), PARAMS "%s", name);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	ret = fputs(val, f) < 0 ? -EIO : 0;
	if (fclose(f))
		ret = -errno;
	return ret;
}

static void t_version(void)
{
	struct syshax_version_args v;
	int fd = t_open();

	memset(&v, 0, sizeof(v));
	CU_ASSERT_EQUAL(t_ioctl(fd, SYSHAX_IOC_VERSION, &v), 0);
	CU_ASSERT(v.features & SYSHAX_FEAT_JOBS);
	CU_ASSERT_EQUAL(v.max_refs, SYSHAX_JOB_MAX_REFS);
	CU_ASSERT(v.max_submit >= 1);
	close(fd);
}

/* In a child that dropped to nobody (uid and gid 65534): attach's errno. */
static int t_attach_as_nobody(void)
{
	struct syshax_engine_attach_args a = { .node = -1 };
	int fd = t_open(), status;
	pid_t pid;

	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
			_exit(255);
		_exit(-t_ioctl(fd, SYSHAX_IOC_ENGINE_ATTACH, &a));
	}
	close(fd);
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	CU_ASSERT_FATAL(WIFEXITED(status));
	return -WEXITSTATUS(status);
}

static void t_attach_permission(void)
{
	struct syshax_engine_attach_args a = { .node = -1 };
	char saved[32];
	int fd;

	CU_ASSERT_EQUAL_FATAL(t_param_get("engine_gid", saved, sizeof(saved)), 0);
	CU_ASSERT_EQUAL_FATAL(t_param_set("engine_gid", "-1"), 0);
	CU_ASSERT_EQUAL(t_attach_as_nobody(), -EPERM);
	/* Members of engine_gid may attach without CAP_SYS_ADMIN. */
	CU_ASSERT_EQUAL(t_param_set("engine_gid", "65534"), 0);
	CU_ASSERT_EQUAL(t_attach_as_nobody(), 0);
	CU_ASSERT_EQUAL(t_param_set("engine_gid", saved), 0);

	fd = t_engine();
	CU_ASSERT_EQUAL(t_ioctl(fd, SYSHAX_IOC_ENGINE_ATTACH, &a), -EBUSY);
	a.node = -2;
	close(fd);
	fd = t_open();
	CU_ASSERT_EQUAL(t_ioctl(fd, SYSHAX_IOC_ENGINE_ATTACH, &a), -EINVAL);
	close(fd);
}

static void t_engine_calls_need_attach(void)
{
	struct syshax_engine_job j;
	int fd = t_open();

	CU_ASSERT_EQUAL(t_fetch(fd, &j, 1, 0), -EINVAL);
	close(fd);
}

static void t_fetch_timeout(void)
{
	struct syshax_engine_job j;
	int fd = t_engine();
	double t0, dt;

	t0 = t_now();
	CU_ASSERT_EQUAL(t_fetch(fd, &j, 1, 0), -ETIMEDOUT);
	CU_ASSERT(t_now() - t0 < 0.1);
	t0 = t_now();
	CU_ASSERT_EQUAL(t_fetch(fd, &j, 1, 200000000), -ETIMEDOUT);
	dt = t_now() - t0;
	CU_ASSERT(dt >= 0.2);
	CU_ASSERT(dt < 1.5);
	close(fd);
}

static void t_wait_timeout(void)
{
	struct syshax_completion c;
	int fd = t_open();
	double t0, dt;

	CU_ASSERT_EQUAL(t_wait(fd, &c, 0, 1, -1), 0);
	t0 = t_now();
	CU_ASSERT_EQUAL(t_wait(fd, &c, 1, 1, 100000000), -ETIMEDOUT);
	dt = t_now() - t0;
	CU_ASSERT(dt >= 0.1);
	CU_ASSERT(dt < 1.5);
	CU_ASSERT_EQUAL(t_wait(fd, &c, 2, 1, 0), -EINVAL);
	close(fd);
}

static void t_on_alarm(int sig)
{
	(void)sig;
}

/* A signal ends WAIT and FETCH with -EINTR, also with no or a huge
 * timeout. */
static void t_eintr(void)
{
	struct sigaction sa = { .sa_handler = t_on_alarm };
	struct itimerval it = { .it_value = { .tv_usec = 100000 } };
	struct syshax_engine_job ej;
	struct syshax_completion c;
	int cl = t_open(), eng = t_engine();
	double t0;

	CU_ASSERT_EQUAL_FATAL(sigaction(SIGALRM, &sa, NULL), 0);
	t0 = t_now();
	CU_ASSERT_EQUAL(setitimer(ITIMER_REAL, &it, NULL), 0);
	CU_ASSERT_EQUAL(t_wait(cl, &c, 1, 1, INT64_MAX), -EINTR);
	CU_ASSERT(t_now() - t0 >= 0.09);
	t0 = t_now();
	CU_ASSERT_EQUAL(setitimer(ITIMER_REAL, &it, NULL), 0);
	CU_ASSERT_EQUAL(t_fetch(eng, &ej, 1, -1), -EINTR);
	CU_ASSERT(t_now() - t0 >= 0.09);
	signal(SIGALRM, SIG_DFL);
	close(eng);
	close(cl);
}

/* An fd added to epoll before ENGINE_ATTACH hears of queued jobs; the
 * client's fd becomes readable when its completion is ready. */
static void t_epoll(void)
{
	struct syshax_engine_attach_args a = { .node = -1 };
	struct epoll_event ev = { .events = EPOLLIN }, out;
	struct syshax_engine_job ej;
	struct syshax_completion c;
	struct syshax_job job;
	unsigned long long tok;
	int cl = t_open(), eng = t_open();
	int ep_eng = epoll_create1(EPOLL_CLOEXEC);
	int ep_cl = epoll_create1(EPOLL_CLOEXEC);

	CU_ASSERT_FATAL(ep_eng >= 0 && ep_cl >= 0);
	CU_ASSERT_EQUAL(epoll_ctl(ep_eng, EPOLL_CTL_ADD, eng, &ev), 0);
	CU_ASSERT_EQUAL(epoll_ctl(ep_cl, EPOLL_CTL_ADD, cl, &ev), 0);
	CU_ASSERT_EQUAL(t_ioctl(eng, SYSHAX_IOC_ENGINE_ATTACH, &a), 0);
	CU_ASSERT_EQUAL(epoll_wait(ep_eng, &out, 1, 0), 0);
	t_nop(&job, 5);
	CU_ASSERT_EQUAL_FATAL(t_submit(cl, &job, 1), 1);
	CU_ASSERT_EQUAL(epoll_wait(ep_eng, &out, 1, 1000), 1);
	CU_ASSERT_EQUAL(epoll_wait(ep_cl, &out, 1, 0), 0);
	CU_ASSERT_EQUAL_FATAL(t_fetch(eng, &ej, 1, 0), 1);
	CU_ASSERT_EQUAL(epoll_wait(ep_eng, &out, 1, 0), 0);
	tok = ej.token;
	CU_ASSERT_EQUAL(t_complete(eng, &tok, 1, 0), 1);
	CU_ASSERT_EQUAL(epoll_wait(ep_cl, &out, 1, 1000), 1);
	CU_ASSERT_EQUAL(t_wait(cl, &c, 1, 1, 0), 1);
	CU_ASSERT_EQUAL(epoll_wait(ep_cl, &out, 1, 0), 0);
	close(ep_eng);
	close(ep_cl);
	close(eng);
	close(cl);
}

static void t_complete_bad_token(void)
{
	struct syshax_engine_job ej;
	struct syshax_completion c;
	struct syshax_job job;
	unsigned long long tok[2];
	int cl = t_open(), eng = t_engine();

	t_nop(&job, 42);
	CU_ASSERT_EQUAL_FATAL(t_submit(cl, &job, 1), 1);
	CU_ASSERT_EQUAL_FATAL(t_fetch(eng, &ej, 1, 1000000000), 1);
	CU_ASSERT_EQUAL(ej.job.user_data, 42);
	tok[0] = ej.token + 1000;
	CU_ASSERT_EQUAL(t_complete(eng, tok, 1, 0), -ENOENT);
	/* A good token then a bad one: one done, the count says so. */
	tok[0] = ej.token;
	tok[1] = ej.token + 1000;
	CU_ASSERT_EQUAL(t_complete(eng, tok, 2, 0), 1);
	CU_ASSERT_EQUAL(t_complete(eng, tok, 1, 0), -ENOENT);
	CU_ASSERT_EQUAL(t_wait(cl, &c, 1, 1, 1000000000), 1);
	CU_ASSERT_EQUAL(c.user_data, 42);
	CU_ASSERT_EQUAL(c.status, 0);
	CU_ASSERT_EQUAL(c.result, 1000);
	/* A status that is no errno. */
	CU_ASSERT_EQUAL(t_submit(cl, &job, 1), 1);
	CU_ASSERT_EQUAL_FATAL(t_fetch(eng, &ej, 1, 1000000000), 1);
	tok[0] = ej.token;
	CU_ASSERT_EQUAL(t_complete(eng, tok, 1, 1), -EINVAL);
	CU_ASSERT_EQUAL(t_complete(eng, tok, 1, -EIO), 1);
	CU_ASSERT_EQUAL(t_wait(cl, &c, 1, 1, 1000000000), 1);
	CU_ASSERT_EQUAL(c.status, -EIO);
	close(eng);
	close(cl);
}

/* An engine closing with held jobs: they end with -EPIPE at once; the
 * queued ones wait for the next engine. Refs go, pinned bytes return. */
static void t_engine_close_epipe(void)
{
	struct syshax_stats_args st0, st;
	struct syshax_buf_alloc_args src, dst;
	struct syshax_engine_job ej[8];
	struct syshax_completion c[8];
	struct syshax_job jobs[8];
	unsigned long long tok[4];
	int cl = t_open(), eng = t_engine(), i, n, epipe = 0, ok = 0;
	double t0;

	st0 = t_stats(cl);
	src = t_alloc(cl);
	dst = t_alloc(cl);
	for (i = 0; i < 8; i++)
		t_copy(&jobs[i], src.handle, dst.handle, 100 + i);
	CU_ASSERT_EQUAL_FATAL(t_submit(cl, jobs, 8), 8);
	/* Refs were rewritten to global ids. */
	CU_ASSERT_EQUAL_FATAL(t_fetch(eng, ej, 4, 1000000000), 4);
	CU_ASSERT_EQUAL(ej[0].job.refs[0].buf, src.id);
	CU_ASSERT_EQUAL(ej[0].job.refs[1].buf, dst.id);
	st = t_stats(cl);
	CU_ASSERT_EQUAL(st.inflight, 4);
	CU_ASSERT_EQUAL(st.queue_depth, 4);
	t0 = t_now();
	close(eng);
	CU_ASSERT_EQUAL(t_wait(cl, c, 4, 8, 1000000000), 4);
	CU_ASSERT(t_now() - t0 < 1.0);
	for (i = 0; i < 4; i++) {
		CU_ASSERT_EQUAL(c[i].status, -EPIPE);
		CU_ASSERT(c[i].user_data >= 100 && c[i].user_data < 104);
	}
	st = t_stats(cl);
	CU_ASSERT_EQUAL(st.inflight, 0);
	CU_ASSERT_EQUAL(st.queue_depth, 4);

	/* The next engine takes the queued ones. */
	eng = t_engine();
	n = t_fetch(eng, ej, 8, 1000000000);
	CU_ASSERT_EQUAL_FATAL(n, 4);
	for (i = 0; i < n; i++)
		tok[i] = ej[i].token;
	CU_ASSERT_EQUAL(t_complete(eng, tok, n, 0), 4);
	CU_ASSERT_EQUAL(t_wait(cl, c, 4, 8, 1000000000), 4);
	for (i = 0; i < 4; i++) {
		ok += c[i].status == 0;
		epipe += c[i].status == -EPIPE;
	}
	CU_ASSERT_EQUAL(ok, 4);
	CU_ASSERT_EQUAL(epipe, 0);
	close(eng);
	t_free(cl, src.handle);
	t_free(cl, dst.handle);
	st = t_stats(cl);
	CU_ASSERT_EQUAL(st.pinned_bytes, st0.pinned_bytes);
	CU_ASSERT_EQUAL(st.jobs_failed - st0.jobs_failed, 4);
	close(cl);
}

/* A client closing with queued jobs: cancelled, refs released. */
static void t_client_close_queued(void)
{
	struct syshax_buf_alloc_args src, dst;
	struct syshax_stats_args st0, st;
	struct syshax_job jobs[6];
	int mon = t_open(), cl = t_open(), i;

	st0 = t_stats(mon);
	src = t_alloc(cl);
	dst = t_alloc(cl);
	for (i = 0; i < 6; i++)
		t_copy(&jobs[i], src.handle, dst.handle, i);
	CU_ASSERT_EQUAL(t_submit(cl, jobs, 6), 6);
	/* Freed handles: only the jobs hold the buffers now. */
	t_free(cl, src.handle);
	t_free(cl, dst.handle);
	st = t_stats(mon);
	CU_ASSERT(st.pinned_bytes >= st0.pinned_bytes + 2 * BUF_SIZE);
	CU_ASSERT_EQUAL(st.queue_depth, st0.queue_depth + 6);
	close(cl);
	st = t_stats(mon);
	CU_ASSERT_EQUAL(st.jobs_cancelled - st0.jobs_cancelled, 6);
	CU_ASSERT_EQUAL(st.queue_depth, st0.queue_depth);
	CU_ASSERT_EQUAL(st.pinned_bytes, st0.pinned_bytes);
	close(mon);
}

/* A client closing with held jobs: they complete into nothing when the
 * engine finishes them, which is when the refs go. */
static void t_client_close_inflight(void)
{
	struct syshax_buf_alloc_args src, dst;
	struct syshax_stats_args st0, st;
	struct syshax_engine_job ej[2];
	struct syshax_job jobs[2];
	unsigned long long tok[2];
	int mon = t_open(), cl = t_open(), eng = t_engine();

	st0 = t_stats(mon);
	src = t_alloc(cl);
	dst = t_alloc(cl);
	t_copy(&jobs[0], src.handle, dst.handle, 1);
	t_copy(&jobs[1], src.handle, dst.handle, 2);
	CU_ASSERT_EQUAL_FATAL(t_submit(cl, jobs, 2), 2);
	CU_ASSERT_EQUAL_FATAL(t_fetch(eng, ej, 2, 1000000000), 2);
	close(cl);
	st = t_stats(mon);
	CU_ASSERT(st.pinned_bytes >= st0.pinned_bytes + 2 * BUF_SIZE);
	CU_ASSERT_EQUAL(st.inflight, st0.inflight + 2);
	tok[0] = ej[0].token;
	tok[1] = ej[1].token;
	CU_ASSERT_EQUAL(t_complete(eng, tok, 2, 0), 2);
	st = t_stats(mon);
	CU_ASSERT_EQUAL(st.inflight, st0.inflight);
	CU_ASSERT_EQUAL(st.pinned_bytes, st0.pinned_bytes);
	close(eng);
	close(mon);
}

/* ENGINE_MAP: only buffers of held jobs; the mapping shows the client's
 * bytes; the engine's handle goes when the jobs complete. */
static void t_engine_map(void)
{
	struct syshax_buf_alloc_args src, dst, other;
	struct syshax_engine_map_args m = { 0 };
	struct syshax_stats_args st0, st;
	struct syshax_engine_job ej;
	struct syshax_completion c;
	struct syshax_job job;
	unsigned long long tok;
	int mon = t_open(), cl = t_open(), eng = t_engine();
	unsigned char *p, *q;

	st0 = t_stats(mon);
	src = t_alloc(cl);
	dst = t_alloc(cl);
	other = t_alloc(cl);
	p = mmap(NULL, BUF_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, cl,
		 src.mmap_offset);
	CU_ASSERT_FATAL(p != MAP_FAILED);
	memset(p, 0x5a, 4096);
	t_copy(&job, src.handle, dst.handle, 7);
	CU_ASSERT_EQUAL_FATAL(t_submit(cl, &job, 1), 1);
	CU_ASSERT_EQUAL_FATAL(t_fetch(eng, &ej, 1, 1000000000), 1);

	m.id = other.id;
	CU_ASSERT_EQUAL(t_ioctl(eng, SYSHAX_IOC_ENGINE_MAP, &m), -EACCES);
	m.id = 0x3fffff;
	CU_ASSERT_EQUAL(t_ioctl(eng, SYSHAX_IOC_ENGINE_MAP, &m), -ENOENT);
	m.id = src.id;
	CU_ASSERT_EQUAL_FATAL(t_ioctl(eng, SYSHAX_IOC_ENGINE_MAP, &m), 0);
	CU_ASSERT_EQUAL(m.size, src.size);
	q = mmap(NULL, m.size, PROT_READ, MAP_SHARED, eng, m.mmap_offset);
	CU_ASSERT_FATAL(q != MAP_FAILED);
	CU_ASSERT_EQUAL(q[0], 0x5a);
	CU_ASSERT_EQUAL(q[4095], 0x5a);

	tok = ej.token;
	CU_ASSERT_EQUAL(t_complete(eng, &tok, 1, 0), 1);
	/* No held job names it any more. */
	CU_ASSERT_EQUAL(t_ioctl(eng, SYSHAX_IOC_ENGINE_MAP, &m), -EACCES);
	CU_ASSERT_EQUAL(t_wait(cl, &c, 1, 1, 1000000000), 1);
	munmap(p, BUF_SIZE);
	t_free(cl, src.handle);
	t_free(cl, dst.handle);
	t_free(cl, other.handle);
	/* The engine's mapping alone keeps src alive. */
	st = t_stats(mon);
	CU_ASSERT_EQUAL(st.pinned_bytes, st0.pinned_bytes + src.size);
	munmap(q, m.size);
	st = t_stats(mon);
	CU_ASSERT_EQUAL(st.pinned_bytes, st0.pinned_bytes);
	close(eng);
	close(cl);
	close(mon);
}

/* max_jobs_ctx: a partial submit, then -EAGAIN until completions are
 * reaped. */
static void t_queue_limit(void)
{
	struct syshax_engine_job ej[8];
	struct syshax_completion c[8];
	struct syshax_job jobs[6];
	unsigned long long tok[8];
	int cl = t_open(), eng = t_engine(), i, n;
	char saved[32];

	for (i = 0; i < 6; i++)
		t_nop(&jobs[i], i);
	CU_ASSERT_EQUAL_FATAL(t_param_get("max_jobs_ctx", saved, sizeof(saved)), 0);
	CU_ASSERT_EQUAL_FATAL(t_param_set("max_jobs_ctx", "4"), 0);
	CU_ASSERT_EQUAL(t_submit(cl, jobs, 6), 4);
	CU_ASSERT_EQUAL(t_submit(cl, jobs, 1), -EAGAIN);
	n = t_fetch(eng, ej, 8, 1000000000);
	CU_ASSERT_EQUAL_FATAL(n, 4);
	for (i = 0; i < n; i++)
		tok[i] = ej[i].token;
	CU_ASSERT_EQUAL(t_complete(eng, tok, n, 0), 4);
	/* Completed but not reaped still counts. */
	CU_ASSERT_EQUAL(t_submit(cl, jobs, 1), -EAGAIN);
	CU_ASSERT_EQUAL(t_wait(cl, c, 2, 2, 1000000000), 2);
	CU_ASSERT_EQUAL(t_submit(cl, jobs, 6), 2);
	CU_ASSERT_EQUAL(t_param_set("max_jobs_ctx", saved), 0);
	close(eng);
	close(cl);
}

/* Bad jobs are refused with the documented errno and nothing is queued. */
static void t_bad_jobs(void)
{
	struct syshax_buf_alloc_args b;
	struct syshax_stats_args st0, st;
	struct syshax_job job;
	int cl = t_open(), other = t_open();

	st0 = t_stats(cl);
	b = t_alloc(other);
	t_copy(&job, b.handle, b.handle, 1);
	CU_ASSERT_EQUAL(t_submit(cl, &job, 1), -EBADF);
	t_free(other, b.handle);
	b = t_alloc(cl);
	t_copy(&job, b.handle, b.handle, 1);
	job.refs[1].offset = ~0ULL - 10;
	CU_ASSERT_EQUAL(t_submit(cl, &job, 1), -ERANGE);
	t_copy(&job, b.handle, b.handle, 1);
	job.refs[1].access = SYSHAX_ACCESS_READ;
	CU_ASSERT_EQUAL(t_submit(cl, &job, 1), -EACCES);
	t_nop(&job, 1);
	job.op = SYSHAX_OP_MAX;
	CU_ASSERT_EQUAL(t_submit(cl, &job, 1), -EINVAL);
	t_nop(&job, 1);
	job.reserved = 1;
	CU_ASSERT_EQUAL(t_submit(cl, &job, 1), -EINVAL);
	t_nop(&job, 1);
	CU_ASSERT_EQUAL(t_submit(cl, &job, 0), -EINVAL);
	st = t_stats(cl);
	CU_ASSERT_EQUAL(st.queue_depth, st0.queue_depth);
	CU_ASSERT_EQUAL(st.jobs_submitted, st0.jobs_submitted);
	t_free(cl, b.handle);
	close(other);
	close(cl);
}

static volatile sig_atomic_t g_stop;

static void t_on_stop(int sig)
{
	(void)sig;
	g_stop = 1;
}

/* An engine process: serves jobs until SIGUSR1. */
static int t_engine_loop(int fd)
{
	struct sigaction sa = { .sa_handler = t_on_stop };
	struct syshax_engine_job ej[16];
	unsigned long long tok[16];
	int n, i;

	if (sigaction(SIGUSR1, &sa, NULL))
		return 1;
	while (!g_stop) {
		n = t_fetch(fd, ej, 16, 100000000);
		if (n == -ETIMEDOUT || n == -EINTR)
			continue;
		if (n <= 0)
			return 2;
		for (i = 0; i < n; i++)
			tok[i] = ej[i].token;
		if (t_complete(fd, tok, n, 0) != n)
			return 3;
	}
	return 0;
}

#define CLIENT_JOBS	5000

/* A client process: CLIENT_JOBS NOPs in batches, each completion once. */
static int t_client_loop(void)
{
	static unsigned char seen[CLIENT_JOBS];
	struct syshax_completion c[64];
	struct syshax_job jobs[64];
	unsigned int sent = 0, got = 0;
	int fd = open(DEV, O_RDWR), n, i;

	if (fd < 0)
		return 1;
	while (got < CLIENT_JOBS) {
		unsigned int nr = CLIENT_JOBS - sent < 64 ? CLIENT_JOBS - sent : 64;

		for (i = 0; i < (int)nr; i++)
			t_nop(&jobs[i], sent + i);
		n = nr ? t_submit(fd, jobs, nr) : 0;
		if (n < 0 && n != -EAGAIN)
			return 2;
		sent += n > 0 ? n : 0;
		n = t_wait(fd, c, 1, 64, 5000000000LL);
		if (n <= 0)
			return 3;
		for (i = 0; i < n; i++) {
			if (c[i].status || c[i].user_data >= CLIENT_JOBS ||
			    seen[c[i].user_data]++)
				return 4;
		}
		got += n;
	}
	return t_wait(fd, c, 1, 1, 0) == -ETIMEDOUT ? 0 : 5;
}

/* Two engines and four clients at once: every job completes once. */
static void t_two_engines(void)
{
	struct syshax_stats_args st0, st;
	int i, status, fd, mon = t_open();
	pid_t pids[6];

	st0 = t_stats(mon);
	for (i = 0; i < 6; i++) {
		if (i < 2)
			fd = t_engine();
		pids[i] = fork();
		CU_ASSERT_FATAL(pids[i] >= 0);
		if (pids[i] == 0)
			_exit(i < 2 ? t_engine_loop(fd) : t_client_loop());
		if (i < 2)
			close(fd);
	}
	for (i = 2; i < 6; i++) {
		CU_ASSERT_EQUAL(waitpid(pids[i], &status, 0), pids[i]);
		CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	for (i = 0; i < 2; i++) {
		CU_ASSERT_EQUAL(kill(pids[i], SIGUSR1), 0);
		CU_ASSERT_EQUAL(waitpid(pids[i], &status, 0), pids[i]);
		CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	st = t_stats(mon);
	CU_ASSERT_EQUAL(st.jobs_completed - st0.jobs_completed,
			4 * CLIENT_JOBS);
	CU_ASSERT_EQUAL(st.jobs_fetched - st0.jobs_fetched, 4 * CLIENT_JOBS);
	CU_ASSERT_EQUAL(st.engines, 0);
	close(mon);
}

/* A random engine: odd batch sizes, bad tokens, maps, errors, restarts. */
static int t_random_engine(unsigned int seed)
{
	struct sigaction sa = { .sa_handler = t_on_stop };
	struct syshax_engine_attach_args a = { .node = -1 };
	struct syshax_engine_map_args m;
	struct syshax_engine_job ej[16];
	unsigned long long tok[17];
	int fd = -1, n, i, k, ret;
	void *p;

	if (sigaction(SIGUSR1, &sa, NULL))
		return 1;
	while (!g_stop) {
		if (fd < 0 || rand_r(&seed) % 64 == 0) {
			/* Held jobs of the old fd end with -EPIPE. */
			if (fd >= 0)
				close(fd);
			fd = open(DEV, O_RDWR);
			if (fd < 0 || t_ioctl(fd, SYSHAX_IOC_ENGINE_ATTACH, &a))
				return 2;
		}
		n = t_fetch(fd, ej, 1 + rand_r(&seed) % 16, 20000000);
		if (n == -ETIMEDOUT || n == -EINTR)
			continue;
		if (n <= 0)
			return 3;
		for (i = 0; i < n; i++) {
			tok[i + 1] = ej[i].token;
			if (!ej[i].job.nr_refs || rand_r(&seed) % 4)
				continue;
			m = (struct syshax_engine_map_args){
				.id = ej[i].job.refs[0].buf };
			if (t_ioctl(fd, SYSHAX_IOC_ENGINE_MAP, &m))
				return 4;
			p = mmap(NULL, m.size, PROT_READ, MAP_SHARED, fd,
				 m.mmap_offset);
			if (p == MAP_FAILED)
				return 5;
			munmap(p, m.size);
		}
		/* A bad token first stops the call at once. */
		tok[0] = ~0ULL;
		if (t_complete(fd, tok, 1, 0) != -ENOENT)
			return 6;
		for (i = 0; i < n; i += k) {
			k = 1 + rand_r(&seed) % (n - i);
			ret = t_complete(fd, tok + 1 + i, k,
					 rand_r(&seed) % 8 ? 0 : -EIO);
			if (ret != k)
				return 7;
		}
	}
	close(fd);
	return 0;
}

static int t_errno_ok(int err)
{
	return err == -EINVAL || err == -EBADF || err == -ERANGE ||
	       err == -EACCES || err == -EAGAIN;
}

/* A random client: valid and bad jobs, freed handles, abrupt closes. */
static int t_random_client(unsigned int seed)
{
	struct syshax_buf_alloc_args b[2];
	struct syshax_buf_free_args f = { 0 };
	struct syshax_completion c[32];
	struct syshax_job jobs[32];
	int fd, round, step, n, i;

	for (round = 0; round < 40; round++) {
		fd = open(DEV, O_RDWR);
		if (fd < 0)
			return 1;
		for (i = 0; i < 2; i++) {
			b[i] = (struct syshax_buf_alloc_args){
				.size = BUF_SIZE, .node = -1,
				.flags = SYSHAX_BUF_ALLOW_SMALL |
					 SYSHAX_BUF_ALLOW_REMOTE };
			if (t_ioctl(fd, SYSHAX_IOC_BUF_ALLOC, &b[i]))
				return 2;
		}
		for (step = 0; step < 20; step++) {
			n = 1 + rand_r(&seed) % 32;
			for (i = 0; i < n; i++) {
				if (rand_r(&seed) % 3) {
					t_nop(&jobs[i], i);
					continue;
				}
				t_copy(&jobs[i], b[0].handle, b[1].handle, i);
				jobs[i].refs[0].offset = rand_r(&seed) % BUF_SIZE;
				if (rand_r(&seed) % 16 == 0)
					jobs[i].refs[1].access = SYSHAX_ACCESS_READ;
			}
			n = t_submit(fd, jobs, n);
			if (n < 0 && !t_errno_ok(n))
				return 3;
			/* The jobs keep the buffer; the handle may go. */
			f.handle = b[0].handle;
			if (step == 10 && t_ioctl(fd, SYSHAX_IOC_BUF_FREE, &f))
				return 4;
			n = t_wait(fd, c, rand_r(&seed) % 4, 32,
				   rand_r(&seed) % 2 ? 0 : 5000000);
			if (n < 0 && n != -ETIMEDOUT)
				return 5;
			for (i = 0; i < n; i++)
				if (c[i].status && c[i].status != -EIO &&
				    c[i].status != -EPIPE)
					return 6;
		}
		/* Closed with jobs queued, held and unreaped. */
		close(fd);
	}
	return 0;
}

/* Random clients and a random engine together; then nothing is left. */
static void t_random(void)
{
	struct syshax_stats_args st0, st;
	int i, status, mon = t_open();
	pid_t pids[4];

	st0 = t_stats(mon);
	for (i = 0; i < 4; i++) {
		pids[i] = fork();
		CU_ASSERT_FATAL(pids[i] >= 0);
		if (pids[i] == 0)
			_exit(i ? t_random_client(1000 + i) :
				  t_random_engine(7));
	}
	for (i = 1; i < 4; i++) {
		CU_ASSERT_EQUAL(waitpid(pids[i], &status, 0), pids[i]);
		CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	CU_ASSERT_EQUAL(kill(pids[0], SIGUSR1), 0);
	CU_ASSERT_EQUAL(waitpid(pids[0], &status, 0), pids[0]);
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	st = t_stats(mon);
	CU_ASSERT_EQUAL(st.queue_depth, 0);
	CU_ASSERT_EQUAL(st.inflight, 0);
	CU_ASSERT_EQUAL(st.engines, 0);
	CU_ASSERT_EQUAL(st.pinned_bytes, st0.pinned_bytes);
	CU_ASSERT(st.jobs_cancelled > st0.jobs_cancelled);
	CU_ASSERT(st.jobs_failed > st0.jobs_failed);
	printf("\n  %llu jobs, %llu cancelled, %llu failed ",
	       (unsigned long long)(st.jobs_submitted - st0.jobs_submitted),
	       (unsigned long long)(st.jobs_cancelled - st0.jobs_cancelled),
	       (unsigned long long)(st.jobs_failed - st0.jobs_failed));
	close(mon);
}

/* Reads a job counter from sysfs; -1 when it cannot. */
static long long t_sysfs_jobs(const char *name)
{
	char path[128];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/misc/syshax/jobs/%s", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* sysfs shows the STATS counters. */
static void t_sysfs(void)
{
	struct syshax_stats_args st;
	struct syshax_job job;
	unsigned long long sum = 0, v;
	int cl = t_open(), i;
	long long sub0;
	FILE *f;

	sub0 = t_sysfs_jobs("submitted");
	CU_ASSERT_FATAL(sub0 >= 0);
	t_nop(&job, 1);
	CU_ASSERT_EQUAL(t_submit(cl, &job, 1), 1);
	CU_ASSERT_EQUAL(t_sysfs_jobs("submitted"), sub0 + 1);
	st = t_stats(cl);
	CU_ASSERT_EQUAL(t_sysfs_jobs("queue_depth"), (long long)st.queue_depth);
	CU_ASSERT_EQUAL(t_sysfs_jobs("completed"), (long long)st.jobs_completed);
	CU_ASSERT_EQUAL(t_sysfs_jobs("cancelled"), (long long)st.jobs_cancelled);
	CU_ASSERT_EQUAL(t_sysfs_jobs("engines"), 0);
	f = fopen("/sys/class/misc/syshax/jobs/lat_hist", "r");
	CU_ASSERT_FATAL(f != NULL);
	for (i = 0; fscanf(f, "%llu", &v) == 1; i++)
		sum += v;
	fclose(f);
	CU_ASSERT_EQUAL(i, SYSHAX_LAT_BUCKETS);
	CU_ASSERT_EQUAL(sum, st.jobs_completed + st.jobs_failed);
	close(cl);
}

int main(void)
{
	static const struct {
		const char *name;
		void (*fn)(void);
	} tests[] = {
		{ "version has jobs", t_version },
		{ "engine attach permission", t_attach_permission },
		{ "engine calls need attach", t_engine_calls_need_attach },
		{ "fetch timeout", t_fetch_timeout },
		{ "wait timeout", t_wait_timeout },
		{ "signals end waits with -EINTR", t_eintr },
		{ "epoll, also added before attach", t_epoll },
		{ "complete with a bad token", t_complete_bad_token },
		{ "bad jobs queue nothing", t_bad_jobs },
		{ "engine close: -EPIPE, queued wait", t_engine_close_epipe },
		{ "client close with queued jobs", t_client_close_queued },
		{ "client close with held jobs", t_client_close_inflight },
		{ "engine map", t_engine_map },
		{ "queue limit", t_queue_limit },
		{ "two engines, four clients", t_two_engines },
		{ "sysfs job counters", t_sysfs },
		{ "random clients and engine", t_random },
	};
	CU_pSuite s;
	unsigned int i, failed;

	if (access(DEV, R_OK | W_OK)) {
		printf("SKIP: jobs_test: no %s (run it in the VM: make vm-check)\n",
		       DEV);
		return 77;
	}
	if (CU_initialize_registry() != CUE_SUCCESS)
		return 1;
	s = CU_add_suite("kmod jobs", NULL, NULL);
	for (i = 0; s && i < sizeof(tests) / sizeof(tests[0]); i++)
		if (!CU_add_test(s, tests[i].name, tests[i].fn))
			s = NULL;
	if (!s) {
		CU_cleanup_registry();
		return 1;
	}
	CU_basic_set_mode(CU_BRM_VERBOSE);
	CU_basic_run_tests();
	failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
	CU_cleanup_registry();
	return failed ? 1 : 0;
}
