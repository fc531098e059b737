// SPDX-License-Identifier: GPL-2.0
/*
 * sysHAX job broker. Clients SUBMIT jobs that name their own buffers;
 * engines ENGINE_FETCH them with refs rewritten to global buffer ids,
 * ENGINE_MAP the buffers they need and ENGINE_COMPLETE them; completions go
 * back to the submitting context for WAIT and poll().
 *
 * The queue and the client side are here; engine.c has the engine side
 * and broker.h the data structures and the locking rule.
 */
#include <linux/cred.h>
#include <linux/device.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/string.h>
#include <linux/sysfs.h>
#include <linux/uaccess.h>

#include "broker.h"
#include "job_check.h"

/* The defaults match syshaxd's userspace broker (daemon/broker.h). */
#define SYSHAX_DEF_MAX_JOBS_CTX		1024
#define SYSHAX_DEF_MAX_JOBS_GLOBAL	8192
/* Half the global default: one user cannot take the whole queue. */
#define SYSHAX_DEF_MAX_JOBS_USER	4096

unsigned int syshax_max_jobs_ctx = SYSHAX_DEF_MAX_JOBS_CTX;
module_param_named(max_jobs_ctx, syshax_max_jobs_ctx, uint, 0644);
MODULE_PARM_DESC(max_jobs_ctx,
		 "Jobs one context may have queued, in flight or completed but not reaped (default 1024)");

unsigned int syshax_max_jobs_global = SYSHAX_DEF_MAX_JOBS_GLOBAL;
module_param_named(max_jobs_global, syshax_max_jobs_global, uint, 0644);
MODULE_PARM_DESC(max_jobs_global,
		 "Jobs all contexts may have queued or in flight (default 8192)");

unsigned int syshax_max_jobs_user = SYSHAX_DEF_MAX_JOBS_USER;
module_param_named(max_jobs_user, syshax_max_jobs_user, uint, 0644);
MODULE_PARM_DESC(max_jobs_user,
		 "Jobs the contexts of one user (uid) may have queued or in flight together (default 4096; 0: no per-user limit)");

struct syshax_broker syshax_broker = {
	.lock = __SPIN_LOCK_UNLOCKED(syshax_broker.lock),
	.queue = LIST_HEAD_INIT(syshax_broker.queue),
	.engines = LIST_HEAD_INIT(syshax_broker.engines),
	.ring_clients = LIST_HEAD_INIT(syshax_broker.ring_clients),
	.stalled = LIST_HEAD_INIT(syshax_broker.stalled),
	.ctxs = LIST_HEAD_INIT(syshax_broker.ctxs),
};
static struct syshax_broker *const br = &syshax_broker;

void syshax_kjob_put_bufs(struct syshax_kjob *j)
{
	while (j->nr_bufs)
		syshax_buf_put_held(j->bufs[--j->nr_bufs]);
}

/*
 * A job leaves the queued-or-held count, global and its user's; under the
 * lock (syshax_user_put() takes only a leaf lock).
 */
void syshax_kjob_retire(struct syshax_kjob *j)
{
	br->active--;
	j->user->nr_jobs--;
	syshax_rings_full_update(j->user);
	syshax_user_put(j->user);
	j->user = NULL;
}

void syshax_kjob_enqueue(struct syshax_broker_ctx *bc,
			 struct syshax_user *user, struct syshax_kjob *j)
{
	j->owner = bc;
	j->ctx_id = bc->ctx->id;
	j->state = SYSHAX_KJOB_QUEUED;
	j->user = syshax_user_hold(user);
	user->nr_jobs++;
	j->token = ++br->next_token;
	j->submit_ns = ktime_get_ns();
	list_add_tail(&j->qnode, &br->queue);
	list_add_tail(&j->cnode, &bc->jobs);
	bc->nr_jobs++;
	bc->submitted++;
	br->active++;
	br->st.queued++;
	br->st.submitted++;
	syshax_rings_full_update(user);
}

static void job_free(struct syshax_kjob *j)
{
	syshax_kjob_put_bufs(j);
	kmem_cache_free(br->job_cache, j);
}

void syshax_kjob_free_list(struct list_head *list)
{
	struct syshax_kjob *j, *tmp;

	list_for_each_entry_safe(j, tmp, list, qnode)
		job_free(j);
}

/* ---- Waiting ------------------------------------------------------------ */

void syshax_deadline_start(struct syshax_deadline *d, s64 timeout_ns)
{
	ktime_t now = ktime_get();

	d->timeout_ns = timeout_ns;
	/* A deadline past what ktime holds is no deadline. */
	if (timeout_ns > KTIME_MAX - now)
		d->timeout_ns = -1;
	else if (timeout_ns > 0)
		d->end = ktime_add_ns(now, timeout_ns);
}

int syshax_deadline_wait(const struct syshax_deadline *d,
			 wait_queue_head_t *wq, bool (*cond)(void *arg),
			 void *arg)
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

/* ---- Client side -------------------------------------------------------- */

struct ref_lookup {
	struct syshax_ctx *ctx;
	struct syshax_kjob *job;
};

/* syshax_job_check()'s lookup: takes the reference the queued job keeps. */
static int ref_lookup(void *priv, __u64 handle, __u64 *size, __u32 *access)
{
	struct ref_lookup *l = priv;
	struct syshax_buf *buf;

	buf = syshax_buf_get_handle(l->ctx, handle, access);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	syshax_buf_hold(buf);
	l->job->bufs[l->job->nr_bufs++] = buf;
	*size = buf->size;
	return 0;
}

int syshax_kjob_check(struct syshax_ctx *ctx, struct syshax_kjob *j)
{
	struct ref_lookup l = { .ctx = ctx, .job = j };
	unsigned int i;
	int ret;

	ret = syshax_job_check(&j->job, ref_lookup, &l);
	if (ret)
		return ret;
	for (i = 0; i < j->nr_bufs; i++)
		j->job.refs[i].buf = j->bufs[i]->id;
	return 0;
}

static int submit_one(struct syshax_broker_ctx *bc, struct syshax_user *user,
		      const struct syshax_job __user *ujob)
{
	unsigned int user_max;
	struct syshax_kjob *j;
	int ret;

	j = kmem_cache_zalloc(br->job_cache, GFP_KERNEL);
	if (!j)
		return -ENOMEM;
	if (copy_from_user(&j->job, ujob, sizeof(j->job))) {
		ret = -EFAULT;
		goto err_free;
	}
	ret = syshax_kjob_check(bc->ctx, j);
	if (ret)
		goto err_free;

	user_max = READ_ONCE(syshax_max_jobs_user);

	spin_lock(&br->lock);
	if (bc->nr_jobs >= READ_ONCE(syshax_max_jobs_ctx) ||
	    br->active >= READ_ONCE(syshax_max_jobs_global) ||
	    (user_max && user->nr_jobs >= user_max)) {
		spin_unlock(&br->lock);
		ret = -EAGAIN;
		goto err_free;
	}
	syshax_kjob_enqueue(bc, user, j);
	spin_unlock(&br->lock);
	return 0;

err_free:
	job_free(j);
	return ret;
}

static long broker_submit(struct syshax_broker_ctx *bc, void __user *uarg)
{
	struct syshax_job __user *ujobs;
	struct syshax_submit_args a;
	struct syshax_user *user;
	unsigned int n;
	int ret = 0;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	/* A context with rings only kicks: its jobs come in its in ring. */
	if (smp_load_acquire(&bc->ring)) {
		if (a.flags != SYSHAX_SUBMIT_RING)
			return a.flags & ~SYSHAX_SUBMIT_RING ? -EINVAL : -EBUSY;
		return syshax_ring_kick(bc);
	}
	if (a.flags || !a.nr || a.nr > SYSHAX_MAX_SUBMIT)
		return -EINVAL;
	/* Jobs count against the caller's uid, as its buffers do. */
	user = syshax_user_get_current();
	if (!user)
		return -ENOMEM;
	ujobs = u64_to_user_ptr(a.jobs);
	for (n = 0; n < a.nr; n++) {
		ret = submit_one(bc, user, &ujobs[n]);
		if (ret)
			break;
	}
	syshax_user_put(user);
	if (n)
		syshax_engines_wake();
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
	struct syshax_kjob *j, *tmp;

	list_for_each_entry_safe(j, tmp, got, qnode) {
		if (copy_to_user(&ucpls[copied], &j->cpl, sizeof(j->cpl)))
			break;
		list_del(&j->qnode);
		kmem_cache_free(br->job_cache, j);
		copied++;
	}
	spin_lock(&br->lock);
	bc->nr_jobs -= copied;
	bc->nr_cpls += n - copied;
	list_splice(got, &bc->cpls);
	spin_unlock(&br->lock);
	return copied ? copied : -EFAULT;
}

static long broker_wait(struct syshax_broker_ctx *bc, void __user *uarg)
{
	struct wait_cond w = { .bc = bc };
	struct syshax_wait_args a;
	struct syshax_deadline d;
	struct syshax_kjob *j, *tmp;
	LIST_HEAD(got);
	unsigned int n;
	int err = 0;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.flags || a.pad || !a.max || a.min > a.max)
		return -EINVAL;
	w.min = a.min;
	syshax_deadline_start(&d, a.timeout_ns);
	for (;;) {
		n = 0;
		spin_lock(&br->lock);
		/* At least min at once; once waiting ended, what there is. */
		if (bc->nr_cpls >= a.min || err) {
			list_for_each_entry_safe(j, tmp, &bc->cpls, qnode) {
				if (n == a.max)
					break;
				list_move_tail(&j->qnode, &got);
				n++;
			}
			bc->nr_cpls -= n;
		}
		spin_unlock(&br->lock);
		if (n)
			return wait_copy(bc, &got, n, u64_to_user_ptr(a.cpls));
		if (err || !a.min)
			return err;
		err = syshax_deadline_wait(&d, &bc->wq, wait_cond_met, &w);
	}
}

/* ---- Hooks -------------------------------------------------------------- */

long syshax_broker_ioctl(struct syshax_ctx *ctx, unsigned int cmd,
			 void __user *uarg)
{
	struct syshax_broker_ctx *bc = ctx->jobs;

	/* With rings, jobs and completions go only through them. */
	switch (cmd) {
	case SYSHAX_IOC_WAIT:
	case SYSHAX_IOC_ENGINE_FETCH:
	case SYSHAX_IOC_ENGINE_COMPLETE:
		if (smp_load_acquire(&bc->ring))
			return -EBUSY;
		break;
	}
	switch (cmd) {
	case SYSHAX_IOC_SUBMIT:
		return broker_submit(bc, uarg);
	case SYSHAX_IOC_WAIT:
		return broker_wait(bc, uarg);
	case SYSHAX_IOC_RING_SETUP:
		return syshax_ring_setup(bc, uarg);
	case SYSHAX_IOC_ENGINE_ATTACH:
		return syshax_engine_attach(bc, uarg);
	case SYSHAX_IOC_ENGINE_FETCH:
		return syshax_engine_fetch(bc, uarg);
	case SYSHAX_IOC_ENGINE_MAP:
		return syshax_engine_map(bc, uarg);
	case SYSHAX_IOC_ENGINE_COMPLETE:
		return syshax_engine_complete(bc, uarg);
	default:
		return -ENOTTY;
	}
}

/*
 * Readable: completions to reap, or, for an engine, jobs to fetch; with
 * rings, entries in the out ring (or a dead ring).
 */
__poll_t syshax_broker_poll(struct syshax_ctx *ctx, struct file *file,
			    poll_table *wait)
{
	struct syshax_broker_ctx *bc = ctx->jobs;

	poll_wait(file, &bc->wq, wait);
	if (smp_load_acquire(&bc->ring))
		return syshax_ring_poll(bc);
	if (READ_ONCE(bc->nr_cpls) ||
	    (READ_ONCE(bc->engine) && READ_ONCE(br->st.queued)))
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
	INIT_LIST_HEAD(&bc->gone);
	bc->pid = get_pid(task_tgid(current));
	bc->uid = current_uid();
	get_task_comm(bc->comm, current);
	ctx->jobs = bc;
	spin_lock(&br->lock);
	list_add_tail(&bc->all, &br->ctxs);
	br->nr_ctxs++;
	spin_unlock(&br->lock);
	return 0;
}

/*
 * Client gone: its queued jobs are cancelled, held ones complete into
 * nothing, unreaped completions are dropped.
 */
static void client_release(struct syshax_broker_ctx *bc)
{
	struct syshax_kjob *j, *tmp;
	LIST_HEAD(gone);

	spin_lock(&br->lock);
	list_for_each_entry_safe(j, tmp, &bc->jobs, cnode) {
		list_del(&j->cnode);
		j->owner = NULL;
		if (j->state != SYSHAX_KJOB_QUEUED)
			continue;
		list_move_tail(&j->qnode, &gone);
		br->st.queued--;
		br->st.cancelled++;
		syshax_kjob_retire(j);
	}
	list_splice_init(&bc->cpls, &gone);
	spin_unlock(&br->lock);
	syshax_kjob_free_list(&gone);
	/* Cancelled jobs made room for jobs other rings hold. */
	syshax_rings_retry();
}

void syshax_broker_release(struct syshax_ctx *ctx)
{
	struct syshax_broker_ctx *bc = ctx->jobs;

	spin_lock(&br->lock);
	list_del(&bc->all);
	br->nr_ctxs--;
	spin_unlock(&br->lock);
	if (bc->engine)
		syshax_engine_release(bc);
	client_release(bc);
	syshax_ring_release(bc);
	put_pid(bc->pid);
	kfree(bc);
	ctx->jobs = NULL;
}

void syshax_broker_version(struct syshax_version_args *v)
{
	v->features |= SYSHAX_FEAT_JOBS | SYSHAX_FEAT_RINGS |
		       SYSHAX_FEAT_CTX_STATS | SYSHAX_FEAT_MAP_NOTES;
	v->max_submit = SYSHAX_MAX_SUBMIT;
}

void syshax_broker_stats(struct syshax_stats_args *st)
{
	spin_lock(&br->lock);
	syshax_job_stats_fill(st, &br->st);
	spin_unlock(&br->lock);
}

/* Most entries one CTX_STATS fills (bounds the kernel's copy). */
#define SYSHAX_CTX_STATS_MAX	4096

/* One context's figures; under the lock (takes the handles' xa_lock). */
static void ctx_stat_fill(struct syshax_broker_ctx *bc,
			  const struct syshax_broker_ctx *self,
			  struct syshax_ctx_stat *s)
{
	struct syshax_kjob *j;
	struct syshax_buf *buf;
	unsigned long idx;

	s->ctx_id = bc->ctx->id;
	s->pid = pid_vnr(bc->pid);
	s->uid = from_kuid_munged(current_user_ns(), bc->uid);
	s->flags = (bc->engine ? SYSHAX_CTX_ENGINE : 0) |
		   (bc->ring ? SYSHAX_CTX_RING : 0) |
		   (bc == self ? SYSHAX_CTX_SELF : 0);
	strscpy(s->comm, bc->comm, sizeof(s->comm));
	/* Erasing a handle takes xa_lock: its reference holds meanwhile. */
	xa_lock(&bc->ctx->handles);
	xa_for_each(&bc->ctx->handles, idx, buf) {
		s->nr_bufs++;
		s->buf_bytes += buf->size;
	}
	xa_unlock(&bc->ctx->handles);
	list_for_each_entry(j, &bc->jobs, cnode) {
		if (j->state == SYSHAX_KJOB_QUEUED)
			s->jobs_queued++;
		else if (j->state == SYSHAX_KJOB_HELD)
			s->jobs_inflight++;
	}
	if (bc->engine)
		list_for_each_entry(j, &bc->held, qnode)
			s->eng_held++;
	s->jobs_submitted = bc->submitted;
	s->jobs_completed = bc->completed;
	s->jobs_failed = bc->failed;
	s->eng_done = bc->eng_done;
}

long syshax_broker_ctx_stats(struct syshax_ctx *ctx, void __user *uarg)
{
	struct syshax_broker_ctx *self = ctx->jobs, *bc;
	struct syshax_ctx_stats_args a;
	struct syshax_ctx_stat *v = NULL;
	u32 n = 0, max;
	long ret = 0;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.flags || a.reserved[0] || a.reserved[1])
		return -EINVAL;
	max = min_t(u32, a.max, SYSHAX_CTX_STATS_MAX);
	if (max) {
		v = kvcalloc(max, sizeof(*v), GFP_KERNEL);
		if (!v)
			return -ENOMEM;
	}
	spin_lock(&br->lock);
	a.total = br->nr_ctxs;
	if (max)
		ctx_stat_fill(self, self, &v[n++]);
	list_for_each_entry(bc, &br->ctxs, all) {
		if (n >= max)
			break;
		if (bc != self)
			ctx_stat_fill(bc, self, &v[n++]);
	}
	spin_unlock(&br->lock);
	a.nr = n;
	if (n && copy_to_user(u64_to_user_ptr(a.ctxs), v, n * sizeof(*v)))
		ret = -EFAULT;
	else if (copy_to_user(uarg, &a, sizeof(a)))
		ret = -EFAULT;
	kvfree(v);
	return ret;
}

/* The same counters, read-only, in /sys/class/misc/syshax/jobs/. */
#define JOBS_ATTR(_name, _field)					\
static ssize_t _name##_show(struct device *dev,				\
			    struct device_attribute *attr, char *buf)	\
{									\
	struct syshax_stats_args st;					\
									\
	syshax_broker_stats(&st);					\
	return sysfs_emit(buf, "%llu\n", (unsigned long long)st._field); \
}									\
static DEVICE_ATTR_RO(_name)

JOBS_ATTR(engines, engines);
JOBS_ATTR(submitted, jobs_submitted);
JOBS_ATTR(fetched, jobs_fetched);
JOBS_ATTR(completed, jobs_completed);
JOBS_ATTR(failed, jobs_failed);
JOBS_ATTR(cancelled, jobs_cancelled);
JOBS_ATTR(queue_depth, queue_depth);
JOBS_ATTR(inflight, inflight);

/* The latency histogram, bucket 0 first, space separated. */
static ssize_t lat_hist_show(struct device *dev,
			     struct device_attribute *attr, char *buf)
{
	struct syshax_stats_args st;
	int i, len = 0;

	syshax_broker_stats(&st);
	for (i = 0; i < SYSHAX_LAT_BUCKETS; i++)
		len += sysfs_emit_at(buf, len, "%llu%c",
				     (unsigned long long)st.lat_hist[i],
				     i + 1 < SYSHAX_LAT_BUCKETS ? ' ' : '\n');
	return len;
}
static DEVICE_ATTR_RO(lat_hist);

static struct attribute *syshax_jobs_attrs[] = {
	&dev_attr_engines.attr,
	&dev_attr_submitted.attr,
	&dev_attr_fetched.attr,
	&dev_attr_completed.attr,
	&dev_attr_failed.attr,
	&dev_attr_cancelled.attr,
	&dev_attr_queue_depth.attr,
	&dev_attr_inflight.attr,
	&dev_attr_lat_hist.attr,
	NULL,
};

const struct attribute_group syshax_broker_attr_group = {
	.name = "jobs",
	.attrs = syshax_jobs_attrs,
};

int syshax_broker_init(void)
{
	/* Queued jobs are charged to the submitter's memory cgroup. */
	br->job_cache = kmem_cache_create("syshax_job",
					  sizeof(struct syshax_kjob), 0,
					  SLAB_ACCOUNT, NULL);
	return br->job_cache ? 0 : -ENOMEM;
}

void syshax_broker_exit(void)
{
	kmem_cache_destroy(br->job_cache);
}
