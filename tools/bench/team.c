// SPDX-License-Identifier: MIT
/*
 * A team of pinned threads that run one function together per call. The
 * caller is thread 0; the others spin on a generation counter so that a
 * call costs a cache-line hand-off, not a futex wake-up (ggml's and
 * oneDNN's pools also spin between calls).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "bench.h"
#include "shxk.h"

struct bench_team {
	int nthr;
	pthread_t *tids;
	cpu_set_t saved;	/* the caller's affinity before the team */
	_Alignas(64) atomic_uint gen;	/* bumped to start a call */
	_Alignas(64) atomic_int done;	/* workers finished with this call */
	bench_fn fn;
	void *arg;
	int stop;
	int cpus[];
};

struct worker {
	struct bench_team *team;
	int tid;
};

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

static void one_cpu(cpu_set_t *set, int cpu)
{
	CPU_ZERO(set);
	CPU_SET(cpu, set);
}

static void *worker_main(void *p)
{
	struct worker w = *(struct worker *)p;
	struct bench_team *t = w.team;
	unsigned seen = 0;

	free(p);
	for (;;) {
		unsigned g;

		while ((g = atomic_load_explicit(&t->gen,
						 memory_order_acquire)) == seen)
			cpu_relax();
		seen = g;
		if (t->stop)
			return NULL;
		t->fn(t->arg, w.tid, t->nthr);
		atomic_fetch_add_explicit(&t->done, 1, memory_order_release);
	}
}

int bench_ncpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	return CPU_COUNT(&set);
}

const char *bench_cpu(void)
{
	static char line[256];

	if (!line[0])
		shxk_cpu_describe(line, sizeof(line));
	return line;
}

int bench_affinity_save(cpu_set_t *saved, int pin)
{
	cpu_set_t set;
	int cpu;

	if (sched_getaffinity(0, sizeof(*saved), saved))
		return -errno;
	if (!pin)
		return 0;
	for (cpu = 0; cpu < CPU_SETSIZE && !CPU_ISSET(cpu, saved); cpu++)
		;
	if (cpu == CPU_SETSIZE)
		return -ERANGE;
	one_cpu(&set, cpu);
	return -pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

void bench_affinity_restore(const cpu_set_t *saved)
{
	pthread_setaffinity_np(pthread_self(), sizeof(*saved), saved);
}

int bench_team_new(struct bench_team **team, int nthr)
{
	struct bench_team *t;
	pthread_attr_t attr;
	cpu_set_t set;
	int i, n = 0, err = 0;

	if (nthr < 1)
		return -EINVAL;
	t = calloc(1, sizeof(*t) + (size_t)nthr * sizeof(int));
	if (!t)
		return -ENOMEM;
	t->nthr = nthr;
	if (sched_getaffinity(0, sizeof(t->saved), &t->saved)) {
		free(t);
		return -errno;
	}
	for (i = 0; i < CPU_SETSIZE && n < nthr; i++)
		if (CPU_ISSET(i, &t->saved))
			t->cpus[n++] = i;
	if (n < nthr) {
		free(t);
		return -ERANGE;
	}
	t->tids = calloc((size_t)nthr, sizeof(*t->tids));
	if (!t->tids) {
		free(t);
		return -ENOMEM;
	}
	one_cpu(&set, t->cpus[0]);
	err = -pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (err)
		goto err_pin;
	pthread_attr_init(&attr);
	for (i = 1; i < nthr; i++) {
		struct worker *w = malloc(sizeof(*w));

		if (!w) {
			err = -ENOMEM;
			break;
		}
		w->team = t;
		w->tid = i;
		/* Pinned from birth: a worker never runs on a shared core. */
		one_cpu(&set, t->cpus[i]);
		err = -pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
		if (!err)
			err = -pthread_create(&t->tids[i], &attr, worker_main, w);
		if (err) {
			free(w);
			break;
		}
	}
	pthread_attr_destroy(&attr);
	if (err) {
		t->nthr = i;	/* the workers to stop and join */
		bench_team_free(t);
		return err;
	}
	*team = t;
	return 0;

err_pin:
	free(t->tids);
	free(t);
	return err;
}

void bench_team_run(struct bench_team *t, bench_fn fn, void *arg)
{
	t->fn = fn;
	t->arg = arg;
	atomic_store_explicit(&t->done, 0, memory_order_relaxed);
	atomic_fetch_add_explicit(&t->gen, 1, memory_order_release);
	fn(arg, 0, t->nthr);
	while (atomic_load_explicit(&t->done, memory_order_acquire) <
	       t->nthr - 1)
		cpu_relax();
}

void bench_team_free(struct bench_team *t)
{
	int i;

	if (!t)
		return;
	t->stop = 1;
	atomic_fetch_add_explicit(&t->gen, 1, memory_order_release);
	for (i = 1; i < t->nthr; i++)
		pthread_join(t->tids[i], NULL);
	pthread_setaffinity_np(pthread_self(), sizeof(t->saved), &t->saved);
	free(t->tids);
	free(t);
}
