// SPDX-License-Identifier: MIT
/* NUMA worker pools: CPU choice, pinned threads, runs and node barriers. */
#include "pool.h"

#include <ctype.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <errno.h>
#include <numa.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct worker {
	pthread_t tid;
	struct shxd_pool *pool;
	struct shxd_worker w;
	int cpu;
	bool started;
};

/*
 * A barrier: threads spin a little (the phases of one batch are short
 * and the CPUs are the batch's anyway), then sleep on a futex.
 */
struct barrier {
	_Alignas(64) atomic_uint arrived;	/* at the current barrier */
	atomic_uint phase;			/* barriers passed */
	atomic_uint sleepers;			/* in futex_wait on phase */
};

struct node_pool {
	int node;
	unsigned int nthr;
	struct barrier bar;
	/* The next item of the pool's claiming phase; 0 at every barrier
	 * the pool's threads pass and at the start of a run. */
	_Alignas(64) atomic_size_t next;
};

/* How long a thread spins at a barrier before it sleeps. */
#define BARRIER_SPIN_NS	200000

static void futex_wait(atomic_uint *word, unsigned int val)
{
	syscall(SYS_futex, (unsigned int *)word, FUTEX_WAIT_PRIVATE, val,
		NULL, NULL, 0);
}

static void futex_wake_all(atomic_uint *word)
{
	syscall(SYS_futex, (unsigned int *)word, FUTEX_WAKE_PRIVATE, INT_MAX,
		NULL, NULL, 0);
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

struct shxd_pool {
	unsigned int npools, nthreads;
	struct node_pool pools[SHXD_MAX_POOLS];
	struct barrier all;		/* every worker of every pool */
	/* The global claiming phase's next item (see node_pool's). */
	_Alignas(64) atomic_size_t gnext;
	struct worker *workers;

	pthread_mutex_t lock;
	pthread_cond_t wake;		/* workers: a new run or stop */
	pthread_cond_t done;		/* caller: the last worker finished */
	unsigned long gen;		/* runs started */
	unsigned int running;		/* workers still in this run */
	/* Workers poll spin_ns for the next run before they sleep, a window
	 * shxd_pool_spin_next fits to the gaps between runs, up to spin_max
	 * (conf poll_us); end_ns: when the last run's last worker finished. */
	uint64_t spin_ns, spin_max_ns, end_ns;
	bool stop;
	shxd_pool_fn fn;
	void *arg;
};

static void errf(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

int shxd_parse_cpulist(const char *s, int *cpus, unsigned int max)
{
	unsigned char seen[CPU_SETSIZE / 8] = { 0 };
	unsigned int n = 0;

	while (*s) {
		unsigned long a, b, step = 1;
		char *end;

		if (!isdigit((unsigned char)*s))
			return -EINVAL;
		a = strtoul(s, &end, 10);
		b = a;
		s = end;
		if (*s == '-') {
			if (!isdigit((unsigned char)s[1]))
				return -EINVAL;
			b = strtoul(s + 1, &end, 10);
			s = end;
			if (*s == ':') {
				if (!isdigit((unsigned char)s[1]))
					return -EINVAL;
				step = strtoul(s + 1, &end, 10);
				s = end;
			}
		}
		if (b < a || !step || b >= CPU_SETSIZE)
			return -EINVAL;
		for (unsigned long c = a; c <= b; c += step) {
			if (seen[c / 8] & (1U << (c % 8)))
				return -EINVAL;
			seen[c / 8] |= (unsigned char)(1U << (c % 8));
			if (n == max)
				return -E2BIG;
			cpus[n++] = (int)c;
		}
		if (*s == ',')
			s++;
		else if (*s)
			return -EINVAL;
	}
	return (int)n;
}

/*
 * The node whose memory a CPU's worker uses: its own, or for a CPU of a
 * node without memory (a memoryless node) the nearest node that has some,
 * whose pool it then joins.
 */
static int cpu_node(int cpu)
{
	int node = numa_available() < 0 ? 0 : numa_node_of_cpu(cpu);
	int n, best = -1;

	if (node < 0)
		return 0;
	if (numa_node_size64(node, NULL) > 0)
		return node;
	for (n = 0; n <= numa_max_node(); n++)
		if (n != node && numa_node_size64(n, NULL) > 0 &&
		    (best < 0 || numa_distance(node, n) <
				 numa_distance(node, best)))
			best = n;
	return best < 0 ? node : best;
}

/*
 * Polls *word until it reads other than old, for up to ns (0: not at
 * all): back-to-back jobs then find the workers awake, where a sleeping
 * vCPU takes tens of µs to wake. Yields, so that the broker's and the
 * engine's own threads still get the CPUs the workers are pinned to.
 */
static void spin_until(const unsigned long *word, unsigned long old,
		       uint64_t ns)
{
	uint64_t until;

	if (!ns)
		return;
	until = mono_ns() + ns;
	while (__atomic_load_n(word, __ATOMIC_ACQUIRE) == old &&
	       mono_ns() < until)
		sched_yield();
}

uint64_t shxd_pool_spin_next(uint64_t spin, uint64_t gap, uint64_t max)
{
	if (gap <= spin)
		return spin;		/* the workers were still polling */
	if (gap <= max)
		return 2 * gap < max ? 2 * gap : max;
	return spin / 2;		/* polling longer would not have helped */
}

static void *worker_main(void *arg)
{
	struct worker *wk = arg;
	struct shxd_pool *p = wk->pool;
	unsigned long seen = 0;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(wk->cpu, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	/* Scratch the worker touches first lands on its node. */
	if (numa_available() >= 0)
		numa_set_localalloc();
	for (;;) {
		shxd_pool_fn fn;
		void *fa;

		spin_until(&p->gen, seen,
			   __atomic_load_n(&p->spin_ns, __ATOMIC_RELAXED));
		pthread_mutex_lock(&p->lock);
		while (!p->stop && p->gen == seen)
			pthread_cond_wait(&p->wake, &p->lock);
		if (p->stop) {
			pthread_mutex_unlock(&p->lock);
			return NULL;
		}
		seen = p->gen;
		fn = p->fn;
		fa = p->arg;
		pthread_mutex_unlock(&p->lock);

		fn(fa, &wk->w);

		pthread_mutex_lock(&p->lock);
		if (--p->running == 0) {
			p->end_ns = mono_ns();
			pthread_cond_signal(&p->done);
		}
		pthread_mutex_unlock(&p->lock);
	}
}

/* The CPUs to use, in order: the affinity list, else the allowed set. */
static int pick_cpus(const struct shxd_pool_conf *conf, int *cpus,
		     char *err, size_t errlen)
{
	cpu_set_t allowed;
	int n = 0;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return -errno;
	if (conf->affinity && *conf->affinity) {
		n = shxd_parse_cpulist(conf->affinity, cpus, CPU_SETSIZE);
		if (n <= 0) {
			errf(err, errlen, "CUSTOM_CPU_AFFINITY '%s': not a CPU "
			     "list like 0-7 or 0-159:2,1 (no duplicates)",
			     conf->affinity);
			return -EINVAL;
		}
		for (int i = 0; i < n; i++) {
			if (!CPU_ISSET(cpus[i], &allowed)) {
				errf(err, errlen, "CUSTOM_CPU_AFFINITY: CPU %d "
				     "is not available to this process",
				     cpus[i]);
				return -EINVAL;
			}
		}
		return n;
	}
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &allowed))
			cpus[n++] = c;
	return n;
}

/* The thread counts that spread evenly: np, 2np, ... up to min CPUs each. */
static void valid_counts(unsigned int np, unsigned int min, char *s,
			 size_t len)
{
	size_t at = 0;

	if (min > 4) {
		snprintf(s, len, "a multiple of %u up to %u", np, np * min);
		return;
	}
	for (unsigned int k = 1; k <= min && at < len; k++)
		at += (size_t)snprintf(s + at, len - at, "%s%u",
				       k == 1 ? "" : k == min ? " or " : ", ",
				       np * k);
}

/*
 * Takes per node the first `each` CPUs of the list in list order; with
 * no count given, `each` is the smallest node's CPU count.
 */
static int assign(struct shxd_pool *p, const struct shxd_pool_conf *conf,
		  const int *cpus, int ncpus, int *chosen, char *err,
		  size_t errlen)
{
	unsigned int per[SHXD_MAX_POOLS] = { 0 }, each, min = ~0U;
	bool given = conf->nthreads || (conf->affinity && *conf->affinity);
	unsigned int want;
	int i, n = 0;

	for (i = 0; i < ncpus; i++) {
		int node = cpu_node(cpus[i]);
		unsigned int k;

		for (k = 0; k < p->npools && p->pools[k].node != node; k++)
			;
		if (k == p->npools) {
			if (k == SHXD_MAX_POOLS) {
				errf(err, errlen, "more than %d NUMA nodes",
				     SHXD_MAX_POOLS);
				return -EINVAL;
			}
			p->pools[k].node = node;
			p->npools++;
		}
		per[k]++;
	}
	for (unsigned int k = 0; k < p->npools; k++)
		min = per[k] < min ? per[k] : min;
	want = conf->nthreads ? conf->nthreads : (unsigned int)ncpus;
	if (conf->nthreads && !(conf->affinity && *conf->affinity)) {
		/* A count alone: spread over the nodes, as many on each. */
		if (want % p->npools || want / p->npools > min) {
			char use[64];

			valid_counts(p->npools, min, use, sizeof(use));
			errf(err, errlen, "%u threads (--threads, "
			     "OMP_NUM_THREADS) do not spread evenly over the "
			     "%u NUMA node(s) of the allowed CPUs (the "
			     "smallest has %u usable CPU(s), one thread each): "
			     "use %s", want, p->npools, min, use);
			return -EINVAL;
		}
		each = want / p->npools;
	} else if (given) {
		if ((unsigned int)ncpus < want) {
			errf(err, errlen, "OMP_NUM_THREADS=%u but "
			     "CUSTOM_CPU_AFFINITY names %d CPUs", want, ncpus);
			return -EINVAL;
		}
		if (want % p->npools || want / p->npools > min) {
			errf(err, errlen, "%u threads do not divide evenly "
			     "over the %u NUMA nodes of CUSTOM_CPU_AFFINITY "
			     "(the smallest has %u of its CPUs): give each node "
			     "the same number of CPUs", want, p->npools, min);
			return -EINVAL;
		}
		each = want / p->npools;
	} else {
		each = min;
	}
	for (unsigned int k = 0; k < p->npools; k++) {
		unsigned int got = 0;

		for (i = 0; i < ncpus && got < each; i++) {
			if (cpu_node(cpus[i]) != p->pools[k].node)
				continue;
			chosen[n++] = cpus[i];
			got++;
		}
		p->pools[k].nthr = each;
	}
	return n;
}

int shxd_pool_create(const struct shxd_pool_conf *conf,
		     struct shxd_pool **out, char *err, size_t errlen)
{
	struct shxd_pool *p;
	int *cpus, *chosen = NULL, n, ret;
	unsigned int g = 0;

	*err = '\0';
	p = calloc(1, sizeof(*p));
	cpus = calloc(CPU_SETSIZE, sizeof(*cpus));
	if (!p || !cpus) {
		ret = -ENOMEM;
		goto err;
	}
	n = pick_cpus(conf, cpus, err, errlen);
	if (n <= 0) {
		ret = n ? n : -EINVAL;
		goto err;
	}
	chosen = calloc((size_t)n, sizeof(*chosen));
	if (!chosen) {
		ret = -ENOMEM;
		goto err;
	}
	n = assign(p, conf, cpus, n, chosen, err, errlen);
	if (n <= 0) {
		ret = n ? n : -EINVAL;
		goto err;
	}
	p->nthreads = (unsigned int)n;
	p->spin_max_ns = (uint64_t)conf->poll_us * 1000;
	p->spin_ns = p->spin_max_ns;
	p->workers = calloc((size_t)n, sizeof(*p->workers));
	if (!p->workers) {
		ret = -ENOMEM;
		goto err;
	}
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	pthread_cond_init(&p->done, NULL);
	for (unsigned int k = 0; k < p->npools; k++) {
		for (unsigned int t = 0; t < p->pools[k].nthr; t++, g++) {
			struct worker *wk = &p->workers[g];

			wk->pool = p;
			wk->cpu = chosen[g];
			wk->w = (struct shxd_worker){
				.pool = k, .tid = t, .nthr = p->pools[k].nthr,
				.gtid = g, .gnthr = p->nthreads,
			};
		}
	}
	for (g = 0; g < p->nthreads; g++) {
		ret = -pthread_create(&p->workers[g].tid, NULL, worker_main,
				      &p->workers[g]);
		if (ret) {
			errf(err, errlen, "worker thread: %s", strerror(-ret));
			goto err;
		}
		p->workers[g].started = true;
	}
	free(cpus);
	free(chosen);
	*out = p;
	return 0;
err:
	free(cpus);
	free(chosen);
	if (p && p->workers)
		shxd_pool_destroy(p);
	else
		free(p);
	return ret;
}

void shxd_pool_destroy(struct shxd_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);
	for (unsigned int g = 0; g < p->nthreads; g++)
		if (p->workers[g].started)
			pthread_join(p->workers[g].tid, NULL);
	pthread_cond_destroy(&p->wake);
	pthread_cond_destroy(&p->done);
	pthread_mutex_destroy(&p->lock);
	free(p->workers);
	free(p);
}

unsigned int shxd_pool_count(const struct shxd_pool *p)
{
	return p->npools;
}

int shxd_pool_node(const struct shxd_pool *p, unsigned int pool)
{
	return p->pools[pool].node;
}

unsigned int shxd_pool_threads(const struct shxd_pool *p, unsigned int pool)
{
	return p->pools[pool].nthr;
}

unsigned int shxd_pool_all_threads(const struct shxd_pool *p)
{
	return p->nthreads;
}

void shxd_pool_describe(const struct shxd_pool *p, char *buf, size_t len)
{
	size_t o = 0;
	unsigned int g = 0;

	buf[0] = '\0';
	for (unsigned int k = 0; k < p->npools && o < len; k++) {
		o += (size_t)snprintf(buf + o, len - o, "%snode %d: cpus",
				      k ? " | " : "", p->pools[k].node);
		for (unsigned int t = 0; t < p->pools[k].nthr && o < len;
		     t++, g++)
			o += (size_t)snprintf(buf + o, len - o, "%s%d",
					      t ? "," : " ",
					      p->workers[g].cpu);
	}
}

/* Pool i's claim counter, or every counter (i == SHXD_MAX_POOLS). */
static void claims_reset(struct shxd_pool *p, unsigned int i)
{
	for (unsigned int k = 0; k < p->npools; k++)
		if (i == SHXD_MAX_POOLS || i == k)
			atomic_store_explicit(&p->pools[k].next, 0,
					      memory_order_relaxed);
	if (i == SHXD_MAX_POOLS)
		atomic_store_explicit(&p->gnext, 0, memory_order_relaxed);
}

void shxd_pool_run(struct shxd_pool *p, shxd_pool_fn fn, void *arg)
{
	pthread_mutex_lock(&p->lock);
	if (p->end_ns)
		__atomic_store_n(&p->spin_ns,
				 shxd_pool_spin_next(p->spin_ns,
						     mono_ns() - p->end_ns,
						     p->spin_max_ns),
				 __ATOMIC_RELAXED);
	p->fn = fn;
	p->arg = arg;
	p->running = p->nthreads;
	claims_reset(p, SHXD_MAX_POOLS);
	__atomic_store_n(&p->gen, p->gen + 1, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&p->wake);
	/* The caller sleeps: polling here would take turns with a worker
	 * on its CPU (ATTN_DECODE ran 100 us slower so). */
	while (p->running)
		pthread_cond_wait(&p->done, &p->lock);
	pthread_mutex_unlock(&p->lock);
}

/*
 * Waits until n threads have arrived at b; the last to arrive resets the
 * claim counters of pool reset (all: SHXD_MAX_POOLS) before it lets the
 * others go, so that none claims from the phase before.
 */
static void barrier_wait(struct shxd_pool *p, struct barrier *b,
			 unsigned int n, unsigned int reset)
{
	unsigned int ph;
	uint64_t until = 0;

	if (n < 2) {
		claims_reset(p, reset);
		return;
	}
	ph = atomic_load_explicit(&b->phase, memory_order_acquire);
	if (atomic_fetch_add_explicit(&b->arrived, 1,
				      memory_order_acq_rel) + 1 == n) {
		/* Reset before the release: a thread past this barrier
		 * arrives at the next one only after it sees the phase. */
		atomic_store_explicit(&b->arrived, 0, memory_order_relaxed);
		claims_reset(p, reset);
		atomic_fetch_add(&b->phase, 1);
		if (atomic_load(&b->sleepers))
			futex_wake_all(&b->phase);
		return;
	}
	for (unsigned int i = 0;; i++) {
		if (atomic_load_explicit(&b->phase, memory_order_acquire) != ph)
			return;
		cpu_relax();
		if (i % 64)
			continue;
		if (!until)
			until = mono_ns() + BARRIER_SPIN_NS;
		else if (mono_ns() > until)
			break;
	}
	/* sleepers is raised before phase is read again, and read after
	 * phase is bumped (both sequentially consistent): no lost wake-up. */
	atomic_fetch_add(&b->sleepers, 1);
	while (atomic_load(&b->phase) == ph)
		futex_wait(&b->phase, ph);
	atomic_fetch_sub(&b->sleepers, 1);
}

void shxd_pool_barrier(struct shxd_pool *p, const struct shxd_worker *w)
{
	barrier_wait(p, &p->pools[w->pool].bar, w->nthr, w->pool);
}

void shxd_pool_gbarrier(struct shxd_pool *p, const struct shxd_worker *w)
{
	barrier_wait(p, &p->all, w->gnthr, SHXD_MAX_POOLS);
}

static bool claim(atomic_size_t *next, size_t n, size_t align,
		  unsigned int threads, size_t *a, size_t *b)
{
	size_t i = atomic_load_explicit(next, memory_order_relaxed), c;

	/* Guided: a thread's share of what is left, so that the last
	 * chunks, the ones a thread may wait for at the barrier, are short,
	 * and the first long: each chunk restarts the kernel's weight
	 * streams, which a short phase pays for (docs/engine.md). */
	do {
		if (i >= n)
			return false;
		c = (n - i) / threads;
		c = c < align ? align : (c + align - 1) / align * align;
		c = c < n - i ? c : n - i;
	} while (!atomic_compare_exchange_weak_explicit(next, &i, i + c,
							memory_order_relaxed,
							memory_order_relaxed));
	*a = i;
	*b = i + c;
	return true;
}

bool shxd_pool_claim(struct shxd_pool *p, const struct shxd_worker *w,
		     size_t n, size_t align, size_t *a, size_t *b)
{
	return claim(&p->pools[w->pool].next, n, align, w->nthr, a, b);
}

bool shxd_pool_gclaim(struct shxd_pool *p, const struct shxd_worker *w,
		      size_t n, size_t align, size_t *a, size_t *b)
{
	return claim(&p->gnext, n, align, w->gnthr, a, b);
}
