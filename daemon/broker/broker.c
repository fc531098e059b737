// SPDX-License-Identifier: MIT
/*
 * syshaxd's userspace broker: the listening socket, connections, buffers
 * and the request dispatch. One thread, one epoll loop; the broker never
 * blocks on a peer (sockets are non-blocking, completions wait in a ring
 * bounded by max_jobs_ctx). The job queue is in bjobs.c; the protocol in
 * runtime/src/proto.h; the design in docs/userspace-backend.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <linux/sockios.h>

#include "broker_int.h"
#include "proto.h"

/* Longest the loop sleeps before it looks at *stop. */
#define STOP_POLL_MS	100
/* Requests read from one connection per round, for fairness. */
#define REQ_BURST	16

int64_t bk_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- Buffers ------------------------------------------------------------ */

static int buf_add(struct shxd_broker *b, struct shxd_membuf *mb)
{
	if (b->nr_bufs == b->cap_bufs) {
		size_t n = b->cap_bufs * 2 + 16;
		struct shxd_membuf **p = realloc(b->bufs, n * sizeof(*p));

		if (!p)
			return -ENOMEM;
		b->bufs = p;
		b->cap_bufs = n;
	}
	mb->id = ++b->next_buf_id;
	b->bufs[b->nr_bufs++] = mb;
	b->pinned += mb->size;
	return 0;
}

void bk_buf_put(struct shxd_broker *b, struct shxd_membuf *mb)
{
	size_t i;

	if (--mb->refs)
		return;
	for (i = 0; i < b->nr_bufs; i++)
		if (b->bufs[i] == mb) {
			b->bufs[i] = b->bufs[--b->nr_bufs];
			break;
		}
	b->pinned -= mb->size;
	shxd_membuf_destroy(mb);
}

/* The lowest free handle (from 1) in c now names mb, with a reference. */
static int handle_new(struct bk_conn *c, struct shxd_membuf *mb,
		      uint32_t *handle)
{
	uint32_t h;

	for (h = 1; h < c->nr_handles && c->handles[h]; h++)
		;
	if (h >= c->nr_handles) {
		uint32_t n = c->nr_handles * 2 + 16;
		struct shxd_membuf **p = realloc(c->handles, n * sizeof(*p));

		if (!p)
			return -ENOMEM;
		memset(p + c->nr_handles, 0,
		       (n - c->nr_handles) * sizeof(*p));
		c->handles = p;
		c->nr_handles = n;
	}
	c->handles[h] = mb;
	mb->refs++;
	*handle = h;
	return 0;
}

static struct shxd_membuf *handle_get(struct bk_conn *c, uint32_t h)
{
	return h && h < c->nr_handles ? c->handles[h] : NULL;
}

static int do_alloc(struct shxd_broker *b, struct bk_conn *c,
		    struct syshax_buf_alloc_args *a, int *fd)
{
	struct shxd_membuf *mb;
	int ret;

	if ((a->flags & ~SYSHAX_BUF_ALLOC_FLAGS) || a->pad)
		return -EINVAL;
	if (a->size && a->size <= SHXD_MAX_BUF_SIZE &&
	    b->pinned + a->size > b->conf.max_pinned_bytes)
		return -ENOMEM;
	ret = shxd_membuf_create(a->size, a->node, a->flags, &mb);
	if (ret)
		return ret;
	ret = buf_add(b, mb);
	if (ret) {
		shxd_membuf_destroy(mb);
		return ret;
	}
	ret = handle_new(c, mb, &a->handle);
	if (ret) {
		mb->refs = 1;
		bk_buf_put(b, mb);
		return ret;
	}
	a->size = mb->size;
	a->id = mb->id;
	a->mmap_offset = 0;
	*fd = mb->fd;
	return 0;
}

static int do_free(struct shxd_broker *b, struct bk_conn *c,
		   const struct syshax_buf_free_args *f)
{
	struct shxd_membuf *mb = handle_get(c, f->handle);

	if (f->pad)
		return -EINVAL;
	if (!mb)
		return -EBADF;
	c->handles[f->handle] = NULL;
	bk_buf_put(b, mb);
	return 0;
}

static int do_info(struct bk_conn *c, struct syshax_buf_info_args *i)
{
	struct shxd_membuf *mb = handle_get(c, i->handle);

	if (!mb)
		return -EBADF;
	i->kind = SYSHAX_BUF_KIND_ALLOC;
	i->size = mb->size;
	i->mmap_offset = 0;
	i->id = mb->id;
	i->chunk_size = mb->chunk_size;
	i->nr_chunks = (uint32_t)(mb->size / mb->chunk_size);
	i->node = mb->node;
	i->flags = mb->flags;
	memcpy(i->node_bytes, mb->node_bytes, sizeof(i->node_bytes));
	return 0;
}

static int do_export(struct bk_conn *c, struct syshax_buf_export_args *e,
		     int *fd)
{
	struct shxd_membuf *mb = handle_get(c, e->handle);

	if ((e->flags & ~SYSHAX_EXPORT_FLAGS) || e->pad)
		return -EINVAL;
	if (!mb)
		return -EBADF;
	*fd = mb->fd;
	e->fd = -1;		/* the client's number for it is its own */
	return 0;
}

/* An fd names a buffer when it is one of our memfds: same inode. */
static int do_import(struct shxd_broker *b, struct bk_conn *c,
		     struct syshax_buf_import_args *i, int fd)
{
	struct shxd_membuf *mb = NULL;
	struct stat st;
	size_t k;
	int ret;

	if (i->flags || i->pad)
		return -EINVAL;
	if (fd < 0 || fstat(fd, &st))
		return -EBADF;
	for (k = 0; k < b->nr_bufs; k++)
		if (b->bufs[k]->dev == st.st_dev &&
		    b->bufs[k]->ino == st.st_ino)
			mb = b->bufs[k];
	if (!mb)
		return -EINVAL;
	ret = handle_new(c, mb, &i->handle);
	if (ret)
		return ret;
	i->size = mb->size;
	i->mmap_offset = 0;
	i->id = mb->id;
	return 0;
}

static int do_map(struct shxd_broker *b, struct bk_conn *c,
		  struct syshax_engine_map_args *m, int *fd)
{
	struct shxd_membuf *mb;
	int ret;

	ret = bk_map_check(b, c, m->id, &mb);
	if (ret)
		return ret;
	m->mmap_offset = 0;
	m->size = mb->size;
	*fd = mb->fd;
	return 0;
}

static void do_version(struct shxd_broker *b, struct syshax_version_args *v)
{
	memset(v, 0, sizeof(*v));
	v->uapi_version = SYSHAX_UAPI_VERSION;
	v->features = SYSHAX_FEAT_BUF | SYSHAX_FEAT_DMABUF | SYSHAX_FEAT_JOBS;
	v->max_buf_size = SHXD_MAX_BUF_SIZE;
	v->max_pinned = b->conf.max_pinned_bytes;
	v->chunk_size = SYSHAX_CHUNK_SIZE;
	v->nr_nodes = (uint32_t)shxd_membuf_max_node() + 1;
	v->max_refs = SYSHAX_JOB_MAX_REFS;
	v->max_submit = SHXD_DEF_MAX_SUBMIT;
}

static void do_stats(struct shxd_broker *b, struct syshax_stats_args *st)
{
	struct bk_conn *c;
	size_t k;
	int n;

	memset(st, 0, sizeof(*st));
	st->pinned_bytes = b->pinned;
	st->nr_bufs = b->nr_bufs;
	for (k = 0; k < b->nr_bufs; k++)
		for (n = 0; n < SYSHAX_MAX_NODES; n++) {
			st->node_bytes[n] += b->bufs[k]->node_bytes[n];
			st->node_bufs[n] += !!b->bufs[k]->node_bytes[n];
		}
	for (c = b->conns; c; c = c->next)
		st->contexts++;
	bk_jobs_stats(b, st);
}

/* ---- Connections -------------------------------------------------------- */

static int send_fd_msg(int sock, const struct iovec *iov, int n, int fd)
{
	union shrt_fd_cmsg cm;
	struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = n };

	if (fd >= 0)
		shrt_msg_attach_fd(&m, &cm, fd);
	return sendmsg(sock, &m, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 ? -errno : 0;
}

void bk_reply(struct bk_conn *c, int ret, const void *args, size_t args_len,
	      const void *extra, size_t extra_len, int fd)
{
	struct shrt_rep hdr = {
		.ret = ret,
		.len = (uint32_t)(args_len + extra_len),
	};
	struct iovec iov[3] = {
		{ &hdr, sizeof(hdr) },
		{ (void *)args, args_len },
		{ (void *)extra, extra_len },
	};

	/* The library sends one request and reads its reply, so a full
	 * socket means a peer that does not follow the protocol. */
	if (send_fd_msg(c->fd, iov, 3, fd))
		c->broken = 1;
}

static void conn_close(struct shxd_broker *b, struct bk_conn *c)
{
	uint32_t h;

	if (c->dead)
		return;
	bk_conn_jobs_release(b, c);
	for (h = 0; h < c->nr_handles; h++)
		if (c->handles[h])
			bk_buf_put(b, c->handles[h]);
	free(c->handles);
	c->handles = NULL;
	c->nr_handles = 0;
	epoll_ctl(b->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	epoll_ctl(b->epfd, EPOLL_CTL_DEL, c->evfd, NULL);
	close(c->fd);
	close(c->evfd);
	c->dead = 1;
	if (c->prev)
		c->prev->next = c->next;
	else
		b->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->next = b->dead;
	b->dead = c;
}

/* Frees what conn_close left for the end of the round (epoll events of
 * this round may still point at it). */
static void reap_dead(struct shxd_broker *b)
{
	struct bk_conn *c;

	while ((c = b->dead)) {
		b->dead = c->next;
		free(c->cpls);
		free(c);
	}
}

/* What one unread message adds to SIOCOUTQ on ev (the kernel charges an
 * unread datagram's full buffer to its sender): a completion sent to
 * peer, measured, then read back. */
static int ev_probe(int ev, int peer, unsigned int *bytes)
{
	struct syshax_completion cpl = { 0 };
	int q = 0;

	if (send(ev, &cpl, sizeof(cpl), MSG_DONTWAIT) != sizeof(cpl) ||
	    ioctl(ev, SIOCOUTQ, &q) || q <= 0 ||
	    recv(peer, &cpl, sizeof(cpl), MSG_DONTWAIT) != sizeof(cpl))
		return -1;
	*bytes = (unsigned int)q;
	return 0;
}

static void accept_one(struct shxd_broker *b)
{
	struct shrt_welcome w = { SHRT_PROTO_MAGIC, SHRT_PROTO_VERSION };
	struct shrt_rep hdr = { .ret = 0, .len = sizeof(w) };
	struct iovec iov[2] = { { &hdr, sizeof(hdr) }, { &w, sizeof(w) } };
	struct epoll_event ev = { .events = EPOLLIN };
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int sv[2] = { -1, -1 }, fd, sndbuf;
	struct bk_conn *c;

	fd = accept4(b->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	c = calloc(1, sizeof(*c));
	if (!c || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		goto err;
	c->cap_cpls = b->conf.max_jobs_ctx;
	c->cpls = calloc(c->cap_cpls, sizeof(*c->cpls));
	if (!c->cpls)
		goto err;
	/* Room for a context's worth of completions where allowed; the ring
	 * holds the rest either way. */
	sndbuf = (int)(c->cap_cpls * 1024U);
	if (setsockopt(sv[0], SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf,
		       sizeof(sndbuf)))
		setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf,
			   sizeof(sndbuf));
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	if (ev_probe(sv[0], sv[1], &c->ev_msg_bytes))
		goto err;
	c->fd = fd;
	c->evfd = sv[0];
	c->pid = cred.pid;
	c->uid = cred.uid;
	c->gid = cred.gid;
	c->id = ++b->next_ctx_id;
	c->req_tag = (struct bk_tag){ BK_REQ, c };
	c->ev_tag = (struct bk_tag){ BK_EV, c };
	if (send_fd_msg(fd, iov, 2, sv[1]))
		goto err;
	close(sv[1]);
	ev.data.ptr = &c->req_tag;
	epoll_ctl(b->epfd, EPOLL_CTL_ADD, fd, &ev);
	ev.events = 0;
	ev.data.ptr = &c->ev_tag;
	epoll_ctl(b->epfd, EPOLL_CTL_ADD, c->evfd, &ev);
	c->next = b->conns;
	if (b->conns)
		b->conns->prev = c;
	b->conns = c;
	return;
err:
	if (sv[0] >= 0) {
		close(sv[0]);
		close(sv[1]);
	}
	if (c)
		free(c->cpls);
	free(c);
	close(fd);
}

/* Runs one request; the reply carries the args back (as ioctl does). */
static void dispatch(struct shxd_broker *b, struct bk_conn *c,
		     const struct shrt_req *req, void *args, size_t args_len,
		     const void *extra, size_t extra_len, int fd_in)
{
	int ret = 0, fd_out = -1;

	switch (req->cmd) {
	case SYSHAX_IOC_VERSION:
		do_version(b, args);
		break;
	case SYSHAX_IOC_STATS:
		do_stats(b, args);
		break;
	case SYSHAX_IOC_BUF_ALLOC:
		ret = do_alloc(b, c, args, &fd_out);
		break;
	case SYSHAX_IOC_BUF_FREE:
		ret = do_free(b, c, args);
		break;
	case SYSHAX_IOC_BUF_INFO:
		ret = do_info(c, args);
		break;
	case SYSHAX_IOC_BUF_EXPORT:
		ret = do_export(c, args, &fd_out);
		break;
	case SYSHAX_IOC_BUF_IMPORT:
		ret = do_import(b, c, args, fd_in);
		break;
	case SYSHAX_IOC_BUF_REGISTER:
		ret = -EOPNOTSUPP;	/* memory of another process: no */
		break;
	case SYSHAX_IOC_SUBMIT:
		ret = bk_submit(b, c, args, extra, extra_len);
		break;
	case SYSHAX_IOC_ENGINE_ATTACH:
		ret = bk_attach(b, c, args);
		break;
	case SYSHAX_IOC_ENGINE_FETCH:
		bk_fetch(b, c, args);
		return;
	case SHRT_CMD_FETCH_CANCEL:
		bk_fetch_cancel(b, c);
		return;
	case SYSHAX_IOC_ENGINE_MAP:
		ret = do_map(b, c, args, &fd_out);
		break;
	case SYSHAX_IOC_ENGINE_COMPLETE:
		ret = bk_complete(b, c, args, extra, extra_len);
		break;
	default:
		/* WAIT included: completions come on the event socket. */
		ret = -ENOTTY;
		args_len = 0;
		break;
	}
	bk_reply(c, ret, args, args_len, NULL, 0, ret < 0 ? -1 : fd_out);
}

/* Reads and runs up to REQ_BURST requests; closes c when its peer left. */
static void serve_conn(struct shxd_broker *b, struct bk_conn *c)
{
	int burst;

	for (burst = 0; burst < REQ_BURST && !c->broken; burst++) {
		struct shrt_req *req = b->rx;
		struct iovec iov = { b->rx, SHRT_MAX_MSG };
		union {
			struct cmsghdr h;
			char buf[CMSG_SPACE(sizeof(int) * 4)];
		} cm;
		struct msghdr m = {
			.msg_iov = &iov, .msg_iovlen = 1,
			.msg_control = cm.buf, .msg_controllen = sizeof(cm.buf),
		};
		struct cmsghdr *ch;
		int fd_in = -1;
		size_t args_len;
		ssize_t n;

		n = recvmsg(c->fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		for (ch = CMSG_FIRSTHDR(&m); n >= 0 && ch;
		     ch = CMSG_NXTHDR(&m, ch)) {
			int *fds = (int *)CMSG_DATA(ch);
			size_t k, nfd;

			if (ch->cmsg_level != SOL_SOCKET ||
			    ch->cmsg_type != SCM_RIGHTS)
				continue;
			nfd = (ch->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (k = 0; k < nfd; k++) {
				int f;

				memcpy(&f, &fds[k], sizeof(f));
				if (fd_in < 0)
					fd_in = f;
				else
					close(f);
			}
		}
		if (n <= 0) {
			if (fd_in >= 0)
				close(fd_in);
			c->broken = 1;
			return;
		}
		args_len = _IOC_SIZE(req->cmd);
		if ((size_t)n < sizeof(*req) + args_len ||
		    req->len != (size_t)n - sizeof(*req) ||
		    (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
			c->broken = 1;	/* not our library */
		} else {
			char *p = (char *)b->rx + sizeof(*req);

			dispatch(b, c, req, p, args_len, p + args_len,
				 (size_t)n - sizeof(*req) - args_len, fd_in);
		}
		if (fd_in >= 0)
			close(fd_in);
	}
}

static void on_event(struct shxd_broker *b, const struct epoll_event *ev)
{
	struct bk_tag *t = ev->data.ptr;
	struct bk_conn *c = t->c;

	if (t->kind == BK_LISTEN) {
		accept_one(b);
		return;
	}
	if (c->dead)
		return;
	if (t->kind == BK_EV) {
		if (ev->events & (EPOLLHUP | EPOLLERR))
			c->broken = 1;
		else if (ev->events & EPOLLOUT)
			bk_flush(b, c);
	} else {
		serve_conn(b, c);
	}
}

static void close_broken(struct shxd_broker *b)
{
	struct bk_conn *c, *n;
	int again = 1;

	/* Closing one may fail sends to others (a -EPIPE to an engine). */
	while (again) {
		again = 0;
		for (c = b->conns; c; c = n) {
			n = c->next;
			if (c->broken) {
				conn_close(b, c);
				again = 1;
				break;
			}
		}
	}
}

int shxd_broker_run(struct shxd_broker *b, volatile sig_atomic_t *stop)
{
	struct epoll_event evs[64];

	while (!*stop) {
		int timeout = bk_fetch_timeouts(b, STOP_POLL_MS);
		int n, i;

		close_broken(b);
		reap_dead(b);
		n = epoll_wait(b->epfd, evs, 64, timeout);
		if (n < 0 && errno != EINTR)
			return -errno;
		for (i = 0; i < n; i++)
			on_event(b, &evs[i]);
		close_broken(b);
		reap_dead(b);
	}
	return 0;
}

/* ---- Setup -------------------------------------------------------------- */

/*
 * Creates the socket's directory (one level), then listens on b->path. The
 * socket is bound and listening under a temporary name in that directory
 * before it is linked to b->path, so a client that finds the path can
 * connect at once. A socket file nobody answers on is stale and replaced;
 * link() never replaces a live one that appeared meanwhile; any other file
 * at the path is left alone: -ENOTSOCK.
 */
static int listen_path(struct shxd_broker *b)
{
	static unsigned int tmp_seq;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[sizeof(b->path)], *slash;
	struct stat st;
	int probe, n, ret;

	strcpy(sa.sun_path, b->path);
	strcpy(dir, b->path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = 0;
		if (!mkdir(dir, 0755))
			b->made_dir = 1;
		else if (errno != EEXIST)
			return -errno;
	}
	/* Only a socket is ours to replace: any other file is someone's. */
	if (!lstat(b->path, &st) && !S_ISSOCK(st.st_mode))
		return -ENOTSOCK;
	probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (probe < 0)
		return -errno;
	ret = connect(probe, (struct sockaddr *)&sa, sizeof(sa));
	close(probe);
	if (!ret)
		return -EADDRINUSE;
	if (errno == ECONNREFUSED)
		unlink(b->path);

	/* The temporary name: .syshaxd-<pid>.<n> beside b->path, n telling
	 * apart brokers one process creates at once. */
	n = slash ? (int)(slash - dir) + 1 : 0;
	ret = snprintf(sa.sun_path, sizeof(sa.sun_path), "%.*s.syshaxd-%d.%u",
		       n, b->path, (int)getpid(),
		       __atomic_fetch_add(&tmp_seq, 1, __ATOMIC_RELAXED));
	if (ret < 0 || (size_t)ret >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	/* Left by an earlier process of this pid. */
	unlink(sa.sun_path);
	if (bind(b->lfd, (struct sockaddr *)&sa, sizeof(sa)))
		return -errno;
	ret = 0;
	if (chmod(sa.sun_path, b->conf.socket_mode) || listen(b->lfd, 128) ||
	    link(sa.sun_path, b->path))
		ret = errno == EEXIST ? -EADDRINUSE : -errno;
	unlink(sa.sun_path);
	return ret;
}

int shxd_broker_create(const struct shxd_broker_conf *conf,
		       struct shxd_broker **out)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct shxd_broker *b;
	int ret;

	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->lfd = -1;
	b->epfd = -1;
	b->conf = *conf;
	if (!b->conf.socket_mode)
		b->conf.socket_mode = 0666;
	if (!b->conf.max_jobs_ctx)
		b->conf.max_jobs_ctx = SHXD_DEF_MAX_JOBS_CTX;
	if (!b->conf.max_jobs_global)
		b->conf.max_jobs_global = SHXD_DEF_MAX_JOBS_GLOBAL;
	if (!b->conf.max_pinned_bytes)
		b->conf.max_pinned_bytes = (unsigned long long)
			sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE) / 2;
	b->euid = geteuid();
	if (conf->socket_path) {
		ret = strlen(conf->socket_path) < sizeof(b->path) ? 0 :
		      -ENAMETOOLONG;
		if (!ret)
			strcpy(b->path, conf->socket_path);
	} else {
		ret = shrt_default_path(b->path, sizeof(b->path));
	}
	b->conf.socket_path = b->path;
	if (ret)
		goto err;
	ret = -ENOMEM;
	b->rx = malloc(SHRT_MAX_MSG);
	if (!b->rx)
		goto err;
	ret = bk_jobs_init(b);
	if (ret)
		goto err;
	b->epfd = epoll_create1(EPOLL_CLOEXEC);
	b->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK,
			0);
	if (b->epfd < 0 || b->lfd < 0) {
		ret = -errno;
		goto err;
	}
	ret = listen_path(b);
	if (ret)
		goto err;
	b->listen_tag.kind = BK_LISTEN;
	ev.data.ptr = &b->listen_tag;
	epoll_ctl(b->epfd, EPOLL_CTL_ADD, b->lfd, &ev);
	*out = b;
	return 0;
err:
	if (b->lfd >= 0)
		close(b->lfd);
	if (b->epfd >= 0)
		close(b->epfd);
	bk_jobs_fini(b);
	free(b->rx);
	free(b);
	return ret;
}

const char *shxd_broker_path(const struct shxd_broker *b)
{
	return b->path;
}

int shxd_broker_made_dir(const struct shxd_broker *b)
{
	return b->made_dir;
}

void shxd_broker_destroy(struct shxd_broker *b)
{
	if (!b)
		return;
	while (b->conns)
		conn_close(b, b->conns);
	reap_dead(b);
	close(b->lfd);
	close(b->epfd);
	unlink(b->path);
	bk_jobs_fini(b);
	free(b->bufs);
	free(b->rx);
	free(b);
}

int shxd_broker_serve(const struct shxd_broker_conf *conf,
		      volatile sig_atomic_t *stop)
{
	struct shxd_broker *b;
	int ret;

	ret = shxd_broker_create(conf, &b);
	if (ret)
		return ret;
	ret = shxd_broker_run(b, stop);
	shxd_broker_destroy(b);
	return ret;
}
