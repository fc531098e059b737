// SPDX-License-Identifier: MIT
/*
 * Buffers freed and reused under an engine that keeps its mappings
 * (SYSHAX_FEAT_MAP_NOTES): 4 client threads, each with a long-lived
 * destination and, every round, a fresh source filled with the round's
 * pattern, copied by the suite's engine, then poisoned and freed. An
 * engine that used a freed buffer's mapping for a new one would copy the
 * poison or an old pattern; one that never heard of the frees would keep
 * their memory pinned. broker_ring_ut's case, against either backend.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "t.h"

#define CLIENTS		4
#define ROUNDS		250		/* per client */
#define SZ		(64u << 10)
#define POISON		0xdb

struct client {
	unsigned int id;
	unsigned long rounds, bad;
};

/* 1 when every byte of b is want (the pages and the last byte). */
static int holds(const unsigned char *b, unsigned char want)
{
	unsigned int i;

	for (i = 0; i < SZ; i += 4096)
		if (b[i] != want)
			return 0;
	return b[SZ - 1] == want;
}

static void *client_main(void *arg)
{
	struct client *c = arg;
	struct syshax_buffer src, dst;
	struct syshax_completion cpl;
	struct syshax_job job;
	struct syshax *sh = t_open();

	if (!sh || syshax_buf_alloc(sh, SZ, -1, SYSHAX_BUF_ALLOW_SMALL, &dst) ||
	    syshax_buf_map(sh, &dst)) {
		c->bad++;
		goto out;
	}
	for (c->rounds = 0; c->rounds < ROUNDS; c->rounds++) {
		unsigned char want = (unsigned char)(c->id * 61 + c->rounds);

		if (want == POISON || !want)
			want = 1;
		if (syshax_buf_alloc(sh, SZ, -1, SYSHAX_BUF_ALLOW_SMALL, &src) ||
		    syshax_buf_map(sh, &src)) {
			c->bad++;
			break;
		}
		memset(src.addr, want, SZ);
		memset(dst.addr, 0, SZ);
		syshax_job_copy(&job, &src, 0, &dst, 0, SZ, c->rounds);
		if (syshax_submit(sh, &job, 1) != 1 ||
		    syshax_wait(sh, &cpl, 1, 1, 10 * T_SEC) != 1 ||
		    cpl.status || cpl.result != SZ ||
		    cpl.user_data != c->rounds || !holds(dst.addr, want))
			c->bad++;
		memset(src.addr, POISON, SZ);
		if (syshax_buf_free(sh, &src))
			c->bad++;
	}
	if (syshax_buf_free(sh, &dst))
		c->bad++;
out:
	if (sh)
		syshax_close(sh);
	return NULL;
}

/*
 * Every result right; once all is freed, the engine's kept mappings go on
 * their notes: no pinned bytes, no buffers, no jobs.
 */
static void t_reuse(void)
{
	struct client cl[CLIENTS];
	struct syshax_version_args v;
	struct syshax_stats_args st;
	unsigned long rounds = 0, bad = 0;
	uint64_t t0 = t_now_ns();
	pthread_t th[CLIENTS];
	struct syshax *sh = t_open();
	unsigned int i;

	CU_ASSERT_PTR_NOT_NULL_FATAL(sh);
	CU_ASSERT_EQUAL(syshax_version(sh, &v), 0);
	CU_ASSERT(v.features & SYSHAX_FEAT_MAP_NOTES);
	syshax_close(sh);
	for (i = 0; i < CLIENTS; i++) {
		cl[i] = (struct client){ .id = i };
		CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, client_main,
						     &cl[i]), 0);
	}
	for (i = 0; i < CLIENTS; i++) {
		pthread_join(th[i], NULL);
		rounds += cl[i].rounds;
		bad += cl[i].bad;
	}
	printf("\n  %lu rounds in %.2f s, %lu wrong ", rounds,
	       (double)(t_now_ns() - t0) / 1e9, bad);
	CU_ASSERT_EQUAL(rounds, CLIENTS * ROUNDS);
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(t_stats_until(t_no_pinned, NULL, 5 * T_SEC), 0);
	CU_ASSERT_EQUAL(t_stats_until(t_no_jobs, NULL, 5 * T_SEC), 0);
	CU_ASSERT_EQUAL(t_stats(&st), 0);
	CU_ASSERT_EQUAL(st.pinned_bytes, 0);
	CU_ASSERT_EQUAL(st.nr_bufs, 0);
}

int t_add_reuse(void)
{
	CU_pSuite s = CU_add_suite("buffers freed and reused", NULL, NULL);

	if (!s || !CU_add_test(s, "4 clients x 250 rounds, the engine "
			       "keeping mappings", t_reuse))
		return -1;
	return 0;
}
