// SPDX-License-Identifier: MIT
/*
 * Module-only job broker tests with raw ioctls on /dev/syshax: engine
 * permissions, fetch and wait timeouts, signals, epoll, bad tokens and bad
 * jobs, ENGINE_MAP, queue limits, sysfs, and the lifetime rules (engine
 * close -> -EPIPE, client close -> cancelled, refs released, pinned bytes
 * back). The shared conformance suite covers the rest through
 * libsyshax-rt; jobs_stress runs many processes at once. Runs as root in
 * the test VM; exits 77 without /dev/syshax.
 */
#include <grp.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "t_jobs.h"

#define NOBODY		65534

static void t_version(void)
{
	struct syshax_version_args v;
	int fd = t_fd();

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
	int fd = t_fd(), status;
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

	CU_ASSERT_EQUAL_FATAL(t_param_get("engine_gid", saved, sizeof(saved)),
			      0);
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
	fd = t_fd();
	CU_ASSERT_EQUAL(t_ioctl(fd, SYSHAX_IOC_ENGINE_ATTACH, &a), -EINVAL);
	close(fd);
}

static void t_engine_calls_need_attach(void)
{
	struct syshax_engine_job j;
	int fd = t_fd();

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
	int fd = t_fd();
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
	int cl = t_fd(), eng = t_engine();
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
	int cl = t_fd(), eng = t_fd();
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
	int cl = t_fd(), eng = t_engine();

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
	int cl = t_fd(), eng = t_engine(), i, n, epipe = 0, ok = 0;
	double t0;

	st0 = t_stats(cl);
	src = t_buf(cl);
	dst = t_buf(cl);
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
	CU_ASSERT_EQUAL(t_free(cl, src.handle), 0);
	CU_ASSERT_EQUAL(t_free(cl, dst.handle), 0);
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
	int mon = t_fd(), cl = t_fd(), i;

	st0 = t_stats(mon);
	src = t_buf(cl);
	dst = t_buf(cl);
	for (i = 0; i < 6; i++)
		t_copy(&jobs[i], src.handle, dst.handle, i);
	CU_ASSERT_EQUAL(t_submit(cl, jobs, 6), 6);
	/* Freed handles: only the jobs hold the buffers now. */
	CU_ASSERT_EQUAL(t_free(cl, src.handle), 0);
	CU_ASSERT_EQUAL(t_free(cl, dst.handle), 0);
	st = t_stats(mon);
	CU_ASSERT(st.pinned_bytes >= st0.pinned_bytes + 2 * T_BUF_SIZE);
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
	int mon = t_fd(), cl = t_fd(), eng = t_engine();

	st0 = t_stats(mon);
	src = t_buf(cl);
	dst = t_buf(cl);
	t_copy(&jobs[0], src.handle, dst.handle, 1);
	t_copy(&jobs[1], src.handle, dst.handle, 2);
	CU_ASSERT_EQUAL_FATAL(t_submit(cl, jobs, 2), 2);
	CU_ASSERT_EQUAL_FATAL(t_fetch(eng, ej, 2, 1000000000), 2);
	close(cl);
	st = t_stats(mon);
	CU_ASSERT(st.pinned_bytes >= st0.pinned_bytes + 2 * T_BUF_SIZE);
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

/* A COPY job from src to dst that the engine holds; src's first page is
 * fill (mapped at p). */
struct held_copy {
	struct syshax_buf_alloc_args src, dst;
	struct syshax_engine_job ej;
	unsigned char *p;
};

static void hold_copy(int cl, int eng, unsigned char fill, uint64_t tag,
		      struct held_copy *h)
{
	struct syshax_job job;

	h->src = t_buf(cl);
	h->dst = t_buf(cl);
	h->p = mmap(NULL, T_BUF_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, cl,
		    h->src.mmap_offset);
	CU_ASSERT_FATAL(h->p != MAP_FAILED);
	memset(h->p, fill, 4096);
	t_copy(&job, h->src.handle, h->dst.handle, tag);
	CU_ASSERT_EQUAL_FATAL(t_submit(cl, &job, 1), 1);
	CU_ASSERT_EQUAL_FATAL(t_fetch(eng, &h->ej, 1, 1000000000), 1);
}

/* ENGINE_MAP: only buffers of held jobs; the mapping shows the client's
 * bytes; the engine's handle goes when the jobs complete. */
static void t_engine_map(void)
{
	struct syshax_buf_alloc_args other;
	struct syshax_engine_map_args m = { 0 };
	struct syshax_stats_args st0, st;
	struct syshax_completion c;
	struct held_copy h;
	unsigned long long tok;
	int mon = t_fd(), cl = t_fd(), eng = t_engine();
	unsigned char *q;

	st0 = t_stats(mon);
	hold_copy(cl, eng, 0x5a, 7, &h);
	other = t_buf(cl);

	m.id = other.id;
	CU_ASSERT_EQUAL(t_ioctl(eng, SYSHAX_IOC_ENGINE_MAP, &m), -EACCES);
	m.id = 0x3fffff;
	CU_ASSERT_EQUAL(t_ioctl(eng, SYSHAX_IOC_ENGINE_MAP, &m), -ENOENT);
	m.id = h.src.id;
	CU_ASSERT_EQUAL_FATAL(t_ioctl(eng, SYSHAX_IOC_ENGINE_MAP, &m), 0);
	CU_ASSERT_EQUAL(m.size, h.src.size);
	q = mmap(NULL, m.size, PROT_READ, MAP_SHARED, eng, m.mmap_offset);
	CU_ASSERT_FATAL(q != MAP_FAILED);
	CU_ASSERT_EQUAL(q[0], 0x5a);
	CU_ASSERT_EQUAL(q[4095], 0x5a);

	tok = h.ej.token;
	CU_ASSERT_EQUAL(t_complete(eng, &tok, 1, 0), 1);
	/* No held job names it any more. */
	CU_ASSERT_EQUAL(t_ioctl(eng, SYSHAX_IOC_ENGINE_MAP, &m), -EACCES);
	CU_ASSERT_EQUAL(t_wait(cl, &c, 1, 1, 1000000000), 1);
	munmap(h.p, T_BUF_SIZE);
	CU_ASSERT_EQUAL(t_free(cl, h.src.handle), 0);
	CU_ASSERT_EQUAL(t_free(cl, h.dst.handle), 0);
	CU_ASSERT_EQUAL(t_free(cl, other.handle), 0);
	/* The engine's mapping alone keeps src alive. */
	st = t_stats(mon);
	CU_ASSERT_EQUAL(st.pinned_bytes, st0.pinned_bytes + h.src.size);
	munmap(q, m.size);
	st = t_stats(mon);
	CU_ASSERT_EQUAL(st.pinned_bytes, st0.pinned_bytes);
	close(eng);
	close(cl);
	close(mon);
}

/* A freed handle is not reused at once: SUBMIT naming it fails. */
static void t_stale_handle_submit(void)
{
	struct syshax_buf_alloc_args a, b, c;
	struct syshax_job job;
	int cl = t_fd();
	unsigned long long queued = t_stats(cl).jobs_submitted;

	a = t_buf(cl);
	c = t_buf(cl);
	CU_ASSERT_EQUAL(t_free(cl, a.handle), 0);
	b = t_buf(cl);
	CU_ASSERT_NOT_EQUAL(b.handle, a.handle);
	t_copy(&job, a.handle, c.handle, 1);
	CU_ASSERT_EQUAL(t_submit(cl, &job, 1), -EBADF);
	t_copy(&job, c.handle, a.handle, 1);
	CU_ASSERT_EQUAL(t_submit(cl, &job, 1), -EBADF);
	CU_ASSERT_EQUAL(t_stats(cl).jobs_submitted, queued);
	CU_ASSERT_EQUAL(t_free(cl, b.handle), 0);
	CU_ASSERT_EQUAL(t_free(cl, c.handle), 0);
	close(cl);
}

/*
 * ENGINE_MAP after the engine freed its own handle for the buffer: a new
 * offset, and the old one maps nothing (not the engine's next buffer).
 */
static void t_engine_map_stale(void)
{
	struct syshax_buf_alloc_args own;
	struct syshax_engine_map_args m = { 0 }, m2 = { 0 };
	struct syshax_stats_args st0;
	struct syshax_completion c;
	struct held_copy h;
	unsigned long long tok;
	int mon = t_fd(), cl = t_fd(), eng = t_engine();
	unsigned char *q;

	st0 = t_stats(mon);
	hold_copy(cl, eng, 0x3c, 9, &h);

	m.id = h.src.id;
	CU_ASSERT_EQUAL_FATAL(t_ioctl(eng, SYSHAX_IOC_ENGINE_MAP, &m), 0);
	/* The engine frees the handle behind the offset, allocates its own. */
	CU_ASSERT_EQUAL(t_free(eng, (uint32_t)(m.mmap_offset >> 40)), 0);
	own = t_buf(eng);
	CU_ASSERT_NOT_EQUAL(own.mmap_offset, m.mmap_offset);
	q = mmap(NULL, m.size, PROT_READ, MAP_SHARED, eng, m.mmap_offset);
	CU_ASSERT_EQUAL(q, MAP_FAILED);
	CU_ASSERT_EQUAL(errno, EINVAL);
	if (q != MAP_FAILED)
		munmap(q, m.size);
	/* Mapping the buffer again gives a live offset to the client's bytes. */
	m2.id = h.src.id;
	CU_ASSERT_EQUAL_FATAL(t_ioctl(eng, SYSHAX_IOC_ENGINE_MAP, &m2), 0);
	CU_ASSERT_NOT_EQUAL(m2.mmap_offset, m.mmap_offset);
	CU_ASSERT_NOT_EQUAL(m2.mmap_offset, own.mmap_offset);
	q = mmap(NULL, m2.size, PROT_READ, MAP_SHARED, eng, m2.mmap_offset);
	CU_ASSERT_FATAL(q != MAP_FAILED);
	CU_ASSERT_EQUAL(q[0], 0x3c);
	CU_ASSERT_EQUAL(q[4095], 0x3c);
	munmap(q, m2.size);

	tok = h.ej.token;
	CU_ASSERT_EQUAL(t_complete(eng, &tok, 1, 0), 1);
	CU_ASSERT_EQUAL(t_wait(cl, &c, 1, 1, 1000000000), 1);
	/* The map's handle went with the job; the engine's own one stays. */
	CU_ASSERT_EQUAL(t_free(eng, (uint32_t)(m2.mmap_offset >> 40)), -EBADF);
	CU_ASSERT_EQUAL(t_free(eng, own.handle), 0);
	munmap(h.p, T_BUF_SIZE);
	CU_ASSERT_EQUAL(t_free(cl, h.src.handle), 0);
	CU_ASSERT_EQUAL(t_free(cl, h.dst.handle), 0);
	CU_ASSERT_EQUAL(t_stats(mon).pinned_bytes, st0.pinned_bytes);
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
	int cl = t_fd(), eng = t_engine(), i, n;
	char saved[32];

	for (i = 0; i < 6; i++)
		t_nop(&jobs[i], i);
	CU_ASSERT_EQUAL_FATAL(t_param_get("max_jobs_ctx", saved, sizeof(saved)),
			      0);
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
	int cl = t_fd(), other = t_fd();

	st0 = t_stats(cl);
	b = t_buf(other);
	t_copy(&job, b.handle, b.handle, 1);
	CU_ASSERT_EQUAL(t_submit(cl, &job, 1), -EBADF);
	CU_ASSERT_EQUAL(t_free(other, b.handle), 0);
	b = t_buf(cl);
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
	CU_ASSERT_EQUAL(t_free(cl, b.handle), 0);
	close(other);
	close(cl);
}

/* Bad user pointers: FETCH and WAIT return -EFAULT and lose nothing;
 * what could not be copied stays queued (or ready) in order. */
static void t_faults(void)
{
	struct syshax_stats_args st0, st;
	struct syshax_engine_job *ej;
	struct syshax_completion c[2];
	struct syshax_wait_args w = { .max = 1, .min = 1 };
	struct syshax_job jobs[2];
	unsigned long long tok[2];
	int cl = t_fd(), eng = t_engine();
	long page = sysconf(_SC_PAGESIZE);
	char *mem;

	t_nop(&jobs[0], 10);
	t_nop(&jobs[1], 11);
	st0 = t_stats(cl);
	CU_ASSERT_EQUAL_FATAL(t_submit(cl, jobs, 2), 2);
	CU_ASSERT_EQUAL(t_fetch(eng, (void *)8, 2, 0), -EFAULT);
	st = t_stats(cl);
	CU_ASSERT_EQUAL(st.queue_depth, st0.queue_depth + 2);
	CU_ASSERT_EQUAL(st.jobs_fetched, st0.jobs_fetched);
	/* Room for one job before an unmapped page: one fetched. */
	mem = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CU_ASSERT_FATAL(mem != MAP_FAILED);
	munmap(mem + page, page);
	ej = (struct syshax_engine_job *)(mem + page - sizeof(*ej));
	CU_ASSERT_EQUAL_FATAL(t_fetch(eng, ej, 2, 0), 1);
	CU_ASSERT_EQUAL(ej->job.user_data, 10);
	tok[0] = ej->token;
	CU_ASSERT_EQUAL_FATAL(t_fetch(eng, ej, 1, 0), 1);
	CU_ASSERT_EQUAL(ej->job.user_data, 11);
	tok[1] = ej->token;
	CU_ASSERT_EQUAL(t_complete(eng, tok, 2, 0), 2);

	w.cpls = 8;
	w.timeout_ns = 1000000000;
	CU_ASSERT_EQUAL(t_count(cl, SYSHAX_IOC_WAIT, &w), -EFAULT);
	CU_ASSERT_EQUAL(t_wait(cl, c, 2, 2, 1000000000), 2);
	CU_ASSERT_EQUAL(c[0].user_data + c[1].user_data, 21);
	munmap(mem, page);
	close(eng);
	close(cl);
}

/* sysfs shows the STATS counters. */
static void t_sysfs_counters(void)
{
	struct syshax_stats_args st;
	struct syshax_job job;
	unsigned long long sum = 0, v;
	int cl = t_fd(), i;
	long long sub0;
	FILE *f;

	sub0 = t_sysfs("jobs/submitted");
	CU_ASSERT_FATAL(sub0 >= 0);
	t_nop(&job, 1);
	CU_ASSERT_EQUAL(t_submit(cl, &job, 1), 1);
	CU_ASSERT_EQUAL(t_sysfs("jobs/submitted"), sub0 + 1);
	st = t_stats(cl);
	CU_ASSERT_EQUAL(t_sysfs("jobs/queue_depth"), (long long)st.queue_depth);
	CU_ASSERT_EQUAL(t_sysfs("jobs/completed"),
			(long long)st.jobs_completed);
	CU_ASSERT_EQUAL(t_sysfs("jobs/cancelled"),
			(long long)st.jobs_cancelled);
	CU_ASSERT_EQUAL(t_sysfs("jobs/engines"), 0);
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
	static const struct t_test tests[] = {
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
		{ "engine map after the engine freed it", t_engine_map_stale },
		{ "stale handle in a job", t_stale_handle_submit },
		{ "queue limit", t_queue_limit },
		{ "sysfs job counters", t_sysfs_counters },
		{ "bad pointers lose no job", t_faults },
	};

	return T_MAIN("kmod_jobs", "kmod jobs", NULL, NULL, tests);
}
