// SPDX-License-Identifier: MIT
/*
 * syshax-bench's shared helpers: medians, rotation sizes, the pinned
 * thread team, the call timer and the machine-limit probes.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>

#include "bench.h"
#include "../t_cunit.h"

static void t_median(void)
{
	double odd[] = { 5, 1, 3 }, even[] = { 4, 1, 3, 2 }, one[] = { 7 };

	CU_ASSERT_DOUBLE_EQUAL(bench_median(odd, 3), 3, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(bench_median(even, 4), 2.5, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(bench_median(one, 1), 7, 1e-12);
	CU_ASSERT_DOUBLE_EQUAL(bench_median(one, 0), 0, 1e-12);
}

static void t_copies(void)
{
	size_t small = 1 << 20, big = 3ull << 30;

	/* Enough copies to cover the rotation, and never fewer than two. */
	CU_ASSERT(bench_copies(small) * small >= BENCH_ROTATE_BYTES);
	CU_ASSERT((bench_copies(small) - 1) * small < BENCH_ROTATE_BYTES);
	CU_ASSERT_EQUAL(bench_copies(big), 2);
	CU_ASSERT_EQUAL(bench_copies(BENCH_ROTATE_BYTES / 3 + 1), 3);
}

#define RUNS 2000

struct team_probe {
	atomic_int calls[64];
	int cpu[64];
	int nthr_seen[64];
};

static void probe(void *arg, int tid, int nthr)
{
	struct team_probe *p = arg;

	atomic_fetch_add(&p->calls[tid], 1);
	p->cpu[tid] = sched_getcpu();
	p->nthr_seen[tid] = nthr;
}

static void t_team(void)
{
	int nthr = bench_ncpus() > 1 ? 2 : 1;
	struct team_probe p;
	struct bench_team *team;
	cpu_set_t before, after;
	int i;

	memset(&p, 0, sizeof(p));
	CU_ASSERT_EQUAL_FATAL(sched_getaffinity(0, sizeof(before), &before), 0);
	CU_ASSERT_EQUAL_FATAL(bench_team_new(&team, nthr), 0);
	for (i = 0; i < RUNS; i++)
		bench_team_run(team, probe, &p);
	/* Every thread ran every call, each on a CPU of its own. */
	for (i = 0; i < nthr; i++) {
		CU_ASSERT_EQUAL(atomic_load(&p.calls[i]), RUNS);
		CU_ASSERT_EQUAL(p.nthr_seen[i], nthr);
	}
	CU_ASSERT_EQUAL(atomic_load(&p.calls[nthr]), 0);
	if (nthr == 2)
		CU_ASSERT_NOT_EQUAL(p.cpu[0], p.cpu[1]);
	bench_team_free(team);
	/* The caller gets its affinity back. */
	CU_ASSERT_EQUAL(sched_getaffinity(0, sizeof(after), &after), 0);
	CU_ASSERT(CPU_EQUAL(&before, &after));
	CU_ASSERT_EQUAL(bench_team_new(&team, 0), -EINVAL);
	CU_ASSERT_EQUAL(bench_team_new(&team, bench_ncpus() + 1), -ERANGE);
}

static int g_calls;

static int count_call(void *arg)
{
	(void)arg;
	g_calls++;
	return 0;
}

static int fail_third(void *arg)
{
	(void)arg;
	return ++g_calls == 3 ? -EIO : 0;
}

static void t_time_calls(void)
{
	double sec = -1;

	g_calls = 0;
	CU_ASSERT_EQUAL(bench_time_calls(count_call, NULL, 0, &sec), 0);
	/* One warm-up call, then the minimum of timed ones. */
	CU_ASSERT_EQUAL(g_calls, 1 + BENCH_MIN_REPS);
	CU_ASSERT(sec >= 0 && sec < 0.01);
	g_calls = 0;
	CU_ASSERT_EQUAL(bench_time_calls(fail_third, NULL, 0, &sec), -EIO);
	CU_ASSERT_EQUAL(g_calls, 3);
}

/* The matched read probe: any size up to its buffer, nothing else. */
static void reader_checks(double *sustained)
{
	struct bench_reader *r;
	double sec = 0;

	CU_ASSERT_EQUAL_FATAL(bench_reader_new(&r), 0);
	CU_ASSERT_EQUAL(bench_reader_time(r, 3 << 20, 1, 0, &sec), 0);
	/* 3 MiB at under 1 GB/s would mean the probe reads something else. */
	CU_ASSERT(sec > 0 && sec < 3e-3);
	CU_ASSERT_EQUAL(bench_reader_time(r, 0, 1, 0, &sec), -EINVAL);
	CU_ASSERT_EQUAL(bench_reader_time(r, (1ull << 30) + 1, 1, 0, &sec),
			-EINVAL);
	CU_ASSERT_EQUAL(bench_reader_sustained(r, 1, sustained), 0);
	bench_reader_free(r);
}

static void t_limits(void)
{
	const char *isa = NULL;
	double bw = 0, gops = 0;
	int err;

	reader_checks(&bw);
	/* Any machine that runs this streams more than 1 GB/s. */
	CU_ASSERT(bw > 1);
	err = bench_dot_peak(1, &gops, &isa);
	if (err == -ENOTSUP) {
		fprintf(stderr, "\nSKIP: no integer dot-product instruction\n");
		return;
	}
	CU_ASSERT_EQUAL(err, 0);
	CU_ASSERT(gops > 1);
	CU_ASSERT_PTR_NOT_NULL(isa);
}

static const struct t_test g_tests[] = {
	{ "median", t_median },
	{ "rotation copies", t_copies },
	{ "pinned team", t_team },
	{ "call timer", t_time_calls },
	{ "machine limits", t_limits },
};

int main(void)
{
	return T_RUN_SUITE("bench", NULL, NULL, g_tests);
}
