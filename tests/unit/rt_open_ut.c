// SPDX-License-Identifier: MIT
/* syshax_open() errors, with no backend needed: bad options, missing or
 * dead sockets, not-a-device, peers that do not speak the protocol, and
 * brokers that never answer (the connect and welcome timeout). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
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

/* Open descriptors of this process. */
static int t_nr_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static double t_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Slack above the timeout for a loaded machine and the sanitizers. */
#define T_SLACK_MS	3000

/*
 * Opens be (at path, or from the environment when path is NULL) with
 * $SYSHAX_CONNECT_TIMEOUT_MS set to env: -ETIMEDOUT after at least
 * expect_ms and at most expect_ms + T_SLACK_MS, no descriptor left open.
 */
static void t_expect_timeout(enum syshax_backend be, const char *path,
			     const char *env, long expect_ms)
{
	int fds = t_nr_fds(), ret;
	double t0, ms;

	setenv("SYSHAX_CONNECT_TIMEOUT_MS", env, 1);
	t0 = t_now_ms();
	ret = t_open_at(be, path);
	ms = t_now_ms() - t0;
	unsetenv("SYSHAX_CONNECT_TIMEOUT_MS");
	CU_ASSERT_EQUAL(ret, -ETIMEDOUT);
	CU_ASSERT(ms >= expect_ms);
	CU_ASSERT(ms <= expect_ms + T_SLACK_MS);
	CU_ASSERT(fds > 0);
	CU_ASSERT_EQUAL(t_nr_fds(), fds);
	printf("(%s: %d after %.0f ms) ", env, ret, ms);
}

/* Fills a listen(lfd, 0) backlog with connections nobody accepts, so
 * that the next connect() would block; their fds in fill[], -1 ended. */
#define T_FILL_MAX	16
static void t_fill_backlog(const char *path, int fill[T_FILL_MAX])
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len = strlen(path);
	int fd, n = 0;

	CU_ASSERT_FATAL(len < sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, len + 1);
	while (n < T_FILL_MAX - 1) {
		fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC |
			    SOCK_NONBLOCK, 0);
		CU_ASSERT_FATAL(fd >= 0);
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
			CU_ASSERT_EQUAL(errno, EAGAIN);	/* backlog full */
			close(fd);
			break;
		}
		fill[n++] = fd;
	}
	fill[n] = -1;
	CU_ASSERT(n >= 1 && n < T_FILL_MAX - 1);
}

/* A broker out of descriptors accepts nothing and its backlog fills up:
 * connect() itself would block. */
static void t_timeout_backlog(void)
{
	char path[128];
	int lfd, fill[T_FILL_MAX], i;

	snprintf(path, sizeof(path), "%s/full.sock", g_dir);
	lfd = t_socket_at(path, 0);
	CU_ASSERT_FATAL(lfd >= 0);
	CU_ASSERT_FATAL(listen(lfd, 0) == 0);
	t_fill_backlog(path, fill);
	t_expect_timeout(SYSHAX_BACKEND_DAEMON, path, "300", 300);
	/* Under AUTO from $SYSHAX_DEVICE, after trying the device and the
	 * default socket: the same error, and the socket not left open. */
	setenv("SYSHAX_DEVICE", path, 1);
	setenv("XDG_RUNTIME_DIR", g_dir, 1);
	if (access("/dev/syshax", F_OK) == 0 ||
	    (!geteuid() && access("/run/syshax/syshaxd.sock", F_OK) == 0))
		printf("(skip AUTO: a real backend may answer) ");
	else
		t_expect_timeout(SYSHAX_BACKEND_AUTO, NULL, "200", 200);
	unsetenv("SYSHAX_DEVICE");
	/* A value that is not a count of milliseconds: the default, 5 s. */
	t_expect_timeout(SYSHAX_BACKEND_DAEMON, path, "5s", 5000);
	for (i = 0; fill[i] >= 0; i++)
		close(fill[i]);
	close(lfd);
	unlink(path);
}

/* Connected (in the backlog) but never accepted: no welcome. */
static void t_timeout_unaccepted(void)
{
	char path[128];
	int lfd;

	snprintf(path, sizeof(path), "%s/deaf.sock", g_dir);
	lfd = t_socket_at(path, 1);
	CU_ASSERT_FATAL(lfd >= 0);
	t_expect_timeout(SYSHAX_BACKEND_DAEMON, path, "250", 250);
	close(lfd);
	unlink(path);
}

/* Accepts one connection, sends nothing, and waits for the client to go:
 * 1 in *ret when it saw the close. */
static void *t_silent_peer(void *arg)
{
	int *p = arg, fd;
	char c;

	fd = accept(p[0], NULL, NULL);
	if (fd < 0)
		return NULL;
	p[1] = recv(fd, &c, 1, 0) == 0;
	close(fd);
	return NULL;
}

static void t_timeout_silent(void)
{
	char path[128];
	pthread_t th;
	int p[2] = { -1, 0 }, fds;
	double t0, ms;

	snprintf(path, sizeof(path), "%s/silent.sock", g_dir);
	p[0] = t_socket_at(path, 1);
	CU_ASSERT_FATAL(p[0] >= 0);
	fds = t_nr_fds();
	CU_ASSERT_FATAL(pthread_create(&th, NULL, t_silent_peer, p) == 0);
	setenv("SYSHAX_CONNECT_TIMEOUT_MS", "400", 1);
	t0 = t_now_ms();
	CU_ASSERT_EQUAL(t_open_at(SYSHAX_BACKEND_DAEMON, path), -ETIMEDOUT);
	ms = t_now_ms() - t0;
	unsetenv("SYSHAX_CONNECT_TIMEOUT_MS");
	pthread_join(th, NULL);
	CU_ASSERT(ms >= 400 && ms <= 400 + T_SLACK_MS);
	CU_ASSERT_EQUAL(p[1], 1);	/* the library closed its end */
	CU_ASSERT_EQUAL(t_nr_fds(), fds);
	printf("(%.0f ms) ", ms);
	close(p[0]);
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

/* ---- Which sockets a client with no path tries ------------------------ */

/* Checks inside a child (which may have dropped root): each failure is
 * printed, and the child's exit status says whether any happened. */
static int g_child_fails;
#define T_CHILD(expr) do { if (!(expr)) { fprintf(stderr, \
	"rt_open_ut:%d: failed: %s (tried: %s)\n", __LINE__, #expr, \
	syshax_open_tried()); g_child_fails++; } } while (0)

static int t_daemon_default(void)
{
	return t_open_at(SYSHAX_BACKEND_DAEMON, NULL);
}

static int t_tried_has(const char *path, const char *err)
{
	char want[256];

	snprintf(want, sizeof(want), "%s (%s)", path, err);
	return strstr(syshax_open_tried(), want) != NULL;
}

/* A bound socket nobody listens on, connectable by anyone. */
static int t_dead_socket(const char *path)
{
	int fd = t_socket_at(path, 0);

	chmod(path, 0777);
	return fd;
}

/* Not root: $XDG_RUNTIME_DIR's socket, then the system one. */
static void t_user_paths(const char *xdg_sock, const char *sys_sock)
{
	char xdg[128];
	int fd;

	snprintf(xdg, sizeof(xdg), "%s/xdg", g_dir);
	setenv("XDG_RUNTIME_DIR", xdg, 1);
	setenv("SYSHAX_SYSTEM_SOCKET", sys_sock, 1);
	/* No user daemon, a system socket that refuses: it was tried. */
	fd = t_dead_socket(sys_sock);
	T_CHILD(t_daemon_default() == -ECONNREFUSED);
	T_CHILD(t_tried_has(xdg_sock, "No such file or directory"));
	T_CHILD(t_tried_has(sys_sock, "No syshaxd listening on the socket"));
	/* Without $XDG_RUNTIME_DIR: the system socket alone, and the
	 * message says why the user's was not tried. */
	unsetenv("XDG_RUNTIME_DIR");
	T_CHILD(t_daemon_default() == -ECONNREFUSED);
	T_CHILD(strstr(syshax_open_tried(), "$XDG_RUNTIME_DIR unset") != NULL);
	T_CHILD(t_tried_has(sys_sock, "No syshaxd listening on the socket"));
	setenv("XDG_RUNTIME_DIR", xdg, 1);
	close(fd);
	unlink(sys_sock);
	/* Nothing anywhere: -ENOENT, both paths named. */
	T_CHILD(t_daemon_default() == -ENOENT);
	T_CHILD(t_tried_has(xdg_sock, "No such file or directory"));
	T_CHILD(t_tried_has(sys_sock, "No such file or directory"));
}

static void t_fallback(void)
{
	char xdg_sock[160], sys_sock[128], xdg_dir[96];
	int status = -1, fd, ret;
	pid_t pid;

	snprintf(xdg_dir, sizeof(xdg_dir), "%s/xdg", g_dir);
	mkdir(xdg_dir, 0777);
	snprintf(xdg_sock, sizeof(xdg_sock), "%s/syshax", xdg_dir);
	mkdir(xdg_sock, 0777);
	chmod(g_dir, 0777);
	chmod(xdg_dir, 0777);
	chmod(xdg_sock, 0777);
	snprintf(xdg_sock, sizeof(xdg_sock), "%s/syshax/syshaxd.sock", xdg_dir);
	snprintf(sys_sock, sizeof(sys_sock), "%s/sys.sock", g_dir);
	unsetenv("SYSHAX_DEVICE");

	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (!pid) {
		/* As root, check the non-root order as nobody. */
		if (!geteuid() && (setgid(65534) || setuid(65534)))
			_exit(99);
		t_user_paths(xdg_sock, sys_sock);
		_exit(g_child_fails ? 1 : 0);
	}
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	unlink(sys_sock);

	/* Root keeps its one path: the system socket, never the user's. */
	if (geteuid()) {
		printf("\n  SKIP: root's socket path: not root\n");
	} else {
		setenv("XDG_RUNTIME_DIR", xdg_dir, 1);
		setenv("SYSHAX_SYSTEM_SOCKET", sys_sock, 1);
		fd = t_dead_socket(xdg_sock);
		ret = t_daemon_default();
		CU_ASSERT_EQUAL(ret, -ENOENT);
		CU_ASSERT_PTR_NULL(strstr(syshax_open_tried(), xdg_sock));
		CU_ASSERT(t_tried_has(sys_sock, "No such file or directory"));
		close(fd);
		unlink(xdg_sock);
	}
	unsetenv("SYSHAX_SYSTEM_SOCKET");
	unsetenv("XDG_RUNTIME_DIR");
	snprintf(xdg_sock, sizeof(xdg_sock), "%s/syshax", xdg_dir);
	rmdir(xdg_sock);
	rmdir(xdg_dir);
}

/* Every failure path names what it tried; a failed open of a given path
 * names that path. */
static void t_tried_named(void)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/none.sock", g_dir);
	CU_ASSERT_EQUAL(t_open_at(SYSHAX_BACKEND_DAEMON, path), -ENOENT);
	CU_ASSERT(t_tried_has(path, "No such file or directory"));
	CU_ASSERT_EQUAL(t_open_at(SYSHAX_BACKEND_KERNEL, "/dev/null"), -ENOTTY);
	CU_ASSERT(t_tried_has("/dev/null", "Not a sysHAX device"));
	/* A bad call clears it. */
	CU_ASSERT_EQUAL(syshax_open(NULL, NULL), -EINVAL);
	CU_ASSERT_STRING_EQUAL(syshax_open_tried(), "");
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
		{ "backlog full: -ETIMEDOUT, no fd left",
		  t_timeout_backlog },
		{ "never accepted: -ETIMEDOUT, no fd left",
		  t_timeout_unaccepted },
		{ "accepted, no welcome: -ETIMEDOUT, no fd left",
		  t_timeout_silent },
		{ "no path, not root: user's socket, then the system's",
		  t_fallback },
		{ "a failed open names the paths it tried", t_tried_named },
	};
	int ret;

	snprintf(g_dir, sizeof(g_dir), "/tmp/rt_open_ut.XXXXXX");
	if (!mkdtemp(g_dir))
		return 1;
	ret = T_RUN_SUITE("open errors", NULL, NULL, tests);
	rmdir(g_dir);
	return ret;
}
