// SPDX-License-Identifier: MIT
/*
 * Queue limits: with no engine a context fills up, a SUBMIT is cut short
 * (partial count), the next one fails with -EAGAIN; once an engine runs and
 * completions are reaped, submitting works again. Past the global limit a
 * fresh context cannot queue either.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "t.h"

/* A prime batch: no power-of-two limit is a multiple of it, so the batch
 * that reaches the limit is always cut short. */
#define BATCH		61
#define MAX_JOBS	(1u << 20)
#define MAX_CTX		64

/* NOPs with user_data base, base + 1, ... until the context is full.
 * Returns how many were queued; *last gets the last SUBMIT's return. */
static unsigned int fill(struct syshax *sh, uint64_t base, int *last)
{
	struct syshax_job jobs[BATCH];
	unsigned int queued = 0, i;
	int r = 0;

	while (queued < MAX_JOBS) {
		for (i = 0; i < BATCH; i++)
			syshax_job_init(&jobs[i], SYSHAX_OP_NOP,
					base + queued + i);
		r = syshax_submit(sh, jobs, BATCH);
		if (r <= 0)
			break;
		queued += (unsigned int)r;
		if (r < BATCH)
			break;
	}
	*last = r;
	return queued;
}

/* Reaps n completions with user_data base..base+n-1, each once, status 0. */
static void drain(struct syshax *sh, uint64_t base, unsigned int n)
{
	unsigned char *seen = calloc(n ? n : 1, 1);
	struct t_tally tally = { 0 };
	unsigned int i;

	CU_ASSERT_FATAL(seen != NULL);
	CU_ASSERT_EQUAL(t_reap(sh, base, n, seen, n, 60 * T_SEC, &tally),
			(int)n);
	CU_ASSERT_EQUAL(tally.ok, n);
	for (i = 0; i < n; i++)
		if (seen[i] != 1)
			break;
	CU_ASSERT_EQUAL(i, n);
	free(seen);
}

static void stop_engine(void)
{
	int status;

	CU_ASSERT_EQUAL_FATAL(t_engine_stop(SIGTERM, &status), 0);
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void t_queue_full(void)
{
	struct syshax_stats_args st;
	struct syshax_job job;
	struct syshax *sh;
	unsigned int queued;
	int last;

	stop_engine();
	sh = t_open();
	CU_ASSERT_FATAL(sh != NULL);
	queued = fill(sh, 0, &last);
	printf("\n  context limit reached after %u jobs ", queued);
	CU_ASSERT(queued > 0 && queued < MAX_JOBS);
	/* The last SUBMIT was cut short, the next fails. */
	CU_ASSERT(last > 0 && last < BATCH);
	syshax_job_init(&job, SYSHAX_OP_NOP, queued);
	CU_ASSERT_EQUAL(syshax_submit(sh, &job, 1), -EAGAIN);
	CU_ASSERT_EQUAL(t_stats(&st), 0);
	CU_ASSERT_EQUAL(st.queue_depth, queued);
	CU_ASSERT_EQUAL(st.inflight, 0);

	/* An engine drains the queue; reaping frees the context's slots. */
	CU_ASSERT_EQUAL_FATAL(t_engine_start(), 0);
	drain(sh, 0, queued);
	syshax_job_init(&job, SYSHAX_OP_NOP, 1000000);
	CU_ASSERT_EQUAL(syshax_submit(sh, &job, 1), 1);
	drain(sh, 1000000, 1);
	syshax_close(sh);
}

static void t_global_full(void)
{
	struct syshax *ctx[MAX_CTX], *fresh;
	unsigned int q[MAX_CTX], total = 0, n, k;
	struct syshax_stats_args st;
	struct syshax_job job;
	int last;

	stop_engine();
	for (n = 0; n < MAX_CTX; n++) {
		ctx[n] = t_open();
		CU_ASSERT_FATAL(ctx[n] != NULL);
		q[n] = fill(ctx[n], (uint64_t)n << 32, &last);
		total += q[n];
		/* A context that got less than the first: the global limit. */
		if (q[n] < q[0] || !q[n]) {
			n++;
			break;
		}
	}
	printf("\n  global limit reached after %u jobs in %u contexts ",
	       total, n);
	CU_ASSERT(q[n - 1] < q[0] || !q[n - 1]);
	fresh = t_open();
	CU_ASSERT_FATAL(fresh != NULL);
	syshax_job_init(&job, SYSHAX_OP_NOP, 1);
	CU_ASSERT_EQUAL(syshax_submit(fresh, &job, 1), -EAGAIN);
	CU_ASSERT_EQUAL(t_stats(&st), 0);
	CU_ASSERT_EQUAL(st.queue_depth, total);

	CU_ASSERT_EQUAL_FATAL(t_engine_start(), 0);
	for (k = 0; k < n; k++) {
		drain(ctx[k], (uint64_t)k << 32, q[k]);
		syshax_close(ctx[k]);
	}
	CU_ASSERT_EQUAL(syshax_submit(fresh, &job, 1), 1);
	drain(fresh, 1, 1);
	syshax_close(fresh);
}

int t_add_queue(void)
{
	CU_pSuite s = CU_add_suite("queue limits", NULL, NULL);

	if (!s || !CU_add_test(s, "context full: partial, -EAGAIN, resumes",
			       t_queue_full) ||
	    !CU_add_test(s, "global limit: a fresh context gets -EAGAIN",
			 t_global_full))
		return -1;
	return 0;
}
