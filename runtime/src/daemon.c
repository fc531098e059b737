// SPDX-License-Identifier: MIT
/* The userspace backend: the UAPI calls as messages to syshaxd's broker
 * (protocol in proto.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"
#include "clock.h"
#include "rt_int.h"

/* One request and its reply. */
struct rpc {
	unsigned long cmd;
	void *args;		/* in and out */
	size_t args_len;
	const void *extra;	/* request array */
	size_t extra_len;
	int fd_in;		/* sent with the request, or -1 */
	void *rep_extra;	/* reply array */
	size_t rep_extra_max;
	size_t rep_extra_len;	/* out */
	int fd_out;		/* out: received fd, or -1 */
	int intr;		/* return -EINTR when a signal interrupts */
};

static int send_req(struct syshax *sh, struct rpc *r)
{
	struct shrt_req hdr = {
		.cmd = (__u32)r->cmd,
		.len = (__u32)(r->args_len + r->extra_len),
		.reaped = __atomic_exchange_n(&sh->reaped, 0, __ATOMIC_RELAXED),
	};
	struct iovec iov[3] = {
		{ &hdr, sizeof(hdr) },
		{ r->args, r->args_len },
		{ (void *)r->extra, r->extra_len },
	};
	union shrt_fd_cmsg c;
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = 3 };

	if (r->fd_in >= 0)
		shrt_msg_attach_fd(&m, &c, r->fd_in);
	while (sendmsg(sh->fd, &m, MSG_NOSIGNAL) < 0) {
		if (errno != EINTR)
			return errno == ECONNRESET ? -EPIPE : -errno;
	}
	return 0;
}

static int recv_rep(struct syshax *sh, struct rpc *r)
{
	struct shrt_rep hdr;
	struct iovec iov[3] = {
		{ &hdr, sizeof(hdr) },
		{ r->args, r->args_len },
		{ r->rep_extra, r->rep_extra_max },
	};
	union shrt_fd_cmsg c;
	struct msghdr m = {
		.msg_iov = iov,
		.msg_iovlen = 3,
		.msg_control = c.buf,
		.msg_controllen = sizeof(c.buf),
	};
	struct cmsghdr *ch;
	ssize_t n;

	for (;;) {
		n = recvmsg(sh->fd, &m, MSG_CMSG_CLOEXEC);
		if (n >= 0)
			break;
		if (errno != EINTR || r->intr)
			return -errno;
	}
	for (ch = CMSG_FIRSTHDR(&m); ch; ch = CMSG_NXTHDR(&m, ch))
		if (ch->cmsg_level == SOL_SOCKET &&
		    ch->cmsg_type == SCM_RIGHTS)
			memcpy(&r->fd_out, CMSG_DATA(ch), sizeof(int));
	if (n == 0)
		return -EPIPE;	/* the broker went away */
	if ((size_t)n < sizeof(hdr) + r->args_len || (m.msg_flags & MSG_TRUNC))
		return -EPROTO;
	r->rep_extra_len = (size_t)n - sizeof(hdr) - r->args_len;
	return hdr.ret;
}

static int rpc_locked(struct syshax *sh, struct rpc *r)
{
	int ret;

	r->fd_out = -1;
	ret = send_req(sh, r);
	if (ret)
		return ret;
	ret = recv_rep(sh, r);
	if (ret == -EINTR && r->intr) {
		/* The broker still owes a reply: make it come now. */
		struct rpc cancel = { .cmd = SHRT_CMD_FETCH_CANCEL, .fd_in = -1 };

		ret = send_req(sh, &cancel);
		if (ret)
			return ret;
		r->intr = 0;
		ret = recv_rep(sh, r);
	}
	if (ret < 0 && r->fd_out >= 0) {
		close(r->fd_out);
		r->fd_out = -1;
	}
	return ret;
}

static int rpc(struct syshax *sh, struct rpc *r)
{
	int ret;

	pthread_mutex_lock(&sh->req_lock);
	ret = rpc_locked(sh, r);
	pthread_mutex_unlock(&sh->req_lock);
	return ret;
}

/* A call whose args go in and come back, with no arrays and no fds. */
static int call_locked(struct syshax *sh, unsigned long cmd, void *args,
		       size_t len)
{
	struct rpc r = {
		.cmd = cmd, .args = args, .args_len = len, .fd_in = -1,
	};

	return rpc_locked(sh, &r);
}

static int call(struct syshax *sh, unsigned long cmd, void *args, size_t len)
{
	int ret;

	pthread_mutex_lock(&sh->req_lock);
	ret = call_locked(sh, cmd, args, len);
	pthread_mutex_unlock(&sh->req_lock);
	return ret;
}

/* How long syshax_open() waits for the broker, connect and welcome
 * together: $SYSHAX_CONNECT_TIMEOUT_MS (1 ms to 1 h), else 5 s. */
#define SHRT_CONNECT_MS		5000
#define SHRT_CONNECT_MS_MAX	3600000L

static long connect_timeout_ms(void)
{
	const char *env = getenv("SYSHAX_CONNECT_TIMEOUT_MS");
	char *end;
	long ms;

	if (!env || !*env)
		return SHRT_CONNECT_MS;
	errno = 0;
	ms = strtol(env, &end, 10);
	if (errno || *end || ms < 1 || ms > SHRT_CONNECT_MS_MAX)
		return SHRT_CONNECT_MS;
	return ms;
}

/* Milliseconds left before deadline (ns), rounded up so that no wait
 * ends early; 0 once it passed. */
static int64_t left_ms(int64_t deadline)
{
	int64_t left = deadline - shrt_now_ns();

	return left > 0 ? (left + 999999) / 1000000 : 0;
}

static int set_sndtimeo(int fd, int64_t ms)
{
	struct timeval tv = {
		.tv_sec = (time_t)(ms / 1000),
		.tv_usec = (suseconds_t)(ms % 1000) * 1000,
	};

	return setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) ?
	       -errno : 0;
}

/*
 * connect() to a unix socket blocks while the listener's backlog is full
 * (a broker that accepts nothing, for instance out of descriptors); a
 * non-blocking one fails with EAGAIN instead of waiting. SO_SNDTIMEO bounds
 * the blocking wait (connect then fails with EAGAIN); it is cleared after,
 * since requests expect a socket with no timeout.
 */
static int connect_by(int fd, const struct sockaddr_un *sa, int64_t deadline)
{
	int ret;

	for (;;) {
		int64_t left = left_ms(deadline);

		if (!left)
			return -ETIMEDOUT;
		/* {0, 0} would mean no timeout: left is at least 1 ms. */
		ret = set_sndtimeo(fd, left);
		if (ret)
			return ret;
		if (!connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) ||
		    errno == EISCONN)
			break;
		if (errno == EAGAIN)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
	return set_sndtimeo(fd, 0);
}

/* Waits until fd is readable (or the peer closed) before deadline. */
static int wait_readable(int fd, int64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	for (;;) {
		int64_t left = left_ms(deadline);
		int n;

		if (!left)
			return -ETIMEDOUT;
		n = poll(&p, 1, left > INT32_MAX ? INT32_MAX : (int)left);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

static int daemon_open(struct syshax *sh, const struct sockaddr_un *sa)
{
	int64_t deadline = shrt_now_ns() + connect_timeout_ms() * 1000000LL;
	struct shrt_welcome w;
	struct rpc r = {
		.args = &w, .args_len = sizeof(w), .fd_in = -1,
	};
	int ret;

	sh->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (sh->fd < 0)
		return -errno;
	ret = connect_by(sh->fd, sa, deadline);
	if (ret)
		return ret;
	/* The welcome is framed as a reply: shrt_rep, then shrt_welcome.
	 * Once the socket is readable, recvmsg() does not block. */
	ret = wait_readable(sh->fd, deadline);
	if (ret)
		return ret;
	r.fd_out = -1;
	ret = recv_rep(sh, &r);
	if (r.fd_out >= 0)
		sh->evfd = r.fd_out;
	if (ret < 0)
		return ret;
	if (w.magic != SHRT_PROTO_MAGIC || w.version != SHRT_PROTO_VERSION ||
	    sh->evfd < 0)
		return -EPROTO;
	return 0;
}

/* On failure nothing stays open: AUTO goes on to the next backend with
 * the same handle. */
int __shrt_daemon_open(struct syshax *sh, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int ret;

	if (path) {
		if (strlen(path) >= sizeof(sa.sun_path))
			return -ENAMETOOLONG;
		strcpy(sa.sun_path, path);
	} else {
		ret = shrt_default_path(sa.sun_path, sizeof(sa.sun_path));
		if (ret)
			return ret;
	}
	ret = daemon_open(sh, &sa);
	if (ret) {
		if (sh->evfd >= 0)
			close(sh->evfd);
		if (sh->fd >= 0)
			close(sh->fd);
		sh->evfd = -1;
		sh->fd = -1;
	}
	return ret;
}

/* A call whose reply carries an fd (and no arrays): the fd, or -errno;
 * -EPROTO when the reply came without one. */
static int call_fd(struct syshax *sh, unsigned long cmd, void *args,
		   size_t len)
{
	struct rpc r = {
		.cmd = cmd, .args = args, .args_len = len, .fd_in = -1,
	};
	int ret = rpc(sh, &r);

	if (ret < 0)
		return ret;
	return r.fd_out >= 0 ? r.fd_out : -EPROTO;
}

static int d_version(struct syshax *sh, struct syshax_version_args *v)
{
	return call(sh, SYSHAX_IOC_VERSION, v, sizeof(*v));
}

static int d_stats(struct syshax *sh, struct syshax_stats_args *st)
{
	return call(sh, SYSHAX_IOC_STATS, st, sizeof(*st));
}

/* The array comes after the args in the reply; at most
 * SHRT_MAX_CTX_STATS entries a call. */
static int d_ctx_stats(struct syshax *sh, struct syshax_ctx_stats_args *a)
{
	struct rpc r = {
		.cmd = SYSHAX_IOC_CTX_STATS, .args = a, .args_len = sizeof(*a),
		.fd_in = -1, .rep_extra = (void *)(uintptr_t)a->ctxs,
	};
	int ret;

	if (a->max > SHRT_MAX_CTX_STATS)
		a->max = SHRT_MAX_CTX_STATS;
	r.rep_extra_max = (size_t)a->max * sizeof(struct syshax_ctx_stat);
	ret = rpc(sh, &r);
	if (ret < 0)
		return ret;
	if (a->nr > a->max ||
	    r.rep_extra_len != (size_t)a->nr * sizeof(struct syshax_ctx_stat))
		return -EPROTO;
	return ret;
}

static void free_fd(struct shrt_buf_fd *b)
{
	if (b) {
		close(b->fd);
		free(b);
	}
}

/* Keeps the memfd and size of a new handle (owns fd from here on). */
static int keep_fd(struct syshax *sh, uint32_t handle, int fd, uint64_t size)
{
	struct shrt_buf_fd *b = malloc(sizeof(*b));
	int ret = -ENOMEM;

	pthread_mutex_lock(&sh->fd_lock);
	if (b) {
		*b = (struct shrt_buf_fd){ .fd = fd, .size = size };
		/* A number the broker handed out again: its old entry went
		 * with the free that ended it. */
		free_fd(shrt_hmap_del(&sh->buf_fds, handle));
		ret = shrt_hmap_put(&sh->buf_fds, handle, b);
	}
	pthread_mutex_unlock(&sh->fd_lock);
	if (ret) {
		free(b);
		close(fd);
	}
	return ret;
}

/*
 * Handle table updates happen under req_lock together with the request
 * that made or ended the handle: the broker may hand a number out again, so a
 * free in one thread and an alloc in another must reach the table in the
 * order the broker saw them.
 */

/* After a failure to keep the fd, the handle must not outlive it. */
static int keep_or_free_locked(struct syshax *sh, uint32_t handle, int fd,
			       uint64_t size)
{
	struct syshax_buf_free_args f = { .handle = handle };
	int ret;

	if (fd < 0)
		ret = -EPROTO;
	else
		ret = keep_fd(sh, handle, fd, size);
	if (ret)
		call_locked(sh, SYSHAX_IOC_BUF_FREE, &f, sizeof(f));
	return ret;
}

static int d_buf_alloc(struct syshax *sh, struct syshax_buf_alloc_args *a)
{
	struct rpc r = {
		.cmd = SYSHAX_IOC_BUF_ALLOC, .args = a, .args_len = sizeof(*a),
		.fd_in = -1,
	};
	int ret;

	pthread_mutex_lock(&sh->req_lock);
	ret = rpc_locked(sh, &r);
	if (ret >= 0)
		ret = keep_or_free_locked(sh, a->handle, r.fd_out, a->size);
	pthread_mutex_unlock(&sh->req_lock);
	return ret;
}

static int d_buf_free(struct syshax *sh, uint32_t handle)
{
	struct syshax_buf_free_args f = { .handle = handle };
	int ret;

	pthread_mutex_lock(&sh->req_lock);
	ret = call_locked(sh, SYSHAX_IOC_BUF_FREE, &f, sizeof(f));
	if (ret >= 0) {
		pthread_mutex_lock(&sh->fd_lock);
		free_fd(shrt_hmap_del(&sh->buf_fds, handle));
		pthread_mutex_unlock(&sh->fd_lock);
	}
	pthread_mutex_unlock(&sh->req_lock);
	return ret;
}

static int d_buf_info(struct syshax *sh, struct syshax_buf_info_args *i)
{
	return call(sh, SYSHAX_IOC_BUF_INFO, i, sizeof(*i));
}

static int d_buf_register(struct syshax *sh,
			  struct syshax_buf_register_args *r)
{
	(void)sh;
	(void)r;
	return -EOPNOTSUPP;
}

static int d_buf_export(struct syshax *sh, struct syshax_buf_export_args *e)
{
	int fd = call_fd(sh, SYSHAX_IOC_BUF_EXPORT, e, sizeof(*e));

	if (fd < 0)
		return fd;
	if (!(e->flags & SYSHAX_EXPORT_CLOEXEC))
		fcntl(fd, F_SETFD, 0);
	e->fd = fd;
	return 0;
}

static int d_buf_import(struct syshax *sh, struct syshax_buf_import_args *i)
{
	struct rpc r = {
		.cmd = SYSHAX_IOC_BUF_IMPORT, .args = i, .args_len = sizeof(*i),
		.fd_in = i->fd,
	};
	int ret;

	if (i->fd < 0)
		return -EBADF;
	pthread_mutex_lock(&sh->req_lock);
	ret = rpc_locked(sh, &r);
	/* The fd given names the buffer; the reply's maps it. */
	if (ret >= 0)
		ret = keep_or_free_locked(sh, i->handle, r.fd_out, i->size);
	pthread_mutex_unlock(&sh->req_lock);
	return ret;
}

/* A memfd maps past its end and faults there (SIGBUS): only the size the
 * broker gave for the handle is mapped, any other is -EINVAL. */
static int d_buf_mmap(struct syshax *sh, const struct syshax_buffer *buf,
		      void **addr)
{
	struct shrt_buf_fd *b;
	void *p = MAP_FAILED;
	int err = EBADF;

	pthread_mutex_lock(&sh->fd_lock);
	b = shrt_hmap_get(&sh->buf_fds, buf->handle);
	if (b && b->size != buf->size) {
		err = EINVAL;
	} else if (b) {
		p = mmap(NULL, buf->size, PROT_READ | PROT_WRITE, MAP_SHARED,
			 b->fd, 0);
		err = errno;
	}
	pthread_mutex_unlock(&sh->fd_lock);
	if (p == MAP_FAILED)
		return -err;
	*addr = p;
	return 0;
}

static int d_submit(struct syshax *sh, const struct syshax_job *jobs,
		    unsigned int nr)
{
	struct syshax_submit_args s = { .nr = nr };
	struct rpc r = {
		.cmd = SYSHAX_IOC_SUBMIT, .args = &s, .args_len = sizeof(s),
		.extra = jobs, .extra_len = (size_t)nr * sizeof(*jobs),
		.fd_in = -1,
	};

	if (!nr || nr > sh->ver.max_submit)
		return -EINVAL;
	return rpc(sh, &r);
}

/*
 * How many bytes from p on the caller's memory takes, up to len, found
 * without a fault: the kernel writes one byte of each 4 KiB piece
 * (getrandom()) or says EFAULT. A message received into memory that faults
 * is gone, so replies that cannot go back (completions, fetched jobs) go
 * only where this said yes, as the module's copy_to_user() leaves them
 * queued. Linux pages are 4 KiB or more: one byte stands for its piece.
 */
size_t shrt_writable_len(void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p, q;

	if (len > UINTPTR_MAX - a)
		len = UINTPTR_MAX - a;
	for (q = a; q - a < len; q = (q | 4095) + 1) {
		/* EAGAIN (no entropy yet) tells nothing: assume writable. */
		if (getrandom((void *)q, 1, GRND_NONBLOCK) < 0 &&
		    errno == EFAULT)
			return q - a;
		if (q > UINTPTR_MAX - 4096)
			break;
	}
	return len;
}

/* Completions are one message each on the event socket, so several threads
 * may reap at once and the fd is readable exactly when one is ready. */
static int reap(struct syshax *sh, struct syshax_wait_args *w)
{
	struct syshax_completion *cpls = (void *)(uintptr_t)w->cpls;
	int64_t end = shrt_deadline_ns(w->timeout_ns);
	struct mmsghdr mm[64];
	struct iovec iov[64];
	unsigned int got = 0, ok = 0, i;

	if (!w->max || w->min > w->max || w->flags || w->pad)
		return -EINVAL;
	for (;;) {
		unsigned int want = w->max - got;
		struct pollfd pfd = { .fd = sh->evfd, .events = POLLIN };
		struct timespec ts, *tsp = NULL;
		int n;

		if (want > 64)
			want = 64;
		/* Slots [0, ok) are known writable. */
		if (ok < got + want)
			ok += (unsigned int)(shrt_writable_len(&cpls[ok],
					(size_t)(got + want - ok) * sizeof(*cpls)) /
					sizeof(*cpls));
		if (ok == got)
			return got ? (int)got : -EFAULT;
		if (want > ok - got)
			want = ok - got;
		memset(mm, 0, sizeof(mm));
		for (i = 0; i < want; i++) {
			iov[i].iov_base = &cpls[got + i];
			iov[i].iov_len = sizeof(*cpls);
			mm[i].msg_hdr.msg_iov = &iov[i];
			mm[i].msg_hdr.msg_iovlen = 1;
		}
		n = recvmmsg(sh->evfd, mm, want, MSG_DONTWAIT, NULL);
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return got ? (int)got : -errno;
		for (i = 0; n > 0 && i < (unsigned int)n; i++) {
			/* An empty message is the end of file: broker gone. */
			if (mm[i].msg_len != sizeof(*cpls))
				return got ? (int)got : -EPIPE;
			got++;
		}
		if (got >= w->min || got == w->max)
			return (int)got;
		if (n > 0)
			continue;
		if (end >= 0) {
			int64_t left = end - shrt_now_ns();

			if (left <= 0)
				return got ? (int)got : -ETIMEDOUT;
			ts.tv_sec = left / 1000000000;
			ts.tv_nsec = left % 1000000000;
			tsp = &ts;
		}
		n = ppoll(&pfd, 1, tsp, NULL);
		if (n < 0 && errno == EINTR)
			return got ? (int)got : -EINTR;
		if (n < 0)
			return got ? (int)got : -errno;
		if (n > 0 && !(pfd.revents & POLLIN))
			return got ? (int)got : -EPIPE;
	}
}

static int d_wait(struct syshax *sh, struct syshax_wait_args *w)
{
	int ret = reap(sh, w);

	if (ret > 0)
		__atomic_fetch_add(&sh->reaped, (uint32_t)ret, __ATOMIC_RELAXED);
	return ret;
}

static int d_engine_attach(struct syshax *sh,
			   struct syshax_engine_attach_args *a)
{
	return call(sh, SYSHAX_IOC_ENGINE_ATTACH, a, sizeof(*a));
}

/* Drains the "jobs queued" notes: a fetch is about to look. */
static void drain_notes(struct syshax *sh)
{
	char note[16];

	while (recv(sh->evfd, note, sizeof(note), MSG_DONTWAIT) > 0)
		;
}

static int d_engine_fetch(struct syshax *sh,
			  struct syshax_engine_fetch_args *f)
{
	struct syshax_engine_fetch_args a = *f;
	struct rpc r = {
		.cmd = SYSHAX_IOC_ENGINE_FETCH, .args = &a,
		.args_len = sizeof(a), .fd_in = -1,
		.rep_extra = (void *)(uintptr_t)f->jobs, .intr = 1,
	};
	int ret;

	if (a.max > SHRT_MAX_FETCH)
		a.max = SHRT_MAX_FETCH;
	/* Jobs the broker sent cannot go back: fetch only as many as fit. */
	if (a.max) {
		size_t len = shrt_writable_len(r.rep_extra, (size_t)a.max *
					  sizeof(struct syshax_engine_job));

		a.max = (unsigned int)(len / sizeof(struct syshax_engine_job));
		if (!a.max)
			return -EFAULT;
	}
	r.rep_extra_max = (size_t)a.max * sizeof(struct syshax_engine_job);
	drain_notes(sh);
	ret = rpc(sh, &r);
	if (ret > 0 && r.rep_extra_len !=
	    (size_t)ret * sizeof(struct syshax_engine_job))
		return -EPROTO;
	return ret;
}

static int d_engine_map(struct syshax *sh, uint64_t id, void **addr,
			uint64_t *size)
{
	struct syshax_engine_map_args m = { .id = id };
	int fd = call_fd(sh, SYSHAX_IOC_ENGINE_MAP, &m, sizeof(m));
	void *p;
	int ret;

	if (fd < 0)
		return fd;
	p = mmap(NULL, m.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ret = -errno;
	close(fd);
	if (p == MAP_FAILED)
		return ret;
	*addr = p;
	*size = m.size;
	return 0;
}

static int complete_chunk(struct syshax *sh, const void *arg,
			  unsigned int first, unsigned int n)
{
	struct syshax_engine_complete_args c = { .nr = n };
	struct rpc r = {
		.cmd = SYSHAX_IOC_ENGINE_COMPLETE, .args = &c,
		.args_len = sizeof(c),
		.extra = (const struct syshax_engine_cpl *)arg + first,
		.extra_len = (size_t)n * sizeof(struct syshax_engine_cpl),
		.fd_in = -1,
	};

	return rpc(sh, &r);
}

static int d_engine_complete(struct syshax *sh,
			     const struct syshax_engine_cpl *cpls,
			     unsigned int nr)
{
	return __shrt_chunked(sh, complete_chunk, cpls, nr, SHRT_MAX_COMPLETE);
}

static int d_ring_setup(struct syshax *sh, struct syshax_ring_setup_args *a,
			void **area)
{
	int fd = call_fd(sh, SYSHAX_IOC_RING_SETUP, a, sizeof(*a));
	void *p;

	if (fd < 0)
		return fd;
	p = mmap(NULL, a->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -errno;
	*area = p;
	return 0;
}

/* A kick is one byte on the event socket; a full socket has kicks. */
static int d_ring_kick(struct syshax *sh)
{
	char kick = 1;

	if (send(sh->evfd, &kick, 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 &&
	    errno != EAGAIN)
		return errno == ECONNRESET ? -EPIPE : -errno;
	return 0;
}

/* The broker closed its end of the event socket (it exited or was
 * killed): nothing put into the rings will be taken. */
static int d_ring_peer(struct syshax *sh)
{
	struct pollfd p = { .fd = sh->evfd };

	return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR)) ?
	       -EPIPE : 0;
}

/* The broker's handles of this client: the size it gave, read-write. */
static int d_ref_info(struct syshax *sh, __u64 handle, __u64 *size,
		      __u32 *access)
{
	struct shrt_buf_fd *b = NULL;

	pthread_mutex_lock(&sh->fd_lock);
	b = shrt_hmap_get(&sh->buf_fds, handle);
	if (b)
		*size = b->size;
	pthread_mutex_unlock(&sh->fd_lock);
	*access = SYSHAX_ACCESS_RW;
	return b ? 0 : -EBADF;
}

static void d_close(struct syshax *sh)
{
	uint32_t i;

	for (i = 0; i < sh->buf_fds.cap; i++)
		if (sh->buf_fds.keys[i])
			free_fd(sh->buf_fds.vals[i]);
	shrt_hmap_free(&sh->buf_fds);
	if (sh->evfd >= 0)
		close(sh->evfd);
	if (sh->fd >= 0)
		close(sh->fd);
}

const struct shrt_backend __shrt_daemon_backend = {
	.version = d_version,
	.stats = d_stats,
	.ctx_stats = d_ctx_stats,
	.buf_alloc = d_buf_alloc,
	.buf_free = d_buf_free,
	.buf_info = d_buf_info,
	.buf_register = d_buf_register,
	.buf_export = d_buf_export,
	.buf_import = d_buf_import,
	.buf_mmap = d_buf_mmap,
	.submit = d_submit,
	.wait = d_wait,
	.engine_attach = d_engine_attach,
	.engine_fetch = d_engine_fetch,
	.engine_map = d_engine_map,
	.engine_complete = d_engine_complete,
	.ring_setup = d_ring_setup,
	.ring_kick = d_ring_kick,
	.ring_drain = drain_notes,
	.ring_peer = d_ring_peer,
	.ref_info = d_ref_info,
	.close = d_close,
};
