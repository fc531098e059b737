// SPDX-License-Identifier: MIT
/* The suite's engine process: syshaxd --engine-only with a private
 * model_dir and a fixed number of worker threads. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "beside.h"
#include "t.h"

#define ATTACH_NS	(20 * T_SEC)

static pid_t g_engine = -1;

unsigned int t_engine_threads(void)
{
	const char *s = getenv("T_ENGINE_THREADS");
	unsigned long n = s && *s ? strtoul(s, NULL, 10) : 2;

	return n >= 1 && n <= 1024 ? (unsigned int)n : 2;
}

static int engines(unsigned int *n)
{
	struct syshax_stats_args st;
	int ret;

	memset(&st, 0, sizeof(st));
	ret = syshax_stats(g_c.sh, &st);
	if (!ret)
		*n = st.engines;
	return ret;
}

/* Polls until the engine count is (want_some ? > 0 : 0). */
static int engines_until(bool want_some, int64_t timeout_ns)
{
	uint64_t deadline = t_now_ns() + (uint64_t)timeout_ns;
	const struct timespec pause = { 0, 5 * T_MS };

	for (;;) {
		unsigned int n = 0;
		int ret = engines(&n);

		if (ret)
			return ret;
		if ((n > 0) == want_some)
			return 0;
		if (t_now_ns() >= deadline)
			return -ETIMEDOUT;
		if (g_engine > 0 && want_some &&
		    waitpid(g_engine, NULL, WNOHANG) == g_engine) {
			g_engine = -1;
			return -ECHILD;
		}
		nanosleep(&pause, NULL);
	}
}

int t_engine_start(void)
{
	static const char *const rel[] = { "syshaxd", "../../syshaxd" };
	const char *cmd = getenv("SYSHAX_ENGINE_CMD");
	char path[PATH_MAX], threads[16];
	pid_t pid;
	int ret;

	if (g_engine > 0)
		return -EBUSY;
	snprintf(threads, sizeof(threads), "%u", t_engine_threads());
	beside_path(path, sizeof(path), "syshaxd", rel, T_ARRAY_SIZE(rel));
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (cmd && *cmd) {
			/* exec in the shell: the pid we signal is the engine. */
			char line[8192];

			snprintf(line, sizeof(line),
				 "exec %s --model-dir '%s' --threads %s", cmd,
				 g_model_dir, threads);
			execl("/bin/sh", "sh", "-c", line, (char *)NULL);
		} else {
			execlp(path, path, "--engine-only", "--foreground",
			       "--model-dir", g_model_dir, "--threads", threads,
			       (char *)NULL);
		}
		fprintf(stderr, "engine_ops: cannot run the engine %s: %s\n",
			cmd && *cmd ? cmd : path, strerror(errno));
		_exit(127);
	}
	g_engine = pid;
	ret = engines_until(true, ATTACH_NS);
	if (ret && g_engine > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		g_engine = -1;
	}
	return ret;
}

int t_engine_stop(void)
{
	int status = 0;

	if (g_engine <= 0)
		return -ESRCH;
	if (kill(g_engine, SIGTERM))
		return -errno;
	if (waitpid(g_engine, &status, 0) < 0)
		return -errno;
	g_engine = -1;
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		printf("engine_ops: the engine did not stop cleanly (status "
		       "%#x)\n", status);
		return -EIO;
	}
	return engines_until(false, 5 * T_SEC);
}
