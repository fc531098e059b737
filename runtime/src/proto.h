/* SPDX-License-Identifier: MIT */
/*
 * Wire protocol between libsyshax-rt's userspace backend and syshaxd's
 * broker (private: both sides are built from this tree).
 *
 * Two SOCK_SEQPACKET channels per client:
 *  - the request socket (connected to the broker's path): the client sends
 *    one request, the broker sends one reply, in order. A request is a
 *    struct shrt_req, then the UAPI args struct of cmd (the ioctl number),
 *    then the array the args point to (jobs for SUBMIT, cpls for
 *    ENGINE_COMPLETE); user pointers inside args are ignored. A reply is a
 *    struct shrt_rep, then the args as the ioctl would have written them,
 *    then the fetched jobs for ENGINE_FETCH, or the args.nr entries for
 *    CTX_STATS (at most SHRT_MAX_CTX_STATS). File descriptors travel as
 *    SCM_RIGHTS: the memfd in replies to BUF_ALLOC, BUF_IMPORT and
 *    ENGINE_MAP; a new export socket (daemon/broker/bufs.c) in a reply to
 *    BUF_EXPORT, which the caller sends back in a BUF_IMPORT request.
 *  - the event socket: the broker's first message on a new connection (on
 *    the request socket, framed as a reply: struct shrt_rep, then struct
 *    shrt_welcome) carries one end of a socketpair. On it the broker
 *    pushes each completion as one message (a struct syshax_completion), so
 *    it is readable exactly when syshax_wait() would not block; for an
 *    engine it carries one-byte notes "jobs are queued".
 *
 * ENGINE_FETCH is parked: the broker replies when a job is queued or the
 * timeout ends. SHRT_CMD_FETCH_CANCEL (no reply of its own) makes a parked
 * fetch reply at once, with -EINTR when it holds no job.
 */
#ifndef SHRT_PROTO_H
#define SHRT_PROTO_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <linux/types.h>
#include "syshax.h"

#define SHRT_PROTO_MAGIC	0x53485852U	/* "SHXR" */
#define SHRT_PROTO_VERSION	3

struct shrt_welcome {
	__u32 magic;		/* SHRT_PROTO_MAGIC */
	__u32 version;		/* SHRT_PROTO_VERSION */
};

struct shrt_req {
	__u32 cmd;		/* SYSHAX_IOC_* or SHRT_CMD_* */
	__u32 len;		/* bytes that follow this header */
	/* Completions the client read from its event socket since its last
	 * request: until then the broker counts them against max_jobs_ctx,
	 * as the module counts completions not yet reaped. */
	__u32 reaped;
	__u32 pad;
};

struct shrt_rep {
	__s32 ret;		/* what the ioctl would return: >= 0 or -errno */
	__u32 len;		/* bytes that follow this header */
};

/* Ends a parked ENGINE_FETCH now (no args, no reply). */
#define SHRT_CMD_FETCH_CANCEL	_IO(SYSHAX_IOC_MAGIC, 0x31)

/* Most jobs in one ENGINE_FETCH reply, most cpls in one ENGINE_COMPLETE. */
#define SHRT_MAX_FETCH		64
#define SHRT_MAX_COMPLETE	128

/* Largest message either side sends (a full SUBMIT or FETCH reply). */
#define SHRT_MAX_MSG		(sizeof(struct shrt_req) + 64 + \
				 128 * sizeof(struct syshax_engine_job))

/* Most entries in one CTX_STATS reply (the rest: total says how many). */
#define SHRT_MAX_CTX_STATS	((SHRT_MAX_MSG - sizeof(struct shrt_rep) - \
				  sizeof(struct syshax_ctx_stats_args)) / \
				 sizeof(struct syshax_ctx_stat))

/* syshaxd's default listening path: /run/syshax/syshaxd.sock as root, else
 * under $XDG_RUNTIME_DIR; -ENOENT without one, -ENAMETOOLONG. (A client
 * with no path tries more: see open_daemon_default() in open.c.) */
static inline int shrt_default_path(char *buf, size_t len)
{
	const char *dir = "/run";
	int n;

	if (geteuid()) {
		dir = getenv("XDG_RUNTIME_DIR");
		if (!dir || !*dir)
			return -ENOENT;
	}
	n = snprintf(buf, len, "%s/syshax/syshaxd.sock", dir);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Room for the one fd a message carries. */
union shrt_fd_cmsg {
	struct cmsghdr h;
	char buf[CMSG_SPACE(sizeof(int))];
};

/* Makes m carry fd (SCM_RIGHTS), with c as its control buffer. */
static inline void shrt_msg_attach_fd(struct msghdr *m, union shrt_fd_cmsg *c,
				      int fd)
{
	memset(c, 0, sizeof(*c));
	m->msg_control = c->buf;
	m->msg_controllen = sizeof(c->buf);
	c->h.cmsg_level = SOL_SOCKET;
	c->h.cmsg_type = SCM_RIGHTS;
	c->h.cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(&c->h), &fd, sizeof(int));
}

#endif /* SHRT_PROTO_H */
