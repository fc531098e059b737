// SPDX-License-Identifier: MIT
/*
 * Queue limits: with no engine the context fills up, a SUBMIT is cut short
 * (partial count), the next one fails with -EAGAIN; once an engine runs and
 * completions are reaped, submitting works again.
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

static void t_queue_full(void)
{
	struct syshax_job jobs[BATCH];
	struct syshax_stats_args st;
	struct t_tally tally = { 0 };
	unsigned char *seen;
	unsigned int queued = 0, i;
	struct syshax *sh;
	int status, r = 0;

	CU_ASSERT_EQUAL_FATAL(t_engine_stop(SIGTERM, &status), 0);
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	sh = t_open();
	seen = calloc(MAX_JOBS + BATCH, 1);
	CU_ASSERT_FATAL(sh && seen);

	while (queued < MAX_JOBS) {
		for (i = 0; i < BATCH; i++)
			syshax_job_init(&jobs[i], SYSHAX_OP_NOP, queued + i);
		r = syshax_submit(sh, jobs, BATCH);
		if (r <= 0)
			break;
		queued += (unsigned int)r;
		if (r < BATCH)
			break;
	}
	printf("\n  limit reached after %u jobs ", queued);
	CU_ASSERT(queued > 0 && queued < MAX_JOBS);
	/* The last SUBMIT was cut short, the next fails. */
	CU_ASSERT(r > 0 && r < BATCH);
	for (i = 0; i < BATCH; i++)
		syshax_job_init(&jobs[i], SYSHAX_OP_NOP, queued + i);
	CU_ASSERT_EQUAL(syshax_submit(sh, jobs, BATCH), -EAGAIN);
	CU_ASSERT_EQUAL(syshax_submit(sh, jobs, 1), -EAGAIN);
	CU_ASSERT_EQUAL(t_stats(&st), 0);
	CU_ASSERT_EQUAL(st.queue_depth, queued);
	CU_ASSERT_EQUAL(st.inflight, 0);

	/* An engine drains the queue; reaping frees the context's slots. */
	CU_ASSERT_EQUAL_FATAL(t_engine_start(), 0);
	CU_ASSERT_EQUAL(t_reap(sh, 0, queued, seen, queued, 60 * T_SEC,
			       &tally), (int)queued);
	CU_ASSERT_EQUAL(tally.ok, queued);
	for (i = 0; i < queued; i++)
		if (seen[i] != 1)
			break;
	CU_ASSERT_EQUAL(i, queued);

	CU_ASSERT_EQUAL(syshax_submit(sh, jobs, BATCH), BATCH);
	CU_ASSERT_EQUAL(t_reap(sh, queued, BATCH, seen + queued, BATCH,
			       10 * T_SEC, &tally), BATCH);
	CU_ASSERT_EQUAL(tally.ok, queued + BATCH);
	free(seen);
	syshax_close(sh);
}

int t_add_queue(void)
{
	CU_pSuite s = CU_add_suite("queue limits", NULL, NULL);

	if (!s || !CU_add_test(s, "queue full: partial, -EAGAIN, resumes",
			       t_queue_full))
		return -1;
	return 0;
}
