// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Paged decode attention: one query token per sequence against a block
 * table of KV-cache blocks, online softmax (one pass, running max and sum)
 * and split-K over the context with a merge of the partial results.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "internal.h"

static float kv_at(enum shxk_type t, const void *p, size_t i)
{
	if (t == SHXK_F16)
		return shxk_fp16_to_fp32(((const uint16_t *)p)[i]);
	if (t == SHXK_BF16)
		return shxk_bf16_to_fp32(((const uint16_t *)p)[i]);
	return ((const float *)p)[i];
}

/*
 * The rows of kv head g for positions [p0, p0 + nr) in the K or V array
 * base: one division per call, not one per row.
 */
static void kv_rows(const struct shxk_kv_cache *kv, const int32_t *block_table,
		    const void *base, size_t p0, size_t nr, size_t g,
		    const void **rows)
{
	size_t rowb = shxk_row_size(kv->type, kv->head_dim), bs = kv->block_size;
	size_t b = p0 / bs, o = p0 % bs;

	for (size_t r = 0; r < nr; r++) {
		size_t row = ((size_t)block_table[b] * bs + o) * kv->kv_heads + g;

		rows[r] = (const uint8_t *)base + row * rowb;
		if (++o == bs) {
			o = 0;
			b++;
		}
	}
}

/*
 * The reference tile: per head, scores, one max update and rescale for the
 * whole tile, then the weighted V rows.
 */
void shxk_attn_tile_generic(enum shxk_type t, const float *q, size_t g,
			    size_t ng, float scale, const void *const *k,
			    const void *const *v, size_t nr, size_t n,
			    float *o, float *mx, float *l,
			    struct shxk_attn_next *nx)
{
	size_t rowb = shxk_row_size(t, n);

	(void)nx;	/* attn_pass loads the lines after the call */
	for (size_t h = 0; h < ng * g; h++) {
		const float *qh = q + h * n;
		float *oh = o + h * n, s[SHXK_ATTN_TILE], corr;
		size_t off = h / g * rowb;

		for (size_t r = 0; r < nr; r++) {
			const uint8_t *kr = (const uint8_t *)k[r] + off;
			float d = 0.0f;

			for (size_t e = 0; e < n; e++)
				d += qh[e] * kv_at(t, kr, e);
			s[r] = d * scale;
		}
		corr = shxk_attn_softmax(s, nr, mx + h, l + h);
		for (size_t e = 0; e < n; e++) {
			float acc = oh[e] * corr;

			for (size_t r = 0; r < nr; r++)
				acc += s[r] * kv_at(t, (const uint8_t *)v[r] + off, e);
			oh[e] = acc;
		}
	}
}

/*
 * Loads one byte of each line of the next tile that an attn_tile call left
 * (all of them for a variant that does not prefetch as it computes).
 * Demand loads, not prefetch instructions: in a burst, prefetches gained
 * little (measured on Zen 5: 6.2 -> 9.0 GB/s per thread here).
 */
static void kv_touch_rest(struct shxk_attn_next *nx)
{
	while (nx->left) {
		(void)*((const volatile uint8_t *)nx->k[nx->r] + nx->o);
		(void)*((const volatile uint8_t *)nx->v[nx->r] + nx->o);
		shxk_attn_next_advance(nx);
	}
}

/* rows[r] + off, r < nr: kv head g's rows from those of the pass's first. */
static void rows_at(const void *const *rows, size_t nr, size_t off,
		    const void **out)
{
	for (size_t r = 0; r < nr; r++)
		out[r] = (const uint8_t *)rows[r] + off;
}

/*
 * o = o * s and o += w * x over n floats, four at a time: GCC's -O2 turns
 * the four statements into one vector op where it leaves the plain loop
 * scalar (the division it replaced ran at a few cycles a value, a
 * quarter of a 4,096-position pass of 32 heads).
 */
static void row_scale(float *o, size_t n, float s)
{
	size_t e = 0;

	for (; e + 4 <= n; e += 4) {
		o[e] *= s;
		o[e + 1] *= s;
		o[e + 2] *= s;
		o[e + 3] *= s;
	}
	for (; e < n; e++)
		o[e] *= s;
}

static void row_axpy(float *restrict o, size_t n, float w,
		     const float *restrict x)
{
	size_t e = 0;

	for (; e + 4 <= n; e += 4) {
		o[e] += w * x[e];
		o[e + 1] += w * x[e + 1];
		o[e + 2] += w * x[e + 2];
		o[e + 3] += w * x[e + 3];
	}
	for (; e < n; e++)
		o[e] += w * x[e];
}

/*
 * Heads [hs, hs + SHXK_ATTN_HEADS at most) in one pass over the context:
 * the KV rows of a tile are read once for all their heads, the pass's
 * whole GQA groups in one attn_tile call. A tile's row addresses are found
 * once, for the pass's first kv head, before the tile ahead of it runs
 * (which prefetches its lines).
 */
static void attn_pass(const struct shxk_kv_cache *kv, const int32_t *block_table,
		      const float *q, float scale, size_t c0, size_t c1,
		      float *out, float *ml, size_t group, size_t hs, size_t he)
{
	const struct shxk_ops *ops = shxk_ops_current();
	size_t hd = kv->head_dim, g0 = hs / group;
	size_t rowb = shxk_row_size(kv->type, hd);
	size_t ng = (he - 1) / group - g0 + 1, len = ng * rowb;
	const void *kt[2][SHXK_ATTN_TILE], *vt[2][SHXK_ATTN_TILE];
	float mx[SHXK_ATTN_HEADS], l[SHXK_ATTN_HEADS];
	int cur = 0;

	for (size_t h = hs; h < he; h++) {
		mx[h - hs] = -INFINITY;
		l[h - hs] = 0.0f;
	}
	memset(out + hs * hd, 0, (he - hs) * hd * sizeof(*out));
	if (c0 < c1) {
		size_t nr = c1 - c0 < SHXK_ATTN_TILE ? c1 - c0 : SHXK_ATTN_TILE;

		kv_rows(kv, block_table, kv->k, c0, nr, g0, kt[0]);
		kv_rows(kv, block_table, kv->v, c0, nr, g0, vt[0]);
	}
	for (size_t c = c0; c < c1; c += SHXK_ATTN_TILE, cur ^= 1) {
		size_t nr = c1 - c < SHXK_ATTN_TILE ? c1 - c : SHXK_ATTN_TILE;
		size_t nn = c1 - c - nr < SHXK_ATTN_TILE ? c1 - c - nr : SHXK_ATTN_TILE;

		/* The next tile's lines, a share to each call by its kv heads. */
		struct shxk_attn_next nx = { .k = kt[cur ^ 1], .v = vt[cur ^ 1],
					     .len = len };
		size_t steps = nn * ((len + 63) / 64);

		kv_rows(kv, block_table, kv->k, c + nr, nn, g0, kt[cur ^ 1]);
		kv_rows(kv, block_table, kv->v, c + nr, nn, g0, vt[cur ^ 1]);
		/*
		 * Each kv head's rows once for all its heads in [hs, he): the
		 * whole groups in one call, a part of one at either end alone.
		 */
		for (size_t h = hs; h < he;) {
			size_t g = h / group, gn = 1, gh = group;
			const void *kr[SHXK_ATTN_TILE], *vr[SHXK_ATTN_TILE];

			if (h % group || he - h < group)
				gh = ((g + 1) * group < he ? (g + 1) * group : he) - h;
			else
				gn = (he - h) / group;
			rows_at(kt[cur], nr, (g - g0) * rowb, kr);
			rows_at(vt[cur], nr, (g - g0) * rowb, vr);
			nx.left = steps * (g - g0 + gn) / ng - steps * (g - g0) / ng;
			ops->attn_tile(kv->type, q + h * hd, gh, gn, scale, kr, vr,
				       nr, hd, out + h * hd, mx + (h - hs),
				       l + (h - hs), &nx);
			kv_touch_rest(&nx);
			h += gh * gn;
		}
	}
	for (size_t h = hs; h < he; h++) {
		float *o = out + h * hd;

		if (l[h - hs] > 0.0f)
			row_scale(o, hd, 1.0f / l[h - hs]);
		if (ml) {
			ml[2 * h] = mx[h - hs];
			ml[2 * h + 1] = l[h - hs];
		}
	}
}

int shxk_attn_decode(const struct shxk_kv_cache *kv, const int32_t *block_table,
		     const float *q, size_t q_heads, float scale, size_t c0,
		     size_t c1, float *out, float *ml, size_t h0, size_t h1)
{
	size_t group;

	if ((kv->type != SHXK_F32 && kv->type != SHXK_F16 &&
	     kv->type != SHXK_BF16) || !kv->block_size || !kv->kv_heads ||
	    !kv->head_dim || q_heads % kv->kv_heads || c0 > c1 || h0 > h1 ||
	    h1 > q_heads)
		return -EINVAL;
	group = q_heads / kv->kv_heads;
	for (size_t h = h0; h < h1; h += SHXK_ATTN_HEADS)
		attn_pass(kv, block_table, q, scale, c0, c1, out, ml, group, h,
			  h1 - h < SHXK_ATTN_HEADS ? h1 : h + SHXK_ATTN_HEADS);
	return 0;
}

/*
 * Less K and V than this a chunk (on average) is not worth a merge, and a
 * context under two of them is cut by kv heads instead: it is read from
 * the caches, where a range costs no merge (docs/kernels.md, "Chunks of
 * 256 KiB").
 */
#define MIN_CHUNK_BYTES	(256u << 10)

static size_t gcd_sz(size_t a, size_t b)
{
	while (b) {
		size_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

void shxk_attn_split(const struct shxk_kv_cache *kv, size_t n, size_t maxlen,
		     unsigned int threads, size_t *ranges, size_t *chunks)
{
	size_t row = 2 * kv->kv_heads * shxk_row_size(kv->type, kv->head_dim);

	*ranges = *chunks = 1;
	if (maxlen * row < 2 * MIN_CHUNK_BYTES) {
		while (n * *ranges < 2 * (size_t)threads &&
		       *ranges < kv->kv_heads)
			++*ranges;
		return;
	}
	/* n * chunks a multiple of threads: 3 sequences on 2 threads as 6
	 * halves, not 3 wholes of which one thread takes two. */
	*chunks = threads ? threads / gcd_sz(n, threads) : 1;
	while (*chunks > 1 && maxlen * row / *chunks < MIN_CHUNK_BYTES)
		--*chunks;
}

int shxk_attn_decode_item(const struct shxk_kv_cache *kv,
			  const int32_t *block_table, const float *q,
			  size_t q_heads, float scale, size_t len,
			  size_t ranges, size_t chunks, size_t j, float *parts,
			  float *ml)
{
	size_t c = j % chunks, r = j / chunks, kvh = kv->kv_heads;
	size_t group = kvh ? q_heads / kvh : 0, po = c * q_heads;

	return shxk_attn_decode(kv, block_table, q, q_heads, scale,
				len * c / chunks, len * (c + 1) / chunks,
				parts + po * kv->head_dim, ml + po * 2,
				kvh * r / ranges * group,
				kvh * (r + 1) / ranges * group);
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
		memset(o, 0, head_dim * sizeof(*o));
		for (size_t p = 0; p < nparts; p++) {
			const float *pm = ml_parts + (p * q_heads + h) * 2;
			const float *po = out_parts + (p * q_heads + h) * head_dim;
			/* Each part is normalised by its own sum: undo that. */
			float wgt = pm[1] > 0.0f ? pm[1] * expf(pm[0] - mx) : 0.0f;

			l += wgt;
			row_axpy(o, head_dim, wgt, po);
		}
		if (l > 0.0f)
			row_scale(o, head_dim, 1.0f / l);
	}
	return 0;
}
