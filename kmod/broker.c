// SPDX-License-Identifier: GPL-2.0
/*
 * sysHAX job broker. Clients SUBMIT jobs that name their own buffers;
 * engines ENGINE_FETCH them with refs rewritten to global buffer ids,
 * ENGINE_MAP the buffers they need and ENGINE_COMPLETE them; completions go
 * back to the submitting context for WAIT and poll().
 *
 * A job sits on one list at a time through its qnode: the global queue,
 * its engine's held list (then also in the token hash), or its owner's
 * completion list. Until its completion is posted it is also on its owner's
 * job list (cnode): that is how a closing client finds its jobs. One
 * spinlock guards all of it. Buffer references are taken and dropped
 * outside the lock, since dropping the last one may sleep.
 */
#include <linux/cred.h>
#include <linux/hashtable.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/module.h>
#include <linux/nodemask.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/wait.h>

#include "syshax_priv.h"
#include "job_check.h"

/* The defaults match syshaxd's userspace broker (daemon/broker.h). */
#define SYSHAX_DEF_MAX_JOBS_CTX		1024
#define SYSHAX_DEF_MAX_JOBS_GLOBAL	8192
/* Most jobs one SUBMIT takes (VERSION's max_submit). */
#define SYSHAX_MAX_SUBMIT		128

static unsigned int max_jobs_ctx = SYSHAX_DEF_MAX_JOBS_CTX;
module_param(max_jobs_ctx, uint, 0644);
MODULE_PARM_DESC(max_jobs_ctx,
		 "Jobs one context may have queued, in flight or completed but not reaped (default 1024)");

static unsigned int max_jobs_global = SYSHAX_DEF_MAX_JOBS_GLOBAL;
module_param(max_jobs_global, uint, 0644);
MODULE_PARM_DESC(max_jobs_global,
		 "Jobs all contexts may have queued or in flight (default 8192)");

static int engine_gid = -1;
module_param(engine_gid, int, 0644);
MODULE_PARM_DESC(engine_gid,
		 "Group allowed to attach engines besides CAP_SYS_ADMIN (default -1: none)");

enum job_state {
	JOB_QUEUED,	/* on the global queue */
	JOB_HELD,	/* taken by an engine, not yet completed */
	JOB_DONE,	/* completed, on its way to the owner */
};

struct job {
	struct list_head qnode;
	struct list_head cnode;
	struct hlist_node hnode;
	struct syshax_broker_ctx *owner;	/* NULL once the owner closed */
	struct syshax_broker_ctx *engine;
	enum job_state state;
	unsigned int nr_bufs;
	struct syshax_buf *bufs[SYSHAX_JOB_MAX_REFS];
	u64 token;
	u64 submit_ns;
	u32 ctx_id;
	struct syshax_job job;		/* refs[].buf hold global ids */
	struct syshax_completion cpl;
};

/*
 * A buffer an engine mapped with ENGINE_MAP. The engine's handle (its
 * reference) lives while jobs the engine holds name the buffer; the
 * engine's VMA keeps the memory after that, until it unmaps.
 */
struct engine_map {
	struct list_head node;
	u64 id;
	u64 size;
	u64 mmap_offset;
	u32 handle;
	unsigned int users;	/* refs in held jobs naming the buffer */
};

struct syshax_broker_ctx {
	struct syshax_ctx *ctx;
	wait_queue_head_t wq;		/* a completion was posted */
	struct list_head jobs;		/* queued or held, via cnode */
	struct list_head cpls;		/* done, not yet reaped, via qnode */
	unsigned int nr_jobs;		/* submitted, not yet reaped */
	unsigned int nr_cpls;
	/* Engine side, set once by ENGINE_ATTACH. */
	bool engine;
	struct list_head held;		/* via qnode */
	struct list_head maps;		/* struct engine_map */
};

static DEFINE_SPINLOCK(g_lock);
static LIST_HEAD(g_queue);
static DEFINE_HASHTABLE(g_held, 10);	/* held jobs by token */
static DECLARE_WAIT_QUEUE_HEAD(g_engine_wq);	/* a job was queued */
static struct kmem_cache *g_job_cache;
static u64 g_next_token;
static u32 g_next_engine_id;
static unsigned int g_active;	/* queued or held: max_jobs_global */

static struct {
	u32 engines;
	u64 submitted, fetched, completed, failed, cancelled;
	u64 queued, held;
	u64 lat_hist[SYSHAX_LAT_BUCKETS];
} g_st;

static void job_put_bufs(struct job *j)
{
	while (j->nr_bufs)
		syshax_buf_put(j->bufs[--j->nr_bufs]);
}

static void job_free(struct job *j)
{
	job_put_bufs(j);
	kmem_cache_free(g_job_cache, j);
}

/* Frees the jobs on a qnode list; called without the lock. */
static void job_free_list(struct list_head *list)
{
	struct job *j, *tmp;

	list_for_each_entry_safe(j, tmp, list, qnode)
		job_free(j);
}

/* ---- Waiting ------------------------------------------------------------ */

struct deadline {
	s64 timeout_ns;		/* < 0: none */
	ktime_t end;
};

static void deadline_start(struct deadline *d, s64 timeout_ns)
{
	ktime_t now = ktime_get();

	d->timeout_ns = timeout_ns;
	/* A deadline past what ktime holds is no deadline. */
	if (timeout_ns > KTIME_MAX - now)
		d->timeout_ns = -1;
	else if (timeout_ns > 0)
		d->end = ktime_add_ns(now, timeout_ns);
}

/*
 * Sleeps on wq until cond(arg), the deadline or a signal: 0, -ETIMEDOUT or
 * -EINTR (not -ERESTARTSYS: a restart would start the timeout again).
 */
static int deadline_wait(const struct deadline *d, wait_queue_head_t *wq,
			 bool (*cond)(void *arg), void *arg)
{
	long ret;
	s64 left;

	if (d->timeout_ns < 0) {
		ret = wait_event_interruptible(*wq, cond(arg));
	} else {
		left = 0;
		if (d->timeout_ns)
			left = ktime_to_ns(ktime_sub(d->end, ktime_get()));
		if (left <= 0)
			return -ETIMEDOUT;
		ret = wait_event_interruptible_hrtimeout(*wq, cond(arg),
							 ns_to_ktime(left));
	}
	if (ret == -ERESTARTSYS)
		return -EINTR;
	return ret ? -ETIMEDOUT : 0;
}

/* ---- Completion --------------------------------------------------------- */

/* Bucket i counts latencies below 2^(i + 10) ns; the last one the rest. */
static unsigned int lat_bucket(u64 ns)
{
	unsigned int b = max(fls64(ns), 10) - 10;

	return min_t(unsigned int, b, SYSHAX_LAT_BUCKETS - 1);
}

static struct engine_map *map_find(struct syshax_broker_ctx *eng, u64 id)
{
	struct engine_map *m;

	list_for_each_entry(m, &eng->maps, node)
		if (m->id == id)
			return m;
	return NULL;
}

/* Counts a newly held job's refs in its engine's maps; under the lock. */
static void map_use(struct syshax_broker_ctx *eng, const struct job *j)
{
	struct engine_map *m;
	unsigned int i;

	for (i = 0; i < j->job.nr_refs; i++) {
		m = map_find(eng, j->job.refs[i].buf);
		if (m)
			m->users++;
	}
}

/* Undoes map_use; maps nobody uses move to drop. Under the lock. */
static void map_unuse(struct syshax_broker_ctx *eng, const struct job *j,
		      struct list_head *drop)
{
	struct engine_map *m;
	unsigned int i;

	for (i = 0; i < j->job.nr_refs; i++) {
		m = map_find(eng, j->job.refs[i].buf);
		if (m && !--m->users)
			list_move_tail(&m->node, drop);
	}
}

/*
 * Frees maps map_unuse let go, with the engine's handles, unless the engine
 * freed a handle itself (BUF_FREE) and the number now names another buffer.
 */
static void map_drop(struct syshax_broker_ctx *eng, struct list_head *drop)
{
	struct engine_map *m, *tmp;
	struct syshax_buf *buf;

	list_for_each_entry_safe(m, tmp, drop, node) {
		buf = syshax_buf_get_handle(eng->ctx, m->handle, NULL);
		if (!IS_ERR(buf)) {
			if (buf->id == m->id)
				syshax_ctx_free_handle(eng->ctx, m->handle);
			syshax_buf_put(buf);
		}
		kfree(m);
	}
}

/*
 * Ends a held job: takes it off its engine and records the completion.
 * Under the lock; the job moves to done, for job_post().
 */
static void job_end(struct job *j, const struct syshax_engine_cpl *c,
		    struct list_head *done, struct list_head *drop)
{
	hash_del(&j->hnode);
	map_unuse(j->engine, j, drop);
	list_move_tail(&j->qnode, done);
	j->state = JOB_DONE;
	j->cpl.user_data = j->job.user_data;
	j->cpl.status = c->status;
	j->cpl.flags = c->flags;
	j->cpl.result = c->result;
	j->cpl.exec_ns = c->exec_ns;
	g_st.held--;
	if (c->status)
		g_st.failed++;
	else
		g_st.completed++;
	g_st.lat_hist[lat_bucket(ktime_get_ns() - j->submit_ns)]++;
}

/*
 * Releases the refs of ended jobs, then hands each completion to its owner,
 * or frees the job when the owner has gone. Called without the lock.
 */
static void job_post(struct list_head *done)
{
	struct job *j, *tmp;

	list_for_each_entry(j, done, qnode)
		job_put_bufs(j);
	spin_lock(&g_lock);
	list_for_each_entry_safe(j, tmp, done, qnode) {
		struct syshax_broker_ctx *owner = j->owner;

		g_active--;
		if (!owner)
			continue;
		list_del(&j->cnode);
		list_move_tail(&j->qnode, &owner->cpls);
		owner->nr_cpls++;
		wake_up(&owner->wq);
	}
	spin_unlock(&g_lock);
	job_free_list(done);
}

/* ---- Client side -------------------------------------------------------- */

struct ref_lookup {
	struct syshax_ctx *ctx;
	struct job *job;
};

/* syshax_job_check()'s lookup: takes the reference the queued job keeps. */
static int ref_lookup(void *priv, __u64 handle, __u64 *size, __u32 *access)
{
	struct ref_lookup *l = priv;
	struct syshax_buf *buf;

	buf = syshax_buf_get_handle(l->ctx, handle, access);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	l->job->bufs[l->job->nr_bufs++] = buf;
	*size = buf->size;
	return 0;
}

static int submit_one(struct syshax_broker_ctx *bc,
		      const struct syshax_job __user *ujob)
{
	struct ref_lookup l = { .ctx = bc->ctx };
	struct job *j;
	unsigned int i;
	int ret;

	j = kmem_cache_zalloc(g_job_cache, GFP_KERNEL);
	if (!j)
		return -ENOMEM;
	if (copy_from_user(&j->job, ujob, sizeof(j->job))) {
		ret = -EFAULT;
		goto err_free;
	}
	l.job = j;
	ret = syshax_job_check(&j->job, ref_lookup, &l);
	if (ret)
		goto err_free;
	for (i = 0; i < j->nr_bufs; i++)
		j->job.refs[i].buf = j->bufs[i]->id;
	j->owner = bc;
	j->ctx_id = bc->ctx->id;
	j->state = JOB_QUEUED;

	spin_lock(&g_lock);
	if (bc->nr_jobs >= READ_ONCE(max_jobs_ctx) ||
	    g_active >= READ_ONCE(max_jobs_global)) {
		spin_unlock(&g_lock);
		ret = -EAGAIN;
		goto err_free;
	}
	j->token = ++g_next_token;
	j->submit_ns = ktime_get_ns();
	list_add_tail(&j->qnode, &g_queue);
	list_add_tail(&j->cnode, &bc->jobs);
	bc->nr_jobs++;
	g_active++;
	g_st.queued++;
	g_st.submitted++;
	spin_unlock(&g_lock);
	return 0;

err_free:
	job_free(j);
	return ret;
}

static long broker_submit(struct syshax_broker_ctx *bc, void __user *uarg)
{
	struct syshax_job __user *ujobs;
	struct syshax_submit_args a;
	unsigned int n;
	int ret = 0;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.flags || !a.nr || a.nr > SYSHAX_MAX_SUBMIT)
		return -EINVAL;
	ujobs = u64_to_user_ptr(a.jobs);
	for (n = 0; n < a.nr; n++) {
		ret = submit_one(bc, &ujobs[n]);
		if (ret)
			break;
	}
	if (n)
		wake_up(&g_engine_wq);
	return n ? n : ret;
}

struct wait_cond {
	struct syshax_broker_ctx *bc;
	unsigned int min;
};

static bool wait_cond_met(void *arg)
{
	struct wait_cond *w = arg;

	return READ_ONCE(w->bc->nr_cpls) >= w->min;
}

/* Copies n reaped completions out; those that fault go back, in order. */
static int wait_copy(struct syshax_broker_ctx *bc, struct list_head *got,
		     unsigned int n, struct syshax_completion __user *ucpls)
{
	unsigned int copied = 0;
	struct job *j, *tmp;

	list_for_each_entry_safe(j, tmp, got, qnode) {
		if (copy_to_user(&ucpls[copied], &j->cpl, sizeof(j->cpl)))
			break;
		list_del(&j->qnode);
		kmem_cache_free(g_job_cache, j);
		copied++;
	}
	spin_lock(&g_lock);
	bc->nr_jobs -= copied;
	bc->nr_cpls += n - copied;
	list_splice(got, &bc->cpls);
	spin_unlock(&g_lock);
	return copied ? copied : -EFAULT;
}

static long broker_wait(struct syshax_broker_ctx *bc, void __user *uarg)
{
	struct wait_cond w = { .bc = bc };
	struct syshax_wait_args a;
	struct deadline d;
	struct job *j, *tmp;
	LIST_HEAD(got);
	unsigned int n;
	int err = 0;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.flags || a.pad || !a.max || a.min > a.max)
		return -EINVAL;
	w.min = a.min;
	deadline_start(&d, a.timeout_ns);
	for (;;) {
		n = 0;
		spin_lock(&g_lock);
		/* At least min at once, or, once waiting ended, what there is. */
		if (bc->nr_cpls >= a.min || err) {
			list_for_each_entry_safe(j, tmp, &bc->cpls, qnode) {
				if (n == a.max)
					break;
				list_move_tail(&j->qnode, &got);
				n++;
			}
			bc->nr_cpls -= n;
		}
		spin_unlock(&g_lock);
		if (n)
			return wait_copy(bc, &got, n, u64_to_user_ptr(a.cpls));
		if (err || !a.min)
			return err;
		err = deadline_wait(&d, &bc->wq, wait_cond_met, &w);
	}
}

/* ---- Engine side -------------------------------------------------------- */

static bool engine_may_attach(void)
{
	int gid = READ_ONCE(engine_gid);
	kgid_t kgid;

	if (capable(CAP_SYS_ADMIN))
		return true;
	if (gid < 0)
		return false;
	kgid = make_kgid(current_user_ns(), gid);
	return gid_valid(kgid) && in_egroup_p(kgid);
}

static long engine_attach(struct syshax_broker_ctx *bc, void __user *uarg)
{
	struct syshax_engine_attach_args a;
	int ret = 0;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.flags || a.pad || a.node < -1 || a.node >= (s32)nr_node_ids)
		return -EINVAL;
	if (!engine_may_attach())
		return -EPERM;
	spin_lock(&g_lock);
	if (bc->engine) {
		ret = -EBUSY;
	} else {
		WRITE_ONCE(bc->engine, true);
		a.engine_id = ++g_next_engine_id;
		g_st.engines++;
	}
	spin_unlock(&g_lock);
	if (ret)
		return ret;
	return copy_to_user(uarg, &a, sizeof(a)) ? -EFAULT : 0;
}

static bool jobs_queued(void *arg)
{
	return READ_ONCE(g_st.queued) > 0;
}

static int fetch_copy(const struct job *j, struct syshax_engine_job __user *u)
{
	if (put_user(j->token, &u->token) || put_user(j->ctx_id, &u->ctx_id) ||
	    put_user(0, &u->pad) ||
	    copy_to_user(&u->job, &j->job, sizeof(j->job)))
		return -EFAULT;
	return 0;
}

/*
 * Makes the first copied fetched jobs the engine's; puts the others (they
 * could not be copied out) back at the head of the queue, in order.
 */
static void fetch_settle(struct syshax_broker_ctx *eng, struct list_head *got,
			 unsigned int copied)
{
	struct job *j, *tmp;
	LIST_HEAD(gone);

	spin_lock(&g_lock);
	list_for_each_entry_safe(j, tmp, got, qnode) {
		if (copied) {
			copied--;
			list_move_tail(&j->qnode, &eng->held);
			hash_add(g_held, &j->hnode, j->token);
			map_use(eng, j);
			g_st.fetched++;
			continue;
		}
		g_st.held--;
		if (j->owner) {
			j->state = JOB_QUEUED;
			g_st.queued++;
			continue;
		}
		/* Its owner closed while it was being copied. */
		list_move_tail(&j->qnode, &gone);
		g_active--;
		g_st.cancelled++;
	}
	list_splice(got, &g_queue);
	spin_unlock(&g_lock);
	job_free_list(&gone);
}

static long engine_fetch(struct syshax_broker_ctx *bc, void __user *uarg)
{
	struct syshax_engine_job __user *ujobs;
	struct syshax_engine_fetch_args a;
	unsigned int n, copied = 0;
	struct deadline d;
	LIST_HEAD(got);
	struct job *j;
	int err;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.flags || !a.max || !bc->engine)
		return -EINVAL;
	ujobs = u64_to_user_ptr(a.jobs);
	deadline_start(&d, a.timeout_ns);
	for (;;) {
		n = 0;
		spin_lock(&g_lock);
		while (n < a.max && !list_empty(&g_queue)) {
			j = list_first_entry(&g_queue, struct job, qnode);
			list_move_tail(&j->qnode, &got);
			j->state = JOB_HELD;
			j->engine = bc;
			n++;
		}
		g_st.queued -= n;
		g_st.held += n;
		spin_unlock(&g_lock);
		if (n)
			break;
		err = deadline_wait(&d, &g_engine_wq, jobs_queued, NULL);
		if (err)
			return err;
	}
	/* Not in the token hash yet, so no ENGINE_COMPLETE can end them. */
	list_for_each_entry(j, &got, qnode) {
		if (fetch_copy(j, &ujobs[copied]))
			break;
		copied++;
	}
	fetch_settle(bc, &got, copied);
	return copied ? copied : -EFAULT;
}

/* Refs naming buffer id in the jobs eng holds; under the lock. */
static unsigned int held_refs(struct syshax_broker_ctx *eng, u64 id,
			      struct syshax_buf **buf)
{
	unsigned int i, n = 0;
	struct job *j;

	list_for_each_entry(j, &eng->held, qnode)
		for (i = 0; i < j->job.nr_refs; i++)
			if (j->job.refs[i].buf == id) {
				*buf = j->bufs[i];
				n++;
			}
	return n;
}

/*
 * Gives the engine a handle for buffer id: 0 (the map may still be gone if
 * the jobs completed meanwhile), -ENOENT when no such buffer exists,
 * -EACCES when no job the engine holds names it.
 */
static int engine_map_new(struct syshax_broker_ctx *eng, u64 id)
{
	struct syshax_buf *buf = NULL, *again;
	struct engine_map *m;
	LIST_HEAD(drop);
	int ret;

	spin_lock(&g_lock);
	if (!held_refs(eng, id, &buf)) {
		spin_unlock(&g_lock);
		buf = syshax_buf_get_id(id);
		if (IS_ERR_OR_NULL(buf))
			return -ENOENT;
		syshax_buf_put(buf);
		return -EACCES;
	}
	syshax_buf_get(buf);
	spin_unlock(&g_lock);

	ret = -ENOMEM;
	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		goto out_put;
	m->id = id;
	m->size = buf->size;
	ret = syshax_ctx_install_buf(eng->ctx, buf, &m->handle,
				     &m->mmap_offset);
	if (ret) {
		kfree(m);
		goto out_put;
	}
	spin_lock(&g_lock);
	m->users = held_refs(eng, id, &again);
	if (m->users && !map_find(eng, id))
		list_add_tail(&m->node, &eng->maps);
	else
		list_add_tail(&m->node, &drop);
	spin_unlock(&g_lock);
	map_drop(eng, &drop);
out_put:
	syshax_buf_put(buf);
	return ret;
}

static long engine_map(struct syshax_broker_ctx *bc, void __user *uarg)
{
	struct syshax_engine_map_args a;
	struct engine_map *m;
	int ret;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (!bc->engine)
		return -EINVAL;
	spin_lock(&g_lock);
	m = map_find(bc, a.id);
	if (!m) {
		spin_unlock(&g_lock);
		ret = engine_map_new(bc, a.id);
		if (ret)
			return ret;
		spin_lock(&g_lock);
		m = map_find(bc, a.id);
	}
	if (m) {
		a.mmap_offset = m->mmap_offset;
		a.size = m->size;
	}
	spin_unlock(&g_lock);
	if (!m)
		return -EACCES;
	return copy_to_user(uarg, &a, sizeof(a)) ? -EFAULT : 0;
}

static struct job *held_find(struct syshax_broker_ctx *eng, u64 token)
{
	struct job *j;

	hash_for_each_possible(g_held, j, hnode, token)
		if (j->token == token && j->engine == eng)
			return j;
	return NULL;
}

static bool cpl_valid(const struct syshax_engine_cpl *c)
{
	return c->status <= 0 && c->status >= -MAX_ERRNO &&
	       !(c->flags & ~SYSHAX_CPL_DEFERRED);
}

/* Completions read from the user per lock round. */
#define CPL_BATCH	16

static long engine_complete(struct syshax_broker_ctx *bc, void __user *uarg)
{
	struct syshax_engine_cpl c[CPL_BATCH];
	struct syshax_engine_cpl __user *ucpls;
	struct syshax_engine_complete_args a;
	unsigned int n = 0, i, batch;
	int ret = 0;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.flags || !a.nr || !bc->engine)
		return -EINVAL;
	ucpls = u64_to_user_ptr(a.cpls);
	while (n < a.nr && !ret) {
		LIST_HEAD(done);
		LIST_HEAD(drop);

		batch = min_t(unsigned int, a.nr - n, CPL_BATCH);
		if (copy_from_user(c, &ucpls[n], batch * sizeof(c[0]))) {
			ret = -EFAULT;
			break;
		}
		spin_lock(&g_lock);
		for (i = 0; i < batch; i++) {
			struct job *j;

			if (!cpl_valid(&c[i])) {
				ret = -EINVAL;
				break;
			}
			j = held_find(bc, c[i].token);
			if (!j) {
				ret = -ENOENT;
				break;
			}
			job_end(j, &c[i], &done, &drop);
		}
		spin_unlock(&g_lock);
		n += i;
		job_post(&done);
		map_drop(bc, &drop);
	}
	return n ? n : ret;
}

/* ---- Hooks -------------------------------------------------------------- */

long syshax_broker_ioctl(struct syshax_ctx *ctx, unsigned int cmd,
			 void __user *uarg)
{
	struct syshax_broker_ctx *bc = ctx->jobs;

	switch (cmd) {
	case SYSHAX_IOC_SUBMIT:
		return broker_submit(bc, uarg);
	case SYSHAX_IOC_WAIT:
		return broker_wait(bc, uarg);
	case SYSHAX_IOC_ENGINE_ATTACH:
		return engine_attach(bc, uarg);
	case SYSHAX_IOC_ENGINE_FETCH:
		return engine_fetch(bc, uarg);
	case SYSHAX_IOC_ENGINE_MAP:
		return engine_map(bc, uarg);
	case SYSHAX_IOC_ENGINE_COMPLETE:
		return engine_complete(bc, uarg);
	default:
		return -ENOTTY;
	}
}

/* Readable: completions to reap, or, for an engine, jobs to fetch. */
__poll_t syshax_broker_poll(struct syshax_ctx *ctx, struct file *file,
			    poll_table *wait)
{
	struct syshax_broker_ctx *bc = ctx->jobs;
	bool engine = READ_ONCE(bc->engine);

	poll_wait(file, &bc->wq, wait);
	if (engine)
		poll_wait(file, &g_engine_wq, wait);
	if (READ_ONCE(bc->nr_cpls) || (engine && READ_ONCE(g_st.queued)))
		return EPOLLIN | EPOLLRDNORM;
	return 0;
}

int syshax_broker_open(struct syshax_ctx *ctx)
{
	struct syshax_broker_ctx *bc;

	bc = kzalloc(sizeof(*bc), GFP_KERNEL);
	if (!bc)
		return -ENOMEM;
	bc->ctx = ctx;
	init_waitqueue_head(&bc->wq);
	INIT_LIST_HEAD(&bc->jobs);
	INIT_LIST_HEAD(&bc->cpls);
	INIT_LIST_HEAD(&bc->held);
	INIT_LIST_HEAD(&bc->maps);
	ctx->jobs = bc;
	return 0;
}

/* Engine gone: its held jobs complete with -EPIPE now. */
static void engine_release(struct syshax_broker_ctx *eng)
{
	static const struct syshax_engine_cpl epipe = { .status = -EPIPE };
	struct engine_map *m, *mtmp;
	struct job *j, *tmp;
	LIST_HEAD(done);
	LIST_HEAD(drop);

	spin_lock(&g_lock);
	list_for_each_entry_safe(j, tmp, &eng->held, qnode)
		job_end(j, &epipe, &done, &drop);
	g_st.engines--;
	spin_unlock(&g_lock);
	job_post(&done);
	/* The handles go with the context's other buffers. */
	list_splice(&drop, &eng->maps);
	list_for_each_entry_safe(m, mtmp, &eng->maps, node)
		kfree(m);
}

/*
 * Client gone: its queued jobs are cancelled, held ones complete into
 * nothing, unreaped completions are dropped.
 */
static void client_release(struct syshax_broker_ctx *bc)
{
	struct job *j, *tmp;
	LIST_HEAD(gone);

	spin_lock(&g_lock);
	list_for_each_entry_safe(j, tmp, &bc->jobs, cnode) {
		list_del(&j->cnode);
		j->owner = NULL;
		if (j->state != JOB_QUEUED)
			continue;
		list_move_tail(&j->qnode, &gone);
		g_st.queued--;
		g_st.cancelled++;
		g_active--;
	}
	list_splice_init(&bc->cpls, &gone);
	spin_unlock(&g_lock);
	job_free_list(&gone);
}

void syshax_broker_release(struct syshax_ctx *ctx)
{
	struct syshax_broker_ctx *bc = ctx->jobs;

	if (bc->engine)
		engine_release(bc);
	client_release(bc);
	kfree(bc);
	ctx->jobs = NULL;
}

void syshax_broker_version(struct syshax_version_args *v)
{
	v->features |= SYSHAX_FEAT_JOBS;
	v->max_submit = SYSHAX_MAX_SUBMIT;
}

void syshax_broker_stats(struct syshax_stats_args *st)
{
	spin_lock(&g_lock);
	st->engines = g_st.engines;
	st->jobs_submitted = g_st.submitted;
	st->jobs_fetched = g_st.fetched;
	st->jobs_completed = g_st.completed;
	st->jobs_failed = g_st.failed;
	st->jobs_cancelled = g_st.cancelled;
	st->queue_depth = g_st.queued;
	st->inflight = g_st.held;
	memcpy(st->lat_hist, g_st.lat_hist, sizeof(st->lat_hist));
	spin_unlock(&g_lock);
}

int syshax_broker_init(void)
{
	g_job_cache = kmem_cache_create("syshax_job", sizeof(struct job), 0, 0,
					NULL);
	return g_job_cache ? 0 : -ENOMEM;
}

void syshax_broker_exit(void)
{
	kmem_cache_destroy(g_job_cache);
}
