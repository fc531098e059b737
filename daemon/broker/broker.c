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
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <linux/sockios.h>

#include "broker_int.h"
#include "clock.h"
#include "proto.h"

/* Longest the loop sleeps before it looks at *stop. */
#define STOP_POLL_MS	100
/* Requests read from one connection per round, for fairness. */
#define REQ_BURST	16

static void do_version(struct shxd_broker *b, struct syshax_version_args *v)
{
	memset(v, 0, sizeof(*v));
	v->uapi_version = SYSHAX_UAPI_VERSION;
	v->features = SYSHAX_FEAT_BUF | SYSHAX_FEAT_DMABUF | SYSHAX_FEAT_JOBS |
		      SYSHAX_FEAT_RINGS | SYSHAX_FEAT_CTX_STATS |
		      SYSHAX_FEAT_MAP_NOTES;
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

	/* What the rings hold counts as submitted, as on the old path. */
	bk_rings_run(b);
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
	if (c->dead)
		return;
	bk_conn_jobs_release(b, c);
	bk_buf_conn_gone(b, c);
	bk_ring_free(b, c);
	c->user->nr_conns--;
	bk_user_idle(b, c->user);
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

/*
 * Out of descriptors, a pending connection would wake the loop again and
 * again: the spare descriptor is given up to accept it and close it at
 * once (the client sees the connection end), then taken back.
 */
static void refuse_one(struct shxd_broker *b)
{
	int fd;

	if (b->spare_fd >= 0)
		close(b->spare_fd);
	fd = accept4(b->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd >= 0)
		close(fd);
	b->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

/* A connection refused for its user's limit: the welcome says why. */
static void refuse_user(int fd, int err)
{
	struct shrt_welcome w = { 0 };
	struct shrt_rep hdr = { .ret = err, .len = sizeof(w) };
	struct iovec iov[2] = { { &hdr, sizeof(hdr) }, { &w, sizeof(w) } };

	send_fd_msg(fd, iov, 2, -1);
	close(fd);
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
	struct bk_user *u;

	fd = accept4(b->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0) {
		if (errno == EMFILE || errno == ENFILE)
			refuse_one(b);
		return;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len)) {
		close(fd);
		return;
	}
	u = bk_user_get(b, cred.uid);
	if (!u || u->nr_conns >= b->conf.max_ctx_user) {
		refuse_user(fd, u ? -EUSERS : -ENOMEM);
		return;
	}
	u->nr_conns++;
	c = calloc(1, sizeof(*c));
	if (!c || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
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
	c->user = u;
	c->memlock = bk_client_memlock(b, cred.pid, cred.uid);
	c->id = ++b->next_ctx_id;
	c->req_tag = (struct bk_tag){ .kind = BK_REQ, .c = c };
	c->ev_tag = (struct bk_tag){ .kind = BK_EV, .c = c };
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
	u->nr_conns--;
	bk_user_idle(b, u);
}

/* Runs one request; the reply carries the args back (as ioctl does). */
static void dispatch(struct shxd_broker *b, struct bk_conn *c,
		     const struct shrt_req *req, void *args, size_t args_len,
		     const void *extra, size_t extra_len, int fd_in)
{
	int ret = 0, fd_out = -1, own_out = 0;

	switch (req->cmd) {
	case SYSHAX_IOC_VERSION:
		do_version(b, args);
		break;
	case SYSHAX_IOC_STATS:
		do_stats(b, args);
		break;
	case SYSHAX_IOC_CTX_STATS:
		bk_ctx_stats(b, c, args);	/* replies with the array */
		return;
	case SYSHAX_IOC_BUF_ALLOC:
		ret = bk_buf_alloc(b, c, args);
		if (ret == BK_PENDING)
			return;
		break;
	case SYSHAX_IOC_BUF_FREE:
		ret = bk_buf_free(b, c, args);
		break;
	case SYSHAX_IOC_BUF_INFO:
		ret = bk_buf_info(c, args);
		break;
	case SYSHAX_IOC_BUF_EXPORT:
		ret = bk_buf_export(b, c, args, &fd_out);
		own_out = 1;
		break;
	case SYSHAX_IOC_BUF_IMPORT:
		ret = bk_buf_import(b, c, args, fd_in, &fd_out);
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
	case SYSHAX_IOC_RING_SETUP:
		ret = bk_ring_setup(b, c, args, &fd_out);
		own_out = 1;
		break;
	case SYSHAX_IOC_ENGINE_FETCH:
		if (c->ring) {
			ret = -EBUSY;	/* its jobs come in its ring */
			break;
		}
		bk_fetch(b, c, args);
		return;
	case SHRT_CMD_FETCH_CANCEL:
		bk_fetch_cancel(b, c);
		return;
	case SYSHAX_IOC_ENGINE_MAP:
		ret = bk_buf_map(b, c, args, &fd_out);
		break;
	case SYSHAX_IOC_ENGINE_COMPLETE:
		ret = c->ring ? -EBUSY : bk_complete(b, c, args, extra,
						     extra_len);
		break;
	default:
		/* WAIT included: completions come on the event socket. */
		ret = -ENOTTY;
		args_len = 0;
		break;
	}
	bk_reply(c, ret, args, args_len, NULL, 0, ret < 0 ? -1 : fd_out);
	if (own_out && fd_out >= 0)
		close(fd_out);
}

/* Reads and runs up to REQ_BURST requests; closes c when its peer left. */
static void serve_conn(struct shxd_broker *b, struct bk_conn *c)
{
	int burst;

	for (burst = 0; burst < REQ_BURST && !c->broken && !c->pending;
	     burst++) {
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
	if (t->kind == BK_POP) {
		bk_buf_alloc_events(b);
		return;
	}
	if (t->kind == BK_EXP) {
		bk_buf_export_event(b, t->x);
		return;
	}
	if (c->dead)
		return;
	if (t->kind == BK_EV) {
		if (ev->events & (EPOLLHUP | EPOLLERR))
			c->broken = 1;
		else if (ev->events & EPOLLOUT)
			bk_flush(b, c);
		if (c->ring && (ev->events & EPOLLIN))
			bk_ring_kicked(c);	/* the round takes the rings */
	} else if (c->pending) {
		/* Not read until its allocation is answered; a hang-up is
		 * reported all the same, and would come again and again. */
		if (ev->events & (EPOLLHUP | EPOLLERR))
			c->broken = 1;
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

/*
 * How long epoll may wait: none while polling rings (poll_us after the
 * last entry), else until a fetch times out, asking rings for kicks first.
 */
static int sleep_ms(struct shxd_broker *b, int64_t last_busy)
{
	int timeout = bk_fetch_timeouts(b, STOP_POLL_MS);

	if (b->conf.poll_us &&
	    shrt_now_ns() - last_busy < (int64_t)b->conf.poll_us * 1000) {
		sched_yield();	/* to the threads it waits for, on few cores */
		return 0;
	}
	return bk_rings_sleep(b) ? 0 : timeout;
}

int shxd_broker_run(struct shxd_broker *b, volatile sig_atomic_t *stop)
{
	struct epoll_event evs[64];
	int64_t last_busy = 0;

	while (!*stop) {
		int timeout, n, i;

		close_broken(b);
		reap_dead(b);
		timeout = sleep_ms(b, last_busy);
		n = epoll_wait(b->epfd, evs, 64, timeout);
		if (n < 0 && errno != EINTR)
			return -errno;
		bk_rings_awake(b);
		for (i = 0; i < n; i++)
			on_event(b, &evs[i]);
		if (bk_rings_run(b) > 0 || n > 0)
			last_busy = shrt_now_ns();
		bk_rings_publish(b);	/* what the round's events posted */
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

static void close_fds(struct shxd_broker *b)
{
	int *fds[] = { &b->lfd, &b->epfd, &b->spare_fd, &b->pop_pipe[0],
		       &b->pop_pipe[1] };
	size_t i;

	for (i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (*fds[i] >= 0)
			close(*fds[i]);
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
	b->pop_pipe[0] = -1;
	b->pop_pipe[1] = -1;
	b->conf = *conf;
	if (!b->conf.socket_mode)
		b->conf.socket_mode = 0666;
	if (!b->conf.max_jobs_ctx)
		b->conf.max_jobs_ctx = SHXD_DEF_MAX_JOBS_CTX;
	if (!b->conf.max_jobs_global)
		b->conf.max_jobs_global = SHXD_DEF_MAX_JOBS_GLOBAL;
	if (!b->conf.max_jobs_user)
		b->conf.max_jobs_user = b->conf.max_jobs_global / 2 ?
					b->conf.max_jobs_global / 2 : 1;
	if (!b->conf.max_pinned_bytes)
		b->conf.max_pinned_bytes = (unsigned long long)
			sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE) / 2;
	if (!b->conf.max_pinned_user_bytes)
		b->conf.max_pinned_user_bytes = b->conf.max_pinned_bytes / 2;
	if (!b->conf.max_bufs_ctx)
		b->conf.max_bufs_ctx = SHXD_DEF_MAX_BUFS_CTX;
	if (!b->conf.max_bufs_user)
		b->conf.max_bufs_user = SHXD_DEF_MAX_BUFS_USER;
	if (!b->conf.max_ctx_user)
		b->conf.max_ctx_user = SHXD_DEF_MAX_CTX_USER;
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
	b->spare_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (b->epfd < 0 || b->lfd < 0 || b->spare_fd < 0 ||
	    pipe2(b->pop_pipe, O_CLOEXEC | O_NONBLOCK)) {
		ret = -errno;
		goto err;
	}
	ret = listen_path(b);
	if (ret)
		goto err;
	b->listen_tag.kind = BK_LISTEN;
	ev.data.ptr = &b->listen_tag;
	epoll_ctl(b->epfd, EPOLL_CTL_ADD, b->lfd, &ev);
	b->pop_tag.kind = BK_POP;
	ev.data.ptr = &b->pop_tag;
	epoll_ctl(b->epfd, EPOLL_CTL_ADD, b->pop_pipe[0], &ev);
	*out = b;
	return 0;
err:
	close_fds(b);
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
	bk_buf_exports_fini(b);
	bk_buf_fini(b);
	close_fds(b);
	unlink(b->path);
	bk_jobs_fini(b);
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
