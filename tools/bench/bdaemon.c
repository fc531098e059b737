// SPDX-License-Identifier: MIT
/* Daemons a benchmark starts: a private syshaxd, an engine for the module. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "syshax/rt.h"

int bench_spawn(const char *exe, char *const argv[], const char *device)
{
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		if (device)
			setenv("SYSHAX_DEVICE", device, 1);
		execvp(exe, argv);
		fprintf(stderr, "syshax-bench: cannot run %s: %s\n", exe,
			strerror(errno));
		_exit(127);
	}
	return pid;
}

void bench_daemon_stop(struct bench_daemon *d)
{
	int status;

	if (d->pid > 0) {
		kill(d->pid, SIGTERM);
		waitpid(d->pid, &status, 0);
		d->pid = 0;
	}
	if (d->sock[0])
		unlink(d->sock);
	if (d->dir[0])
		rmdir(d->dir);
}

/* Waits until sh sees an engine attached. */
int bench_wait_engine(struct syshax *sh)
{
	uint64_t deadline = bench_now_ns() + BENCH_START_NS;
	const struct timespec pause = { 0, 10000000 };
	struct syshax_stats_args st;

	for (;;) {
		int ret = syshax_stats(sh, &st);

		if (ret)
			return ret;
		if (st.engines)
			return 0;
		if (bench_now_ns() > deadline)
			return -ETIMEDOUT;
		nanosleep(&pause, NULL);
	}
}

/* syshaxd (broker + engine) on a private socket; opens *sh on it. */
int bench_start_userspace(const char *exe, char *const *extra,
			  struct bench_daemon *d, struct syshax **sh)
{
	struct syshax_open_opts oo = { .backend = SYSHAX_BACKEND_DAEMON };
	uint64_t deadline = bench_now_ns() + BENCH_START_NS;
	const struct timespec pause = { 0, 10000000 };
	struct stat st;
	int ret;

	snprintf(d->dir, sizeof(d->dir), "/tmp/syshax-bench.XXXXXX");
	if (!mkdtemp(d->dir)) {
		d->dir[0] = '\0';
		return -errno;
	}
	snprintf(d->sock, sizeof(d->sock), "%s/syshaxd.sock", d->dir);
	{
		char *argv[24] = { (char *)exe, "--foreground", "--userspace",
				   "--socket", d->sock };
		unsigned int n = 5;

		while (extra && *extra && n < 23)
			argv[n++] = *extra++;
		argv[n] = NULL;
		ret = bench_spawn(exe, argv, NULL);
	}
	if (ret < 0)
		return ret;
	d->pid = ret;
	while (stat(d->sock, &st)) {
		if (bench_now_ns() > deadline ||
		    waitpid(d->pid, NULL, WNOHANG) == d->pid) {
			d->pid = 0;
			return -ETIMEDOUT;
		}
		nanosleep(&pause, NULL);
	}
	/* The socket file appears once syshaxd listens on it. */
	oo.path = d->sock;
	ret = syshax_open(sh, &oo);
	if (ret)
		return ret;
	return bench_wait_engine(*sh);
}
