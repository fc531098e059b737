// SPDX-License-Identifier: MIT
/*
 * syshaxd's systemd readiness (Type=notify): READY=1 reaches
 * $NOTIFY_SOCKET only once the engines are attached (and a preload file
 * loaded); a daemon whose preload fails exits 1 without it.
 *   notify_test <syshaxd>
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CUnit/Basic.h>

#include "../t_cunit.h"
#include "syshax/rt.h"

static const char *g_exe;
static char g_dir[64];

static pid_t spawn(char *const argv[])
{
	pid_t pid = fork();

	if (!pid) {
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

/* A datagram socket at dir/notify, named in $NOTIFY_SOCKET. */
static int listen_notify(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	snprintf(a.sun_path, sizeof(a.sun_path), "%s/notify", g_dir);
	unlink(a.sun_path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)))
		return -1;
	setenv("NOTIFY_SOCKET", a.sun_path, 1);
	return fd;
}

/* The next message within ms, or "" on a timeout. */
static void next_msg(int fd, char *buf, size_t len, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n = 0;

	buf[0] = '\0';
	if (poll(&p, 1, ms) == 1)
		n = recv(fd, buf, len - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
}

static void t_ready(void)
{
	char sock[128], msg[256];
	char *argv[] = { (char *)g_exe, "--foreground", "--userspace",
			 "--socket", sock, "--threads", "1", NULL };
	struct syshax_open_opts oo = { .backend = SYSHAX_BACKEND_DAEMON,
				       .path = sock };
	struct syshax_stats_args st;
	struct syshax *sh;
	int fd = listen_notify(), status = -1;
	pid_t pid;

	CU_ASSERT_FATAL(fd >= 0);
	snprintf(sock, sizeof(sock), "%s/d.sock", g_dir);
	pid = spawn(argv);
	next_msg(fd, msg, sizeof(msg), 20000);
	CU_ASSERT_PTR_NOT_NULL(strstr(msg, "READY=1"));
	/* Ready means served: the engine is attached already. */
	CU_ASSERT_EQUAL_FATAL(syshax_open(&sh, &oo), 0);
	CU_ASSERT_EQUAL(syshax_stats(sh, &st), 0);
	CU_ASSERT(st.engines >= 1);
	syshax_close(sh);
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(fd);
}

static void t_preload_fails(void)
{
	char sock[128], msg[256];
	char *argv[] = { (char *)g_exe, "--foreground", "--userspace",
			 "--socket", sock, "--threads", "1", "--model-dir",
			 g_dir, "--preload", "missing.gguf", NULL };
	int fd = listen_notify(), status = -1;
	pid_t pid;

	CU_ASSERT_FATAL(fd >= 0);
	snprintf(sock, sizeof(sock), "%s/e.sock", g_dir);
	pid = spawn(argv);
	waitpid(pid, &status, 0);
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 1);
	next_msg(fd, msg, sizeof(msg), 0);
	CU_ASSERT_PTR_NULL(strstr(msg, "READY=1"));
	close(fd);
}

int main(int argc, char **argv)
{
	static const struct t_test tests[] = {
		{ "READY=1 once engines are attached", t_ready },
		{ "a failed preload never says ready", t_preload_fails },
	};
	char path[128];
	int ret;

	if (argc != 2) {
		fprintf(stderr, "usage: notify_test <syshaxd>\n");
		return 2;
	}
	g_exe = argv[1];
	snprintf(g_dir, sizeof(g_dir), "/tmp/notify_test.XXXXXX");
	if (!mkdtemp(g_dir))
		return 1;
	ret = T_RUN_SUITE("syshaxd notify", NULL, NULL, tests);
	snprintf(path, sizeof(path), "%s/notify", g_dir);
	unlink(path);
	rmdir(g_dir);
	return ret;
}
