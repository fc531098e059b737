// SPDX-License-Identifier: MIT
/*
 * The userspace broker's job queue: SUBMIT, engines (ATTACH, FETCH, MAP,
 * COMPLETE), completion delivery and the lifetime rules, as kmod/broker.c
 * does them. Jobs live in a fixed array of max_jobs_global slots, so the
 * global limit is the slot count and a token finds its slot at once.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/sockios.h>

#include "broker_int.h"
#include "clock.h"
#include "cpl_check.h"
#include "job_check.h"
#include "proto.h"

/* Most completions written to an event socket per call. */
#define FLUSH_BATCH	64

int bk_jobs_init(struct shxd_broker *b)
{
	unsigned int i, n = b->conf.max_jobs_global;

	b->slots = calloc(n, sizeof(*b->slots));
	if (!b->slots)
		return -ENOMEM;
	for (i = n; i-- > 0;) {
		b->slots[i].ej.token = i;
		b->slots[i].next = b->free_list;
		b->free_list = &b->slots[i];
	}
	return 0;
}

void bk_jobs_fini(struct shxd_broker *b)
{
	free(b->slots);
	b->slots = NULL;
}

static void q_append(struct shxd_broker *b, struct bk_job *j)
{
	j->next = NULL;
	j->prev = b->q_tail;
	if (b->q_tail)
		b->q_tail->next = j;
	else
		b->q_head = j;
	b->q_tail = j;
}

static void q_prepend(struct shxd_broker *b, struct bk_job *j)
{
	j->prev = NULL;
	j->next = b->q_head;
	if (b->q_head)
		b->q_head->prev = j;
	else
		b->q_tail = j;
	b->q_head = j;
}

static void q_remove(struct shxd_broker *b, struct bk_job *j)
{
	if (j->prev)
		j->prev->next = j->next;
	else
		b->q_head = j->next;
	if (j->next)
		j->next->prev = j->prev;
	else
		b->q_tail = j->prev;
}

/* Releases the job's buffers and returns its slot. */
static void job_free(struct shxd_broker *b, struct bk_job *j)
{
	unsigned int i;

	for (i = 0; i < SYSHAX_JOB_MAX_REFS; i++) {
		if (j->bufs[i])
			bk_buf_put(b, j->bufs[i]);
		j->bufs[i] = NULL;
	}
	j->state = BJ_FREE;
	j->owner = NULL;
	j->engine = NULL;
	j->next = b->free_list;
	b->free_list = j;
	b->nr_active--;
	j->user->nr_jobs--;
	bk_rings_full(b, j->user);
	bk_user_idle(b, j->user);
	j->user = NULL;
}

/* ---- Completions -------------------------------------------------------- */

static void ev_events(struct shxd_broker *b, struct bk_conn *c, int out)
{
	struct epoll_event ev = {
		.events = (out ? EPOLLOUT : 0) | (c->ring ? EPOLLIN : 0),
		.data.ptr = &c->ev_tag,
	};

	if (c->ev_out == out)
		return;
	c->ev_out = out;
	epoll_ctl(b->epfd, EPOLL_CTL_MOD, c->evfd, &ev);
}

void bk_flush(struct shxd_broker *b, struct bk_conn *c)
{
	struct mmsghdr mm[FLUSH_BATCH];
	struct iovec iov[FLUSH_BATCH];

	while (c->nr_cpls) {
		unsigned int run = c->cap_cpls - c->cpl_head, n, i;
		int sent;

		n = c->nr_cpls < run ? c->nr_cpls : run;
		if (n > FLUSH_BATCH)
			n = FLUSH_BATCH;
		memset(mm, 0, sizeof(mm[0]) * n);
		for (i = 0; i < n; i++) {
			iov[i].iov_base = &c->cpls[c->cpl_head + i];
			iov[i].iov_len = sizeof(c->cpls[0]);
			mm[i].msg_hdr.msg_iov = &iov[i];
			mm[i].msg_hdr.msg_iovlen = 1;
		}
		sent = sendmmsg(c->evfd, mm, n, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (sent < 0) {
			if (errno == EAGAIN) {
				ev_events(b, c, 1);
				return;
			}
			/* The client is going: its close drops the rest. */
			c->nr_cpls = 0;
			break;
		}
		c->cpl_head = (c->cpl_head + (unsigned int)sent) % c->cap_cpls;
		c->nr_cpls -= (unsigned int)sent;
		c->in_sock += (unsigned int)sent;
	}
	ev_events(b, c, 0);
}

/* Ends a held job: counts it, queues its completion to a live owner. */
static void job_end(struct shxd_broker *b, struct bk_job *j,
		    const struct syshax_engine_cpl *e)
{
	struct bk_conn *o = j->owner;

	syshax_job_stats_end(&b->st, e->status,
			     (uint64_t)(shrt_now_ns() - (int64_t)j->submit_ns));
	if (j->engine)
		j->engine->st_eng_done++;
	if (o && e->status)
		o->st_failed++;
	else if (o)
		o->st_completed++;
	if (o && o->ring) {
		struct syshax_completion cpl = {
			.user_data = j->ej.job.user_data,
			.status = e->status,
			.flags = e->flags,
			.result = e->result,
			.exec_ns = e->exec_ns,
		};

		o->nr_jobs--;
		bk_ring_post_cpl(b, o, &cpl);
		o = NULL;
	} else if (o) {
		struct syshax_completion *cpl;

		cpl = &o->cpls[(o->cpl_head + o->nr_cpls) % o->cap_cpls];
		cpl->user_data = j->ej.job.user_data;
		cpl->status = e->status;
		cpl->flags = e->flags;
		cpl->result = e->result;
		cpl->exec_ns = e->exec_ns;
		o->nr_jobs--;
		o->nr_cpls++;
	}
	job_free(b, j);
	if (o)
		bk_flush(b, o);
}

/* ---- Engines ------------------------------------------------------------ */

static void unpark(struct shxd_broker *b, struct bk_conn *c)
{
	struct bk_conn **p;

	for (p = &b->parked; *p; p = &(*p)->fnext)
		if (*p == c) {
			*p = c->fnext;
			break;
		}
	c->fnext = NULL;
	c->fetch_parked = 0;
}

struct bk_job *bk_hold(struct shxd_broker *b, struct bk_conn *c)
{
	struct bk_job *j = b->q_head;

	q_remove(b, j);
	j->state = BJ_HELD;
	j->engine = c;
	b->st.queued--;
	b->st.held++;
	b->st.fetched++;
	return j;
}

/* Hands up to max queued jobs to engine c and replies to its fetch. */
static void give(struct shxd_broker *b, struct bk_conn *c, unsigned int max,
		 const struct syshax_engine_fetch_args *a)
{
	struct syshax_engine_job out[SHRT_MAX_FETCH];
	unsigned int n = 0;

	if (max > SHRT_MAX_FETCH)
		max = SHRT_MAX_FETCH;
	while (n < max && b->q_head)
		out[n++] = bk_hold(b, c)->ej;
	bk_reply(c, (int)n, a, sizeof(*a), out, n * sizeof(out[0]), -1);
}

/* While jobs wait, every engine without a parked fetch has a note unread,
 * so that its fd polls readable (the module's poll is level-triggered on
 * the queue; notes are sent when that level may have risen). */
static void note_engines(struct shxd_broker *b)
{
	struct bk_conn *c;
	char note = 1;

	if (!b->q_head)
		return;
	for (c = b->conns; c; c = c->next) {
		if (!c->engine || c->ring || c->note_sent || c->fetch_parked ||
		    c->broken)
			continue;
		if (send(c->evfd, &note, 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1)
			c->note_sent = 1;
	}
}

/* After jobs were queued: parked fetches first, then engines' rings, then
 * notes. */
void bk_kick_engines(struct shxd_broker *b)
{
	struct bk_conn *c;

	for (c = b->conns; c && b->q_head; c = c->next)
		if (c->engine && c->ring)
			bk_ring_give(b, c);
	while (b->q_head && b->parked) {
		struct syshax_engine_fetch_args a = { 0 };
		struct bk_conn *c = b->parked;

		unpark(b, c);
		a.max = c->fetch_max;
		a.timeout_ns = -1;
		give(b, c, c->fetch_max, &a);
	}
	note_engines(b);
}

int bk_attach(struct shxd_broker *b, struct bk_conn *c,
	      struct syshax_engine_attach_args *a)
{
	if (a->flags || a->pad || a->node < -1 ||
	    a->node > shxd_membuf_max_node())
		return -EINVAL;
	if (c->uid && c->uid != b->euid &&
	    (b->conf.engine_gid == (gid_t)-1 || c->gid != b->conf.engine_gid))
		return -EPERM;
	if (c->engine)
		return -EBUSY;
	c->engine = 1;
	a->engine_id = ++b->next_engine_id;
	b->st.engines++;
	bk_kick_engines(b);
	return 0;
}

void bk_fetch(struct shxd_broker *b, struct bk_conn *c,
	      const struct syshax_engine_fetch_args *a)
{
	if (a->flags || !a->max || !c->engine) {
		bk_reply(c, -EINVAL, a, sizeof(*a), NULL, 0, -1);
		return;
	}
	if (c->fetch_parked) {
		bk_reply(c, -EBUSY, a, sizeof(*a), NULL, 0, -1);
		return;
	}
	c->note_sent = 0;
	if (b->q_head) {
		give(b, c, a->max, a);
		note_engines(b);	/* jobs left over */
		return;
	}
	if (!a->timeout_ns) {
		bk_reply(c, -ETIMEDOUT, a, sizeof(*a), NULL, 0, -1);
		return;
	}
	c->fetch_parked = 1;
	c->fetch_max = a->max;
	c->fetch_end = shrt_deadline_ns(a->timeout_ns);
	c->fnext = NULL;
	{
		struct bk_conn **p = &b->parked;

		while (*p)
			p = &(*p)->fnext;
		*p = c;
	}
}

static void fetch_end(struct shxd_broker *b, struct bk_conn *c, int err)
{
	struct syshax_engine_fetch_args a = { .max = c->fetch_max };

	unpark(b, c);
	bk_reply(c, err, &a, sizeof(a), NULL, 0, -1);
}

void bk_fetch_cancel(struct shxd_broker *b, struct bk_conn *c)
{
	if (c->fetch_parked)
		fetch_end(b, c, -EINTR);
}

int bk_fetch_timeouts(struct shxd_broker *b, int limit)
{
	int64_t now = shrt_now_ns(), next = -1;
	struct bk_conn *c, *n;

	for (c = b->parked; c; c = n) {
		n = c->fnext;
		if (c->fetch_end < 0)
			continue;
		if (c->fetch_end <= now) {
			fetch_end(b, c, -ETIMEDOUT);
			continue;
		}
		if (next < 0 || c->fetch_end < next)
			next = c->fetch_end;
	}
	if (next >= 0 && (next - now) / 1000000 + 1 < limit)
		limit = (int)((next - now) / 1000000) + 1;
	return limit;
}

/* The engine may map a buffer only while a job it holds names it:
 * -ENOENT for no such buffer, -EACCES for one it holds no job on. */
int bk_map_check(struct shxd_broker *b, struct bk_conn *c, uint64_t id,
		 struct shxd_membuf **mb)
{
	unsigned int i, r;
	size_t k;

	if (!c->engine)
		return -EINVAL;
	for (i = 0; i < b->conf.max_jobs_global; i++) {
		struct bk_job *j = &b->slots[i];

		if (j->state != BJ_HELD || j->engine != c)
			continue;
		for (r = 0; r < j->ej.job.nr_refs; r++)
			if (j->bufs[r] && j->bufs[r]->id == id) {
				*mb = j->bufs[r];
				return 0;
			}
	}
	for (k = 0; k < b->nr_bufs; k++)
		if (b->bufs[k]->id == id)
			return -EACCES;
	return -ENOENT;
}

static struct bk_job *held_find(struct shxd_broker *b, struct bk_conn *c,
				uint64_t token)
{
	uint64_t idx = token & 0xffffffffULL;
	struct bk_job *j;

	if (idx >= b->conf.max_jobs_global)
		return NULL;
	j = &b->slots[idx];
	if (j->state != BJ_HELD || j->engine != c || j->ej.token != token)
		return NULL;
	return j;
}

void bk_unhold(struct shxd_broker *b, struct bk_conn *c, uint64_t token)
{
	struct bk_job *j = held_find(b, c, token);

	if (!j)
		return;
	j->engine = NULL;
	b->st.held--;
	b->st.fetched--;
	if (!j->owner) {
		b->st.cancelled++;
		job_free(b, j);
		return;
	}
	j->state = BJ_QUEUED;
	q_prepend(b, j);
	b->st.queued++;
}

int bk_complete(struct shxd_broker *b, struct bk_conn *c,
		const struct syshax_engine_complete_args *a,
		const struct syshax_engine_cpl *cpls, size_t len)
{
	unsigned int n;
	int ret = 0;

	if (a->flags || !a->nr || !c->engine ||
	    len != (size_t)a->nr * sizeof(*cpls))
		return -EINVAL;
	for (n = 0; n < a->nr; n++) {
		const struct syshax_engine_cpl *e = &cpls[n];
		struct bk_job *j;

		ret = syshax_cpl_check(e);
		if (ret)
			break;
		j = held_find(b, c, e->token);
		if (!j) {
			ret = -ENOENT;
			break;
		}
		job_end(b, j, e);
	}
	return n ? (int)n : ret;
}

/* ---- Clients ------------------------------------------------------------ */

/* syshax_job_check()'s lookup: a handle of this connection. */
static int ref_lookup(void *priv, __u64 handle, __u64 *size, __u32 *access)
{
	struct bk_conn *c = priv;
	struct shxd_membuf *mb;

	mb = bk_handle_get(&c->handles, handle);
	if (!mb)
		return -EBADF;
	*size = mb->size;
	*access = SYSHAX_ACCESS_RW;
	return 0;
}

int bk_queue_one(struct shxd_broker *b, struct bk_conn *c,
		     const struct syshax_job *job)
{
	struct bk_job *j;
	unsigned int i;
	int ret;

	ret = syshax_job_check(job, ref_lookup, c);
	if (ret)
		return ret;
	if (c->nr_jobs + c->nr_cpls + c->in_sock >= b->conf.max_jobs_ctx ||
	    c->user->nr_jobs >= b->conf.max_jobs_user || !b->free_list)
		return -EAGAIN;
	j = b->free_list;
	b->free_list = j->next;
	b->nr_active++;
	j->user = c->user;
	c->user->nr_jobs++;
	bk_rings_full(b, c->user);
	j->state = BJ_QUEUED;
	j->owner = c;
	j->submit_ns = (uint64_t)shrt_now_ns();
	j->ej.token = (((j->ej.token >> 32) + 1) << 32) |
		      (j->ej.token & 0xffffffffULL);
	j->ej.ctx_id = c->id;
	j->ej.pad = 0;
	j->ej.job = *job;
	for (i = 0; i < job->nr_refs; i++) {
		j->bufs[i] = bk_handle_get(&c->handles, job->refs[i].buf);
		j->bufs[i]->refs++;
		j->ej.job.refs[i].buf = j->bufs[i]->id;
	}
	q_append(b, j);
	c->nr_jobs++;
	c->st_submitted++;
	b->st.queued++;
	b->st.submitted++;
	return 0;
}

/* Completions on c's event socket that its client has not read yet: the
 * broker's own count, whatever the client claims it reaped. */
static unsigned int ev_unread(const struct bk_conn *c)
{
	unsigned int n;
	int q;

	if (ioctl(c->evfd, SIOCOUTQ, &q) || q < 0)
		return c->in_sock;	/* cannot tell: credit nothing */
	n = ((unsigned int)q + c->ev_msg_bytes - 1) / c->ev_msg_bytes;
	return n < c->in_sock ? n : c->in_sock;
}

int bk_submit(struct shxd_broker *b, struct bk_conn *c,
	      const struct syshax_submit_args *a, const struct syshax_job *jobs,
	      size_t len)
{
	unsigned int n;
	int ret = 0;

	if (c->ring) {
		/* A kick through the socket: take what the ring holds. */
		if (a->flags != SYSHAX_SUBMIT_RING)
			return a->flags & ~SYSHAX_SUBMIT_RING ? -EINVAL : -EBUSY;
		bk_rings_run(b);
		return bk_ring_dead(c);
	}
	if (a->flags || !a->nr || a->nr > SHXD_DEF_MAX_SUBMIT ||
	    len != (size_t)a->nr * sizeof(*jobs))
		return -EINVAL;
	c->in_sock = ev_unread(c);
	for (n = 0; n < a->nr; n++) {
		ret = bk_queue_one(b, c, &jobs[n]);
		if (ret)
			break;
	}
	if (n)
		bk_kick_engines(b);
	return n ? (int)n : ret;
}

/* Engine gone: the jobs it took complete with -EPIPE now, those still in
 * its out ring go back to the queue for the next engine. Client gone: its
 * queued jobs are cancelled, held ones complete into nothing, undelivered
 * completions are dropped. */
void bk_conn_jobs_release(struct shxd_broker *b, struct bk_conn *c)
{
	static const struct syshax_engine_cpl epipe = { .status = -EPIPE };
	unsigned int i;

	if (c->engine) {
		unpark(b, c);
		if (c->ring)
			bk_ring_requeue(b, c);
		for (i = 0; i < b->conf.max_jobs_global; i++)
			if (b->slots[i].state == BJ_HELD &&
			    b->slots[i].engine == c)
				job_end(b, &b->slots[i], &epipe);
		b->st.engines--;
		c->engine = 0;
		bk_kick_engines(b);
	}
	for (i = 0; i < b->conf.max_jobs_global; i++) {
		struct bk_job *j = &b->slots[i];

		if (j->state == BJ_FREE || j->owner != c)
			continue;
		j->owner = NULL;
		if (j->state != BJ_QUEUED)
			continue;
		q_remove(b, j);
		b->st.queued--;
		b->st.cancelled++;
		job_free(b, j);
	}
	c->nr_jobs = 0;
	c->nr_cpls = 0;
}

int bk_jobs_busy(const struct shxd_broker *b, const struct bk_conn *c)
{
	unsigned int i;

	if (c->nr_jobs || c->nr_cpls || ev_unread(c) || c->fetch_parked)
		return 1;
	for (i = 0; c->engine && i < b->conf.max_jobs_global; i++)
		if (b->slots[i].state == BJ_HELD && b->slots[i].engine == c)
			return 1;
	return 0;
}

void bk_jobs_stats(struct shxd_broker *b, struct syshax_stats_args *st)
{
	syshax_job_stats_fill(st, &b->st);
}
