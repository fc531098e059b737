// SPDX-License-Identifier: GPL-2.0
/*
 * Shared rings on the module (uapi/syshax.h, "Rings"). RING_SETUP gives a
 * context one vmalloc_user() area, mapped at offset 0 of its fd; the
 * indices, copies and the wake-up rule are broker/ring.h's, as in syshaxd.
 *
 * There is no polling thread: SYSHAX_RING_NEED_WAKEUP stays set, so every
 * new in entry comes with a kick (SUBMIT with SYSHAX_SUBMIT_RING). A
 * client's kick takes jobs out of its in ring (each copied once into a
 * kernel job, then checked as SUBMIT checks them) while its, its user's
 * and the global job limits allow; what a global or per-user limit leaves
 * in the ring is taken when jobs retire (syshax_rings_retry()). Its
 * completions go into its out ring. An engine's out ring is filled with
 * the BUF_GONE notes it is owed and jobs from the queue whenever either
 * comes, on its kicks and on poll(); its kick takes its completions from
 * its in ring. A caller whose indices cannot be kills its own rings
 * (-EPROTO, SYSHAX_RING_DEAD), nothing else.
 *
 * The broker's lock guards every ring; the caller's words are only read.
 */
#include <linux/mm.h>
#include <linux/uaccess.h>
#include <linux/vmalloc.h>

#include "broker.h"

static struct syshax_broker *const br = &syshax_broker;

/* Kernel jobs allocated per round of a client's in ring. */
#define TAKE_BATCH		16
/* Engine completions copied out per round. */
#define CPL_BATCH		16
static void ring_free(struct syshax_kring *kr)
{
	vfree(kr->area);
	if (kr->user)
		syshax_user_put(kr->user);
	kfree(kr);
}

/* ---- Engines ------------------------------------------------------------ */

/*
 * Fills an engine's out ring: the notes it is owed first (they free
 * memory), then jobs from the queue. Under the lock.
 */
void syshax_ring_give(struct syshax_kring *kr)
{
	struct syshax_broker_ctx *eng = kr->bc;
	struct syshax_kjob *j;
	int room, n;

	room = shx_ring_out_room(&kr->r);
	n = room > 0 ? syshax_engine_notes(eng, room) : 0;
	room -= n;
	while (room > 0 && !list_empty(&br->queue)) {
		j = list_first_entry(&br->queue, struct syshax_kjob, qnode);
		syshax_kjob_hold(eng, j);
		kr->ej.token = j->token;
		kr->ej.ctx_id = j->ctx_id;
		kr->ej.pad = 0;
		kr->ej.job = j->job;
		shx_ring_out_put(&kr->r, &kr->ej);
		room--;
		n++;
	}
	if (n) {
		shx_ring_out_publish(&kr->r);
		wake_up(&eng->wq);
	}
}

void syshax_rings_give(void)
{
	struct syshax_broker_ctx *eng;

	if (list_empty(&br->queue))
		return;
	list_for_each_entry(eng, &br->engines, enode)
		if (eng->ring && !eng->ring->r.dead)
			syshax_ring_give(eng->ring);
}

/*
 * An engine's kick: its completions, as ENGINE_COMPLETE takes them (a bad
 * one kills its rings), then its out ring refilled.
 */
static int engine_kick(struct syshax_kring *kr)
{
	struct syshax_engine_cpl c[CPL_BATCH];
	struct syshax_broker_ctx *eng = kr->bc;
	LIST_HEAD(done);
	LIST_HEAD(drop);
	int n, i, ret;

	spin_lock(&br->lock);
	while (!kr->r.dead && (n = shx_ring_in_take(&kr->r, c, CPL_BATCH)) > 0) {
		for (i = 0; i < n; i++) {
			struct syshax_kjob *j = NULL;

			if (!syshax_cpl_check(&c[i]))
				j = syshax_held_find(eng, c[i].token);
			if (!j) {
				shx_ring_kill(&kr->r);
				break;
			}
			syshax_job_end(j, &c[i], &done, &drop);
		}
	}
	/* Also a lying out_head is seen here, with nothing to give. */
	if (shx_ring_out_room(&kr->r) > 0)
		syshax_ring_give(kr);
	ret = kr->r.dead;
	spin_unlock(&br->lock);
	syshax_job_post(&done);
	syshax_map_drop(eng, &drop);
	return ret;
}

/* ---- Clients ------------------------------------------------------------ */

/* Up to n empty kernel jobs onto pre. */
static void prealloc(struct list_head *pre, unsigned int n)
{
	struct syshax_kjob *j;

	while (n--) {
		j = kmem_cache_zalloc(br->job_cache, GFP_KERNEL);
		if (!j)
			break;
		list_add_tail(&j->qnode, pre);
	}
}

static void free_jobs(struct list_head *list)
{
	syshax_kjob_free_list(list);
	INIT_LIST_HEAD(list);
}

/* A client's out ring: one completion (room checked) or a dead ring. */
void syshax_ring_put_cpl(struct syshax_kring *kr,
			 const struct syshax_completion *cpl)
{
	int room = shx_ring_out_room(&kr->r);

	/* Room was kept for every job taken: none is an out_head that lies. */
	if (!room)
		shx_ring_kill(&kr->r);
	if (room > 0)
		shx_ring_out_put(&kr->r, cpl);
}

void syshax_ring_publish(struct syshax_kring *kr)
{
	if (!kr->r.dead)
		shx_ring_out_publish(&kr->r);
}

/*
 * Takes jobs from a client's in ring into the kernel jobs on pre while its
 * limits allow and queues them; a job that fails its checks completes at
 * once with the errno (its kernel job moves to drop, to be freed without
 * the lock). Jobs a global or per-user limit leaves in the ring put the
 * client on the stalled list. Under the lock. Returns the number of jobs
 * queued; *more when pre ran out first.
 */
static int client_take(struct syshax_kring *kr, struct list_head *pre,
		       struct list_head *drop, bool *more)
{
	struct syshax_broker_ctx *bc = kr->bc;
	unsigned int ctx_max, user_max;
	int queued = 0, failed = 0, ret;
	struct syshax_kjob *j;

	*more = false;
	for (;;) {
		/* Out first: a lying out_head is seen on every kick. */
		if (shx_ring_out_room(&kr->r) < 0 ||
		    shx_ring_in_ready(&kr->r) <= 0)
			break;
		ctx_max = min(READ_ONCE(syshax_max_jobs_ctx),
			      kr->r.out_entries);
		if (bc->nr_jobs + shx_ring_out_pending(&kr->r) >= ctx_max)
			break;	/* the client reaps, then kicks again */
		user_max = READ_ONCE(syshax_max_jobs_user);
		if (br->active >= READ_ONCE(syshax_max_jobs_global) ||
		    (user_max && kr->user->nr_jobs >= user_max)) {
			if (list_empty(&kr->snode))
				list_add_tail(&kr->snode, &br->stalled);
			break;
		}
		if (list_empty(pre)) {
			*more = true;
			break;
		}
		j = list_first_entry(pre, struct syshax_kjob, qnode);
		list_del(&j->qnode);
		/* Copied once; only the copy is checked and queued. */
		shx_ring_in_take(&kr->r, &j->job, 1);
		ret = syshax_kjob_check(bc->ctx, j);
		if (ret) {
			struct syshax_completion cpl = {
				.user_data = j->job.user_data,
				.status = ret,
			};

			br->st.submitted++;
			br->st.failed++;
			/* Room: ctx_max <= out_entries counted it. */
			shx_ring_out_put(&kr->r, &cpl);
			list_add_tail(&j->qnode, drop);
			failed++;
			continue;
		}
		syshax_kjob_enqueue(bc, kr->user, j);
		queued++;
	}
	if (failed)
		syshax_ring_publish(kr);
	if (failed || kr->r.dead)
		wake_up(&bc->wq);
	return queued;
}

static int client_kick(struct syshax_kring *kr)
{
	struct syshax_ring_hdr *h = kr->r.hdr;
	LIST_HEAD(pre);
	LIST_HEAD(drop);
	int queued = 0, ret;
	bool more;
	u32 hint;

	do {
		/* The caller's words only size the allocation. */
		hint = READ_ONCE(h->in_tail.v) - READ_ONCE(h->in_head.v);
		prealloc(&pre, min_t(u32, hint, TAKE_BATCH));
		if (hint && list_empty(&pre))
			return -ENOMEM;
		spin_lock(&br->lock);
		queued += client_take(kr, &pre, &drop, &more);
		ret = kr->r.dead;
		spin_unlock(&br->lock);
		free_jobs(&pre);
		free_jobs(&drop);
	} while (more && !ret);
	if (queued)
		syshax_engines_wake();
	return ret;
}

/*
 * After jobs retired: takes what global or per-user limits left in client
 * rings, each stalled ring once per round, in order. No lock held.
 */
void syshax_rings_retry(void)
{
	struct syshax_kring *kr;
	bool more, again, queued = false;
	LIST_HEAD(todo);
	LIST_HEAD(pre);
	LIST_HEAD(drop);

	do {
		again = false;
		prealloc(&pre, TAKE_BATCH);
		if (list_empty(&pre))
			break;	/* no memory: the next retirement tries */
		spin_lock(&br->lock);
		list_splice_init(&br->stalled, &todo);
		while (!list_empty(&todo)) {
			kr = list_first_entry(&todo, struct syshax_kring,
					      snode);
			list_del_init(&kr->snode);
			if (client_take(kr, &pre, &drop, &more))
				queued = true;
			if (more) {
				list_add(&kr->snode, &todo);
				again = true;
				break;
			}
		}
		/* What this round did not reach stays first in line. */
		list_splice(&todo, &br->stalled);
		INIT_LIST_HEAD(&todo);
		spin_unlock(&br->lock);
		free_jobs(&pre);
		free_jobs(&drop);
	} while (again);
	if (queued)
		syshax_engines_wake();
}

static bool user_full(const struct syshax_user *u)
{
	unsigned int max = READ_ONCE(syshax_max_jobs_user);

	return max && u->nr_jobs >= max;
}

/*
 * SYSHAX_RING_FULL: a client ring's submits would get -EAGAIN, because the
 * global limit or its user's is reached. Rewritten on every client ring
 * when the global state changes, on the rings of user when its own does;
 * under the lock.
 */
void syshax_rings_full_update(struct syshax_user *user)
{
	bool full = br->active >= READ_ONCE(syshax_max_jobs_global);
	bool all = full != br->rings_full;
	struct syshax_kring *kr;
	u32 f;

	if (!all && (!user || user_full(user) == user->rings_full))
		return;
	br->rings_full = full;
	if (user)
		user->rings_full = user_full(user);
	list_for_each_entry(kr, &br->ring_clients, rnode) {
		if (!all && kr->user != user)
			continue;
		kr->user->rings_full = user_full(kr->user);
		f = READ_ONCE(kr->r.hdr->broker_flags.v);
		WRITE_ONCE(kr->r.hdr->broker_flags.v,
			   full || kr->user->rings_full ?
			   f | SYSHAX_RING_FULL : f & ~SYSHAX_RING_FULL);
	}
}

/* ---- Hooks -------------------------------------------------------------- */

long syshax_ring_setup(struct syshax_broker_ctx *bc, void __user *uarg)
{
	struct syshax_ring_setup_args a;
	u32 in_size, out_size, in_off, out_off;
	struct syshax_kring *kr;
	bool engine;
	int ret;

	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if ((a.flags & ~SYSHAX_RING_NOTES) || a.max_jobs)
		return -EINVAL;
	if (smp_load_acquire(&bc->ring))
		return -EBUSY;
	engine = READ_ONCE(bc->engine);
	/* Notes are an engine's only. */
	if (a.flags && !engine)
		return -EINVAL;
	ret = shx_ring_sizes(engine, SYSHAX_MAX_SUBMIT,
			     READ_ONCE(syshax_max_jobs_ctx), &a);
	if (ret)
		return ret;
	in_size = engine ? sizeof(struct syshax_engine_cpl) :
			   sizeof(struct syshax_job);
	out_size = engine ? sizeof(struct syshax_engine_job) :
			    sizeof(struct syshax_completion);
	kr = kzalloc(sizeof(*kr), GFP_KERNEL_ACCOUNT);
	if (!kr)
		return -ENOMEM;
	kr->bc = bc;
	kr->engine = engine;
	kr->notes = a.flags & SYSHAX_RING_NOTES;
	INIT_LIST_HEAD(&kr->rnode);
	INIT_LIST_HEAD(&kr->snode);
	kr->size = PAGE_ALIGN(shx_ring_layout(a.in_entries, in_size,
					      a.out_entries, out_size,
					      &in_off, &out_off));
	ret = -ENOMEM;
	kr->area = vmalloc_user(kr->size);	/* zeroed */
	if (!kr->area)
		goto err;
	if (!engine) {
		/* Ring jobs count against the uid that set the ring up. */
		kr->user = syshax_user_get_current();
		if (!kr->user)
			goto err;
	}
	shx_ring_init(&kr->r, kr->area, a.in_entries, in_size, a.out_entries,
		      out_size);
	/* No polling thread here: every new in entry needs a kick. */
	kr->r.hdr->broker_flags.v = SYSHAX_RING_NEED_WAKEUP;
	a.max_jobs = engine ? 0 : min(READ_ONCE(syshax_max_jobs_ctx),
				      a.out_entries);
	a.size = kr->size;
	a.mmap_offset = 0;
	ret = -EFAULT;
	if (copy_to_user(uarg, &a, sizeof(a)))
		goto err;

	spin_lock(&br->lock);
	/*
	 * Another RING_SETUP or an ENGINE_ATTACH came meanwhile, or jobs of
	 * the system-call path are not reaped yet (WAIT could not reach them).
	 */
	if (bc->ring || bc->engine != engine || bc->nr_jobs) {
		spin_unlock(&br->lock);
		ret = -EBUSY;
		goto err;
	}
	if (!engine) {
		if (br->rings_full || user_full(kr->user))
			kr->r.hdr->broker_flags.v |= SYSHAX_RING_FULL;
		list_add_tail(&kr->rnode, &br->ring_clients);
	}
	smp_store_release(&bc->ring, kr);
	if (engine)
		syshax_ring_give(kr);	/* jobs that waited for it */
	spin_unlock(&br->lock);
	return 0;

err:
	ring_free(kr);
	return ret;
}

/* SUBMIT with SYSHAX_SUBMIT_RING: 0, or -EPROTO once the rings are dead. */
long syshax_ring_kick(struct syshax_broker_ctx *bc)
{
	struct syshax_kring *kr = smp_load_acquire(&bc->ring);
	int ret;

	ret = kr->engine ? engine_kick(kr) : client_kick(kr);
	if (ret == -EPROTO)
		wake_up(&bc->wq);	/* a sleeper learns of it */
	return ret;
}

/*
 * Readable exactly while the out ring holds entries (level-triggered, from
 * the ring's own state), or once the rings are dead. An engine whose out
 * ring has room gets queued jobs here first.
 */
__poll_t syshax_ring_poll(struct syshax_broker_ctx *bc)
{
	struct syshax_kring *kr = smp_load_acquire(&bc->ring);

	/* list_empty() reads once: a hint, the lock decides. */
	if (kr->engine && (READ_ONCE(br->st.queued) || !list_empty(&bc->gone))) {
		spin_lock(&br->lock);
		if (!kr->r.dead)
			syshax_ring_give(kr);
		spin_unlock(&br->lock);
	}
	if (READ_ONCE(kr->r.dead) ||
	    READ_ONCE(kr->r.out_tail) != READ_ONCE(kr->r.hdr->out_head.v))
		return EPOLLIN | EPOLLRDNORM;
	return 0;
}

int syshax_broker_ring_mmap(struct syshax_ctx *ctx, struct vm_area_struct *vma)
{
	struct syshax_kring *kr = smp_load_acquire(&ctx->jobs->ring);

	if (!kr || vma->vm_pgoff || !(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	/* Checks the size; VM_DONTEXPAND | VM_DONTDUMP. */
	return remap_vmalloc_range(vma, kr->area, 0);
}

/* After the context's jobs are gone: no list names the ring any more. */
void syshax_ring_release(struct syshax_broker_ctx *bc)
{
	struct syshax_kring *kr = bc->ring;

	if (!kr)
		return;
	spin_lock(&br->lock);
	list_del_init(&kr->rnode);
	list_del_init(&kr->snode);
	bc->ring = NULL;
	spin_unlock(&br->lock);
	ring_free(kr);
}
