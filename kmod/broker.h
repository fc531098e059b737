/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Job broker internals, shared by broker.c (the queue, clients, the hooks)
 * and engine.c (engines).
 *
 * A job sits on one list at a time through its qnode: the global queue,
 * its engine's held list (then also in the token hash), or its owner's
 * completion list. Until its completion is posted it is also on its owner's
 * job list (cnode): that is how a closing client finds its jobs. The
 * broker's one spinlock guards all of it and every syshax_broker_ctx.
 * Buffer references are taken and dropped outside the lock, since dropping
 * the last one may sleep.
 */
#ifndef SYSHAX_BROKER_H
#define SYSHAX_BROKER_H

#include <linux/hashtable.h>
#include <linux/ktime.h>
#include <linux/list.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/wait.h>

#include "cpl_check.h"
#include "syshax_priv.h"

#define SHX_RING_LOAD_ACQ(p)	smp_load_acquire(p)
#define SHX_RING_STORE_REL(p, v) smp_store_release(p, v)
#define SHX_RING_READ(p)	READ_ONCE(*(p))
#define SHX_RING_WRITE(p, v)	WRITE_ONCE(*(p), v)
#define SHX_RING_MB()		smp_mb()
#include "ring.h"

/* Most jobs one SUBMIT takes (VERSION's max_submit; a client's in ring). */
#define SYSHAX_MAX_SUBMIT	128

enum syshax_kjob_state {
	SYSHAX_KJOB_QUEUED,	/* on the global queue */
	SYSHAX_KJOB_HELD,	/* taken by an engine, not yet completed */
	SYSHAX_KJOB_DONE,	/* completed, on its way to the owner */
};

struct syshax_kjob {
	struct list_head qnode;
	struct list_head cnode;
	struct hlist_node hnode;
	struct syshax_broker_ctx *owner;	/* NULL once the owner closed */
	struct syshax_broker_ctx *engine;
	struct syshax_user *user;	/* submitter's uid; until retired */
	enum syshax_kjob_state state;
	unsigned int nr_bufs;
	struct syshax_buf *bufs[SYSHAX_JOB_MAX_REFS];
	u64 token;
	u64 submit_ns;
	u32 ctx_id;
	struct syshax_job job;		/* refs[].buf hold global ids */
	struct syshax_completion cpl;
};

struct syshax_broker_ctx {
	struct syshax_ctx *ctx;
	/* A completion was posted; for an engine, also: a job was queued. */
	wait_queue_head_t wq;
	struct list_head jobs;		/* queued or held, via cnode */
	struct list_head cpls;		/* done, not yet reaped, via qnode */
	unsigned int nr_jobs;		/* submitted, not yet reaped */
	unsigned int nr_cpls;
	/* Engine side, set once by ENGINE_ATTACH. */
	bool engine;
	struct list_head enode;		/* in the broker's engines */
	struct list_head held;		/* via qnode */
	struct list_head maps;		/* engine.c's struct engine_map */
	struct list_head gone;		/* maps of freed buffers: notes owed */
	/* Shared rings (ring.c): set once by RING_SETUP, under the lock. */
	struct syshax_kring *ring;
	/* CTX_STATS: in the broker's ctxs; the opener; counters since. */
	struct list_head all;
	struct pid *pid;
	kuid_t uid;
	char comm[TASK_COMM_LEN];
	u64 submitted, completed, failed, eng_done;
};

/*
 * A context's ring area (ring.c): vmalloc_user() memory mapped at offset 0
 * of its fd, and broker/ring.h's view of it. Everything in it is guarded
 * by the broker's lock; the caller's words in the area are only read.
 */
struct syshax_kring {
	struct shx_ring r;
	void *area;
	unsigned long size;		/* bytes, page aligned */
	struct syshax_broker_ctx *bc;
	bool engine;			/* the role at RING_SETUP */
	bool notes;			/* an engine's, SYSHAX_RING_NOTES */
	struct syshax_user *user;	/* client: its jobs count against it */
	struct list_head rnode;		/* client: in the broker's clients */
	struct list_head snode;		/* client: in stalled (empty: not) */
	struct syshax_engine_job ej;	/* engine: an out entry being built */
};

struct syshax_broker {
	spinlock_t lock;
	struct list_head queue;
	DECLARE_HASHTABLE(held, 10);	/* held jobs by token */
	struct list_head engines;	/* attached, via enode */
	struct kmem_cache *job_cache;
	u64 next_token;
	u32 next_engine_id;
	struct list_head ring_clients;	/* clients with rings, via rnode */
	/* Clients whose in ring holds jobs a global or per-user limit left
	 * there; taken when jobs retire (syshax_rings_retry()). */
	struct list_head stalled;
	bool rings_full;		/* max_jobs_global reached */
	unsigned int active;		/* queued or held: max_jobs_global */
	/* and per user in syshax_user.nr_jobs: max_jobs_user */
	struct syshax_job_stats st;	/* for STATS */
	struct list_head ctxs;		/* every context, via all */
	unsigned int nr_ctxs;
};

extern struct syshax_broker syshax_broker;

/* The job limits (module parameters, broker.c). */
extern unsigned int syshax_max_jobs_ctx;
extern unsigned int syshax_max_jobs_global;
extern unsigned int syshax_max_jobs_user;

/*
 * Checks j->job (syshax_job_check(), taking the buffer references the job
 * keeps) and rewrites its refs to global ids; no lock held, or the broker's
 * (the handle lookups take only the handles' xarray lock).
 */
int syshax_kjob_check(struct syshax_ctx *ctx, struct syshax_kjob *j);
/*
 * Queues a checked job of bc, counted against user; under the lock, after
 * the limits were checked.
 */
void syshax_kjob_enqueue(struct syshax_broker_ctx *bc,
			 struct syshax_user *user, struct syshax_kjob *j);

void syshax_kjob_put_bufs(struct syshax_kjob *j);
/* Takes a job out of the queued-or-held counts; under the lock. */
void syshax_kjob_retire(struct syshax_kjob *j);
/* Tells every engine that jobs are queued. */
void syshax_engines_wake(void);
/* Frees the jobs on a qnode list; called without the lock. */
void syshax_kjob_free_list(struct list_head *list);

struct syshax_deadline {
	s64 timeout_ns;		/* < 0: none */
	ktime_t end;
};

void syshax_deadline_start(struct syshax_deadline *d, s64 timeout_ns);
/*
 * Sleeps on wq until cond(arg), the deadline or a signal: 0, -ETIMEDOUT or
 * -EINTR (not -ERESTARTSYS: a restart would start the timeout again).
 */
int syshax_deadline_wait(const struct syshax_deadline *d,
			 wait_queue_head_t *wq, bool (*cond)(void *arg),
			 void *arg);

/* engine.c: the ENGINE_* ioctls, and the end of an engine's context. */
long syshax_engine_attach(struct syshax_broker_ctx *bc, void __user *uarg);
long syshax_engine_fetch(struct syshax_broker_ctx *bc, void __user *uarg);
long syshax_engine_map(struct syshax_broker_ctx *bc, void __user *uarg);
long syshax_engine_complete(struct syshax_broker_ctx *bc, void __user *uarg);
void syshax_engine_release(struct syshax_broker_ctx *eng);
/* The held job of eng with this token, or NULL; under the lock. */
struct syshax_kjob *syshax_held_find(struct syshax_broker_ctx *eng,
				     u64 token);
/* Makes j (taken off the queue) a job eng holds; under the lock. */
void syshax_kjob_hold(struct syshax_broker_ctx *eng, struct syshax_kjob *j);
/* ENGINE_COMPLETE's steps: job_end under the lock, then, without it,
 * job_post and map_drop. */
void syshax_job_end(struct syshax_kjob *j, const struct syshax_engine_cpl *c,
		    struct list_head *done, struct list_head *drop);
void syshax_job_post(struct list_head *done);
void syshax_map_drop(struct syshax_broker_ctx *eng, struct list_head *drop);
/*
 * Puts up to room BUF_GONE notes the engine is owed into its out ring
 * (unpublished); returns how many. Under the lock.
 */
int syshax_engine_notes(struct syshax_broker_ctx *eng, int room);

/* ring.c: RING_SETUP, kicks, the ring side of poll, mmap and release. */
long syshax_ring_setup(struct syshax_broker_ctx *bc, void __user *uarg);
long syshax_ring_kick(struct syshax_broker_ctx *bc);
__poll_t syshax_ring_poll(struct syshax_broker_ctx *bc);
void syshax_ring_release(struct syshax_broker_ctx *bc);
/* Under the lock: a completion into a client's out ring (published by
 * syshax_ring_publish()); fills engines' out rings from the queue; sets or
 * clears SYSHAX_RING_FULL when the global limit or user's is reached or
 * left (user: whose count changed, or NULL). */
void syshax_ring_put_cpl(struct syshax_kring *kr,
			 const struct syshax_completion *cpl);
void syshax_ring_publish(struct syshax_kring *kr);
void syshax_rings_give(void);
/* An engine's out ring: its notes, then queued jobs, while room lasts. */
void syshax_ring_give(struct syshax_kring *kr);
void syshax_rings_full_update(struct syshax_user *user);
/* Without the lock, after jobs retired: takes stalled in rings again. */
void syshax_rings_retry(void);

#endif /* SYSHAX_BROKER_H */
