// SPDX-License-Identifier: MIT
/* The KV block allocator (kvblocks.h). */
#include "kvblocks.h"

#include <errno.h>
#include <stdlib.h>

int kvb_init(struct kvblocks *kb, uint32_t n)
{
	kb->free = calloc(n ? n : 1, sizeof(*kb->free));
	kb->holders = calloc(n ? n : 1, sizeof(*kb->holders));
	if (!kb->free || !kb->holders) {
		kvb_destroy(kb);
		return -ENOMEM;
	}
	/* Lowest ids on top: a lone request's blocks come out in order. */
	for (uint32_t i = 0; i < n; i++)
		kb->free[i] = n - 1 - i;
	kb->nfree = kb->n = n;
	return 0;
}

void kvb_destroy(struct kvblocks *kb)
{
	free(kb->free);
	free(kb->holders);
	kb->free = kb->holders = NULL;
	kb->nfree = kb->n = 0;
}

int kvb_alloc(struct kvblocks *kb, uint32_t k, int32_t *ids)
{
	if (k > kb->nfree)
		return -ENOSPC;
	for (uint32_t i = 0; i < k; i++) {
		ids[i] = (int32_t)kb->free[--kb->nfree];
		kb->holders[ids[i]] = 1;
	}
	return 0;
}

void kvb_hold(struct kvblocks *kb, uint32_t k, const int32_t *ids)
{
	for (uint32_t i = 0; i < k; i++)
		kb->holders[ids[i]]++;
}

void kvb_free(struct kvblocks *kb, uint32_t k, const int32_t *ids)
{
	/* In reverse: freeing what one alloc gave restores the stack. */
	for (uint32_t i = k; i-- > 0;)
		if (!--kb->holders[ids[i]])
			kb->free[kb->nfree++] = (uint32_t)ids[i];
}
