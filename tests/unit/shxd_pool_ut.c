// SPDX-License-Identifier: MIT
/* syshaxd's worker pools (daemon/engine/pool.c): CPU lists, the even
 * split over nodes, runs, node barriers and claiming phases. */
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <CUnit/Basic.h>

#include "../t_cunit.h"

#include "pool.h"

static void t_cpulist(void)
{
	int c[64];

	CU_ASSERT_EQUAL(shxd_parse_cpulist("0-3", c, 64), 4);
	CU_ASSERT(c[0] == 0 && c[3] == 3);
	CU_ASSERT_EQUAL(shxd_parse_cpulist("0-10:5,1", c, 64), 4);
	CU_ASSERT(c[0] == 0 && c[1] == 5 && c[2] == 10 && c[3] == 1);
	CU_ASSERT_EQUAL(shxd_parse_cpulist("7", c, 64), 1);
	CU_ASSERT_EQUAL(c[0], 7);
	CU_ASSERT_EQUAL(shxd_parse_cpulist("", c, 64), 0);
	CU_ASSERT_EQUAL(shxd_parse_cpulist("3-1", c, 64), -EINVAL);
	CU_ASSERT_EQUAL(shxd_parse_cpulist("1,1", c, 64), -EINVAL);
	CU_ASSERT_EQUAL(shxd_parse_cpulist("0-4:0", c, 64), -EINVAL);
	CU_ASSERT_EQUAL(shxd_parse_cpulist("0-", c, 64), -EINVAL);
	CU_ASSERT_EQUAL(shxd_parse_cpulist("a", c, 64), -EINVAL);
	CU_ASSERT_EQUAL(shxd_parse_cpulist("1,", c, 64), 1);
	CU_ASSERT_EQUAL(shxd_parse_cpulist("0;1", c, 64), -EINVAL);
	CU_ASSERT_EQUAL(shxd_parse_cpulist("99999", c, 64), -EINVAL);
	CU_ASSERT_EQUAL(shxd_parse_cpulist("0-9", c, 4), -E2BIG);
}

static int allowed_cpus(void)
{
	cpu_set_t s;

	sched_getaffinity(0, sizeof(s), &s);
	return CPU_COUNT(&s);
}

static void t_refused(void)
{
	struct shxd_pool_conf conf = { .nthreads = (unsigned int)allowed_cpus() +
					       1 };
	struct shxd_pool *p;
	char err[256];

	/* More threads than CPUs cannot be spread evenly. */
	CU_ASSERT_EQUAL(shxd_pool_create(&conf, &p, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "OMP_NUM_THREADS"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "--threads"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err, ": use "));	/* the valid counts */
	conf = (struct shxd_pool_conf){ .affinity = "0-2:" };
	CU_ASSERT_EQUAL(shxd_pool_create(&conf, &p, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "CUSTOM_CPU_AFFINITY"));
	conf = (struct shxd_pool_conf){ .affinity = "1000" };
	CU_ASSERT_EQUAL(shxd_pool_create(&conf, &p, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "CPU 1000"));
	conf = (struct shxd_pool_conf){ .nthreads = 3, .affinity = "0" };
	CU_ASSERT_EQUAL(shxd_pool_create(&conf, &p, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "names 1 CPUs"));
}

static struct shxd_pool *g_pool;

struct phases {
	atomic_uint calls, phase1[64];
	atomic_int bad;
};

/* Every thread counts phase 1, meets its pool, then checks that all of
 * its pool's threads did. */
static void worker(void *arg, const struct shxd_worker *w)
{
	struct phases *ph = arg;
	cpu_set_t s;

	atomic_fetch_add(&ph->calls, 1);
	atomic_fetch_add(&ph->phase1[w->pool], 1);
	shxd_pool_barrier(g_pool, w);
	if (atomic_load(&ph->phase1[w->pool]) < w->nthr || w->tid >= w->nthr ||
	    w->gtid >= w->gnthr)
		atomic_fetch_add(&ph->bad, 1);
	sched_getaffinity(0, sizeof(s), &s);
	if (CPU_COUNT(&s) != 1)	/* pinned to one CPU */
		atomic_fetch_add(&ph->bad, 1);
}

static void runs(unsigned int poll_us)
{
	struct shxd_pool_conf conf = { .poll_us = poll_us };
	unsigned int total = 0;
	char err[256], desc[256];

	CU_ASSERT_EQUAL_FATAL(shxd_pool_create(&conf, &g_pool, err,
					       sizeof(err)), 0);
	for (unsigned int k = 0; k < shxd_pool_count(g_pool); k++)
		total += shxd_pool_threads(g_pool, k);
	CU_ASSERT(total >= 1 && total <= (unsigned int)allowed_cpus());
	shxd_pool_describe(g_pool, desc, sizeof(desc));
	CU_ASSERT_PTR_NOT_NULL(strstr(desc, "node "));
	for (int r = 0; r < 200; r++) {
		struct phases ph;

		memset(&ph, 0, sizeof(ph));
		shxd_pool_run(g_pool, worker, &ph);
		CU_ASSERT_EQUAL(atomic_load(&ph.calls), total);
		CU_ASSERT_EQUAL(atomic_load(&ph.bad), 0);
		/* Polling workers: some runs come while they still poll,
		 * some after they went to sleep. */
		if (poll_us && r % 50 == 49)
			usleep(poll_us * 2);
	}
	shxd_pool_destroy(g_pool);
}

static void t_runs(void)
{
	runs(0);
}

static void t_runs_polled(void)
{
	runs(2000);
}

#define US	1000ULL

/* The polling window after each gap between runs. */
static void t_spin_window(void)
{
	uint64_t spin = 500 * US;
	int n;

	/* Caught: kept. Missed by a little: twice the gap, up to max. */
	CU_ASSERT_EQUAL(shxd_pool_spin_next(500 * US, 100 * US, 500 * US),
			500 * US);
	CU_ASSERT_EQUAL(shxd_pool_spin_next(100 * US, 150 * US, 500 * US),
			300 * US);
	CU_ASSERT_EQUAL(shxd_pool_spin_next(100 * US, 400 * US, 500 * US),
			500 * US);
	/* Sparse runs: halved each time, to nothing. */
	for (n = 0; spin && n < 64; n++)
		spin = shxd_pool_spin_next(spin, 2000 * US, 500 * US);
	CU_ASSERT_EQUAL(spin, 0);
	CU_ASSERT(n > 10);
	/* Back to back again: one gap brings it back. */
	CU_ASSERT_EQUAL(shxd_pool_spin_next(0, 150 * US, 500 * US), 300 * US);
	/* No polling asked for: never any. */
	CU_ASSERT_EQUAL(shxd_pool_spin_next(0, 10 * US, 0), 0);
}

/* Items of a claiming phase: not a multiple of the alignment. */
#define CLAIM_N		1000
#define CLAIM_ALIGN	32
#define CLAIM_PHASES	4	/* the last over all pools */

struct claims {
	atomic_uint hits[CLAIM_PHASES][SHXD_MAX_POOLS][CLAIM_N];
	atomic_uint slow_items, slow_threads;
	atomic_int bad;
};

static void claim_phase(struct claims *c, const struct shxd_worker *w,
			int phase)
{
	bool global = phase == CLAIM_PHASES - 1;
	size_t a, b, taken = 0;

	while (global ? shxd_pool_gclaim(g_pool, w, CLAIM_N, CLAIM_ALIGN, &a, &b) :
			shxd_pool_claim(g_pool, w, CLAIM_N, CLAIM_ALIGN, &a, &b)) {
		if (a % CLAIM_ALIGN || a >= b || b > CLAIM_N ||
		    (b % CLAIM_ALIGN && b != CLAIM_N))
			atomic_fetch_add(&c->bad, 1);
		for (size_t i = a; i < b && b <= CLAIM_N; i++)
			atomic_fetch_add(&c->hits[phase][global ? 0 : w->pool][i],
					 1);
		taken += b - a;
	}
	if (phase == 2 && !w->tid && w->nthr > 1) {
		atomic_fetch_add(&c->slow_items, (unsigned int)taken);
		atomic_fetch_add(&c->slow_threads, 1);
	}
}

/* Three phases of each pool, the first two ended by a node and a global
 * barrier; in the third each pool's first thread comes 50 ms late; after
 * a global barrier one phase over all pools, ended by the run's end. */
static void claimer(void *arg, const struct shxd_worker *w)
{
	struct claims *c = arg;

	claim_phase(c, w, 0);
	shxd_pool_barrier(g_pool, w);
	claim_phase(c, w, 1);
	shxd_pool_gbarrier(g_pool, w);
	if (!w->tid)
		usleep(50000);
	claim_phase(c, w, 2);
	shxd_pool_gbarrier(g_pool, w);
	claim_phase(c, w, 3);
}

static void t_claims(void)
{
	struct shxd_pool_conf conf = { 0 };
	static struct claims c;
	char err[256];

	CU_ASSERT_EQUAL_FATAL(shxd_pool_create(&conf, &g_pool, err,
					       sizeof(err)), 0);
	for (int r = 0; r < 20; r++) {
		unsigned int wrong = 0;

		memset(&c, 0, sizeof(c));
		shxd_pool_run(g_pool, claimer, &c);
		CU_ASSERT_EQUAL(atomic_load(&c.bad), 0);
		/* Every item of every phase once in each pool (once in
		 * all for the global one): the barriers and the run's start
		 * begin the count again. */
		for (int ph = 0; ph < CLAIM_PHASES; ph++)
			for (unsigned int p = 0; p < shxd_pool_count(g_pool); p++)
				for (int i = 0; i < CLAIM_N; i++)
					wrong += atomic_load(&c.hits[ph][p][i]) !=
						 (ph < CLAIM_PHASES - 1 || !p);
		CU_ASSERT_EQUAL(wrong, 0);
		/* The late threads find the others took (nearly) all: far
		 * less than the even share a static split gives them. */
		if (atomic_load(&c.slow_threads))
			CU_ASSERT(atomic_load(&c.slow_items) <
				  atomic_load(&c.slow_threads) * CLAIM_N / 2 /
				  shxd_pool_threads(g_pool, 0));
	}
	shxd_pool_destroy(g_pool);
}

int main(void)
{
	static const struct t_test tests[] = {
		{ "CUSTOM_CPU_AFFINITY lists", t_cpulist },
		{ "settings refused with a reason", t_refused },
		{ "runs and node barriers", t_runs },
		{ "runs with polling workers (engine_poll_us)", t_runs_polled },
		{ "the polling window follows the gaps between runs",
		  t_spin_window },
		{ "claiming phases: every item once, late threads take less",
		  t_claims },
	};

	return T_RUN_SUITE("shxd_pool", NULL, NULL, tests);
}
