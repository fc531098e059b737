// SPDX-License-Identifier: MIT
/*
 * Jobs timed against the bare kernels doing the same work in this process
 * (syshax-bench ffn's FFN and ATTN_DECODE parts): blocks of job rounds and
 * bare rounds in turn, so that whatever else the machine does falls on
 * both alike; medians of each.
 */
#include <errno.h>
#include <stdlib.h>

#include "bench.h"
#include "privd.h"
#include "syshax/rt.h"

int bench_job_wait(struct syshax *sh, const struct syshax_job *job,
		   uint64_t *result, uint64_t *exec_ns)
{
	struct syshax_completion cpl;
	int ret = syshax_submit(sh, job, 1);

	if (ret < 0)
		return ret;
	ret = syshax_wait(sh, &cpl, 1, 1, (int64_t)PRIVD_START_NS);
	if (ret < 0)
		return ret;
	*result = cpl.result;
	if (exec_ns)
		*exec_ns = cpl.exec_ns;
	return cpl.status;
}

/* n jobs back to back: round trips into lat, the engine's exec_ns into
 * ex (µs). */
static int job_rounds(struct syshax *sh, const struct syshax_job *job,
		      unsigned int n, double *lat, double *ex)
{
	uint64_t res, exec_ns = 0;
	int ret = 0;

	for (unsigned int i = 0; !ret && i < n; i++) {
		uint64_t t0 = bench_now_ns();

		ret = bench_job_wait(sh, job, &res, &exec_ns);
		lat[i] = (double)(bench_now_ns() - t0) / 1e3;
		ex[i] = (double)exec_ns / 1e3;
	}
	return ret;
}

int bench_job_vs_bare(struct syshax *sh, const struct syshax_job *job,
		      unsigned int rounds, bench_bare_fn bare, void *arg,
		      struct bench_jobtime *r)
{
	unsigned int per = (rounds + BENCH_JOB_BLOCKS - 1) / BENCH_JOB_BLOCKS;
	unsigned int n = per * BENCH_JOB_BLOCKS;
	double *jl = calloc(n, sizeof(*jl)), *bl = calloc(n, sizeof(*bl));
	double *el = calloc(n, sizeof(*el));
	double warm[5], warm_ex[5];
	int ret = jl && bl && el ? 0 : -ENOMEM;

	if (!ret)
		ret = job_rounds(sh, job, 5, warm, warm_ex);
	for (unsigned int k = 0; !ret && k < BENCH_JOB_BLOCKS; k++) {
		ret = job_rounds(sh, job, per, jl + k * per, el + k * per);
		if (!ret)
			ret = bare(arg, per, bl + k * per);
	}
	if (!ret) {
		r->job_us = bench_median(jl, n);
		r->exec_us = bench_median(el, n);
		r->bare_us = bench_median(bl, n);
	}
	free(jl);
	free(bl);
	free(el);
	return ret;
}
