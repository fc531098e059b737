// SPDX-License-Identifier: MIT
/*
 * Shared rings on the userspace broker (uapi/syshax.h, "Rings"): the area
 * is a memfd both the broker and the caller map; broker/ring.h does the
 * indices, the copies and the wake-up rule, as in the module. A kick is one
 * byte the caller sends on its event socket; a wake-up one byte the broker
 * sends there. The broker's loop takes what the in rings hold each round,
 * and before it sleeps asks every ring to kick it (or, with engine_poll_us,
 * keeps looking that long first).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "broker_int.h"

#define SHX_RING_LOAD_ACQ(p)	__atomic_load_n((p), __ATOMIC_ACQUIRE)
#define SHX_RING_STORE_REL(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define SHX_RING_READ(p)	__atomic_load_n((p), __ATOMIC_RELAXED)
#define SHX_RING_WRITE(p, v)	__atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define SHX_RING_MB()		__atomic_thread_fence(__ATOMIC_SEQ_CST)
#include "ring.h"

/* Jobs or completions taken from an in ring per step. */
#define TAKE_BATCH	64

struct bk_ring {
	struct shx_ring r;
	void *area;
	size_t size;
	struct bk_conn *conn;
	int notes;			/* an engine's, SYSHAX_RING_NOTES */
	/* Out entries put and not yet published (b->dirty). */
	struct bk_ring *dnext;
	int dirty;
};

static int user_full(const struct shxd_broker *b, const struct bk_user *u)
{
	return u->nr_jobs >= b->conf.max_jobs_user;
}

int bk_ring_setup(struct shxd_broker *b, struct bk_conn *c,
		  struct syshax_ring_setup_args *a, int *fd)
{
	uint32_t in_size = c->engine ? sizeof(struct syshax_engine_cpl) :
				       sizeof(struct syshax_job);
	uint32_t out_size = c->engine ? sizeof(struct syshax_engine_job) :
					sizeof(struct syshax_completion);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &c->ev_tag };
	uint32_t in_off, out_off;
	struct bk_ring *br;
	int ret, mfd;

	if ((a->flags & ~SYSHAX_RING_NOTES) || (a->flags && !c->engine) ||
	    a->max_jobs)
		return -EINVAL;
	/* Rings once, and not over jobs of the old path (as the module). */
	if (c->ring || bk_jobs_busy(b, c))
		return -EBUSY;
	ret = shx_ring_sizes(c->engine, SHXD_DEF_MAX_SUBMIT,
			     b->conf.max_jobs_ctx, a);
	if (ret)
		return ret;
	br = calloc(1, sizeof(*br));
	if (!br)
		return -ENOMEM;
	br->size = shx_ring_layout(a->in_entries, in_size, a->out_entries,
				   out_size, &in_off, &out_off);
	mfd = memfd_create("syshax-ring", MFD_CLOEXEC);
	if (mfd < 0 || ftruncate(mfd, (off_t)br->size)) {
		ret = -errno;
		goto err;
	}
	br->area = mmap(NULL, br->size, PROT_READ | PROT_WRITE, MAP_SHARED,
			mfd, 0);
	if (br->area == MAP_FAILED) {
		ret = -errno;
		goto err;
	}
	shx_ring_init(&br->r, br->area, a->in_entries, in_size,
		      a->out_entries, out_size);
	br->conn = c;
	br->notes = !!(a->flags & SYSHAX_RING_NOTES);
	if (!c->engine && (b->rings_full || user_full(b, c->user)))
		br->r.hdr->broker_flags.v = SYSHAX_RING_FULL;
	c->ring = br;
	c->ev_out = 0;
	epoll_ctl(b->epfd, EPOLL_CTL_MOD, c->evfd, &ev);
	a->max_jobs = c->engine ? 0 : b->conf.max_jobs_ctx;
	if (c->engine)
		bk_kick_engines(b);	/* jobs that waited for it */
	a->size = br->size;
	a->mmap_offset = 0;
	*fd = mfd;		/* the caller closes it once it is sent */
	return 0;
err:
	if (mfd >= 0)
		close(mfd);
	free(br);
	return ret;
}

void bk_ring_free(struct shxd_broker *b, struct bk_conn *c)
{
	struct bk_ring **p;

	if (!c->ring)
		return;
	for (p = &b->dirty; *p; p = &(*p)->dnext)
		if (*p == c->ring) {
			*p = c->ring->dnext;
			break;
		}
	munmap(c->ring->area, c->ring->size);
	free(c->ring);
	c->ring = NULL;
	shrt_hmap_free(&c->mapped);
	c->nr_gone = 0;
}

int bk_ring_dead(const struct bk_conn *c)
{
	return c->ring->r.dead;
}

/* One byte on c's event socket: its fd polls readable. A full socket
 * already holds unread wake-ups. */
static void wake(struct bk_conn *c)
{
	char note = 1;

	send(c->evfd, &note, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* Kicks read from the event socket: they only woke the loop. */
void bk_ring_kicked(struct bk_conn *c)
{
	struct syshax_ring_hdr *h = c->ring->r.hdr;
	char buf[64];

	while (recv(c->evfd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
	/* A caller that drained a wake-up its entries still need. */
	if ((SHX_RING_READ(&h->user_flags.v) & SYSHAX_RING_WAITING) &&
	    SHX_RING_LOAD_ACQ(&h->out_head.v) != c->ring->r.out_tail)
		wake(c);
}

/* Out entries are published once per round of the loop (one fence, one
 * wake-up for a batch). */
static void mark_dirty(struct shxd_broker *b, struct bk_ring *br)
{
	if (br->dirty)
		return;
	br->dirty = 1;
	br->dnext = b->dirty;
	b->dirty = br;
}

void bk_rings_publish(struct shxd_broker *b)
{
	struct bk_ring *br;

	while ((br = b->dirty)) {
		b->dirty = br->dnext;
		br->dirty = 0;
		if (shx_ring_out_publish(&br->r))
			wake(br->conn);
	}
}

int bk_ring_post_cpl(struct shxd_broker *b, struct bk_conn *c,
		     const struct syshax_completion *cpl)
{
	struct shx_ring *r = &c->ring->r;
	int room = shx_ring_out_room(r);

	/* Room was counted before the job was taken: none means a caller
	 * whose out_head lies (shx_ring_out_room() killed the ring). */
	if (room <= 0)
		return room < 0 ? room : shx_ring_kill(r);
	shx_ring_out_put(r, cpl);
	mark_dirty(b, c->ring);
	return 0;
}

int bk_ring_outstanding(struct bk_conn *c, unsigned int *n)
{
	int room = shx_ring_out_room(&c->ring->r);

	if (room < 0)
		return room;
	*n = c->nr_jobs + shx_ring_out_pending(&c->ring->r);
	return 0;
}

/* A client's in ring: queue what its limits and the free slots allow; a
 * job that fails its checks completes at once with the errno. */
static int take_jobs(struct shxd_broker *b, struct bk_conn *c)
{
	struct syshax_job jobs[TAKE_BATCH];
	unsigned int busy, room, i;
	int n, taken = 0, ret;

	for (;;) {
		ret = bk_ring_outstanding(c, &busy);
		if (ret)
			return ret;
		room = busy < b->conf.max_jobs_ctx ?
		       b->conf.max_jobs_ctx - busy : 0;
		if (room > b->conf.max_jobs_global - b->nr_active)
			room = b->conf.max_jobs_global - b->nr_active;
		if (room > b->conf.max_jobs_user - c->user->nr_jobs)
			room = b->conf.max_jobs_user - c->user->nr_jobs;
		n = shx_ring_in_take(&c->ring->r, jobs,
				     room < TAKE_BATCH ? room : TAKE_BATCH);
		if (n <= 0)
			break;
		for (i = 0; i < (unsigned int)n; i++) {
			ret = bk_queue_one(b, c, &jobs[i]);
			if (ret) {
				struct syshax_completion cpl = {
					.user_data = jobs[i].user_data,
					.status = ret,
				};

				b->st.submitted++;
				b->st.failed++;
				bk_ring_post_cpl(b, c, &cpl);
			}
		}
		taken += n;
	}
	return n < 0 ? n : taken;
}

/* An engine's in ring: its completions, as ENGINE_COMPLETE takes them. A
 * bad token kills the engine's rings (the old path's -EINVAL). */
static int take_cpls(struct shxd_broker *b, struct bk_conn *c)
{
	struct syshax_engine_cpl cpls[TAKE_BATCH];
	struct syshax_engine_complete_args a = { 0 };
	int n, done, taken = 0;

	while ((n = shx_ring_in_take(&c->ring->r, cpls, TAKE_BATCH)) > 0) {
		a.nr = (uint32_t)n;
		done = bk_complete(b, c, &a, cpls, (size_t)n * sizeof(cpls[0]));
		if (done != n)
			return shx_ring_kill(&c->ring->r);
		taken += n;
	}
	return n < 0 ? n : taken;
}

/* Fills an engine's out ring from the queue. */
int bk_ring_give(struct shxd_broker *b, struct bk_conn *c)
{
	struct shx_ring *r = &c->ring->r;
	int room = shx_ring_out_room(r), n = 0;

	while (room > 0 && b->q_head) {
		shx_ring_out_put(r, &bk_hold(b, c)->ej);
		room--;
		n++;
	}
	if (n)
		mark_dirty(b, c->ring);
	return n;
}

/* An engine that is gone: the jobs still in its out ring, which it never
 * took, go back to the head of the queue, newest first (so in order). */
void bk_ring_requeue(struct shxd_broker *b, struct bk_conn *c)
{
	struct syshax_engine_job ej;

	while (shx_ring_out_unput(&c->ring->r, &ej))
		bk_unhold(b, c, ej.token);
}

/* ---- Notes: mappings engines keep ---------------------------------------- */

/* c->mapped's value for a freed buffer whose note is not in the ring yet. */
static char gone_mark;

int bk_ring_mapped(struct bk_conn *c, struct shxd_membuf *mb)
{
	if (!c->ring || !c->ring->notes || shrt_hmap_get(&c->mapped, mb->id))
		return 0;
	return shrt_hmap_put(&c->mapped, mb->id, mb);
}

void bk_rings_buf_gone(struct shxd_broker *b, const struct shxd_membuf *mb)
{
	struct bk_conn *c;

	for (c = b->conns; c; c = c->next) {
		if (!c->engine || !c->ring ||
		    shrt_hmap_get(&c->mapped, mb->id) != mb)
			continue;
		/* Cannot fail: the deletion made room. */
		shrt_hmap_del(&c->mapped, mb->id);
		shrt_hmap_put(&c->mapped, mb->id, &gone_mark);
		c->nr_gone++;
	}
}

/* The notes c is owed, as its out ring has room. */
static void notes_put(struct shxd_broker *b, struct bk_conn *c)
{
	struct syshax_engine_job note = {
		.token = SYSHAX_NOTE_TOKEN,
		.job = { .op = SYSHAX_NOTE_BUF_GONE, .nr_refs = 1 },
	};
	struct shx_ring *r = &c->ring->r;
	uint64_t ids[TAKE_BATCH];
	unsigned int n, i;
	uint32_t k;
	int room;

	while (c->nr_gone && (room = shx_ring_out_room(r)) > 0) {
		/* Collect first: a deletion moves entries of the map. */
		for (n = 0, k = 0; k < c->mapped.cap && n < (unsigned int)room &&
		     n < TAKE_BATCH; k++)
			if (c->mapped.keys[k] && c->mapped.vals[k] == &gone_mark)
				ids[n++] = c->mapped.keys[k];
		for (i = 0; i < n; i++) {
			shrt_hmap_del(&c->mapped, ids[i]);
			note.job.refs[0].buf = ids[i];
			shx_ring_out_put(r, &note);
		}
		c->nr_gone -= n;
		mark_dirty(b, c->ring);
	}
}

/* Takes every ring's new entries; returns how many. */
int bk_rings_run(struct shxd_broker *b)
{
	struct bk_conn *c;
	int n, total = 0;

	/* Completions free slots and room that jobs still in rings wait
	 * for: go round until nothing moves. */
	do {
		n = 0;
		for (c = b->conns; c; c = c->next) {
			int k;

			if (!c->ring || c->ring->r.dead)
				continue;
			if (c->engine)
				notes_put(b, c);
			k = c->engine ? take_cpls(b, c) : take_jobs(b, c);
			if (k > 0)
				n += k;
		}
		if (n && b->q_head)
			bk_kick_engines(b);
		total += n;
	} while (n);
	bk_rings_publish(b);
	return total;
}

static void ring_full_flag(struct bk_conn *c, int full)
{
	struct syshax_ring_hdr *h = c->ring->r.hdr;
	uint32_t f = SHX_RING_READ(&h->broker_flags.v);

	SHX_RING_WRITE(&h->broker_flags.v, full ? f | SYSHAX_RING_FULL :
		       f & ~SYSHAX_RING_FULL);
}

/*
 * Tells client rings whether their submits would get -EAGAIN on the old
 * path: the global job limit, or their user's, is reached. Called when u's
 * or the global count changed; rewrites flags only on a transition.
 */
void bk_rings_full(struct shxd_broker *b, struct bk_user *u)
{
	int full = b->nr_active >= b->conf.max_jobs_global;
	int ufull = user_full(b, u);
	struct bk_conn *c;

	if (full == b->rings_full && ufull == u->full)
		return;
	for (c = b->conns; c; c = c->next)
		if (c->ring && !c->engine &&
		    (full != b->rings_full || c->user == u))
			ring_full_flag(c, full || user_full(b, c->user));
	b->rings_full = full;
	u->full = ufull;
}

/* Before the loop sleeps: 1 when some ring got entries meanwhile. */
int bk_rings_sleep(struct shxd_broker *b)
{
	struct bk_conn *c;
	int busy = 0;

	for (c = b->conns; c; c = c->next)
		if (c->ring && shx_ring_sleep_prepare(&c->ring->r))
			busy = 1;
	return busy;
}

void bk_rings_awake(struct shxd_broker *b)
{
	struct bk_conn *c;

	for (c = b->conns; c; c = c->next)
		if (c->ring)
			shx_ring_awake(&c->ring->r);
}
