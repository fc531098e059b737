// SPDX-License-Identifier: MIT
/*
 * Lifetimes: kill -9 of a client with jobs in flight leaks nothing and the
 * engine keeps serving; kill -9 of the engine completes the jobs it took
 * with -EPIPE within 1 s and the next engine takes the queued ones, and
 * those still in the dead engine's ring.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t.h"

/* Copies big enough that an engine holds a batch for a while. */
#define BIG	(8u << 20)
#define NJOBS	128

static bool has_inflight(const struct syshax_stats_args *st, void *arg)
{
	(void)arg;
	return st->inflight > 0;
}

static bool none_inflight(const struct syshax_stats_args *st, void *arg)
{
	(void)arg;
	return !st->inflight;
}

static int fill(struct syshax *sh, struct syshax_buffer *src,
		struct syshax_buffer *dst)
{
	int ret;

	ret = syshax_buf_alloc(sh, BIG, -1, SYSHAX_BUF_ALLOW_SMALL, src);
	if (!ret)
		ret = syshax_buf_alloc(sh, BIG, -1, SYSHAX_BUF_ALLOW_SMALL, dst);
	if (!ret)
		ret = syshax_buf_map(sh, src);
	if (!ret)
		memset(src->addr, 0x3c, BIG);
	return ret;
}

static int submit_copies(struct syshax *sh, const struct syshax_buffer *src,
			 const struct syshax_buffer *dst, unsigned int n)
{
	struct syshax_job job;
	unsigned int i;

	for (i = 0; i < n; i++) {
		int r;

		syshax_job_copy(&job, src, 0, dst, 0, BIG, i);
		r = syshax_submit(sh, &job, 1);
		if (r == -EAGAIN)
			break;
		if (r != 1)
			return r;
	}
	return (int)i;
}

/* The client: buffers, a queue of copies, then it waits to be killed. */
static int victim(int ready_fd)
{
	struct syshax_buffer src, dst;
	struct syshax *sh;
	int n;

	if (syshax_open(&sh, NULL) || fill(sh, &src, &dst))
		return 1;
	n = submit_copies(sh, &src, &dst, NJOBS);
	if (n <= 0 || write(ready_fd, &n, sizeof(n)) != sizeof(n))
		return 1;
	pause();
	return 0;
}

static void t_kill_client(void)
{
	struct syshax_stats_args st;
	struct syshax *sh;
	struct syshax_completion c;
	struct syshax_job job;
	int fds[2], n = 0, status;
	pid_t pid;

	CU_ASSERT_EQUAL(t_stats_until(t_no_pinned, NULL, 5 * T_SEC), 0);
	CU_ASSERT_FATAL(pipe(fds) == 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		_exit(victim(fds[1]));
	}
	close(fds[1]);
	CU_ASSERT_EQUAL(read(fds[0], &n, sizeof(n)), (ssize_t)sizeof(n));
	close(fds[0]);
	CU_ASSERT(n > 0);
	CU_ASSERT_EQUAL(t_stats_until(has_inflight, NULL, 5 * T_SEC), 0);
	CU_ASSERT_EQUAL(t_stats(&st), 0);
	CU_ASSERT(st.pinned_bytes >= 2ull * BIG);
	printf("\n  killing a client with %llu queued, %llu in flight ",
	       (unsigned long long)st.queue_depth,
	       (unsigned long long)st.inflight);
	CU_ASSERT_EQUAL(kill(pid, SIGKILL), 0);
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	CU_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

	/* Queued jobs dropped, in-flight ones finished into nothing, then
	 * every buffer byte released. */
	CU_ASSERT_EQUAL(t_stats_until(t_no_jobs, NULL, 30 * T_SEC), 0);
	CU_ASSERT_EQUAL(t_stats_until(t_no_pinned, NULL, 5 * T_SEC), 0);
	CU_ASSERT_EQUAL(t_stats(&st), 0);
	CU_ASSERT_EQUAL(st.pinned_bytes, 0);
	CU_ASSERT(st.engines >= 1);

	/* The engine still serves others. */
	sh = t_open();
	CU_ASSERT_FATAL(sh != NULL);
	syshax_job_init(&job, SYSHAX_OP_NOP, 99);
	CU_ASSERT_EQUAL(syshax_submit(sh, &job, 1), 1);
	CU_ASSERT_EQUAL(syshax_wait(sh, &c, 1, 1, 5 * T_SEC), 1);
	CU_ASSERT_EQUAL(c.user_data, 99);
	CU_ASSERT_EQUAL(c.status, 0);
	syshax_close(sh);
}

static void t_kill_engine(void)
{
	struct syshax_buffer src, dst;
	struct syshax_stats_args st;
	struct syshax_completion c;
	struct t_tally tally = { 0 };
	unsigned char seen[NJOBS] = { 0 };
	struct syshax *sh = t_open();
	uint64_t held, t0, dt;
	unsigned int got, i;
	int n, r, status;

	CU_ASSERT_FATAL(sh != NULL);
	CU_ASSERT_EQUAL_FATAL(fill(sh, &src, &dst), 0);
	n = submit_copies(sh, &src, &dst, NJOBS);
	CU_ASSERT_FATAL(n > 0);
	CU_ASSERT_EQUAL_FATAL(t_stats_until(has_inflight, NULL, 5 * T_SEC), 0);
	CU_ASSERT_EQUAL(t_stats(&st), 0);
	held = st.inflight;

	t0 = t_now_ns();
	CU_ASSERT_EQUAL_FATAL(t_engine_stop(SIGKILL, &status), 0);
	CU_ASSERT(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	/* What the engine took comes back -EPIPE within 1 s of the kill;
	 * what its ring still held is queued again. */
	CU_ASSERT_EQUAL(t_stats_until(none_inflight, NULL, T_SEC), 0);
	dt = t_now_ns() - t0;
	/* Those, and anything it finished just before the kill. */
	r = t_reap(sh, 0, (unsigned int)n, seen, (unsigned int)n,
		   200 * T_MS, &tally);
	CU_ASSERT(r >= 0);
	got = r > 0 ? (unsigned int)r : 0;
	/* Only what it had taken from its ring, maybe none yet (the exact
	 * count: t_kill_engine_beside). */
	CU_ASSERT(tally.epipe <= held);
	CU_ASSERT_EQUAL(tally.other, 0);
	CU_ASSERT_EQUAL(t_stats(&st), 0);
	printf("\n  engine held %llu: %u -EPIPE, %u done, in %.1f ms; %llu "
	       "queued ", (unsigned long long)held, tally.epipe, tally.ok,
	       (double)dt / 1e6, (unsigned long long)st.queue_depth);
	CU_ASSERT_EQUAL(st.inflight, 0);
	CU_ASSERT_EQUAL(st.engines, 0);
	/* The queued ones wait for an engine. */
	CU_ASSERT_EQUAL(st.queue_depth, (uint64_t)n - got);
	CU_ASSERT_EQUAL(syshax_wait(sh, &c, 1, 1, 100 * T_MS), -ETIMEDOUT);

	CU_ASSERT_EQUAL_FATAL(t_engine_start(), 0);
	r = t_reap(sh, 0, (unsigned int)n, seen, (unsigned int)n - got,
		   120 * T_SEC, &tally);
	CU_ASSERT_EQUAL(r, n - (int)got);
	CU_ASSERT_EQUAL(tally.ok + tally.epipe, (unsigned int)n);
	CU_ASSERT_EQUAL(tally.other, 0);
	for (i = 0; i < (unsigned int)n; i++)
		if (seen[i] != 1)
			break;
	CU_ASSERT_EQUAL(i, (unsigned int)n);
	CU_ASSERT_EQUAL(syshax_buf_free(sh, &src), 0);
	CU_ASSERT_EQUAL(syshax_buf_free(sh, &dst), 0);
	syshax_close(sh);
	CU_ASSERT_EQUAL(t_stats_until(t_no_pinned, NULL, 5 * T_SEC), 0);
}

#define BESIDE_JOBS	64
#define BESIDE_HELD	4

/* An engine of its own: attaches, then on "go" takes exactly BESIDE_HELD
 * jobs, says so, and waits to be killed. */
static int held_engine(int ready_fd, int go_fd)
{
	struct syshax_engine_job ej[BESIDE_HELD];
	struct syshax *en;
	int got = 0, n;
	char go;

	if (syshax_open(&en, NULL) || syshax_engine_attach(en, -1) ||
	    write(ready_fd, &got, sizeof(got)) != sizeof(got) ||
	    read(go_fd, &go, 1) != 1)
		return 1;
	while (got < BESIDE_HELD) {
		n = syshax_engine_fetch(en, ej + got,
					(unsigned int)(BESIDE_HELD - got),
					5 * T_SEC);
		if (n <= 0)
			return 1;
		got += n;
	}
	if (write(ready_fd, &got, sizeof(got)) != sizeof(got))
		return 1;
	pause();
	return 0;
}

static bool all_in(const struct syshax_stats_args *st, void *arg)
{
	(void)arg;
	return st->queue_depth + st->inflight == BESIDE_JOBS;
}

/*
 * kill -9 of an engine that took 4 of 64 jobs, with a second engine
 * attached: the 4 it took complete -EPIPE, the other 60 (on the shared
 * rings: given to its out ring, never taken) go to the second engine.
 * Before, on the rings, all 64 completed -EPIPE and none was requeued.
 */
static void t_kill_engine_beside(void)
{
	struct syshax_engine_job ej[BESIDE_JOBS];
	struct syshax_engine_cpl cpl[BESIDE_JOBS];
	struct syshax_job jobs[BESIDE_JOBS];
	unsigned char seen[BESIDE_JOBS] = { 0 };
	struct syshax_stats_args st;
	struct t_tally tally = { 0 };
	int up[2], go[2], status, n, i, got;
	unsigned int served = 0;
	struct syshax *sh, *e2;
	uint64_t end, held;
	pid_t pid;

	CU_ASSERT_EQUAL_FATAL(t_engine_stop(SIGTERM, &status), 0);
	CU_ASSERT_EQUAL_FATAL(pipe(up), 0);
	CU_ASSERT_EQUAL_FATAL(pipe(go), 0);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0)
		_exit(held_engine(up[1], go[0]));
	CU_ASSERT_EQUAL_FATAL(read(up[0], &got, sizeof(got)), sizeof(got));
	sh = t_open();
	CU_ASSERT_FATAL(sh != NULL);
	for (i = 0; i < BESIDE_JOBS; i++)
		syshax_job_init(&jobs[i], SYSHAX_OP_NOP, (uint64_t)i);
	CU_ASSERT_EQUAL(syshax_submit(sh, jobs, BESIDE_JOBS), BESIDE_JOBS);
	CU_ASSERT_EQUAL(t_stats_until(all_in, NULL, 5 * T_SEC), 0);
	CU_ASSERT_EQUAL(write(go[1], "g", 1), 1);
	CU_ASSERT_EQUAL(read(up[0], &got, sizeof(got)), sizeof(got));
	CU_ASSERT_EQUAL(got, BESIDE_HELD);
	CU_ASSERT_EQUAL(t_stats(&st), 0);
	held = st.inflight;	/* rings: all 64, else the 4 fetched */

	e2 = t_open();
	CU_ASSERT_FATAL(e2 != NULL);
	CU_ASSERT_EQUAL_FATAL(syshax_engine_attach(e2, -1), 0);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	end = t_now_ns() + 5 * T_SEC;
	while (served < BESIDE_JOBS - BESIDE_HELD && t_now_ns() < end) {
		n = syshax_engine_fetch(e2, ej, BESIDE_JOBS, 100 * T_MS);
		if (n <= 0)
			continue;
		memset(cpl, 0, sizeof(cpl));
		for (i = 0; i < n; i++)
			cpl[i].token = ej[i].token;
		CU_ASSERT_EQUAL(syshax_engine_complete(e2, cpl,
						       (unsigned int)n), n);
		served += (unsigned int)n;
	}
	n = t_reap(sh, 0, BESIDE_JOBS, seen, BESIDE_JOBS, 2 * T_SEC, &tally);
	printf("\n  first engine held %llu, took %d: %u -EPIPE, %u done by "
	       "the second ", (unsigned long long)held, BESIDE_HELD,
	       tally.epipe, served);
	CU_ASSERT_EQUAL(n, BESIDE_JOBS);
	CU_ASSERT_EQUAL(tally.epipe, BESIDE_HELD);
	CU_ASSERT_EQUAL(tally.ok, BESIDE_JOBS - BESIDE_HELD);
	CU_ASSERT_EQUAL(served, BESIDE_JOBS - BESIDE_HELD);
	CU_ASSERT_EQUAL(tally.other, 0);
	for (i = 0; i < BESIDE_JOBS; i++)
		CU_ASSERT_EQUAL(seen[i], 1);
	CU_ASSERT_EQUAL(t_stats_until(t_no_jobs, NULL, 2 * T_SEC), 0);
	syshax_close(e2);
	syshax_close(sh);
	close(up[0]);
	close(up[1]);
	close(go[0]);
	close(go[1]);
	CU_ASSERT_EQUAL(t_engine_start(), 0);
}

int t_add_kill(void)
{
	CU_pSuite s = CU_add_suite("lifetimes", NULL, NULL);

	if (!s || !CU_add_test(s, "kill -9 of a client", t_kill_client) ||
	    !CU_add_test(s, "kill -9 of the engine", t_kill_engine) ||
	    !CU_add_test(s, "kill -9 of an engine beside another",
			 t_kill_engine_beside))
		return -1;
	return 0;
}
