// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * MoE bookkeeping: group (token, slot) choices by expert so each expert
 * runs one GEMM over its tokens, then combine the expert outputs back per
 * token with the router weights.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"

int shxk_moe_group(const int32_t *ids, size_t ntok, size_t topk, size_t nexp,
		   uint32_t *off, uint32_t *order, uint32_t *pos)
{
	size_t n = ntok * topk;

	if (!topk || !nexp || n > UINT32_MAX)
		return -EINVAL;
	for (size_t c = 0; c < n; c++)
		if (ids[c] < 0 || (size_t)ids[c] >= nexp)
			return -EINVAL;
	/* Counting sort: count, prefix-sum, then place in input order. */
	memset(off, 0, (nexp + 1) * sizeof(*off));
	for (size_t c = 0; c < n; c++)
		off[ids[c] + 1]++;
	for (size_t e = 0; e < nexp; e++)
		off[e + 1] += off[e];
	for (size_t c = 0; c < n; c++) {
		/* off[e] walks forward as e's rows are placed... */
		uint32_t p = off[ids[c]]++;

		order[p] = (uint32_t)c;
		pos[c] = p;
	}
	/* ...so shift it back to the starts. */
	memmove(off + 1, off, nexp * sizeof(*off));
	off[0] = 0;
	return 0;
}

int shxk_moe_combine(const float *eo, const uint32_t *pos, const float *wts,
		     size_t topk, size_t d, float *y, size_t t0, size_t t1)
{
	if (!topk || t0 > t1)
		return -EINVAL;
	for (size_t t = t0; t < t1; t++) {
		float *yt = y + t * d;

		for (size_t e = 0; e < d; e++)
			yt[e] = 0.0f;
		for (size_t s = 0; s < topk; s++) {
			const float *r = eo + (size_t)pos[t * topk + s] * d;
			float wt = wts[t * topk + s];

			for (size_t e = 0; e < d; e++)
				yt[e] += wt * r[e];
		}
	}
	return 0;
}
