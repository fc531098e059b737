/* SPDX-License-Identifier: MIT */
/*
 * The CPU engine's worker threads: one pool per NUMA node, each thread
 * pinned to one CPU of its node. A run wakes every worker on the same
 * function and returns when all are done; within a run the threads of one
 * node meet at node barriers (a node's phases depend only on that node's
 * data: its weight slices and its copy of the activations).
 *
 *	struct shxd_pool *p;
 *	shxd_pool_create(&conf, &p, err, sizeof(err));
 *	shxd_pool_run(p, fn, arg);	// fn(arg, w) on every worker
 *	shxd_pool_destroy(p);
 */
#ifndef SHXD_POOL_H
#define SHXD_POOL_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "syshax.h"

/* Pools (NUMA nodes) the engine uses at most. */
#define SHXD_MAX_POOLS	SYSHAX_MAX_NODES

struct shxd_pool_conf {
	/* OMP_NUM_THREADS: worker threads in all; 0: one per CPU the
	 * affinity allows (evened out across nodes). */
	unsigned int nthreads;
	/* CUSTOM_CPU_AFFINITY: "a-b:step,c,..." CPUs in order; "" or NULL:
	 * the process's affinity mask. */
	const char *affinity;
	/* Between runs, workers poll up to this long for the next before
	 * they sleep (worker_spin_us or engine_poll_us); 0: never. */
	unsigned int poll_us;
};

/* Where a worker runs, as fn sees it. */
struct shxd_worker {
	unsigned int pool;	/* index of its pool (node) */
	unsigned int tid;	/* 0..nthr-1 within the pool */
	unsigned int nthr;	/* threads of the pool */
	unsigned int gtid;	/* 0..gnthr-1 over all pools */
	unsigned int gnthr;
};

struct shxd_pool;

typedef void (*shxd_pool_fn)(void *arg, const struct shxd_worker *w);

/*
 * Picks the CPUs (the affinity list, else the allowed ones), groups them
 * by node and starts the threads. Threads must divide evenly across the
 * nodes the CPUs are on: when nthreads or affinity were given and they do
 * not, fails with -EINVAL and says why in err; by default each node gets
 * as many threads as the node with the fewest CPUs has. Other errors:
 * -EINVAL (bad affinity syntax, a CPU not allowed), -ENOMEM, -errno.
 */
int shxd_pool_create(const struct shxd_pool_conf *conf,
		     struct shxd_pool **out, char *err, size_t errlen);
void shxd_pool_destroy(struct shxd_pool *p);

unsigned int shxd_pool_count(const struct shxd_pool *p);	/* pools */
int shxd_pool_node(const struct shxd_pool *p, unsigned int pool);
unsigned int shxd_pool_threads(const struct shxd_pool *p, unsigned int pool);
/* Threads of all pools: the workers' gnthr. */
unsigned int shxd_pool_all_threads(const struct shxd_pool *p);
/* A text like "node 0: cpus 0,2 | node 1: cpus 1,3" for the log. */
void shxd_pool_describe(const struct shxd_pool *p, char *buf, size_t len);

/* Runs fn on every worker; returns when all have returned. One run at a
 * time: callers serialize (the engine holds its exec lock). */
void shxd_pool_run(struct shxd_pool *p, shxd_pool_fn fn, void *arg);

/* Waits for every thread of w's pool to reach this point of the run. */
void shxd_pool_barrier(struct shxd_pool *p, const struct shxd_worker *w);
/* The same over every thread of every pool (a phase that reads what
 * other nodes wrote). */
void shxd_pool_gbarrier(struct shxd_pool *p, const struct shxd_worker *w);

/*
 * The workers' polling window after a run whose next came gap ns after
 * it ended, as KVM fits its halt polling: kept if it caught the run,
 * twice the gap (up to max) if a longer one would have, halved if none
 * up to max would have. Decode steps come back to back and keep it;
 * sparse jobs shrink it to nothing.
 */
uint64_t shxd_pool_spin_next(uint64_t spin, uint64_t gap, uint64_t max);

/*
 * A claiming phase: the threads of w's pool take [*a, *b) of n items in
 * turn, each as soon as it is done with its last, a share of what is
 * left at a time cut at multiples of align, until shxd_pool_claim
 * returns false (every item taken). A thread the host slows down takes
 * fewer items instead of holding the others at the next barrier. Every
 * thread of the pool runs the phase to its end, and the pool's threads
 * meet at a barrier (pool or global) before the next claiming phase: the
 * barrier starts the count again.
 */
bool shxd_pool_claim(struct shxd_pool *p, const struct shxd_worker *w,
		     size_t n, size_t align, size_t *a, size_t *b);
/* The same over every thread of every pool, phases ended by global
 * barriers (work that reads no node-local copy: attention). */
bool shxd_pool_gclaim(struct shxd_pool *p, const struct shxd_worker *w,
		      size_t n, size_t align, size_t *a, size_t *b);

/*
 * Parses a CUSTOM_CPU_AFFINITY list ("0-7", "0-159:2,1,3", sysHAX's
 * syntax) into cpus[] (at most max, in order, no duplicates). Returns the
 * count or -EINVAL (syntax, a CPU >= CPU_SETSIZE, a duplicate), -E2BIG.
 */
int shxd_parse_cpulist(const char *s, int *cpus, unsigned int max);

#endif /* SHXD_POOL_H */
