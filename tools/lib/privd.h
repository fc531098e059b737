/* SPDX-License-Identifier: MIT */
/*
 * Private daemons a tool starts for itself (syshax-bench, syshax-run): a
 * whole syshaxd on a socket in a temporary folder, or an engine-only one
 * for the module when none is attached. The daemon's log goes to a file in
 * that folder and is printed when it fails to start or to stop cleanly.
 *
 *	struct privd d = { 0 };
 *	struct syshax *sh;
 *	char *extra[] = { "--threads", "2", NULL };
 *	privd_start_userspace("syshaxd", extra, &d, &sh);
 *	...
 *	syshax_close(sh);
 *	privd_stop(&d);
 */
#ifndef PRIVD_H
#define PRIVD_H

#include <sys/types.h>

struct syshax;

#define PRIVD_START_NS	(10ULL * 1000000000ULL)	/* how long a start may take */

/* A daemon this process started: pid, private folder, socket and log. */
struct privd {
	pid_t pid;
	char dir[64];
	char sock[96];
	char log[96];
};

/* Runs exe argv in a child (SYSHAX_DEVICE=device when not NULL), its
 * stderr to log when not NULL. Returns the pid or -errno. */
int privd_spawn(const char *exe, char *const argv[], const char *device,
		const char *log);
/* SIGTERM, wait, the log printed when the daemon did not exit 0, and the
 * private folder removed. Safe on a zeroed struct. */
void privd_stop(struct privd *d);
/* The daemon's log on stderr, after a line saying why. */
void privd_print_log(const struct privd *d, const char *why);
/* Waits until sh sees an engine attached. */
int privd_wait_engine(struct syshax *sh);
/* syshaxd --userspace (plus extra options, NULL-terminated, may be NULL)
 * on a private socket; opens *sh on it once an engine is attached. */
int privd_start_userspace(const char *exe, char *const *extra,
			  struct privd *d, struct syshax **sh);
/* syshaxd --engine-only (plus extra) on device, which sh has open; returns
 * once sh sees it attached. */
int privd_start_engine(const char *exe, char *const *extra,
		       const char *device, struct privd *d, struct syshax *sh);

#endif /* PRIVD_H */
