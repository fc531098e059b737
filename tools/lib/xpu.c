// SPDX-License-Identifier: MIT
/*
 * The xPU side (xpu.h): the stand-in in this process, or a worker in
 * another one reached over its Unix socket. For a worker, each buffer a
 * step names is exported and sent once; a step, a report and their
 * replies are one datagram each. A worker that hangs up, dies or answers
 * garbage is gone for good: every later call returns -EPIPE at once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "standin.h"
#include "xpu.h"

#define MAX_BUFS	16	/* buffers sent to one worker */

/* The sizes docs/dispatch.md gives and python/syshax/xpu.py packs. */
_Static_assert(sizeof(struct xpu_hello) == 4112, "xpu_hello");
_Static_assert(sizeof(struct xpu_buf) == 24, "xpu_buf");
_Static_assert(sizeof(struct xpu_step) == 352, "xpu_step");
_Static_assert(sizeof(struct xpu_report) == 16, "xpu_report");
_Static_assert(sizeof(struct xpu_reply) == 16, "xpu_reply");

struct xpu {
	const char *prog;
	struct standin *s;		/* the stand-in, or */
	int fd;				/* a worker's socket (-1: gone) */
	uint64_t sent[MAX_BUFS];	/* ids of the buffers it has */
	unsigned int nsent;
};

const char *xpu_kind(const struct xpu *x)
{
	return x->s ? "stand-in" : "worker";
}

/* The worker is gone: said once, -EPIPE from here on. */
static int gone(struct xpu *x, const char *why, int err)
{
	if (x->fd >= 0) {
		fprintf(stderr, "%s: xPU worker: %s: %s\n", x->prog, why,
			strerror(err));
		close(x->fd);
		x->fd = -1;
	}
	return -EPIPE;
}

/* One request (with fd when >= 0) and its reply. */
static int call(struct xpu *x, const void *msg, size_t len, int fd,
		uint64_t *result)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = (void *)msg, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct xpu_reply rep;
	ssize_t n;

	if (x->fd < 0)
		return -EPIPE;
	if (fd >= 0) {
		struct cmsghdr *c;

		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = sizeof(ctl.buf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	do
		n = sendmsg(x->fd, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)len)
		return gone(x, "send", n < 0 ? errno : EPROTO);
	do
		n = recv(x->fd, &rep, sizeof(rep), 0);
	while (n < 0 && errno == EINTR);
	if (n == 0)
		return gone(x, "receive", ECONNRESET);
	if (n != (ssize_t)sizeof(rep) || rep.magic != XPU_MAGIC ||
	    rep.status > 0 || rep.status < -4095)
		return gone(x, "receive", n < 0 ? errno : EPROTO);
	if (result)
		*result = rep.result;
	return rep.status;
}

static int worker_open(struct xpu *x, const char *sock, const char *file)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct xpu_hello *h;
	int ret;

	if (strlen(sock) >= sizeof(sa.sun_path) ||
	    strlen(file) >= sizeof(h->model)) {
		fprintf(stderr, "%s: xPU worker %s: path too long\n", x->prog,
			sock);
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, sock);
	x->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (x->fd < 0 || connect(x->fd, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = -errno;
		fprintf(stderr, "%s: xPU worker %s: %s\n", x->prog, sock,
			strerror(-ret));
		return ret;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	*h = (struct xpu_hello){
		.h = { XPU_MAGIC, XPU_MSG_HELLO }, .version = XPU_VERSION,
	};
	strcpy(h->model, file);
	ret = call(x, h, sizeof(*h), -1, NULL);
	free(h);
	if (ret)
		fprintf(stderr, "%s: xPU worker %s: loading %s: %s\n", x->prog,
			sock, file, syshax_strerror(ret));
	return ret;
}

int xpu_open(struct xpu **out, const char *prog, const char *worker,
	     const char *dir, const char *file)
{
	struct xpu *x = calloc(1, sizeof(*x));
	int ret;

	if (!x)
		return -ENOMEM;
	x->prog = prog;
	x->fd = -1;
	ret = worker ? worker_open(x, worker, file) :
		       standin_open(&x->s, prog, dir, file);
	if (ret) {
		xpu_close(x);
		return ret;
	}
	*out = x;
	return 0;
}

void xpu_close(struct xpu *x)
{
	if (x->s)
		standin_close(x->s);
	if (x->fd >= 0)
		close(x->fd);
	free(x);
}

void xpu_drop(struct xpu **x)
{
	fprintf(stderr, "%s: the xPU worker is gone: its steps run on the "
		"CPU from now on\n", (*x)->prog);
	xpu_close(*x);
	*x = NULL;
}

/* The worker has buffer b (sent now if not yet). */
static int send_buf(struct xpu *x, struct syshax *sh,
		    const struct syshax_buffer *b)
{
	struct xpu_buf m = {
		.h = { XPU_MAGIC, XPU_MSG_BUF }, .id = b->id, .size = b->size,
	};
	int fd, ret;

	for (unsigned int i = 0; i < x->nsent; i++)
		if (x->sent[i] == b->id)
			return 0;
	if (x->nsent == MAX_BUFS)
		return -ENOSPC;
	fd = syshax_buf_export(sh, b, SYSHAX_EXPORT_CLOEXEC);
	if (fd < 0)
		return fd;
	ret = call(x, &m, sizeof(m), fd, NULL);
	close(fd);
	if (!ret)
		x->sent[x->nsent++] = b->id;
	return ret;
}

int xpu_step(struct xpu *x, struct syshax *sh, const struct syshax_job *job,
	     const struct syshax_buffer *const *bufs)
{
	struct xpu_step m = {
		.h = { XPU_MAGIC, XPU_MSG_STEP }, .op = job->op,
		.nr_refs = job->nr_refs,
	};
	uint64_t res;
	int ret = 0;

	if (x->s)
		return standin_step(x->s, job, bufs);
	for (unsigned int i = 0; !ret && i < job->nr_refs; i++) {
		ret = send_buf(x, sh, bufs[i]);
		m.refs[i] = job->refs[i];
		m.refs[i].buf = bufs[i]->id;
	}
	memcpy(&m.p, job->params, sizeof(m.p));
	return ret ? ret : call(x, &m, sizeof(m), -1, &res);
}

int xpu_report(struct xpu *x, struct syshax *sh, unsigned int ran)
{
	struct xpu_report m = {
		.h = { XPU_MAGIC, XPU_MSG_REPORT }, .ran = ran,
	};

	if (x->s)
		return standin_report(x->s, sh, ran);
	return call(x, &m, sizeof(m), -1, NULL);
}
