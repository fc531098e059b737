// SPDX-License-Identifier: GPL-2.0
/*
 * The engine side of the job broker: ENGINE_ATTACH, ENGINE_FETCH (jobs
 * leave the queue with refs rewritten to global ids), ENGINE_MAP (a handle
 * on the engine's fd for a buffer a held job names), ENGINE_COMPLETE (the
 * completion goes to the owner, the job's buffer references go), the
 * BUF_GONE notes of engines that keep their mappings, and the end of an
 * engine: what it took completes with -EPIPE, what its ring still holds
 * goes back to the queue.
 */
#include <linux/cred.h>
#include <linux/module.h>
#include <linux/nodemask.h>
#include <linux/uaccess.h>

#include "broker.h"

static struct syshax_broker *const br = &syshax_broker;

static int engine_gid = -1;
module_param(engine_gid, int, 0644);
MODULE_PARM_DESC(engine_gid,
		 "Group allowed to attach engines besides CAP_SYS_ADMIN (default -1: none)");

/*
 * A buffer an engine mapped with ENGINE_MAP. The engine's handle (its
 * reference, not a live one) lives while jobs the engine holds name the
 * buffer, or, for an engine whose rings take notes, until the buffer's last
 * live reference goes: then the map moves to the engine's gone list, and
 * leaves it as a SYSHAX_NOTE_BUF_GONE note in its out ring. The engine's
 * VMA keeps the memory until it unmaps.
 */
struct engine_map {
	struct list_head node;
	/* Compared only; put once its handle is taken, which holds it. */
	struct syshax_buf *buf;
	u64 id;
	u64 size;
	u64 mmap_offset;
	u32 handle;
	unsigned int users;	/* refs in held jobs naming the buffer */
	/* Kept when unused, till its note: buf->engine_mapped was set. */
	bool kept;
};

static struct engine_map *map_find(struct syshax_broker_ctx *eng, u64 id)
{
	struct engine_map *m;

	list_for_each_entry(m, &eng->maps, node)
		if (m->id == id)
			return m;
	return NULL;
}

/*
 * The engine's map of id, unless the engine freed the map's handle itself
 * (BUF_FREE): then the map is forgotten, so that a new handle and offset
 * are made, and the old offset stays dead. Under the lock.
 */
static struct engine_map *map_find_live(struct syshax_broker_ctx *eng, u64 id)
{
	struct engine_map *m = map_find(eng, id);

	if (m && !syshax_ctx_handle_is(eng->ctx, m->handle, m->buf)) {
		list_del(&m->node);
		kfree(m);
		m = NULL;
	}
	return m;
}

/* Counts a newly held job's refs in its engine's maps; under the lock. */
static void map_use(struct syshax_broker_ctx *eng,
		    const struct syshax_kjob *j)
{
	struct engine_map *m;
	unsigned int i;

	for (i = 0; i < j->job.nr_refs; i++) {
		m = map_find(eng, j->job.refs[i].buf);
		if (m)
			m->users++;
	}
}

/* Whether eng's new maps are kept, until their notes; under the lock. */
static bool keeps_maps(const struct syshax_broker_ctx *eng)
{
	return eng->ring && eng->ring->notes;
}

/* Undoes map_use; maps nobody uses move to drop. Under the lock. */
static void map_unuse(struct syshax_broker_ctx *eng,
		      const struct syshax_kjob *j, struct list_head *drop)
{
	struct engine_map *m;
	unsigned int i;

	for (i = 0; i < j->job.nr_refs; i++) {
		m = map_find(eng, j->job.refs[i].buf);
		if (m && !--m->users && !m->kept)
			list_move_tail(&m->node, drop);
	}
}

/*
 * Frees maps map_unuse let go, with the engine's handles, unless the engine
 * freed a handle itself (BUF_FREE) and the number now names another buffer.
 */
void syshax_map_drop(struct syshax_broker_ctx *eng, struct list_head *drop)
{
	struct engine_map *m, *tmp;

	list_for_each_entry_safe(m, tmp, drop, node) {
		/* The map's buffer is held by the handle until it is taken. */
		if (syshax_ctx_take_handle(eng->ctx, m->handle, m->buf))
			syshax_buf_put(m->buf);
		kfree(m);
	}
}

/*
 * No job names buf and none can again: each engine that keeps a map of it
 * loses its handle and is owed a note, put in its out ring as it has room
 * (syshax_ring_give()).
 */
void syshax_broker_buf_gone(struct syshax_buf *buf)
{
	struct syshax_broker_ctx *eng;
	unsigned int taken = 0;
	struct engine_map *m;

	spin_lock(&br->lock);
	list_for_each_entry(eng, &br->engines, enode) {
		m = map_find(eng, buf->id);
		if (!m || m->buf != buf)
			continue;
		if (syshax_ctx_take_handle(eng->ctx, m->handle, buf))
			taken++;
		list_move_tail(&m->node, &eng->gone);
		if (eng->ring && !eng->ring->r.dead)
			syshax_ring_give(eng->ring);
	}
	spin_unlock(&br->lock);
	/* Not the last: the caller still has its reference. */
	while (taken--)
		syshax_buf_put(buf);
}

int syshax_engine_notes(struct syshax_broker_ctx *eng, int room)
{
	struct syshax_engine_job *note = &eng->ring->ej;
	struct engine_map *m;
	int n = 0;

	while (n < room && !list_empty(&eng->gone)) {
		m = list_first_entry(&eng->gone, struct engine_map, node);
		memset(note, 0, sizeof(*note));
		note->token = SYSHAX_NOTE_TOKEN;
		note->job.op = SYSHAX_NOTE_BUF_GONE;
		note->job.nr_refs = 1;
		note->job.refs[0].buf = m->id;
		shx_ring_out_put(&eng->ring->r, note);
		list_del(&m->node);
		kfree(m);
		n++;
	}
	return n;
}

/*
 * Ends a held job: takes it off its engine and records the completion.
 * Under the lock; the job moves to done, for syshax_job_post().
 */
void syshax_job_end(struct syshax_kjob *j, const struct syshax_engine_cpl *c,
		    struct list_head *done, struct list_head *drop)
{
	hash_del(&j->hnode);
	map_unuse(j->engine, j, drop);
	list_move_tail(&j->qnode, done);
	j->state = SYSHAX_KJOB_DONE;
	j->cpl.user_data = j->job.user_data;
	j->cpl.status = c->status;
	j->cpl.flags = c->flags;
	j->cpl.result = c->result;
	j->cpl.exec_ns = c->exec_ns;
	syshax_job_stats_end(&br->st, c->status, ktime_get_ns() - j->submit_ns);
	j->engine->eng_done++;
	if (j->owner && c->status)
		j->owner->failed++;
	else if (j->owner)
		j->owner->completed++;
}

/* Publishes what went into an owner's out ring, and wakes it. */
static void job_post_wake(struct syshax_broker_ctx *owner)
{
	if (owner->ring)
		syshax_ring_publish(owner->ring);
	wake_up(&owner->wq);
}

/*
 * Releases the refs of ended jobs, then hands each completion to its owner,
 * or frees the job when the owner has gone. Called without the lock.
 */
void syshax_job_post(struct list_head *done)
{
	struct syshax_broker_ctx *last = NULL;
	struct syshax_kjob *j, *tmp;
	bool retry;

	list_for_each_entry(j, done, qnode)
		syshax_kjob_put_bufs(j);
	spin_lock(&br->lock);
	list_for_each_entry_safe(j, tmp, done, qnode) {
		struct syshax_broker_ctx *owner = j->owner;

		syshax_kjob_retire(j);
		if (!owner)
			continue;
		list_del(&j->cnode);
		if (owner->ring) {
			/* Into its out ring; the job itself is freed. */
			owner->nr_jobs--;
			syshax_ring_put_cpl(owner->ring, &j->cpl);
		} else {
			list_move_tail(&j->qnode, &owner->cpls);
			owner->nr_cpls++;
		}
		/* One wake-up per run of one owner's jobs, not per job. */
		if (owner != last) {
			if (last)
				job_post_wake(last);
			last = owner;
		}
	}
	if (last)
		job_post_wake(last);
	retry = !list_empty(&br->stalled);
	spin_unlock(&br->lock);
	syshax_kjob_free_list(done);
	/* The retired jobs made room for jobs rings still hold. */
	if (retry)
		syshax_rings_retry();
}

static bool engine_may_attach(void)
{
	int gid = READ_ONCE(engine_gid);
	kgid_t kgid;

	if (capable(CAP_SYS_ADMIN))
		return true;
	if (gid < 0)
		return false;
	/* A module parameter speaks of the initial namespace's groups. */
	kgid = make_kgid(&init_user_ns, gid);
	return gid_valid(kgid) && in_egroup_p(kgid);
}

long syshax_engine_attach(struct syshax_broker_ctx *bc, void __user *uarg)
{
	struct syshax_engine_attach_args a;
	int ret = 0;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.flags || a.pad || a.node < -1 || a.node >= (s32)nr_node_ids)
		return -EINVAL;
	if (!engine_may_attach())
		return -EPERM;
	spin_lock(&br->lock);
	/* A context with client rings stays a client. */
	if (bc->engine || bc->ring) {
		ret = -EBUSY;
	} else {
		WRITE_ONCE(bc->engine, true);
		list_add_tail(&bc->enode, &br->engines);
		a.engine_id = ++br->next_engine_id;
		br->st.engines++;
	}
	spin_unlock(&br->lock);
	if (ret)
		return ret;
	return copy_to_user(uarg, &a, sizeof(a)) ? -EFAULT : 0;
}

/*
 * Engines sleep on their own wait queue, the one poll() watches, so an fd
 * added to epoll before ENGINE_ATTACH still hears of jobs. Engines with
 * rings get the queued jobs in their out rings first.
 */
void syshax_engines_wake(void)
{
	struct syshax_broker_ctx *eng;

	spin_lock(&br->lock);
	syshax_rings_give();
	list_for_each_entry(eng, &br->engines, enode)
		wake_up(&eng->wq);
	spin_unlock(&br->lock);
}

static bool jobs_queued(void *arg)
{
	return READ_ONCE(br->st.queued) > 0;
}

static int fetch_copy(const struct syshax_kjob *j,
		      struct syshax_engine_job __user *u)
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
	struct syshax_kjob *j, *tmp;
	LIST_HEAD(gone);
	bool requeued;

	spin_lock(&br->lock);
	list_for_each_entry_safe(j, tmp, got, qnode) {
		if (copied) {
			copied--;
			list_move_tail(&j->qnode, &eng->held);
			hash_add(br->held, &j->hnode, j->token);
			map_use(eng, j);
			br->st.fetched++;
			continue;
		}
		br->st.held--;
		if (j->owner) {
			j->state = SYSHAX_KJOB_QUEUED;
			br->st.queued++;
			continue;
		}
		/* Its owner closed while it was being copied. */
		list_move_tail(&j->qnode, &gone);
		syshax_kjob_retire(j);
		br->st.cancelled++;
	}
	requeued = !list_empty(got);
	list_splice(got, &br->queue);
	spin_unlock(&br->lock);
	if (requeued)
		syshax_engines_wake();
	syshax_kjob_free_list(&gone);
}

long syshax_engine_fetch(struct syshax_broker_ctx *bc, void __user *uarg)
{
	struct syshax_engine_job __user *ujobs;
	struct syshax_engine_fetch_args a;
	unsigned int n, copied = 0;
	struct syshax_deadline d;
	LIST_HEAD(got);
	struct syshax_kjob *j;
	int err;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.flags || !a.max || !bc->engine)
		return -EINVAL;
	ujobs = u64_to_user_ptr(a.jobs);
	syshax_deadline_start(&d, a.timeout_ns);
	for (;;) {
		n = 0;
		spin_lock(&br->lock);
		while (n < a.max && !list_empty(&br->queue)) {
			j = list_first_entry(&br->queue, struct syshax_kjob,
					     qnode);
			list_move_tail(&j->qnode, &got);
			j->state = SYSHAX_KJOB_HELD;
			j->engine = bc;
			n++;
		}
		br->st.queued -= n;
		br->st.held += n;
		spin_unlock(&br->lock);
		if (n)
			break;
		err = syshax_deadline_wait(&d, &bc->wq, jobs_queued, NULL);
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
	struct syshax_kjob *j;

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

	spin_lock(&br->lock);
	if (!held_refs(eng, id, &buf)) {
		spin_unlock(&br->lock);
		buf = syshax_buf_get_id(id);
		if (IS_ERR_OR_NULL(buf))
			return -ENOENT;
		syshax_buf_put(buf);
		return -EACCES;
	}
	syshax_buf_get(buf);
	spin_unlock(&br->lock);

	ret = -ENOMEM;
	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		goto out_put;
	m->buf = buf;
	m->id = id;
	m->size = buf->size;
	ret = syshax_ctx_install_buf(eng->ctx, buf, true, &m->handle,
				     &m->mmap_offset);
	if (ret) {
		kfree(m);
		goto out_put;
	}
	spin_lock(&br->lock);
	m->users = held_refs(eng, id, &again);
	if (m->users && !map_find_live(eng, id)) {
		list_add_tail(&m->node, &eng->maps);
		/* A job holds buf live: its last hold comes after this. */
		m->kept = keeps_maps(eng);
		if (m->kept)
			WRITE_ONCE(buf->engine_mapped, true);
	} else {
		list_add_tail(&m->node, &drop);
	}
	spin_unlock(&br->lock);
	syshax_map_drop(eng, &drop);
out_put:
	syshax_buf_put(buf);
	return ret;
}

long syshax_engine_map(struct syshax_broker_ctx *bc, void __user *uarg)
{
	struct syshax_engine_map_args a;
	struct engine_map *m;
	int ret;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (!bc->engine)
		return -EINVAL;
	spin_lock(&br->lock);
	m = map_find_live(bc, a.id);
	if (!m) {
		spin_unlock(&br->lock);
		ret = engine_map_new(bc, a.id);
		if (ret)
			return ret;
		spin_lock(&br->lock);
		m = map_find(bc, a.id);
	}
	if (m) {
		a.mmap_offset = m->mmap_offset;
		a.size = m->size;
	}
	spin_unlock(&br->lock);
	if (!m)
		return -EACCES;
	return copy_to_user(uarg, &a, sizeof(a)) ? -EFAULT : 0;
}

void syshax_kjob_hold(struct syshax_broker_ctx *eng, struct syshax_kjob *j)
{
	j->state = SYSHAX_KJOB_HELD;
	j->engine = eng;
	list_move_tail(&j->qnode, &eng->held);
	hash_add(br->held, &j->hnode, j->token);
	map_use(eng, j);
	br->st.queued--;
	br->st.held++;
	br->st.fetched++;
}

struct syshax_kjob *syshax_held_find(struct syshax_broker_ctx *eng,
				     u64 token)
{
	struct syshax_kjob *j;

	hash_for_each_possible(br->held, j, hnode, token)
		if (j->token == token && j->engine == eng)
			return j;
	return NULL;
}

/* Completions read from the user per lock round. */
#define CPL_BATCH	16

long syshax_engine_complete(struct syshax_broker_ctx *bc, void __user *uarg)
{
	struct syshax_engine_cpl c[CPL_BATCH];
	struct syshax_engine_cpl __user *ucpls;
	struct syshax_engine_complete_args a;
	unsigned int n = 0, i, batch;
	LIST_HEAD(done);
	LIST_HEAD(drop);
	int ret = 0;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.flags || !a.nr || !bc->engine)
		return -EINVAL;
	ucpls = u64_to_user_ptr(a.cpls);
	/* Ended jobs are posted together, so a waiter wakes once. */
	while (n < a.nr && !ret) {
		batch = min_t(unsigned int, a.nr - n, CPL_BATCH);
		if (copy_from_user(c, &ucpls[n], batch * sizeof(c[0]))) {
			ret = -EFAULT;
			break;
		}
		spin_lock(&br->lock);
		for (i = 0; i < batch; i++) {
			struct syshax_kjob *j;

			ret = syshax_cpl_check(&c[i]);
			if (ret)
				break;
			j = syshax_held_find(bc, c[i].token);
			if (!j) {
				ret = -ENOENT;
				break;
			}
			syshax_job_end(j, &c[i], &done, &drop);
		}
		spin_unlock(&br->lock);
		n += i;
	}
	syshax_job_post(&done);
	syshax_map_drop(bc, &drop);
	return n ? n : ret;
}

/*
 * A job in a gone engine's out ring that the engine never took: back to
 * the head of the queue for another engine (cancelled if its owner went
 * too), as fetch_settle() does with jobs that could not be copied out.
 * Under the lock. Returns true when it was queued again.
 */
static bool unhold(struct syshax_broker_ctx *eng, struct syshax_kjob *j,
		   struct list_head *gone, struct list_head *drop)
{
	hash_del(&j->hnode);
	map_unuse(eng, j, drop);
	j->engine = NULL;
	br->st.held--;
	br->st.fetched--;
	if (!j->owner) {
		list_move_tail(&j->qnode, gone);
		syshax_kjob_retire(j);
		br->st.cancelled++;
		return false;
	}
	j->state = SYSHAX_KJOB_QUEUED;
	list_move(&j->qnode, &br->queue);
	br->st.queued++;
	return true;
}

/*
 * Engine gone: the jobs it took (fetched from its ring, or by FETCH)
 * complete with -EPIPE now; those still in its out ring go back to the
 * queue, in order, for the next engine.
 */
void syshax_engine_release(struct syshax_broker_ctx *eng)
{
	static const struct syshax_engine_cpl epipe = { .status = -EPIPE };
	struct engine_map *m, *mtmp;
	struct syshax_kjob *j, *tmp;
	struct syshax_engine_job ej;
	bool requeued = false;
	LIST_HEAD(done);
	LIST_HEAD(drop);
	LIST_HEAD(gone);

	spin_lock(&br->lock);
	/* Newest first, each to the head: the queue keeps its order. */
	while (eng->ring && shx_ring_out_unput(&eng->ring->r, &ej)) {
		j = syshax_held_find(eng, ej.token);
		if (j && unhold(eng, j, &gone, &drop))
			requeued = true;
	}
	list_for_each_entry_safe(j, tmp, &eng->held, qnode)
		syshax_job_end(j, &epipe, &done, &drop);
	list_del(&eng->enode);
	br->st.engines--;
	spin_unlock(&br->lock);
	syshax_job_post(&done);
	syshax_kjob_free_list(&gone);
	if (requeued)
		syshax_engines_wake();
	/* The handles go with the context's other buffers. */
	list_splice(&drop, &eng->maps);
	list_splice(&eng->gone, &eng->maps);
	list_for_each_entry_safe(m, mtmp, &eng->maps, node)
		kfree(m);
}
