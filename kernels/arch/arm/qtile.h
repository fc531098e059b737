/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The Q8_0 / Q4_0 GEMM tiles over dot16() (acc + s8 dot products of 16
 * bytes into 4 s32 lanes), which the includer defines: vmull + pairwise
 * adds for NEON, sdot for dotprod and i8mm. Both layouts go through
 * shxk_neon_block().
 */
#ifndef SHXK_ARM_QTILE_H
#define SHXK_ARM_QTILE_H

INLINE void quant_tile(const struct shxk_gemm_args *a, int q4, int x8,
		       size_t n, size_t i, const int R, const int MT)
{
	float32x4_t acc[4][2];

	UNROLL
	for (int r = 0; r < R; r++) {
		UNROLL
		for (int u = 0; u < MT; u++)
			acc[r][u] = vdupq_n_f32(0.0f);
	}
	for (size_t j = 0; j < a->k / SHXK_QK; j++) {
		int8x16_t xl[2], xh[2];
		float dx[2];

		UNROLL
		for (int u = 0; u < MT; u++) {
			const uint8_t *ar = a->act + (i + u) * a->astride;

			xl[u] = vld1q_s8((const int8_t *)ar + j * SHXK_QK);
			xh[u] = vld1q_s8((const int8_t *)ar + j * SHXK_QK + 16);
			dx[u] = shxk_act_d(ar, a->k)[j];
		}
		UNROLL
		for (int r = 0; r < R; r++) {
			int8x16_t wl, wh;
			float dw = shxk_neon_block(a, q4, x8, n + r, j, &wl, &wh);

			UNROLL
			for (int u = 0; u < MT; u++) {
				int32x4_t dot = dot16(dot16(vdupq_n_s32(0), wl, xl[u]),
						      wh, xh[u]);

				acc[r][u] = vfmaq_n_f32(acc[r][u], vcvtq_f32_s32(dot),
							dw * dx[u]);
			}
		}
	}
	UNROLL
	for (int r = 0; r < R; r++) {
		UNROLL
		for (int u = 0; u < MT; u++)
			shxk_store(a, i + u, n + r, vaddvq_f32(acc[r][u]));
	}
}

/*
 * Weight rows 4 at a time. With SHXK_PAIR_TILE (i8mm) defined, activation
 * rows go in pairs through pair_tile(a, q4, x8, n, i, nrc), which covers
 * weight rows n..n+3 in passes of nrc rows.
 */
INLINE void gemm_quant(const struct shxk_gemm_args *a, int q4, int x8,
		       const int nrc)
{
	size_t n = a->n0;

	for (; n + 4 <= a->n1; n += 4) {
		size_t i = 0;

#ifdef SHXK_PAIR_TILE
		for (; i + 2 <= a->m; i += 2)
			pair_tile(a, q4, x8, n, i, nrc);
#else
		(void)nrc;
		for (; i + 2 <= a->m; i += 2)
			quant_tile(a, q4, x8, n, i, 4, 2);
#endif
		for (; i < a->m; i++)
			quant_tile(a, q4, x8, n, i, 4, 1);
	}
	for (; n < a->n1; n++)
		for (size_t i = 0; i < a->m; i++)
			quant_tile(a, q4, x8, n, i, 1, 1);
}

/*
 * A NEON-family variant's quant GEMM entry points (nrc as for gemm_quant)
 * and its ops table, shxk_ops_<var>; the rest of the table is NEON's or
 * generic.
 */
#define SHXK_QTILE_OPS(var, NAME, nrc)					\
static void gemm_q8_0_##var(const struct shxk_gemm_args *a)		\
{									\
	gemm_quant(a, 0, 0, nrc);					\
}									\
static void gemm_q4_0_##var(const struct shxk_gemm_args *a)		\
{									\
	gemm_quant(a, 1, 0, nrc);					\
}									\
static void gemm_x8_q8_0_##var(const struct shxk_gemm_args *a)		\
{									\
	gemm_quant(a, 0, 1, nrc);					\
}									\
static void gemm_x8_q4_0_##var(const struct shxk_gemm_args *a)		\
{									\
	gemm_quant(a, 1, 1, nrc);					\
}									\
const struct shxk_ops shxk_ops_##var = {				\
	.name = NAME,							\
	.quant = {							\
		[SHXK_F16] = shxk_quant_f16_generic,			\
		[SHXK_BF16] = shxk_quant_bf16_generic,			\
		[SHXK_Q8_0] = shxk_quant_q8_0_generic,			\
		[SHXK_Q4_0] = shxk_quant_q4_0_generic,			\
	},								\
	.act_q8 = shxk_act_q8_neon,					\
	.gemm = {							\
		[SHXK_F32] = shxk_gemm_f32_neon,			\
		[SHXK_F16] = shxk_gemm_f16_neon,			\
		[SHXK_BF16] = shxk_gemm_bf16_neon,			\
		[SHXK_Q8_0] = gemm_q8_0_##var,				\
		[SHXK_Q4_0] = gemm_q4_0_##var,				\
	},								\
	.gemm_x8 = {							\
		[SHXK_Q8_0] = gemm_x8_q8_0_##var,			\
		[SHXK_Q4_0] = gemm_x8_q4_0_##var,			\
	},								\
	.attn_tile = shxk_attn_tile_neon,				\
	.swiglu = shxk_swiglu_generic,					\
	.widen = shxk_widen_neon,					\
}

#endif /* SHXK_ARM_QTILE_H */
