// SPDX-License-Identifier: MIT
/*
 * syshax-serve's KV block allocator (server/kvblocks.c): all or none,
 * every block once, freed blocks come back, random alloc/free rounds never
 * hand out a block twice.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kvblocks.h"
#include "../t_cunit.h"

#define N	64

/* Marks ids[0..k) in seen[]: 0 when each is < N and not seen before. */
static int mark(unsigned char *seen, const int32_t *ids, uint32_t k)
{
	for (uint32_t i = 0; i < k; i++) {
		if (ids[i] < 0 || ids[i] >= N || seen[ids[i]])
			return -1;
		seen[ids[i]] = 1;
	}
	return 0;
}

static void t_all_or_none(void)
{
	struct kvblocks kb;
	unsigned char seen[N] = { 0 };
	int32_t a[N], b[N];

	CU_ASSERT_EQUAL_FATAL(kvb_init(&kb, N), 0);
	CU_ASSERT_EQUAL(kvb_alloc(&kb, 40, a), 0);
	CU_ASSERT_EQUAL(kvb_used(&kb), 40);
	/* 30 more do not fit: nothing taken. */
	memset(b, 0xff, sizeof(b));
	CU_ASSERT_EQUAL(kvb_alloc(&kb, 30, b), -ENOSPC);
	CU_ASSERT_EQUAL(kvb_used(&kb), 40);
	CU_ASSERT_EQUAL(b[0], -1);
	CU_ASSERT_EQUAL(kvb_alloc(&kb, 24, b), 0);
	CU_ASSERT_EQUAL(kvb_used(&kb), N);
	CU_ASSERT_EQUAL(mark(seen, a, 40), 0);
	CU_ASSERT_EQUAL(mark(seen, b, 24), 0);
	CU_ASSERT_EQUAL(kvb_alloc(&kb, 1, b), -ENOSPC);
	kvb_free(&kb, 40, a);
	CU_ASSERT_EQUAL(kvb_used(&kb), 24);
	CU_ASSERT_EQUAL(kvb_alloc(&kb, 40, a), 0);
	kvb_free(&kb, 40, a);
	kvb_free(&kb, 24, b);
	CU_ASSERT_EQUAL(kvb_used(&kb), 0);
	kvb_destroy(&kb);
}

static void t_random_rounds(void)
{
	struct kvblocks kb;
	int32_t held[8][N];
	uint32_t n[8] = { 0 };
	unsigned int seed = 7;

	CU_ASSERT_EQUAL_FATAL(kvb_init(&kb, N), 0);
	for (int round = 0; round < 2000; round++) {
		unsigned int r = (unsigned int)rand_r(&seed) % 8;
		unsigned char seen[N] = { 0 };
		uint32_t k = 1 + (uint32_t)rand_r(&seed) % 20, used = 0;

		if (n[r]) {
			kvb_free(&kb, n[r], held[r]);
			n[r] = 0;
		} else if (!kvb_alloc(&kb, k, held[r])) {
			n[r] = k;
		}
		for (int i = 0; i < 8; i++) {
			CU_ASSERT_EQUAL(mark(seen, held[i], n[i]), 0);
			used += n[i];
		}
		CU_ASSERT_EQUAL(kvb_used(&kb), used);
	}
	kvb_destroy(&kb);
}

int main(void)
{
	static const struct t_test tests[] = {
		{ "all or none, every block once", t_all_or_none },
		{ "random rounds never share a block", t_random_rounds },
	};

	return T_RUN_SUITE("serve_kvblocks", NULL, NULL, tests);
}
