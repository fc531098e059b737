// SPDX-License-Identifier: MIT
/* Private daemons a tool starts: a whole syshaxd, or an engine for the module. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "privd.h"
#include "syshax/rt.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void pause_10ms(void)
{
	const struct timespec t = { 0, 10000000 };

	nanosleep(&t, NULL);
}

int privd_spawn(const char *exe, char *const argv[], const char *device,
		const char *log)
{
	pid_t parent = getpid(), pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int fd = log ? open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644) : -1;
		sigset_t none;

		/* The daemon is the tool's: SIGTERM when the thread that
		 * started it ends, the tool killed or crashed included (a
		 * tool stops its daemons before its threads end). */
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) || getppid() != parent)
			_exit(127);

		/* exec keeps the mask and ignored signals: a parent that
		 * blocks SIGTERM for sigwait (syshax-serve) or ignores
		 * SIGPIPE must not hand that to the daemon. */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		if (fd >= 0 && dup2(fd, STDERR_FILENO) < 0)
			_exit(127);
		if (device)
			setenv("SYSHAX_DEVICE", device, 1);
		execvp(exe, argv);
		fprintf(stderr, "cannot run %s: %s\n", exe, strerror(errno));
		_exit(127);
	}
	return pid;
}

void privd_print_log(const struct privd *d, const char *why)
{
	char line[512];
	FILE *f = d->log[0] ? fopen(d->log, "r") : NULL;

	fprintf(stderr, "%s: private syshaxd %s; its log:\n",
		program_invocation_short_name, why);
	while (f && fgets(line, sizeof(line), f))
		fprintf(stderr, "  %s", line);
	if (f)
		fclose(f);
}

void privd_stop(struct privd *d)
{
	int status = 0;

	if (d->pid > 0) {
		kill(d->pid, SIGTERM);
		waitpid(d->pid, &status, 0);
		d->pid = 0;
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			privd_print_log(d, "did not stop cleanly");
	}
	if (d->sock[0])
		unlink(d->sock);
	if (d->log[0])
		unlink(d->log);
	if (d->dir[0])
		rmdir(d->dir);
	d->dir[0] = d->sock[0] = d->log[0] = '\0';
}

int privd_wait_engine(struct syshax *sh)
{
	uint64_t deadline = now_ns() + PRIVD_START_NS;
	struct syshax_stats_args st;

	for (;;) {
		int ret = syshax_stats(sh, &st);

		if (ret)
			return ret;
		if (st.engines)
			return 0;
		if (now_ns() > deadline)
			return -ETIMEDOUT;
		pause_10ms();
	}
}

/* The private folder, its log path and the socket path in it. */
static int make_dir(struct privd *d)
{
	snprintf(d->dir, sizeof(d->dir), "/tmp/syshaxd.XXXXXX");
	if (!mkdtemp(d->dir)) {
		d->dir[0] = '\0';
		return -errno;
	}
	snprintf(d->sock, sizeof(d->sock), "%s/syshaxd.sock", d->dir);
	snprintf(d->log, sizeof(d->log), "%s/syshaxd.log", d->dir);
	return 0;
}

/* Starts exe with fixed options then extra; the daemon's pid in d. */
static int spawn_with(const char *exe, const char *const *fixed,
		      char *const *extra, const char *device, struct privd *d)
{
	char *argv[32] = { (char *)exe };
	unsigned int n = 1;
	int ret;

	while (*fixed && n < 31)
		argv[n++] = (char *)*fixed++;
	while (extra && *extra && n < 31)
		argv[n++] = *extra++;
	argv[n] = NULL;
	ret = privd_spawn(exe, argv, device, d->log);
	if (ret < 0)
		return ret;
	d->pid = ret;
	return 0;
}

/* A daemon that exited at start: reaped, its log shown. */
static int died(struct privd *d)
{
	d->pid = 0;
	privd_print_log(d, "exited at start");
	return -ECHILD;
}

int privd_start_userspace(const char *exe, char *const *extra,
			  struct privd *d, struct syshax **sh)
{
	struct syshax_open_opts oo = { .backend = SYSHAX_BACKEND_DAEMON };
	uint64_t deadline = now_ns() + PRIVD_START_NS;
	const char *fixed[] = { "--foreground", "--userspace", "--socket",
				NULL, NULL };
	struct stat st;
	int ret = make_dir(d);

	if (ret)
		return ret;
	fixed[3] = d->sock;
	ret = spawn_with(exe, fixed, extra, NULL, d);
	if (ret)
		return ret;
	/* The socket file appears once syshaxd listens on it. */
	while (stat(d->sock, &st)) {
		if (waitpid(d->pid, NULL, WNOHANG) == d->pid)
			return died(d);
		if (now_ns() > deadline)
			return -ETIMEDOUT;
		pause_10ms();
	}
	oo.path = d->sock;
	ret = syshax_open(sh, &oo);
	if (ret)
		return ret;
	return privd_wait_engine(*sh);
}

int privd_start_engine(const char *exe, char *const *extra,
		       const char *device, struct privd *d, struct syshax *sh)
{
	static const char *const fixed[] = { "--engine-only", "--foreground",
					     NULL };
	int ret = make_dir(d);

	if (!ret)
		ret = spawn_with(exe, fixed, extra, device, d);
	if (!ret)
		ret = privd_wait_engine(sh);
	if (ret == -ETIMEDOUT && d->pid > 0 &&
	    waitpid(d->pid, NULL, WNOHANG) == d->pid)
		return died(d);
	return ret;
}
