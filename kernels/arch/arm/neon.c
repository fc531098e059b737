// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Armv8 NEON variant (baseline on aarch64). Integer dot products widen
 * s8 x s8 to s16 (vmull) and pairwise-add into s32: no dotprod needed.
 */
#include "neon.h"
#include "../tile_driver.h"

/* roundf() is vrndaq (half away from zero): bit-exact with generic. */
void shxk_act_q8_neon(const float *x, int8_t *qs, float *d, int32_t *s,
		      size_t nb)
{
	for (size_t j = 0; j < nb; j++, x += SHXK_QK, qs += SHXK_QK) {
		float32x4_t v[8], m = vdupq_n_f32(0.0f);
		int32x4_t q[8], sum = vdupq_n_s32(0);

		for (int c = 0; c < 8; c++) {
			v[c] = vld1q_f32(x + 4 * c);
			m = vmaxq_f32(m, vabsq_f32(v[c]));
		}
		float dj = vmaxvq_f32(m) / 127.0f;
		float id = dj != 0.0f ? 1.0f / dj : 0.0f;

		for (int c = 0; c < 8; c++) {
			q[c] = vcvtq_s32_f32(vrndaq_f32(vmulq_n_f32(v[c], id)));
			sum = vaddq_s32(sum, q[c]);
		}
		for (int c = 0; c < 4; c++) {
			int16x8_t h = vcombine_s16(vmovn_s32(q[2 * c]),
						   vmovn_s32(q[2 * c + 1]));

			vst1_s8(qs + 8 * c, vmovn_s16(h));
		}
		d[j] = dj;
		s[j] = vaddvq_s32(sum);
	}
}

/* ---- float weights ---- */

INLINE float32x4_t load_w(enum shxk_type t, const uint8_t *row, size_t e)
{
	if (t == SHXK_F16)
		return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16((const uint16_t *)row + e)));
	if (t == SHXK_BF16)
		return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16((const uint16_t *)row + e), 16));
	return vld1q_f32((const float *)row + e);
}

INLINE float load_w1(enum shxk_type t, const uint8_t *row, size_t e)
{
	uint16_t h;
	float f;

	if (t == SHXK_F32) {
		memcpy(&f, row + 4 * e, 4);
		return f;
	}
	memcpy(&h, row + 2 * e, 2);
	return t == SHXK_F16 ? shxk_fp16_to_fp32(h) : shxk_bf16_to_fp32(h);
}

INLINE void float_tile(const struct shxk_gemm_args *a, enum shxk_type t,
		       size_t n, size_t i, const int R, const int MT)
{
	size_t k4 = a->k & ~(size_t)3;
	float32x4_t acc[4][4];
	float tail[4][4];

	UNROLL
	for (int r = 0; r < R; r++) {
		UNROLL
		for (int u = 0; u < MT; u++) {
			acc[r][u] = vdupq_n_f32(0.0f);
			tail[r][u] = 0.0f;
		}
	}
	for (size_t e = 0; e < k4; e += 4) {
		float32x4_t x[4];

		UNROLL
		for (int u = 0; u < MT; u++)
			x[u] = vld1q_f32((const float *)(a->act + (i + u) * a->astride) + e);
		UNROLL
		for (int r = 0; r < R; r++) {
			float32x4_t w = load_w(t, a->w + (n + r) * a->wstride, e);

			UNROLL
			for (int u = 0; u < MT; u++)
				acc[r][u] = vfmaq_f32(acc[r][u], w, x[u]);
		}
	}
	for (size_t e = k4; e < a->k; e++) {
		UNROLL
		for (int r = 0; r < R; r++) {
			float w = load_w1(t, a->w + (n + r) * a->wstride, e);

			UNROLL
			for (int u = 0; u < MT; u++)
				tail[r][u] += w * ((const float *)(a->act + (i + u) * a->astride))[e];
		}
	}
	UNROLL
	for (int r = 0; r < R; r++) {
		UNROLL
		for (int u = 0; u < MT; u++)
			shxk_store(a, i + u, n + r, vaddvq_f32(acc[r][u]) + tail[r][u]);
	}
}

INLINE void gemm_float(const struct shxk_gemm_args *a, enum shxk_type t)
{
#define FLOAT_TILE(n, R, i, T) float_tile(a, t, n, i, R, T)
	SHXK_TILE_WALK(a, 4, FLOAT_TILE);
#undef FLOAT_TILE
}

void shxk_gemm_f32_neon(const struct shxk_gemm_args *a)
{
	gemm_float(a, SHXK_F32);
}

void shxk_gemm_f16_neon(const struct shxk_gemm_args *a)
{
	gemm_float(a, SHXK_F16);
}

void shxk_gemm_bf16_neon(const struct shxk_gemm_args *a)
{
	gemm_float(a, SHXK_BF16);
}

void shxk_widen_neon(enum shxk_type t, const void *x, float *y, size_t n)
{
	size_t n4 = n & ~(size_t)3;

	for (size_t e = 0; e < n4; e += 4)
		vst1q_f32(y + e, t == SHXK_F16 ? load_w(SHXK_F16, x, e) :
						 load_w(SHXK_BF16, x, e));
	for (size_t e = n4; e < n; e++)
		y[e] = load_w1(t, x, e);
}

/* ---- decode attention ---- */

/* Query heads per pass over a tile's K and V rows. */
#define AT_HEADS 4

/*
 * s[h][r] = q[h] . k[r] * scale for gh heads, the rows two at a time (2 x
 * gh FMA chains); n a multiple of 4. One prefetch step a row.
 */
INLINE void at_scores(enum shxk_type t, const int gh, const float *q,
		      float scale, const void *const *k, size_t off, size_t nr,
		      size_t n, float s[][SHXK_ATTN_TILE],
		      struct shxk_attn_next *nx)
{
	for (size_t r = 0; r < nr; r += 2) {
		const uint8_t *k0 = (const uint8_t *)k[r] + off;
		const uint8_t *k1 = (const uint8_t *)k[r + 1 < nr ? r + 1 : r] + off;
		float32x4_t acc[2][AT_HEADS];

		shxk_attn_next_step(nx);
		shxk_attn_next_step(nx);
		UNROLL
		for (int h = 0; h < gh; h++)
			acc[0][h] = acc[1][h] = vdupq_n_f32(0.0f);
		for (size_t e = 0; e < n; e += 4) {
			float32x4_t x0 = load_w(t, k0, e), x1 = load_w(t, k1, e);

			UNROLL
			for (int h = 0; h < gh; h++) {
				float32x4_t qv = vld1q_f32(q + h * n + e);

				acc[0][h] = vfmaq_f32(acc[0][h], x0, qv);
				acc[1][h] = vfmaq_f32(acc[1][h], x1, qv);
			}
		}
		UNROLL
		for (int h = 0; h < gh; h++) {
			s[h][r] = vaddvq_f32(acc[0][h]) * scale;
			if (r + 1 < nr)
				s[h][r + 1] = vaddvq_f32(acc[1][h]) * scale;
		}
	}
}

/*
 * o[h][e, e + 4 CV) = o * corr + sum over rows of p[h][r] v[r]: gh x CV
 * chains. One prefetch step a row.
 */
INLINE void at_values(enum shxk_type t, const int gh, const int CV,
		      const void *const *v, size_t off, size_t nr, size_t n,
		      float p[][SHXK_ATTN_TILE], const float *corr, float *o,
		      size_t e, struct shxk_attn_next *nx)
{
	float32x4_t acc[AT_HEADS][4];

	UNROLL
	for (int h = 0; h < gh; h++)
		UNROLL
		for (int c = 0; c < CV; c++)
			acc[h][c] = vmulq_n_f32(vld1q_f32(o + h * n + e + 4 * c),
						corr[h]);
	for (size_t r = 0; r < nr; r++) {
		const uint8_t *vr = (const uint8_t *)v[r] + off;
		float32x4_t vx[4];

		shxk_attn_next_step(nx);
		UNROLL
		for (int c = 0; c < CV; c++)
			vx[c] = load_w(t, vr, e + 4 * c);
		UNROLL
		for (int h = 0; h < gh; h++)
			UNROLL
			for (int c = 0; c < CV; c++)
				acc[h][c] = vfmaq_n_f32(acc[h][c], vx[c], p[h][r]);
	}
	UNROLL
	for (int h = 0; h < gh; h++)
		UNROLL
		for (int c = 0; c < CV; c++)
			vst1q_f32(o + h * n + e + 4 * c, acc[h][c]);
}

/*
 * gh <= AT_HEADS heads of one kv head at k[r] + off: each K and V row is
 * widened once for all of them; the softmax step as the generic tile's.
 */
INLINE void attn_heads(enum shxk_type t, const int gh, const float *q,
		       float scale, const void *const *k, const void *const *v,
		       size_t off, size_t nr, size_t n, float *o, float *mx,
		       float *l, struct shxk_attn_next *nx)
{
	float p[AT_HEADS][SHXK_ATTN_TILE], corr[AT_HEADS];
	size_t e = 0;

	at_scores(t, gh, q, scale, k, off, nr, n, p, nx);
	for (int h = 0; h < gh; h++)
		corr[h] = shxk_attn_softmax(p[h], nr, mx + h, l + h);
	for (; e + 16 <= n; e += 16)
		at_values(t, gh, 4, v, off, nr, n, p, corr, o, e, nx);
	for (; e < n; e += 4)
		at_values(t, gh, 1, v, off, nr, n, p, corr, o, e, nx);
}

/* One instance per type and head count: acc[] stays in registers. */
#define AT_CALL(T, GH, h, off)						\
	attn_heads(T, GH, q + (h) * n, scale, k, v, off, nr, n, o + (h) * n, \
		   mx + (h), l + (h), nx)
#define AT_PASS(gh, h, off) SHXK_ATTN_TYPED(t, SHXK_ATTN_GH4, gh, AT_CALL, h, off)

void shxk_attn_tile_neon(enum shxk_type t, const float *q, size_t g, size_t ng,
			 float scale, const void *const *k, const void *const *v,
			 size_t nr, size_t n, float *o, float *mx, float *l,
			 struct shxk_attn_next *gnx)
{
	/* A local cursor: see struct shxk_attn_next. */
	struct shxk_attn_next lnx = *gnx, *nx = &lnx;

	if (n % 4) {
		shxk_attn_tile_generic(t, q, g, ng, scale, k, v, nr, n, o, mx,
				       l, gnx);
		return;
	}
	SHXK_ATTN_GROUPS(nx, t, g, ng, n, AT_HEADS, AT_PASS);
	*gnx = lnx;
}

/* ---- Q8_0 / Q4_0 ---- */

/* acc + four-element s8 dot products of w and x in each s32 lane. */
INLINE int32x4_t dot16(int32x4_t acc, int8x16_t w, int8x16_t x)
{
	acc = vpadalq_s16(acc, vmull_s8(vget_low_s8(w), vget_low_s8(x)));
	return vpadalq_s16(acc, vmull_high_s8(w, x));
}

#include "qtile.h"

SHXK_QTILE_OPS(neon, "neon", 0);
