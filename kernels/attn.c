// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Paged decode attention: one query token per sequence against a block
 * table of KV-cache blocks, online softmax (one pass, running max and sum)
 * and split-K over the context with a merge of the partial results.
 */
#include <errno.h>
#include <math.h>

#include "internal.h"

static float kv_at(enum shxk_type t, const void *p, size_t i)
{
	if (t == SHXK_F16)
		return shxk_fp16_to_fp32(((const uint16_t *)p)[i]);
	if (t == SHXK_BF16)
		return shxk_bf16_to_fp32(((const uint16_t *)p)[i]);
	return ((const float *)p)[i];
}

int shxk_attn_decode(const struct shxk_kv_cache *kv, const int32_t *block_table,
		     const float *q, size_t q_heads, float scale, size_t c0,
		     size_t c1, float *out, float *ml, size_t h0, size_t h1)
{
	size_t hd = kv->head_dim, es, group;

	if ((kv->type != SHXK_F32 && kv->type != SHXK_F16 &&
	     kv->type != SHXK_BF16) || !kv->block_size || !kv->kv_heads ||
	    !hd || q_heads % kv->kv_heads || c0 > c1 || h0 > h1 ||
	    h1 > q_heads)
		return -EINVAL;
	es = kv->type == SHXK_F32 ? 4 : 2;
	group = q_heads / kv->kv_heads;
	for (size_t h = h0; h < h1; h++) {
		const float *qh = q + h * hd;
		float *o = out + h * hd;
		float mx = -INFINITY, l = 0.0f;

		for (size_t e = 0; e < hd; e++)
			o[e] = 0.0f;
		for (size_t c = c0; c < c1; c++) {
			size_t row = ((size_t)block_table[c / kv->block_size] *
				      kv->block_size + c % kv->block_size) *
				     kv->kv_heads + h / group;
			const uint8_t *kr = (const uint8_t *)kv->k + row * hd * es;
			const uint8_t *vr = (const uint8_t *)kv->v + row * hd * es;
			float s = 0.0f, corr, p;

			for (size_t e = 0; e < hd; e++)
				s += qh[e] * kv_at(kv->type, kr, e);
			s *= scale;
			/* New max: rescale what was summed under the old one. */
			if (s > mx) {
				corr = expf(mx - s);
				mx = s;
				l *= corr;
				for (size_t e = 0; e < hd; e++)
					o[e] *= corr;
			}
			p = expf(s - mx);
			l += p;
			for (size_t e = 0; e < hd; e++)
				o[e] += p * kv_at(kv->type, vr, e);
		}
		if (l > 0.0f)
			for (size_t e = 0; e < hd; e++)
				o[e] /= l;
		if (ml) {
			ml[2 * h] = mx;
			ml[2 * h + 1] = l;
		}
	}
	return 0;
}

int shxk_attn_merge(const float *out_parts, const float *ml_parts,
		    size_t nparts, size_t q_heads, size_t head_dim, float *out,
		    size_t h0, size_t h1)
{
	if (!nparts || h0 > h1 || h1 > q_heads)
		return -EINVAL;
	for (size_t h = h0; h < h1; h++) {
		float *o = out + h * head_dim;
		float mx = -INFINITY, l = 0.0f;

		for (size_t p = 0; p < nparts; p++)
			mx = fmaxf(mx, ml_parts[(p * q_heads + h) * 2]);
		for (size_t e = 0; e < head_dim; e++)
			o[e] = 0.0f;
		for (size_t p = 0; p < nparts; p++) {
			const float *pm = ml_parts + (p * q_heads + h) * 2;
			const float *po = out_parts + (p * q_heads + h) * head_dim;
			/* Each part is normalised by its own sum: undo that. */
			float wgt = pm[1] > 0.0f ? pm[1] * expf(pm[0] - mx) : 0.0f;

			l += wgt;
			for (size_t e = 0; e < head_dim; e++)
				o[e] += wgt * po[e];
		}
		if (l > 0.0f)
			for (size_t e = 0; e < head_dim; e++)
				o[e] /= l;
	}
	return 0;
}
