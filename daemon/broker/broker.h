/* SPDX-License-Identifier: MIT */
/*
 * syshaxd's userspace broker: with no /dev/syshax, the daemon serves the
 * UAPI (buffers as memfds, the job queue, engines) over a unix socket, with
 * the module's validation, limits, errnos and lifetime rules.
 *
 * Wire protocol: runtime/src/proto.h; design notes: docs/userspace-backend.md.
 * Build: daemon/broker.mk sets SHXD_BROKER_OBJS (link them into syshaxd)
 * and SHXD_BROKER_LIBS (the libraries they need).
 *
 *	struct shxd_broker_conf c = { .socket_path = NULL };	// default path
 *	struct shxd_broker *b;
 *	shxd_broker_create(&c, &b);	// socket bound and listening
 *	...start engine threads that connect to shxd_broker_path(b)...
 *	shxd_broker_run(b, &g_stop);	// until g_stop is set
 *	shxd_broker_destroy(b);
 *
 * or shxd_broker_serve(&c, &g_stop) for all three in one call.
 */
#ifndef SHXD_BROKER_H
#define SHXD_BROKER_H

#include <signal.h>
#include <sys/types.h>

/* Defaults; they mirror the module's parameters of the same meaning. */
#define SHXD_DEF_MAX_JOBS_CTX		1024	/* jobs one context may hold */
#define SHXD_DEF_MAX_JOBS_GLOBAL	8192	/* jobs all contexts may hold */
#define SHXD_DEF_MAX_SUBMIT		128	/* jobs per SUBMIT */
/* Each buffer holds a memfd open in the daemon, each context two sockets:
 * these keep one user from taking every descriptor. */
#define SHXD_DEF_MAX_BUFS_CTX		4096	/* handles one context holds */
#define SHXD_DEF_MAX_BUFS_USER		4096	/* buffers charged to a uid */
#define SHXD_DEF_MAX_CTX_USER		256	/* contexts a uid has open */

struct shxd_broker_conf {
	/* NULL: /run/syshax/syshaxd.sock as root, else
	 * $XDG_RUNTIME_DIR/syshax/syshaxd.sock. The directory is created
	 * (0755) when missing; a stale socket file is replaced, any other
	 * file is not (-ENOTSOCK). */
	const char *socket_path;
	unsigned int socket_mode;	/* 0: 0666 (isolation is per client) */
	/* Jobs a context may have queued, in flight or completed but not yet
	 * delivered; 0: SHXD_DEF_MAX_JOBS_CTX. */
	unsigned int max_jobs_ctx;
	/* Jobs queued or in flight in all contexts; 0: the default. */
	unsigned int max_jobs_global;
	/* Jobs queued or in flight of one uid's contexts, so one user
	 * cannot fill the global limit; 0: half of max_jobs_global (the
	 * module's max_jobs_user default). */
	unsigned int max_jobs_user;
	/* Cap on buffer bytes; 0: half the machine's memory. */
	unsigned long long max_pinned_bytes;
	/* Cap on the bytes of the buffers one uid made; 0: half of
	 * max_pinned_bytes. A client's RLIMIT_MEMLOCK applies too (unless it
	 * has CAP_IPC_LOCK or is the daemon's own user). */
	unsigned long long max_pinned_user_bytes;
	/* 0: the SHXD_DEF_ defaults above. */
	unsigned int max_bufs_ctx, max_bufs_user, max_ctx_user;
	/* With shared rings, how long the loop keeps looking at them after
	 * the last entry before it sleeps (and wants kicks); 0: sleeps at
	 * once. Polling costs a CPU: for latency-bound hosts only. */
	unsigned int poll_us;
	/* Group whose members may attach engines besides root and the
	 * daemon's own user; (gid_t)-1: none. */
	gid_t engine_gid;
};

struct shxd_broker;

/* Binds and listens; returns 0 or -errno (-EADDRINUSE when a live broker
 * already answers on the path, -ENOTSOCK when a file other than a socket
 * is there: it is never replaced). */
int shxd_broker_create(const struct shxd_broker_conf *conf,
		       struct shxd_broker **out);
/* The socket path in use (owned by b). */
const char *shxd_broker_path(const struct shxd_broker *b);
/* 1 when create made the socket path's directory, else 0. */
int shxd_broker_made_dir(const struct shxd_broker *b);
/* Serves clients and engines in the calling thread until *stop becomes
 * non-zero (checked at least every 100 ms); returns 0 or -errno. */
int shxd_broker_run(struct shxd_broker *b, volatile sig_atomic_t *stop);
/* Closes every connection (as if each peer had closed) and the socket,
 * unlinks the path and frees b. */
void shxd_broker_destroy(struct shxd_broker *b);

/* create + run + destroy. */
int shxd_broker_serve(const struct shxd_broker_conf *conf,
		      volatile sig_atomic_t *stop);

#endif /* SHXD_BROKER_H */
