// SPDX-License-Identifier: MIT
/*
 * CTX_STATS on syshaxd's userspace broker (daemon/broker/bstats.c) through
 * libsyshax-rt's syshax_ctx_stats(): the same cases as the module's
 * tests/kmod/ctx_stats_test.c. The caller first and marked self, pid, uid
 * and comm (/proc), a child that renamed itself, buffers and bytes per
 * connection, jobs queued, in flight, submitted, completed and failed of a
 * client, an engine's held and done, a short array, closed connections
 * leaving the list.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <CUnit/Basic.h>

#include "../t_cunit.h"

#include "broker.h"
#include "t_broker.h"
#include "syshax/rt.h"

#define MAX_CTX	64

static struct t_broker g_tb;
static struct syshax_ctx_stat v[MAX_CTX];

static int t_setup(void)
{
	struct shxd_broker_conf c = {
		.max_jobs_ctx = 64,
		.max_pinned_bytes = 64ULL << 20,
		.engine_gid = (gid_t)-1,
	};

	return t_broker_start(&g_tb, &c, "/tmp/broker_ctx_ut.XXXXXX", "b.sock");
}

static int t_teardown(void)
{
	return t_broker_stop(&g_tb);
}

static int stats(struct syshax *sh, unsigned int max, unsigned int *total)
{
	memset(v, 0xa5, sizeof(v));
	return syshax_ctx_stats(sh, v, max, total);
}

static const struct syshax_ctx_stat *find(int n, uint32_t ctx_id, int pid)
{
	int i;

	for (i = 0; i < n; i++)
		if (ctx_id ? v[i].ctx_id == ctx_id : v[i].pid == pid)
			return &v[i];
	return NULL;
}

/* The broker sees a hang-up in its loop, maybe after a request of sh that
 * came in the same round: asks again for up to 2 s. Entries, or -1 when
 * the context of ctx_id (or of pid) is still listed. */
static int wait_gone(struct syshax *sh, uint32_t ctx_id, int pid)
{
	int i, n = -1;

	for (i = 0; i < 200; i++) {
		n = syshax_ctx_stats(sh, v, MAX_CTX, NULL);
		if (n >= 0 && !find(n, ctx_id, pid))
			return n;
		usleep(10000);
	}
	return -1;
}

static uint32_t ctx_id_of(struct syshax *sh)
{
	CU_ASSERT_EQUAL_FATAL(stats(sh, 1, NULL), 1);
	CU_ASSERT(v[0].flags & SYSHAX_CTX_SELF);
	return v[0].ctx_id;
}

static void t_version(void)
{
	struct syshax *sh = t_broker_open(&g_tb);
	struct syshax_version_args ver;

	CU_ASSERT_PTR_NOT_NULL_FATAL(sh);
	CU_ASSERT_EQUAL(syshax_version(sh, &ver), 0);
	CU_ASSERT(ver.features & SYSHAX_FEAT_CTX_STATS);
	CU_ASSERT_EQUAL(syshax_ctx_stats(sh, NULL, 1, NULL), -EINVAL);
	CU_ASSERT_EQUAL(syshax_ctx_stats(NULL, v, 1, NULL), -EINVAL);
	syshax_close(sh);
}

static void t_self_and_total(void)
{
	struct syshax *a = t_broker_open(&g_tb), *b = t_broker_open(&g_tb),
		      *c = t_broker_open(&g_tb);
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
	CU_ASSERT_EQUAL(n, 3);
	CU_ASSERT_EQUAL(total, 3);
	CU_ASSERT(v[0].flags & SYSHAX_CTX_SELF);
	CU_ASSERT_EQUAL(v[0].pid, getpid());
	CU_ASSERT_EQUAL(v[0].uid, getuid());
	prctl(PR_GET_NAME, comm);
	CU_ASSERT_STRING_EQUAL(v[0].comm, comm);
	CU_ASSERT_EQUAL(v[0].reserved[0] | v[0].reserved[1] |
			v[0].reserved[2], 0);
	s = find(n, ida, 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_FALSE(s->flags & SYSHAX_CTX_SELF);
	CU_ASSERT_PTR_NOT_NULL(find(n, idc, 0));
	/* A short array: the caller first, total all of them. */
	CU_ASSERT_EQUAL(stats(a, 2, &total), 2);
	CU_ASSERT_EQUAL(total, 3);
	CU_ASSERT_EQUAL(v[0].ctx_id, ida);
	CU_ASSERT_EQUAL(v[2].ctx_id, 0xa5a5a5a5U);
	CU_ASSERT_EQUAL(stats(a, 0, &total), 0);
	CU_ASSERT_EQUAL(total, 3);
	syshax_close(c);
	CU_ASSERT_EQUAL(wait_gone(a, idc, 0), 2);
	syshax_close(a);
	syshax_close(b);
}

static void t_child_bufs(void)
{
	struct syshax *sh = t_broker_open(&g_tb);
	struct syshax_buffer b[3];
	const struct syshax_ctx_stat *s;
	int go[2], ready[2], status, n, i;
	uint64_t bytes = 0;
	pid_t kid;
	char c;

	CU_ASSERT_PTR_NOT_NULL_FATAL(sh);
	CU_ASSERT_FATAL(!pipe(go) && !pipe(ready));
	kid = fork();
	CU_ASSERT_FATAL(kid >= 0);
	if (!kid) {
		struct syshax *k;
		struct syshax_buffer kb[2];

		close(go[1]);
		close(ready[0]);
		prctl(PR_SET_NAME, "ctx_kid");
		if (syshax_open(&k, &(struct syshax_open_opts){
				.backend = SYSHAX_BACKEND_DAEMON,
				.path = g_tb.path }) ||
		    syshax_buf_alloc(k, 4096, -1, 0, &kb[0]) ||
		    syshax_buf_alloc(k, 8192, -1, 0, &kb[1]) ||
		    write(ready[1], "r", 1) != 1 || read(go[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(go[0]);
	close(ready[1]);
	CU_ASSERT_EQUAL_FATAL(read(ready[0], &c, 1), 1);
	for (i = 0; i < 3; i++) {
		CU_ASSERT_EQUAL_FATAL(syshax_buf_alloc(sh, 4096 << i, -1, 0,
						       &b[i]), 0);
		bytes += b[i].size;
	}
	n = stats(sh, MAX_CTX, NULL);
	CU_ASSERT_EQUAL(v[0].nr_bufs, 3);
	CU_ASSERT_EQUAL(v[0].buf_bytes, bytes);
	s = find(n, 0, kid);
	CU_ASSERT_PTR_NOT_NULL_FATAL(s);
	CU_ASSERT_STRING_EQUAL(s->comm, "ctx_kid");
	CU_ASSERT_EQUAL(s->uid, getuid());
	CU_ASSERT_EQUAL(s->nr_bufs, 2);
	CU_ASSERT(s->buf_bytes >= 4096 + 8192);
	CU_ASSERT_EQUAL(s->flags, 0);
	CU_ASSERT_EQUAL(syshax_buf_free(sh, &b[1]), 0);
	stats(sh, MAX_CTX, NULL);
	CU_ASSERT_EQUAL(v[0].nr_bufs, 2);
	CU_ASSERT_EQUAL(v[0].buf_bytes, bytes - b[1].size);
	close(go[1]);
	CU_ASSERT_EQUAL(waitpid(kid, &status, 0), kid);
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CU_ASSERT(wait_gone(sh, 0, kid) >= 1);
	close(ready[0]);
	syshax_close(sh);
}

static void t_jobs(void)
{
	struct syshax *cl = t_broker_open(&g_tb), *en = t_broker_open(&g_tb);
	struct syshax_engine_job ej[4];
	struct syshax_engine_cpl ec = { 0 };
	struct syshax_completion cpl[3];
	struct syshax_job jobs[3];
	const struct syshax_ctx_stat *s, *e;
	uint32_t cid, eid;
	int i, n, got;

	CU_ASSERT_FATAL(cl && en);
	CU_ASSERT_EQUAL_FATAL(syshax_engine_attach(en, -1), 0);
	cid = ctx_id_of(cl);
	eid = ctx_id_of(en);
	for (i = 0; i < 3; i++)
		syshax_job_init(&jobs[i], SYSHAX_OP_NOP, (uint64_t)i);
	CU_ASSERT_EQUAL_FATAL(syshax_submit(cl, jobs, 3), 3);
	n = stats(cl, MAX_CTX, NULL);
	s = find(n, cid, 0);
	e = find(n, eid, 0);
	CU_ASSERT_FATAL(s && e);
	CU_ASSERT_EQUAL(s->jobs_submitted, 3);
	CU_ASSERT_EQUAL(s->jobs_queued, 3);
	CU_ASSERT_EQUAL(s->jobs_inflight, 0);
	CU_ASSERT(e->flags & SYSHAX_CTX_ENGINE);
	CU_ASSERT_EQUAL(e->eng_held, 0);

	CU_ASSERT_EQUAL_FATAL(syshax_engine_fetch(en, ej, 1, 1000000000), 1);
	n = stats(cl, MAX_CTX, NULL);
	s = find(n, cid, 0);
	e = find(n, eid, 0);
	CU_ASSERT_EQUAL(s->jobs_queued, 2);
	CU_ASSERT_EQUAL(s->jobs_inflight, 1);
	CU_ASSERT_EQUAL(e->eng_held, 1);
	ec.token = ej[0].token;
	CU_ASSERT_EQUAL(syshax_engine_complete(en, &ec, 1), 1);

	CU_ASSERT_EQUAL_FATAL(syshax_engine_fetch(en, ej, 2, 1000000000), 2);
	ec.token = ej[0].token;
	ec.status = -EIO;
	CU_ASSERT_EQUAL(syshax_engine_complete(en, &ec, 1), 1);
	n = stats(cl, MAX_CTX, NULL);
	s = find(n, cid, 0);
	e = find(n, eid, 0);
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
		n = syshax_wait(cl, cpl, 1, 3, 1000000000);
		CU_ASSERT_FATAL(n > 0);
		got += n;
	}
	n = stats(cl, MAX_CTX, NULL);
	s = find(n, cid, 0);
	e = find(n, eid, 0);
	CU_ASSERT_EQUAL(s->jobs_inflight, 0);
	CU_ASSERT_EQUAL(s->jobs_completed, 2);
	CU_ASSERT_EQUAL(s->jobs_failed, 1);
	CU_ASSERT_EQUAL(s->jobs_submitted, 3);
	CU_ASSERT_EQUAL(e->eng_held, 0);
	CU_ASSERT_EQUAL(e->eng_done, 3);
	syshax_close(cl);
	syshax_close(en);
}

int main(void)
{
	static const struct t_test tests[] = {
		{ "VERSION has CTX_STATS; argument errors", t_version },
		{ "self first, pid, comm, total, short array, close",
		  t_self_and_total },
		{ "a child's pid, comm and buffers", t_child_bufs },
		{ "jobs queued, in flight, done; engine", t_jobs },
	};

	/* Jobs answer in order on the old path (rings: the same counts, as
	 * the brokers take the in ring before counting). */
	setenv("SYSHAX_RINGS", "0", 1);
	return T_RUN_SUITE("userspace broker CTX_STATS", t_setup, t_teardown,
			   tests);
}
