// SPDX-License-Identifier: MIT
/* Clocks, medians and the memory rotation sets live in. */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#include "bench.h"

uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double bench_median(double *v, size_t n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define MAX_REPS 20000

int bench_time_calls(bench_call call, void *arg, double budget_s,
		     double *sec)
{
	double *t, spent = 0;
	size_t n = 0;
	int err;

	t = malloc(MAX_REPS * sizeof(*t));
	if (!t)
		return -ENOMEM;
	err = call(arg);
	while (!err && n < MAX_REPS &&
	       (n < BENCH_MIN_REPS || spent < budget_s)) {
		uint64_t t0 = bench_now_ns();

		err = call(arg);
		t[n] = (double)(bench_now_ns() - t0) * 1e-9;
		spent += t[n++];
	}
	if (!err)
		*sec = bench_median(t, n);
	free(t);
	return err;
}

size_t bench_copies(size_t bytes)
{
	size_t n;

	if (!bytes)
		return 1;
	n = (BENCH_ROTATE_BYTES + bytes - 1) / bytes;
	return n < 2 ? 2 : n;
}

void *bench_alloc(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	/* 2 MiB pages keep TLB misses out of the bandwidth figures. */
	madvise(p, bytes, MADV_HUGEPAGE);
	return p;
}

void bench_free(void *p, size_t bytes)
{
	if (p)
		munmap(p, bytes);
}
