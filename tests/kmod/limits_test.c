// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * syshax.ko's per-user limits, with processes that drop to other uids:
 * RLIMIT_MEMLOCK is charged per user, so short-lived children that each
 * pin under the limit and pass their buffers on as dma-bufs cannot add up
 * past it; max_pinned_user_mb caps one uid's buffers whatever its
 * capabilities. Runs as root in the test VM (make vm-check);
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
	uint64_t before = t_pinned(g_fd);
	char saved[32];
	int sv[2], ret;

	t_need_root();
	CU_ASSERT_EQUAL_FATAL(t_param_get("max_pinned_user_mb", saved,
					  sizeof(saved)), 0);
	CU_ASSERT_STRING_EQUAL(saved, "0");
	CU_ASSERT_EQUAL_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	CU_ASSERT_EQUAL_FATAL(t_param_set("max_pinned_user_mb", "4"), 0);
	CU_ASSERT_EQUAL(t_alloc(g_fd, 8 * T_MIB, 0, 0, &a), -ENOMEM);
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

int main(void)
{
	static const struct t_test tests[] = {
		{ "RLIMIT_MEMLOCK per user, across dma-bufs", test_memlock_per_user },
		{ "max_pinned_user_mb", test_user_cap },
	};

	return T_MAIN("kmod_limits", "kmod limits", t_suite_open,
		      t_suite_close, tests);
}
