// SPDX-License-Identifier: MIT
/*
 * 4 client processes x 2 threads, 10,000 jobs per thread: every job gets
 * exactly one completion carrying its user_data.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "t.h"

#define PROCS		4
#define THREADS		2
#define JOBS		10000
#define BATCH		32
#define TOTAL		(THREADS * JOBS)
#define TAG		0x5a00000000000000ULL
#define DEADLINE_NS	(300 * T_SEC)

struct proc {
	struct syshax *sh;
	unsigned int id;
	atomic_uchar seen[TOTAL];
	atomic_uint reaped;
	atomic_int errors;
	uint64_t deadline;
};

struct worker {
	struct proc *p;
	unsigned int t;
};

static void fail(struct proc *p, const char *what, long long v)
{
	if (atomic_fetch_add(&p->errors, 1) < 5)
		fprintf(stderr, "\n  stress proc %u: %s (%lld)\n", p->id, what, v);
}

static void account(struct proc *p, const struct syshax_completion *c)
{
	uint64_t k = c->user_data & ~TAG;

	if ((c->user_data & TAG) != TAG || k >= TOTAL) {
		fail(p, "completion with a foreign user_data",
		     (long long)c->user_data);
		return;
	}
	if (c->status)
		fail(p, "job failed", c->status);
	if (atomic_fetch_add(&p->seen[k], 1))
		fail(p, "duplicate completion", (long long)k);
	atomic_fetch_add(&p->reaped, 1);
}

/* Reaps what is there; blocks briefly when `block` (a full queue). */
static int reap(struct proc *p, bool block)
{
	struct syshax_completion c[BATCH];
	int i, r;

	r = syshax_wait(p->sh, c, block ? 1 : 0, BATCH, block ? 20 * T_MS : 0);
	if (r == -ETIMEDOUT || r == -EINTR)
		return 0;
	if (r < 0) {
		fail(p, "wait", r);
		return r;
	}
	for (i = 0; i < r; i++)
		account(p, &c[i]);
	return r;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct proc *p = w->p;
	struct syshax_job jobs[BATCH];
	unsigned int sent = 0;

	while (atomic_load(&p->reaped) < TOTAL && !atomic_load(&p->errors)) {
		bool full = false;

		if (t_now_ns() > p->deadline) {
			fail(p, "lost completions: reaped",
			     atomic_load(&p->reaped));
			break;
		}
		if (sent < JOBS) {
			unsigned int n = JOBS - sent < BATCH ? JOBS - sent : BATCH;
			unsigned int i;
			int r;

			for (i = 0; i < n; i++)
				syshax_job_init(&jobs[i], SYSHAX_OP_NOP,
						TAG | (w->t * JOBS + sent + i));
			r = syshax_submit(p->sh, jobs, n);
			if (r > 0) {
				sent += (unsigned int)r;
				full = (unsigned int)r < n;
			} else if (r == -EAGAIN) {
				full = true;
			} else {
				fail(p, "submit", r);
				break;
			}
		}
		if (reap(p, full || sent == JOBS) < 0)
			break;
	}
	return NULL;
}

static int proc_main(unsigned int id)
{
	static struct proc p;
	struct worker w[THREADS];
	pthread_t tid[THREADS];
	struct syshax_completion extra;
	unsigned int i;

	p.id = id;
	p.deadline = t_now_ns() + DEADLINE_NS;
	if (syshax_open(&p.sh, NULL)) {
		fprintf(stderr, "\n  stress proc %u: open failed\n", id);
		return 1;
	}
	for (i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ &p, i };
		if (pthread_create(&tid[i], NULL, worker_main, &w[i]))
			return 1;
	}
	for (i = 0; i < THREADS; i++)
		pthread_join(tid[i], NULL);
	for (i = 0; i < TOTAL; i++)
		if (atomic_load(&p.seen[i]) != 1)
			fail(&p, "job without exactly one completion", i);
	if (syshax_wait(p.sh, &extra, 1, 1, 100 * T_MS) != -ETIMEDOUT)
		fail(&p, "a completion too many", (long long)extra.user_data);
	syshax_close(p.sh);
	return atomic_load(&p.errors) ? 1 : 0;
}

static void t_stress(void)
{
	pid_t pid[PROCS];
	uint64_t t0 = t_now_ns();
	unsigned int i;

	for (i = 0; i < PROCS; i++) {
		pid[i] = fork();
		CU_ASSERT_FATAL(pid[i] >= 0);
		if (pid[i] == 0)
			_exit(proc_main(i));
	}
	for (i = 0; i < PROCS; i++) {
		int status = -1;

		CU_ASSERT_EQUAL(waitpid(pid[i], &status, 0), pid[i]);
		CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	printf("\n  %d jobs in %.2f s ", PROCS * TOTAL,
	       (double)(t_now_ns() - t0) / 1e9);
	CU_ASSERT_EQUAL(t_stats_until(t_no_jobs, NULL, 5 * T_SEC), 0);
}

int t_add_stress(void)
{
	CU_pSuite s = CU_add_suite("many clients", NULL, NULL);

	if (!s || !CU_add_test(s, "4 processes x 2 threads x 10000 jobs",
			       t_stress))
		return -1;
	return 0;
}
