// SPDX-License-Identifier: MIT
/* The prefix cache (prefix.h). */
#include "prefix.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int pfx_init(struct pfx_cache *pc, unsigned int cap, uint32_t bs,
	     struct kvblocks *kb)
{
	*pc = (struct pfx_cache){ .cap = cap, .bs = bs, .kb = kb };
	if (!cap)
		return 0;
	pc->e = calloc(cap, sizeof(*pc->e));
	return pc->e ? 0 : -ENOMEM;
}

static void drop(struct pfx_cache *pc, unsigned int i)
{
	struct pfx_entry *e = &pc->e[i];

	kvb_free(pc->kb, e->nblocks, e->blocks);
	free(e->ids);
	free(e->blocks);
	*e = pc->e[--pc->n];
}

void pfx_destroy(struct pfx_cache *pc)
{
	while (pc->n)
		drop(pc, pc->n - 1);
	free(pc->e);
	pc->e = NULL;
	pc->cap = 0;
}

/* Whole blocks that x[0..nx) and entry e begin with alike, at most max. */
static uint32_t common(const struct pfx_cache *pc, const struct pfx_entry *e,
		       const int32_t *x, uint32_t nx, uint32_t max)
{
	uint32_t k = 0, lim = nx / pc->bs;

	lim = lim < e->nblocks ? lim : e->nblocks;
	lim = lim < max ? lim : max;
	while (k < lim && !memcmp(e->ids + (size_t)k * pc->bs,
				  x + (size_t)k * pc->bs, pc->bs * sizeof(*x)))
		k++;
	return k;
}

uint32_t pfx_take(struct pfx_cache *pc, const int32_t *ids, uint32_t n,
		  uint32_t max, int32_t *bt)
{
	uint32_t best = 0;
	unsigned int bi = 0;

	for (unsigned int i = 0; i < pc->n; i++) {
		uint32_t k = common(pc, &pc->e[i], ids, n, max);

		if (k > best) {
			best = k;
			bi = i;
		}
	}
	if (best) {
		memcpy(bt, pc->e[bi].blocks, best * sizeof(*bt));
		kvb_hold(pc->kb, best, bt);
		pc->e[bi].used = ++pc->clock;
	}
	return best;
}

bool pfx_evict(struct pfx_cache *pc)
{
	unsigned int lru = 0;

	if (!pc->n)
		return false;
	for (unsigned int i = 1; i < pc->n; i++)
		if (pc->e[i].used < pc->e[lru].used)
			lru = i;
	drop(pc, lru);
	return true;
}

int pfx_put(struct pfx_cache *pc, const int32_t *a, uint32_t na,
	    const int32_t *b, uint32_t nb, const int32_t *bt)
{
	uint32_t nblocks = (na + nb) / pc->bs, len;
	struct pfx_entry e = { .nblocks = nblocks };

	if (!pc->cap || !nblocks)
		return 0;
	len = nblocks * pc->bs;
	e.ids = malloc((size_t)len * sizeof(*e.ids));
	e.blocks = malloc((size_t)nblocks * sizeof(*e.blocks));
	if (!e.ids || !e.blocks) {
		free(e.ids);
		free(e.blocks);
		return -ENOMEM;
	}
	memcpy(e.ids, a, (size_t)(na < len ? na : len) * sizeof(*a));
	if (na < len)
		memcpy(e.ids + na, b, (size_t)(len - na) * sizeof(*b));
	for (unsigned int i = 0; i < pc->n;) {
		uint32_t k = common(pc, &pc->e[i], e.ids, len, nblocks);

		if (k == nblocks) {		/* already held */
			pc->e[i].used = ++pc->clock;
			free(e.ids);
			free(e.blocks);
			return 0;
		}
		if (k == pc->e[i].nblocks)	/* a prefix of the new one */
			drop(pc, i);
		else
			i++;
	}
	if (pc->n == pc->cap)
		pfx_evict(pc);
	memcpy(e.blocks, bt, (size_t)nblocks * sizeof(*bt));
	kvb_hold(pc->kb, nblocks, e.blocks);
	e.used = ++pc->clock;
	pc->e[pc->n++] = e;
	return 0;
}
