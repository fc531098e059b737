// SPDX-License-Identifier: MIT
/*
 * The module's job broker under load, with raw ioctls: two engines and
 * four clients checking that every job completes exactly once, then random
 * clients (bad jobs, freed handles, abrupt closes) against a random engine
 * (odd batches, maps, bad tokens, errors, restarts), after which nothing
 * is queued, held or pinned. Runs as root in the test VM; exits 77 without
 * /dev/syshax.
 */
#include <signal.h>
#include <sys/wait.h>

#include "t_jobs.h"

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
	int fd = t_open(), n, i;

	if (fd < 0)
		return 1;
	while (got < CLIENT_JOBS) {
		unsigned int nr = CLIENT_JOBS - sent;

		if (nr > 64)
			nr = 64;
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
	int i, status, fd, mon = t_fd();
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
			fd = t_open();
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
	struct syshax_completion c[32];
	struct syshax_job jobs[32];
	int fd, round, step, n, i;

	for (round = 0; round < 40; round++) {
		fd = t_open();
		if (fd < 0)
			return 1;
		for (i = 0; i < 2; i++)
			if (t_small(fd, &b[i]))
				return 2;
		for (step = 0; step < 20; step++) {
			n = 1 + rand_r(&seed) % 32;
			for (i = 0; i < n; i++) {
				if (rand_r(&seed) % 3) {
					t_nop(&jobs[i], i);
					continue;
				}
				t_copy(&jobs[i], b[0].handle, b[1].handle, i);
				/* Past the end, now and then. */
				jobs[i].refs[0].offset =
					rand_r(&seed) % T_BUF_SIZE;
				/* A COPY writing through a read-only ref. */
				if (rand_r(&seed) % 16 == 0)
					jobs[i].refs[1].access =
						SYSHAX_ACCESS_READ;
			}
			n = t_submit(fd, jobs, n);
			if (n < 0 && !t_errno_ok(n))
				return 3;
			/* The jobs keep the buffer; the handle may go. */
			if (step == 10 && t_free(fd, b[0].handle))
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
	int i, status, mon = t_fd();
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

int main(void)
{
	static const struct t_test tests[] = {
		{ "two engines, four clients", t_two_engines },
		{ "random clients and engine", t_random },
	};

	return T_MAIN("kmod_jobs_stress", "kmod jobs stress", NULL,
		      NULL, tests);
}
