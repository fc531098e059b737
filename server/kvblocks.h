/* SPDX-License-Identifier: MIT */
/*
 * The paged KV cache's block allocator (vLLM's): the K and V buffers hold
 * n blocks of block_size positions each; a request takes the blocks its
 * prompt and its max_tokens need when it is admitted, and gives them back
 * when it ends. A stack of free block ids: O(1) per block, no search. A
 * block may have several holders (a request and the prefix cache,
 * server/prefix.c): it is free again when the last one lets it go.
 */
#ifndef SRV_KVBLOCKS_H
#define SRV_KVBLOCKS_H

#include <stdint.h>

struct kvblocks {
	uint32_t *free;		/* free[0..nfree) */
	uint32_t *holders;	/* per block; 0 when free */
	uint32_t nfree, n;
};

int kvb_init(struct kvblocks *kb, uint32_t n);	/* 0 or -ENOMEM */
void kvb_destroy(struct kvblocks *kb);
/* k blocks into ids, one holder each, all or none: 0 or -ENOSPC. */
int kvb_alloc(struct kvblocks *kb, uint32_t k, int32_t *ids);
/* One more holder of each of the k held blocks ids. */
void kvb_hold(struct kvblocks *kb, uint32_t k, const int32_t *ids);
/* One holder fewer of each; the blocks left without one are free. */
void kvb_free(struct kvblocks *kb, uint32_t k, const int32_t *ids);
static inline uint32_t kvb_used(const struct kvblocks *kb)
{
	return kb->n - kb->nfree;
}

#endif /* SRV_KVBLOCKS_H */
