// SPDX-License-Identifier: MIT
/* The suite's engine process: start, kill, restart. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "beside.h"
#include "t.h"

#define ENGINE_ATTACH_NS	(10 * T_SEC)

static pid_t g_engine = -1;

static bool has_engine(const struct syshax_stats_args *st, void *arg)
{
	(void)arg;
	return st->engines > 0;
}

static bool no_engine(const struct syshax_stats_args *st, void *arg)
{
	(void)arg;
	return st->engines == 0;
}

int t_engine_start(void)
{
	static const char *const rel[] = { "syshaxd", "../../syshaxd" };
	const char *cmd = getenv("SYSHAX_ENGINE_CMD");
	char path[PATH_MAX];
	pid_t pid;
	int ret;

	if (g_engine > 0)
		return -EBUSY;
	/* An engine context just closed (the suite's own) may still be
	 * counted: "attached" below must mean the new one. */
	ret = t_stats_until(no_engine, NULL, 5 * T_SEC);
	if (ret)
		return ret;
	/* syshaxd beside the suite (build/syshaxd from build/tests/conformance/,
	 * or the same folder, as in the VM's /bin), else the one on PATH. */
	beside_path(path, sizeof(path), "syshaxd", rel,
		    sizeof(rel) / sizeof(rel[0]));
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (cmd && *cmd) {
			/* exec in the shell: the pid we kill is the engine. */
			char line[4096];

			snprintf(line, sizeof(line), "exec %s", cmd);
			execl("/bin/sh", "sh", "-c", line, (char *)NULL);
		} else {
			execlp(path, path, "--engine-only", "--foreground",
			       (char *)NULL);
		}
		fprintf(stderr, "conformance: cannot run the engine %s: %s\n",
			cmd && *cmd ? cmd : path, strerror(errno));
		_exit(127);
	}
	g_engine = pid;
	ret = t_stats_until(has_engine, NULL, ENGINE_ATTACH_NS);
	if (ret) {
		int status;

		fprintf(stderr, "conformance: the engine did not attach\n");
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		g_engine = -1;
	}
	return ret;
}

int t_engine_stop(int sig, int *status)
{
	if (g_engine <= 0)
		return -ESRCH;
	if (kill(g_engine, sig))
		return -errno;
	if (waitpid(g_engine, status, 0) < 0)
		return -errno;
	g_engine = -1;
	return t_stats_until(no_engine, NULL, 5 * T_SEC);
}

bool t_engine_running(void)
{
	return g_engine > 0;
}
