// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * syshax.ko's per-user limits, with processes that drop to other uids:
 * RLIMIT_MEMLOCK is charged per user, so short-lived children that each
 * pin under the limit and pass their buffers on as dma-bufs cannot add up
 * past it; max_pinned_user_mb caps one uid's buffers whatever its
 * capabilities; max_jobs_user keeps one uid (over many open files) from
 * taking the whole job queue. Runs as root in the test VM (make vm-check);
 * exits 77 without /dev/syshax.
 */
#include <grp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "t_jobs.h"

/* Uids of no one else in the guest, so nothing else is charged to them. */
#define UID_A		4242
#define UID_B		4243
#define T_PIECE		(512 << 10)

static void t_need_root(void)
{
	if (geteuid() != 0)
		CU_FAIL_FATAL("needs root (to drop to other uids)");
}

/* In a child: a memlock limit (RLIM_INFINITY: keep), then uid and gid. */
static int t_become(uid_t uid, rlim_t memlock)
{
	struct rlimit rl = { memlock, memlock };

	if (memlock != RLIM_INFINITY && setrlimit(RLIMIT_MEMLOCK, &rl))
		return -1;
	if (setgroups(0, NULL) || setgid(uid) || setuid(uid))
		return -1;
	return 0;
}

static int t_send_fd(int sock, int fd)
{
	char byte = 'x', cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &byte, 1 };
	struct msghdr m = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *c;

	memset(cbuf, 0, sizeof(cbuf));
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	return sendmsg(sock, &m, 0) == 1 ? 0 : -1;
}

/* A file descriptor from sock, or -1. */
static int t_recv_fd(int sock)
{
	char byte, cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &byte, 1 };
	struct msghdr m = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *c;
	int fd;

	if (recvmsg(sock, &m, 0) != 1)
		return -1;
	c = CMSG_FIRSTHDR(&m);
	if (!c || c->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

/*
 * A child that becomes uid with the memlock limit, allocates size bytes
 * (node -1, any piece anywhere), exports it and sends the dma-buf over
 * sock, then exits. Returns BUF_ALLOC's -errno (0: a dma-buf was sent);
 * -1000 and less: the child failed elsewhere.
 */
static int t_child_pins(int sock, uid_t uid, rlim_t memlock, uint64_t size)
{
	int status, fd = t_fd();
	pid_t pid = fork();

	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		struct syshax_buf_alloc_args a;
		int ret, dmabuf;

		if (t_become(uid, memlock))
			_exit(200);
		ret = t_alloc(fd, size, -1, SYSHAX_BUF_ALLOW_SMALL |
			      SYSHAX_BUF_ALLOW_REMOTE, &a);
		if (ret)
			_exit(-ret < 200 ? -ret : 199);
		dmabuf = t_export(fd, a.handle, 0);
		if (dmabuf < 0)
			_exit(201);
		if (t_send_fd(sock, dmabuf))
			_exit(202);
		/* Exiting closes fd (the handle) and dmabuf: the peer's copy
		 * of the dma-buf holds the buffer. */
		_exit(0);
	}
	close(fd);
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	CU_ASSERT_FATAL(WIFEXITED(status));
	status = WEXITSTATUS(status);
	return status >= 200 ? -1000 - status : -status;
}

/*
 * RLIMIT_MEMLOCK of 1 MiB: two children of one uid each pin 512 KiB and
 * pass it on; a third (as fresh a process as the others) is refused with
 * -ENOMEM, as is a child of a user that pins from two processes at once.
 * Another uid is not affected; once the dma-bufs are closed the same user
 * may pin again, and nothing stays pinned.
 */
static void test_memlock_per_user(void)
{
	struct syshax_buf_import_args imp;
	uint64_t before = t_pinned(g_fd);
	int sv[2], held[4], nheld = 0, ret;

	t_need_root();
	CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	for (int i = 0; i < 2; i++) {
		ret = t_child_pins(sv[1], UID_A, T_MIB, T_PIECE);
		CU_ASSERT_EQUAL(ret, 0);
		if (!ret)
			held[nheld++] = t_recv_fd(sv[0]);
	}
	CU_ASSERT_EQUAL_FATAL(nheld, 2);
	CU_ASSERT(held[0] >= 0 && held[1] >= 0);
	/* Both children are gone; their buffers live in the dma-bufs. */
	CU_ASSERT_EQUAL(t_pinned(g_fd), before + 2 * T_PIECE);
	ret = t_child_pins(sv[1], UID_A, T_MIB, T_PIECE);
	printf("\n  third child of uid %d under a 1 MiB memlock: %s\n", UID_A,
	       ret ? strerror(-ret) : "allocated (limit sidestepped)");
	CU_ASSERT_EQUAL(ret, -ENOMEM);
	if (!ret)
		held[nheld++] = t_recv_fd(sv[0]);
	/* One page over is over too. */
	CU_ASSERT_EQUAL(t_child_pins(sv[1], UID_A, T_MIB, 4096), -ENOMEM);
	/* Another user has its own limit. */
	ret = t_child_pins(sv[1], UID_B, T_MIB, T_MIB);
	CU_ASSERT_EQUAL(ret, 0);
	if (!ret)
		held[nheld++] = t_recv_fd(sv[0]);
	/* A dma-buf imported by root still counts for its creator. */
	CU_ASSERT_EQUAL(t_import(g_fd, held[0], &imp), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before + 2 * T_PIECE + T_MIB);
	for (int i = 0; i < nheld; i++)
		CU_ASSERT_EQUAL(close(held[i]), 0);
	/* The imported buffer is still A's: 512 KiB of A's 1 MiB. */
	CU_ASSERT_EQUAL(t_pinned(g_fd), before + T_PIECE);
	CU_ASSERT_EQUAL(t_child_pins(sv[1], UID_A, T_MIB, T_MIB), -ENOMEM);
	CU_ASSERT_EQUAL(t_free(g_fd, imp.handle), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before);
	/* Everything returned: the whole limit again, in one piece. */
	ret = t_child_pins(sv[1], UID_A, T_MIB, T_MIB);
	CU_ASSERT_EQUAL(ret, 0);
	if (!ret)
		CU_ASSERT_EQUAL(close(t_recv_fd(sv[0])), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before);
	close(sv[0]);
	close(sv[1]);
}

/*
 * max_pinned_user_mb = 4: one uid's buffers together stay within 4 MiB,
 * also for root (CAP_IPC_LOCK, which only lifts RLIMIT_MEMLOCK) and across
 * processes and dma-bufs; another uid has 4 MiB of its own.
 */
static void test_user_cap(void)
{
	struct syshax_buf_alloc_args a, b, c;
	uint64_t before = t_pinned(g_fd), pg;
	char saved[32];
	int sv[2], ret;

	t_need_root();
	CU_ASSERT_EQUAL_FATAL(t_param_get("max_pinned_user_mb", saved,
					  sizeof(saved)), 0);
	CU_ASSERT_STRING_EQUAL(saved, "0");
	CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	CU_ASSERT_EQUAL_FATAL(t_param_set("max_pinned_user_mb", "4"), 0);
	/* Refused before a page is taken: not 4 MiB allocated and zeroed
	 * (and the piece past the cap) for nothing. */
	pg = t_pgalloc();
	CU_ASSERT_FATAL(pg != UINT64_MAX);
	CU_ASSERT_EQUAL(t_alloc(g_fd, 8 * T_MIB, 0, 0, &a), -ENOMEM);
	pg = t_pgalloc() - pg;
	printf("\n  pages allocated for a refused 8 MiB: %llu\n",
	       (unsigned long long)pg);
	CU_ASSERT(pg < T_MIB / (uint64_t)sysconf(_SC_PAGESIZE));
	CU_ASSERT_EQUAL(t_alloc(g_fd, 3 * T_MIB, 0, 0, &a), 0);
	CU_ASSERT_EQUAL(t_alloc(g_fd, 2 * T_MIB, 0, 0, &b), -ENOMEM);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before + 3 * T_MIB);
	/* A root child, unlimited memlock: the same uid, the same cap. */
	CU_ASSERT_EQUAL(t_child_pins(sv[1], 0, RLIM_INFINITY, 2 * T_MIB),
			-ENOMEM);
	ret = t_child_pins(sv[1], 0, RLIM_INFINITY, T_MIB);
	CU_ASSERT_EQUAL(ret, 0);
	if (!ret)
		CU_ASSERT_EQUAL(close(t_recv_fd(sv[0])), 0);
	CU_ASSERT_EQUAL(t_alloc(g_fd, T_MIB, 0, 0, &b), 0);
	CU_ASSERT_EQUAL(t_alloc(g_fd, 4096, 0, SYSHAX_BUF_ALLOW_SMALL, &c),
			-ENOMEM);
	/* Another uid (an unlimited memlock) has its own 4 MiB. */
	ret = t_child_pins(sv[1], UID_B, RLIM_INFINITY, 4 * T_MIB);
	CU_ASSERT_EQUAL(ret, 0);
	if (!ret)
		CU_ASSERT_EQUAL(close(t_recv_fd(sv[0])), 0);
	CU_ASSERT_EQUAL(t_free(g_fd, b.handle), 0);
	CU_ASSERT_EQUAL(t_alloc(g_fd, T_MIB, 0, 0, &c), 0);
	CU_ASSERT_EQUAL(t_free(g_fd, c.handle), 0);
	CU_ASSERT_EQUAL(t_free(g_fd, a.handle), 0);
	/* 0 lifts the cap again. */
	CU_ASSERT_EQUAL(t_param_set("max_pinned_user_mb", saved), 0);
	CU_ASSERT_EQUAL(t_alloc(g_fd, 8 * T_MIB, 0, 0, &a), 0);
	CU_ASSERT_EQUAL(t_free(g_fd, a.handle), 0);
	CU_ASSERT_EQUAL(t_pinned(g_fd), before);
	close(sv[0]);
	close(sv[1]);
}

/* Pipes of a job child: it reports on up[1], waits for a byte on down[0]. */
struct t_kid {
	pid_t pid;
	int up[2], down[2];
};

static void t_kid_go(struct t_kid *k)
{
	char c = 'g';

	CU_ASSERT_EQUAL(write(k->down[1], &c, 1), 1);
}

/* The child's report: an int. */
static int t_kid_read(struct t_kid *k)
{
	int v = -99999;

	CU_ASSERT_EQUAL(read(k->up[0], &v, sizeof(v)), (ssize_t)sizeof(v));
	return v;
}

static void t_kid_say(struct t_kid *k, int v)
{
	if (write(k->up[1], &v, sizeof(v)) != sizeof(v))
		_exit(210);
}

static void t_kid_wait(struct t_kid *k)
{
	char c;

	if (read(k->down[0], &c, 1) != 1)
		_exit(211);
}

/* The exit status of a finished child, -1 when it did not exit. */
static int t_kid_end(struct t_kid *k)
{
	int status;

	close(k->up[0]);
	close(k->down[1]);
	CU_ASSERT_EQUAL(waitpid(k->pid, &status, 0), k->pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

#define T_FDS		3
#define T_USER_MAX	6

/*
 * User A, over T_FDS files: fills max_jobs_user (each SUBMIT of 2 NOPs,
 * one file after the other), then gets -EAGAIN on every file and on a new
 * one; reports each step, then waits, jobs queued.
 */
static void t_user_a(struct t_kid *k)
{
	struct syshax_job jobs[2];
	int fds[T_FDS + 1];

	for (int i = 0; i <= T_FDS; i++)
		fds[i] = t_open();
	if (t_become(UID_A, RLIM_INFINITY))
		_exit(200);
	t_nop(&jobs[0], 1);
	t_nop(&jobs[1], 2);
	for (int i = 0; i < T_FDS; i++)
		t_kid_say(k, t_submit(fds[i], jobs, 2));
	for (int i = 0; i <= T_FDS; i++)
		t_kid_say(k, t_submit(fds[i], jobs, 1));
	t_kid_wait(k);
	/* Completions came (not reaped): room again for as many. */
	t_kid_say(k, t_submit(fds[T_FDS], jobs, 2));
	t_kid_say(k, t_submit(fds[T_FDS], jobs, 1));
	t_kid_wait(k);
	_exit(0);
}

/* User B: one NOP, then waits for its completion; reports both. */
static void t_user_b(struct t_kid *k)
{
	struct syshax_completion c;
	struct syshax_job job;
	int fd = t_open();

	if (t_become(UID_B, RLIM_INFINITY))
		_exit(200);
	t_nop(&job, 77);
	t_kid_say(k, t_submit(fd, &job, 1));
	memset(&c, 0, sizeof(c));
	t_kid_say(k, t_wait(fd, &c, 1, 1, 10LL * 1000000000));
	t_kid_say(k, (int)c.user_data);
	t_kid_say(k, c.status);
	_exit(0);
}

static void t_kid_start(struct t_kid *k, void (*fn)(struct t_kid *))
{
	CU_ASSERT_FATAL(pipe(k->up) == 0 && pipe(k->down) == 0);
	k->pid = fork();
	CU_ASSERT_FATAL(k->pid >= 0);
	if (k->pid == 0) {
		close(k->up[0]);
		close(k->down[1]);
		fn(k);
		_exit(0);
	}
	close(k->up[1]);
	close(k->down[0]);
}

/* Fetches and completes every queued job; how many. */
static int t_drain(int eng)
{
	struct syshax_engine_job ej[16];
	unsigned long long tok[16];
	int n, total = 0;

	while ((n = t_fetch(eng, ej, 16, 0)) > 0) {
		for (int i = 0; i < n; i++)
			tok[i] = ej[i].token;
		CU_ASSERT_EQUAL(t_complete(eng, tok, n, 0), n);
		total += n;
	}
	CU_ASSERT_EQUAL(n, -ETIMEDOUT);
	return total;
}

/*
 * max_jobs_user: user A cannot queue more than T_USER_MAX jobs over all
 * its files (-EAGAIN on each), while user B still submits and its job
 * runs and completes. Completed jobs leave A's count; once all are gone
 * the queue is empty and A has its whole allowance again.
 */
static void test_jobs_per_user(void)
{
	struct syshax_stats_args st;
	struct t_kid a, b;
	char saved[32], num[16];
	int eng, i, v;

	t_need_root();
	CU_ASSERT_EQUAL_FATAL(t_param_get("max_jobs_user", saved,
					  sizeof(saved)), 0);
	CU_ASSERT_STRING_EQUAL(saved, "4096");
	snprintf(num, sizeof(num), "%d", T_USER_MAX);
	CU_ASSERT_EQUAL_FATAL(t_param_set("max_jobs_user", num), 0);
	st = t_stats(g_fd);
	CU_ASSERT_EQUAL_FATAL(st.queue_depth + st.inflight, 0);

	t_kid_start(&a, t_user_a);
	for (i = 0; i < T_FDS; i++)
		CU_ASSERT_EQUAL(t_kid_read(&a), 2);
	for (i = 0; i <= T_FDS; i++) {
		v = t_kid_read(&a);
		if (v != -EAGAIN)
			printf("\n  user A's submit %d past the limit: %d\n", i, v);
		CU_ASSERT_EQUAL(v, -EAGAIN);
	}
	st = t_stats(g_fd);
	CU_ASSERT_EQUAL(st.queue_depth, T_USER_MAX);

	t_kid_start(&b, t_user_b);
	CU_ASSERT_EQUAL(t_kid_read(&b), 1);
	/* An engine runs everything: A's six and B's one. */
	eng = t_engine();
	CU_ASSERT_EQUAL(t_drain(eng), T_USER_MAX + 1);
	CU_ASSERT_EQUAL(t_kid_read(&b), 1);
	CU_ASSERT_EQUAL(t_kid_read(&b), 77);
	CU_ASSERT_EQUAL(t_kid_read(&b), 0);
	CU_ASSERT_EQUAL(t_kid_end(&b), 0);

	/* A's jobs completed (unreaped): A may queue again, up to the limit. */
	t_kid_go(&a);
	CU_ASSERT_EQUAL(t_kid_read(&a), 2);
	CU_ASSERT_EQUAL(t_kid_read(&a), 1);
	st = t_stats(g_fd);
	CU_ASSERT_EQUAL(st.queue_depth, 3);
	/* A exits with jobs queued: they are cancelled, the count returns. */
	t_kid_go(&a);
	CU_ASSERT_EQUAL(t_kid_end(&a), 0);
	st = t_stats(g_fd);
	CU_ASSERT_EQUAL(st.queue_depth + st.inflight, 0);

	/* Counts back to zero: a new process of user A has all 6 again. */
	t_kid_start(&a, t_user_a);
	for (i = 0; i < T_FDS; i++)
		CU_ASSERT_EQUAL(t_kid_read(&a), 2);
	for (i = 0; i <= T_FDS; i++)
		CU_ASSERT_EQUAL(t_kid_read(&a), -EAGAIN);
	/* Held jobs count too: fetched, not completed, A is still full. */
	{
		struct syshax_engine_job ej[8];
		unsigned long long tok[8];
		int n = t_fetch(eng, ej, 8, 0);

		CU_ASSERT_EQUAL(n, T_USER_MAX);
		t_kid_go(&a);
		CU_ASSERT_EQUAL(t_kid_read(&a), -EAGAIN);
		CU_ASSERT_EQUAL(t_kid_read(&a), -EAGAIN);
		for (i = 0; i < n; i++)
			tok[i] = ej[i].token;
		CU_ASSERT_EQUAL(t_complete(eng, tok, n, 0), n);
	}
	t_kid_go(&a);
	CU_ASSERT_EQUAL(t_kid_end(&a), 0);
	close(eng);
	st = t_stats(g_fd);
	CU_ASSERT_EQUAL(st.queue_depth + st.inflight, 0);
	CU_ASSERT_EQUAL(t_param_set("max_jobs_user", saved), 0);
}

int main(void)
{
	static const struct t_test tests[] = {
		{ "RLIMIT_MEMLOCK per user, across dma-bufs", test_memlock_per_user },
		{ "max_pinned_user_mb", test_user_cap },
		{ "max_jobs_user", test_jobs_per_user },
	};

	return T_MAIN("kmod_limits", "kmod limits", t_suite_open,
		      t_suite_close, tests);
}
