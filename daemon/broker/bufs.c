// SPDX-License-Identifier: MIT
/*
 * The userspace broker's buffer requests: alloc, free, info, export,
 * import and an engine's map. Buffers live while a handle or a job holds
 * them (membuf.refs) and are charged to the user that made them.
 *
 * A buffer's pages are faulted in by a thread of its own, never by the
 * broker's loop: a 1 GiB BUF_ALLOC takes a second, and every other
 * client would wait that long. The client that asked waits for its reply
 * (its requests are not read meanwhile); the thread posts the result on a
 * pipe the loop polls.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "broker_int.h"

/* ---- Buffers alive ------------------------------------------------------ */

/* Adds mb (charged to its user) to the buffers alive, with id (0: new). */
static int buf_add(struct shxd_broker *b, struct shxd_membuf *mb, uint64_t id)
{
	if (b->nr_bufs == b->cap_bufs) {
		size_t n = b->cap_bufs * 2 + 16;
		struct shxd_membuf **p = realloc(b->bufs, n * sizeof(*p));

		if (!p)
			return -ENOMEM;
		b->bufs = p;
		b->cap_bufs = n;
	}
	mb->id = id ? id : ++b->next_buf_id;
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
	mb->user->pinned -= mb->size;
	mb->user->nr_bufs--;
	bk_user_idle(b, mb->user);
	bk_rings_buf_gone(b, mb);
	shxd_membuf_destroy(mb);
}

/* ---- Allocation --------------------------------------------------------- */

/* One allocation being populated by its thread. */
struct bk_pending {
	struct bk_pending *next;	/* b->pending */
	struct bk_conn *c;		/* NULL once the client left */
	struct bk_user *user;		/* charged while it runs */
	struct syshax_buf_alloc_args a;
	int notify;			/* b->pop_pipe[1] */
	pthread_t thread;
	int ret;			/* the thread's */
	struct shxd_membuf *mb;
};

static void *populate_main(void *arg)
{
	struct bk_pending *p = arg;

	p->ret = shxd_membuf_create(p->a.size, p->a.node, p->a.flags, &p->mb);
	/* A pointer is less than PIPE_BUF: written whole or not at all. */
	while (write(p->notify, &p, sizeof(p)) < 0 && errno == EINTR)
		;
	return NULL;
}

/* The client's requests wait while its allocation runs. */
static void conn_pause(struct shxd_broker *b, struct bk_conn *c, int paused)
{
	struct epoll_event ev = {
		.events = paused ? 0 : EPOLLIN,
		.data.ptr = &c->req_tag,
	};

	epoll_ctl(b->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Replies to BUF_ALLOC now or, with BK_PENDING, when its thread is done. */
int bk_buf_alloc(struct shxd_broker *b, struct bk_conn *c,
		 struct syshax_buf_alloc_args *a)
{
	struct bk_pending *p;
	int ret;

	if ((a->flags & ~SYSHAX_BUF_ALLOC_FLAGS) || a->pad)
		return -EINVAL;
	ret = shxd_membuf_check(a->size, a->node, a->flags);
	if (ret)
		return ret;
	if (c->handles.map.nr >= b->conf.max_bufs_ctx)
		return -ENOSPC;
	ret = bk_user_may_pin(b, c, a->size);
	if (ret)
		return ret;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->c = c;
	p->user = c->user;
	p->a = *a;
	p->notify = b->pop_pipe[1];
	ret = -pthread_create(&p->thread, NULL, populate_main, p);
	if (ret) {
		free(p);
		return ret == -EAGAIN ? -ENOMEM : ret;
	}
	/* Charged now, so allocations running at once cannot pass a cap. */
	c->user->pinned += a->size;
	c->user->nr_bufs++;
	b->reserved += a->size;
	p->next = b->pending;
	b->pending = p;
	c->pending = p;
	conn_pause(b, c, 1);
	return BK_PENDING;
}

/* Takes p's buffer into the broker and c, or returns why not. */
static int alloc_finish(struct shxd_broker *b, struct bk_pending *p)
{
	struct shxd_membuf *mb = p->mb;
	int ret;

	if (p->ret)
		return p->ret;
	mb->refs = 1;
	ret = p->c ? buf_add(b, mb, 0) : -EPIPE;
	if (ret) {
		shxd_membuf_destroy(mb);
		return ret;
	}
	mb->user = p->user;
	p->user->pinned += mb->size;
	p->user->nr_bufs++;
	ret = bk_handle_add(&p->c->handles, mb, &p->a.handle);
	if (ret) {
		bk_buf_put(b, mb);
		return ret;
	}
	p->a.size = mb->size;
	p->a.id = mb->id;
	p->a.mmap_offset = 0;
	return 0;
}

/* Answers p, whose thread has been joined. */
static void alloc_done(struct shxd_broker *b, struct bk_pending *p)
{
	struct bk_pending **pp;
	int ret;

	for (pp = &b->pending; *pp != p; pp = &(*pp)->next)
		;
	*pp = p->next;
	/* The reservation gives way to the buffer's own charge. */
	p->user->pinned -= p->a.size;
	p->user->nr_bufs--;
	b->reserved -= p->a.size;
	ret = alloc_finish(b, p);
	bk_user_idle(b, p->user);
	if (p->c) {
		p->c->pending = NULL;
		conn_pause(b, p->c, 0);
		bk_reply(p->c, ret, &p->a, sizeof(p->a), NULL, 0,
			 ret ? -1 : p->mb->fd);
	}
	free(p);
}

/* The loop's side of the pipe: every allocation whose thread is done. */
void bk_buf_alloc_events(struct shxd_broker *b)
{
	struct bk_pending *p;

	while (read(b->pop_pipe[0], &p, sizeof(p)) == sizeof(p)) {
		pthread_join(p->thread, NULL);
		alloc_done(b, p);
	}
}

/* A connection that goes leaves its allocation to finish unanswered. */
void bk_buf_conn_gone(struct shxd_broker *b, struct bk_conn *c)
{
	uint32_t i;

	if (c->pending)
		c->pending->c = NULL;
	c->pending = NULL;
	for (i = 0; i < c->handles.map.cap; i++)
		if (c->handles.map.keys[i])
			bk_buf_put(b, c->handles.map.vals[i]);
	shrt_hmap_free(&c->handles.map);
}

/* Waits for every allocation still running (the broker is going). */
void bk_buf_fini(struct shxd_broker *b)
{
	struct bk_pending *p;

	while ((p = b->pending)) {
		p->c = NULL;
		pthread_join(p->thread, NULL);
		alloc_done(b, p);
	}
	free(b->bufs);
}

/* ---- The other requests ------------------------------------------------- */

int bk_buf_free(struct shxd_broker *b, struct bk_conn *c,
		const struct syshax_buf_free_args *f)
{
	struct shxd_membuf *mb;

	if (f->pad)
		return -EINVAL;
	mb = bk_handle_del(&c->handles, f->handle);
	if (!mb)
		return -EBADF;
	bk_buf_put(b, mb);
	return 0;
}

int bk_buf_info(struct bk_conn *c, struct syshax_buf_info_args *i)
{
	struct shxd_membuf *mb = bk_handle_get(&c->handles, i->handle);

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

/* ---- Export and import -------------------------------------------------- */

/*
 * An exported fd is one end of a socket pair, not the memfd: the broker
 * holds the other end and sees it hang up when the last copy of the fd
 * is closed in every process. Until then the export holds the buffer (and
 * its charge), as the module's dma-buf does; an import finds the export
 * by the socket's cookie, which the kernel never reuses.
 */
struct bk_export {
	struct bk_export *next, **pprev;	/* b->exports */
	struct shxd_membuf *mb;
	struct bk_user *user;	/* the exporter: the fd is charged to it */
	int fd;			/* our end */
	uint64_t cookie;	/* of the end given out */
	struct bk_tag tag;
};

static void export_drop(struct shxd_broker *b, struct bk_export *x)
{
	epoll_ctl(b->epfd, EPOLL_CTL_DEL, x->fd, NULL);
	close(x->fd);
	*x->pprev = x->next;
	if (x->next)
		x->next->pprev = x->pprev;
	x->user->nr_bufs--;
	bk_user_idle(b, x->user);
	bk_buf_put(b, x->mb);
	free(x);
}

int bk_buf_export(struct shxd_broker *b, struct bk_conn *c,
		  struct syshax_buf_export_args *e, int *fd)
{
	struct shxd_membuf *mb = bk_handle_get(&c->handles, e->handle);
	struct epoll_event ev = { .events = 0 };
	socklen_t len = sizeof(uint64_t);
	struct bk_export *x;
	int sv[2];

	if ((e->flags & ~SYSHAX_EXPORT_FLAGS) || e->pad)
		return -EINVAL;
	if (!mb)
		return -EBADF;
	if (c->user->nr_bufs >= b->conf.max_bufs_user)
		return -ENOSPC;
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
		free(x);
		return -errno;
	}
	x->fd = sv[0];
	x->tag = (struct bk_tag){ .kind = BK_EXP, .x = x };
	ev.data.ptr = &x->tag;
	if (getsockopt(sv[1], SOL_SOCKET, SO_COOKIE, &x->cookie, &len) ||
	    epoll_ctl(b->epfd, EPOLL_CTL_ADD, x->fd, &ev)) {
		close(sv[0]);
		close(sv[1]);
		free(x);
		return -errno;
	}
	x->mb = mb;
	mb->refs++;
	x->user = c->user;
	c->user->nr_bufs++;
	x->next = b->exports;
	x->pprev = &b->exports;
	if (b->exports)
		b->exports->pprev = &x->next;
	b->exports = x;
	/* Nothing is read from it: a client writing there gets EPIPE. */
	shutdown(sv[0], SHUT_RD);
	*fd = sv[1];		/* the caller closes it once it is sent */
	e->fd = -1;		/* the client's number for it is its own */
	return 0;
}

/* The last copy of an exported fd is closed. */
void bk_buf_export_event(struct shxd_broker *b, struct bk_export *x)
{
	export_drop(b, x);
}

int bk_buf_import(struct shxd_broker *b, struct bk_conn *c,
		  struct syshax_buf_import_args *i, int fd, int *fd_out)
{
	socklen_t len = sizeof(uint64_t);
	struct bk_export *x;
	struct stat st;
	uint64_t cookie;
	int ret;

	if (i->flags || i->pad)
		return -EINVAL;
	if (fd < 0 || fstat(fd, &st))
		return -EBADF;
	if (!S_ISSOCK(st.st_mode) ||
	    getsockopt(fd, SOL_SOCKET, SO_COOKIE, &cookie, &len))
		return -EINVAL;
	for (x = b->exports; x && x->cookie != cookie; x = x->next)
		;
	if (!x)
		return -EINVAL;
	if (c->handles.map.nr >= b->conf.max_bufs_ctx)
		return -ENOSPC;
	ret = bk_handle_add(&c->handles, x->mb, &i->handle);
	if (ret)
		return ret;
	x->mb->refs++;
	i->size = x->mb->size;
	i->mmap_offset = 0;
	i->id = x->mb->id;
	*fd_out = x->mb->fd;	/* to map it by */
	return 0;
}

/* Drops every export (the broker is going). */
void bk_buf_exports_fini(struct shxd_broker *b)
{
	while (b->exports)
		export_drop(b, b->exports);
}

int bk_buf_map(struct shxd_broker *b, struct bk_conn *c,
	       struct syshax_engine_map_args *m, int *fd)
{
	struct shxd_membuf *mb;
	int ret;

	ret = bk_map_check(b, c, m->id, &mb);
	if (!ret)
		ret = bk_ring_mapped(c, mb);
	if (ret)
		return ret;
	m->mmap_offset = 0;
	m->size = mb->size;
	*fd = mb->fd;
	return 0;
}
