// SPDX-License-Identifier: MIT
/* syshax_open(): choosing and opening a backend; handle-wide queries. */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "rt_int.h"

#define SHRT_DEV_PATH	"/dev/syshax"

static int open_kind(struct syshax *sh, enum syshax_backend kind,
		     const char *path)
{
	sh->kind = kind;
	if (kind == SYSHAX_BACKEND_KERNEL) {
		sh->be = &__shrt_kernel_backend;
		return __shrt_kernel_open(sh, path ? path : SHRT_DEV_PATH);
	}
	sh->be = &__shrt_daemon_backend;
	return __shrt_daemon_open(sh, path);
}

/* $SYSHAX_DEVICE may name a device or a socket: its file type decides. */
static int open_env(struct syshax *sh, const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return -errno;
	if (S_ISCHR(st.st_mode))
		return open_kind(sh, SYSHAX_BACKEND_KERNEL, path);
	if (S_ISSOCK(st.st_mode))
		return open_kind(sh, SYSHAX_BACKEND_DAEMON, path);
	return -ENOTSUP;
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
	if (!ret)
		ret = sh->be->version(sh, &sh->ver);
	if (!ret)
		shrt_ring_defaults(sh);
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
