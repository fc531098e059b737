// SPDX-License-Identifier: MIT
/*
 * CTX_STATS through syshax_ctx_stats(), as uapi/syshax.h and docs/uapi.md
 * state it: VERSION's SYSHAX_FEAT_CTX_STATS, the caller's entry first and
 * marked self with its pid, uid and comm, total and a short array, a closed
 * context leaving the list, a child that renamed itself with its buffers
 * and bytes, jobs queued, in flight, submitted, completed and failed of a
 * client and an engine's held and done (on the shared rings a job may be
 * in flight before the engine fetches it: there, sums and the engine's
 * held = the client's in flight), the argument errors the library
 * returns. Other contexts (the suite's stats context, engines) may be
 * listed: entries are found by ctx id or pid, never counted exactly.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "t.h"

#define MAX_CTX	256
#define UNTOUCHED	0xa5a5a5a5U

static struct syshax_ctx_stat v[MAX_CTX];

/* Fills v (poisoned first): entries or -errno. */
static int stats(struct syshax *sh, unsigned int max, unsigned int *total)
{
	memset(v, 0xa5, sizeof(v));
	return syshax_ctx_stats(sh, v, max, total);
}

/* The entry of ctx_id (or of pid when ctx_id is 0) among n; NULL if none. */
static const struct syshax_ctx_stat *find(int n, uint32_t ctx_id, int pid)
{
	int i;

	for (i = 0; i < n; i++)
		if (ctx_id ? v[i].ctx_id == ctx_id : v[i].pid == pid)
			return &v[i];
	return NULL;
}

/* syshaxd sees a hang-up in its loop, later than a request that came in
 * the same round: asks again for up to 5 s. Entries, or -1 while the
 * context of ctx_id (or of pid) is still listed. */
static int wait_gone(struct syshax *sh, uint32_t ctx_id, int pid)
{
	const struct timespec pause = { 0, 5 * T_MS };
	uint64_t deadline = t_now_ns() + 5 * T_SEC;
	int n;

	for (;;) {
		n = stats(sh, MAX_CTX, NULL);
		if (n >= 0 && !find(n, ctx_id, pid))
			return n;
		if (t_now_ns() >= deadline)
			return -1;
		nanosleep(&pause, NULL);
	}
}

/* The context id of sh, from its own entry. */
static uint32_t ctx_id_of(struct syshax *sh)
{
	CU_ASSERT_EQUAL_FATAL(stats(sh, 1, NULL), 1);
	CU_ASSERT(v[0].flags & SYSHAX_CTX_SELF);
	return v[0].ctx_id;
}

/* The suite's engine is stopped for this suite: the jobs case is the
 * engine (as engine_side.c). */
static int ctx_init(void)
{
	int status;

	return t_engine_stop(SIGTERM, &status) ? -1 : 0;
}

static int ctx_clean(void)
{
	return t_engine_start() ? -1 : 0;
}

static void t_version_errors(void)
{
	struct syshax_version_args ver;
	unsigned int total = 0;
	struct syshax *sh = t_open();

	CU_ASSERT_PTR_NOT_NULL_FATAL(sh);
	CU_ASSERT_EQUAL(syshax_version(sh, &ver), 0);
	CU_ASSERT(ver.features & SYSHAX_FEAT_CTX_STATS);
	CU_ASSERT_EQUAL(syshax_ctx_stats(sh, NULL, 1, NULL), -EINVAL);
	CU_ASSERT_EQUAL(syshax_ctx_stats(NULL, v, 1, NULL), -EINVAL);
	/* max 0: only the count (no array needed). */
	CU_ASSERT_EQUAL(syshax_ctx_stats(sh, NULL, 0, &total), 0);
	CU_ASSERT(total >= 2);	/* sh and the suite's stats context */
	syshax_close(sh);
}

static void t_self_and_total(void)
{
	struct syshax *a = t_open(), *b = t_open(), *c = t_open();
	const struct syshax_ctx_stat *s;
	unsigned int total = 0;
	uint32_t ida, idc;
	char comm[16] = "";
	int n;

	CU_ASSERT_FATAL(a && b && c);
	ida = ctx_id_of(a);
	idc = ctx_id_of(c);
	CU_ASSERT_NOT_EQUAL(ida, idc);
	n = stats(b, MAX_CTX, &total);
	CU_ASSERT_FATAL(n >= 3);
	CU_ASSERT(total >= 3);
	CU_ASSERT_EQUAL(n, (int)total);
	CU_ASSERT(v[0].flags & SYSHAX_CTX_SELF);
	CU_ASSERT_NOT_EQUAL(v[0].ctx_id, ida);
	CU_ASSERT_NOT_EQUAL(v[0].ctx_id, idc);
	CU_ASSERT_EQUAL(v[0].pid, getpid());
	CU_ASSERT_EQUAL(v[0].uid, getuid());
	prctl(PR_GET_NAME, comm);
	CU_ASSERT_STRING_EQUAL(v[0].comm, comm);
	CU_ASSERT_EQUAL(v[0].reserved[0] | v[0].reserved[1] |
			v[0].reserved[2], 0);
	s = find(n, ida, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_FALSE(s->flags & SYSHAX_CTX_SELF);
	CU_ASSERT_EQUAL(s->pid, getpid());
	CU_ASSERT_EQUAL(s->uid, getuid());
	s = find(n, idc, 0);
	CU_ASSERT_PTR_NOT_NULL(s);
	/* Only the caller's entry is marked self. */
	for (int i = 1; i < n; i++)
		CU_ASSERT_FALSE(v[i].flags & SYSHAX_CTX_SELF);
	/* A short array: the caller first, total still all of them. */
	CU_ASSERT_EQUAL(stats(a, 2, &total), 2);
	CU_ASSERT(total >= 3);
	CU_ASSERT_EQUAL(v[0].ctx_id, ida);
	CU_ASSERT(v[0].flags & SYSHAX_CTX_SELF);
	CU_ASSERT_NOT_EQUAL(v[1].ctx_id, ida);
	CU_ASSERT_EQUAL(v[2].ctx_id, UNTOUCHED);
	/* max 0: the count alone, the array untouched. */
	CU_ASSERT_EQUAL(stats(a, 0, &total), 0);
	CU_ASSERT(total >= 3);
	CU_ASSERT_EQUAL(v[0].ctx_id, UNTOUCHED);
	/* A closed context leaves the list; the others stay. */
	syshax_close(c);
	n = wait_gone(a, idc, 0);
	CU_ASSERT(n >= 2);
	CU_ASSERT_PTR_NOT_NULL(find(n, ida, 0));
	syshax_close(a);
	syshax_close(b);
}

/* A child named "ctx_kid" opens a context and allocates two buffers; it
 * sends their bytes, then waits for EOF on go. */
static void t_child_bufs(void)
{
	struct syshax *sh = t_open();
	struct syshax_buffer b[3];
	const struct syshax_ctx_stat *s;
	int go[2], ready[2], status, n, i;
	uint64_t bytes = 0, kid_bytes = 0;
	pid_t kid;

	CU_ASSERT_PTR_NOT_NULL_FATAL(sh);
	CU_ASSERT_FATAL(!pipe(go) && !pipe(ready));
	kid = fork();
	CU_ASSERT_FATAL(kid >= 0);
	if (!kid) {
		struct syshax_buffer kb[2];
		struct syshax *k;
		uint64_t kbytes;
		char c;

		close(go[1]);	/* else its read never sees EOF */
		close(ready[0]);
		prctl(PR_SET_NAME, "ctx_kid");
		if (syshax_open(&k, NULL) ||
		    syshax_buf_alloc(k, 4096, -1, SYSHAX_BUF_ALLOW_SMALL,
				     &kb[0]) ||
		    syshax_buf_alloc(k, 8192, -1, SYSHAX_BUF_ALLOW_SMALL,
				     &kb[1]))
			_exit(1);
		kbytes = kb[0].size + kb[1].size;
		if (write(ready[1], &kbytes, sizeof(kbytes)) != sizeof(kbytes) ||
		    read(go[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(go[0]);
	close(ready[1]);
	CU_ASSERT_EQUAL_FATAL(read(ready[0], &kid_bytes, sizeof(kid_bytes)),
			      (ssize_t)sizeof(kid_bytes));
	/* Ours: three buffers, then two. */
	for (i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL_FATAL(syshax_buf_alloc(sh, 4096u << i, -1,
						       SYSHAX_BUF_ALLOW_SMALL,
						       &b[i]), 0);
		bytes += b[i].size;
	}
	n = stats(sh, MAX_CTX, NULL);
	CU_ASSERT_FATAL(n >= 2);
	CU_ASSERT(v[0].flags & SYSHAX_CTX_SELF);
	CU_ASSERT_EQUAL(v[0].nr_bufs, 3);
	CU_ASSERT_EQUAL(v[0].buf_bytes, bytes);
	s = find(n, 0, kid);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_STRING_EQUAL(s->comm, "ctx_kid");
	CU_ASSERT_EQUAL(s->uid, getuid());
	CU_ASSERT_EQUAL(s->nr_bufs, 2);
	CU_ASSERT_EQUAL(s->buf_bytes, kid_bytes);
	CU_ASSERT(kid_bytes >= 4096 + 8192);
	CU_ASSERT_EQUAL(s->flags, 0);
	CU_ASSERT_EQUAL(syshax_buf_free(sh, &b[1]), 0);
	CU_ASSERT_FATAL(stats(sh, MAX_CTX, NULL) >= 1);
	CU_ASSERT_EQUAL(v[0].nr_bufs, 2);
	CU_ASSERT_EQUAL(v[0].buf_bytes, bytes - b[1].size);
	close(go[1]);
	CU_ASSERT_EQUAL(waitpid(kid, &status, 0), kid);
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* Its context went with it. */
	CU_ASSERT(wait_gone(sh, 0, kid) >= 1);
	close(ready[0]);
	CU_ASSERT_EQUAL(syshax_buf_free(sh, &b[0]), 0);
	CU_ASSERT_EQUAL(syshax_buf_free(sh, &b[2]), 0);
	syshax_close(sh);
}

/* Re-reads v; s and e: the client's and the engine's entries. */
static void both(struct syshax *sh, uint32_t cid, uint32_t eid,
		 const struct syshax_ctx_stat **s,
		 const struct syshax_ctx_stat **e)
{
	int n = stats(sh, MAX_CTX, NULL);

	CU_ASSERT_FATAL(n >= 2);
	*s = find(n, cid, 0);
	*e = find(n, eid, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(*s);
	CU_ASSERT_PTR_NOT_NULL_FATAL(*e);
}

static void t_jobs(void)
{
	struct syshax *cl = t_open(), *en = t_open();
	struct syshax_engine_job ej[4];
	struct syshax_engine_cpl ec = { 0 };
	struct syshax_completion cpl[3];
	struct syshax_job jobs[3];
	const struct syshax_ctx_stat *s, *e;
	struct syshax_version_args ver;
	uint32_t cid, eid;
	bool rings;
	int i, n, got;

	CU_ASSERT_FATAL(cl && en);
	/* On the shared rings the broker may hand queued jobs to the
	 * engine's ring before it fetches them: in flight (and held) early.
	 * The old path moves them only on FETCH. */
	CU_ASSERT_EQUAL_FATAL(syshax_version(cl, &ver), 0);
	rings = (ver.features & SYSHAX_FEAT_RINGS) && getenv("SYSHAX_RINGS") &&
		!strcmp(getenv("SYSHAX_RINGS"), "1");
	CU_ASSERT_EQUAL_FATAL(syshax_engine_attach(en, -1), 0);
	cid = ctx_id_of(cl);
	eid = ctx_id_of(en);
	for (i = 0; i < 3; i++)
		syshax_job_init(&jobs[i], SYSHAX_OP_NOP, (uint64_t)i);
	CU_ASSERT_EQUAL_FATAL(syshax_submit(cl, jobs, 3), 3);
	both(cl, cid, eid, &s, &e);
	CU_ASSERT_EQUAL(s->jobs_submitted, 3);
	CU_ASSERT_EQUAL(s->jobs_queued + s->jobs_inflight, 3);
	CU_ASSERT_EQUAL(s->jobs_completed, 0);
	CU_ASSERT_EQUAL(s->jobs_failed, 0);
	CU_ASSERT_FALSE(s->flags & SYSHAX_CTX_ENGINE);
	CU_ASSERT(e->flags & SYSHAX_CTX_ENGINE);
	/* The only engine holds what the only client has in flight. */
	CU_ASSERT_EQUAL(e->eng_held, s->jobs_inflight);
	CU_ASSERT_EQUAL(e->eng_done, 0);
	if (!rings) {
		/* Nothing fetched yet: all queued. */
		CU_ASSERT_EQUAL(s->jobs_queued, 3);
		CU_ASSERT_EQUAL(s->jobs_inflight, 0);
	}

	CU_ASSERT_EQUAL_FATAL(syshax_engine_fetch(en, ej, 1, T_SEC), 1);
	both(cl, cid, eid, &s, &e);
	CU_ASSERT_EQUAL(s->jobs_queued + s->jobs_inflight, 3);
	CU_ASSERT(s->jobs_inflight >= 1);
	CU_ASSERT_EQUAL(e->eng_held, s->jobs_inflight);
	if (!rings) {
		CU_ASSERT_EQUAL(s->jobs_queued, 2);
		CU_ASSERT_EQUAL(s->jobs_inflight, 1);
		CU_ASSERT_EQUAL(e->eng_held, 1);
	}
	ec.token = ej[0].token;
	CU_ASSERT_EQUAL(syshax_engine_complete(en, &ec, 1), 1);

	CU_ASSERT_EQUAL_FATAL(syshax_engine_fetch(en, ej, 2, T_SEC), 2);
	ec.token = ej[0].token;
	ec.status = -EIO;
	CU_ASSERT_EQUAL(syshax_engine_complete(en, &ec, 1), 1);
	both(cl, cid, eid, &s, &e);
	CU_ASSERT_EQUAL(s->jobs_queued, 0);
	CU_ASSERT_EQUAL(s->jobs_inflight, 1);
	CU_ASSERT_EQUAL(s->jobs_completed, 1);
	CU_ASSERT_EQUAL(s->jobs_failed, 1);
	CU_ASSERT_EQUAL(e->eng_held, 1);
	CU_ASSERT_EQUAL(e->eng_done, 2);
	ec.token = ej[1].token;
	ec.status = 0;
	CU_ASSERT_EQUAL(syshax_engine_complete(en, &ec, 1), 1);
	for (got = 0; got < 3;) {
		n = syshax_wait(cl, cpl, 1, 3, T_SEC);
		CU_ASSERT_FATAL(n > 0);
		got += n;
	}
	both(cl, cid, eid, &s, &e);
	CU_ASSERT_EQUAL(s->jobs_queued, 0);
	CU_ASSERT_EQUAL(s->jobs_inflight, 0);
	CU_ASSERT_EQUAL(s->jobs_completed, 2);
	CU_ASSERT_EQUAL(s->jobs_failed, 1);
	CU_ASSERT_EQUAL(s->jobs_submitted, 3);
	CU_ASSERT_EQUAL(e->eng_held, 0);
	CU_ASSERT_EQUAL(e->eng_done, 3);
	syshax_close(cl);
	syshax_close(en);
}

int t_add_ctx_stats(void)
{
	CU_pSuite s = CU_add_suite("ctx stats", ctx_init, ctx_clean);

	if (!s ||
	    !CU_add_test(s, "VERSION has CTX_STATS; argument errors",
			 t_version_errors) ||
	    !CU_add_test(s, "self first, pid, comm, total, short array, close",
			 t_self_and_total) ||
	    !CU_add_test(s, "a child's pid, comm and buffers", t_child_bufs) ||
	    !CU_add_test(s, "jobs queued, in flight, done; engine", t_jobs))
		return -1;
	return 0;
}
