// SPDX-License-Identifier: MIT
/* syshax_open() errors, with no backend needed: bad options, missing or
 * dead sockets, not-a-device, and peers that do not speak the protocol. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <CUnit/Basic.h>

#include "../t_cunit.h"

#include "syshax/rt.h"

static char g_dir[64];

static int t_open_at(enum syshax_backend be, const char *path)
{
	struct syshax_open_opts o = { .backend = be, .path = path };
	struct syshax *sh = (struct syshax *)&o;
	int ret = syshax_open(&sh, &o);

	if (!ret)
		syshax_close(sh);
	else
		CU_ASSERT_PTR_NULL(sh);
	return ret;
}

static int t_socket_at(const char *path, int do_listen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	unlink(path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    (do_listen && listen(fd, 4))) {
		CU_FAIL("cannot make a test socket");
		return -1;
	}
	return fd;
}

static void t_bad_opts(void)
{
	struct syshax_open_opts o = { .flags = 1 };
	struct syshax *sh;

	CU_ASSERT_EQUAL(syshax_open(&sh, &o), -EINVAL);
	o.flags = 0;
	o.backend = 7;
	CU_ASSERT_EQUAL(syshax_open(&sh, &o), -EINVAL);
	CU_ASSERT_EQUAL(syshax_open(NULL, NULL), -EINVAL);
}

static void t_missing(void)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/none.sock", g_dir);
	CU_ASSERT_EQUAL(t_open_at(SYSHAX_BACKEND_DAEMON, path), -ENOENT);
	snprintf(path, sizeof(path), "%s/nodev", g_dir);
	CU_ASSERT_EQUAL(t_open_at(SYSHAX_BACKEND_KERNEL, path), -ENOENT);
	CU_ASSERT_EQUAL(t_open_at(SYSHAX_BACKEND_AUTO, path), -ENOENT);
}

static void t_refused(void)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/dead.sock", g_dir);
	fd = t_socket_at(path, 0);	/* bound, nobody listening */
	CU_ASSERT_EQUAL(t_open_at(SYSHAX_BACKEND_DAEMON, path), -ECONNREFUSED);
	/* auto with a path decides by the file type: a socket. */
	CU_ASSERT_EQUAL(t_open_at(SYSHAX_BACKEND_AUTO, path), -ECONNREFUSED);
	close(fd);
	unlink(path);
}

static void t_too_long(void)
{
	char path[200];

	memset(path, 'a', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = 0;
	CU_ASSERT_EQUAL(t_open_at(SYSHAX_BACKEND_DAEMON, path), -ENAMETOOLONG);
}

static void t_not_a_device(void)
{
	char path[128];
	FILE *f;

	CU_ASSERT_EQUAL(t_open_at(SYSHAX_BACKEND_KERNEL, "/dev/null"), -ENOTTY);
	snprintf(path, sizeof(path), "%s/plain", g_dir);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fclose(f);
	CU_ASSERT_EQUAL(t_open_at(SYSHAX_BACKEND_AUTO, path), -ENOTSUP);
	unlink(path);
}

/* A peer that accepts, then sends a bad welcome or nothing. */
static void *t_peer(void *arg)
{
	int lfd = *(int *)arg, fd;
	char bad[16] = { 0 };	/* ret 0, len 8, then a wrong magic */

	bad[4] = 8;
	fd = accept(lfd, NULL, NULL);
	if (fd >= 0 && send(fd, bad, sizeof(bad), 0) < 0)
		perror("send");
	if (fd >= 0)
		close(fd);
	fd = accept(lfd, NULL, NULL);
	if (fd >= 0)
		close(fd);
	return NULL;
}

static void t_not_syshaxd(void)
{
	char path[128];
	pthread_t th;
	int lfd;

	snprintf(path, sizeof(path), "%s/other.sock", g_dir);
	lfd = t_socket_at(path, 1);
	CU_ASSERT_FATAL(lfd >= 0);
	pthread_create(&th, NULL, t_peer, &lfd);
	CU_ASSERT_EQUAL(t_open_at(SYSHAX_BACKEND_DAEMON, path), -EPROTO);
	CU_ASSERT_EQUAL(t_open_at(SYSHAX_BACKEND_DAEMON, path), -EPIPE);
	pthread_join(th, NULL);
	close(lfd);
	unlink(path);
}

/* A NULL handle is -EINVAL (or no backend) in every call, with none open:
 * nothing may be touched through it. */
static void t_null_handle(void)
{
	struct syshax_buffer b = { .size = 4096 };
	struct syshax_version_args v;
	struct syshax_stats_args st;
	struct syshax_buf_info_args info;
	struct syshax_engine_job ej;
	struct syshax_engine_cpl ec = { 0 };
	struct syshax_completion cpl;
	struct syshax_job job;
	uint64_t size;
	void *addr;

	syshax_close(NULL);
	CU_ASSERT_EQUAL(syshax_backend(NULL), SYSHAX_BACKEND_AUTO);
	CU_ASSERT_EQUAL(syshax_fd(NULL), -EINVAL);
	CU_ASSERT_EQUAL(syshax_version(NULL, &v), -EINVAL);
	CU_ASSERT_EQUAL(syshax_stats(NULL, &st), -EINVAL);
	CU_ASSERT_EQUAL(syshax_buf_alloc(NULL, 4096, -1, 0, &b), -EINVAL);
	CU_ASSERT_EQUAL(syshax_buf_map(NULL, &b), -EINVAL);
	CU_ASSERT_EQUAL(syshax_buf_unmap(NULL, &b), -EINVAL);
	CU_ASSERT_EQUAL(syshax_buf_free(NULL, &b), -EINVAL);
	CU_ASSERT_EQUAL(syshax_buf_register(NULL, &v, 4096, 0, &b), -EINVAL);
	CU_ASSERT_EQUAL(syshax_buf_export(NULL, &b, 0), -EINVAL);
	CU_ASSERT_EQUAL(syshax_buf_import(NULL, 0, &b), -EINVAL);
	CU_ASSERT_EQUAL(syshax_buf_info(NULL, &b, &info), -EINVAL);
	CU_ASSERT_EQUAL(b.size, 4096);
	syshax_job_init(&job, SYSHAX_OP_NOP, 1);
	CU_ASSERT_EQUAL(syshax_submit(NULL, &job, 1), -EINVAL);
	CU_ASSERT_EQUAL(syshax_wait(NULL, &cpl, 1, 1, 0), -EINVAL);
	CU_ASSERT_EQUAL(syshax_engine_attach(NULL, -1), -EINVAL);
	CU_ASSERT_EQUAL(syshax_engine_fetch(NULL, &ej, 1, 0), -EINVAL);
	CU_ASSERT_EQUAL(syshax_engine_map(NULL, 1, &addr, &size), -EINVAL);
	CU_ASSERT_EQUAL(syshax_engine_unmap(NULL, &v, 4096), -EINVAL);
	CU_ASSERT_EQUAL(syshax_engine_complete(NULL, &ec, 1), -EINVAL);
}

int main(void)
{
	static const struct t_test tests[] = {
		{ "bad options: -EINVAL", t_bad_opts },
		{ "NULL handle: -EINVAL", t_null_handle },
		{ "missing path: -ENOENT", t_missing },
		{ "nobody listening: -ECONNREFUSED", t_refused },
		{ "socket path too long: -ENAMETOOLONG", t_too_long },
		{ "not a syshax device: -ENOTTY, -ENOTSUP", t_not_a_device },
		{ "peer is not syshaxd: -EPROTO, -EPIPE", t_not_syshaxd },
	};
	int ret;

	snprintf(g_dir, sizeof(g_dir), "/tmp/rt_open_ut.XXXXXX");
	if (!mkdtemp(g_dir))
		return 1;
	ret = T_RUN_SUITE("open errors", NULL, NULL, tests);
	rmdir(g_dir);
	return ret;
}
