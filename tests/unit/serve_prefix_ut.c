// SPDX-License-Identifier: MIT
/*
 * syshax-serve's prefix cache (server/prefix.c): whole blocks only, the
 * longest match, entries that extend others replace them, LRU eviction,
 * holders counted with the allocator; and random requests over a small
 * alphabet (prefixes shared often) whose blocks carry the tokens written
 * into them: a block taken from the cache always holds the prompt's own
 * tokens, and no block written is held by anyone else.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kvblocks.h"
#include "prefix.h"
#include "../t_cunit.h"

#define BS	4
#define N	64

static void t_match(void)
{
	struct kvblocks kb;
	struct pfx_cache pc;
	int32_t a[14], bt[8], got[8];

	for (int i = 0; i < 14; i++)
		a[i] = 100 + i;
	CU_ASSERT_EQUAL_FATAL(kvb_init(&kb, N), 0);
	CU_ASSERT_EQUAL_FATAL(pfx_init(&pc, 4, BS, &kb), 0);
	CU_ASSERT_EQUAL(pfx_take(&pc, a, 14, 8, got), 0);
	/* 14 positions: 3 whole blocks kept, 10 positions from a, 4 from b. */
	CU_ASSERT_EQUAL_FATAL(kvb_alloc(&kb, 4, bt), 0);
	CU_ASSERT_EQUAL(pfx_put(&pc, a, 10, a + 10, 4, bt), 0);
	kvb_free(&kb, 4, bt);
	CU_ASSERT_EQUAL(kvb_used(&kb), 3);
	CU_ASSERT_EQUAL(pc.n, 1);
	/* The longest whole-block match, capped by max. */
	CU_ASSERT_EQUAL(pfx_take(&pc, a, 14, 8, got), 3);
	CU_ASSERT_EQUAL(memcmp(got, bt, 3 * sizeof(*bt)), 0);
	kvb_free(&kb, 3, got);
	CU_ASSERT_EQUAL(pfx_take(&pc, a, 14, 2, got), 2);
	kvb_free(&kb, 2, got);
	CU_ASSERT_EQUAL(pfx_take(&pc, a, 11, 8, got), 2);
	kvb_free(&kb, 2, got);
	a[5] = 7;		/* differs in the second block */
	CU_ASSERT_EQUAL(pfx_take(&pc, a, 14, 8, got), 1);
	CU_ASSERT_EQUAL(got[0], bt[0]);
	kvb_free(&kb, 1, got);
	a[5] = 105;
	CU_ASSERT_EQUAL(kvb_used(&kb), 3);
	/* Held already: nothing new. */
	CU_ASSERT_EQUAL(pfx_put(&pc, a, 8, NULL, 0, bt), 0);
	CU_ASSERT_EQUAL(pc.n, 1);
	CU_ASSERT_EQUAL(kvb_used(&kb), 3);
	pfx_destroy(&pc);
	CU_ASSERT_EQUAL(kvb_used(&kb), 0);
	/* Off: nothing kept, nothing found. */
	CU_ASSERT_EQUAL_FATAL(pfx_init(&pc, 0, BS, &kb), 0);
	CU_ASSERT_EQUAL(pfx_put(&pc, a, 14, NULL, 0, bt), 0);
	CU_ASSERT_EQUAL(pfx_take(&pc, a, 14, 8, got), 0);
	CU_ASSERT_EQUAL(kvb_used(&kb), 0);
	pfx_destroy(&pc);
	kvb_destroy(&kb);
}

static void t_extend_and_evict(void)
{
	struct kvblocks kb;
	struct pfx_cache pc;
	int32_t x[16], y[16], z[16], bx[4], by[4], bz[4], got[4];

	for (int i = 0; i < 16; i++) {
		x[i] = i;
		y[i] = 50 + i;
		z[i] = 90 + i;
	}
	CU_ASSERT_EQUAL_FATAL(kvb_init(&kb, N), 0);
	CU_ASSERT_EQUAL_FATAL(pfx_init(&pc, 2, BS, &kb), 0);
	CU_ASSERT_EQUAL_FATAL(kvb_alloc(&kb, 4, bx), 0);
	CU_ASSERT_EQUAL(pfx_put(&pc, x, 8, NULL, 0, bx), 0);
	/* x's 4 blocks extend its 2: one entry, 4 blocks held. */
	CU_ASSERT_EQUAL(pfx_put(&pc, x, 16, NULL, 0, bx), 0);
	kvb_free(&kb, 4, bx);
	CU_ASSERT_EQUAL(pc.n, 1);
	CU_ASSERT_EQUAL(kvb_used(&kb), 4);
	CU_ASSERT_EQUAL_FATAL(kvb_alloc(&kb, 4, by), 0);
	CU_ASSERT_EQUAL(pfx_put(&pc, y, 16, NULL, 0, by), 0);
	kvb_free(&kb, 4, by);
	/* x used last: z's entry evicts y's. */
	CU_ASSERT_EQUAL(pfx_take(&pc, x, 16, 4, got), 4);
	kvb_free(&kb, 4, got);
	CU_ASSERT_EQUAL_FATAL(kvb_alloc(&kb, 4, bz), 0);
	CU_ASSERT_EQUAL(pfx_put(&pc, z, 16, NULL, 0, bz), 0);
	kvb_free(&kb, 4, bz);
	CU_ASSERT_EQUAL(pc.n, 2);
	CU_ASSERT_EQUAL(kvb_used(&kb), 8);
	CU_ASSERT_EQUAL(pfx_take(&pc, y, 16, 4, got), 0);
	CU_ASSERT_EQUAL(pfx_take(&pc, x, 16, 4, got), 4);
	/* Evicted while a request holds them: the blocks stay its own. */
	CU_ASSERT(pfx_evict(&pc));
	CU_ASSERT(pfx_evict(&pc));
	CU_ASSERT(!pfx_evict(&pc));
	CU_ASSERT_EQUAL(kvb_used(&kb), 4);
	kvb_free(&kb, 4, got);
	CU_ASSERT_EQUAL(kvb_used(&kb), 0);
	pfx_destroy(&pc);
	kvb_destroy(&kb);
}

/* A request: its prompt, block table and blocks taken from the cache. */
struct req {
	int32_t ids[24], bt[8];
	uint32_t n, need, got;
};

static void t_random_requests(void)
{
	static int32_t content[N][BS];	/* the token written at a position */
	struct kvblocks kb;
	struct pfx_cache pc;
	struct req rq[4] = { { .n = 0 } };
	unsigned int seed = 11, taken = 0;

	CU_ASSERT_EQUAL_FATAL(kvb_init(&kb, N), 0);
	CU_ASSERT_EQUAL_FATAL(pfx_init(&pc, 6, BS, &kb), 0);
	for (int round = 0; round < 5000; round++) {
		struct req *q = &rq[rand_r(&seed) % 4];
		int ret;

		if (q->n) {		/* it ends: kept, then let go */
			uint32_t fed = q->n - (uint32_t)rand_r(&seed) % 3;

			CU_ASSERT_EQUAL(pfx_put(&pc, q->ids, fed, NULL, 0,
						q->bt), 0);
			kvb_free(&kb, q->need, q->bt);
			q->n = 0;
			continue;
		}
		q->n = 2 + (uint32_t)rand_r(&seed) % 23;
		for (uint32_t i = 0; i < q->n; i++)
			q->ids[i] = rand_r(&seed) % 4 ? (int32_t)i :
				    (int32_t)(rand_r(&seed) % 3);
		q->need = (q->n + BS - 1) / BS + (uint32_t)rand_r(&seed) % 2;
		q->got = pfx_take(&pc, q->ids, q->n, (q->n - 1) / BS, q->bt);
		while ((ret = kvb_alloc(&kb, q->need - q->got,
					q->bt + q->got)) && pfx_evict(&pc))
			;
		if (ret) {
			kvb_free(&kb, q->got, q->bt);
			q->n = 0;
			continue;
		}
		taken += q->got;
		/* What it takes holds its tokens; what it writes is its own. */
		for (uint32_t p = 0; p < q->got * BS; p++)
			CU_ASSERT_EQUAL(content[q->bt[p / BS]][p % BS],
					q->ids[p]);
		for (uint32_t b = q->got; b < q->need; b++)
			CU_ASSERT_EQUAL(kb.holders[q->bt[b]], 1);
		for (uint32_t p = q->got * BS; p < q->n; p++)
			content[q->bt[p / BS]][p % BS] = q->ids[p];
	}
	CU_ASSERT(taken > 100);		/* the cache was used */
	for (int i = 0; i < 4; i++)
		kvb_free(&kb, rq[i].n ? rq[i].need : 0, rq[i].bt);
	pfx_destroy(&pc);
	CU_ASSERT_EQUAL(kvb_used(&kb), 0);
	kvb_destroy(&kb);
}

int main(void)
{
	static const struct t_test tests[] = {
		{ "whole blocks, the longest match, off", t_match },
		{ "an extension replaces, LRU evicts", t_extend_and_evict },
		{ "random requests read their own tokens", t_random_requests },
	};

	return T_RUN_SUITE("serve_prefix", NULL, NULL, tests);
}
