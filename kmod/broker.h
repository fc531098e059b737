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
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/wait.h>

#include "cpl_check.h"
#include "syshax_priv.h"

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
};

struct syshax_broker {
	spinlock_t lock;
	struct list_head queue;
	DECLARE_HASHTABLE(held, 10);	/* held jobs by token */
	struct list_head engines;	/* attached, via enode */
	struct kmem_cache *job_cache;
	u64 next_token;
	u32 next_engine_id;
	unsigned int active;		/* queued or held: max_jobs_global */
	/* and per user in syshax_user.nr_jobs: max_jobs_user */
	struct syshax_job_stats st;	/* for STATS */
};

extern struct syshax_broker syshax_broker;

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

#endif /* SYSHAX_BROKER_H */
