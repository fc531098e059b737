// SPDX-License-Identifier: MIT
/* poll/epoll readiness, WAIT timeouts and EINTR. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "t.h"

static int readable(int fd, int timeout_ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int r = poll(&p, 1, timeout_ms);

	return r == 1 ? !!(p.revents & POLLIN) : r;
}

static void submit_nop(struct syshax *sh, uint64_t ud)
{
	struct syshax_job job;

	syshax_job_init(&job, SYSHAX_OP_NOP, ud);
	CU_ASSERT_EQUAL(syshax_submit(sh, &job, 1), 1);
}

static void t_poll(void)
{
	struct syshax *sh = t_open();
	struct syshax_completion c;
	int fd;

	if (!sh)
		return;
	fd = syshax_fd(sh);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(readable(fd, 0), 0);
	submit_nop(sh, 11);
	CU_ASSERT_EQUAL(readable(fd, 5000), 1);
	/* Readable means WAIT does not block. */
	CU_ASSERT_EQUAL(syshax_wait(sh, &c, 1, 1, 0), 1);
	CU_ASSERT_EQUAL(c.user_data, 11);
	CU_ASSERT_EQUAL(readable(fd, 0), 0);
	syshax_close(sh);
}

static void t_epoll(void)
{
	struct syshax *sh = t_open();
	struct epoll_event ev = { .events = EPOLLIN }, out[2];
	struct syshax_completion c[2];
	int ep;

	if (!sh)
		return;
	ep = epoll_create1(EPOLL_CLOEXEC);
	CU_ASSERT_FATAL(ep >= 0);
	CU_ASSERT_EQUAL(epoll_ctl(ep, EPOLL_CTL_ADD, syshax_fd(sh), &ev), 0);
	CU_ASSERT_EQUAL(epoll_wait(ep, out, 2, 0), 0);
	submit_nop(sh, 21);
	submit_nop(sh, 22);
	CU_ASSERT_EQUAL(epoll_wait(ep, out, 2, 5000), 1);
	CU_ASSERT(out[0].events & EPOLLIN);
	CU_ASSERT_EQUAL(syshax_wait(sh, c, 2, 2, 5 * T_SEC), 2);
	CU_ASSERT_EQUAL(c[0].user_data + c[1].user_data, 21 + 22);
	CU_ASSERT_EQUAL(epoll_wait(ep, out, 2, 0), 0);
	close(ep);
	syshax_close(sh);
}

static void t_timeout(void)
{
	struct syshax *sh = t_open();
	struct syshax_completion c[4];
	uint64_t t0, dt;

	if (!sh)
		return;
	/* min 0 returns at once, with nothing. */
	CU_ASSERT_EQUAL(syshax_wait(sh, c, 0, 4, 5 * T_SEC), 0);
	CU_ASSERT_EQUAL(syshax_wait(sh, c, 1, 4, 0), -ETIMEDOUT);

	t0 = t_now_ns();
	CU_ASSERT_EQUAL(syshax_wait(sh, c, 1, 4, 200 * T_MS), -ETIMEDOUT);
	dt = t_now_ns() - t0;
	CU_ASSERT(dt >= 200 * T_MS);
	CU_ASSERT(dt < 2 * T_SEC);

	/* Fewer than min at the timeout: what is there comes back. */
	submit_nop(sh, 31);
	CU_ASSERT_EQUAL(readable(syshax_fd(sh), 5000), 1);
	t0 = t_now_ns();
	CU_ASSERT_EQUAL(syshax_wait(sh, c, 2, 4, 200 * T_MS), 1);
	CU_ASSERT(t_now_ns() - t0 >= 200 * T_MS);
	CU_ASSERT_EQUAL(c[0].user_data, 31);
	syshax_close(sh);
}

static void on_usr1(int sig)
{
	(void)sig;
}

static atomic_bool g_interrupted;

/* Signals until the waiter returned: one sent before it waits is lost. */
static void *interrupter(void *arg)
{
	const struct timespec d = { 0, 50 * T_MS };

	while (!atomic_load(&g_interrupted)) {
		nanosleep(&d, NULL);
		pthread_kill(*(pthread_t *)arg, SIGUSR1);
	}
	return NULL;
}

static void t_eintr(void)
{
	struct sigaction sa, old;
	struct syshax *sh = t_open();
	struct syshax_completion c;
	pthread_t self = pthread_self(), tid;
	uint64_t t0, dt;

	if (!sh)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;	/* no SA_RESTART */
	sigemptyset(&sa.sa_mask);
	CU_ASSERT_EQUAL_FATAL(sigaction(SIGUSR1, &sa, &old), 0);
	atomic_store(&g_interrupted, false);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&tid, NULL, interrupter, &self),
			      0);
	t0 = t_now_ns();
	CU_ASSERT_EQUAL(syshax_wait(sh, &c, 1, 1, 10 * T_SEC), -EINTR);
	dt = t_now_ns() - t0;
	atomic_store(&g_interrupted, true);
	CU_ASSERT(dt < 5 * T_SEC);
	pthread_join(tid, NULL);
	sigaction(SIGUSR1, &old, NULL);
	/* The context still works after the interruption. */
	submit_nop(sh, 41);
	CU_ASSERT_EQUAL(syshax_wait(sh, &c, 1, 1, 5 * T_SEC), 1);
	CU_ASSERT_EQUAL(c.user_data, 41);
	syshax_close(sh);
}

int t_add_wait(void)
{
	CU_pSuite s = CU_add_suite("waiting", NULL, NULL);

	if (!s || !CU_add_test(s, "poll readiness", t_poll) ||
	    !CU_add_test(s, "epoll readiness", t_epoll) ||
	    !CU_add_test(s, "WAIT timeouts", t_timeout) ||
	    !CU_add_test(s, "WAIT interrupted: -EINTR", t_eintr))
		return -1;
	return 0;
}
