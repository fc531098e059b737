// SPDX-License-Identifier: MIT
/* syshax_open(): choosing and opening a backend; handle-wide queries. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "rt_int.h"

#define SHRT_DEV_PATH	"/dev/syshax"
#define SHRT_SYSTEM_SOCKET	"/run/syshax/syshaxd.sock"

/* What the last syshax_open() of this thread tried, for syshax_open_tried():
 * "path (error); ..." (empty after a success). */
static __thread char g_tried[1024];
/* The path last opened, for a handshake that fails after the open. */
static __thread char g_opened[sizeof(((struct sockaddr_un *)0)->sun_path)];

static void tried_add(const char *fmt, ...)
{
	size_t n = strlen(g_tried);
	va_list ap;

	if (n + 3 >= sizeof(g_tried))
		return;
	if (n) {
		strcpy(g_tried + n, "; ");
		n += 2;
	}
	va_start(ap, fmt);
	vsnprintf(g_tried + n, sizeof(g_tried) - n, fmt, ap);
	va_end(ap);
}

static int tried(const char *what, const char *path, int ret)
{
	if (ret)
		tried_add("%s%s (%s)", what, path, syshax_strerror(ret));
	else
		snprintf(g_opened, sizeof(g_opened), "%s", path);
	return ret;
}

const char *syshax_open_tried(void)
{
	return g_tried;
}

/* The system daemon's socket: /run/syshax/syshaxd.sock, or, for the tests
 * only, $SYSHAX_SYSTEM_SOCKET. */
static const char *system_socket(void)
{
	const char *p = getenv("SYSHAX_SYSTEM_SOCKET");

	return p && *p ? p : SHRT_SYSTEM_SOCKET;
}

/* syshaxd with no path given: as root the system socket; else the user's
 * own daemon ($XDG_RUNTIME_DIR/syshax/syshaxd.sock), then the system one.
 * The first error other than -ENOENT is the one worth reporting. */
static int open_daemon_default(struct syshax *sh)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int ret, err = -ENOENT;

	if (geteuid()) {
		if (!xdg || !*xdg) {
			tried_add("$XDG_RUNTIME_DIR unset");
		} else if (snprintf(path, sizeof(path), "%s/syshax/syshaxd.sock",
				    xdg) >= (int)sizeof(path)) {
			err = tried("$XDG_RUNTIME_DIR/syshax/syshaxd.sock", "",
				    -ENAMETOOLONG);
		} else {
			ret = tried("", path, __shrt_daemon_open(sh, path));
			if (!ret)
				return 0;
			err = ret;
		}
	}
	ret = tried("", system_socket(),
		    __shrt_daemon_open(sh, system_socket()));
	if (!ret)
		return 0;
	return err == -ENOENT ? ret : err;
}

static int open_kind(struct syshax *sh, enum syshax_backend kind,
		     const char *path)
{
	sh->kind = kind;
	if (kind == SYSHAX_BACKEND_KERNEL) {
		sh->be = &__shrt_kernel_backend;
		path = path ? path : SHRT_DEV_PATH;
		return tried("", path, __shrt_kernel_open(sh, path));
	}
	sh->be = &__shrt_daemon_backend;
	if (!path)
		return open_daemon_default(sh);
	return tried("", path, __shrt_daemon_open(sh, path));
}

/* $SYSHAX_DEVICE may name a device or a socket: its file type decides. */
static int open_env(struct syshax *sh, const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return tried("", path, -errno);
	if (S_ISCHR(st.st_mode))
		return open_kind(sh, SYSHAX_BACKEND_KERNEL, path);
	if (S_ISSOCK(st.st_mode))
		return open_kind(sh, SYSHAX_BACKEND_DAEMON, path);
	return tried("", path, -ENOTSUP);
}

/* Tries $SYSHAX_DEVICE, /dev/syshax, then the daemon; the first error other
 * than -ENOENT is the one worth reporting. */
static int open_auto(struct syshax *sh)
{
	const char *env = getenv("SYSHAX_DEVICE");
	int ret, err = -ENOENT;

	if (env && *env) {
		ret = open_env(sh, env);
		if (!ret)
			return 0;
		err = ret;
	}
	ret = open_kind(sh, SYSHAX_BACKEND_KERNEL, NULL);
	if (!ret)
		return 0;
	if (err == -ENOENT)
		err = ret;
	ret = open_kind(sh, SYSHAX_BACKEND_DAEMON, NULL);
	if (!ret)
		return 0;
	return err == -ENOENT ? ret : err;
}

int syshax_open(struct syshax **out, const struct syshax_open_opts *opts)
{
	struct syshax *sh;
	int ret;

	g_tried[0] = 0;
	if (!out)
		return -EINVAL;
	*out = NULL;
	if (opts && (opts->flags || opts->backend > SYSHAX_BACKEND_DAEMON))
		return -EINVAL;
	sh = calloc(1, sizeof(*sh));
	if (!sh)
		return -ENOMEM;
	sh->fd = -1;
	sh->evfd = -1;
	pthread_mutex_init(&sh->req_lock, NULL);
	pthread_mutex_init(&sh->fd_lock, NULL);
	if (!opts || opts->backend == SYSHAX_BACKEND_AUTO) {
		if (opts && opts->path)
			ret = open_env(sh, opts->path);
		else
			ret = open_auto(sh);
	} else {
		ret = open_kind(sh, opts->backend, opts->path);
	}
	if (!ret) {
		ret = sh->be->version(sh, &sh->ver);
		if (ret)
			tried_add("%s (%s)", g_opened, syshax_strerror(ret));
	}
	if (!ret) {
		shrt_ring_defaults(sh);
		g_tried[0] = 0;
	}
	if (ret) {
		syshax_close(sh);
		return ret;
	}
	*out = sh;
	return 0;
}

void syshax_close(struct syshax *sh)
{
	if (!sh)
		return;
	if (sh->be && sh->ring_ready)
		shrt_ring_close(sh);
	if (sh->be)
		sh->be->close(sh);
	pthread_mutex_destroy(&sh->req_lock);
	pthread_mutex_destroy(&sh->fd_lock);
	free(sh);
}

/* No handle, no backend: SYSHAX_BACKEND_AUTO, which no open handle has. */
enum syshax_backend syshax_backend(const struct syshax *sh)
{
	return sh ? sh->kind : SYSHAX_BACKEND_AUTO;
}

int syshax_fd(const struct syshax *sh)
{
	if (!sh)
		return -EINVAL;
	/* The handle is the caller's, allocated writable: the const says
	 * the call changes nothing the caller sees. */
	if (sh->ring_ready && !__atomic_load_n(&sh->fd_polled, __ATOMIC_ACQUIRE))
		shrt_ring_fd_polled((struct syshax *)sh);
	return sh->evfd;
}

int syshax_version(struct syshax *sh, struct syshax_version_args *v)
{
	if (!sh || !v)
		return -EINVAL;
	return sh->be->version(sh, v);
}

int syshax_set_spin(struct syshax *sh, unsigned int us)
{
	if (!sh)
		return -EINVAL;
	__atomic_store_n(&sh->spin_us, us, __ATOMIC_RELAXED);
	return 0;
}

int syshax_stats(struct syshax *sh, struct syshax_stats_args *st)
{
	if (!sh || !st)
		return -EINVAL;
	return sh->be->stats(sh, st);
}
