// SPDX-License-Identifier: MIT
/*
 * libsyshax-rt's own checks on the userspace backend: bad completion and
 * job pointers, map sizes, NULL arguments, unbounded timeouts. A private
 * broker runs in a thread; the test is its client and its engine.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <CUnit/Basic.h>

#include "../t_cunit.h"

#include "broker.h"
#include "t_broker.h"
#include "syshax/rt.h"

#define T_S	1000000000LL

static struct t_broker g_tb;
static long g_page;

static int t_setup(void)
{
	struct shxd_broker_conf c = {
		.max_pinned_bytes = 64ULL << 20,
		.engine_gid = (gid_t)-1,
	};

	g_page = sysconf(_SC_PAGESIZE);
	return t_broker_start(&g_tb, &c, "/tmp/rt_daemon_ut.XXXXXX", "b.sock");
}

static int t_teardown(void)
{
	return t_broker_stop(&g_tb);
}

/* Two pages: the first read-write, the second PROT_NONE. */
static char *t_guarded(void)
{
	char *p = mmap(NULL, (size_t)g_page * 2, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if (mprotect(p + g_page, (size_t)g_page, PROT_NONE)) {
		munmap(p, (size_t)g_page * 2);
		return NULL;
	}
	return p;
}

/* Submits one NOP and completes it as the engine: 0, or -1 on a failure. */
static int t_nop_done(struct syshax *cl, struct syshax *en, uint64_t tag)
{
	struct syshax_engine_job ej;
	struct syshax_engine_cpl ec = { 0 };
	struct syshax_job job;

	syshax_job_init(&job, SYSHAX_OP_NOP, tag);
	if (syshax_submit(cl, &job, 1) != 1 ||
	    syshax_engine_fetch(en, &ej, 1, T_S) != 1 ||
	    ej.job.user_data != tag)
		return -1;
	ec.token = ej.token;
	return syshax_engine_complete(en, &ec, 1) == 1 ? 0 : -1;
}

/*
 * A wait into memory it cannot write is -EFAULT and takes nothing: the
 * completion (and its credit in the context's job limit) stays for the
 * next wait. More rounds than the limit (1,024) would leak credits.
 */
static void t_wait_bad_pointer(void)
{
	struct syshax *cl = t_broker_open(&g_tb), *en = t_broker_open(&g_tb);
	struct syshax_completion cpl[2], *edge;
	char *g = t_guarded();
	int i, fails = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(g);
	CU_ASSERT_EQUAL_FATAL(syshax_engine_attach(en, -1), 0);
	for (i = 0; i < 1100 && !fails; i++) {
		fails += t_nop_done(cl, en, (uint64_t)i) != 0;
		fails += syshax_wait(cl, (void *)(g + g_page), 1, 1, T_S) !=
			 -EFAULT;
		memset(cpl, 0, sizeof(cpl));
		fails += syshax_wait(cl, cpl, 1, 2, T_S) != 1;
		fails += cpl[0].user_data != (uint64_t)i;
	}
	CU_ASSERT_EQUAL(fails, 0);
	CU_ASSERT_EQUAL(i, 1100);

	/* Read-only memory is no better. */
	CU_ASSERT_EQUAL(t_nop_done(cl, en, 7), 0);
	CU_ASSERT_EQUAL(mprotect(g, (size_t)g_page, PROT_READ), 0);
	CU_ASSERT_EQUAL(syshax_wait(cl, (void *)g, 1, 1, T_S), -EFAULT);
	CU_ASSERT_EQUAL(mprotect(g, (size_t)g_page, PROT_READ | PROT_WRITE), 0);
	CU_ASSERT_EQUAL(syshax_wait(cl, cpl, 1, 1, T_S), 1);
	CU_ASSERT_EQUAL(cpl[0].user_data, 7);

	/* Room for one before the fault: one comes, the other stays. */
	edge = (void *)(g + g_page - sizeof(*edge));
	CU_ASSERT_EQUAL(t_nop_done(cl, en, 8), 0);
	CU_ASSERT_EQUAL(t_nop_done(cl, en, 9), 0);
	CU_ASSERT_EQUAL(syshax_wait(cl, edge, 2, 2, T_S), 1);
	CU_ASSERT_EQUAL(syshax_wait(cl, cpl, 1, 2, T_S), 1);
	CU_ASSERT_EQUAL(edge[0].user_data + cpl[0].user_data, 17);

	/* Nothing was lost: a full context's worth still goes through. */
	for (i = 0; i < 1024 && !fails; i++) {
		fails += t_nop_done(cl, en, (uint64_t)i) != 0;
		fails += syshax_wait(cl, cpl, 1, 1, T_S) != 1;
	}
	CU_ASSERT_EQUAL(fails, 0);
	CU_ASSERT_EQUAL(syshax_wait(cl, cpl, 1, 1, 0), -ETIMEDOUT);
	munmap(g, (size_t)g_page * 2);
	syshax_close(en);
	syshax_close(cl);
}

/* The engine's side of the same: a fetch into bad memory loses no job. */
static void t_fetch_bad_pointer(void)
{
	struct syshax *cl = t_broker_open(&g_tb), *en = t_broker_open(&g_tb);
	struct syshax_engine_job ej[2], *edge;
	struct syshax_engine_cpl ec[2] = { { 0 } };
	struct syshax_completion cpl[2];
	struct syshax_job jobs[2];
	char *g = t_guarded();

	CU_ASSERT_PTR_NOT_NULL_FATAL(g);
	CU_ASSERT_EQUAL_FATAL(syshax_engine_attach(en, -1), 0);
	syshax_job_init(&jobs[0], SYSHAX_OP_NOP, 1);
	syshax_job_init(&jobs[1], SYSHAX_OP_NOP, 2);
	CU_ASSERT_EQUAL(syshax_submit(cl, jobs, 2), 2);
	CU_ASSERT_EQUAL(syshax_engine_fetch(en, (void *)(g + g_page), 1, T_S),
			-EFAULT);
	/* Room for one: one job is fetched, the other stays queued. */
	edge = (void *)(g + g_page - sizeof(*edge));
	CU_ASSERT_EQUAL(syshax_engine_fetch(en, edge, 2, T_S), 1);
	CU_ASSERT_EQUAL(edge->job.user_data, 1);
	ec[0].token = edge->token;
	CU_ASSERT_EQUAL(syshax_engine_fetch(en, ej, 2, T_S), 1);
	CU_ASSERT_EQUAL(ej[0].job.user_data, 2);
	ec[1].token = ej[0].token;
	CU_ASSERT_EQUAL(syshax_engine_complete(en, ec, 2), 2);
	CU_ASSERT_EQUAL(syshax_wait(cl, cpl, 2, 2, T_S), 2);
	munmap(g, (size_t)g_page * 2);
	syshax_close(en);
	syshax_close(cl);
}

/* Only the size the broker gave maps: a bigger one would fault (SIGBUS)
 * past the memory, a smaller one is not the whole buffer. */
static void t_map_size(void)
{
	struct syshax *sh = t_broker_open(&g_tb), *sh2 = t_broker_open(&g_tb);
	struct syshax_buffer b, c, imp;
	int fd;

	CU_ASSERT_EQUAL_FATAL(syshax_buf_alloc(sh, 4096, -1, 0, &b), 0);
	c = b;
	c.size = 1ULL << 40;
	CU_ASSERT_EQUAL(syshax_buf_map(sh, &c), -EINVAL);
	CU_ASSERT_PTR_NULL(c.addr);
	if (c.addr)
		munmap(c.addr, c.size);
	c.size = b.size / 2;
	CU_ASSERT_EQUAL(syshax_buf_map(sh, &c), -EINVAL);
	CU_ASSERT_PTR_NULL(c.addr);
	c.size = b.size + 1;
	CU_ASSERT_EQUAL(syshax_buf_map(sh, &c), -EINVAL);
	CU_ASSERT_EQUAL(syshax_buf_map(sh, &b), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(b.addr);
	memset(b.addr, 0x5a, b.size);

	/* An imported handle knows its size too. */
	fd = syshax_buf_export(sh, &b, SYSHAX_EXPORT_CLOEXEC);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL_FATAL(syshax_buf_import(sh2, fd, &imp), 0);
	close(fd);
	CU_ASSERT_EQUAL(imp.size, b.size);
	c = imp;
	c.size = 1ULL << 40;
	CU_ASSERT_EQUAL(syshax_buf_map(sh2, &c), -EINVAL);
	CU_ASSERT_EQUAL(syshax_buf_map(sh2, &imp), 0);
	CU_ASSERT_PTR_NOT_NULL_FATAL(imp.addr);
	CU_ASSERT_EQUAL(((unsigned char *)imp.addr)[b.size - 1], 0x5a);
	CU_ASSERT_EQUAL(syshax_buf_free(sh2, &imp), 0);
	CU_ASSERT_EQUAL(syshax_buf_free(sh, &b), 0);
	syshax_close(sh2);
	syshax_close(sh);
}

/* NULL for any pointer is -EINVAL, before the broker hears of it. */
static void t_null_args(void)
{
	struct syshax *sh = t_broker_open(&g_tb), *en = t_broker_open(&g_tb);
	struct syshax_buffer b, none = { 0 };
	struct syshax_stats_args st0, st;
	struct syshax_version_args v;
	struct syshax_buf_info_args info;
	struct syshax_engine_job ej;
	struct syshax_engine_cpl ec = { 0 };
	struct syshax_completion cpl;
	struct syshax_job job;
	char page[64];
	uint64_t size;
	void *addr;

	CU_ASSERT_EQUAL_FATAL(syshax_stats(sh, &st0), 0);
	CU_ASSERT_EQUAL(syshax_backend(NULL), SYSHAX_BACKEND_AUTO);
	CU_ASSERT_EQUAL(syshax_backend(sh), SYSHAX_BACKEND_DAEMON);
	CU_ASSERT_EQUAL(syshax_fd(NULL), -EINVAL);
	CU_ASSERT(syshax_fd(sh) >= 0);
	CU_ASSERT_EQUAL(syshax_version(NULL, &v), -EINVAL);
	CU_ASSERT_EQUAL(syshax_version(sh, NULL), -EINVAL);
	CU_ASSERT_EQUAL(syshax_stats(NULL, &st), -EINVAL);
	CU_ASSERT_EQUAL(syshax_stats(sh, NULL), -EINVAL);

	CU_ASSERT_EQUAL(syshax_buf_alloc(NULL, 4096, -1, 0, &b), -EINVAL);
	CU_ASSERT_EQUAL(syshax_buf_alloc(sh, 4096, -1, 0, NULL), -EINVAL);
	CU_ASSERT_EQUAL(syshax_buf_map(NULL, &none), -EINVAL);
	CU_ASSERT_EQUAL(syshax_buf_map(sh, NULL), -EINVAL);
	CU_ASSERT_EQUAL(syshax_buf_unmap(NULL, &none), -EINVAL);
	CU_ASSERT_EQUAL(syshax_buf_unmap(sh, NULL), -EINVAL);
	CU_ASSERT_EQUAL(syshax_buf_free(NULL, &none), -EINVAL);
	CU_ASSERT_EQUAL(syshax_buf_free(sh, NULL), -EINVAL);
	CU_ASSERT_EQUAL(syshax_buf_register(NULL, page, 4096, 0, &b), -EINVAL);
	CU_ASSERT_EQUAL(syshax_buf_register(sh, NULL, 4096, 0, &b), -EINVAL);
	CU_ASSERT_EQUAL(syshax_buf_register(sh, page, 4096, 0, NULL), -EINVAL);
	CU_ASSERT_EQUAL(syshax_buf_export(NULL, &none, 0), -EINVAL);
	CU_ASSERT_EQUAL(syshax_buf_export(sh, NULL, 0), -EINVAL);
	CU_ASSERT_EQUAL(syshax_buf_import(NULL, 0, &b), -EINVAL);
	CU_ASSERT_EQUAL(syshax_buf_import(sh, 0, NULL), -EINVAL);
	CU_ASSERT_EQUAL(syshax_buf_info(NULL, &none, &info), -EINVAL);
	CU_ASSERT_EQUAL(syshax_buf_info(sh, NULL, &info), -EINVAL);
	CU_ASSERT_EQUAL(syshax_buf_info(sh, &none, NULL), -EINVAL);

	syshax_job_init(&job, SYSHAX_OP_NOP, 1);
	CU_ASSERT_EQUAL(syshax_submit(NULL, &job, 1), -EINVAL);
	CU_ASSERT_EQUAL(syshax_submit(sh, NULL, 1), -EINVAL);
	CU_ASSERT_EQUAL(syshax_wait(NULL, &cpl, 1, 1, 0), -EINVAL);
	CU_ASSERT_EQUAL(syshax_wait(sh, NULL, 1, 1, 0), -EINVAL);

	CU_ASSERT_EQUAL(syshax_engine_attach(NULL, -1), -EINVAL);
	CU_ASSERT_EQUAL_FATAL(syshax_engine_attach(en, -1), 0);
	CU_ASSERT_EQUAL(syshax_engine_fetch(NULL, &ej, 1, 0), -EINVAL);
	CU_ASSERT_EQUAL(syshax_engine_fetch(en, NULL, 1, 0), -EINVAL);
	CU_ASSERT_EQUAL(syshax_engine_map(NULL, 1, &addr, &size), -EINVAL);
	CU_ASSERT_EQUAL(syshax_engine_map(en, 1, NULL, &size), -EINVAL);
	CU_ASSERT_EQUAL(syshax_engine_map(en, 1, &addr, NULL), -EINVAL);
	CU_ASSERT_EQUAL(syshax_engine_unmap(NULL, page, 4096), -EINVAL);
	CU_ASSERT_EQUAL(syshax_engine_unmap(en, NULL, 4096), -EINVAL);
	CU_ASSERT_EQUAL(syshax_engine_complete(NULL, &ec, 1), -EINVAL);
	CU_ASSERT_EQUAL(syshax_engine_complete(en, NULL, 1), -EINVAL);

	/* Nothing reached the broker: no buffer, no job. */
	CU_ASSERT_EQUAL(syshax_stats(sh, &st), 0);
	CU_ASSERT_EQUAL(st.pinned_bytes, st0.pinned_bytes);
	CU_ASSERT_EQUAL(st.nr_bufs, st0.nr_bufs);
	CU_ASSERT_EQUAL(syshax_engine_fetch(en, &ej, 1, 0), -ETIMEDOUT);
	syshax_close(en);
	syshax_close(sh);
}

/* A timeout of INT64_MAX is forever, with no overflow on the way (the SAN
 * build stops on UBSan's report). */
static void t_wait_int64_max(void)
{
	struct syshax *cl = t_broker_open(&g_tb), *en = t_broker_open(&g_tb);
	struct syshax_completion cpl;

	CU_ASSERT_EQUAL_FATAL(syshax_engine_attach(en, -1), 0);
	CU_ASSERT_EQUAL(t_nop_done(cl, en, 42), 0);
	CU_ASSERT_EQUAL(syshax_wait(cl, &cpl, 1, 1, INT64_MAX), 1);
	CU_ASSERT_EQUAL(cpl.user_data, 42);
	CU_ASSERT_EQUAL(t_nop_done(cl, en, 43), 0);
	CU_ASSERT_EQUAL(syshax_wait(cl, &cpl, 1, 1, INT64_MAX - 1), 1);
	CU_ASSERT_EQUAL(cpl.user_data, 43);
	syshax_close(en);
	syshax_close(cl);
}

int main(void)
{
	static const struct t_test tests[] = {
		{ "wait into bad memory: -EFAULT, nothing lost",
		  t_wait_bad_pointer },
		{ "fetch into bad memory: -EFAULT, nothing lost",
		  t_fetch_bad_pointer },
		{ "map: only the broker's size, else -EINVAL", t_map_size },
		{ "NULL arguments: -EINVAL", t_null_args },
		{ "wait with an INT64_MAX timeout", t_wait_int64_max },
	};

	return T_RUN_SUITE("library on the userspace backend", t_setup,
			   t_teardown, tests);
}
