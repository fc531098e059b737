/* SPDX-License-Identifier: MIT */
/*
 * The prefix cache (llama-server's cache_prompt, vLLM's prefix caching):
 * the KV blocks of prompts once prefilled and of requests that ended,
 * kept with their token ids, so that a later prompt that begins with the
 * same tokens (a chat's next turn, a shared system prompt) starts its
 * prefill past them. Whole blocks only,
 * and never written again: a request that takes some writes from the
 * first position past them, into blocks of its own. An entry holds its
 * blocks (kvb_hold) until it is evicted, least recently used first, when
 * the blocks are needed or the cache is full.
 */
#ifndef SRV_PREFIX_H
#define SRV_PREFIX_H

#include <stdbool.h>
#include <stdint.h>

#include "kvblocks.h"

struct pfx_entry {
	int32_t *ids;		/* nblocks * bs token ids */
	int32_t *blocks;	/* their KV blocks */
	uint32_t nblocks;
	uint64_t used;		/* last taken or put, for LRU */
};

struct pfx_cache {
	struct pfx_entry *e;	/* e[0..n) */
	unsigned int n, cap;	/* cap 0: the cache is off */
	uint32_t bs;		/* positions per block */
	uint64_t clock;
	struct kvblocks *kb;
};

/* 0 or -ENOMEM. */
int pfx_init(struct pfx_cache *pc, unsigned int cap, uint32_t bs,
	     struct kvblocks *kb);
/* Every entry evicted; the cache's memory freed. */
void pfx_destroy(struct pfx_cache *pc);
/*
 * The most whole blocks, at most max, that an entry holds for the start of
 * ids[0..n): their block ids into bt, a holder each taken; the count.
 */
uint32_t pfx_take(struct pfx_cache *pc, const int32_t *ids, uint32_t n,
		  uint32_t max, int32_t *bt);
/*
 * Keeps the whole blocks of the positions a[0..na) then b[0..nb), whose KV
 * is in blocks bt[]. An entry that already holds them is only touched;
 * entries they extend are evicted. 0, or -ENOMEM (nothing kept).
 */
int pfx_put(struct pfx_cache *pc, const int32_t *a, uint32_t na,
	    const int32_t *b, uint32_t nb, const int32_t *bt);
/* Evicts the least recently used entry: false when there is none. */
bool pfx_evict(struct pfx_cache *pc);

#endif /* SRV_PREFIX_H */
